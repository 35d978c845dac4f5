"""``sort``, ``argsort`` and ``searchsorted`` nodes: compositions of
elementwise gathers, so every target runs them as any DAG (kernels on
OpenCL and CUDA, NumPy evaluating each node on the reference target).

A sort of one row (a 1-D array, or ``axis=None``) in a dtype of
``CALL_DTYPES`` is the library call ``sort``/``argsort``: NumPy's own on
the numpy target; on a device target the policy's kernels (a radix sort on
CUDA, ``codegen/emit/sort_kernels.py``), else the merge sort below, which
every other sort is at once.

Merge sort: bottom-up.  Level ``m`` merges sorted runs of ``m``
into runs of ``2m``: each output element finds where it comes from by a
binary search along the merge path (how many of the first ``t`` outputs of
its pair come from the left run), ``bit_length(m)`` steps of one node each,
then gathers.  ``ceil(log2 n)`` levels, ``O(n log^2 n)`` work, no scatter.
A level gathers from the last one at ``2 bit_length(m) + 2`` places, so the
materialization pass gives each level a buffer (``plan/materialize``): a
kernel per level, computing its keys and positions together.

``partition``/``argpartition`` are the full sort (a valid partition), and
``lexsort`` a stable ``argsort`` per key.

The merge takes the left run's element on ties and runs are contiguous
ranges of the input, so the sort is stable: ``argsort`` always has NumPy's
``kind='stable'`` semantics (equal keys keep their index order).  The
order is NumPy's, NaN after everything; ``descending=True`` (the array
API's) reverses it, NaN first, ties still in index order.
"""
from __future__ import annotations

import numpy as np
import pymbolic.primitives as p

from ..ir import nodes as N
from ..ir.expr import binding_name, binding_reads, call, index_vars, read
from .axes import normalize_axis_index
from .creation import array, as_node, zeros
from .dtypes import INDEX_DTYPE, check_dtype
from .elementwise import apply_ufunc, astype
from .indexing import getitem, take, take_along_axis
from .shapes import moveaxis, ravel


# dtypes whose sorts of one row are the library calls ``sort``/``argsort``
# (``ir.nodes.SORT_OPS``): NumPy's sort on the numpy target, the policy's
# kernels on a device target (``codegen/plan/kernel_calls.py``)
CALL_DTYPES = frozenset({"bool", "int8", "uint8", "int16", "uint16", "int32", "uint32",
                         "int64", "uint64", "float32", "float64"})


def _check_kind(kind, order, stable):
    """NumPy's checks of ``kind``/``order``/``stable`` (every kind is stable here)."""
    if order is not None:
        raise ValueError("Cannot specify order when the array has no fields.")
    if kind is not None:
        if stable is not None:
            raise ValueError("`kind` and keyword parameters can't be provided at the same "
                             "time. Use only one of them.")
        if not isinstance(kind, str):
            raise TypeError(f"sort kind must be str, not {type(kind).__name__}")
        if not kind or kind[0].lower() not in "qhms":
            raise ValueError(f"sort kind must be one of 'quick', 'heap', or 'stable' "
                             f"(got {kind!r})")


def _less(x, y, dtype, descending=False):
    """``x`` strictly before ``y`` in NumPy's sort order (NaN last)."""
    if descending:
        x, y = y, x
    if dtype.kind == "c":
        return _complex_less(x, y)
    if dtype.kind != "f":
        return call("less", x, y)
    return call("logical_or", call("less", x, y),
                call("logical_and", call("isnan", y), call("logical_not", call("isnan", x))))


def _complex_less(x, y):
    """NumPy's sort order of complex values (its ``CFLOAT_LT``): by real part,
    then imaginary part, with NaN parts last: ``R + Rj`` before ``R + nanj``
    before ``nan + Rj`` before ``nan + nanj``."""
    xr, xi, yr, yi = call("real", x), call("imag", x), call("real", y), call("imag", y)
    nan = lambda v: call("not_equal", v, v)     # noqa: E731
    num = lambda v: call("equal", v, v)         # noqa: E731
    both = lambda a, b: call("logical_and", a, b)    # noqa: E731
    either = lambda a, b: call("logical_or", a, b)   # noqa: E731
    below = either(num(xi), nan(yi))                          # x's real part is smaller
    above = both(nan(yi), num(xi))                            # x's real part is larger
    same = either(call("less", xi, yi), both(nan(yi), num(xi)))   # equal real parts
    tie = either(call("equal", xr, yr), both(nan(xr), nan(yr)))
    return call("where", call("less", xr, yr), below,
                call("where", call("greater", xr, yr), above,
                     call("where", tie, same, nan(yr))))


def _at_most(e, hi):
    """``min(e, hi)`` as a conditional (OpenCL's ``min`` of mixed integer
    types is ambiguous; ``builder.map_concatenate`` says the same)."""
    return p.If(p.Comparison(e, "<", hi), e, hi)


def _at_least(e, lo):
    return p.If(p.Comparison(e, ">", lo), e, lo)


class _Values:
    """Values of one elementwise domain, each a node of its own read at the
    own index: a kernel computes a value used several times once, into a
    temporary, instead of repeating its text at each use (a node's
    expression is a ``cast_<dtype>`` call, which is what makes it shared:
    ``builder._computes``)."""

    def __init__(self, shape, label):
        self.shape, self.label = shape, label
        self.own = index_vars(len(shape))
        self.nodes = {}                     # binding name -> node

    def node(self, expr, dtype, what):
        used = binding_reads(expr)
        return N.IndexLambda.make(self.shape, np.dtype(dtype), expr,
                                  tuple((k, v) for k, v in self.nodes.items() if k in used),
                                  f"{self.label}{what}")

    def bind(self, node):
        """A binding name for ``node``."""
        name = binding_name(len(self.nodes))
        self.nodes[name] = node
        return name

    def hold(self, expr, dtype, what):
        """``expr`` as a node; returns its value read at the own index."""
        name = self.bind(self.node(call("cast_" + np.dtype(dtype).name, expr), dtype, what))
        return read(name, self.own)

    def at(self, name, index):
        """``name`` read at ``index`` along the last axis."""
        return read(name, self.own[:-1] + (index,))


def _merge(keys, idx, m, descending, with_index):
    """One level: runs of ``m`` along the last axis merged into runs of ``2m``.
    ``idx`` holds each key's original position (None: the identity)."""
    shape, dtype = keys.shape, keys.dtype
    n = shape[-1]
    v = _Values(shape, f"sort: merge runs of {m}")
    # the index first: it is the first child of this level's index, so the
    # DAG's order puts each level's keys and index side by side (one kernel)
    idx_in = v.bind(idx) if idx is not None else None
    keys_in = v.bind(keys)
    pos = v.own[-1]
    ragged = n > 2 * m and n % (2 * m)   # the last pair is short
    if n <= 2 * m:                       # one pair: the last level
        base, t, len_a, len_b = 0, pos, m, n - m
    else:
        base = v.hold(p.Product((2 * m, p.FloorDiv(pos, 2 * m))), INDEX_DTYPE, ", pair")
        t = v.hold(pos - base, INDEX_DTYPE, ", place in pair")
        len_a = len_b = m
        if ragged:
            len_a = v.hold(p.If(p.Comparison(base, "<=", n - m), m, n - base),
                           INDEX_DTYPE, ", left run")
            len_b = v.hold(p.If(p.Comparison(base, "<=", n - 2 * m), m,
                                _at_least(n - m - base, 0)), INDEX_DTYPE, ", right run")
    lo = v.hold(_at_least(t - len_b, 0), INDEX_DTYPE, ", fewest from left")
    hi = v.hold(_at_most(t, len_a), INDEX_DTYPE, ", most from left")

    def key(at):
        return v.hold(v.at(keys_in, at), dtype, ", key")

    # b: how many of the pair's first t outputs come from the left run; the
    # largest b in [lo, hi] with A[b - 1] <= B[t - b], found bit by bit
    # (hi - lo <= the shorter run: one step for the last level of 2^k + 1)
    b = lo
    for s in reversed(range(min(m, n - m).bit_length())):
        cand = b + (1 << s)
        a_at = _at_most(base + cand - 1, n - 1)     # >= 0: cand > lo >= 0
        b_at = _at_least(base + m + t - cand, 0)    # t - cand < len_b: in the pair
        if ragged:                                  # ... whose right run may be empty
            b_at = _at_most(b_at, n - 1)
        ok = call("logical_and", p.Comparison(cand, "<=", hi),
                  call("logical_not", _less(key(b_at), key(a_at), dtype, descending)))
        b = v.hold(call("where", ok, cand, b), INDEX_DTYPE, ", step")
    a_at = v.hold(_at_most(base + b, n - 1), INDEX_DTYPE, ", left source")
    b_at = v.hold(_at_most(base + m + t - b, n - 1), INDEX_DTYPE, ", right source")
    a_key, b_key = key(a_at), key(b_at)
    from_b = v.hold(call("logical_and", p.Comparison(t - b, "<", len_b),
                         call("logical_or", p.Comparison(b, ">=", len_a),
                              _less(b_key, a_key, dtype, descending))), bool, ", source")
    out = v.node(call("where", from_b, b_key, a_key), dtype, "")
    if not with_index:
        return out, None
    if idx is None:
        index = call("where", from_b, b_at, a_at)
    else:
        index = call("where", from_b, v.at(idx_in, b_at), v.at(idx_in, a_at))
    return out, v.node(index, INDEX_DTYPE, ", index")


def merge_sort(x, descending, with_index):
    """The merge sort of ``x`` along its last axis: the sorted keys, or
    (``with_index``) their original positions."""
    keys, idx = _sorted_last(x, bool(descending), with_index)
    return idx if with_index else keys


for _op in N.SORT_OPS:
    N.register_composition(_op, lambda params, x, arg=_op == "argsort": merge_sort(
        x, params["descending"], arg))


def _sorted_last(keys, descending, with_index):
    """(sorted keys, original positions or None) along the last axis."""
    n = keys.shape[-1]
    idx, m = None, 1
    while m < n:
        keys, idx = _merge(keys, idx, m, descending, with_index)
        m *= 2
    if with_index and idx is None:          # one element per row
        idx = _zeros_reading(keys)
    return keys, idx


def _zeros_reading(node):
    """Index zeros of ``node``'s shape that keep ``node`` as a binding, so its
    placeholders stay in the program (its values decide nothing here)."""
    return N.IndexLambda.make(node.shape, INDEX_DTYPE, INDEX_DTYPE.type(0),
                              ((binding_name(0), node),), "argsort")


def _sort_nodes(a, axis, descending, with_index):
    node = as_node(a)
    if axis is None or (with_index and node.ndim == 0):   # NumPy: argsort of a 0-d is 1-d
        node, axis = ravel(node), 0
    axis = normalize_axis_index(axis, node.ndim)
    last = node.ndim - 1
    x = moveaxis(node, axis, -1) if axis != last else node
    if node.size == 0:
        keys = x
        idx = _zeros_reading(x) if with_index else None
    elif x.size == x.shape[-1] > 1 and x.dtype.name in CALL_DTYPES:     # one row
        out = ((x.shape, (INDEX_DTYPE if with_index else x.dtype).str),)
        keys = idx = N.LibraryCallOutput.make(
            x.shape, INDEX_DTYPE if with_index else x.dtype, "argsort" if with_index else "sort",
            (("descending", bool(descending)),), (x,), out, 0)
    else:
        keys, idx = _sorted_last(x, bool(descending), with_index)
    result = idx if with_index else keys
    return moveaxis(result, -1, axis) if axis != last else result


def sort(a, axis=-1, kind=None, order=None, *, stable=None, descending=False) -> N.Node:
    """``np.sort`` (every kind is a stable merge sort; NaN last).
    ``descending`` is the array API's: the reverse order, NaN first."""
    _check_kind(kind, order, stable)
    return _sort_nodes(a, axis, descending, False)


def argsort(a, axis=-1, kind=None, order=None, *, stable=None, descending=False) -> N.Node:
    """``np.argsort`` with ``kind='stable'`` semantics whatever ``kind``:
    equal keys keep their index order (also with ``descending``)."""
    _check_kind(kind, order, stable)
    return _sort_nodes(a, axis, descending, True)


def _sorter(a, sorter):
    """``a`` read through ``sorter`` (checked: NumPy 2 reads out of range)."""
    if not isinstance(sorter, N.Node):
        sorter = np.asarray(sorter)
        if sorter.dtype.kind not in "iu":
            raise TypeError("sorter must only contain integers")
        if sorter.size != a.size:
            raise ValueError("sorter.size must equal a.size")
        if sorter.size and (sorter.min() < 0 or sorter.max() >= a.size):
            raise ValueError("Sorter index out of range.")
        sorter = array(sorter)
    if sorter.dtype.kind not in "iu":
        raise TypeError("sorter must only contain integers")
    if sorter.ndim != 1 or sorter.size != a.size:
        raise ValueError("sorter.size must equal a.size")
    return getitem(a, (sorter,))


def searchsorted(a, v, side="left", sorter=None) -> N.Node:
    """``np.searchsorted``: for each value of ``v``, the insertion index in
    the sorted 1-D ``a`` (NaN last), by ``bit_length(len(a))`` binary-search
    steps of one node each.  ``a`` and ``v`` are compared in their common
    dtype, as NumPy compares them (a Python scalar counts as an array)."""
    a = as_node(a)
    if a.ndim != 1:
        raise ValueError("object too deep for desired array" if a.ndim > 1 else
                         "object of too small depth for desired array")
    if side not in ("left", "right"):
        raise ValueError(f"search side must be 'left' or 'right' (got {side!r})")
    v = as_node(v)
    dtype = check_dtype(np.result_type(a.dtype, v.dtype), "searchsorted")
    if sorter is not None:
        a = _sorter(a, sorter)
    a, v = astype(a, dtype), astype(v, dtype)
    n = a.shape[0]
    if n == 0:
        return zeros(v.shape, INDEX_DTYPE)
    vals = _Values(v.shape, f"searchsorted({side})")
    a_in, value = vals.bind(a), read(vals.bind(v), vals.own)
    b, steps = np.int64(0), n.bit_length()
    for s in reversed(range(steps)):
        cand = b + (1 << s)
        probe = vals.hold(read(a_in, (_at_most(cand - 1, n - 1),)), dtype, ", probe")
        go = (_less(probe, value, dtype) if side == "left" else
              call("logical_not", _less(value, probe, dtype)))
        if s < steps - 1:                 # the first probe, 2^k <= n, is always in range
            go = call("logical_and", p.Comparison(cand, "<=", n), go)
        if s:
            b = vals.hold(call("where", go, cand, b), INDEX_DTYPE, ", step")
    return vals.node(call("where", go, cand, b), INDEX_DTYPE, "")


def isin(element, test_elements, invert=False) -> N.Node:
    """``np.isin``: is each element of ``element`` in ``test_elements``?  A
    sort of the test elements and a binary search per element, ``O((n + m)
    log m)`` on the device (NaN is in nothing, as ``nan != nan``)."""
    x, t = as_node(element), ravel(as_node(test_elements))
    if t.shape[0] == 0:
        found = zeros(x.shape, np.bool_)
    else:
        table = sort(t)
        pos = apply_ufunc("minimum", searchsorted(table, x), t.shape[0] - 1)
        dtype = np.result_type(x.dtype, t.dtype)
        found = apply_ufunc("equal", astype(take(table, pos, mode="clip"), dtype),
                            astype(x, dtype))
    return apply_ufunc("logical_not", found) if invert else found


def _check_kth(kth, n, kind, order):
    """NumPy's checks of ``partition``'s ``kth``, ``kind`` and ``order``."""
    if kind != "introselect":
        raise ValueError(f"select kind must be 'introselect' (got {kind!r})")
    if order is not None:
        raise ValueError("Cannot specify order when the array has no fields.")
    if isinstance(kth, N.Node):
        if not isinstance(kth, N.DataWrapper):
            raise TypeError("partition: kth must be concrete (ints), not a lazy array")
        kth = kth.data
    ks = np.asarray(kth)
    if ks.dtype.kind not in "iu" and ks.dtype != np.bool_:
        raise TypeError("Partition index must be integer")
    for k in ks.reshape(-1).tolist():
        if not -n <= k < n:
            raise ValueError(f"kth(={k + n if k < 0 else k}) out of bounds ({n})")


def partition(a, kth, axis=-1, kind="introselect", order=None) -> N.Node:
    """``np.partition`` as a full stable sort: every ``kth`` element is in
    its sorted place, smaller ones before it and larger after (the others
    in sorted order, which NumPy leaves unspecified)."""
    node = as_node(a)
    if axis is None:
        node, axis = ravel(node), 0
    axis = normalize_axis_index(axis, node.ndim)
    _check_kth(kth, node.shape[axis], kind, order)
    return sort(node, axis)


def argpartition(a, kth, axis=-1, kind="introselect", order=None) -> N.Node:
    """``np.argpartition`` as a full stable ``argsort`` (see ``partition``)."""
    node = as_node(a)
    if axis is None:
        node, axis = ravel(node), 0
    axis = normalize_axis_index(axis, node.ndim)
    _check_kth(kth, node.shape[axis], kind, order)
    return argsort(node, axis)


def lexsort(keys, axis=-1) -> N.Node:
    """The indices that sort by the last key, ties by the one before, ...
    (``np.lexsort``): a stable ``argsort`` by each key, first to last, each
    reading the key in the order so far."""
    if isinstance(keys, N.Node):
        keys = [remap_row(keys, k) for k in range(keys.shape[0])] if keys.ndim else [keys]
    keys = [as_node(k) for k in keys]
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    if any(k.shape != keys[0].shape for k in keys):
        raise ValueError("all keys need to be the same shape")
    first = keys[0]
    if first.ndim == 0:
        return _zeros_reading(first)
    axis = normalize_axis_index(axis, first.ndim)
    order = argsort(first, axis)
    for key in keys[1:]:
        step = argsort(take_along_axis(key, order, axis), axis)
        order = take_along_axis(order, step, axis)
    return order


def remap_row(node, k):
    """Row ``k`` of ``node`` (its first axis dropped)."""
    return getitem(node, (k,))
