"""The plan that the passes build and the later stages read: which nodes
are materialized, which kernel computes each of them, and which einsum
operands are read in place as a transposed buffer."""
from __future__ import annotations

from dataclasses import dataclass, field

from polyarray.codegen.ir import nodes as N


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


@dataclass
class Plan:
    order: list                # topological order of all nodes
    materialized: set          # id(node)
    groups: list               # [Group] in launch order
    outputs: list
    checks: list = field(default_factory=list)   # run-time checks (codegen.checks)
    transposed: dict = field(default_factory=dict)  # id(einsum operand) -> buffer node it
    #                                                 transposes (read in place, not copied)


def is_input(node):
    return isinstance(node, (N.Placeholder, N.DataWrapper))


def materialized_deps(node, mat):
    """Materialized (or input) nodes read by ``node``'s inlined expression."""
    deps, stack, seen = [], list(node.children()), set()
    while stack:
        c = stack.pop()
        if id(c) in seen:
            continue
        seen.add(id(c))
        if id(c) in mat or is_input(c):
            deps.append(c)
        else:
            stack.extend(c.children())
    return deps
