"""Split-column reductions: few outputs along the contiguous axes, a long
outer reduction.  C chunks of K rows of the reduced range per output,
work-items across outputs (coalesced), then a second kernel adds the C
partials per output.  The policy chooses C and K."""
from __future__ import annotations

import pymbolic.primitives as p

from ..lower import KernelBuilder
from ..policy import Form
from ..schedule import Tag, WorkGroup
from .parts import body_at, combine
from .reduction_ops import reduction_expr


def build(asm, name, spec, choice):
    """Stage 1 (``<name>_c1``, partials) and the combine (``<name>_c2``)."""
    M, R, op = spec["M"], spec["R"], spec["op"]
    C, K, lw = choice.params["C"], choice.params["K"], choice.params["wg"]
    kb = KernelBuilder(asm.plan, asm.buffers, ["c", "i"])
    kb.analyze([spec["node"]])
    c, i, k = p.Variable("c"), p.Variable("i"), p.Variable("k")
    red, acc_dt = reduction_expr(op, ("k",), body_at(kb, spec, i, p.Sum((p.Product((K, c)), k))))
    part = spec["out"] + "_part"
    asm.add_buffer(part, C * M, acc_dt)
    kb.assign(p.Subscript(p.Variable(part), (p.Sum((p.Product((M, c)), i)),)), red,
              ["c", "i"])
    domain = (f"{{[c, i, k]: 0 <= c < {C} and 0 <= i < {M} and 0 <= k < {K} "
              f"and {K} * c + k < {R}}}")

    asm.finish(name + "_c1", kb, [domain], {part}, (WorkGroup(lw), Tag("c", "g.1")),
               Form.SPLIT_COLUMNS, choice.rule)
    combine(asm, name + "_c2", spec, part, red.operation, acc_dt, C,
            lambda i, j: p.Sum((p.Product((M, j)), i)), Form.COMBINE_THREAD, choice.rule, lw)
