"""CPU reductions in lanes (``forms/lanes.py``): accumulators along the
contiguous axis, reduced (row sums, full sums) or kept (column sums), in
one work-group or chunked with a combine kernel, against NumPy: ragged
sizes (a tail after the last full lane step; a last block of outputs that
overlaps its neighbour), every reduction op, integers and bools exact.
The suite's POLYARRAY_POISON=1 makes a partial left unwritten fail."""
import numpy as np
import pytest

import polyarray as pa
from polyarray import targets
from polyarray.codegen.policy.classify import Reduction
from polyarray.codegen.policy.device import Device
from polyarray.codegen.policy import Form, choose, current_thresholds
from polyarray.testing import assert_allclose

OPENCL_OK, OPENCL_WHY = targets.availability("opencl")
needs_opencl = pytest.mark.skipif(not OPENCL_OK, reason=f"opencl: {OPENCL_WHY}")
CPU = Device(cpu=True)
_T = current_thresholds()
CPU_GROUPS, CPU_LANES, CPU_ONE_GROUP = _T.CPU_GROUPS, _T.CPU_LANES, _T.CPU_ONE_GROUP

# (shape, axis) -> the kernels' forms on the CPU layout
CASES = [
    ((375, 375), 1, ("lanes",)),                         # a tail of 7 after 23 steps
    ((5, 16), 1, ("lanes",)),                            # one step, no tail
    ((3, 100003), 1, ("lanes", "combine (thread)")),      # chunks, the tail in the last
    ((300007,), None, ("lanes", "combine (thread)")),
    ((40, 50, 30), None, ("lanes",)),
    ((6, 40, 70), (0, 2), ("lanes",)),                   # reduced axes not adjacent
    ((375, 375), 0, ("lanes",)),                         # kept: 375 lanes, one block
    ((301, 1037), 0, ("lanes", "combine (thread)")),     # kept: 3 blocks, the last overlaps
    ((5, 2000, 33), 1, ("lanes", "combine (thread)")),    # kept axis after the reduced one
    ((70, 17), 0, ("lanes",)),                           # 17 outputs: one block of 16 lanes
    ((600, 7), 0, ("split-columns 1", "combine (thread)")),     # too few outputs for lanes
    ((50, 9), 1, ("thread",)),                           # rows shorter than the lanes
]
OPS = ("sum", "prod", "max", "min", "any", "all", "argmax", "argmin")


def sample(shape, dtype, rng):
    """Small values (products and integer sums stay exact, ties are many),
    for floats a few NaNs and infinities in some cases."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.97
    x = rng.integers(-3, 4, shape).astype(dtype)
    if dtype.kind == "f":
        x = x / 2
        flat = x.reshape(-1)
        flat[rng.choice(flat.size, 2)] = np.inf
        flat[rng.choice(flat.size, 1)] = np.nan
    return x


def _ops_for(dtype, axis):
    """Every op (bools: no prod, no min); argmax/argmin take one axis or none."""
    ops = OPS if np.dtype(dtype) != np.bool_ else ("sum", "max", "any", "all", "argmax")
    return tuple(op for op in ops if not (op.startswith("arg") and isinstance(axis, tuple)))


@needs_opencl
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("shape,axis,forms", CASES, ids=[f"{s}-{a}" for s, a, _ in CASES])
def test_lanes_match_numpy(shape, axis, forms, dtype):
    rng = np.random.default_rng(CASES.index((shape, axis, forms)))
    x = pa.placeholder("x", shape, dtype)
    xv = sample(shape, dtype, rng)
    ops = _ops_for(dtype, axis)
    outs = {op: getattr(pa, op)(x, axis=axis) for op in ops}
    prog = pa.compile(outs, target="opencl", device_kind="cpu")
    per_output = {}
    for name, info in prog.kernels.items():
        per_output.setdefault(name.split("_")[0], []).append(str(info.form))
    assert per_output[next(iter(per_output))] == list(forms), per_output
    got = prog(x=xv)
    with np.errstate(all="ignore"):
        for op in ops:
            want = np.asarray(getattr(np, op)(xv, axis=axis))
            if want.dtype.kind in "iub" or op.startswith("arg"):
                np.testing.assert_array_equal(np.asarray(got[op]), want, err_msg=op)
            else:
                assert_allclose(got[op], want, err_msg=op)
            assert np.asarray(got[op]).dtype == want.dtype, op


@needs_opencl
def test_fused_body_and_contraction():
    """The reduced value is an expression, and a contraction that the CPU
    policy computes as a reduction (``x @ v`` too small to pack)."""
    rng = np.random.default_rng(3)
    xv = rng.standard_normal((37, 301)).astype(np.float32)
    vv = rng.standard_normal(301).astype(np.float32)
    x, v = pa.placeholder("x", xv.shape, np.float32), pa.placeholder("v", vv.shape, np.float32)
    outs = {"sq": ((x - 0.5) ** 2).sum(axis=1), "cols": pa.abs(x).max(axis=0),
            "mv": x @ v, "vm": pa.einsum("ij,i->j", x, x[:, 0])}
    prog = pa.compile(outs, target="opencl", device_kind="cpu")
    assert {str(k.form) for k in prog.kernels.values()} - {"elementwise"} == {"lanes"}
    got = prog(x=xv, v=vv)
    assert_allclose(got["sq"], ((xv - 0.5) ** 2).sum(axis=1))
    assert_allclose(got["cols"], np.abs(xv).max(axis=0))
    assert_allclose(got["mv"], xv @ vv)
    assert_allclose(got["vm"], np.einsum("ij,i->j", xv, xv[:, 0]))


@needs_opencl
def test_integer_sums_wrap_as_numpy():
    """int32 sums that overflow wrap exactly as NumPy's, in lanes and chunks."""
    xv = np.full((3, 70001), 2**30, np.int32)
    xv[:, ::7] = -(2**31)
    x = pa.placeholder("x", xv.shape, np.int32)
    got = pa.compile({"r": x.sum(axis=1), "c": x.sum(axis=0), "all": x.sum()},
                     target="opencl", device_kind="cpu")(x=xv)
    np.testing.assert_array_equal(got["r"], xv.sum(axis=1))
    np.testing.assert_array_equal(got["c"], xv.sum(axis=0))
    np.testing.assert_array_equal(got["all"], xv.sum())


def test_policy_one_group_when_small_else_spread():
    """Small reductions run in one work-group (PoCL's second thread wakes
    late); large ones in CPU_GROUPS, few outputs' ranges cut in chunks
    whose lane steps cover the range."""
    small = choose(Reduction(375, 375, True, "sum"), CPU)
    assert (small.form, small.params["G"], small.params["C"]) == (Form.LANES, 1, 1)
    R = 1 << 20
    few = choose(Reduction(3, R, True, "sum"), CPU).params
    assert few["K"] % few["V"] == 0 and few["C"] * few["K"] >= R > (few["C"] - 1) * few["K"]
    assert few["C"] * 3 >= CPU_GROUPS
    many = choose(Reduction(3000, 3000, True, "sum"), CPU).params
    assert many["C"] == 1 and many["G"] * many["P"] >= 3000 and many["G"] <= CPU_GROUPS
    cols = choose(Reduction(3000, 3000, False, "sum", run=3000), CPU)
    assert cols.form == Form.LANES and cols.params["along"] == "kept"
    assert 3000 * 3000 >= CPU_ONE_GROUP and cols.params["G"] * cols.params["C"] >= CPU_GROUPS
    narrow = choose(Reduction(7, 10**5, False, "sum", run=CPU_LANES - 1), CPU)
    assert narrow.form == Form.SPLIT_COLUMNS
    assert choose(Reduction(3000, 3000, True, "sum"), Device()).form != Form.LANES
