"""Two-stage reductions (GPU): few outputs, long reductions.

G work-groups per output, each reduces a contiguous chunk (K coalesced
steps; a sequential loop per work-item, then a local-memory tree) to one
partial (where neighbouring values share work, random blocks, each step
is a run of neighbours per work-item); a second kernel reduces the G partials.  One partial per
work-group keeps the second stage tiny (one partial per work-item made it
17 us of 110 on an H100).  The policy chooses K and G (a CPU's long
reductions are ``lanes``)."""
from __future__ import annotations

import pymbolic.primitives as p
from loopy.symbolic import Reduction

from ..lowering.builder import KernelBuilder
from ..policy import Form
from ..schedule import Tag
from .parts import body_at, combine
from .reduction_ops import hoist_nested_pairs, reduction_expr, result_buffers


def build(asm, name, spec, choice, epilogue=()):
    """Stage 1 (``<name>_s1``, partials) and the combine (``<name>_s2``)."""
    M, R, op = spec["M"], spec["R"], spec["op"]
    prm = choice.params
    WG, K, G, run = prm["wg"], prm["K"], prm["G"], prm.get("run", 1)
    kb = KernelBuilder(asm.plan, asm.buffers, ["m", "g"])
    kb.analyze([spec["node"]])
    m, g, t, k, u = (p.Variable(v) for v in ("m", "g", "t", "k", "u"))
    part = spec["out"] + "_part"
    jflat = p.Sum((p.Product((WG, p.Sum((p.Product((K, g)), k)))), t))
    bound = f"{WG} * ({K} * g + k) + t < {R}"
    seq = ("k",)
    if run > 1:     # a run of neighbours per step (they share work: random blocks)
        jflat = p.Sum((p.Product((run, jflat)), u))
        bound = f"{run} * ({WG} * ({K} * g + k) + t) + u < {R} and 0 <= u < {run}"
        seq = ("k", "u")
    inner, acc_dt = reduction_expr(op, seq, body_at(kb, spec, m, jflat), (jflat, R))
    red = Reduction(inner.operation, ("t",), inner)
    lin = p.Sum((p.Product((G, m)), g))
    n_part, inames = G, ["m", "g"]
    parts = result_buffers(part, acc_dt)
    for buf, dt in parts:
        asm.add_buffer(buf, M * n_part, dt)
    kb.assign(tuple(p.Subscript(p.Variable(buf), (lin,)) for buf, _ in parts), red, inames)
    domain = (f"{{[m, g, t, k{', u' if run > 1 else ''}]: 0 <= m < {M} and 0 <= g < {G} "
              f"and 0 <= t < {WG} and 0 <= k < {K} and {bound}}}")
    steps = (Tag("g", "g.0"), Tag("t", "l.0"), Tag("m", "g.1"))
    if run > 1:
        steps += (Tag("u", "unr"),)
    asm.finish(name + "_s1", kb, [domain], {buf for buf, _ in parts}, steps, Form.TWO_STAGE,
               choice.rule, scheduled=hoist_nested_pairs)
    combine(asm, name + "_s2", spec, part, red.operation, acc_dt, n_part,
            lambda i, j: p.Sum((p.Product((n_part, i)), j)), Form.COMBINE_GROUP,
            choice.rule, WG, epilogue)
