"""Epilogues: an elementwise node that only transforms a matrix product's
or a reduction's result (``tanh(x @ W + b)``, ``sum(x) / n``, a training
step's ``w - lr * (X.T @ d)``) is computed in its store, so the result
itself is never written to memory and read back, and it costs no kernel.

An elementwise unit T joins the group of einsum or reduction E (as its
second unit) when
* T reads E only at its own index (every path from T to E is an
  identity-indexed elementwise read) and has E's shape;
* E is not an output and no other kernel reads it;
* T's other reads are inputs or results of kernels before E's;
* the policy computes E in a form that stores through an epilogue on this
  device: a tiled matmul (``policy.stores_through_epilogue``) or a
  reduction form of ``policy.EPILOGUE_FORMS`` (``assemble.epilogue_fusable``).
The builder then stores T, computed from the accumulated value.
"""
from __future__ import annotations

from polyarray.ir import nodes as N
from .data import is_input, materialized_deps
from .group import _reads_identity


def fuse_epilogues(groups, mat, outputs, fusable, order):
    """``groups`` with epilogue units moved into their einsum's group;
    ``fusable(einsum node)`` asks the policy."""
    group_of, readers = {}, {}
    for gi, g in enumerate(groups):
        for u in g.units:
            group_of[id(u.node)] = gi
            for d in materialized_deps(u.node, mat):
                readers.setdefault(id(d), []).append(u)
    out_ids = {id(o) for o in outputs}
    position = {id(n): k for k, n in enumerate(order)}
    moved = set()
    for gi, g in enumerate(groups):
        if g.kind not in ("einsum", "reduce") or len(g.units) != 1:
            continue
        e = g.units[0].node
        users = readers.get(id(e), [])
        if id(e) in out_ids or len(users) != 1:
            continue
        t = users[0]
        if (t.kind != "elementwise" or id(t.node) in moved or t.node.shape != e.shape
                or not isinstance(t.node, N.IndexLambda)
                or not _reads_identity(t.node, e, mat, position)
                or any(d is not e and not is_input(d) and group_of[id(d)] >= gi
                       for d in materialized_deps(t.node, mat))
                or not fusable(e)):
            continue
        groups[group_of[id(t.node)]].units.remove(t)
        g.units.append(t)
        moved.add(id(t.node))
    return [g for g in groups if g.units]
