"""Complex values in CUDA source, without a GPU: every complex helper, the
reductions (sums, products, argmax pairs, the value at argmax), the matmul
forms and a sort, in one program whose source ``nvcc -cubin -arch=sm_90``
compiles with the target's flags and nothing printed; the struct has
``cuFloatComplex``'s layout (two floats, 8-byte aligned; 16 for double)."""
import os
import shutil
import subprocess

import numpy as np
import pytest

import polyarray as pa
from polyarray.targets.cuda import NVCC_OPTIONS

NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc (the CUDA compiler) is not on PATH")

UNARY = ["exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "expm1", "log1p",
         "square", "reciprocal", "sign", "negative", "conjugate", "absolute", "isnan", "isinf",
         "isfinite", "log2", "log10", "exp2", "rint", "real", "imag", "logical_not", "angle",
         "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh"]
BINARY = ["add", "subtract", "multiply", "divide", "power", "equal", "not_equal", "less",
          "less_equal", "greater", "greater_equal", "maximum", "minimum", "logical_and",
          "fmax"]


def _program():
    z = pa.placeholder("z", (300,), np.complex64)
    w = pa.placeholder("w", (300,), np.complex128)
    m = pa.placeholder("m", (70, 40), np.complex64)
    f = pa.placeholder("f", (300,), np.float32)
    outs = [getattr(pa, n)(z) for n in UNARY] + [getattr(pa, n)(w) for n in UNARY]
    outs += [getattr(pa, n)(z, w) for n in BINARY] + [getattr(pa, n)(w, z) for n in BINARY]
    outs += [z.sum(), w.prod(), z.mean(), pa.var(w), pa.max(z), pa.argmin(w), pa.any(z),
             m.sum(axis=0), m.sum(axis=1), m @ m.T, (m.T @ m).astype(np.complex128),
             pa.vdot(z, w), pa.sort(z), pa.real(z).astype(np.float64), z.astype(bool),
             f + 1j, pa.where(f > 0, z, 2 - 1j), pa.full(3, complex(np.inf, np.nan)),
             pa.arange(0, 4 + 1j), pa.cumsum(w)]
    return [o.node for o in outs]


def test_cuda_source_declares_cuda_complex_layout():
    import loopy as lp
    from polyarray.codegen import lower_program
    source = lower_program(_program(), lp.CudaTarget()).source
    assert "typedef struct __align__(8) { float re, im; } pa_cfloat;" in source
    assert "typedef struct __align__(16) { double re, im; } pa_cdouble;" in source
    assert "INFINITY" not in source         # NVRTC has no math.h


@needs_nvcc
def test_complex_cuda_source_compiles_quietly(tmp_path):
    import loopy as lp
    from polyarray.codegen import lower_program
    source = lower_program(_program(), lp.CudaTarget()).source
    path = os.path.join(tmp_path, "complex.cu")
    with open(path, "w") as out:
        out.write(source)
    r = subprocess.run([NVCC, "-cubin", "-arch=sm_90", *NVCC_OPTIONS, "-o", path + ".cubin",
                        path], capture_output=True, text=True)
    said = (r.stdout + r.stderr).strip()
    assert r.returncode == 0 and not said, f"nvcc said:\n{said}\n--- source ---\n{source}"
