"""Fused row kernels: reductions over the last axis and the elementwise
outputs that read them, one kernel (``plan._fuse_rows`` picks the groups).

Softmax, ``e = exp(x - max(x, -1)); e / sum(e, -1)``, is the model: per
row, a max, a sum of exponentials, then the quotient.  As separate kernels
this reads ``x`` three times from memory; here each row is read once from
memory and twice more from cache.

GPU: one work-group per row.  Each reduction is a strided loop per
work-item and a tree in local memory (``GroupReduce(.., over="")``); the
elementwise loop ``c`` is split the same way, so every work-item re-reads
exactly the addresses it loaded in the first pass (L1 hits).  A reduction
over work-items ends in work-item 0, so its result goes to a local-memory
scalar that the others read after a barrier (``_result_space``); with
one work-item per row it stays private.

CPU, or rows shorter than ``GROUP_ROW``: one work-item per row, sequential
passes over a row that stays in cache.
"""
from __future__ import annotations

import math

import numpy as np
import pymbolic.primitives as p
from loopy.symbolic import TypeCast

from .cfuncs import BOOL, U8, storage_dtype
from .lower import KernelBuilder, NotFusable, decompose, linearize, pow2_floor
from .plan import Group
from .schedule import GroupReduce, Split, Tag, WorkGroup

GROUP_ROW = 64          # rows at least this long get a work-group each (GPU)
# Work-group size and unrolling, measured on an H100 for softmax over (4096, 1024)
# float32 (read + write over copy bandwidth): 128 work-items with every pass
# unrolled 0.94; 256 unrolled 0.75; 256 not unrolled 0.75; 1024: 0.23.
# Smaller groups fit more rows per SM, unrolled passes keep 8 loads in flight.
ROW_GROUP = 128
ROW_UNROLL = 16         # unroll each pass when it has at most this many steps


def row_kernel(asm, name, group):
    """Build the fused kernel of a ``rows`` group on ``asm`` (an Assembler),
    or, when the group reads a reduction at another row than its own, the
    reductions and the elementwise kernel separately."""
    from .kernels import WG
    reds = [u.node for u in group.units if u.kind == "reduce"]
    outs = Group([u for u in group.units if u.kind == "elementwise"], "elementwise",
                  group.size)
    shape = outs.units[0].node.shape
    rows, R = shape[:-1], shape[-1]
    M = math.prod(rows)
    try:
        kb, loops, written = _build(asm, reds, outs, shape)
    except NotFusable:
        for k, r in enumerate(reds):
            asm.reduction(f"{name}_{k}{r.op}", r)
        return asm.elementwise(f"{name}_elementwise", outs)
    domain = "{[" + ", ".join(loops) + f"]: 0 <= row < {M} and " + " and ".join(
        f"0 <= {v} < {R}" for v in loops[1:]) + "}"
    if asm.cpu or R < GROUP_ROW:
        steps, strategy = (WorkGroup(min(WG, M), "row"),), "rows (thread)"
    else:
        w = min(ROW_GROUP, pow2_floor(R))
        unroll = "unr" if -(-R // w) <= ROW_UNROLL else None
        steps = (Tag("row", "g.0"),)
        for j in loops[1:-1]:
            steps += (GroupReduce(j, w, over=""),) + ((Tag(f"{j}_outer", unroll),) if unroll
                                                      else ())
        steps += (Split("c", w, outer_tag=unroll, inner_tag="l.0"),)
        strategy = "rows (group)"
    results = [kb.local[id(r)][0].name for r in reds]
    asm.finish(name, kb, [domain], written, steps, strategy,
               scheduled=lambda knl: _result_space(knl, results))


def _result_space(knl, results):
    """Put each reduction result in local memory if its reduction runs
    across work-items (only work-item 0 holds the result), else private."""
    import loopy as lp
    from loopy.kernel.data import LocalInameTagBase
    kern = knl.default_entrypoint
    local = {n for n, tags in ((n, kern.iname_tags(n)) for n in kern.all_inames())
             if any(isinstance(t, LocalInameTagBase) for t in tags)}
    temps = dict(kern.temporary_variables)
    shared = []
    for insn in kern.instructions:
        name, = insn.assignee_var_names()
        if name in results and set(insn.reduction_inames()) & local:
            temps[name] = temps[name].copy(address_space=lp.AddressSpace.LOCAL)
            shared.append(insn)
    kern = kern.copy(temporary_variables=temps)
    for insn in shared:     # loopy sees no race in a scalar: the barrier is explicit
        readers = [r.id for r in kern.instructions if insn.id in r.depends_on]
        if readers:
            kern = lp.add_barrier(kern, f"id:{insn.id}",
                                  " or ".join(f"id:{r}" for r in readers),
                                  synchronization_kind="local",
                                  within_inames=insn.within_inames)
    return knl.with_kernel(kern)


def _build(asm, reds, outs, shape):
    """The kernel's instructions: one per reduction (into a temporary,
    loop ``j<k>``), then the outputs (loop ``c``)."""
    from .kernels import _reduction_spec, reduction_expr
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
        spec = _reduction_spec(r)
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
    written = asm._elementwise_body(kb, outs, linearize(at, shape), ["row", "c"],
                                    axes=(shape, at))
    return kb, loops + ["c"], written
