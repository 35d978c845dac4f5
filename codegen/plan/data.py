"""The plan that the passes build and the later stages read: which nodes
are materialized, which kernel computes each of them, and which einsum
operands are read in place as a transposed buffer."""
from __future__ import annotations

from dataclasses import dataclass, field

from polyarray.ir import nodes as N


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
    apart: bool = False            # rows: its reductions and outputs are separate
    #                                kernels (one would read a reduction at another row)


class Materialized(set):
    """The ids of the materialized nodes, with ``stored``: id(v) -> (store,
    offset) for a computed node ``v`` that a materialized node ``store``
    holds unchanged (``v[q] == store[q + offset]``: a concatenation's piece,
    the value of ``x[a:b] = v``); and ``position``: id -> position in the
    topological order.  A kernel that runs after the store's reads ``v``
    from its buffer (``materialized_deps``, ``builder.KernelBuilder``), so a
    value written by ``x[1:-1] = v`` and read back as ``x[1:-1]`` is not
    computed again."""

    def __init__(self, ids=(), position=None):
        super().__init__(ids)
        self.stored = {}
        self.position = position or {}
        self.deps = None        # id(node) -> materialized_deps, once the set is final

    def freeze(self):
        """The set is final (``materialize`` has decided): what each node
        reads is computed once for the passes after it (grouping, row and
        epilogue fusion and assembly each ask for every node's; a program of
        2500 kernels spent a third of its plan walking them again)."""
        self.deps = {}


@dataclass
class Plan:
    order: list                # topological order of all nodes
    materialized: set          # id(node)
    groups: list               # [Group] in launch order
    outputs: list
    checks: list = field(default_factory=list)   # run-time checks (codegen.emit.runtime_checks)
    transposed: dict = field(default_factory=dict)  # id(einsum operand) -> buffer node it
    #                                                 transposes (read in place, not copied)
    group_of: dict = field(default_factory=dict)    # id(materialized node) -> its group
    building: int | None = None     # the group being lowered (set by lower_program):
    #                                 stored values of earlier groups are read from there


def is_input(node):
    return isinstance(node, (N.Placeholder, N.DataWrapper))


def materialized_deps(node, mat):
    """Materialized (or input) nodes read by ``node``'s inlined expression;
    a value stored by a materialized node before ``node`` (``Materialized``)
    is read from there."""
    known = getattr(mat, "deps", None)
    if known is not None:
        deps = known.get(id(node))
        if deps is None:
            deps = known[id(node)] = _materialized_deps(node, mat)
        return deps
    return _materialized_deps(node, mat)


def _materialized_deps(node, mat):
    stored = getattr(mat, "stored", None)
    at = mat.position.get(id(node)) if stored else None
    deps, stack, seen = [], list(node.children()), set()
    while stack:
        c = stack.pop()
        if id(c) in seen:
            continue
        seen.add(id(c))
        if id(c) in mat or is_input(c):
            deps.append(c)
            continue
        store = stored.get(id(c)) if at is not None else None
        if store is not None and store[0] is not node and mat.position[id(store[0])] < at:
            if id(store[0]) not in seen:
                seen.add(id(store[0]))
                deps.append(store[0])
            continue
        stack.extend(c.children())
    return deps
