"""Long float32 row sums within NumPy's tolerance (fuzzer seed 1783, opencl,
CPU layout): NumPy sums a row pairwise, and one accumulator running along a
4100-long row (the CPU ``rows`` form did) rounds 4100 times in a row,
missing the float32 tolerance (2e-5) on rows of a repeated value such as
0.1; V lanes of accumulators (``forms/rows.py``) stay well inside it."""
import numpy as np

import polyarray as pa
from fuzz import layouts
from fuzz.runner import compile_in_layout
from helpers import assert_same

R = 4100        # not a multiple of the lanes: the tail is summed too


def _rows():
    """Rows whose one-accumulator sum is off by about 4e-5 (relative)."""
    x = np.empty((3, R), np.float32)
    x[0], x[1], x[2] = 0.1, 0.7, 1.1
    return x


def test_long_float32_row_sums_match_numpy(target):
    xv = _rows()
    seq = np.cumsum(xv, axis=1, dtype=np.float32)[:, -1]       # one accumulator
    assert not np.allclose(seq, xv.sum(axis=1), rtol=2e-5, atol=0)  # the case is hard
    x = pa.placeholder("x", xv.shape, np.float32)
    # fused with readers of their row: the rows form (on a GPU layout, a work-group)
    scaled = x * x.sum(axis=-1, keepdims=True)
    ratio = x / x.mean(axis=-1, keepdims=True)
    for options in layouts(target).values():
        prog = compile_in_layout([scaled, ratio], target, options)
        got = prog(x=xv)
        assert_same(got[0], xv * xv.sum(axis=-1, keepdims=True), f"x * sum, {options}")
        assert_same(got[1], xv / xv.mean(axis=-1, keepdims=True), f"x / mean, {options}")
