"""Fused row kernels: reductions over the last axis and the elementwise
outputs that read them, one kernel (the row-fusion pass,
``plan/fuse_rows.py``, picks the groups).

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
passes over a row that stays in cache.  The policy picks which.  On a CPU
(``lanes``: V), each reduction runs in V accumulators, lane ``l`` reducing
elements ``V*k + l`` (the last ``R % V`` in one more), then the lanes are
reduced in order, as in the lanes form (``forms/lanes.py``): the adds of
the lanes are independent (one chain of dependent adds waits an add's
latency per element), and a float32 sum of R terms rounds like R / V
terms, not R (NumPy sums pairwise; a 4100-long row summed in one
accumulator missed its tolerance).  A float product keeps one accumulator:
NumPy multiplies in order, so that is its own rounding.

A group that would read a reduction at another row than its own cannot be
one kernel: the row-fusion pass sets it ``apart`` and the assembler builds
the reductions and the elementwise outputs separately, never calling ``build``.
"""
from __future__ import annotations

import math

import loopy as lp
import numpy as np
import pymbolic.primitives as p
from loopy.symbolic import Reduction, TypeCast

from ..emit.cfuncs import BOOL, U8, storage_dtype
from ..lowering.builder import KernelBuilder
from ..lowering.index import decompose, linearize
from ..plan.data import Group
from ..policy import Form
from ..schedule import GroupReduce, Split, Tag, WorkGroup
from .lanes import INDEX, lane_steps, lane_temps
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
    lanes = choice.params.get("lanes", 0)
    kb, loops, bounds, written = _build(asm, reds, outs, shape, lanes)
    domain = "{[" + ", ".join(loops) + "]: " + " and ".join(
        [f"0 <= {v} < {n}" for v, n in loops.items()] + bounds) + "}"
    if choice.form == Form.ROWS_THREAD:
        steps = (WorkGroup(choice.params["wg"], "row"),)
    else:
        w, unroll = choice.params["w"], "unr" if choice.params["unroll"] else None
        steps = (Tag("row", "g.0"),)
        for j in list(loops)[1:-1]:
            steps += (GroupReduce(j, w, over=""),) + ((Tag(f"{j}_outer", unroll),) if unroll
                                                      else ())
        steps += (Split("c", w, outer_tag=unroll, inner_tag="l.0"),)
    results = [kb.local[id(r)][0].name for r in reds]
    # the lanes a loop over a private array, which LLVM vectorizes: about as fast
    # as unrolled register lanes here (a 4096 x 1024 softmax on PoCL, both about 4x
    # faster than one accumulator), at under half their added build time (0.14 s)
    tags = {v: "ilp.seq" for v in loops if v.endswith("_lane")}
    asm.finish(name, kb, [domain], written, steps, choice.form, choice.rule,
               construct=lambda knl: lp.tag_inames(knl, tags) if tags else knl,
               scheduled=lambda knl: result_space(knl, results),
               index_dtype=INDEX if lanes else None)


def _build(asm, reds, outs, shape, V=0):
    """The kernel's instructions: one per reduction (into a temporary,
    loop ``j<k>``, or with V lanes ``j<k>_step``, ``j<k>_lane``...), then
    the outputs (loop ``c``); ``{loop: its length}`` and further bounds."""
    rows = shape[:-1]
    kb = KernelBuilder(asm.plan, asm.buffers, ["row"])
    kb.kernel_local = frozenset(id(r) for r in reds)
    row = p.Variable("row")
    kept = decompose(row, rows)
    if rows:
        kb.flat[rows] = (row, kept)
    loops, bounds = {"row": math.prod(rows)}, []
    for k, r in enumerate(reds):
        spec = reduction_spec(r)
        kb.analyze([r])

        def body(j, spec=spec):
            return spec["body"](kb, kept, (j,), j)
        # a float or complex product stays in NumPy's order (NumPy multiplies
        # sequentially; a complex product's NaNs depend on the order)
        if V and not (spec["op"] == "prod" and np.dtype(r.dtype).kind in "fc"):
            red, acc_dt, names, deps = _lanes(kb, spec["op"], body, f"j{k}", shape[-1], V,
                                              bounds)
        else:
            names, deps = {f"j{k}": shape[-1]}, ()
            red, acc_dt = reduction_expr(spec["op"], (f"j{k}",), body(p.Variable(f"j{k}")))
        out_dt = np.dtype(r.dtype)
        if out_dt == BOOL:
            red = TypeCast(U8, red)
        elif acc_dt != out_dt:
            red = TypeCast(storage_dtype(out_dt), red)
        kb.local[id(r)] = (kb.temp(red, out_dt, ["row"], deps), kept)
        loops.update(names)
    c = p.Variable("c")
    at = kept + (c,)
    written = elementwise_body(asm, kb, outs, linearize(at, shape), ["row", "c"],
                               axes=(shape, at))
    return kb, {**loops, "c": shape[-1]}, bounds, written


def _lanes(kb, op, body, j, R, V, bounds):
    """The reduction of ``body(j)`` over a row of R in V lanes (R >= V):
    ``(the lanes' values reduced, accumulator dtype, {loop: length},
    instructions the value waits for)``; appends to ``bounds``."""
    l, t, s = (p.Variable(f"{j}_{x}") for x in ("lane", "tail", "lanes"))
    red, acc_dt, loops, k = lane_steps(op, f"{j}_step", R // V, lambda inames, k: (
        op, inames, body(p.Sum((p.Product((V, k)), l)))))
    bounds.append(f"{k} < {R // V}")
    at = lane_temps(kb, acc_dt, V + (R % V > 0))
    deps = [kb.assign(at(l), red, ["row", l.name])]
    loops[l.name] = V
    if R % V:           # the last R % V elements, one more lane
        tail, _ = reduction_expr(op, (t.name,), body(p.Sum((V * (R // V), t))))
        deps.append(kb.assign(at(V), tail, ["row"]))
        loops[t.name] = R % V
    loops[s.name] = V + (R % V > 0)
    return Reduction(red.operation, (s.name,), at(s)), acc_dt, loops, deps
