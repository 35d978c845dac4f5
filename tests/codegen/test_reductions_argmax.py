"""argmax/argmin in one pass: a reduction of (value, index) pairs in every
reduction form the policy chooses (thread, group, two stages, split
columns and CPU lanes, with their combine kernels), on the GPU and CPU layouts of the
OpenCL target, against NumPy: the first index of the extremum, the first
NaN if any, exact for integers and bools.  The suite's POLYARRAY_POISON=1
makes a partial that a kernel leaves unwritten fail every time."""
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

import polyarray as pa
from polyarray import targets

OPENCL_OK, OPENCL_WHY = targets.availability("opencl")
needs_opencl = pytest.mark.skipif(not OPENCL_OK, reason=f"opencl: {OPENCL_WHY}")

DTYPES = [np.float32, np.float64, np.int32, np.uint8, np.bool_]

# (shape, axis, layout) -> the forms of its kernels: one kernel, or a first
# stage and its combine
FORMS = [
    ((5, 300), 1, "gpu", ("group",)),
    ((40, 30), 0, "gpu", ("group",)),
    ((3000, 40), 1, "gpu", ("thread",)),
    ((200, 70), 0, "gpu", ("thread",)),
    ((20011,), None, "gpu", ("two-stage 1", "combine (group)")),
    ((3, 50003), 1, "gpu", ("two-stage 1", "combine (group)")),
    ((600, 9), 0, "gpu", ("split-columns 1", "combine (group)")),       # rows side by side
    ((1000, 300), 0, "gpu", ("split-columns 1", "combine (thread)")),
    ((6, 500, 7), 1, "gpu", ("split-columns 1", "combine (group)")),    # the middle axis
    ((5, 300), 1, "cpu", ("lanes",)),
    ((300, 30), 0, "cpu", ("lanes",)),
    ((20011,), None, "cpu", ("lanes",)),
    ((40, 50, 30), None, "cpu", ("lanes",)),
    ((3, 100003), 1, "cpu", ("lanes", "combine (thread)")),     # chunks of lanes
    ((2000, 300), 0, "cpu", ("lanes", "combine (thread)")),     # column chunks of lanes
    ((600, 9), 0, "cpu", ("split-columns 1", "combine (thread)")),
    ((300, 9), 1, "cpu", ("thread",)),
]


def sample(shape, dtype, rng):
    """Values with many ties, a few maxima and minima per reduced range
    (so the first one can sit in any chunk), the type's extremes (which
    tie with the neutral pair's value), and for floats NaNs and infinities."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape))
    if dtype == np.bool_:
        return (rng.random(size) < 3 / max(shape)).reshape(shape)
    x = rng.integers(1, 9, size).astype(dtype)
    k = max(2, size // 150)
    if dtype.kind == "f":
        lo, hi = -np.inf, np.inf
    else:
        lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    x[rng.choice(size, k)] = hi
    x[rng.choice(size, k)] = lo
    x[rng.choice(size, k)] = 9
    if dtype.kind == "f":
        x[rng.choice(size, max(1, k // 4))] = np.nan
    return x.reshape(shape)


def _rotating(k):
    """float32 (NaNs) and one of the other dtypes, a different one per case."""
    return [np.float32, DTYPES[1 + k % (len(DTYPES) - 1)]]


@needs_opencl
@pytest.mark.parametrize("k", range(len(FORMS)),
                         ids=[f"{s}-{a}-{layout}" for s, a, layout, _ in FORMS])
def test_one_pass_in_every_form(k):
    shape, axis, layout, forms = FORMS[k]
    rng = np.random.default_rng(k)
    xs = {np.dtype(d).name: pa.placeholder(f"x_{np.dtype(d).name}", shape, d)
          for d in _rotating(k)}
    outs = {f"{op} {name}": getattr(x, op)(axis=axis) for name, x in xs.items()
            for op in ("argmax", "argmin")}
    prog = pa.compile(outs, target="opencl", device_kind=layout)
    # one pass: a kernel per output, or a stage and its combine, never an
    # extremum kernel before an index kernel
    by_output = {}
    for name, info in prog.kernels.items():
        by_output.setdefault(re.match(r"k\d+", name).group(), []).append(str(info.form))
    assert sorted(by_output.values()) == [list(forms)] * len(outs), by_output
    inputs = {f"x_{name}": sample(shape, name, rng) for name in xs}
    got = prog(**inputs)
    for key in outs:
        op, name = key.split()
        want = getattr(inputs[f"x_{name}"], op)(axis=axis)
        np.testing.assert_array_equal(np.asarray(got[key]), want, err_msg=f"{key} {shape}")
        assert np.asarray(got[key]).dtype == np.int64


@needs_opencl
@pytest.mark.parametrize("layout", ["gpu", "cpu"])
@pytest.mark.parametrize("k,shape", [(0, (7, 33, 5)), (1, (4100, 3)), (2, (3, 2000))])
def test_every_axis_and_none(k, shape, layout):
    """Every axis and the whole array, both ops, a dtype per shape."""
    rng = np.random.default_rng(k)
    dtype = DTYPES[[0, 3, 4][k]] if layout == "gpu" else DTYPES[[1, 2, 0][k]]
    x = pa.placeholder("x", shape, dtype)
    axes = [None, *range(len(shape))]
    outs = {f"{op} {a}": getattr(pa, op)(x, axis=a) for op in ("argmax", "argmin")
            for a in axes}
    xv = sample(shape, dtype, rng)
    got = pa.compile(outs, target="opencl", device_kind=layout)(x=xv)
    for key in outs:
        op, a = key.split()
        want = getattr(np, op)(xv, axis=None if a == "None" else int(a))
        np.testing.assert_array_equal(np.asarray(got[key]), want,
                                      err_msg=f"{key} {np.dtype(dtype).name} {layout}")


@needs_opencl
@pytest.mark.parametrize("layout", ["gpu", "cpu"])
def test_nan_and_ties_at_chunk_edges(layout):
    """The first NaN wins over any value and any later NaN; among equal
    values the first index wins, wherever the chunks of a two-stage or
    split-column reduction put them; a range of -inf (argmax) or +inf
    (argmin), the neutral element's value, still answers its first index."""
    R = 50003
    x = pa.placeholder("x", (4, R), np.float32)
    xt = pa.placeholder("xt", (R, 4), np.float32)
    outs = {"max": x.argmax(axis=1), "min": x.argmin(axis=1),
            "max_t": xt.argmax(axis=0), "min_t": xt.argmin(axis=0)}
    xv = np.zeros((4, R), np.float32)
    xv[0, [R - 1, 40000, 9000]] = np.nan     # NaNs in late chunks, the first at 9000
    xv[0, 3] = np.inf
    xv[1, [R - 1, 20000, 257]] = 5.0         # ties in different chunks
    xv[1, [R - 2, 30001, 4097]] = -5.0
    xv[2] = -np.inf
    xv[3] = np.inf
    xv[3, R - 1] = np.nan
    assert list(xv.argmax(1)) == [9000, 257, 0, R - 1]
    assert list(xv.argmin(1)) == [9000, 4097, 0, R - 1]
    got = pa.compile(outs, target="opencl", device_kind=layout)(x=xv, xt=xv.T.copy())
    for key, want in (("max", xv.argmax(1)), ("min", xv.argmin(1)),
                      ("max_t", xv.argmax(1)), ("min_t", xv.argmin(1))):
        np.testing.assert_array_equal(np.asarray(got[key]), want, err_msg=key)


@needs_opencl
def test_fused_body_and_keepdims():
    """The reduced operand is an expression (fused into the pass), and the
    index feeds later elementwise work."""
    rng = np.random.default_rng(2)
    xv = rng.standard_normal((300, 257)).astype(np.float32)
    x = pa.placeholder("x", xv.shape, np.float32)
    outs = {"d": pa.argmin((x - 0.5) ** 2, axis=1), "e": pa.argmax(-x, axis=0) + 1}
    for layout in ("gpu", "cpu"):
        got = pa.compile(outs, target="opencl", device_kind=layout)(x=xv)
        np.testing.assert_array_equal(got["d"], np.argmin((xv - 0.5) ** 2, axis=1))
        np.testing.assert_array_equal(got["e"], np.argmax(-xv, axis=0) + 1)


def test_empty_reductions_raise_in_the_frontend():
    x = pa.placeholder("x", (0, 3), np.float32)
    with pytest.raises(ValueError, match="empty sequence"):
        x.argmax(axis=0)
    with pytest.raises(ValueError, match="empty sequence"):
        pa.argmin(x)


def test_policy_has_no_extremum_then_index_rule():
    from polyarray.codegen.policy.classify import Reduction
    from polyarray.codegen.policy.device import Device
    from polyarray.codegen.policy import choose
    for op in ("argmax", "argmin"):
        choice = choose(Reduction(4096, 4096, True, op), Device())
        assert choice.form == "group" and "arg" not in choice.params, choice


NVCC = shutil.which("nvcc")


@pytest.mark.skipif(NVCC is None, reason="nvcc (the CUDA compiler) is not on PATH")
def test_cuda_source_compiles_with_nvcc():
    """Every generated GPU form and dtype as CUDA, in one nvcc run (the row
    kernel, which would take the rows, is off)."""
    import loopy as lp
    from polyarray.codegen import lower_program
    from polyarray.codegen.thresholds import using_thresholds
    sources = []
    for k, (shape, axis, layout, forms) in enumerate(FORMS):
        if layout != "gpu":
            continue
        nodes = [getattr(pa.placeholder(f"x{n}", shape, d), ("argmax", "argmin")[(k + n) % 2])(
            axis=axis).node for n, d in enumerate(DTYPES)]
        with using_thresholds(ARG_ROWS_MIN_ROWS=1 << 62):
            low = lower_program(nodes, lp.CudaTarget())
        assert {str(i.form) for i in low.kernels} == set(forms), low.kernels
        body = re.sub(r"\bk(\d+)_", rf"c{k}_k\1_", low.source)
        sources.append(f"namespace case{k} {{\n{body}\n}}\n")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "argmax.cu")
        with open(path, "w") as f:
            f.write("".join(sources))
        r = subprocess.run([NVCC, "-cubin", "-arch=sm_90", "-o", path + ".cubin", path],
                           capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]


def test_argmax_of_empty_kept_axes_is_empty():
    """NumPy raises only when a reduced axis is empty: (0, 3).argmax(axis=1) is []."""
    x = pa.placeholder("x", (0, 3), np.float32)
    for target in ("numpy", "opencl"):
        ok, why = targets.availability(target)
        if not ok:
            continue
        got = pa.compile(pa.argmax(x, axis=1), target=target)(x=np.zeros((0, 3), np.float32))
        assert got.shape == (0,) and got.dtype == np.int64, target
    for axis in (0, None):
        with pytest.raises(ValueError, match="empty sequence"):
            pa.argmax(x, axis=axis)


# -- CUDA: rows of a buffer, a work-group each, warp shuffles (emit/arg_kernels.py) --

CUDA_OK, CUDA_WHY = targets.availability("cuda")
# under thresholds that give the row kernel every row (the last case: the real ones)
ROW_CASES = [((64, 512), np.float32), ((31, 1000), np.float64), ((4, 30, 777), np.float32),
             ((48, 4099), np.int32), ((24, 700), np.int64), ((12, 513), np.float32),
             ((3, 5), np.float64), ((1024, 4100), np.float32)]


def _row_sample(shape, dtype, rng):
    """``sample``'s values, and rows made to test the order: all NaN, NaN
    only at the end, all -inf / +inf, all ties, -0.0 before 0.0, the
    extreme in the last value read by each work-item."""
    x = sample(shape, dtype, rng).reshape(-1, shape[-1])
    n = shape[-1]
    if len(x) < 7:
        return x.reshape(shape)
    if np.dtype(dtype).kind == "f":
        x[0] = np.nan
        x[1] = 1.0
        x[1, -1] = np.nan
        x[2], x[3] = -np.inf, np.inf
        x[5] = 0.0
        x[5, n // 2] = -0.0
    x[4] = 3
    x[6] = 1
    x[6, n - 1] = 9 if np.dtype(dtype).kind == "f" else np.iinfo(dtype).max
    x[6, max(0, n - 257)] = x[6, n - 1]
    return x.reshape(shape)


def test_cuda_rows_of_a_buffer_get_the_warp_shuffle_kernel():
    """The policy gives argmax/argmin along the last axis of a buffer (an
    input, a product's result) to the row kernel on CUDA; an expression
    keeps the fused generated pass, other axes theirs, and OpenCL never."""
    import loopy as lp
    from polyarray.codegen import lower_program
    x = pa.placeholder("x", (4096, 4096), np.float32)
    y, w = pa.placeholder("y", (4096, 64), np.float32), pa.placeholder("w", (64, 4096), np.float32)

    def forms(e, target=lp.CudaTarget()):
        return [str(k.form) for k in lower_program([e.node], target).kernels]
    assert forms(pa.argmax(x, axis=1)) == ["row argmax"]
    assert forms(pa.argmin(x, axis=-1, keepdims=True)) == ["row argmax", "elementwise"]
    assert forms(pa.argmax(y @ w, axis=1))[-1] == "row argmax"
    assert forms(pa.argmax(pa.exp(x), axis=1)) == ["group"]
    assert "row argmax" not in forms(pa.argmax(x, axis=0)) + forms(pa.argmax(x))
    # fewer rows than ARG_ROWS_MIN_ROWS: the generated forms
    assert "row argmax" not in forms(pa.argmax(pa.placeholder("s", (32, 4096), np.float32),
                                               axis=1))
    assert forms(pa.argmax(pa.placeholder("s", (100000, 10), np.float32), axis=1)) \
        == ["row argmax"]
    assert forms(pa.argmax(x, axis=1), lp.PyOpenCLTarget()) == ["group"]


def test_row_kernel_takes_rows_whose_indices_stay_ints():
    """A work-item's 32-bit index steps 4 x 1024 past its last value before
    its loop stops: rows longer than ``MAX_LENGTH`` keep the generated forms."""
    from polyarray.codegen.emit.arg_kernels import MAX_LENGTH
    from polyarray.codegen.policy import choose
    from polyarray.codegen.policy.classify import ArgRows
    from polyarray.codegen.policy.device import Device
    device = Device(row_argmax=True)
    for n, form in ((MAX_LENGTH, "row argmax"), (MAX_LENGTH + 1, "argmax as a reduction"),
                    ((1 << 31) - 1, "argmax as a reduction"), (1, "row argmax")):
        choice = choose(ArgRows("argmax", "<f4", 64, n), device)
        assert choice.form == form, (n, choice)
    assert (1 << 31) - 1 - MAX_LENGTH == 4 * 1024


@pytest.mark.skipif(NVCC is None, reason="nvcc (the CUDA compiler) is not on PATH")
def test_cuda_row_kernels_compile_quietly_with_nvcc():
    """Each op, dtype and width (1, a part of a warp, a warp, a block) of the
    row kernel, with the target's flags: nvcc prints nothing."""
    from polyarray.codegen.emit.arg_kernels import ARG_DTYPES, arg_source
    from polyarray.targets.cuda import NVCC_OPTIONS
    source = "".join(arg_source(op, np.dtype(d), width) for op in ("argmax", "argmin")
                     for d in sorted(ARG_DTYPES) for width in (1, 8, 32, 128, 1024))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "rows.cu")
        with open(path, "w") as f:
            f.write(source)
        r = subprocess.run([NVCC, "-cubin", "-arch=sm_90", *NVCC_OPTIONS, "-o", path + ".cubin",
                            path], capture_output=True, text=True)
    assert r.returncode == 0 and not (r.stdout + r.stderr).strip(), r.stdout + r.stderr


@pytest.mark.skipif(not CUDA_OK, reason=f"cuda: {CUDA_WHY}")
@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("k", range(len(ROW_CASES)),
                         ids=[f"{s}-{np.dtype(d).name}" for s, d in ROW_CASES])
def test_cuda_row_kernel_against_numpy(k, op):
    shape, dtype = ROW_CASES[k]
    from polyarray.codegen.thresholds import using_thresholds
    xv = _row_sample(shape, dtype, np.random.default_rng(k))
    x = pa.placeholder("x", shape, dtype)
    small = {} if k == len(ROW_CASES) - 1 else dict(ARG_ROWS_MIN_ROWS=1)
    with using_thresholds(**small):
        prog = pa.compile([getattr(pa, op)(x, axis=-1)], target="cuda")
    assert [str(i.form) for i in prog.kernels.values()] == ["row argmax"], prog.kernels
    got = prog(x=xv)[0]
    np.testing.assert_array_equal(np.asarray(got), getattr(np, op)(xv, axis=-1))


@pytest.mark.skipif(not CUDA_OK, reason=f"cuda: {CUDA_WHY}")
@pytest.mark.parametrize("values", [1, 5, 10 ** 9])
@pytest.mark.parametrize("k", [0, 1, 3, 5, 6])
def test_cuda_row_kernel_at_every_width(k, values):
    """Rows read by 1 to 1024 work-items each (``ARG_ROWS_VALUES`` values per
    work-item, the fill rule off), rows sharing warps and blocks."""
    shape, dtype = ROW_CASES[k]
    from polyarray.codegen.thresholds import using_thresholds
    xv = _row_sample(shape, dtype, np.random.default_rng(k))
    x = pa.placeholder("x", shape, dtype)
    with using_thresholds(ARG_ROWS_MIN_ROWS=1, ARG_ROWS_VALUES=values, ARG_ROWS_FILL=0):
        prog = pa.compile([pa.argmax(x, axis=-1), pa.argmin(x, axis=-1)], target="cuda")
    n = shape[-1]
    width = 1 if values > n else min(1024, 1 << (-(-n // values) - 1).bit_length())
    assert re.search(rf"pa_argrow_argmax_\w+_{width}\(", prog.source), width
    got = prog(x=xv)
    np.testing.assert_array_equal(np.asarray(got[0]), np.argmax(xv, axis=-1))
    np.testing.assert_array_equal(np.asarray(got[1]), np.argmin(xv, axis=-1))


@pytest.mark.skipif(not CUDA_OK, reason=f"cuda: {CUDA_WHY}")
def test_cuda_row_kernel_reads_rows_off_vector_alignment():
    """A bound device array that starts 4 bytes past an aligned address (a
    view of a larger allocation): the kernel reads it by scalars, correctly."""
    import pycuda.gpuarray as ga
    shape = (1100, 4096)
    host = _row_sample((shape[0] * shape[1] + 1,), np.float32, np.random.default_rng(7))
    xv = host[1:].reshape(shape)
    xv[3, 100] = np.nan
    whole = ga.to_gpu(np.concatenate([host[:1], xv.ravel()]))
    view = whole[1:].reshape(shape)
    assert int(view.gpudata) % 16 == 4
    x = pa.placeholder("x", shape, np.float32)
    prog = pa.compile([pa.argmax(x, axis=1)], target="cuda")
    assert [str(i.form) for i in prog.kernels.values()] == ["row argmax"]
    np.testing.assert_array_equal(np.asarray(prog(x=view)[0]), np.argmax(xv, axis=1))
