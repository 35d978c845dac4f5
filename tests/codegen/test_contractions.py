"""Contractions of any shape, batch and dtype, against NumPy.

The GPU forms (padded register tiles with guarded reads and a predicated
store, batches on a grid axis, one buffer read twice) run here on PoCL with
``device_kind="gpu"``; the CPU layouts too.  Sizes are random from 1 to 67
on each axis, so every tile edge is ragged somewhere; integers are exact.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import polyarray as pa
from helpers import assert_same, random_array
from polyarray import targets

OPENCL_OK, OPENCL_WHY = targets.availability("opencl")
needs_opencl = pytest.mark.skipif(not OPENCL_OK, reason=f"opencl: {OPENCL_WHY}")

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint8, np.uint64]


def run(expr, bindings, kind):
    prog = pa.compile(expr, target="opencl", device_kind=kind)
    return prog, prog(**{k: v for k, v in bindings.items() if k in prog.placeholders})


def operands(rng, dtype, shape_a, shape_b, ta, tb):
    """Placeholders and values for ``a @ b``; ``ta``/``tb``: the operand is
    a transposed buffer (``x.T``), read in place."""
    lo, hi = (-4, 5) if np.dtype(dtype).kind in "iu" else (None, None)
    if np.dtype(dtype).itemsize == 8 and np.dtype(dtype).kind in "iu":
        # the whole range: a product rounded through double anywhere (the
        # guarded reads of ragged tiles once were: fuzzer seeds 85 and 167)
        # differs; NumPy's 64-bit products wrap, as ours do
        info = np.iinfo(dtype)
        lo, hi = int(info.min), int(info.max)
    va = random_array(rng, shape_a[:-2] + shape_a[-2:][::-1] if ta else shape_a, dtype, lo, hi)
    vb = random_array(rng, shape_b[:-2] + shape_b[-2:][::-1] if tb else shape_b, dtype, lo, hi)
    a, b = pa.placeholder("a", va.shape, va.dtype), pa.placeholder("b", vb.shape, vb.dtype)
    pa_a, np_a = (a.T, va.T) if ta else (a, va)
    pa_b, np_b = (b.T, vb.T) if tb else (b, vb)
    return pa_a, pa_b, np_a, np_b, {"a": va, "b": vb}


def random_product(kind, m, n, k, batch, broadcast, ta, tb, dtype, seed):
    """Compile and check ``a @ b`` (``broadcast``: the operand without the
    batch; ``ta``/``tb``: read transposed, 2-D only) in ``kind`` layouts."""
    rng = np.random.default_rng(seed)
    ta, tb = ta and not batch, tb and not batch     # x.T is 2-D
    shape_a = (batch if broadcast != "a" else ()) + (m, k)
    shape_b = (batch if broadcast != "b" else ()) + (k, n)
    pa_a, pa_b, np_a, np_b, binds = operands(rng, dtype, shape_a, shape_b, ta, tb)
    prog, got = run(pa_a @ pa_b, binds, kind)
    assert_same(got, np_a @ np_b, f"{shape_a} @ {shape_b} {np.dtype(dtype).name} T={ta, tb}")
    return prog


@needs_opencl
@settings(max_examples=25)
@given(m=st.integers(1, 67), n=st.integers(1, 67), k=st.integers(1, 67),
       batch=st.sampled_from([(), (3,), (2, 2)]), broadcast=st.sampled_from(["", "a", "b"]),
       ta=st.booleans(), tb=st.booleans(), dtype=st.sampled_from(DTYPES),
       seed=st.integers(0, 2 ** 16))
def test_matmul_of_any_size_batch_layout_and_dtype(m, n, k, batch, broadcast, ta, tb, dtype,
                                                   seed):
    prog = random_product("gpu", m, n, k, batch, broadcast, ta, tb, dtype, seed)
    (info,) = [i for i in prog.kernels.values() if "einsum" in i.name]
    from polyarray.ops.linalg import FOLD_ROWS_BELOW
    stacked = broadcast == "b" and batch and m < FOLD_ROWS_BELOW <= m * int(np.prod(batch))
    if batch and max(m, n) < 16 and not stacked:    # smaller than a tile: a work-item per output
        assert info.rule.startswith("matmul: past the grid, or tiny matrices"), info
    else:
        assert info.form == "tiled matmul", info


def test_few_row_matrices_times_one_matrix_are_one_product(target):
    """NPBench's doitgen: ``(NR, NQ, 1, NP) @ (NP, NP)`` is one product of
    ``NR * NQ`` rows, not ``NR * NQ`` products of one row; NumPy's numbers."""
    import loopy as lp
    from polyarray.codegen import lower_program
    rng = np.random.default_rng(3)
    a, c = rng.random((5, 7, 1, 24)), rng.random((24, 24))
    out = pa.asarray(a) @ pa.asarray(c)
    assert_same(np.asarray(pa.compile(out, target=target)()), a @ c)
    (info,) = [k for k in lower_program([out.node], lp.CudaTarget()).kernels
               if "einsum" in k.name]
    assert (info.facts["M"], info.facts["N"], info.facts.get("batch", 0)) in \
        ((35, 24, 0), (35, 24, 1)), info.facts


@needs_opencl
@settings(max_examples=20)
@given(m=st.integers(1, 67), n=st.integers(1, 67), k=st.integers(1, 67),
       batch=st.sampled_from([(), (3,), (2, 2)]), broadcast=st.sampled_from(["", "a", "b"]),
       ta=st.booleans(), tb=st.booleans(), dtype=st.sampled_from(DTYPES),
       seed=st.integers(0, 2 ** 16))
def test_cpu_matmul_of_any_size_batch_layout_and_dtype(m, n, k, batch, broadcast, ta, tb,
                                                       dtype, seed):
    """The CPU form: both operands packed into zero-padded panels (transposed
    reads and broadcast batches included), vector register blocks, a
    predicated store; tiny products are reductions (one kernel)."""
    from polyarray.codegen.policy import current_thresholds
    CPU_MATMUL_WORK = current_thresholds().CPU_MATMUL_WORK
    prog = random_product("cpu", m, n, k, batch, broadcast, ta, tb, dtype, seed)
    from polyarray.ops.linalg import FOLD_ROWS_BELOW
    forms = sorted(i.form for i in prog.kernels.values())
    if broadcast == "b" and batch and m < FOLD_ROWS_BELOW <= m * int(np.prod(batch)):
        # one product of all the rows: the operand and the result reshaped (copies)
        assert forms.count("elementwise") <= 2, forms
        forms = [f for f in forms if f != "elementwise"]
    packed = int(np.prod(batch)) * m * n * k >= CPU_MATMUL_WORK
    if packed:
        assert forms == ["pack", "pack", "packed matmul"], forms
    else:               # a reduction: lanes along the contiguous axis, or short ones
        assert forms in (["thread"], ["lanes"]), forms


@needs_opencl
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("shapes,ta,tb", [
    (((64, 48), (48, 32)), False, False),          # whole blocks: no predicate
    (((65, 33), (33, 17)), False, False),          # one past the blocks on both sides
    (((37, 50), (50, 45)), True, True),            # both read transposed
    (((5, 19, 40), (40, 23)), False, False),       # B broadcast over the batch
    (((40, 23), (3, 23, 41)), False, False),       # A broadcast
    (((2, 3, 31, 20), (2, 3, 20, 33)), False, False)])     # two batch axes
def test_cpu_packed_blocks_at_their_edges(shapes, ta, tb, dtype):
    rng = np.random.default_rng(6)
    pa_a, pa_b, np_a, np_b, binds = operands(rng, dtype, *shapes, ta, tb)
    prog, got = run(pa_a @ pa_b, binds, "cpu")
    assert_same(got, np_a @ np_b, f"{shapes} {np.dtype(dtype).name}")
    (info,) = [i for i in prog.kernels.values() if i.form == "packed matmul"]
    assert info.rule == "cpu: packed register tiles"
    vector = {np.dtype(np.float32): "float8", np.dtype(np.float64): "double4"}
    if np.dtype(dtype) in vector:       # the accumulators and B's panel are vectors
        assert f"{vector[np.dtype(dtype)]} acc[" in prog.source


@needs_opencl
def test_cpu_matmul_wraps_integers_like_numpy():
    """uint8 and int32 products and sums overflow and wrap, as NumPy's do."""
    rng = np.random.default_rng(7)
    for dtype, lo, hi in ((np.uint8, 0, 256), (np.int32, 2 ** 20, 2 ** 24)):
        va = rng.integers(lo, hi, (33, 40)).astype(dtype)
        vb = rng.integers(lo, hi, (40, 35)).astype(dtype)
        a, b = pa.placeholder("a", va.shape, dtype), pa.placeholder("b", vb.shape, dtype)
        _, got = run(a @ b, {"a": va, "b": vb}, "cpu")
        assert_same(got, va @ vb, np.dtype(dtype).name)


@needs_opencl
def test_cpu_matmul_takes_a_user_schedule():
    """The product's loops are the block's (ib, jb, k): a user schedule can
    group blocks into work-groups and unroll k; the result is unchanged."""
    from polyarray.schedules import Split, Tag, WorkGroup
    rng = np.random.default_rng(8)
    va, vb = (random_array(rng, s, np.float32) for s in ((70, 60), (60, 50)))
    a, b = pa.placeholder("a", va.shape, np.float32), pa.placeholder("b", vb.shape, np.float32)
    prog = pa.compile(a @ b, target="opencl", device_kind="cpu")
    (name,) = [n for n, i in prog.kernels.items() if i.form == "packed matmul"]
    steps = [WorkGroup(2, "ib"), Tag("jb", "g.1"), Split("k", 4, inner_tag="unr")]
    user = pa.compile(a @ b, target="opencl", device_kind="cpu", schedule={name: steps})
    assert_same(user(a=va, b=vb), va @ vb)
    assert list(user.kernels[name].schedule) == steps


@needs_opencl
@pytest.mark.parametrize("kind", ["gpu", "cpu"])
@pytest.mark.parametrize("shapes", [((100, 70), (70, 130)),       # 64 x 64 register tiles
                                    ((129, 65), (65, 200)),       # one past the tiles
                                    ((4, 65, 17), (4, 17, 66)),   # batched, ragged
                                    ((1, 1), (1, 1)), ((67, 1), (1, 67))])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_ragged_register_tiles(shapes, dtype, kind):
    rng = np.random.default_rng(1)
    pa_a, pa_b, np_a, np_b, binds = operands(rng, dtype, *shapes, False, False)
    _, got = run(pa_a @ pa_b, binds, kind)
    assert_same(got, np_a @ np_b, f"{shapes} {kind}")


@needs_opencl
@pytest.mark.parametrize("shapes,ta", [(((64, 1100), (1100, 64)), False),
                                       (((30, 700), (700, 20)), True),
                                       (((130, 600), (600, 70)), False)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_split_k(shapes, ta, dtype):
    """Few output tiles and a long K: chunks of K side by side, then a
    kernel that adds the partials (ragged chunks guarded)."""
    rng = np.random.default_rng(5)
    pa_a, pa_b, np_a, np_b, binds = operands(rng, dtype, *shapes, ta, False)
    prog, got = run(pa_a @ pa_b, binds, "gpu")
    assert_same(got, np_a @ np_b, f"{shapes} T={ta}")
    rules = {i.rule for i in prog.kernels.values()}
    assert rules == {"matmul: split-K (few tiles, long K)"}, prog.kernels
    assert len(prog.kernels) == 2


@needs_opencl
@pytest.mark.parametrize("kind", ["gpu", "cpu"])
@pytest.mark.parametrize("n,d", [(70, 33), (5, 67), (65, 64)])
def test_gram_and_covariance_of_one_buffer(n, d, kind):
    """``x @ x.T`` and ``x.T @ x``: one buffer read twice, in place."""
    rng = np.random.default_rng(2)
    xv = random_array(rng, (n, d), np.float32)
    x = pa.placeholder("x", (n, d), np.float32)
    prog, got = run({"gram": x @ x.T, "cov": x.T @ x}, {"x": xv}, kind)
    assert_same(got["gram"], xv @ xv.T, "gram")
    assert_same(got["cov"], xv.T @ xv, "cov")
    if kind == "gpu":       # no copies: the two contractions are the only kernels
        assert sorted(i.form for i in prog.kernels.values()) == ["tiled matmul"] * 2
    elif min(n * n * d, d * d * n) >= 1 << 15:     # each operand packed from the one buffer
        forms = sorted(i.form for i in prog.kernels.values())
        assert forms == ["pack"] * 4 + ["packed matmul"] * 2, forms


@needs_opencl
@pytest.mark.parametrize("kind", ["gpu", "cpu"])
@pytest.mark.parametrize("sub,shapes", [
    ("ik,k->i", ((67, 45), (45,))), ("k,kj->j", ((45,), (45, 67))),
    ("ki,k->i", ((45, 67), (45,))), ("bik,bk->bi", ((3, 20, 9), (3, 9))),
    ("bik,bkj->bij", ((3, 20, 9), (3, 9, 5))), ("ki,kj->ij", ((9, 20), (9, 30))),
    ("ik,jk->ij", ((20, 9), (30, 9))), ("bki,kj->bij", ((2, 9, 20), (9, 30)))])
def test_einsum_products(sub, shapes, kind):
    rng = np.random.default_rng(3)
    vals = [random_array(rng, s, np.float32) for s in shapes]
    phs = [pa.placeholder(f"x{t}", v.shape, v.dtype) for t, v in enumerate(vals)]
    _, got = run(pa.einsum(sub, *phs), {f"x{t}": v for t, v in enumerate(vals)}, kind)
    assert_same(got, np.einsum(sub, *vals), sub)


@needs_opencl
@pytest.mark.parametrize("kind", ["gpu", "cpu"])
def test_matrix_vector_products_are_one_kernel(kind):
    """``A @ v``, ``v @ A`` and ``A.T @ v`` read A in place: no reshape copies."""
    rng = np.random.default_rng(4)
    Av, vv, wv = (random_array(rng, s, np.float32) for s in ((300, 70), (70,), (300,)))
    A, v, w = (pa.placeholder(n, x.shape, x.dtype) for n, x in zip("Avw", (Av, vv, wv)))
    for expr, want in ((A @ v, Av @ vv), (w @ A, wv @ Av), (A.T @ w, Av.T @ wv)):
        prog, got = run(expr, {"A": Av, "v": vv, "w": wv}, kind)
        assert_same(got, want)
        assert not [i for i in prog.kernels.values() if i.form == "elementwise"], prog.kernels


def test_batched_matmul_broadcasts_without_copies():
    """A batch missing from one operand is broadcast by the contraction."""
    import loopy as lp
    from polyarray.codegen import lower_program
    a = pa.placeholder("a", (5, 20, 9), np.float32)
    b = pa.placeholder("b", (9, 30), np.float32)
    L = lower_program([(a @ b).node], lp.CudaTarget())
    assert [k.form for k in L.kernels] == ["tiled matmul"]


EPILOGUES = {
    "tanh(x @ W + b)": (lambda m, x, W, b: m.tanh(x @ W + b), [(70, 33), (33, 45), (45,)]),
    "silu, the product read twice": (lambda m, x, W, b: (x @ W) / (1 + m.exp(-(x @ W))) + b,
                                     [(67, 20), (20, 66), (66,)]),
    "batched relu": (lambda m, x, W, b: m.maximum(x @ W, 0) * b, [(3, 65, 9), (9, 70), (70,)]),
    "residual": (lambda m, x, W, r: x @ W + 2 * r, [(64, 64), (64, 64), (64, 64)]),
    "int": (lambda m, x, W, b: (x @ W) * 3 - b, [(30, 17), (17, 20), (20,)]),
}


@needs_opencl
@pytest.mark.parametrize("kind", ["gpu", "cpu"])
@pytest.mark.parametrize("name", list(EPILOGUES))
def test_elementwise_epilogue_is_stored_by_the_product(name, kind):
    """``tanh(x @ W + b)``: on a GPU layout one kernel, the product never
    written (plan/epilogue.py); on the CPU layouts the same values."""
    fn, shapes = EPILOGUES[name]
    rng = np.random.default_rng(6)
    dtype = np.int32 if name == "int" else np.float32
    lo, hi = (-5, 6) if name == "int" else (None, None)
    vals = [random_array(rng, s, dtype, lo, hi) for s in shapes]
    phs = [pa.placeholder(f"x{t}", v.shape, v.dtype) for t, v in enumerate(vals)]
    prog, got = run(fn(pa, *phs), {f"x{t}": v for t, v in enumerate(vals)}, kind)
    # the sums' rounding (relative to their own scale, ~30) passes through tanh near 0
    # unscaled: compare at the product's tolerance, not tanh's
    pa.testing.assert_allclose(got, fn(np, *vals), rtol=1e-4, atol=1e-5, err_msg=name)
    if kind == "gpu":
        assert [i.form for i in prog.kernels.values()] == ["tiled matmul"], prog.kernels


@needs_opencl
def test_product_read_elsewhere_is_stored_too():
    """A product that is also an output (or read by another kernel) is
    stored; its elementwise reader is then a kernel of its own."""
    rng = np.random.default_rng(7)
    xv, wv = random_array(rng, (40, 30), np.float32), random_array(rng, (30, 50), np.float32)
    x, w = pa.placeholder("x", xv.shape, xv.dtype), pa.placeholder("w", wv.shape, wv.dtype)
    y = x @ w
    prog, got = run({"y": y, "t": pa.tanh(y), "s": y.sum(axis=0)}, {"x": xv, "w": wv}, "gpu")
    assert_same(got["y"], xv @ wv)
    assert_same(got["t"], np.tanh(xv @ wv))
    assert_same(got["s"], (xv @ wv).sum(axis=0))


@needs_opencl
@pytest.mark.parametrize("kind", ["gpu", "cpu"])
def test_epilogue_reading_an_operand(kind):
    """``x @ W + x`` (a residual) and a batched product whose epilogue reads
    its weights broadcast (fuzzer seed 9209): the epilogue reads an operand
    buffer flat while the product reads it as a matrix."""
    rng = np.random.default_rng(8)
    xv, wv = random_array(rng, (40, 40), np.float32), random_array(rng, (40, 40), np.float32)
    x, w = pa.placeholder("x", xv.shape, xv.dtype), pa.placeholder("w", wv.shape, wv.dtype)
    _, got = run({"res": pa.tanh(x @ w) + x}, {"x": xv, "w": wv}, kind)
    pa.testing.assert_allclose(got["res"], np.tanh(xv @ wv) + xv, rtol=1e-4, atol=1e-5)
    av, bv = random_array(rng, (2, 3, 1), np.float64), random_array(rng, (2, 1, 4), np.float64)
    a, b = pa.placeholder("a", av.shape, av.dtype), pa.placeholder("b", bv.shape, bv.dtype)
    y = a @ b
    _, got = run(pa.where(y > 0, b, y), {"a": av, "b": bv}, kind)
    assert_same(got, np.where(av @ bv > 0, bv, av @ bv))


@needs_opencl
def test_split_k_of_a_batch_of_one():
    """(1, 64, 1100) @ (1, 1100, 64): a batch of one takes split-K; the b
    loop then runs over the chunks and the operands' batch index is 0."""
    rng = np.random.default_rng(9)
    av, bv = random_array(rng, (1, 64, 1100), np.float32), random_array(rng, (1, 1100, 64), np.float32)
    a, b = pa.placeholder("a", av.shape, av.dtype), pa.placeholder("b", bv.shape, bv.dtype)
    prog, got = run(a @ b, {"a": av, "b": bv}, "gpu")
    assert_same(got, av @ bv)
    assert {i.rule for i in prog.kernels.values()} == {"matmul: split-K (few tiles, long K)"}


@pytest.mark.parametrize("kind", ["gpu", "cpu"])
def test_batches_past_the_grid_and_tiny_matrices(kind):
    """A batch of more than 65535 matrices (CUDA's grid z limit, where the
    tiled matmul puts its batch) and a batch of matrices smaller than one
    tile run a work-item per output, with NumPy's values; both once failed
    to launch or idled 15/16 of their work-items."""
    if not OPENCL_OK:
        pytest.skip(f"opencl: {OPENCL_WHY}")
    rng = np.random.default_rng(11)
    for b, m, k, n in ((70000, 3, 4, 2), (70, 5, 5, 5)):
        va = rng.integers(-4, 5, (b, m, k)).astype(np.float32)
        vb = rng.integers(-4, 5, (b, k, n)).astype(np.float32)
        a, bb = pa.placeholder("a", va.shape, np.float32), pa.placeholder("b", vb.shape,
                                                                          np.float32)
        prog, got = run(a @ bb, {"a": va, "b": vb}, kind)
        assert_same(got, va @ vb, f"batch {b}")
        if kind == "gpu":
            (info,) = prog.kernels.values()
            assert info.rule.startswith("matmul: past the grid, or tiny matrices"), info


def test_cuda_grids_stay_inside_their_limits():
    """CUDA code generation (no GPU needed): every default kernel's grid
    fits CUDA's limits (y and z at most 65535 work-groups), and a user
    schedule mapping a long loop to g.1 gets a ScheduleError naming the
    kernel, the axis and the limit, before any compiler runs."""
    cases = [pa.placeholder("a", (70000, 64, 64), np.float32)
             @ pa.placeholder("b", (70000, 64, 64), np.float32),
             pa.placeholder("t", (2100000, 16), np.float32)
             @ pa.placeholder("u", (16, 16), np.float32),
             pa.placeholder("x", (40, 3000000), np.float32).T * 2]
    for expr in cases:
        prog = pa.compile(expr, target="cuda")
        for info in prog.kernels.values():
            assert all(n <= 65535 for n in info.gsize[1:]), info
    x = pa.placeholder("x", (40, 3000000), np.float32)
    with pytest.raises(pa.ScheduleError, match=r"k0_\w+ has a grid of \d+ work-groups on "
                                               r"axis g.1, more than the device's limit of "
                                               r"65535"):
        pa.compile(x * 2, target="cuda",
                   schedule={"k0_*": (pa.schedules.Split("i", 64, outer_tag="g.1"),
                                      pa.schedules.Split("i_inner", 32, outer_tag="g.0",
                                                         inner_tag="l.0"))})


@pytest.mark.parametrize("shapes", [((1, 0), (0, 5)), ((64, 0), (0, 64)), ((3, 2, 0), (3, 0, 4)),
                                    ((0, 3), (3, 5))])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_a_contraction_over_an_empty_axis_is_zeros(shapes, dtype, target):
    """NumPy's ``(m, 0) @ (0, n)`` is zeros.  The GPU matmul forms' schedules
    (prefetch, register tiles) refused the empty loop: ScheduleError on the
    CUDA target and on OpenCL GPUs (found by the widened fuzzer, seed 1254)."""
    va, vb = np.ones(shapes[0], dtype), np.ones(shapes[1], dtype)
    a, b = pa.placeholder("a", va.shape, va.dtype), pa.placeholder("b", vb.shape, vb.dtype)
    want = va @ vb
    kinds = ["gpu", "cpu"] if target == "opencl" else [None]
    for kind in kinds:
        opts = {"device_kind": kind} if kind else {}
        assert_same(pa.compile(a @ b, target=target, **opts)(a=va, b=vb), want)
    if not targets.availability("cuda")[0]:         # the CUDA source, without a GPU
        src = pa.compile(a @ b + 1, target="cuda").source
        assert ("__global__" in src) == (want.size > 0)
