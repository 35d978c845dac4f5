"""float64 matrix products on the FP64 tensor cores (``forms/mma_matmul.py``):
the CUDA target picks the form and OpenCL never does; its source compiles
with nvcc (CI has no GPU) for aligned, ragged, transposed and batched
sizes; on a CUDA GPU it equals NumPy exactly on integer-valued doubles."""
import os
import subprocess
import tempfile

import numpy as np
import pytest

import polyarray as pa
from polyarray import targets
from test_cuda_codegen import NVCC, needs_nvcc

F64 = np.float64
RULE = "matmul: float64 tensor cores"

# (label, batch (0: none), M, N, K, A read transposed, B read transposed)
PRODUCTS = [("aligned", 0, 128, 128, 64, False, False),
            ("ragged", 0, 70, 67, 37, False, False),
            ("A.T ragged", 0, 130, 77, 21, True, False),
            ("B.T", 0, 64, 96, 32, False, True),
            ("batched ragged", 3, 65, 70, 18, False, False),
            ("batch broadcast", -3, 65, 64, 18, False, False)]


def product(batch, M, N, K, at, bt, seed=0):
    """(expression, bindings, NumPy's product) on integer-valued doubles, so
    that any order of summation gives NumPy's result exactly; a negative
    ``batch`` broadcasts B over A's batch."""
    rng = np.random.default_rng(seed)
    lead = (abs(batch),) if batch else ()
    a = rng.integers(-8, 8, lead + ((K, M) if at else (M, K))).astype(F64)
    b = rng.integers(-8, 8, (lead if batch > 0 else ()) + ((N, K) if bt else (K, N))).astype(F64)
    pa_a, pa_b = pa.placeholder("a", a.shape, F64), pa.placeholder("b", b.shape, F64)
    ea = pa.swapaxes(pa_a, -1, -2) if at else pa_a
    eb = pa.swapaxes(pa_b, -1, -2) if bt else pa_b
    want = (np.swapaxes(a, -1, -2) if at else a) @ (np.swapaxes(b, -1, -2) if bt else b)
    return ea @ eb, {"a": a, "b": b}, want


def _lower(expr, target):
    from polyarray.codegen import lower_program
    return lower_program([expr.node], target)


def test_cuda_picks_the_tensor_core_form_and_opencl_does_not():
    import loopy as lp
    # (products of few tiles and a long K keep split-K and the FP64 FMA tiles)
    expr, _, _ = product(0, 1024, 1024, 64, False, False)
    prog = pa.compile(expr, target="cuda")      # code generation needs no GPU
    (k,) = prog.kernels.values()
    assert (k.form, k.rule) == ("mma matmul", RULE), k
    from polyarray.codegen.policy import current_thresholds
    block_m, block_n, warp_m, warp_n = current_thresholds().MMA_SMALL     # a warp per warp tile
    assert k.lsize == (32, block_m * block_n // (warp_m * warp_n))
    assert "mma.sync.aligned.m8n8k4.row.col.f64" in prog.source
    # OpenCL, with GPU layouts (as on an NVIDIA GPU): the register-tiled form
    for info in _lower(expr, lp.PyOpenCLTarget()).kernels:
        assert info.form != "mma matmul", info
    # float32 on CUDA, a user's schedule, and narrow products keep the other forms
    x = pa.placeholder("x", (256, 256), np.float32)
    for info in pa.compile(x @ x, target="cuda").kernels.values():
        assert info.form != "mma matmul", info
    from polyarray.schedules import RegisterTile
    prog = pa.compile(expr, target="cuda", schedule={"*": RegisterTile("a", "b", 64, 16, 16)})
    assert [k.form for k in prog.kernels.values()] == ["tiled matmul"]
    narrow, _, _ = product(0, 1024, 32, 64, False, False)
    assert all(k.form != "mma matmul" for k in pa.compile(narrow, target="cuda")
               .kernels.values())


@needs_nvcc
@pytest.mark.parametrize("label,batch,M,N,K,at,bt", PRODUCTS, ids=[p[0] for p in PRODUCTS])
def test_tensor_core_source_compiles_with_nvcc(label, batch, M, N, K, at, bt):
    import loopy as lp
    expr, _, _ = product(batch, M, N, K, at, bt)
    low = _lower(expr, lp.CudaTarget())
    assert "mma matmul" in [k.form for k in low.kernels], low.kernels
    archs = ["sm_90"] + ["sm_75"] * (label == "ragged")     # below sm_80: warp shuffles
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "mm.cu")
        with open(path, "w") as f:
            f.write(low.source)
        for arch in archs:
            r = subprocess.run([NVCC, "-ptx", f"-arch={arch}", "-o", path + ".ptx", path],
                               capture_output=True, text=True)
            assert r.returncode == 0, f"{arch}: {r.stderr}\n{low.source}"
            ptx = open(path + ".ptx").read()
            assert ("mma.sync.aligned.m8n8k4" in ptx) == (arch == "sm_90"), arch


@pytest.mark.parametrize("label,batch,M,N,K,at,bt", PRODUCTS, ids=[p[0] for p in PRODUCTS])
def test_tensor_core_products_equal_numpy_on_a_gpu(label, batch, M, N, K, at, bt):
    ok, reason = targets.availability("cuda")
    if not ok:
        pytest.skip(f"cuda: {reason}")
    expr, binds, want = product(batch, M, N, K, at, bt, seed=1)
    prog = pa.compile(expr, target="cuda")
    assert "mma matmul" in [k.form for k in prog.kernels.values()]
    np.testing.assert_array_equal(prog(**binds), want)
