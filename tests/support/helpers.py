"""Shared test helpers: results compared with ``pa.testing`` (per-dtype
tolerances; CuPy's ``numpy_cupy_allclose`` is the model) and random inputs
that are never all zeros."""
from __future__ import annotations

import numpy as np

import polyarray as pa

ALL_DTYPES = [np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
    np.uint32, np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128)]
FLOATS = [np.dtype(t) for t in (np.float16, np.float32, np.float64)]
COMPLEX = [np.dtype(t) for t in (np.complex64, np.complex128)]
INTS = [d for d in ALL_DTYPES if d.kind in "iu"]
# the dtypes every device target must cover
CORE_DTYPES = [np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64, np.bool_,
                                     np.complex64, np.complex128)]

TOLERANCES = pa.testing.TOLERANCES      # (rtol, atol relative to the largest value)


def assert_same(actual, expected, context=""):
    """A NumPy array of the expected shape and dtype, with values equal
    within the dtype's tolerance (``pa.testing.assert_allclose``)."""
    __tracebackhide__ = True
    pa.testing.assert_allclose(actual, expected, err_msg=context)


def random_array(rng, shape, dtype, low=None, high=None, nonzero=False):
    """Random values of ``dtype``; small ranges keep integer ops in range."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        a = rng.random(shape) < 0.5
        if nonzero:
            a = np.ones(shape, bool)
        return a
    if dtype.kind == "f":
        lo = -3.0 if low is None else low
        hi = 3.0 if high is None else high
        a = rng.uniform(lo, hi, size=shape)
        if nonzero:
            a = np.where(np.abs(a) < 0.1, 0.5, a)
        return a.astype(dtype)
    if dtype.kind == "c":       # each part in the range (low, high bound the parts)
        part = np.dtype(np.float64)
        re = random_array(rng, shape, part, low, high, nonzero)
        im = random_array(rng, shape, part, low, high, False)
        return (re + 1j * im).astype(dtype)
    info = np.iinfo(dtype)
    lo = max(info.min, -20 if low is None else int(low))
    hi = min(info.max, 20 if high is None else int(high))
    a = rng.integers(lo, hi, size=shape, dtype=dtype, endpoint=True)
    if nonzero:
        a = np.where(a == 0, 1, a).astype(dtype)
    return a


def evaluate(expr, target, **bindings):
    return pa.compile(expr, target=target)(**bindings)


def subprocess_env(**extra):
    """Environment for a child Python that imports this checkout first,
    keeping any PYTHONPATH the parent has (e.g. the GPU machine's site dir)."""
    import os
    support = os.path.dirname(os.path.abspath(__file__))
    tests = os.path.dirname(support)
    # the checkout, then the tests' shared modules (helpers, the fuzz package)
    path = [os.path.dirname(tests), tests, support] + (
        [os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
    return dict(os.environ, PYTHONPATH=os.pathsep.join(path), **extra)
