"""Fused row kernels: reductions over the last axis and the elementwise
outputs that read them, one kernel (the row-fusion pass,
``passes/fuse_rows.py``, picks the groups).

Softmax, ``e = exp(x - max(x, -1)); e / sum(e, -1)``, is the model: per
row, a max, a sum of exponentials, then the quotient.  As separate kernels
this reads ``x`` three times from memory; here each row is read once from
memory and twice more from cache.

GPU: one work-group per row.  Each reduction is a strided loop per
work-item and a tree in local memory (``GroupReduce(.., over="")``); the
elementwise loop ``c`` is split the same way, so every work-item re-reads
exactly the addresses it loaded in the first pass (L1 hits).  A reduction
over work-items ends in work-item 0, so its result goes to a local-memory
scalar that the others read after a barrier (``parts.result_space``); with
one work-item per row it stays private.

CPU, or rows shorter than ``GROUP_ROW``: one work-item per row, sequential
passes over a row that stays in cache.  The policy picks which.

A group that would read a reduction at another row than its own cannot be
one kernel: the row-fusion pass sets it ``apart`` and the assembler builds
the reductions and the elementwise outputs separately, never calling ``build``.
"""
from __future__ import annotations

import math

import numpy as np
import pymbolic.primitives as p
from loopy.symbolic import TypeCast

from ..cfuncs import BOOL, U8, storage_dtype
from ..lower import KernelBuilder, decompose, linearize
from ..passes.data import Group
from ..policy import Form
from ..schedule import GroupReduce, Split, Tag, WorkGroup
from .parts import elementwise_body, reduction_spec, result_space
from .reduction_ops import reduction_expr


def split(group):
    """``(reductions, elementwise group)`` of a ``rows`` group."""
    reds = [u.node for u in group.units if u.kind == "reduce"]
    outs = Group([u for u in group.units if u.kind == "elementwise"], "elementwise",
                 group.size)
    return reds, outs


def build(asm, name, group, choice):
    """The fused kernel of a ``rows`` group (not ``apart``: the pass checked
    that it reads each reduction at its own row)."""
    reds, outs = split(group)
    shape = outs.units[0].node.shape
    M, R = math.prod(shape[:-1]), shape[-1]
    kb, loops, written = _build(asm, reds, outs, shape)
    domain = "{[" + ", ".join(loops) + f"]: 0 <= row < {M} and " + " and ".join(
        f"0 <= {v} < {R}" for v in loops[1:]) + "}"
    if choice.form == Form.ROWS_THREAD:
        steps = (WorkGroup(choice.params["wg"], "row"),)
    else:
        w, unroll = choice.params["w"], "unr" if choice.params["unroll"] else None
        steps = (Tag("row", "g.0"),)
        for j in loops[1:-1]:
            steps += (GroupReduce(j, w, over=""),) + ((Tag(f"{j}_outer", unroll),) if unroll
                                                      else ())
        steps += (Split("c", w, outer_tag=unroll, inner_tag="l.0"),)
    results = [kb.local[id(r)][0].name for r in reds]
    asm.finish(name, kb, [domain], written, steps, choice.form, choice.rule,
               scheduled=lambda knl: result_space(knl, results))


def _build(asm, reds, outs, shape):
    """The kernel's instructions: one per reduction (into a temporary,
    loop ``j<k>``), then the outputs (loop ``c``)."""
    rows = shape[:-1]
    kb = KernelBuilder(asm.plan, asm.buffers, ["row"])
    kb.kernel_local = frozenset(id(r) for r in reds)
    row = p.Variable("row")
    kept = decompose(row, rows)
    if rows:
        kb.flat[rows] = (row, kept)
    loops = ["row"]
    for k, r in enumerate(reds):
        j = f"j{k}"
        spec = reduction_spec(r)
        kb.analyze([r])
        red, acc_dt = reduction_expr(spec["op"], (j,), spec["body"](kb, kept, (p.Variable(j),),
                                                                     p.Variable(j)))
        out_dt = np.dtype(r.dtype)
        if out_dt == BOOL:
            red = TypeCast(U8, red)
        elif acc_dt != out_dt:
            red = TypeCast(storage_dtype(out_dt), red)
        kb.local[id(r)] = (kb.temp(red, out_dt, ["row"]), kept)
        loops.append(j)
    c = p.Variable("c")
    at = kept + (c,)
    written = elementwise_body(asm, kb, outs, linearize(at, shape), ["row", "c"],
                               axes=(shape, at))
    return kb, loops + ["c"], written
