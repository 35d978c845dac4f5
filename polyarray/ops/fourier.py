"""Node builders for ``pa.fft``: each transform is one library call
(``ir.nodes.LibraryCallOutput``) in a canonical form, so every target's
library sees one layout, and the work NumPy does around the transform is
DAG arithmetic that fuses with the kernels around the call:

- ``fft``: complex to complex over the trailing ``k`` axes of a complex64
  or complex128 array, forward or inverse, unnormalized;
- ``rfft``: real to complex over the last axis (``n`` in, ``n // 2 + 1``
  out), unnormalized;
- ``irfft``: complex to real over the last axis (``n // 2 + 1`` in, ``n``
  out), unnormalized, its input's imaginary parts at frequency 0 and (for
  an even ``n``) ``n / 2`` already zero: those are what NumPy's pocketfft
  ignores, so a library that reads them gives NumPy's result too.

Cropping and zero-padding to ``n``, moving the axes to the end, the
normalization factor and the conjugations of ``hfft``/``ihfft`` are done by
``polyarray.fft`` with ordinary nodes around these."""
from __future__ import annotations

import numpy as np

from ..ir import nodes as N
from .solvers import library_call


def complex_of(real) -> np.dtype:
    return np.dtype(np.complex64 if np.dtype(real) == np.float32 else np.complex128)


def c2c(x: N.Node, rank: int, inverse: bool) -> N.Node:
    """The unnormalized transform of complex ``x`` over its last ``rank`` axes."""
    assert x.dtype.kind == "c" and 1 <= rank <= x.ndim, (x.dtype, rank, x.ndim)
    return library_call("fft", [x], [(x.shape, x.dtype)], rank=int(rank),
                        inverse=bool(inverse))[0]


def r2c(x: N.Node) -> N.Node:
    """The unnormalized transform of real ``x`` over its last axis (the
    ``n // 2 + 1`` non-negative frequencies)."""
    assert x.dtype in (np.float32, np.float64), x.dtype
    shape = x.shape[:-1] + (x.shape[-1] // 2 + 1,)
    return library_call("rfft", [x], [(shape, complex_of(x.dtype))])[0]


def c2r(x: N.Node, n: int) -> N.Node:
    """The unnormalized inverse of a Hermitian half spectrum ``x`` over its
    last axis (``n // 2 + 1`` values) to ``n`` real values."""
    assert x.dtype.kind == "c" and x.shape[-1] == n // 2 + 1, (x.dtype, x.shape, n)
    real = np.dtype(np.float32 if x.dtype == np.complex64 else np.float64)
    return library_call("irfft", [x], [(x.shape[:-1] + (n,), real)], n=int(n))[0]
