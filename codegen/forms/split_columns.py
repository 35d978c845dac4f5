"""Split-column reductions: few outputs along the contiguous axes, a long
outer reduction.  C chunks of K rows of the reduced range per output,
work-items across outputs (coalesced), then a second kernel adds the C
partials per output.  The policy chooses C and K."""
from __future__ import annotations

import pymbolic.primitives as p

from ..lowering.builder import KernelBuilder
from ..lowering.index import pow2_floor
from ..policy import Form
from ..schedule import Split, Tag, WorkGroup
from .parts import body_at, combine
from .reduction_ops import hoist_nested_pairs, reduction_expr, result_buffers


def build(asm, name, spec, choice, epilogue=()):
    """Stage 1 (``<name>_c1``, partials) and the combine (``<name>_c2``).

    ``rows`` > 1 (few outputs, GPU): a work-group is ``rows`` x M work-items,
    item (r, i) reading output i's column at rows r, r + rows, ...: each
    step of the group reads ``rows`` whole consecutive rows, coalesced.
    ``block`` > 1: a work-item computes ``block`` consecutive outputs (a
    short contiguous kept axis) in registers."""
    M, R, op = spec["M"], spec["R"], spec["op"]
    C, K, lw = choice.params["C"], choice.params["K"], choice.params["wg"]
    rows = choice.params.get("rows", 1)
    inames = ["c", "r", "i"] if rows > 1 else ["c", "i"]
    kb = KernelBuilder(asm.plan, asm.buffers, inames)
    kb.analyze([spec["node"]])
    c, r, i, k = (p.Variable(x) for x in "crik")
    if rows > 1:        # row c*K*rows + k*rows + r
        j = p.Sum((p.Product((K * rows, c)), p.Product((rows, k)), r))
        slot = p.Sum((p.Product((rows, c)), r))
        bound = f"{K * rows} * c + {rows} * k + r < {R}"
    else:
        j, slot, bound = p.Sum((p.Product((K, c)), k)), c, f"{K} * c + k < {R}"
    red, acc_dt = reduction_expr(op, ("k",), body_at(kb, spec, i, j), (j, R))
    part = spec["out"] + "_part"
    slots = C * rows
    parts = result_buffers(part, acc_dt)
    for buf, dt in parts:
        asm.add_buffer(buf, slots * M, dt)
    kb.assign(tuple(p.Subscript(p.Variable(buf), (p.Sum((p.Product((M, slot)), i)),))
                    for buf, _ in parts), red, inames)
    box = f"0 <= c < {C} and 0 <= i < {M}" + (f" and 0 <= r < {rows}" if rows > 1 else "")
    # k's range depends on the outer loops (a nested domain): every partial
    # is stored, the neutral element where a chunk's range is empty (a
    # joint domain would skip those work-items, leaving partials unwritten)
    domains = [f"{{[{', '.join(inames)}]: {box}}}", f"{{[k]: 0 <= k < {K} and {bound}}}"]
    block = choice.params.get("block", 1)
    if rows > 1:
        steps = (Tag("c", "g.0"), Tag("r", "l.1"), Tag("i", "l.0"))
    elif block > 1:         # a work-item per ``block`` outputs, in registers
        steps = (Split("i", block, inner_tag="ilp"), WorkGroup(lw, "i_outer"), Tag("c", "g.1"))
    else:
        steps = (WorkGroup(lw), Tag("c", "g.1"))
    asm.finish(name + "_c1", kb, domains, {buf for buf, _ in parts}, steps, Form.SPLIT_COLUMNS,
               choice.rule, scheduled=hoist_nested_pairs)
    # few outputs of many partials: a work-group adds each output's partials
    form, wg = ((Form.COMBINE_GROUP, min(256, pow2_floor(slots))) if rows > 1
                else (Form.COMBINE_THREAD, lw))
    combine(asm, name + "_c2", spec, part, red.operation, acc_dt, slots,
            lambda i, j: p.Sum((p.Product((M, j)), i)), form, choice.rule, wg, epilogue)
