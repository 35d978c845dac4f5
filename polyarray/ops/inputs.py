"""Host arrays users hand to polyarray (``pa.array`` data, placeholder
bindings): what is accepted, and as what.

* ndarray subclasses whose meaning is not just their data are refused with a
  ``TypeError`` naming the input: ``numpy.ma.MaskedArray`` (using its data
  would silently ignore the mask), ``numpy.matrix`` (``*`` is a matrix
  product, results stay 2-D) and any subclass that overrides NumPy's
  operations (``__array_ufunc__`` / ``__array_function__``, e.g. arrays with
  units).  Other subclasses (``np.memmap``, ...) are used as their base array.
* Non-native byte order (``>f4`` on a little-endian machine) holds the same
  values: it is converted to native order (one copy).  Errors that mention
  such a dtype name its byte order.
"""
from __future__ import annotations

import numpy as np


def _qualname(cls) -> str:
    mod = cls.__module__
    if mod.startswith("numpy.ma"):
        mod = "numpy.ma"
    elif mod.startswith("numpy"):
        mod = "numpy"
    return f"{mod}.{cls.__qualname__}"


def plain_ndarray(value, what: str):
    """``value`` as a plain ``np.ndarray`` (no copy) if it is an ndarray
    subclass that only adds behaviour; refuse the ones that change meaning.
    Anything that is not an ndarray is returned unchanged."""
    if type(value) is np.ndarray or not isinstance(value, np.ndarray):
        return value
    cls = type(value)
    if isinstance(value, np.ma.MaskedArray):
        raise TypeError(
            f"{what} is a numpy.ma.MaskedArray: polyarray has no masked arrays, and "
            "using its data would silently ignore the mask; pass "
            "np.ma.filled(value, fill_value) (or value.data, if the mask does not "
            "matter) explicitly")
    if isinstance(value, np.matrix):
        raise TypeError(
            f"{what} is a numpy.matrix, whose operators differ from ndarray's "
            "(* is a matrix product, results stay 2-D); pass np.asarray(value)")
    if cls.__array_ufunc__ is not np.ndarray.__array_ufunc__ or \
            cls.__array_function__ is not np.ndarray.__array_function__:
        raise TypeError(
            f"{what} is a {_qualname(cls)}, an ndarray subclass that overrides "
            "NumPy's operations, so its plain values may not mean what it means; "
            "pass np.asarray(value) if they do")
    return np.asarray(value)


def native_dtype(dtype: np.dtype) -> np.dtype:
    return dtype if dtype.isnative else dtype.newbyteorder("=")


def native_array(arr: np.ndarray) -> np.ndarray:
    """``arr`` in native byte order (the same values)."""
    if arr.dtype.isnative:
        return arr
    return arr.astype(native_dtype(arr.dtype))


def describe_dtype(dtype) -> str:
    """``float32``, or ``float32 (big-endian >f4)`` for a non-native dtype."""
    dtype = np.dtype(dtype)
    if dtype.isnative:
        return dtype.name
    order = "big-endian" if dtype.byteorder == ">" else "little-endian"
    return f"{dtype.name} ({order} {dtype.str})"


def binding_array(value, name: str, expected: np.dtype):
    """A host binding prepared for the shared checks: subclasses resolved,
    and a non-native array whose values have the ``expected`` dtype converted
    to native order.  A non-native array of another dtype is left as it is, so
    the dtype error can name its byte order."""
    value = plain_ndarray(value, f"binding for placeholder {name!r}")
    if isinstance(value, np.ndarray) and not value.dtype.isnative \
            and native_dtype(value.dtype) == expected:
        value = native_array(value)
    return value


def python_binding(value, name: str, expected: np.dtype) -> np.ndarray:
    """A Python scalar or (nested) list bound to a placeholder: an array of
    the placeholder's dtype when the conversion keeps every value (``2`` to
    float32, ``[1.5, 2]`` to float64), else an array of NumPy's own dtype for
    it, which the shared dtype check then refuses, naming both."""
    try:
        arr = np.asarray(value)
    except ValueError as e:         # ragged lists
        raise ValueError(f"binding for placeholder {name!r}: {e}") from None
    if arr.dtype == expected or arr.dtype.kind not in "biufc":
        return arr
    if arr.dtype.kind == "f" and expected.kind in "iub":
        return arr                  # 2.0 is not an integer binding, as in NumPy casting
    if arr.dtype.kind == "c" and expected.kind != "c":
        return arr                  # nor is 1j a real one
    with np.errstate(all="ignore"):
        converted = arr.astype(expected)
        real = expected.kind == "c" and arr.dtype.kind != "c"      # imaginary parts are 0
        back = (converted.real if real else converted).astype(arr.dtype)
    same = np.array_equal(back, arr, equal_nan=arr.dtype.kind in "fc")
    if expected == np.bool_ and arr.dtype != np.bool_:
        same = False                # 1 is not True: NumPy's bool casting is not safe
    return converted if same else arr
