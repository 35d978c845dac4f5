"""``pa.*`` dtype inspection (:mod:`polyarray.ops.dtypes`; the array API's):
``result_type``, ``can_cast``, ``finfo``, ``iinfo``, ``isdtype``.  Nothing is
evaluated."""
from __future__ import annotations

import numpy as np

from ..array import Array


# -- dtypes (the array API's inspection functions) ---------------------------

def _dtype_of(x):
    return x.dtype if isinstance(x, Array) else x


def result_type(*arrays_and_dtypes) -> np.dtype:
    """The dtype NumPy's promotion gives these arrays and dtypes
    (``np.result_type``); Python scalars stay weak (NEP 50).  Nothing is
    evaluated."""
    return np.result_type(*map(_dtype_of, arrays_and_dtypes))


def can_cast(from_, to, casting="safe") -> bool:
    """Whether ``from_`` (an array or a dtype) casts to ``to`` under
    ``casting`` (``np.can_cast``); nothing is evaluated."""
    return np.can_cast(_dtype_of(from_), to, casting)


def finfo(dtype):
    """Machine limits of a float dtype, or of an array's dtype (``np.finfo``)."""
    return np.finfo(_dtype_of(dtype))


def iinfo(int_type):
    """Machine limits of an integer dtype, or of an array's dtype (``np.iinfo``)."""
    return np.iinfo(_dtype_of(int_type))


isdtype = np.isdtype
