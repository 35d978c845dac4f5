"""Gathers at an index computed inside an outlined region.

``t[(abs(v) * 10).astype(int32) % 64]`` in a long chain once kept the
whole kernel's thousands of loopy instructions (a compile-time cliff); the
region now reads the buffer through a pointer parameter, the index check
printed with it.  Forced outlining (``using_thresholds(OUTLINE_MIN=0)``) keeps the
programs small: one and two such gathers (float32, int32 and bool tables,
negative indices, one output and several), NumPy's values on every target
and, on OpenCL, bit for bit the program not outlined; an index out of
bounds still raises NumPy's IndexError.
"""
import numpy as np
import pytest

import polyarray as pa
from polyarray.codegen import policy
from polyarray.codegen.emit import outline
from helpers import assert_same

REFUSAL = "an array read inside the region"


@pytest.fixture
def forced():
    with policy.using_thresholds(OUTLINE_MIN=0):
        yield


def _refusals():
    return sum(n for why, n in outline.REFUSED.items() if why.startswith(REFUSAL))


def _check(target, outs, bindings):
    before = _refusals()
    prog = pa.compile(outs, target=target)
    bindings = {k: bindings[k] for k in prog.placeholders}
    got = prog(**bindings)
    want = pa.compile(outs, target="numpy")(**bindings)
    for key in want:
        assert_same(got[key], want[key], f"{key} on {target}")
    if target == "numpy":
        return
    assert "pa_r_" in prog.source and _refusals() == before, outline.REFUSED
    if target == "opencl":          # the same C semantics: bit for bit
        with policy.using_thresholds(OUTLINE_MIN=10**9):
            plain = pa.compile(outs, target=target)
        assert "pa_r_" not in plain.source
        for key, value in plain(**bindings).items():
            assert np.array_equal(got[key], value, equal_nan=True), key


def test_computed_gathers_are_outlined(target, forced):
    rng = np.random.default_rng(3)
    b = {"x": rng.uniform(-3, 3, 50).astype(np.float32),
         "t": rng.uniform(-1, 1, 64).astype(np.float32),
         "ti": rng.integers(-1000, 1000, 16).astype(np.int32),
         "m": rng.integers(0, 2, 8).astype(np.bool_)}
    x, t = pa.placeholder("x", (50,), np.float32), pa.placeholder("t", (64,), np.float32)
    ti, m = pa.placeholder("ti", (16,), np.int32), pa.placeholder("m", (8,), np.bool_)
    v = pa.sin(x) * 0.5 + x
    one = {"a": pa.cos(v) * (v + t[(pa.abs(v) * 10).astype(np.int32) % 64])}
    _check(target, one, b)
    g = t[(v * 7).astype(np.int64) % 64 - 32]               # negative indices wrap
    w = v * g + 1.0
    u = ti[(w * 3).astype(np.int16) % 16 - 8]               # a second table, int32
    two = {"a": w * g - u.astype(np.float32), "b": u * u + 3,
           "c": pa.where(m[(u % 8).astype(np.uint8)], w, -w)}   # a third (bool)
    _check(target, two, b)


def test_computed_gather_out_of_bounds(target, forced):
    x, t = pa.placeholder("x", (6,), np.float32), pa.placeholder("t", (8,), np.float32)
    v = x * x + 1.0
    prog = pa.compile({"a": v * t[(v * 2).astype(np.int32)]}, target=target)
    assert target == "numpy" or "pa_r_" in prog.source
    xv = np.array([0, 1, 1.5, 0.5, 1, 0], np.float32)       # indices 2, 4, 6, 2, 4, 2
    assert_same(prog(x=xv, t=np.arange(8, dtype=np.float32))["a"],
                (xv * xv + 1) * np.arange(8, dtype=np.float32)[((xv * xv + 1) * 2).astype(int)])
    with pytest.raises(IndexError, match="out of bounds"):
        prog(x=np.array([0, 1, 2, 0, 0, 0], np.float32), t=np.zeros(8, np.float32))
