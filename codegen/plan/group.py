"""Grouping: which kernel computes each materialized node.

Reductions and einsums get a kernel each.  Elementwise outputs of the same
size are merged into the most recent elementwise group when every value
they read from that group is read at their own index (so a dict of outputs
is computed in as few kernels as possible).  A raw kernel's launch, and a
library call, is a group of its own, holding every output of the launch or
call that the DAG reads."""
from __future__ import annotations

import math

from polyarray.ir import nodes as N
from polyarray.ir.mapper import Mapper
from .data import Group, Unit, is_input, materialized_deps


class _UnitOf(Mapper):
    """The ``Unit`` of a materialized node: how its kernel is shaped."""

    def map_reduce(self, n):
        return Unit(n, "reduce", n.size)

    def map_einsum(self, n):
        return Unit(n, "einsum", n.size)

    def map_raw_kernel_output(self, n):
        return Unit(n, "raw", n.size)

    def map_recurrence(self, n):
        return Unit(n, "recurrence", n.size)

    def map_library_call_output(self, n):
        return Unit(n, "library", n.size)

    def _elementwise(self, n):
        return Unit(n, "elementwise", n.size)

    map_placeholder = map_data_wrapper = map_index_lambda = _elementwise
    map_reshape = map_concatenate = _elementwise


def group(order, mat):
    """The kernel groups, in launch order."""
    groups = []
    group_of = {}
    raw_groups = {}     # a raw kernel's launch or a library call (``.call``) -> its group
    last_elementwise = {}   # size -> the most recent elementwise group of that size
    position = {id(n): k for k, n in enumerate(order)}
    unit_of = _UnitOf()
    for n in order:
        if id(n) not in mat:
            continue
        unit = unit_of(n)
        deps = materialized_deps(n, mat)
        target = None
        if unit.kind in ("raw", "library"):     # one launch or call writes all its outputs
            target = raw_groups.get(n.call)
            if target is None:
                size = launch_size(n) if unit.kind == "raw" else sum(
                    math.prod(shape) for shape, _ in n.outputs)
                groups.append(Group([], unit.kind, size))
                target = raw_groups[n.call] = len(groups) - 1
        elif unit.kind == "elementwise":
            # try the most recent elementwise group of the same size
            gi = last_elementwise.get(unit.size)
            if gi is not None and all(
                    group_of.get(id(d), -1) < gi or
                    (group_of.get(id(d)) == gi and d.shape == n.shape
                     and _reads_identity(n, d, mat, position)) for d in deps):
                target = gi
        if target is None:
            groups.append(Group([], unit.kind, unit.size))
            target = len(groups) - 1
            if unit.kind == "elementwise":
                last_elementwise[unit.size] = target
        groups[target].units.append(unit)
        group_of[id(n)] = target
    return groups


def launch_size(n):
    """Work-items of a raw kernel's launch (0: it launches nothing)."""
    import math
    return math.prod(n.grid) * math.prod(n.block)


def _reads_identity(node, dep, mat, position):
    """True if every path from ``node`` to ``dep`` is an identity-indexed
    elementwise read (so ``dep``'s value at the same index can be reused).
    ``position``: id -> place in the topological order (a node before
    ``dep`` cannot lead to it).  O(nodes inlined into ``node`` after
    ``dep``)."""
    from polyarray.ir.expr import index_vars, read
    on_path = _reaching(node, dep, mat, position)        # id -> node
    for n in [node] + [m for m in on_path.values() if m is not node]:
        if not isinstance(n, N.IndexLambda):
            return False
        ident = read("", index_vars(n.ndim))
        for name, child in n.bindings:
            if child is dep or id(child) in on_path:
                if child.shape != n.shape or not _only_identity_reads(n, name, ident):
                    return False
    return True


def _reaching(node, dep, mat, position):
    """The nodes inlined into ``node`` (``node`` too) from which a path of
    inlined nodes leads to ``dep``: one walk, each node once, of the nodes
    after ``dep`` in the topological order."""
    reaches, stack = {}, [(node, False)]
    after = position[id(dep)]

    def inlined(c):
        return id(c) not in mat and not is_input(c) and position[id(c)] > after
    while stack:
        n, done = stack.pop()
        if done:
            reaches[id(n)] = (n, any(c is dep or (inlined(c) and reaches[id(c)][1])
                                     for c in n.children()))
            continue
        if id(n) in reaches:
            continue
        reaches[id(n)] = (n, False)          # a DAG: never read before it is done
        stack.append((n, True))
        stack.extend((c, False) for c in n.children()
                     if c is not dep and id(c) not in reaches and inlined(c))
    return {k: n for k, (n, ok) in reaches.items() if ok}


def _only_identity_reads(n, name, ident):
    """Whether ``n`` reads binding ``name`` only at its own index (a bare 0-d
    read passes), indices of other reads included (``IndexLambda.reads``,
    made once per node)."""
    import pymbolic.primitives as p
    want = ident.index_tuple if isinstance(ident, p.Subscript) else ()
    return all(t == want or t == () for t in n.reads().get(name, ()))
