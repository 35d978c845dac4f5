"""Elementwise kernels: one kernel for a group of same-sized outputs.

Layouts (``policy`` picks one; ``choice.params["layout"]``):

* ``flat``: one work-item per element of a flat index, in work-groups of
  ``wg`` (stores coalesced whatever the rank);
* ``ilp``: ``ilp`` coalesced elements per work-item, every direct input read
  fetched into registers before any store (enough loads in flight to reach
  copy bandwidth); ``contiguous``: a run of ``ilp`` neighbouring elements
  instead, lowered element by element with constant offsets, each value
  before any store: what neighbours share (a random block, the radius and
  angle of a pair of normals) is one expression, computed once;
* ``axes``: one loop per output axis, multi-dimensional reads (a user's
  ``Layout("axes")``; with ``rows``, the policy's stacked recurrence: a
  work-item per row, the columns unrolled, stores through local memory);
* ``transposed``: 2-D output reading a 2-D buffer transposed: tiles of the
  buffer fetched into padded local memory by rows, so both the reads and the
  stores are coalesced.
"""
from __future__ import annotations

import pymbolic.primitives as p

import loopy as lp

from ..lowering.builder import KernelBuilder
from ..lowering.index import ceil_div, linearize
from ..schedule import (ElementsPerItem, Layout, Prefetch, ScheduleError, Split,
                        StoreThroughLocal, Unroll, WorkGroup)
from ..schedule import read_indices
from .parts import elementwise_body


def build(asm, name, group, choice):
    """The kernel ``choice`` (an elementwise Choice) names."""
    params, form, rule = choice.params, choice.form, choice.rule
    layout = params["layout"]
    lifted = getattr(asm.plan, "lifted", None)
    if lifted is not None and lifted.extent:
        return _any_length(asm, name, group, lifted.extent)
    if layout == "ilp" and params.get("contiguous", False):
        return _run(asm, name, group, params["wg"], params["ilp"], rule)
    if layout == "ilp":
        return _ilp(asm, name, group, params["wg"], params["ilp"], rule)
    if layout == "transposed":
        return _transposed(asm, name, group, params, rule)
    if layout == "axes":
        kb, domain, written = axes_kernel(asm, name, group)
        steps = ()
        if params.get("rows"):          # a work-item per row (a stacked recurrence)
            steps = (WorkGroup(params["rows"], "i0"), Unroll("i1"), StoreThroughLocal())
        return asm.finish(name, kb, [domain], written, steps, form, rule,
                          shapes=kb.read_shapes, facts=facts(group))
    kb = KernelBuilder(asm.plan, asm.buffers, ["i"])
    written = elementwise_body(asm, kb, group, p.Variable("i"), ["i"],
                               outline=outlinable(asm.user_steps(name)))
    asm.finish(name, kb, [f"{{[i]: 0 <= i < {group.size}}}"], written,
               (WorkGroup(params["wg"]),), form, rule, facts=facts(group))


ANY_LENGTH_WG = 256     # work-items per group of a kernel whose length is an argument


def _any_length(asm, name, group, n):
    """The flat layout over a length passed as the integer argument ``n``
    (rows of another length each step: ``reuse.lift_offsets``)."""
    from ..policy import Form
    kb = KernelBuilder(asm.plan, asm.buffers, ["i"])
    written = elementwise_body(asm, kb, group, p.Variable("i"), ["i"],
                               outline=outlinable(asm.user_steps(name)))
    asm.finish(name, kb, [f"{{[i]: 0 <= i < {n}}}"], written, (WorkGroup(ANY_LENGTH_WG),),
               Form.ELEMENTWISE, "elementwise: the length an argument (rows of many lengths)",
               facts=facts(group))


def outlinable(user):
    """Whether a kernel's values may become one C function (``outline.py``):
    with the default schedule, or a user's of the steps a default is made of
    (a replayed ``prog.schedule``); other steps may rewrite expressions."""
    return user is None or all(
        isinstance(s, (WorkGroup, ElementsPerItem)) or (isinstance(s, Layout) and
                                                        s.kind == "flat") for s in user)


def facts(group):
    """What the tuner's candidates read: the outputs' size and shape."""
    return {"size": group.size, "shape": tuple(group.units[0].node.shape)}


def axes_kernel(asm, name, group):
    """The kernel over one loop per output axis (``i0``, ``i1``, ...),
    with multi-dimensional reads; returns (builder, domain, written)."""
    shape = group.units[0].node.shape
    if not shape:
        raise ScheduleError(f"Layout('axes') does not apply to kernel {name}: its "
                            "output is 0-d")
    names = [f"i{d}" for d in range(len(shape))]
    kb = KernelBuilder(asm.plan, asm.buffers, names)
    kb.multidim = True
    axes = tuple(p.Variable(v) for v in names)
    written = elementwise_body(asm, kb, group, linearize(axes, shape), names,
                               axes=(shape, axes))
    domain = "{[" + ", ".join(names) + "]: " + " and ".join(
        f"0 <= {v} < {n}" for v, n in zip(names, shape)) + "}"
    return kb, domain, written


def transposed_reads(asm, name, group):
    """The 2-D buffers that a 2-D group reads only at ``[i1, i0]`` (a fact
    for the policy: built once, on demand)."""
    if len(group.units[0].node.shape) != 2:
        return []
    # kept for the transposed form: building twice would register the body's
    # run-time checks twice
    kb, _, _ = asm.prebuilt[name] = axes_kernel(asm, name, group)
    i0, i1 = p.Variable("i0"), p.Variable("i1")
    reads = read_indices(kb.instructions)
    return sorted(b for b in kb.read_shapes if reads.get(b, set()) == {(i1, i0)})


def _transposed(asm, name, group, params, rule):
    """``tile`` x ``tile`` tiles on ``tile`` x ``tile / rows`` work-items
    (``rows`` rows each), each swapped buffer's tile fetched into padded
    local memory by rows."""
    from ..policy import Form
    kb, domain, written = asm.prebuilt.pop(name, None) or axes_kernel(asm, name, group)
    T, R = params["tile"], params["rows"]
    steps = (Layout("axes"), Split("i0", T, outer_tag="g.1"),
             Split("i0_inner", T // R, outer_tag="unr", inner_tag="l.1"),
             Split("i1", T, outer_tag="g.0", inner_tag="l.0")) + tuple(
        Prefetch(b, ("i0_inner_outer", "i0_inner_inner", "i1_inner"), pad=1)
        for b in params["swapped"])
    asm.finish(name, kb, [domain], written, steps, Form.ELEMENTWISE, rule,
               shapes=kb.read_shapes, facts=facts(group))


def _ilp(asm, name, group, wg, ilp, rule):
    """Work-item ``t`` of group ``g`` handles flat indices
    ``g*wg*ilp + u*wg + t`` for ``u < ilp`` (coalesced for each ``u``).
    Inputs read at the kernel's own index are loaded for all ``u`` first
    (loop ``uf``); a ragged last group clamps its reads to the last element
    and predicates its stores."""
    from ..policy import Form
    size = group.size
    G = ceil_div(size, wg * ilp)
    g, u, t, uf = (p.Variable(v) for v in ("g", "u", "t", "uf"))

    def flat(u):
        return p.Sum((p.Product((wg * ilp, g)), p.Product((wg, u)), t))
    raw = flat(u)
    ragged = size % (wg * ilp) != 0
    i = p.Min((raw, size - 1)) if ragged else raw
    kb = KernelBuilder(asm.plan, asm.buffers, ["g", "u", "t"])
    own = {asm.buffers[id(x.node)] for x in group.units}
    fetched = {}

    def fetch(buf):
        if buf in own:
            return None
        if buf not in fetched:
            tmp = f"{buf}_r"
            kb.temporaries[tmp] = lp.TemporaryVariable(
                tmp, dtype=asm.buffer_specs[buf][1], shape=(ilp,),
                address_space=lp.AddressSpace.PRIVATE)
            at = flat(uf)
            if ragged:
                at = p.Min((at, size - 1))
            kb.assign(p.Subscript(p.Variable(tmp), (uf,)),
                      p.Subscript(p.Variable(buf), (at,)), ["g", "uf", "t"])
            kb._tmp_writer[tmp] = kb.instructions[-1].id
            fetched[buf] = p.Subscript(p.Variable(tmp), (u,))
        return fetched[buf]
    kb.fetch_direct = fetch
    preds = [p.Comparison(raw, "<", size)] if ragged else []
    written = elementwise_body(asm, kb, group, i, ["g", "u", "t"], raw, preds,
                               outline=outlinable(asm.user_steps(name)))

    tags = {"g": "g.0", "t": "l.0", "u": "unr"}
    loops = ["g", "u", "t"]
    if fetched:
        tags["uf"] = "unr"
        loops.append("uf")
    domain = "{[" + ", ".join(loops) + f"]: 0 <= g < {G} and 0 <= u < {ilp} and " \
        f"0 <= t < {wg}" + (f" and 0 <= uf < {ilp}}}" if fetched else "}")
    asm.finish(name, kb, [domain], written, (ElementsPerItem(ilp, wg),), Form.ELEMENTWISE,
               rule, construct=lambda knl: lp.tag_inames(knl, tags), facts=facts(group))


def _run(asm, name, group, wg, ilp, rule):
    """Work-item ``t`` of group ``g`` handles the run of neighbours
    ``(g*wg + t)*ilp + u``, ``u < ilp``, each ``u`` lowered as a constant:
    the unsigned index folds (``lowering/unsigned_index.py``) make what
    neighbours share the same expression, one temporary
    (``share_equal``); the sine and cosine of one value come from one
    sincos (``paired_trig``); every value is computed before the run's
    stores.  A ragged last run clamps its reads and predicates its
    stores."""
    from ..policy import Form
    size = group.size
    G = ceil_div(size, wg * ilp)
    start = p.Product((ilp, p.Sum((p.Product((wg, p.Variable("g"))), p.Variable("t")))))
    ragged = size % (wg * ilp) != 0
    kb = KernelBuilder(asm.plan, asm.buffers, ["g", "t"])
    kb.share_equal = True
    kb.analyze([x.node for x in group.units])
    kb.sincos = kb.paired_trig()
    stores, written = [], set()
    for u in range(ilp):
        raw = p.Sum((start, u)) if u else start
        i = p.Min((raw, size - 1)) if ragged else raw
        preds = [p.Comparison(raw, "<", size)] if ragged else []
        written |= elementwise_body(asm, kb, group, i, ["g", "t"], raw, preds,
                                    stores=stores, analyze=False)
    values = frozenset(kb._tmp_writer[v.name] for _, v, _ in stores)
    for target, value, preds in stores:     # (each after every value: loopy's order)
        kb.assign(target, value, ["g", "t"], values, predicates=preds)
    asm.finish(name, kb, [f"{{[g, t]: 0 <= g < {G} and 0 <= t < {wg}}}"], written,
               (ElementsPerItem(ilp, wg, True),), Form.ELEMENTWISE, rule,
               construct=lambda knl: lp.tag_inames(knl, {"g": "g.0", "t": "l.0"}),
               facts=facts(group))
