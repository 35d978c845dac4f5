"""The dtypes the fuzzer draws from, and how they are spelled in generated code.

Kept apart so that the names, the exactness rules, the builder and the op
generators all share one definition of "every integer width", "narrow" etc.
"""
from __future__ import annotations

import numpy as np


INT_DTYPES = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64,
                                    np.uint8, np.uint16, np.uint32, np.uint64)]
FLOAT_DTYPES = [np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)]
BOOL = np.dtype(np.bool_)
DTYPES = INT_DTYPES + [BOOL] + FLOAT_DTYPES
NARROW = [np.dtype(t) for t in (np.int8, np.int16, np.uint8, np.uint16)]
MANTISSA = {np.dtype(np.float16): 11, np.dtype(np.float32): 24, np.dtype(np.float64): 53}


def _tn(dtype) -> str:
    """The attribute naming ``dtype`` in numpy and polyarray (``bool_``, ``int8``...)."""
    dtype = np.dtype(dtype)
    return "bool_" if dtype == BOOL else dtype.name
