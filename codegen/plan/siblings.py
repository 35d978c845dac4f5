"""Small contractions that share every operand but one: one batched
contraction, launched once.

NPBench's nbody computes each step's accelerations as three products,
``(G * (dx * inv_r3)) @ mass`` and its y and z twins, each (100, 100) @
(100, 1): a kernel launch each for 10^4 multiply-adds, three a step.  Here
the operands that differ are stacked along a new first axis (one buffer:
an einsum's operands are buffers anyway), the product is one einsum with
that axis as its batch, and each original product reads its slice.

Products are joined where each has at most ``SIBLING_MAX_WORK``
multiply-adds (launch-bound: a larger product fills the device alone), none
is an output of the program (a slice would be one more copy), and they are
independent: each einsum's contraction depth (the most einsums on a path
below it) is part of its key, and an einsum that reads another lies deeper.
So the rewrite makes no cycle; it walks the DAG twice and sorts it once.
"""
from __future__ import annotations

import pymbolic.primitives as p

from polyarray.ir import nodes as N
from polyarray.ir.expr import index_vars, variable

from .kernel_calls import origins

_LETTERS = "zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA"


def _work(e) -> int:
    """Multiply-adds of einsum ``e``: the product of its letters' extents."""
    ins = e.subscripts.split("->")[0].split(",")
    extent = {}
    for sub, op in zip(ins, e.operands):
        for letter, n in zip(sub, op.shape):
            extent[letter] = n
    work = 1
    for n in extent.values():
        work *= n
    return work


def _candidate(e, outputs, max_work) -> bool:
    return isinstance(e, N.Einsum) and id(e) not in outputs and len(e.operands) >= 2 \
        and "." not in e.subscripts and _work(e) <= max_work


def stacked_siblings(outputs, thresholds):
    """``(outputs, origin)``: ``outputs`` with each set of sibling
    contractions (see the module docstring) computed as one (the same list
    where there is none), and for each node made here the node it stands
    for (by id), as ``kernel_calls.lowered_kernel_calls`` gives."""
    order = N.topological_order(outputs)
    out_ids = {id(o) for o in outputs}
    max_work = thresholds.SIBLING_MAX_WORK
    if sum(1 for n in order if _candidate(n, out_ids, max_work)) < 2:
        return list(outputs), {}
    depth = {}              # id -> the most einsums on a path below the node
    sets = {}               # key -> [einsum, ...] in topological order
    for n in order:
        d = 0
        for c in n.children():
            d = max(d, depth[id(c)] + isinstance(c, N.Einsum))
        depth[id(n)] = d
        if not _candidate(n, out_ids, max_work):
            continue
        for k, op in enumerate(n.operands):
            rest = tuple(id(o) for j, o in enumerate(n.operands) if j != k)
            key = (n.subscripts, n.precision, n.dtype.str, n.shape, d, k, op.shape, rest)
            sets.setdefault(key, []).append(n)
    taken, group_of = set(), {}     # id(member) -> (its set, the operand that differs)
    for key, members in sorted(sets.items(), key=lambda kv: -len(kv[1])):
        members = [m for m in members if id(m) not in taken]
        if len(members) < 2:
            continue
        taken.update(id(m) for m in members)
        for m in members:
            group_of[id(m)] = (members, key[5])
    if not group_of:
        return list(outputs), {}
    # an order in which every member of a set comes after every operand of every
    # member of its set (a member's operands lie at its depth or less; its readers
    # deeper), so that a set's product is made when its first member is reached
    position = {id(n): k for k, n in enumerate(order)}
    ordered = sorted(order, key=lambda n: (depth[id(n)], id(n) in group_of, position[id(n)]))
    new = {}

    def get(n):
        return new.get(id(n), n)
    for node in ordered:
        if id(node) in new:
            continue
        if id(node) in group_of:
            members, k = group_of[id(node)]
            for m, view in zip(members, _stacked(members, k, get)):
                new[id(m)] = view
        elif any(id(c) in new for c in node.children()):
            new[id(node)] = N.remade(node, get)
    made = [get(o) for o in outputs]
    return made, origins(order, new, made)


def _stacked(members, k, get):
    """One einsum of ``members`` (which differ in operand ``k`` alone, each
    operand as ``get`` gives it), the differing operands stacked along a new
    first axis: each member's slice of its result."""
    first = members[0]
    ins, out = first.subscripts.split("->")
    letter = next(c for c in _LETTERS if c not in first.subscripts)
    subs = ins.split(",")
    subs[k] = letter + subs[k]
    count = len(members)
    op = first.operands[k]
    pieces = tuple(N.Reshape.make((1,) + op.shape, op.dtype, get(m.operands[k]))
                   for m in members)
    stack = N.Concatenate.make((count,) + op.shape, op.dtype, pieces, 0)
    operands = tuple(stack if j == k else get(o) for j, o in enumerate(first.operands))
    product = N.Einsum.make((count,) + first.shape, first.dtype,
                            ",".join(subs) + "->" + letter + out, operands, first.precision)
    idx = index_vars(first.ndim)
    return [N.IndexLambda.make(first.shape, first.dtype,
                               p.Subscript(variable("_in0"), (j,) + idx),
                               (("_in0", product),), "slice")
            for j in range(count)]
