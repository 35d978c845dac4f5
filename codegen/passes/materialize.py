"""Materialization: which nodes get a buffer.

* Placeholders and data are input buffers; outputs are written once.
* Reductions and einsums are kernel roots; their results are materialized.
* Einsum operands are materialized (so the contraction reads plain buffers,
  which the schedules can tile and prefetch), except a transpose of a buffer
  (``x.T``), which the contraction reads in place: recorded here, once, in
  ``transposed`` (operand -> the buffer node it transposes).
* A small reduction (``policy.INLINE_REDUCTION_MAX`` values or fewer) that
  only feeds other reductions, through elementwise work of its own size, is
  inlined into them (its terms unrolled: ``KernelBuilder.map_reduce``), so a
  reduction over a reduction of a broadcast is one kernel.
* Everything else is inlined into its consumers' kernel, except that a
  reduction body whose inlined expression tree would exceed ``MAX_INLINE``
  nodes (or ``MAX_INLINE_DEPTH`` levels) gets its input materialized.
"""
from __future__ import annotations

import math

import pymbolic.primitives as p

from polyarray.codegen.ir import nodes as N
from polyarray.codegen.ir.mapper import Mapper
from .. import policy
from ..lower import INLINE_COMBINE
from .data import is_input


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

    def _inlined(self, n):
        pass

    map_placeholder = map_data_wrapper = map_index_lambda = _inlined
    map_reshape = map_concatenate = _inlined


def materialize(outputs, order):
    """``(materialized ids, transposed operands)``."""
    mat = {id(o) for o in outputs if not is_input(o)}
    transposed = {}
    roots = _Roots(mat, transposed, _small_reductions(outputs, order))
    for n in order:
        roots(n)
    # guard: reduction bodies must stay small when inlined
    sizes = _inline_sizes(order, mat)
    for n in order:
        if isinstance(n, N.Reduce) and not is_input(n.array) and id(n.array) not in mat \
                and (sizes[id(n.array)][0] > policy.MAX_INLINE
                     or sizes[id(n.array)][1] > policy.MAX_INLINE_DEPTH):
            mat.add(id(n.array))
            sizes = _inline_sizes(order, mat)
    return mat, transposed


def reduced_count(n):
    """How many values each result of reduction ``n`` combines."""
    return math.prod(n.array.shape[a] for a in n.axes)


def _small_reductions(outputs, order):
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
            and reduced_count(n) <= policy.INLINE_REDUCTION_MAX and only_reduced[id(n)]}


def inlined_terms(node, mat):
    """Unrolled terms per element of ``node``'s inlined expression: 1, plus
    the values of each small reduction inlined into it (the policy runs a
    heavy element on a work-item of its own, not a work-group tree)."""
    terms, stack, seen = 1, [node], set()
    while stack:
        n = stack.pop()
        if id(n) in seen or id(n) in mat or is_input(n):
            continue
        seen.add(id(n))
        if isinstance(n, N.Reduce):
            terms += reduced_count(n)
        stack.extend(n.children())
    return terms


def transposed_buffer(node, mat):
    """The 2-D buffer (input or materialized node) that ``node`` transposes
    (``b.T``), or None.  Contractions read such operands in place: a matrix
    product tile reads ``b[k, i]`` as well as ``a[i, k]``."""
    if not (isinstance(node, N.IndexLambda) and node.ndim == 2 and len(node.bindings) == 1):
        return None
    (name, child), = node.bindings
    e = node.expr
    if child.ndim == 2 and isinstance(e, p.Subscript) and e.aggregate == p.Variable(name) \
            and tuple(e.index) == (p.Variable("_1"), p.Variable("_0")) \
            and (is_input(child) or id(child) in mat):
        return child
    return None


def _inline_sizes(order, materialized):
    """(tree size, depth) of each node's inlined expression, capped; O(N)."""
    size = {}
    cap = 10 * policy.MAX_INLINE
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
