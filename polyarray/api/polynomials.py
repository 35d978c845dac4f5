"""``pa.*`` polynomials and 1-D convolution (:mod:`polyarray.ops.polynomials`):
``polyval``, ``vander``, ``convolve``, ``correlate``."""
from __future__ import annotations

from ..array import Array, node_of
from ..ops import polynomials as P


def polyval(p, x) -> Array:
    """The polynomial of coefficients ``p`` (highest power first) at ``x``
    (``np.polyval``), by Horner's scheme, lazily."""
    return Array(P.polyval(node_of(p), node_of(x)))


def vander(x, N=None, increasing=False) -> Array:
    """The Vandermonde matrix of the 1-D ``x``: columns ``x ** k``, highest
    power first unless ``increasing`` (``np.vander``), lazily."""
    return Array(P.vander(node_of(x), N, increasing))


def convolve(a, v, mode="full") -> Array:
    """The discrete linear convolution of two 1-D arrays (``np.convolve``;
    modes ``full``, ``same``, ``valid``), lazily: a sum over the overlap
    per output, ``len(a) * len(v)`` work, as NumPy's."""
    return Array(P.convolve(node_of(a), node_of(v), mode))


def correlate(a, v, mode="valid") -> Array:
    """The cross-correlation ``c[k] = sum_n a[n + k] v[n]`` of two 1-D
    arrays (``np.correlate``; modes ``valid``, ``same``, ``full``), lazily."""
    return Array(P.correlate(node_of(a), node_of(v), mode))
