"""Grouping: which kernel computes each materialized node.

Reductions and einsums get a kernel each.  Elementwise outputs of the same
size are merged into the most recent elementwise group when every value
they read from that group is read at their own index (so a dict of outputs
is computed in as few kernels as possible).  A raw kernel's launch is a
group of its own, holding every output of the launch that the DAG reads."""
from __future__ import annotations

from polyarray.codegen.ir import nodes as N
from polyarray.codegen.ir.mapper import Mapper
from .data import Group, Unit, is_input, materialized_deps


class _UnitOf(Mapper):
    """The ``Unit`` of a materialized node: how its kernel is shaped."""

    def map_reduce(self, n):
        return Unit(n, "reduce", n.size)

    def map_einsum(self, n):
        return Unit(n, "einsum", n.size)

    def map_raw_kernel_output(self, n):
        return Unit(n, "raw", n.size)

    def _elementwise(self, n):
        return Unit(n, "elementwise", n.size)

    map_placeholder = map_data_wrapper = map_index_lambda = _elementwise
    map_reshape = map_concatenate = _elementwise


def group(order, mat):
    """The kernel groups, in launch order."""
    groups = []
    group_of = {}
    raw_groups = {}     # a raw kernel launch (RawKernelOutput.call) -> its group
    unit_of = _UnitOf()
    for n in order:
        if id(n) not in mat:
            continue
        unit = unit_of(n)
        deps = materialized_deps(n, mat)
        target = None
        if unit.kind == "raw":          # one launch writes all its outputs: one group
            target = raw_groups.get(n.call)
            if target is None:
                groups.append(Group([], "raw", launch_size(n)))
                target = raw_groups[n.call] = len(groups) - 1
        elif unit.kind == "elementwise":
            # try the most recent elementwise group of the same size
            for gi in range(len(groups) - 1, -1, -1):
                g = groups[gi]
                if g.kind != "elementwise" or g.size != unit.size:
                    continue
                if all(group_of.get(id(d), -1) < gi or
                       (group_of.get(id(d)) == gi and d.shape == n.shape
                        and _reads_identity(n, d, mat)) for d in deps):
                    target = gi
                break
        if target is None:
            groups.append(Group([], unit.kind, unit.size))
            target = len(groups) - 1
        groups[target].units.append(unit)
        group_of[id(n)] = target
    return groups


def launch_size(n):
    """Work-items of a raw kernel's launch (0: it launches nothing)."""
    import math
    return math.prod(n.grid) * math.prod(n.block)


def _reads_identity(node, dep, mat):
    """True if every path from ``node`` to ``dep`` is an identity-indexed
    elementwise read (so ``dep``'s value at the same index can be reused)."""
    from polyarray.codegen.ir.expr import index_vars, read
    stack = [node]
    seen = set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if not isinstance(n, N.IndexLambda):
            return False
        ident = read("", index_vars(n.ndim))
        for name, child in n.bindings:
            if child is dep or (id(child) not in mat and not is_input(child)
                                and _reaches(child, dep, mat)):
                if child.shape != n.shape or not _only_identity_reads(n, name, ident):
                    return False
                if child is not dep:
                    stack.append(child)
    return True


def _reaches(node, dep, mat):
    stack, seen = [node], set()
    while stack:
        n = stack.pop()
        if n is dep:
            return True
        if id(n) in seen or (id(n) in mat and n is not node) or is_input(n):
            continue
        seen.add(id(n))
        stack.extend(n.children())
    return False


def _only_identity_reads(n, name, ident):
    """Whether ``n`` reads binding ``name`` only at its own index (a bare 0-d
    read passes), indices of other reads included (``IndexLambda.reads``,
    made once per node)."""
    import pymbolic.primitives as p
    want = ident.index_tuple if isinstance(ident, p.Subscript) else ()
    return all(t == want or t == () for t in n.reads().get(name, ()))
