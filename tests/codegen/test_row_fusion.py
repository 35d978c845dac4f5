"""Row fusion: softmax-like programs (reductions over the last axis and the
elementwise outputs that read them) become one ``rows`` kernel; programs
that cannot be fused that way keep separate kernels.  Every case is checked
against NumPy on every device target, and the work-group variant (the GPU
default) also on PoCL through a schedule."""
import numpy as np
import pytest

import polyarray as pa
from helpers import assert_same
from polyarray.schedules import GroupReduce, ScheduleError, Split, Tag

RNG = np.random.default_rng(5)


def _get(v):
    return v.get() if hasattr(v, "get") else v


def softmax(ns, x):
    e = ns.exp(x - ns.max(x, axis=-1, keepdims=True))
    return e / ns.sum(e, axis=-1, keepdims=True)


def log_softmax(ns, x):
    s = x - ns.max(x, axis=-1, keepdims=True)
    return s - ns.log(ns.sum(ns.exp(s), axis=-1, keepdims=True))


def layer_norm(ns, x):
    m = ns.mean(x, axis=-1, keepdims=True)
    v = ns.mean((x - m) ** 2, axis=-1, keepdims=True)
    return (x - m) / ns.sqrt(v + 1e-5)


def above_mean_any(ns, x):
    """Bool and small-int reductions: the results' storage types differ from
    the accumulators'."""
    big = ns.any(x > 2 * ns.mean(x, axis=-1, keepdims=True), axis=-1, keepdims=True)
    return ns.where(big, x, -x)


FUSED = [   # (function, shape, dtype, reductions)
    (softmax, (64, 1000), np.float32, 2),
    (softmax, (3, 5, 300), np.float64, 2),        # rows over two axes
    (softmax, (7, 40), np.float32, 2),            # short rows: one work-item per row
    (layer_norm, (9, 40), np.float32, 2),
    (softmax, (1000,), np.float32, 2),            # one row
    (log_softmax, (50, 777), np.float32, 2),
    (layer_norm, (33, 512), np.float64, 2),
    (above_mean_any, (20, 130), np.float32, 2),
    (above_mean_any, (20, 130), np.int8, 2),
]


def _case(fn, shape, dtype):
    x = pa.placeholder("x", shape, dtype)
    if np.dtype(dtype).kind == "f":
        xv = (RNG.standard_normal(shape) * 4).astype(dtype)
    else:
        xv = RNG.integers(-50, 50, shape).astype(dtype)
    return fn(pa, x), {"x": xv}, fn(np, xv)


@pytest.mark.parametrize("fn, shape, dtype, nred", FUSED,
                         ids=[f"{c[0].__name__}-{c[1]}-{np.dtype(c[2]).name}" for c in FUSED])
def test_fused_into_one_kernel(device_target, fn, shape, dtype, nred):
    expr, inputs, want = _case(fn, shape, dtype)
    prog = pa.compile(expr, target=device_target)
    assert list(prog.kernels) == ["k0_rows"], prog.kernels
    assert prog.kernels["k0_rows"].form.startswith("rows")
    # the fused reductions need no buffers: only the input and the output remain
    assert sorted(prog._exe.lowered.buffers) == ["out0", "p1_x"]
    assert_same(_get(prog(**inputs)), want, fn.__name__)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_work_group_rows_schedule(device_target, dtype):
    """The GPU default (one work-group per row, tree reductions in local
    memory, results shared through local memory) on any device, ragged rows."""
    expr, inputs, want = _case(softmax, (40, 1000), dtype)
    steps = [Tag("row", "g.0"), GroupReduce("j0", 256, over=""),
             GroupReduce("j1", 256, over=""), Split("c", 256, inner_tag="l.0")]
    prog = pa.compile(expr, target=device_target, schedule={"k0_rows": steps})
    assert "l.0" in prog.kernels["k0_rows"].loop_nest()
    assert_same(_get(prog(**inputs)), want)


def test_reduction_read_at_another_row_is_not_fused(device_target):
    x = pa.placeholder("x", (64, 100), np.float32)
    xv = RNG.standard_normal((64, 100)).astype(np.float32) + 3
    y = x / x.sum(axis=1, keepdims=True)[::-1]
    prog = pa.compile(y, target=device_target)
    assert len(prog.kernels) == 2 and "k0_rows" not in prog.kernels
    assert_same(_get(prog(x=xv)), xv / xv.sum(axis=1, keepdims=True)[::-1])


def test_the_pass_decides_which_rows_groups_are_one_kernel():
    """The row-fusion pass, not the builder, sets a group that would read a
    reduction at another row ``apart``: the plan says so before any kernel
    is built, and the kernels are the reduction and the outputs apart."""
    import loopy as lp
    from polyarray.codegen import lower_program
    from polyarray.codegen.plan import make_plan
    x = pa.placeholder("x", (64, 100), np.float32)
    s = x.sum(axis=1, keepdims=True)
    for y, apart, kernels in [(x / s[::-1], True, ["k0_rows_0sum", "k0_rows_elementwise"]),
                              (x / s, False, ["k0_rows"]),
                              (softmax(pa, x)[:, ::-1], False, ["k0_rows"]),
                              (softmax(pa, x)[::-1], True,
                               ["k0_rows_0max", "k0_rows_1sum", "k0_rows_elementwise"])]:
        groups = make_plan([y.node]).groups
        assert [(g.kind, g.apart) for g in groups] == [("rows", apart)], groups
        assert [u.kind for u in groups[0].units] == ["reduce"] * (len(groups[0].units) - 1) \
            + ["elementwise"]
        lowered = lower_program([y.node], lp.OpenCLTarget())
        assert [k.name for k in lowered.kernels] == kernels


def test_reduction_used_elsewhere_is_kept(device_target):
    """A reduction that is also an output, or read by another kernel, keeps
    its own kernel; the others still fuse."""
    x = pa.placeholder("x", (32, 200), np.float32)
    xv = RNG.standard_normal((32, 200)).astype(np.float32)
    m = x.max(axis=1, keepdims=True)
    e = pa.exp(x - m)
    y = e / e.sum(axis=1, keepdims=True)
    prog = pa.compile({"y": y, "m": m[:, 0]}, target=device_target)
    kinds = sorted(k.form for k in prog.kernels.values())      # m[:, 0] is a copy kernel
    assert kinds in (["elementwise", "rows (thread)", "thread"],
                     ["elementwise", "lanes", "rows (thread)"],       # CPU
                     ["elementwise", "group", "rows (group)"]), prog.kernels
    got = prog(x=xv)
    ee = np.exp(xv - xv.max(axis=1, keepdims=True))
    assert_same(_get(got["y"]), ee / ee.sum(axis=1, keepdims=True))
    assert_same(_get(got["m"]), xv.max(axis=1))


def test_reduction_of_the_kernels_own_output_is_not_fused(device_target):
    """``r = sum(y0)`` where y0 is written by the same kernel would race."""
    x = pa.placeholder("x", (16, 300), np.float64)
    xv = RNG.uniform(0.5, 1.5, (16, 300))        # row sums far from 0: well conditioned
    y0 = x * 2.0
    y1 = y0 / y0.sum(axis=1, keepdims=True)
    got = pa.compile({"y0": y0, "y1": y1}, target=device_target)(x=xv)
    assert_same(_get(got["y1"]), xv * 2 / (xv * 2).sum(axis=1, keepdims=True))


def test_group_reduce_over_refuses_a_mapped_loop(device_target):
    expr, inputs, _ = _case(softmax, (8, 256), np.float32)
    steps = [Tag("row", "g.0"), GroupReduce("j0", 64, over="row")]
    with pytest.raises(ScheduleError, match="already mapped"):
        pa.compile(expr, target=device_target, schedule={"k0_rows": steps})
