"""The ``pa.*`` functions that rearrange arrays or build matrices from them
(``atleast_*``, the stacks, ``tile``, ``repeat``, ``roll``, ``diff``, ``pad``,
``take_along_axis``, diagonals, ``tril``/``triu``, ``cross``, ``vecdot``...),
under NumPy's names and signatures, as :mod:`polyarray.api_more` makes the
others: each unwraps its arrays, calls the node builder in
:mod:`polyarray.ops` (``arrange``, ``padding``, ``matrices``) and wraps the
result.  ``out=`` is accepted where NumPy has it, and must be None."""
from __future__ import annotations

from .array import Array, node_of, reshaped, view_getitem, wrap as _wrap
from .ops import arrange as AR, indexing as I, matrices as M, padding as P
from .ops.axes import no_out
from .ops.reductions import NoValue


# -- rearranging -------------------------------------------------------------

def _atleast(n, arys):
    res = tuple(_at_least(a, n) for a in arys)
    return res[0] if len(res) == 1 else res


def _at_least(a, n):
    """NumPy's ``atleast_nd``: the array itself where it has ``n`` axes, else
    a view with axes of length one added."""
    node = AR.atleast_nd(node_of(a), n)
    if not isinstance(a, Array):
        return Array(node)
    if a.ndim >= n:
        return a
    return reshaped(a, node.shape, always_view=True)


def atleast_1d(*arys):
    """Each input with at least one dimension (``np.atleast_1d``), lazily: one
    array, or a tuple for several inputs."""
    return _atleast(1, arys)


def atleast_2d(*arys):
    """Each input with at least two dimensions (``np.atleast_2d``; a 1-D
    ``(N,)`` becomes ``(1, N)``), lazily: one array, or a tuple."""
    return _atleast(2, arys)


def atleast_3d(*arys):
    """Each input with at least three dimensions (``np.atleast_3d``; ``(N,)``
    becomes ``(1, N, 1)``, ``(M, N)`` becomes ``(M, N, 1)``), lazily."""
    return _atleast(3, arys)


def _nodes(tup):
    return [node_of(a) for a in tup] if isinstance(tup, (list, tuple)) else node_of(tup)


def hstack(tup, *, dtype=None, casting="same_kind") -> Array:
    """``tup`` joined horizontally: along axis 1, or 0 for 1-D inputs
    (``np.hstack``), lazily."""
    return Array(AR.hstack(_nodes(tup), dtype, casting))


def vstack(tup, *, dtype=None, casting="same_kind") -> Array:
    """``tup`` joined vertically: along axis 0, 1-D inputs as rows
    (``np.vstack``), lazily."""
    return Array(AR.vstack(_nodes(tup), dtype, casting))


def dstack(tup) -> Array:
    """``tup`` joined along the third axis, after ``atleast_3d`` (``np.dstack``),
    lazily."""
    return Array(AR.dstack(_nodes(tup)))


def column_stack(tup) -> Array:
    """1-D inputs as columns of a 2-D array, 2-D ones joined along axis 1
    (``np.column_stack``), lazily."""
    return Array(AR.column_stack(_nodes(tup)))


def unstack(x, /, *, axis=0) -> tuple:
    """The slices of ``x`` along ``axis``, as a tuple of lazy arrays
    (``np.unstack``): views of ``x``, as NumPy's (scalars for 1-D ``x``)."""
    parts = AR.unstack(node_of(x), axis)              # NumPy's errors first
    if not isinstance(x, Array):
        return _wrap(parts)
    axis = axis % x.ndim
    return tuple(view_getitem(x, (slice(None),) * axis + (i,)) for i in range(len(parts)))


def meshgrid(*xi, copy=True, sparse=False, indexing="xy") -> tuple:
    """Coordinate arrays from coordinate vectors (``np.meshgrid``), as lazy
    broadcasts; ``copy`` is accepted and means nothing (nothing is written
    in place)."""
    return _wrap(AR.meshgrid(*map(node_of, xi), sparse=sparse, indexing=indexing))


def tile(A, reps) -> Array:
    """``A`` repeated ``reps`` times along each axis (``np.tile``), lazily."""
    return Array(AR.tile(node_of(A), reps))


def repeat(a, repeats, axis=None) -> Array:
    """Each element of ``a`` repeated ``repeats`` times along ``axis``
    (flattened when None) (``np.repeat``), lazily.  ``repeats`` must be an
    int or host data (not a lazy array): the result's shape depends on it."""
    return Array(AR.repeat(node_of(a), node_of(repeats), axis))


def kron(a, b) -> Array:
    """Kronecker product of ``a`` and ``b`` (``np.kron``), lazily."""
    return Array(AR.kron(node_of(a), node_of(b)))


def roll(a, shift, axis=None) -> Array:
    """``a`` shifted cyclically by ``shift`` along ``axis`` (flattened when
    None) (``np.roll``), lazily; ``shift`` must be concrete ints."""
    return Array(AR.roll(node_of(a), shift, axis))


def diff(a, n=1, axis=-1, prepend=NoValue, append=NoValue) -> Array:
    """The ``n``-th discrete difference along ``axis`` (``np.diff``), lazily;
    ``prepend``/``append`` are joined first, as in NumPy."""
    return Array(AR.diff(node_of(a), n, axis, node_of(prepend), node_of(append)))


def pad(array, pad_width, mode="constant", **kwargs) -> Array:
    """``array`` padded by ``pad_width`` (``np.pad``), lazily.

    Modes constant, edge, reflect, symmetric, wrap and empty (which pads
    with zeros).  NotImplementedError for linear_ramp, maximum, mean, median,
    minimum, a function as the mode, and ``reflect_type="odd"``."""
    return Array(P.pad(node_of(array), pad_width, mode, **kwargs))


def take_along_axis(arr, indices, axis=-1) -> Array:
    """``arr`` gathered at ``indices`` along ``axis``, the other axes
    broadcast (``np.take_along_axis``), lazily.

    Data indices are checked now; lazy ones when the program runs
    (NumPy's IndexError)."""
    return Array(I.take_along_axis(node_of(arr), node_of(indices), axis))


# -- matrices ----------------------------------------------------------------

def diag(v, k=0) -> Array:
    """A 1-D ``v`` as a square matrix with ``v`` on diagonal ``k``, or
    diagonal ``k`` of a 2-D ``v`` (``np.diag``), lazily."""
    return Array(M.diag(node_of(v), k))


def diagonal(a, offset=0, axis1=0, axis2=1) -> Array:
    """Diagonal ``offset`` of the ``axis1``/``axis2`` planes, as the last axis
    (``np.diagonal``): a read-only view, as NumPy's."""
    if isinstance(a, Array):
        return a.diagonal(offset, axis1, axis2)
    return Array(M.diagonal(node_of(a), offset, axis1, axis2))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None) -> Array:
    """Sum along diagonal ``offset`` of the ``axis1``/``axis2`` planes
    (``np.trace``), lazily; ``out=`` must be None."""
    no_out(out, "trace")
    return Array(M.trace(node_of(a), offset, axis1, axis2, dtype))


def tril(m, k=0) -> Array:
    """``m`` with the elements above diagonal ``k`` zeroed (``np.tril``), lazily."""
    return Array(M.tril(node_of(m), k))


def triu(m, k=0) -> Array:
    """``m`` with the elements below diagonal ``k`` zeroed (``np.triu``), lazily."""
    return Array(M.triu(node_of(m), k))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None) -> Array:
    """Cross product of (arrays of) 3-vectors (``np.cross``), lazily.

    2-vectors, deprecated by NumPy 2.0 and refused by NumPy 2.5, are refused
    with NumPy 2.5's ValueError whatever NumPy is installed."""
    return Array(M.cross(node_of(a), node_of(b), axisa, axisb, axisc, axis))


def vecdot(x1, x2, /, out=None, *, axis=-1) -> Array:
    """Dot product of vectors along ``axis``, the other axes broadcast
    (``np.vecdot``), lazily; ``out=`` must be None."""
    no_out(out, "vecdot")
    return Array(M.vecdot(node_of(x1), node_of(x2), axis))
