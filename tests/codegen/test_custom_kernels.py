"""pa.elementwise_kernel / pa.reduction_kernel (CuPy's ElementwiseKernel and
ReductionKernel): against NumPy on every target (the numpy target runs the
references), type placeholders, broadcasting, scalars, several outputs,
axis/keepdims, fusion (kernel counts), the same reduction forms as a sum,
errors, digests, and nvcc compiling a CUDA program that uses both."""
import os
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

import polyarray as pa
from conftest import DEVICE_TARGETS
from helpers import assert_same
from polyarray import targets

fma1 = pa.elementwise_kernel("float32 x, float32 y", "float32 z", "z = x * y + 1", "fma1",
                             reference=lambda x, y: x * y + 1)
# placeholders, a fixed-type scalar parameter, two outputs
axpy2 = pa.elementwise_kernel("T x, T y, int32 k", "T u, T v", "u = x * k + y; v = x - y * k",
                              "axpy2", reference=lambda x, y, k: (x * k + y, x - y * k))


def _l2_ref(x, axis, keepdims):
    return np.sqrt((x * x).sum(axis=axis, keepdims=keepdims))


l2norm = pa.reduction_kernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm",
                             reference=_l2_ref)


def _maxmin_ref(x, w, axis, keepdims):
    m = (x * w).max(axis=axis, keepdims=keepdims)
    return m, np.trunc(m / 2).astype(np.int64)      # C's division truncates


# two inputs, an integer combine that is not a sum, two outputs of two types
imax = pa.reduction_kernel("int32 x, int32 w", "int32 m, int64 h", "x * w", "max(a, b)",
                           "m = a; h = a / 2", "-2147483647 - 1", "imax",
                           preamble="/* a preamble */", reference=_maxmin_ref)


def compile_(outs, target, **kw):
    return pa.compile(outs, target=target, **kw)


def test_elementwise_fused_in_a_chain(target):
    x = pa.placeholder("x", (1000,), np.float32)
    y = pa.placeholder("y", (1000,), np.float32)
    prog = compile_([pa.exp(fma1(x, y)) + 1, pa.sum(fma1(x, y) * 2)], target)
    rng = np.random.default_rng(0)
    xv, yv = rng.random(1000, dtype=np.float32), rng.random(1000, dtype=np.float32)
    out, total = prog(x=xv, y=yv)
    assert_same(out, np.exp(xv * yv + np.float32(1)) + np.float32(1))
    assert_same(total, np.sum((xv * yv + np.float32(1)) * np.float32(2)))
    plain = compile_([pa.exp(x * y + 1) + 1, pa.sum((x * y + 1) * 2)], target)
    assert len(prog.kernels) == len(plain.kernels)      # no extra kernel for the custom op
    if target != "numpy":
        assert len(prog.kernels) == 2


def test_placeholders_broadcasting_scalars_and_two_outputs(target):
    a = pa.placeholder("a", (5, 1), np.int32)
    b = pa.placeholder("b", (1, 7), np.int32)
    f = pa.placeholder("f", (3,), np.float64)
    u, v = axpy2(a, b, 3)           # T = int32; 3 converted to int32
    fu, fv = axpy2(f, 0.5, np.int64(2))     # T = float64 from f; scalars take their types
    assert (u.shape, u.dtype, fu.dtype) == ((5, 7), np.int32, np.float64)
    prog = compile_([u, v, fu, fv], target)
    av = np.arange(-2, 3, dtype=np.int32).reshape(5, 1)
    bv = np.arange(7, dtype=np.int32).reshape(1, 7) * 1000
    fv_ = np.array([1.5, -2.0, 3.25])
    ru, rv, rfu, rfv = prog(a=av, b=bv, f=fv_)
    np.testing.assert_array_equal(ru, av * np.int32(3) + bv)
    np.testing.assert_array_equal(rv, av - bv * np.int32(3))
    assert ru.dtype == rv.dtype == np.int32
    assert_same(rfu, fv_ * 2 + 0.5)
    assert_same(rfv, fv_ - 0.5 * 2)


def test_reduction_axis_keepdims_and_outputs(target):
    x = pa.placeholder("x", (4, 5, 6), np.float64)
    xi = pa.placeholder("xi", (6, 50), np.int32)
    w = pa.placeholder("w", (50,), np.int32)
    outs = [l2norm(x), l2norm(x, axis=1), l2norm(x, axis=(0, 2), keepdims=True),
            l2norm(x, axis=-1) * 2 + 1]
    m, h = imax(xi, w, axis=1, keepdims=True)
    m0, _ = imax(xi, w, axis=0)
    prog = compile_(outs + [m, h, m0], target)
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((4, 5, 6))
    xiv = rng.integers(-1000, 1000, (6, 50), dtype=np.int32)
    wv = rng.integers(-3, 4, 50, dtype=np.int32)
    r = prog(x=xv, xi=xiv, w=wv)
    assert_same(r[0], np.linalg.norm(xv.ravel()))
    assert_same(r[1], np.sqrt((xv * xv).sum(axis=1)))
    assert_same(r[2], np.sqrt((xv * xv).sum(axis=(0, 2), keepdims=True)))
    assert_same(r[3], np.sqrt((xv * xv).sum(axis=-1)) * 2 + 1)
    mx = (xiv * wv).max(axis=1, keepdims=True)
    np.testing.assert_array_equal(r[4], mx)
    assert r[5].dtype == np.int64
    np.testing.assert_array_equal(r[5], np.trunc(mx / 2).astype(np.int64))
    np.testing.assert_array_equal(r[6], (xiv * wv).max(axis=0))
    assert r[2].shape == (1, 5, 1) and r[4].shape == (6, 1)


def test_empty_reduction_gives_the_identity(target):
    x = pa.placeholder("x", (3, 0), np.float32)
    r = compile_(l2norm(x, axis=1), target)(x=np.zeros((3, 0), np.float32))
    assert_same(r, np.zeros(3, np.float32))


# (device target, layout): the cuda target has GPU layouts only (device_kind is OpenCL's)
_LAYOUTS = [pytest.param(t, k, id=f"{t}-{k}") for t in DEVICE_TARGETS
            for k in (("gpu", "cpu") if t == "opencl" else ("gpu",))]


@pytest.mark.parametrize("device_target, kind", _LAYOUTS, indirect=["device_target"])
def test_reduction_takes_the_forms_of_a_sum(device_target, kind):
    """The policy gives a custom reduction the kernels it gives a sum:
    two stages, split columns, lanes, rows (fused with its reader)."""
    a = pa.placeholder("a", (3, 5000), np.float32)
    b = pa.placeholder("b", (300, 40), np.float32)
    c = pa.placeholder("c", (20, 64), np.float32)
    rng = np.random.default_rng(2)
    vals = {n: rng.random(s, dtype=np.float32) for n, s in
            (("a", (3, 5000)), ("b", (300, 40)), ("c", (20, 64)))}
    custom = [l2norm(a, axis=1), l2norm(b, axis=0), c / l2norm(c, axis=1, keepdims=True)]
    builtin = [pa.sqrt(pa.sum(a * a, axis=1)), pa.sqrt(pa.sum(b * b, axis=0)),
               c / pa.sqrt(pa.sum(c * c, axis=1, keepdims=True))]
    opts = {"device_kind": kind} if device_target == "opencl" else {}
    prog = compile_(custom, device_target, **opts)
    ref = compile_(builtin, device_target, **opts)
    forms = lambda p: [str(k.form) for k in p.kernels.values()]  # noqa: E731
    assert forms(prog) == forms(ref)
    for got, want in zip(prog(**vals), ref(**vals)):
        assert_same(got, want)


def test_param_string_errors():
    with pytest.raises(ValueError, match=r"syntax error in in_params 'x'"):
        pa.elementwise_kernel("x", "float32 z", "z = x", "k1")
    with pytest.raises(ValueError, match=r"wrong type 'float'.*NumPy dtype name"):
        pa.elementwise_kernel("float x", "float32 z", "z = x", "k2")
    with pytest.raises(NotImplementedError, match="raw"):
        pa.elementwise_kernel("raw float32 x", "float32 z", "z = x[0]", "k3")
    with pytest.raises(ValueError, match="used twice"):
        pa.elementwise_kernel("float32 x", "float32 x", "x = x", "k4")
    with pytest.raises(ValueError, match="C identifier"):
        pa.elementwise_kernel("float32 x", "float32 z", "z = x", "my kernel")
    with pytest.raises(ValueError, match="reserved"):
        pa.reduction_kernel("T a", "T y", "a", "a + b", "y = a", "0", "k5")


def test_dtype_errors_name_the_parameter():
    x32 = pa.placeholder("x32", (3,), np.float32)
    x64 = pa.placeholder("x64", (3,), np.float64)
    with pytest.raises(TypeError, match=r"fma1: type mismatch for parameter 'y': "
                                        r"expected float32, got float64"):
        fma1(x32, x64)
    with pytest.raises(TypeError, match=r"parameter 'y' of type T: expected float32.*"
                                        r"got float64"):
        axpy2(x32, x64, 1)
    with pytest.raises(TypeError, match="cannot determine type T"):
        axpy2(1.0, 2.0, 1)
    with pytest.raises(TypeError, match="takes 2 input"):
        fma1(x32)
    with pytest.raises(ValueError, match="could not be broadcast"):
        fma1(x32, pa.placeholder("y4", (4,), np.float32))


def test_numpy_target_needs_a_reference():
    k = pa.elementwise_kernel("T x", "T y", "y = x + 1", "noref")
    r = pa.reduction_kernel("T x", "T y", "x", "a + b", "y = a", "0", "noref_sum")
    x = pa.placeholder("x", (3,), np.float32)
    for out, kind in ((k(x) * 2, "elementwise_kernel"), (r(x), "reduction_kernel")):
        with pytest.raises(NotImplementedError, match=rf"{kind} 'noref.*' has no NumPy "
                                                      r"reference.*reference="):
            pa.compile(out, target="numpy")


@pytest.mark.skipif(not targets.availability("opencl")[0], reason="no OpenCL device")
def test_invalid_c_names_the_kernel_opencl():
    bad = pa.elementwise_kernel("float32 x", "float32 z", "z = undefined_q * x", "badop")
    x = pa.placeholder("x", (3,), np.float32)
    # PoCL's log has no source line (the note adds it); NVIDIA's quotes it
    with pytest.raises(targets.BuildError, match=r"(?s)custom kernels?( in this program:)? "
                                                 r"badop.*undefined_q") as err:
        pa.compile(pa.exp(bad(x)), target="opencl")
    assert "z = undefined_q * x" in str(err.value)


def test_digest_follows_the_c_text():
    x = pa.placeholder("x", (3,), np.float32)
    a = pa.elementwise_kernel("T x", "T y", "y = x + 1", "dig", reference=lambda x: x + 1)
    b = pa.elementwise_kernel("T x", "T y", "y = x + 2", "dig", reference=lambda x: x + 2)
    same = pa.elementwise_kernel("T x", "T y", "y = x + 1", "dig", reference=lambda x: x + 1)
    assert a(x).node is same(x).node        # the same C and the same reference's code
    assert a(x).node is not b(x).node and a(x).node.digest != b(x).node.digest
    # one C kernel with another reference is another function (the
    # latest reference once changed the meaning of arrays built before)
    other = pa.elementwise_kernel("T x", "T y", "y = x + 1", "dig", reference=lambda x: x + 5)
    built = a(x)
    assert other(x).node is not built.node
    assert_same(pa.compile(built, target="numpy")(x=np.ones(3, np.float32)),
                np.full(3, 2, np.float32))
    r1 = pa.reduction_kernel("T x", "T y", "x", "a + b", "y = a", "0", "rdig")
    r2 = pa.reduction_kernel("T x", "T y", "x", "a + b", "y = a", "1", "rdig")
    assert r1(x).node.digest != r2(x).node.digest        # the identity too
    from polyarray.codegen import program_key
    assert program_key([a(x).node]) != program_key([b(x).node])
    xv = np.ones(3, np.float32)
    assert pa.compile(b(x), target="numpy")(x=xv)[0] == 3


NVCC = shutil.which("nvcc")


@pytest.mark.skipif(NVCC is None, reason="nvcc (the CUDA compiler) is not on PATH")
def test_nvcc_compiles_both_kinds():
    import loopy as lp
    from polyarray.codegen import lower_program
    from polyarray.targets.cuda import NVCC_OPTIONS
    x = pa.placeholder("x", (64, 300), np.float32)
    w = pa.placeholder("w", (300,), np.float32)
    xi = pa.placeholder("xi", (6, 50), np.int32)
    wi = pa.placeholder("wi", (50,), np.int32)
    u, v = axpy2(x, w, 2)
    outs = [pa.exp(fma1(u, v)), l2norm(x, axis=1, keepdims=True) * 2, l2norm(x),
            *imax(xi, wi, axis=0)]
    src = lower_program([o.node for o in outs], lp.CudaTarget()).source
    assert "__device__ static inline float pa_u_fma1_" in src
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "custom.cu")
        with open(path, "w") as f:
            f.write(src)
        r = subprocess.run([NVCC, "-cubin", "-arch=sm_90", *NVCC_OPTIONS, "-o",
                            path + ".cubin", path], capture_output=True, text=True)
    assert r.returncode == 0 and not (r.stdout + r.stderr).strip(), r.stdout + r.stderr


@pytest.mark.skipif(NVCC is None, reason="nvcc (the CUDA compiler) is not on PATH")
def test_invalid_c_names_the_kernel_nvcc():
    """What targets.cuda.build_module adds to nvcc's message (a CUDA build
    needs a GPU; nvcc itself does not)."""
    import loopy as lp
    from polyarray.codegen import lower_program
    from polyarray.codegen.user_functions import build_error_note
    from polyarray.targets.cuda import NVCC_OPTIONS
    bad = pa.elementwise_kernel("float32 x", "float32 z", "z = undefined_q * x", "badcuda")
    src = lower_program([(bad(pa.placeholder("x", (3,), np.float32)) + 1).node],
                        lp.CudaTarget()).source
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "bad.cu")
        with open(path, "w") as f:
            f.write(src)
        r = subprocess.run([NVCC, "-cubin", "-arch=sm_90", *NVCC_OPTIONS, "-o",
                            path + ".cubin", path], capture_output=True, text=True)
    assert r.returncode != 0 and "undefined_q" in r.stdout + r.stderr
    note = build_error_note(src, r.stdout + r.stderr)
    assert "custom kernel badcuda" in note and "z = undefined_q * x" in note, note
