"""dtype policy: which dtypes polyarray supports and how NumPy 2 promotes them.

NumPy itself is the oracle.  Loop dtypes come from ``ufunc.resolve_dtypes``,
which already implements NEP 50 (Python scalars are "weak").  Every fused
expression is stored with its operands cast explicitly to the loop dtype, so
later targets never have to re-derive NumPy's promotion rules.
"""
from __future__ import annotations

import numbers

import numpy as np

from .inputs import native_dtype

SUPPORTED_DTYPES = tuple(np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64,
    np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, np.float32, np.float64, np.complex64, np.complex128))

_SUPPORTED = frozenset(SUPPORTED_DTYPES)
INDEX_DTYPE = np.dtype(np.int64)


def check_dtype(dtype, what="array") -> np.dtype:
    """Normalize ``dtype``; refuse the ones no target can hold."""
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"{what}: {dtype!r} is not a dtype") from e
    dt = native_dtype(dt)               # same values, native order
    if dt not in _SUPPORTED:
        raise TypeError(f"{what}: unsupported dtype {dt} (supported: bool, int8-64, "
                        "uint8-64, float16/32/64, complex64/128)")
    return dt


def is_python_scalar(x) -> bool:
    return isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic)


def weak_type(x):
    """The argument ``resolve_dtypes`` expects for a Python scalar."""
    if isinstance(x, bool):
        return np.dtype(np.bool_)          # bool is not weak in NEP 50
    if isinstance(x, numbers.Integral):
        return int
    if isinstance(x, float):
        return float
    if isinstance(x, complex):
        return complex
    raise TypeError(f"unsupported scalar {x!r}")


def resolve_ufunc(ufunc: np.ufunc, operands):
    """Return (loop input dtypes, output dtype) for ``ufunc`` on ``operands``.

    Operands are either ``np.dtype`` (a strong array operand) or Python scalars
    (weak).  Errors are NumPy's own: ``TypeError`` for a missing loop and
    ``OverflowError`` for a Python int that does not fit.
    """
    types = tuple(op if isinstance(op, np.dtype) else weak_type(op)
                  for op in operands)
    loop = ufunc.resolve_dtypes(types + (None,) * ufunc.nout)
    ins, out = loop[:ufunc.nin], loop[ufunc.nin]
    for op, dt in zip(operands, ins):
        if not isinstance(op, np.dtype):
            scalar_to_dtype(op, dt, ufunc)
    return ins, out


def scalar_to_dtype(value, dtype: np.dtype, ufunc=None):
    """Convert a Python scalar to a NumPy scalar of ``dtype`` as NumPy would."""
    if dtype.kind in "iu" and isinstance(value, numbers.Integral) \
            and not isinstance(value, bool):
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise OverflowError(f"Python integer {value} out of bounds for {dtype}")
    if dtype.kind == "b" and isinstance(value, numbers.Integral) \
            and not -2**63 <= value < 2**63:
        # a bool loop (logical_and/or/xor) takes the int through a C long
        raise OverflowError("Python int too large to convert to C long")
    with np.errstate(over="ignore"):
        return dtype.type(value)
