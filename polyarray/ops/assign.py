"""``x[key] = v``: a new node, "x with that region replaced" (JAX's
``x.at[key].set(v)`` with NumPy's syntax, broadcasting, casting and errors).

Three forms, chosen by the key:

* one axis restricted by an integer or a step-1 slice (``out[:, i] = v``):
  the array is kept as *columns*, segments along that axis taken from the base
  array or from values, and built as the ``concatenate`` of those pieces.
  Further updates of the same axis edit the segment list (no chain of
  nodes), so the Hermite recurrence written with ``out[:, i] = ...`` becomes
  the nodes ``pa.stack(columns, axis=1)`` builds, and the same kernel;
* an integer on one axis and a step-1 range on another (``out[1:-1, j] = v``):
  a block along the range's axis whose value is the block with column ``j``
  replaced, as above (so a loop over ``j`` keeps its values as columns).
  Each value written into one column is an identity node of its own
  (``N.WRITTEN``), by which the recurrence pass finds a loop's values;
* any other basic key (steps, several axes, ``None``): one IndexLambda,
  ``where(index in region, v[mapped index], x[index])``;
* integer arrays and concrete boolean masks: the same, with a map from each
  position to the last value written there (NumPy's order, so
  ``x[[0, 0]] = [1, 2]`` gives 2; made on the host, or for lazy indices a
  max reduction); ``x[mask] = scalar`` is ``where(mask, v, x)``, lazily for a
  lazy mask too.

Every node made here is recorded (``_RECORDS``) with how it was made, so
that ``getitem`` can read through updates at build time: ``updated[sel]``
where ``sel`` is exactly the replaced region gives the value's node, and
where it is disjoint from the region reads the array underneath.  Only a few
records are looked at per read and each update copies one segment list, so
building and compiling stay linear in the number of updates.
"""
from __future__ import annotations

import bisect
import weakref
from dataclasses import dataclass

import numpy as np
import pymbolic.primitives as p

from ..ir import nodes as N
from ..ir.expr import binding_name, call, index_var, index_vars, read
from .creation import full
from .indexing import _expand, _format_key, getitem as _getitem, scalar_bool
from .scatter import all_of, fit, full_range, mask_of, range_test, scatter, set_mask, value_node
from .shapes import expand_dims, reshape
from .memo import memoized, peek

_RECORDS = weakref.WeakKeyDictionary()    # node made here -> how (_Columns | _Region)
_READ_DEPTH = 64                           # records looked through per read
_HOLDS_DEPTH = 4                           # ... by ``holds``
# a read spanning at most this many segments of a columns record is read piece
# by piece (a stencil's edges and interior); more (the columns a loop wrote one
# by one) stay one read of the concatenation, which the recurrence pass knows
_SPLIT_SEGMENTS = 4


@dataclass(frozen=True)
class _Columns:
    """``base`` with segments along ``axis`` replaced.  ``segs`` holds
    ``(start, stop, kind, node)``: kind "base" (node None), "col" (one index,
    ``node`` without the axis: the value as written) or "block" (``node``
    with the axis, ``stop - start`` long); ``starts`` their starts and
    ``pieces`` the nodes concatenated (a "col" with the axis put back)."""
    base: N.Node
    axis: int
    segs: tuple
    starts: tuple
    pieces: tuple


@dataclass(frozen=True)
class _Region:
    """``base`` with the basic region ``sig`` replaced by ``value``."""
    base: N.Node
    sig: tuple
    value: N.Node


# -- keys ---------------------------------------------------------------------
def _basic_sig(node, key):
    """The key as ``(("none",) | ("int", k) | ("range", range))`` per item,
    integers and slices normalized; None where it holds arrays or masks."""
    sig = []
    for kind, v, d in _expand(node, key):
        if kind == "none":
            sig.append(("none", None))
        elif kind == "int":
            n = node.shape[d]
            if not -n <= v < n:
                return None          # getitem raises NumPy's IndexError
            sig.append(("int", v % n))
        elif kind == "slice":
            sig.append(("range", range(*v.indices(node.shape[d]))))
        else:
            return None
    return tuple(sig)


def _axes(sig):
    """(axis, set of indices as a range, is an int) per non-None item."""
    out, d = [], 0
    for kind, v in sig:
        if kind != "none":
            out.append((d, range(v, v + 1) if kind == "int" else v, kind == "int"))
            d += 1
    return out


def _as_key(sig):
    key = []
    for kind, v in sig:
        if kind == "none":
            key.append(None)
        elif kind == "int":
            key.append(v)
        else:
            key.append(_range_key(v))
    return tuple(key)


def _low_high(r: range):
    """A non-empty range's least and greatest values, in O(1) (``min`` and
    ``max`` of a range walk it: a loop's writes read through made that
    quadratic in the trip count)."""
    return (r[0], r[-1]) if r.step > 0 else (r[-1], r[0])


def _disjoint(a: range, b: range) -> bool:
    if not a or not b:
        return True
    if abs(a.step) == 1 and abs(b.step) == 1:
        (a0, a1), (b0, b1) = _low_high(a), _low_high(b)
        return a1 < b0 or b1 < a0
    if min(len(a), len(b)) <= 4096:
        small, big = (a, b) if len(a) <= len(b) else (b, a)
        return not any(i in big for i in small)
    return False                         # not worth proving: read the update


# -- reads through updates ------------------------------------------------------
@memoized
def getitem(node: N.Node, key) -> N.Node:
    """``node[key]``, reading through recorded updates where the key is basic:
    the replaced value itself when ``key`` is the replaced region (or one
    column of it), the array underneath when ``key`` avoids every update."""
    return _read(node, key, _READ_DEPTH)


def holds(node: N.Node, key, value: N.Node) -> bool:
    """Whether ``node[key]`` is ``value`` itself (``x[key] = x[key]``, the
    second half of ``x[key] += v``), found without building a node: the
    read that made ``value`` (remembered by ``getitem``), or a recorded
    update's value within the last ``_HOLDS_DEPTH`` updates.  Building the
    read to compare it cost a loop of writes half its trace."""
    if peek(getitem, node, key) is value:
        return True
    if node in _RECORDS:
        try:
            sig = _basic_sig(node, key)
        except (IndexError, TypeError):
            return False
        if sig is not None:
            return _read_through(node, key, sig, _HOLDS_DEPTH)[1] is value
    return False


def _read(node, key, depth):
    """``node[key]`` through at most ``depth`` recorded updates."""
    if node in _RECORDS and depth > 0:
        try:
            sig = _basic_sig(node, key)
        except (IndexError, TypeError):
            sig = None                    # getitem raises NumPy's error
        if sig is not None:
            node, found = _read_through(node, key, sig, depth)
            if found is not None:
                return found
    return _getitem(node, key)


def _read_through(node, key, sig, depth):
    """(the node to read ``sig`` from, or None; the value read, or None)."""
    while depth > 0:
        depth -= 1
        rec = _RECORDS.get(node)
        if isinstance(rec, _Columns):
            return _read_columns(node, rec, key, sig, depth)
        if not isinstance(rec, _Region):
            break
        if rec.sig == sig:
            return node, rec.value
        inside = _inside(rec.sig, sig)
        if inside is not None:                # within the written region: the value's part
            return node, _read(rec.value, inside, depth)
        write, want = _axes(rec.sig), _axes(sig)
        if not any(_disjoint(w, r) for (_, w, _), (_, r, _) in zip(write, want)):
            break
        node = rec.base
    return node, None


def _inside(written, sig):
    """The key into a region's value that reads ``sig`` where ``sig`` lies
    inside the ``written`` region (step-1 ranges and integers, no new
    axes), else None."""
    if any(kind == "none" for kind, _ in written) or any(kind == "none" for kind, _ in sig):
        return None
    key = []
    for (wk, w), (rk, r) in zip(written, sig):
        if wk == "int":
            if rk != "int" or r != w:
                return None
            continue
        if w.step != 1:
            return None
        if rk == "int":
            if not w.start <= r < w.stop:
                return None
            key.append(r - w.start)
            continue
        if r and not (w.start <= _low_high(r)[0] and _low_high(r)[1] < w.stop):
            return None
        key.append(_range_key(range(r.start - w.start, r.stop - w.start, r.step)))
    return tuple(key)


def _range_key(r):
    return slice(r.start, None if r.step < 0 and r.stop < 0 else r.stop, r.step)


def _read_columns(node, rec, key, sig, depth):
    if any(kind == "none" for kind, _ in sig):
        return node, None
    a = rec.axis
    (_, want, is_int) = _axes(sig)[a]
    if not want:
        return node, None
    first = bisect.bisect_right(rec.starts, want[0]) - 1
    start, stop, kind, piece = rec.segs[first]
    if not start <= want[-1] < stop:
        last = bisect.bisect_left(rec.starts, want[-1] + 1) - 1
        if is_int or want.step != 1 or last - first + 1 > _SPLIT_SEGMENTS:
            return node, None
        return node, _read_segments(rec, sig, want, first, depth)
    if kind == "base":
        below, found = _read_through(rec.base, key, sig, depth)
        return node, found if found is not None else _constant_read(below, key)
    items = list(_as_key(sig))
    if kind == "col":
        if not is_int:
            return node, None
        del items[a]
        return node, _read_piece(piece, items, depth)
    items[a] = want[0] - start if is_int else _range_key(
        range(want.start - start, want.stop - start, want.step))
    return node, _read_piece(piece, items, depth)


def _read_segments(rec, sig, want, first, depth):
    """A step-1 range along a columns record's axis that spans several
    segments (from segment ``first`` on), read as the concatenation of each segment's part, each read
    through its own updates: a piece of the array underneath that later
    writes covered is no longer read (a stencil's boundary rows and columns
    written after its interior leave nothing of the step before).  Recorded
    as columns, so that reads of it resolve the same way.  None where no
    piece of the array below resolved to a value written: the split would
    only add pieces (and kernels) for nothing."""
    a = rec.axis
    out_axis = sum(1 for kind, _ in sig[:a] if kind == "range")
    depth //= 2             # each split halves what its pieces may look through:
    #                         nested splits stay a few levels, never exponential
    parts, segs, based, resolved = [], [], False, False
    for start, stop, kind, piece in rec.segs[first:]:
        if start >= want.stop:
            break
        sub = range(max(start, want.start), min(stop, want.stop))
        subsig = sig[:a] + (("range", sub),) + sig[a + 1:]
        key = _as_key(subsig)
        if kind == "base":
            below, found = _read_through(rec.base, key, subsig, depth)
            based, resolved = True, resolved or found is not None
            part = found if found is not None else _constant_read(below, key)
        elif kind == "col":
            items = list(key)
            del items[a]
            part = expand_dims(_read_piece(piece, items, depth), out_axis)
        else:
            items = list(key)
            items[a] = slice(sub.start - start, sub.stop - start)
            part = _read_piece(piece, items, depth)
        segs.append((sub.start - want.start, sub.stop - want.start, "block", part))
        parts.append(part)
    if len(parts) == 1:
        return parts[0]
    if based and not resolved:
        return None         # no piece of the array below became a value: one read
    shape = list(parts[0].shape)
    shape[out_axis] = len(want)
    out = N.Concatenate.make(tuple(shape), parts[0].dtype, tuple(parts), out_axis)
    _RECORDS.setdefault(out, _Columns(None, out_axis, tuple(s[:4] for s in segs),
                                      tuple(s[0] for s in segs), tuple(parts)))
    return out


def _read_piece(piece, items, depth):
    """``piece[items]``: the piece itself for the whole of it, else read
    through its own updates (a block whose columns a loop wrote)."""
    key = tuple(items)
    if all(isinstance(it, slice) and it == slice(0, n, 1) for it, n in zip(key, piece.shape)):
        return piece
    return _read(piece, key, depth)


# -- updates ----------------------------------------------------------------
@memoized
def setitem(node: N.Node, key, value) -> N.Node:
    """``node`` with ``node[key]`` replaced by ``value`` (a node, or NumPy
    data / Python scalars), as NumPy's ``node[key] = value`` would leave it."""
    if scalar_bool(key) is not None:      # x[True] = v: all of x; x[False] = v: nothing
        v = fit(value_node(value, node.dtype), _getitem(node, key).shape, advanced=True)
        return reshape(v, node.shape) if scalar_bool(key) else node
    mask = mask_of(node, key)
    if mask is not None:
        done = set_mask(node, key, mask, value)
        if done is not None:
            return done
    region = _getitem(node, key)          # checks the key: NumPy's IndexErrors
    sig = _basic_sig(node, key)
    v = fit(value_node(value, node.dtype), region.shape, advanced=sig is None)
    if region.size == 0:
        return node
    if sig is None:
        return scatter(node, key, v)
    restricted = [(d, r, is_int) for d, r, is_int in _axes(sig)
                  if is_int or not full_range(r, node.shape[d])]
    if not restricted:                    # the whole array replaced
        return reshape(v, node.shape)
    has_none = any(kind == "none" for kind, _ in sig)
    if len(restricted) == 1 and not has_none and restricted[0][1].step == 1:
        d, r, is_int = restricted[0]
        return _set_columns(node, d, r.start, r.stop, "col" if is_int else "block", v)
    if len(restricted) == 2 and not has_none:
        nested = _set_nested(node, restricted, v)
        if nested is not None:
            return nested
    return _set_region(node, sig, v, key)


def _set_nested(node, restricted, v):
    """``x[1:-1, j] = v`` (an integer on one axis, a step-1 range on
    another) in a loop over ``j``: a block along the range's axis whose value
    is the block with column ``j`` replaced, so that the loop keeps its
    values as columns, as with one restricted axis (and ``x[1:-1, j - 1]``
    reads the value written).  Only where the write before was the same
    block at another column (else one select, as any region: a write of
    another range each time, ``C[i, :i + 1]``, would cut the blocks); None
    otherwise."""
    ints = [(d, r) for d, r, is_int in restricted if is_int]
    spans = [(d, r) for d, r, is_int in restricted if not is_int and r.step == 1]
    if len(ints) != 1 or len(spans) != 1:
        return None
    (di, ri), (ds, rs) = ints[0], spans[0]
    rec = _RECORDS.get(node)
    if isinstance(rec, _Columns):
        if rec.axis != ds:
            return None
        at = bisect.bisect_right(rec.starts, rs.start) - 1
        if rec.segs[at][:3] != (rs.start, rs.stop, "block"):
            return None
    elif not isinstance(rec, _Region):
        return None
    else:
        before = [(d, r, is_int) for d, r, is_int in _axes(rec.sig)
                  if is_int or not full_range(r, node.shape[d])]
        if not (len(before) == 2 and (ds, rs, False) in before and any(
                d == di and is_int and r.start != ri.start for d, r, is_int in before)):
            return None
    block = getitem(node, tuple(slice(rs.start, rs.stop) if d == ds else slice(None)
                                for d in range(node.ndim)))
    # ``v`` is the region's value, already cast and broadcast: the block's
    # column ``j`` directly, as one restricted axis would give it
    inner = _set_columns(block, di, ri.start, ri.start + 1, "col", v)
    return _set_columns(node, ds, rs.start, rs.stop, "block", inner)


def _set_columns(node, a, lo, hi, kind, v):
    """Indices ``lo:hi`` along axis ``a`` replaced: the overlapped segments
    cut (tuples sliced, so each update costs a copy, not a Python loop, over
    the segments) and one ``Concatenate`` of the segments' pieces made."""
    if kind == "col":
        v = _written(v)
    rec = _RECORDS.get(node)
    if not (isinstance(rec, _Columns) and rec.axis == a):
        n = node.shape[a]
        rec = _Columns(node, a, ((0, n, "base", None),), (0,),
                       (_base_piece(node, a, 0, n),))
    first = bisect.bisect_right(rec.starts, lo) - 1
    last = bisect.bisect_left(rec.starts, hi) - 1      # the last segment starting before hi
    head, tail = [], []
    s0 = rec.starts[first]
    if s0 < lo:
        head.append(_cut(rec, first, s0, lo))
    e1 = rec.segs[last][1]
    if hi < e1:
        tail.append(_cut(rec, last, hi, e1))
    mid = head + [((lo, hi, kind, v), expand_dims(v, a) if kind == "col" else v)] + tail
    segs = rec.segs[:first] + tuple(m[0] for m in mid) + rec.segs[last + 1:]
    starts = rec.starts[:first] + tuple(m[0][0] for m in mid) + rec.starts[last + 1:]
    pieces = rec.pieces[:first] + tuple(m[1] for m in mid) + rec.pieces[last + 1:]
    if len(pieces) == 1:
        out = pieces[0]
    else:               # the pieces fit by construction: no need of concatenate's checks
        out = N.Concatenate.make(node.shape, node.dtype, pieces, a)
    _RECORDS.setdefault(out, _Columns(rec.base, a, segs, starts, pieces))
    return out


def _written(v):
    """``v`` as written into one column: a computed value is an identity
    node of its own (``N.WRITTEN``), by which the recurrence pass finds a
    loop's values and which of them each step reads; inputs, constants and
    plain reads are left as they are (a loop's first rows may be any)."""
    if not (isinstance(v, N.IndexLambda) and isinstance(v.expr, p.Call)):
        return v
    return N.IndexLambda.make(v.shape, v.dtype, read("_in0", index_vars(v.ndim)),
                              (("_in0", v),), N.WRITTEN)


def _cut(rec, at, s, e):
    """((segment), piece) for the part ``s:e`` of segment ``at`` (a "col" is
    one wide, so it is never cut)."""
    start, _, kind, value = rec.segs[at]
    if kind == "base":
        return (s, e, kind, None), _base_piece(rec.base, rec.axis, s, e)
    value = _getitem(value, (slice(None),) * rec.axis + (slice(s - start, e - start),))
    return (s, e, kind, value), value


def _base_piece(base, a, s, e):
    """Indices ``s:e`` of the base along ``a``; one wide, as ``stack`` holds a
    column (``pa.ones`` gives ``expand_dims(full(...))``, as ``ones_like``)."""
    if e - s == 1:
        return expand_dims(_through(base, (slice(None),) * a + (s,)), a)
    return _through(base, (slice(None),) * a + (slice(s, e),))


def _through(node, key):
    """``node[key]`` read through its updates (a piece kept as a base piece
    reads only what later writes left of it), a constant's as a constant."""
    if node in _RECORDS:
        return _read(node, key, _READ_DEPTH)
    return _constant_read(node, key)


def _constant_read(node, key):
    """``node[key]``; a constant (``pa.ones``) read gives a constant."""
    out = _getitem(node, key)
    if isinstance(node, N.IndexLambda) and not node.bindings \
            and isinstance(node.expr, np.generic):
        return full(out.shape, node.expr, node.dtype)
    return out


def _set_region(node, sig, v, key):
    prev = _RECORDS.get(node)
    if isinstance(prev, _Region) and prev.sig == sig:
        # the last write covered this very region: it is overwritten whole, so
        # its base is this one's (``C[i, :i+1] += ...`` in a loop over ``k``
        # leaves one select per region, not one per write, in what reads C)
        node = prev.base
    conds, vidx, d = [], [], 0
    for kind, val in sig:
        if kind == "none":
            vidx.append(0)
            continue
        i = index_var(d)
        if kind == "int":
            conds.append(p.Comparison(i, "==", val))
        elif full_range(val, node.shape[d]):
            vidx.append(i)
        else:
            c, j = range_test(i, val)
            conds += c
            vidx.append(j)
        d += 1
    x, y = binding_name(0), binding_name(1)
    expr = call("where", all_of(conds), read(y, vidx), read(x, index_vars(node.ndim)))
    out = N.IndexLambda.make(node.shape, node.dtype, expr, ((x, node), (y, v)),
                             f"setitem[{_format_key(key)}]")
    _RECORDS.setdefault(out, _Region(node, sig, v))
    return out
