"""Materialization and kernel grouping: which nodes get a buffer, and which
kernel computes each of them.

Policy (see docs/DESIGN.md, "Materialization and fusion"):

* Placeholders and data are input buffers; outputs are written once.
* Reductions and einsums are kernel roots; their results are materialized.
* Einsum operands are materialized (so the contraction reads plain buffers,
  which the schedules can tile and prefetch), except a transpose of a buffer
  (``x.T``), which the contraction reads in place.
* Everything else -- elementwise, broadcast, transpose, slice, gather,
  reshape, concatenate -- is inlined into its consumers' kernel.  A node used
  by several consumers inside one kernel is computed once into a private
  temporary (see ``lower``).  Across kernels it is recomputed: for
  bandwidth-bound work, re-reading the inputs costs less than writing and
  re-reading an intermediate.
* Guards against code blow-up: a reduction body whose inlined expression tree
  would exceed ``MAX_INLINE`` nodes gets its input materialized.
* Elementwise kernels of the same size are merged into one kernel, so a
  dict of outputs is computed in as few kernels as possible.
* Row fusion: reductions over the last axis of the rows of an elementwise
  kernel's output, read only by that kernel (and by each other), join it as
  a ``rows`` group: softmax, log-softmax and layer norm become one kernel
  that reads each row once from memory (``_fuse_rows``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from polyarray.codegen.ir import nodes as N

MAX_INLINE = 400
MAX_INLINE_DEPTH = 40
ROW_FUSE_MAX = 16384   # longest row a fused row kernel keeps in one work-group


@dataclass
class Unit:
    """One materialized node and how its kernel is shaped."""
    node: N.Node
    kind: str                  # "elementwise" | "reduce" | "einsum"
    size: int


@dataclass
class Group:
    """Units computed by one kernel (same domain), in order."""
    units: list = field(default_factory=list)
    kind: str = "elementwise"      # | "reduce" | "einsum" | "rows"
    size: int = 0


@dataclass
class Plan:
    order: list                # topological order of all nodes
    materialized: set          # id(node)
    groups: list               # [Group] in launch order
    outputs: list
    checks: list = field(default_factory=list)   # run-time checks (codegen.checks)


def _is_input(node):
    return isinstance(node, (N.Placeholder, N.DataWrapper))


def _inline_sizes(order, materialized):
    """(tree size, depth) of each node's inlined expression, capped; O(N)."""
    size = {}
    cap = 10 * MAX_INLINE
    for n in order:
        if _is_input(n) or id(n) in materialized:
            size[id(n)] = (1, 1)
            continue
        kids = [size[id(c)] for c in n.children()]
        s = 1 + sum(k[0] for k in kids)
        d = 1 + max((k[1] for k in kids), default=0)
        size[id(n)] = (min(s, cap), min(d, cap))
    return size


def make_plan(outputs) -> Plan:
    order = N.topological_order(outputs)
    mat = set()
    for o in outputs:
        if not _is_input(o):
            mat.add(id(o))
    for n in order:
        if isinstance(n, (N.Reduce, N.Einsum)):
            mat.add(id(n))
        if isinstance(n, N.Einsum):
            for op in n.operands:
                if not _is_input(op) and not transposed_buffer(op, mat):
                    mat.add(id(op))
    # guard: reduction bodies must stay small when inlined
    sizes = _inline_sizes(order, mat)
    for n in order:
        if isinstance(n, N.Reduce) and not _is_input(n.array) and id(n.array) not in mat \
                and (sizes[id(n.array)][0] > MAX_INLINE
                     or sizes[id(n.array)][1] > MAX_INLINE_DEPTH):
            mat.add(id(n.array))
            sizes = _inline_sizes(order, mat)

    groups = []
    group_of = {}
    for n in order:
        if id(n) not in mat:
            continue
        if isinstance(n, N.Reduce):
            unit = Unit(n, "reduce", n.size)
        elif isinstance(n, N.Einsum):
            unit = Unit(n, "einsum", n.size)
        else:
            unit = Unit(n, "elementwise", n.size)
        deps = _materialized_deps(n, mat)
        target = None
        if unit.kind == "elementwise":
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
    groups = _fuse_rows(groups, mat, outputs)
    return Plan(order, mat, groups, list(outputs))


def transposed_buffer(node, mat):
    """The 2-D buffer (input or materialized node) that ``node`` transposes
    (``b.T``), or None.  Contractions read such operands in place: a matrix
    product tile reads ``b[k, i]`` as well as ``a[i, k]``."""
    import pymbolic.primitives as p
    if not (isinstance(node, N.IndexLambda) and node.ndim == 2 and len(node.bindings) == 1):
        return None
    (name, child), = node.bindings
    e = node.expr
    if child.ndim == 2 and isinstance(e, p.Subscript) and e.aggregate == p.Variable(name) \
            and tuple(e.index) == (p.Variable("_1"), p.Variable("_0")) \
            and (_is_input(child) or id(child) in mat):
        return child
    return None


def _row_reduction(node, shape, outputs):
    """A reduction over the last axis of an array of ``shape`` (the rows of
    an elementwise kernel), not itself a program output."""
    return (isinstance(node, N.Reduce) and node.op not in ("argmax", "argmin")
            and node.array.shape == shape and node.axes == (len(shape) - 1,)
            and not any(node is o for o in outputs))


def _fuse_rows(groups, mat, outputs):
    """Move row reductions into the elementwise group that reads them.

    Group ``g`` (all outputs of one shape ``S``) absorbs each reduction over
    the last axis of an array of shape ``S`` that it reads (directly or
    through another absorbed reduction) provided that nothing outside ``g``
    and the absorbed reductions reads it.  The result is one ``rows``
    kernel: per row, the reductions, then the elementwise outputs.  Reading
    a reduction at another row than its own is caught at lowering, which
    then falls back to separate kernels."""
    readers, deps = {}, {}
    for g in groups:
        for u in g.units:
            deps[id(u.node)] = _materialized_deps(u.node, mat)
            for d in deps[id(u.node)]:
                readers.setdefault(id(d), set()).add(id(u.node))
    absorbed = set()
    for g in groups:
        shape = g.units[0].node.shape if g.units else ()
        if g.kind != "elementwise" or not shape or not 1 < shape[-1] <= ROW_FUSE_MAX \
                or any(u.node.shape != shape for u in g.units):
            continue
        fused, stack = {}, [d for u in g.units for d in deps[id(u.node)]]
        while stack:
            d = stack.pop()
            if id(d) not in fused and id(d) not in absorbed \
                    and _row_reduction(d, shape, outputs):
                fused[id(d)] = d
                stack.extend(deps[id(d)])
        inside = {id(u.node) for u in g.units}
        while True:         # drop those read from outside, until none is
            keep = set(fused) | inside
            bad = [k for k, r in fused.items() if not readers.get(k, set()) <= keep
                   or any(id(d) in inside for d in deps[k])]     # g's own outputs
            if not bad:
                break
            for k in bad:
                del fused[k]
        if not fused:
            continue
        units = [u for h in groups for u in h.units if id(u.node) in fused]
        g.units[:0] = units          # topological order: groups are in order
        g.kind = "rows"
        absorbed |= set(fused)
    return [g for g in groups if not (g.kind == "reduce" and id(g.units[0].node) in absorbed)]


def _materialized_deps(node, mat):
    """Materialized (or input) nodes read by ``node``'s inlined expression."""
    deps, stack, seen = [], list(node.children()), set()
    while stack:
        c = stack.pop()
        if id(c) in seen:
            continue
        seen.add(id(c))
        if id(c) in mat or _is_input(c):
            deps.append(c)
        else:
            stack.extend(c.children())
    return deps


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
            if child is dep or (id(child) not in mat and not _is_input(child)
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
        if id(n) in seen or (id(n) in mat and n is not node) or _is_input(n):
            continue
        seen.add(id(n))
        stack.extend(n.children())
    return False


def _only_identity_reads(n, name, ident):
    import pymbolic.primitives as p
    from pymbolic.mapper import WalkMapper
    ok = [True]
    want = ident.index if isinstance(ident, p.Subscript) else ()

    class W(WalkMapper):
        def map_subscript(self, s, *a):
            if s.aggregate.name == name and tuple(s.index) != tuple(want):
                ok[0] = False
            self.rec(s.index)

        def map_variable(self, v, *a):
            pass

        def map_call(self, c, *a):
            for x in c.parameters:
                self.rec(x)

    W()(n.expr)
    return ok[0]
