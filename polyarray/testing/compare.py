"""Comparing results: the one comparer that the tests, the benchmarks, the
autotuner and ``check_schedule`` use, and that a user can use too
(``pa.testing.assert_allclose``).

Floats are compared with NumPy's rule ``|actual - expected| <= atol + rtol *
|expected|``, the tolerances looked up by dtype; ``atol`` is relative to the
expected values' largest finite magnitude (at least 1), so results near 0 of
a large computation are not held to a tighter bound than its large values.
NaNs compare equal to NaNs.  Integers and booleans must be equal.

``assert_targets_agree`` (``pa.check`` raising with its table: one DAG on
every target against NumPy) is in ``testing.checking``, which compiles.
"""
from __future__ import annotations

import numpy as np

# (rtol, atol) for our results against NumPy's: the same operations, in
# another order only where a kernel reduces in parallel
TOLERANCES = {
    np.dtype(np.float16): (2e-3, 2e-3),
    np.dtype(np.float32): (2e-5, 1e-6),
    np.dtype(np.float64): (1e-12, 1e-13),
    np.dtype(np.complex64): (2e-5, 1e-6),
    np.dtype(np.complex128): (1e-12, 1e-13),
}
# (rtol, atol) for two schedules of one program, which may sum in different
# orders (tiles, work-group sizes): used by the autotuner and check_schedule
SCHEDULE_TOLERANCES = {
    np.dtype(np.float16): (2e-3, 2e-3),
    np.dtype(np.float32): (2e-3, 2e-3),
    np.dtype(np.float64): (1e-5, 1e-5),
    np.dtype(np.complex64): (2e-3, 2e-3),
    np.dtype(np.complex128): (1e-5, 1e-5),
}


def to_host(value) -> np.ndarray:
    """A NumPy copy of a host or device array (device arrays have ``get``)."""
    return value.get() if hasattr(value, "get") else np.asarray(value)


def tolerance(expected: np.ndarray, rtol=None, atol=None, tolerances=TOLERANCES):
    """``(rtol, absolute atol)`` for comparing with ``expected`` (floats), or
    None (exact).  ``rtol`` given alone also stands for ``atol``."""
    if expected.dtype.kind not in "fc":
        return None
    if rtol is None:
        rtol, table_atol = tolerances[expected.dtype]
        atol = table_atol if atol is None else atol
    elif atol is None:
        atol = rtol
    parts = _parts(expected)
    finite = np.isfinite(parts)
    scale = float(np.max(np.abs(parts[finite]), initial=1.0))
    return rtol, atol * max(scale, 1.0)


def _parts(values: np.ndarray) -> np.ndarray:
    """Complex values as their real and imaginary parts (a last axis of 2);
    other values as they are."""
    if values.dtype.kind != "c":
        return values
    return np.stack([values.real, values.imag], axis=-1)


def allclose(actual, expected, rtol=None, atol=None, tolerances=TOLERANCES) -> bool:
    """Whether ``actual`` (host or device) matches ``expected`` in shape and
    values (the module docstring says how); dtypes are not compared."""
    actual, expected = to_host(actual), to_host(expected)
    if actual.shape != expected.shape:
        return False
    tol = tolerance(expected, rtol, atol, tolerances)
    if tol is None:
        return bool(np.array_equal(actual, expected))
    return bool(np.allclose(_parts(actual), _parts(expected), rtol=tol[0], atol=tol[1],
                            equal_nan=True))


def assert_allclose(actual, expected, rtol=None, atol=None, err_msg="", strict=True,
                    tolerances=TOLERANCES) -> None:
    """Raise an AssertionError naming what differs.  ``strict``: ``actual``
    must be a ``numpy.ndarray`` of ``expected``'s dtype (what a target must
    return); otherwise device arrays are copied to the host first and
    dtypes are not compared."""
    __tracebackhide__ = True
    if strict:
        assert isinstance(actual, np.ndarray), f"{err_msg}: got {type(actual).__name__}"
    else:
        actual = to_host(actual)
    expected = np.asarray(to_host(expected))
    assert actual.shape == expected.shape, \
        f"{err_msg}: shape {actual.shape} != expected {expected.shape}"
    if strict:
        assert actual.dtype == expected.dtype, \
            f"{err_msg}: dtype {actual.dtype} != expected {expected.dtype}"
    tol = tolerance(expected, rtol, atol, tolerances)
    if tol is None:
        np.testing.assert_array_equal(actual, expected, err_msg=err_msg)
    else:
        if expected.dtype.kind == "c":
            err_msg = f"{err_msg} (complex: real and imaginary parts on the last axis)"
        np.testing.assert_allclose(_parts(np.asarray(actual)), _parts(expected), rtol=tol[0],
                                   atol=tol[1], equal_nan=True, err_msg=err_msg)


def flat_outputs(results) -> list:
    """A program's results as a list (a dict's in key order)."""
    if isinstance(results, dict):
        return [results[k] for k in sorted(results)]
    if isinstance(results, (list, tuple)):
        return list(results)
    return [results]


def random_bindings(program, seed=0) -> dict:
    """Random inputs for every placeholder of ``program``: normal floats,
    integers in 1..7 (no zero divisors), random booleans."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, ph in program.placeholders.items():
        dt = ph.dtype
        if dt.kind == "f":
            v = rng.standard_normal(ph.shape).astype(dt)
        elif dt.kind == "c":
            v = (rng.standard_normal(ph.shape) + 1j * rng.standard_normal(ph.shape)).astype(dt)
        elif dt.kind == "b":
            v = rng.random(ph.shape) > 0.5
        else:
            v = rng.integers(1, 8, ph.shape).astype(dt)
        out[name] = v
    return out
