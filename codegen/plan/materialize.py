"""Materialization: which nodes get a buffer.

* Placeholders and data are input buffers; outputs are written once.
* Reductions and einsums are kernel roots; their results are materialized.
* Einsum operands are materialized (so the contraction reads plain buffers,
  which the schedules can tile and prefetch), except a transpose of a buffer
  (``x.T``), which the contraction reads in place: recorded here, once, in
  ``transposed`` (operand -> the buffer node it transposes).
* A small reduction (``INLINE_REDUCTION_MAX`` values or fewer) that
  only feeds other reductions, through elementwise work of its own size, is
  inlined into them (its terms unrolled: ``KernelBuilder.map_reduce``), so a
  reduction over a reduction of a broadcast is one kernel.
* Fusion never multiplies work (``_many_copies``): a node that computes is
  materialized where its readers' kernels would hold it more than
  ``MAX_INLINE_COPIES`` times, read it at two or more gathered indices,
  hold it more times than its readers when it is not small
  (``MAX_RECOMPUTED``) or at a second level (a stencil loop's steps), be
  held by more than ``MAX_HOLDING_KERNELS`` kernels when it is not small, or
  evaluate each of its elements several times when it is large (a scalar
  chain added to a matrix); any node whose index would nest too deep or
  grow too much (``MAX_INDEX_DEPTH``, ``MAX_INDEX_GROWTH``).  A node read at
  several index maps (``x[i]`` and ``x[i ^ j]``) is lowered once per index
  map, so a chain of such reads (the stages of a sorting network, the steps
  of a stencil loop) would grow geometrically in source size, compile time
  and work.
* A value that a materialized node stores unchanged (``x[1:-1] = v``, a
  concatenation's piece) is read from that node's buffer by the kernels
  after it (``data.Materialized.stored``).
* A raw kernel's (``pa.raw_kernel``) inputs and outputs: its own C reads
  and writes buffers.
* Everything else is inlined into its consumers' kernel, except that a
  reduction body whose inlined expression tree would exceed ``MAX_INLINE``
  nodes (or ``MAX_INLINE_DEPTH`` levels) gets its input materialized.
"""
from __future__ import annotations

import math

import numpy as np

import pymbolic.primitives as p

from polyarray.ir import nodes as N
from polyarray.ir.expr import _children, binding_reads, index_vars
from polyarray.ir.mapper import Mapper
from ..policy.classify import stacked_recurrence
from ..lowering.builder import INLINE_COMBINE
from .data import Materialized, is_input


class _Roots(Mapper):
    """Marks kernel roots and the operands they need as buffers."""

    def __init__(self, mat, transposed, inlined):
        self.mat, self.transposed, self.inlined = mat, transposed, inlined

    def map_reduce(self, n):
        if id(n) not in self.inlined:
            self.mat.add(id(n))

    def map_einsum(self, n):
        self.mat.add(id(n))
        for op in n.operands:
            if is_input(op):
                continue
            src = transposed_buffer(op, self.mat)
            if src is None:
                self.mat.add(id(op))
            else:
                self.transposed[id(op)] = src

    def map_recurrence(self, n):
        """Rows computed in order: a kernel of its own, which reads its own
        earlier rows from its buffer."""
        self.mat.add(id(n))

    def map_raw_kernel_output(self, n):
        """A hand-written kernel reads and writes plain buffers."""
        self.mat.add(id(n))
        self.mat.update(id(c) for c in n.inputs if not is_input(c))

    def map_library_call_output(self, n):
        """A library routine reads and writes plain buffers."""
        self.mat.add(id(n))
        self.mat.update(id(c) for c in n.inputs if not is_input(c))

    def _inlined(self, n):
        pass

    map_placeholder = map_data_wrapper = map_index_lambda = _inlined
    map_reshape = map_concatenate = _inlined


def materialize(outputs, order, t):
    """``(materialized ids, transposed operands)`` under the thresholds ``t``."""
    mat = Materialized((id(o) for o in outputs if not is_input(o)),
                       {id(n): k for k, n in enumerate(order)})
    transposed = {}
    roots = _Roots(mat, transposed, _small_reductions(outputs, order, t))
    for n in order:
        roots(n)
    _many_copies(order, mat, _inline_sizes(order, mat, t), t)
    _bounded_reduction_bodies(order, mat, t)
    mat.freeze()
    return mat, transposed


def _bounded_reduction_bodies(order, mat, t):
    """Materialize the input of each reduction whose inlined expression
    would exceed ``MAX_INLINE`` nodes or ``MAX_INLINE_DEPTH`` levels (code
    size).  One pass in topological order: a node's size counts what is
    materialized below it so far."""
    size = {}
    cap = 10 * t.MAX_INLINE
    for n in order:
        if is_input(n) or id(n) in mat:
            size[id(n)] = (1, 1)
        else:
            kids = [size[id(c)] if id(c) not in mat else (1, 1) for c in n.children()]
            terms = reduced_count(n) if isinstance(n, N.Reduce) else 1
            size[id(n)] = (min(1 + terms * sum(k[0] for k in kids), cap),
                           min(1 + max((k[1] for k in kids), default=0), cap))
        if isinstance(n, N.Reduce) and not is_input(n.array) and id(n.array) not in mat \
                and (size[id(n.array)][0] > t.MAX_INLINE
                     or size[id(n.array)][1] > t.MAX_INLINE_DEPTH):
            mat.add(id(n.array))


def _many_copies(order, mat, sizes, t):
    """Materialize each computing node that fusing would compute too many
    times over (``sizes``: ``_inline_sizes``, each node's inlined tree):

    * its readers' kernels would hold it more than ``MAX_INLINE_COPIES``
      times, or it is read at two or more gathered indices (index maps that
      read data: a binary search's probes);
    * a kernel would hold it more times than it holds any of its readers
      (they read it at several index maps: ``_copy_level``) and its inlined
      expression has more than ``MAX_RECOMPUTED`` nodes, or it would
      be copied so at a second level (``MAX_COPY_LEVELS``): fusion
      must not multiply work, and each step of a stencil loop would
      multiply the last one's copies;
    * more than ``MAX_HOLDING_KERNELS`` kernels would hold it and its
      inlined expression has more than ``MAX_RECOMPUTED`` nodes: a
      chain carried through a loop's steps would otherwise be recomputed
      from its first step in every later step's kernels;
    * (any node) it would be read through more than ``MAX_INDEX_DEPTH``
      nested index maps (views of views, pieces of pieces), or through maps
      whose index expressions hold the reader's index more than
      ``MAX_INDEX_GROWTH`` times together (a roll of a roll of ...:
      three times each): code generation recurses on index expressions, and
      their text would grow geometrically;
    * each of its elements would be evaluated ``REPEAT_MIN`` times
      or more (a broadcast, a piece of a concatenation computed at every
      element of it) and its inlined expression has more than
      ``MAX_REPEATED_INLINE`` nodes: a chain of scalars added to a
      matrix, the columns of a long recurrence.

    A node's copies: one per kernel root; for an inlined reader, the reader's
    copies times the number of distinct index maps at which it reads the node.
    A read at the reader's own index (same shape) shares the reader's copies
    (a kernel computes a value used twice at one index once), so chains of
    elementwise work count 1 however much they share.  A node inlined at a
    gathered index carries that index's text into every use of its own index
    variables, so gathers of gathers grow the source geometrically even when
    the copies are few: a node that itself gathers is materialized when read
    at two gathered indices, and an inlined node passes its gathered reads on
    to what it reads.  Readers come before what they read in reversed
    topological order: one pass, O(N) (views pass what reaches them on)."""
    index_maps = {id(n): _index_maps(n) for n in order if not is_input(n)}
    gathering = _gathering(order, mat, index_maps)
    position = mat.position
    stores = {}     # id(store) -> stored_values(store), made once
    reads = {}      # id -> what its readers contributed, one entry per reader:
    #                 (reader, own, copies, maps, gathered, repeat, reach, index depth,
    #                  index growth)
    for n in reversed(order):
        if is_input(n):
            continue
        nid = id(n)
        entries = _served_from_store(n, reads.pop(nid, ()), mat, position, stores)
        shared = extra = gathers = depth = 0
        rep, reach, grown = 1.0, {}, 1
        for reader, own, c, maps, gathered, each, kernels, deep, times in entries:
            depth, grown = max(depth, deep), max(grown, times)
            if own:
                shared = max(shared, c)
            else:
                extra += c * maps
            gathers += gathered
            rep = max(rep, each)
            for root, (o, x, ac, lv) in kernels.items():
                _reach(reach, root, o if own else 0, (x if own else o + x) * maps, ac, lv)
        if nid in mat:
            copies, level, rep, depth, grown = 1, 0, 1.0, 0, 1
        else:
            copies = shared + extra
            level = _copy_level(reach) if _computes_value(n) else 0
            if depth > t.MAX_INDEX_DEPTH or grown > t.MAX_INDEX_GROWTH \
                    or _computes(n) and (
                    copies > t.MAX_INLINE_COPIES
                    or level > t.MAX_COPY_LEVELS
                    or (level and sizes[nid][0] > t.MAX_RECOMPUTED)
                    or (len(reach) > t.MAX_HOLDING_KERNELS
                        and sizes[nid][0] > t.MAX_RECOMPUTED)
                    or (gathers > 1 and nid in gathering)
                    or (rep >= t.REPEAT_MIN
                        and sizes[nid][0] > t.MAX_REPEATED_INLINE)):
                mat.add(nid)
                mat.stored.pop(nid, None)
                copies, level, rep, depth, grown = 1, 0, 1.0, 0, 1
        passed = gathers if nid not in mat else 0       # inlined: passed on
        # per kernel that holds it: (its own copies, 0, copies, level) as the
        # reader of its children; a view passes on what reaches it
        if nid in mat:
            kernels = {nid: (1, 0, 1, 0)}
        elif _computes_value(n):
            kernels = {root: (o + x, 0, o + x, _copy_level({root: e}))
                       for root, e in reach.items() for o, x in [e[:2]]}
        else:
            kernels = reach
        factor = rep * _domain(n)
        for child, maps, own, data_maps, (nests, growth) in index_maps[nid]:
            if is_input(child):
                continue
            if nests is None:       # a reshape
                nests = depth > 0
                growth = growth if nests else 1
            each = factor / child.size if child.size else 1.0
            if isinstance(n, N.Concatenate) and each >= t.REPEAT_MIN \
                    and stacked_recurrence(n):
                each = rep      # a row per work-item: each column computed once
            gathered = copies * data_maps + passed if (data_maps or passed) else 0
            reads.setdefault(id(child), []).append(
                (n, own, copies, maps, gathered, each, kernels, depth + bool(nests),
                 grown * growth))


def _served_from_store(n, entries, mat, position, stores):
    """The readers' entries of node ``n`` that the kernels will compute:
    where a materialized reader stores ``n`` unchanged (a concatenation's
    piece, the value of ``x[a:b] = v``: ``stored_values``), the readers
    after it read its buffer instead (``Materialized.stored``, which
    ``data.materialized_deps`` and ``builder.KernelBuilder`` follow)."""
    store = None
    for reader, *_ in entries:
        if id(reader) in mat and (store is None or position[id(reader)] < position[id(store[0])]):
            if id(reader) not in stores:
                stores[id(reader)] = stored_values(reader)
            off = stores[id(reader)].get(id(n))
            if off is not None:
                store = (reader, off)
    if store is None:
        return entries
    mat.stored[id(n)] = store
    at = position[id(store[0])]
    return [e for e in entries if position[id(e[0])] <= at]


def stored_values(s):
    """``{id(v): offset}`` of the computed nodes ``v`` that node ``s`` holds
    unchanged, ``v[q] == s[q + offset]`` over all of ``v``: the pieces of
    a concatenation, and the value of a step-1 ``x[a:b, c:d] = v``
    (``ops/assign``: ``where(region, v[clamped positions], x)``)."""
    found = {}
    if isinstance(s, N.Concatenate):
        at = 0
        for a in s.arrays:
            if not is_input(a) and id(a) not in found:
                found[id(a)] = tuple(at if d == s.axis else 0 for d in range(s.ndim))
            at += a.shape[s.axis]
        return found
    if not (isinstance(s, N.IndexLambda) and s.op.startswith("setitem[")
            and isinstance(s.expr, p.Call) and s.expr.function == p.Variable("where")
            and len(s.expr.parameters) == 3):
        return found
    value = s.expr.parameters[1]
    if not (isinstance(value, p.Subscript) and isinstance(value.aggregate, p.Variable)):
        return found
    v = dict(s.bindings).get(value.aggregate.name)
    if v is None or is_input(v) or v.ndim != s.ndim:
        return found
    offset = []
    for k, (e, n) in enumerate(zip(value.index_tuple, v.shape)):
        at = _shift(e, k, n)
        if at is None or not 0 <= at <= s.shape[k] - n:
            return found
        offset.append(at)
    found[id(v)] = tuple(offset)
    return found


def _shift(e, k, n):
    """``o`` where index expression ``e`` is ``_k - o`` clamped to ``[0, n)``
    (or ``_k`` itself), else None."""
    var = p.Variable(f"_{k}")
    if e == var:
        return 0
    if not (isinstance(e, p.If) and e.then == 0 and isinstance(e.else_, p.If)
            and e.else_.then == n - 1):
        return None
    inner = e.else_.else_
    if not (e.condition == p.Comparison(inner, "<", 0)
            and e.else_.condition == p.Comparison(inner, ">", n - 1)):
        return None
    if inner == var:
        return 0
    if isinstance(inner, p.Sum) and len(inner.children) == 2 and inner.children[0] == var \
            and isinstance(inner.children[1], int):
        return -inner.children[1]
    return None


REACH_TRACKED = 32      # kernels tracked per node; more are summed in one entry


def _reach(into, root, own, other, copies, level):
    """Record that the kernel of ``root`` holds a node ``own`` times at its
    readers' own index and ``other`` times at other index maps, read by
    nodes it holds ``copies`` times at copy level ``level`` (the most)."""
    if root not in into and len(into) >= REACH_TRACKED:
        root = None         # past the tracked kernels: one conservative entry
    e = into.get(root)
    if e is None:
        into[root] = [own, other, copies, level]
    else:
        e[0] = max(e[0], own)
        e[1] += other
        e[2] = max(e[2], copies)
        e[3] = max(e[3], level)


def _copy_level(reach):
    """A node's copy level: the most, over the kernels that hold it, of its
    readers' level there, plus one where the kernel holds it more times than
    it holds any of its readers (they read it at several index maps).
    Level 1: copied under a kernel root or under nodes computed once per
    element; level 2: copies of copies."""
    level = 0
    for own, other, copies, lv in reach.values():
        level = max(level, lv + (1 if own + other > copies else 0))
    return level


def _computes_value(n):
    """A value op (an IndexLambda whose expression is a call, or an inlined
    small reduction): what copy levels count.  Views, reshapes and
    concatenations only pass their readers' copies on to what they read."""
    if isinstance(n, N.IndexLambda):
        return isinstance(n.expr, p.Call)
    return isinstance(n, N.Reduce)


def _domain(n):
    """The points at which a kernel evaluates ``n``'s definition: its
    elements, or for a reduction the elements of what it reduces."""
    return n.array.size if isinstance(n, N.Reduce) else n.size


def _gathering(order, mat, index_maps):
    """Ids of the nodes whose inlined expression reads something at an index
    read from data (a gather), in the node itself or below it, down to the
    buffers known so far (``index_maps``: id -> ``_index_maps`` of each
    node).  Children first: one pass."""
    found = set()
    for n in order:
        if not is_input(n) and any(data_maps or (id(c) in found and id(c) not in mat)
                                   for c, _, _, data_maps, _ in index_maps[id(n)]):
            found.add(id(n))
    return found


def _computes(n):
    """Work worth a buffer (``builder._computes``): a value op or a join, not a
    view (a transpose, slice or gather, whose reads pass to what it reads)."""
    if isinstance(n, N.IndexLambda):
        return isinstance(n.expr, p.Call)
    return isinstance(n, N.Concatenate)


def _index_maps(n):
    """``(child, distinct index maps of its reads, read only at n's own index,
    distinct index maps that read data, (nests, growth))`` per distinct
    child of ``n``.  A concatenation reads each piece once, where the piece
    itself is.  ``nests``: the child's index is an expression of ``n``'s
    (not a permutation of its variables; None for a reshape: only where it is
    itself read at another index); ``growth`` bounds how many times that
    expression holds ``n``'s (``_index_growth``)."""
    if not isinstance(n, N.IndexLambda):
        if isinstance(n, N.Concatenate):
            out, at = [], 0
            for c in n.arrays:      # a piece's index is clamped by conditionals (lowering/builder.py)
                w = c.shape[n.axis]
                clamped = w != 1 and (at > 0 or at + w < n.shape[n.axis])
                out.append((c, 1, True, 0, (clamped, 4 if clamped else 1)))
                at += w
            seen, unique = set(), []
            for e in out:
                if id(e[0]) not in seen:
                    seen.add(id(e[0]))
                    unique.append(e)
            return unique
        # a reshape's index: the flat position, decomposed once per axis of what it
        # reads (at its kernel's own index, lowering uses the kernel's own indices)
        return [(c, 1, False, 0, (None, max(1, sum(1 for d in c.shape if d != 1))))
                for c in dict.fromkeys(n.children())]
    reads = n.reads()
    maps = {}
    for name, child in n.bindings:
        maps.setdefault(id(child), (child, set()))[1].update(reads.get(name, ()))
    own = index_vars(n.ndim)
    unit = _unit_axes_dropped(own, n.shape)
    return [(child, max(len(m), 1),
             m <= {()} or (m == {own} and child.shape == n.shape)
             or (len(m) == 1 and _same_point(next(iter(m)), child.shape, unit, n.shape)),
             sum(1 for idx in m if _reads_data(idx)),
             (any(not _bare(i) for idx in m for i in idx),
              max((_index_growth(idx) for idx in m), default=1)))
            for child, m in maps.values()]


def _bare(e):
    """An index component that nests nothing: a constant or an index variable."""
    return type(e) is int or isinstance(e, np.integer) or (
        type(e) is p.Variable and not e.name.startswith("_in"))


def _index_growth(idx):
    """The most times one index variable occurs in index tuple ``idx``
    (at least 1): substituted by the reader's index, the tuple's text is at
    most that many times the reader's (``x[i + 4 if i < 2 else i - 2]``, a
    roll: 3).  Iterative walk."""
    counts, stack = {}, list(idx)
    while stack:
        e = stack.pop()
        t = type(e)
        if t is int or isinstance(e, np.integer):
            continue
        if t is p.Variable:
            if not e.name.startswith("_in"):
                counts[e.name] = counts.get(e.name, 0) + 1
        elif isinstance(e, p.Subscript):
            stack.extend(e.index_tuple)
        elif isinstance(e, p.ExpressionNode):
            stack.extend(c for c in _children(e) if not isinstance(c, str))
        elif isinstance(e, tuple):
            stack.extend(e)
    return max(counts.values(), default=1)


def _reads_data(idx):
    """Whether index tuple ``idx`` reads a binding (``binding_reads``,
    skipping the plain index variables and constants most indices are)."""
    for i in idx:
        t = type(i)
        if t is int or (t is p.Variable and not i.name.startswith("_in")):
            continue
        if binding_reads(i):
            return True
    return False


def _unit_axes_dropped(idx, shape):
    return tuple(v for v, s in zip(idx, shape) if s != 1)


def _same_point(idx, child_shape, unit, shape):
    """Whether reading a child at ``idx`` reads it where the reader itself
    is, up to axes of extent 1 (``x[:, None]``, a squeeze): then the kernel
    computes the child once for both (the lowering's memo is keyed by the
    child's index), and the read adds no copy."""
    return (isinstance(idx, tuple) and len(idx) == len(child_shape)
            and _unit_axes_dropped(idx, child_shape) == unit
            and tuple(s for s in child_shape if s != 1) == tuple(s for s in shape if s != 1))


def reduced_count(n):
    """How many values each result of reduction ``n`` combines."""
    return math.prod(n.array.shape[a] for a in n.axes)


def _small_reductions(outputs, order, t):
    """Ids of the reductions inlined into the reductions that read them:
    small, and read only by reductions, through elementwise nodes of their
    own size (so each value is read once per reading element, never
    recomputed across a broadcast).  One pass in reverse order: O(N)."""
    out_ids = {id(o) for o in outputs}
    readers = {}
    for n in order:
        for c in dict.fromkeys(n.children()):
            readers.setdefault(id(c), []).append(n)
    only_reduced = {}
    for n in reversed(order):           # readers before what they read
        only_reduced[id(n)] = id(n) not in out_ids and all(
            isinstance(r, N.Reduce) or (not isinstance(r, N.Einsum) and r.size == n.size
                                        and only_reduced[id(r)])
            for r in readers.get(id(n), ()))
    return {id(n) for n in order if isinstance(n, N.Reduce) and n.op in INLINE_COMBINE
            and reduced_count(n) <= t.INLINE_REDUCTION_MAX and only_reduced[id(n)]}


def inlined_nodes(starts, mat, own=()):
    """The nodes of the expressions inlined from ``starts``: each once, none
    materialized (but those of ``own``, a kernel's own outputs) or input."""
    own = {id(n) for n in own}
    stack, seen = list(starts), set()
    while stack:
        n = stack.pop()
        if id(n) in seen or is_input(n) or (id(n) in mat and id(n) not in own):
            continue
        seen.add(id(n))
        yield n
        stack.extend(n.children())


def inlined_terms(node, mat):
    """Unrolled terms per element of ``node``'s inlined expression: 1, plus
    the values of each small reduction inlined into it (the policy runs a
    heavy element on a work-item of its own, not a work-group tree)."""
    return 1 + sum(reduced_count(n) for n in inlined_nodes([node], mat)
                   if isinstance(n, N.Reduce))


def inlined_shared_run(nodes, mat) -> int:
    """The longest run of neighbours sharing work (``user_functions.
    shared_run``) in the expressions of ``nodes`` and what is inlined into
    them; 1 if none."""
    from ..user_functions import shared_run
    return max((shared_run(n.expr) for n in inlined_nodes(nodes, mat, own=nodes)
                if isinstance(n, N.IndexLambda)), default=1)


def transposed_view(node):
    """The 2-D node that ``node`` transposes (``b.T``), or None."""
    if not (isinstance(node, N.IndexLambda) and node.ndim == 2 and len(node.bindings) == 1):
        return None
    (name, child), = node.bindings
    e = node.expr
    if child.ndim == 2 and isinstance(e, p.Subscript) and e.aggregate == p.Variable(name) \
            and tuple(e.index) == (p.Variable("_1"), p.Variable("_0")):
        return child
    return None


def transposed_buffer(node, mat):
    """The 2-D buffer (input or materialized node) that ``node`` transposes
    (``b.T``), or None.  Contractions read such operands in place: a matrix
    product tile reads ``b[k, i]`` as well as ``a[i, k]``."""
    child = transposed_view(node)
    return child if child is not None and (is_input(child) or id(child) in mat) else None


def _inline_sizes(order, materialized, t):
    """(tree size, depth) of each node's inlined expression, capped; O(N)."""
    size = {}
    cap = 10 * t.MAX_INLINE
    for n in order:
        if is_input(n) or id(n) in materialized:
            size[id(n)] = (1, 1)
            continue
        kids = [size[id(c)] for c in n.children()]
        terms = reduced_count(n) if isinstance(n, N.Reduce) else 1     # unrolled
        s = 1 + terms * sum(k[0] for k in kids)
        d = 1 + max((k[1] for k in kids), default=0)
        size[id(n)] = (min(s, cap), min(d, cap))
    return size
