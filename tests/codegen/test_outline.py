"""Outlined regions (codegen/emit/outline.py): an elementwise kernel's
chain of temporaries printed as one C function with loopy's semantics.

Outlining is forced (``policy.using_thresholds(OUTLINE_MIN=0)``) on programs whose shared
values cover every node the printer knows: wrapping int8/uint64 arithmetic,
int64/uint64 comparisons, bool logic, ``where``, floor division and
remainder of negative integers, checked integer powers, casts between
dtype classes, inf/nan constants, gathers with index checks (an index
computed in the region too: tests/codegen/test_outline_gather.py), several outputs of
different dtypes, a custom kernel's function; each compared with NumPy on
every target (integers exactly) and, on a device, bit for bit with the same
program not outlined.  Then the issue's chain at 300 ops (outlined at the
default threshold; a replayed ``prog.schedule`` too), and the same source in
a new process.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import polyarray as pa
from polyarray.codegen import policy
from helpers import assert_same, subprocess_env


@pytest.fixture
def forced():
    """Every kernel that can be outlined is (the compile caches' keys change
    with the threshold: targets/cache.code_version)."""
    with policy.using_thresholds(OUTLINE_MIN=0):
        yield


def check(target, outs, bindings, outlined=True, **options):
    """NumPy's values within tolerance, and on OpenCL bit for bit the
    values of the same program not outlined (the same C semantics; on CUDA
    within tolerance, nvcc's FMA contraction may differ)."""
    prog = pa.compile(outs, target=target, **options)
    got = prog(**bindings)
    want = pa.compile(outs, target="numpy")(**bindings)
    for key in want:
        assert_same(got[key], want[key], f"{key} on {target}")
    if target != "numpy":
        assert ("pa_r_" in prog.source) == outlined, prog.source
        with policy.using_thresholds(OUTLINE_MIN=10**9):
            plain = pa.compile(outs, target=target, **options)(**bindings)
        for key in want:
            if target == "cuda":    # nvcc contracts a*b+c into FMAs as it sees fit, and
                # inlining changes what it sees: 1 ulp apart on the H100 (float32 'w')
                assert_same(got[key], plain[key], f"{key}: outlined vs not, on cuda")
            else:
                assert np.array_equal(got[key], plain[key], equal_nan=True), key
    return prog


def _ints():
    rng = np.random.default_rng(5)
    n = 40
    b = {"a": rng.integers(-128, 127, n, endpoint=True).astype(np.int8),
         "b": rng.integers(-128, 127, n, endpoint=True).astype(np.int8),
         "c": rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True),
         "d": rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True),
         "e": rng.integers(-50, 50, n).astype(np.int64),
         "f": np.where(rng.random(n) < 0.5, -1, 1) * rng.integers(1, 7, n)}
    b["a"][:3] = [127, -128, -1]
    b["e"][:2] = [-2**63 + 5, 2**63 - 5]
    x = {k: pa.placeholder(k, v.shape, v.dtype) for k, v in b.items()}
    a, bb, c, d, e, f = (x[k] for k in "abcdef")
    s = a + bb                      # int8, wraps; used several times
    u = c * d                       # uint64, wraps
    q, r = e // f, e % f            # negative operands
    big = e > c                     # int64 against uint64: by value
    t = pa.where(big, q, r)
    outs = {"s": s * s - bb, "u": u + (u >> np.uint64(3)), "qr": q * r + t,
            "big": big & (s > 0) | ~(u == c), "t": t.astype(np.float32) * 0.5 + s,
            "neg": -s, "pow": (f * f) ** 3 + q, "mix": (s.astype(np.int64) + q) // f,
            "b8": (t != 0).astype(np.int8) + s, "cast": (u % np.uint64(1000)).astype(np.int16)}
    return outs, b


def test_integer_region_matches_numpy(target, forced):
    outs, b = _ints()
    check(target, outs, b)


FMA = pa.elementwise_kernel("float32 x, float32 y", "float32 z", "z = x * y + 1", "outline_fma",
                           reference=lambda x, y: x * y + 1)


def _floats():
    rng = np.random.default_rng(6)
    b = {"x": rng.uniform(-3, 3, 50).astype(np.float32),
         "y": rng.uniform(-3, 3, 50).astype(np.float64),
         "m": rng.random(50) < 0.5}
    b["x"][:3] = [np.nan, np.inf, -0.0]
    x, y, m = (pa.placeholder(k, v.shape, v.dtype) for k, v in b.items())
    s = pa.sin(x) * 0.5 + x         # float32, shared
    w = pa.where(m, s, np.float32(np.inf))
    v = y * y - 1.0                 # float64, shared
    g = pa.maximum(s, np.float32(np.nan)) + w
    outs = {"w": w * w + s, "v": pa.exp(-v) / (v + 2.0) + x.astype(np.float64) * v,
            "g": g - s, "isnan": pa.isnan(g) | (w > s), "minf": pa.where(v > 0, v, -np.inf) + v,
            # of finite values: a cast of NaN or inf is the device's (polyarray/numpy_differences.md)
            "i": (pa.where(pa.isfinite(s), s, 0.0) * 100).astype(np.int32) + (v > 0), "fl": pa.floor_divide(s, 0.75) + s,
            "mod": pa.remainder(v, -1.5) * v, "nm": pa.logical_not(m) & (s < 0) | m,
            "h": pa.arctan2(s, w) + pa.sign(s), "user": FMA(s, x) * FMA(s, s)}
    return outs, b


def test_float_region_matches_numpy(target, forced):
    outs, b = _floats()
    check(target, outs, b)


def test_gathers_in_a_region(target, forced):
    """A gather at an index read from a buffer is a parameter (its check
    runs before the call); one at an index computed in the region is read
    through a pointer parameter.  Both still raise NumPy's IndexError."""
    xv = np.arange(10, dtype=np.float32) * 1.5
    iv = np.array([0, 9, -1, -10, 3, 4], np.int64)
    x = pa.placeholder("x", (10,), np.float32)
    i = pa.placeholder("i", (6,), np.int64)
    g = x[i] * 2.0
    outs = {"g": g * g + g, "h": pa.sqrt(pa.abs(g)) + g}
    check(target, outs, {"x": xv, "i": iv})
    k = (i * i) % 7                 # computed index, shared
    outs2 = {"c": x[k] * k + k, "d": k - 1}
    check(target, outs2, {"x": xv, "i": iv})
    with pytest.raises(IndexError, match="out of bounds"):
        pa.compile({"g": g * g + g}, target=target)(x=xv, i=np.array([0, 10] * 3, np.int64))


def test_large_gpu_layout(target, forced):
    """The ``ilp`` layout (elements per work-item, ragged last group): the
    region reads the register copies; two outputs through one call."""
    n = 256 * 4 * 64 + 7
    rng = np.random.default_rng(7)
    b = {"x": rng.uniform(-2, 2, n).astype(np.float32),
         "k": rng.integers(-100, 100, n).astype(np.int32)}
    x, k = pa.placeholder("x", (n,), np.float32), pa.placeholder("k", (n,), np.int32)
    s = x * x + 1.0
    j = k * k - k
    outs = {"a": pa.log(s) * s, "b": j * j + (s > 2)}
    opts = {"device_kind": "gpu"} if target == "opencl" else {}
    check(target, outs, b, **opts)


def test_chain_of_300_ops_is_outlined(target):
    """The issue's chain at the default threshold: one function."""
    from benchmarks.compile_profile import chain
    xv = np.linspace(-1, 1, 4096, dtype=np.float32)
    out = chain(300)
    prog = pa.compile(out, target=target)
    assert_same(prog(x=xv), pa.compile(out, target="numpy")(x=xv))
    if target != "numpy":
        assert prog.source.count("pa_r_") == 2, "one definition, one call"
        replay = pa.compile(out, target=target, schedule=prog.schedule)
        assert replay.source == prog.source     # a replayed default schedule outlines too


_SCRIPT = r"""
import sys
sys.path.insert(0, sys.argv[1])
from polyarray.codegen import policy
import test_outline
import polyarray as pa
with policy.using_thresholds(OUTLINE_MIN=0):
    outs, b = test_outline._ints()
    sys.stdout.write(pa.compile(outs, target="cuda").source)
"""


def test_outlined_source_is_the_same_in_a_new_process(forced, tmp_path):
    outs, _ = _ints()
    here = pa.compile(outs, target="cuda").source
    env = subprocess_env(PYTHONHASHSEED="123", POLYARRAY_CACHE_DIR=str(tmp_path))
    there = subprocess.run([sys.executable, "-c", _SCRIPT, os.path.dirname(__file__)],
                           env=env, capture_output=True, text=True, check=True).stdout
    assert "pa_r_" in here
    assert there == here
