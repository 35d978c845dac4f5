"""``pa.*`` indexing (:mod:`polyarray.ops.indexing`, :mod:`polyarray.ops.eager`):
``take``, ``take_along_axis``, and the eager ``nonzero``, ``argwhere``,
``flatnonzero`` (their result's shape depends on the values, so they
evaluate their input when called)."""
from __future__ import annotations

from ..array import Array, node_of, wrap as _wrap
from ..ops import eager as G, indexing as I
from ..ops.axes import no_out


# -- eager: the result's shape depends on the values ------------------------

def _evaluate(node):
    return Array(node).evaluate()


def _values(a, what, depends="shape"):
    return G.concrete(node_of(a), what, _evaluate, depends)


def nonzero(a) -> tuple:
    """Indices of the nonzero elements, one int64 array per axis (``np.nonzero``).

    Eager: the result's shape depends on the values, so ``a`` is evaluated
    now (on the default target) and the result is data; ``pa.LazyValueError``
    if ``a`` depends on placeholders."""
    return _wrap(G.nonzero(_values(a, "nonzero")))


def argwhere(a) -> Array:
    """Indices of the nonzero elements, one row per element (``np.argwhere``).

    Eager: ``a`` is evaluated now and the result is data;
    ``pa.LazyValueError`` if ``a`` depends on placeholders."""
    return _wrap(G.argwhere(_values(a, "argwhere")))


def flatnonzero(a) -> Array:
    """Indices of the nonzero elements of ``a`` flattened (``np.flatnonzero``).

    Eager: ``a`` is evaluated now and the result is data;
    ``pa.LazyValueError`` if ``a`` depends on placeholders."""
    return _wrap(G.flatnonzero(_values(a, "flatnonzero")))


def take_along_axis(arr, indices, axis=-1) -> Array:
    """``arr`` gathered at ``indices`` along ``axis``, the other axes
    broadcast (``np.take_along_axis``), lazily.

    Data indices are checked now; lazy ones when the program runs
    (NumPy's IndexError)."""
    return Array(I.take_along_axis(node_of(arr), node_of(indices), axis))


# -- indexing ----------------------------------------------------------------

def take(a, indices, axis=None, out=None, mode="raise") -> Array:
    """Elements of ``a`` (flattened when ``axis`` is None) at ``indices`` along
    ``axis`` (``np.take``), lazily.

    ``mode="raise"`` (NumPy's default) raises IndexError for an index out of
    range: now for data indices, when the program runs for lazy ones.
    ``"wrap"`` wraps them
    around and ``"clip"`` clips them (negative ones to 0, as NumPy does),
    with no run-time check.  ``out=`` must be None."""
    no_out(out, "take")
    return Array(I.take(node_of(a), node_of(indices), axis, mode))
