"""``pa.*`` rearranging (:mod:`polyarray.ops.arrange`, :mod:`polyarray.ops.padding`):
``atleast_*d``, ``hstack``, ``vstack``, ``dstack``, ``column_stack``,
``unstack``, ``meshgrid``, ``indices``, ``tile``, ``repeat``, ``roll``,
``diff``, ``ediff1d``, ``pad``, ``fliplr``, ``flipud``, ``rot90``, the
``split`` family, ``append``, ``insert`` and ``delete``."""
from __future__ import annotations

from ..array import Array, node_of, reshaped, view_getitem, wrap as _wrap
from ..ir import nodes as N
from ..ops import arrange as AR, padding as P
from ..ops.axes import normalize_axis_index
from ..ops.creation import as_node
from ..ops.indexing import getitem
from ..ops.reductions import NoValue


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
    (flattened when None) (``np.repeat``), lazily in ``a``.  The result's
    shape depends on ``repeats``: a lazy array of them is evaluated now,
    as ``nonzero``'s input is (``pa.LazyValueError`` if it depends on
    placeholders)."""
    return Array(as_node(node_of(a))).repeat(repeats, axis)


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


# -- splitting ----------------------------------------------------------------

def _pieces(ary, indices_or_sections, axis, equal):
    node = node_of(ary)
    node = node if isinstance(node, N.Node) else as_node(node)
    axis = normalize_axis_index(axis, node.ndim)
    bounds = AR.split_bounds(node.shape[axis], node_of(indices_or_sections), equal)
    keys = [(slice(None),) * axis + (slice(a, b),) for a, b in bounds]
    if isinstance(ary, Array):
        return [view_getitem(ary, key) for key in keys]
    return [Array(getitem(node, key)) for key in keys]


def array_split(ary, indices_or_sections, axis=0) -> list:
    """``ary`` cut along ``axis`` into ``indices_or_sections`` pieces (an int:
    pieces of sizes that differ by at most one) or at the given indices
    (``np.array_split``): a list of views of ``ary``, as NumPy's."""
    return _pieces(ary, indices_or_sections, axis, False)


def split(ary, indices_or_sections, axis=0) -> list:
    """``ary`` cut along ``axis`` into equal pieces or at the given indices
    (``np.split``): a list of views; ValueError where an int does not divide
    the axis."""
    return _pieces(ary, indices_or_sections, axis, True)


def _split_along(name, ary, indices_or_sections):
    node = node_of(ary)
    node = node if isinstance(node, N.Node) else as_node(node)
    return _pieces(ary, indices_or_sections, AR.split_axis(name, node.ndim), True)


def hsplit(ary, indices_or_sections) -> list:
    """``split`` along axis 1 (axis 0 for 1-D arrays) (``np.hsplit``)."""
    return _split_along("hsplit", ary, indices_or_sections)


def vsplit(ary, indices_or_sections) -> list:
    """``split`` along axis 0 of an array of 2 or more dimensions (``np.vsplit``)."""
    return _split_along("vsplit", ary, indices_or_sections)


def dsplit(ary, indices_or_sections) -> list:
    """``split`` along axis 2 of an array of 3 or more dimensions (``np.dsplit``)."""
    return _split_along("dsplit", ary, indices_or_sections)


# -- adding and removing elements ---------------------------------------------

def append(arr, values, axis=None) -> Array:
    """``values`` joined after ``arr`` along ``axis`` (both flattened when
    None) (``np.append``), lazily."""
    return Array(AR.append(node_of(arr), node_of(values), axis))


def insert(arr, obj, values, axis=None) -> Array:
    """``values`` inserted before the positions ``obj`` along ``axis``
    (flattened when None) (``np.insert``), lazily.  ``obj`` must be concrete
    (an int, a slice, ints or booleans); ``values`` may be lazy."""
    return Array(AR.insert(node_of(arr), node_of(obj), node_of(values), axis))


def delete(arr, obj, axis=None) -> Array:
    """``arr`` without the positions ``obj`` along ``axis`` (flattened when
    None) (``np.delete``), lazily; ``obj`` must be concrete."""
    return Array(AR.delete(node_of(arr), node_of(obj), axis))


def ediff1d(ary, to_end=None, to_begin=None) -> Array:
    """Differences of consecutive elements of the flattened ``ary``, with
    ``to_begin`` and ``to_end`` joined (``np.ediff1d``), lazily."""
    return Array(AR.ediff1d(node_of(ary), node_of(to_end), node_of(to_begin)))


# -- flips and grids -----------------------------------------------------------

def fliplr(m) -> Array:
    """``m`` with the order of its columns (axis 1) reversed (``np.fliplr``), lazily."""
    return Array(AR.fliplr(node_of(m)))


def flipud(m) -> Array:
    """``m`` with the order of its rows (axis 0) reversed (``np.flipud``), lazily."""
    return Array(AR.flipud(node_of(m)))


def rot90(m, k=1, axes=(0, 1)) -> Array:
    """``m`` rotated by 90 degrees ``k`` times in the plane of ``axes``
    (``np.rot90``), lazily."""
    return Array(AR.rot90(node_of(m), k, axes))


def indices(dimensions, dtype=int, sparse=False):
    """The index grid of an array of shape ``dimensions`` (``np.indices``): a
    lazy constant of shape ``(len(dimensions),) + dimensions``, or with
    ``sparse`` a tuple of broadcastable ones."""
    return _wrap(AR.indices(dimensions, dtype, sparse))
