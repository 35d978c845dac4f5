"""Fused reductions over broadcasts: a small reduction
whose result only feeds another reduction is unrolled into that
reduction's kernel (``plan/materialize.py``, ``KernelBuilder.map_reduce``),
so nearest-centre search is one kernel that never stores the (points,
centres) distances; all-pairs forces reduce their broadcast in one kernel.
Checked against NumPy on both layouts of the OpenCL target: the kernel
count, and the values (exact for integers and bools; NaNs propagate as in
NumPy; integer sums wrap)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import polyarray as pa
from helpers import assert_same
from polyarray import targets
from polyarray.codegen import policy

OPENCL_OK, OPENCL_WHY = targets.availability("opencl")
pytestmark = pytest.mark.skipif(not OPENCL_OK, reason=f"opencl: {OPENCL_WHY}")
LAYOUTS = ["gpu", "cpu"]


def nearest(ns, x, c):
    return ns.argmin(((x[:, None, :] - c[None]) ** 2).sum(axis=2), axis=1)


def forces(ns, p, w):
    d = p[None, :, :] - p[:, None, :]
    return (d * w[None, :, None]).sum(axis=1)


def run(fn, layout, **values):
    """(the program, its result on OpenCL, NumPy's result)."""
    ph = {k: pa.placeholder(k, v.shape, v.dtype) for k, v in values.items()}
    prog = pa.compile(fn(pa, **ph), target="opencl", device_kind=layout)
    return prog, prog(**values), fn(np, **values)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int8, np.uint16])
def test_nearest_centre_is_one_kernel(layout, dtype):
    rng = np.random.default_rng(1)
    # values on a grid, so every sum is exact and argmin agrees with NumPy's
    x = rng.integers(-6, 7, (300, 8)).astype(dtype)
    c = rng.integers(-6, 7, (37, 8)).astype(dtype)
    prog, got, want = run(nearest, layout, x=x, c=c)
    assert len(prog.kernels) == 1, prog.kernels
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int64


@pytest.mark.parametrize("layout", LAYOUTS)
def test_all_pairs_forces_are_one_kernel(layout):
    rng = np.random.default_rng(2)
    p = rng.normal(size=(70, 3)).astype(np.float32)
    w = rng.normal(size=(70,)).astype(np.float32)
    prog, got, want = run(forces, layout, p=p, w=w)
    assert len(prog.kernels) == 1, prog.kernels
    assert_same(got, want)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_inner_max_and_min_propagate_nan_and_sums_wrap(layout):
    """The unrolled terms combine with NumPy's semantics: a NaN anywhere in
    a max/min wins; int32 sums wrap; bool any/all; the outer reduction of
    each is another op over another axis."""
    rng = np.random.default_rng(3)
    f = rng.normal(size=(9, 6, 5)).astype(np.float32)
    f[2, 3, 4] = np.nan
    f[5, :, 0] = np.nan
    i = rng.integers(2**30, 2**31 - 1, (9, 6, 5), dtype=np.int64).astype(np.int32)
    b = rng.random((9, 6, 5)) < 0.3

    def fn(ns, f, i, b):
        return {"max": ns.min(ns.max(f, axis=2), axis=1),
                "min": ns.sum(ns.min(f, axis=2), axis=0),
                "wrap": ns.max(ns.sum(i, axis=2, dtype=np.int32), axis=1),
                "prod": ns.min(ns.prod(i, axis=2), axis=1),
                "anyall": ns.all(ns.any(b, axis=2), axis=1),
                "argmax": ns.argmax(ns.max(f, axis=2), axis=1)}
    prog, got, want = run(fn, layout, f=f, i=i, b=b)
    assert len(prog.kernels) == len(want), prog.kernels
    for k in want:
        assert_same(np.asarray(got[k]), want[k], k)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_what_is_not_inlined(layout):
    """A reduction over more than ``INLINE_REDUCTION_MAX`` values,
    one that is an output, one read by elementwise work of another size
    (a broadcast: it would be recomputed), and one read by a product stay
    kernels of their own, with the same values."""
    rng = np.random.default_rng(4)
    big = policy.current_thresholds().INLINE_REDUCTION_MAX + 1
    x = rng.normal(size=(40, 6, big)).astype(np.float32)
    y = rng.normal(size=(40, 6, 3)).astype(np.float32)
    m = rng.normal(size=(6, 4)).astype(np.float32)

    def fn(ns, x, y, m):
        small = y.sum(axis=2)
        return {"big": x.sum(axis=2).max(axis=1), "out": small,
                "bcast": (small[:, :, None] * x).sum(axis=(1, 2)),
                "product": (small @ m).sum(axis=1)}
    prog, got, want = run(fn, layout, x=x, y=y, m=m)
    for k in want:
        assert_same(np.asarray(got[k]), want[k], k)
    n_red = sum(info.form != "elementwise" for info in prog.kernels.values())
    assert len(prog.kernels) >= 5, prog.kernels      # big's inner, out, bcast, @, sums
    assert n_red >= 5


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 67), k=st.integers(1, 67), d=st.integers(1, 16),
       layout=st.sampled_from(LAYOUTS), seed=st.integers(0, 2**16))
def test_random_sizes(n, k, d, layout, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-5, 6, (n, d)).astype(np.float32)
    c = rng.integers(-5, 6, (k, d)).astype(np.float32)
    prog, got, want = run(nearest, layout, x=x, c=c)
    assert len(prog.kernels) == 1
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64, np.bool_])
@pytest.mark.parametrize("op", ["sum", "max", "argmin", "any"])
@pytest.mark.parametrize("n,d", [(300, 3), (301, 2), (260, 4)])
def test_broadcast_reductions_with_short_contiguous_axes_in_registers(n, d, op, dtype):
    """An outer reduction over a broadcast whose last kept axis is short
    and contiguous (the xyz of all-pairs work) computes that axis's outputs
    in one work-item (``KEPT_BLOCK``; GPU layout), with the values
    NumPy gives, for every op and dtype, ragged sizes included."""
    rng = np.random.default_rng(n + d)
    pv = (rng.normal(size=(n, d)) * 4).astype(dtype)

    def fn(ns, p):
        pair = (p[None, :, :] != p[:, None, :]) if dtype == np.bool_ else \
            p[None, :, :] - p[:, None, :]
        return getattr(ns, op)(pair, axis=1)
    prog, got, want = run(fn, "gpu", p=pv)
    (first, *_) = prog.kernels.values()
    assert first.schedule[0] == pa.schedules.Split("i", d, inner_tag="ilp"), first
    assert_same(got, want)


def test_a_middle_axis_sum_read_from_memory_is_not_blocked():
    """Blocking the short contiguous axis is for computed values only: a
    middle-axis sum of values read from memory keeps a work-item per output
    (blocked, its reads were 0.45x torch's speed on the H100)."""
    x = pa.placeholder("x", (300, 400, 3), np.float32)
    prog = pa.compile(x.sum(axis=1), target="opencl", device_kind="gpu")
    assert not any("ilp" in str(k.schedule) for k in prog.kernels.values()), prog.kernels
