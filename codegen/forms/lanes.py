"""CPU reductions with the contiguous axis innermost: ``V`` lanes, each its
own accumulator, read ``V`` consecutive elements per step.  One accumulator
per work-item (the ``thread`` form) is a chain of dependent adds, one
element per add latency, and PoCL cannot vectorize across work-items that
each run a loop.  ``unroll``: the lane loop is unrolled (``ilp.unr``) and
the accumulators are registers, which LLVM's SLP vectorizer turns into
vector loads and adds; else it is a loop (``ilp.seq``) over a private array
in L1, which LLVM's loop vectorizer vectorizes (thousands of lanes).

* ``along="reduced"`` (the contiguous axis is reduced: row sums, full
  sums).  Lane ``l`` of output ``i`` reduces elements ``V*k + l`` of a
  chunk of ``K`` (a multiple of ``V``); the last ``R % V`` elements are a
  scalar tail, in the last chunk; the ``V`` (+ tail) lane values are
  then reduced in order.
* ``along="kept"`` (the contiguous axis is kept: column sums).  A task is
  ``V`` consecutive outputs along the input's last axis (of extent ``n``
  >= ``V``), each lane one output, every step one row of ``V`` contiguous
  elements.  A ragged last block starts at ``n - V`` instead, overlapping
  its neighbour: those outputs are computed twice, identically, and the
  loads stay contiguous with no condition in the loop.

A work-item runs ``P`` tasks (outputs, or blocks of outputs) one after the
other, so the policy sets the number of work-groups (one work-item each):
one for a small reduction (PoCL's second thread wakes tens of microseconds
late), several for a large one.  With ``C`` > 1 chunks of the reduced range
per task, the partials are combined by a second kernel (``COMBINE_THREAD``).
argmax/argmin reduce (value, index) pairs in the lanes as everywhere (the
pair combine is a total order: any lane split gives NumPy's index).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import loopy as lp
import numpy as np
import pymbolic.primitives as p
from loopy.symbolic import Reduction

from ..lowering.builder import KernelBuilder
from ..lowering.index import ceil_div, decompose
from ..policy import Form
from ..schedule import Tag
from .parts import body_at, combine, write_result
from .reduction_ops import reduction_expr, result_buffers

# 64-bit index arithmetic: with 32-bit indices each lane's address is an int sum
# sign-extended on its own, LLVM cannot prove the lanes consecutive, and the unrolled
# lanes stay scalar (row sums of 3000^2 f32 on one PoCL thread: 421 us per 375 rows,
# 87 us in 64 bits)
INDEX = np.dtype(np.int64)
OUTER = ("g", "s", "c")     # work-group, task within its work-item, chunk
LANE_TAGS = {"l": "ilp.unr", "l_sum": "unr"}       # registers
LOOPED_LANE_TAGS = {"l": "ilp.seq"}     # a private array in L1, an inner loop LLVM vectorizes
# a lane's sum longer than this many steps adds blocks (``lane_steps``); up to it
# (the chunks of large reductions) one accumulator rounds well within tolerance
BLOCK = 256


@dataclass(frozen=True)
class Lanes:
    """What an orientation built: ``tasks`` in all, each storing ``value``
    (a loopy expression of ``operation``) at flat output ``index`` within
    ``within``, after ``depends``; the loop domains under the outer ones."""
    tasks: int
    index: object
    value: object
    operation: object
    acc_dt: object
    within: tuple
    depends: tuple
    domains: tuple


def build(asm, name, spec, choice):
    """``<name>`` (``C`` == 1), or ``<name>_l1`` (partials) and ``<name>_l2``."""
    prm = choice.params
    M, C, P = spec["M"], prm["C"], prm["P"]
    kb = KernelBuilder(asm.plan, asm.buffers, list(OUTER))
    kb.analyze([spec["node"]])
    task = p.Sum((p.Product((P, p.Variable("g"))), p.Variable("s")))
    orient = _along_reduced if prm["along"] == "reduced" else _along_kept
    lanes = orient(kb, spec, prm, task)
    domains = [f"{{[g, s, c]: 0 <= g < {prm['G']} and 0 <= s < {P} and "
               f"{P} * g + s < {lanes.tasks} and 0 <= c < {C}}}", *lanes.domains]

    def construct(knl):
        present = knl.default_entrypoint.all_inames()
        tags = LANE_TAGS if prm["unroll"] else LOOPED_LANE_TAGS
        return lp.tag_inames(knl, {k: v for k, v in tags.items() if k in present})
    steps = (Tag("g", "g.0"), Tag("c", "g.1"))
    if C == 1:
        write_result(kb, spec, lanes.index, lanes.value, lanes.acc_dt, lanes.within,
                     lanes.depends)
        asm.finish(name, kb, domains, {spec["out"]}, steps, choice.form, choice.rule,
                   construct=construct, index_dtype=INDEX)
        return
    part = spec["out"] + "_part"
    parts = result_buffers(part, lanes.acc_dt)
    for buf, dt in parts:
        asm.add_buffer(buf, M * C, dt)
    at = p.Sum((p.Product((M, p.Variable("c"))), lanes.index))
    kb.assign(tuple(p.Subscript(p.Variable(buf), (at,)) for buf, _ in parts), lanes.value,
              lanes.within, lanes.depends)
    asm.finish(name + "_l1", kb, domains, {buf for buf, _ in parts}, steps, choice.form,
               choice.rule, construct=construct, index_dtype=INDEX)
    combine(asm, name + "_l2", spec, part, lanes.operation, lanes.acc_dt, C,
            lambda i, j: p.Sum((p.Product((M, j)), i)), Form.COMBINE_THREAD, choice.rule,
            prm["wg"])


def lane_temps(kb, acc_dt, n):
    """``at(x)``: element ``x`` of private arrays of ``n`` lane values (two
    arrays for a (value, index) pair)."""
    names = []
    for k, dt in enumerate(acc_dt if isinstance(acc_dt, tuple) else (acc_dt,)):
        nm = kb.fresh("lane_index" if k else "lane")
        kb.temporaries[nm] = lp.TemporaryVariable(nm, dtype=dt, shape=(n,),
                                                  address_space=lp.AddressSpace.PRIVATE)
        names.append(nm)

    def at(x):
        subs = tuple(p.Subscript(p.Variable(nm), (x,)) for nm in names)
        return subs if len(subs) > 1 else subs[0]
    return at


def lane_steps(op, k, n, reduce):
    """``op`` over the ``n`` steps of a lane: ``(reduction, accumulator
    dtype, {loop: extent}, step)``, where ``reduce(inames, step)`` is
    ``reduction_expr`` of the value at ``step`` (an expression of the loops,
    which a domain bounds by ``n``).  A sum of more than BLOCK steps adds
    blocks of about sqrt(n) steps, each summed apart: its rounding grows
    like 2 sqrt(n) adds, not n (NumPy sums pairwise; 16384 steps of 0.1f in
    one accumulator are 1.5e-4 off, float32's tolerance is 2e-5)."""
    if op != "sum" or n <= BLOCK:
        red, acc_dt = reduction_expr(*reduce((k,), p.Variable(k)))
        return red, acc_dt, {k: n}, p.Variable(k)
    size = 1 << math.ceil(math.log2(n) / 2)
    block = p.Variable(k + "_block")
    step = p.Sum((p.Product((size, block)), p.Variable(k)))
    inner, acc_dt = reduction_expr(*reduce((k,), step))
    return (Reduction(inner.operation, (block.name,), inner), acc_dt,
            {block.name: ceil_div(n, size), k: size}, step)


def _along_reduced(kb, spec, prm, task):
    """Lanes along the flat reduced index: output ``task``, chunk ``c``."""
    R, V, C, K = spec["R"], prm["V"], prm["C"], prm["K"]
    Kv, Rv, tail = K // V, R // V, R % V
    c, l, t = (p.Variable(x) for x in "clt")
    within = list(OUTER)

    def reduce(inames, k):
        j = p.Sum((p.Product((V, p.Sum((p.Product((Kv, c)), k)))), l))
        return spec["op"], inames, body_at(kb, spec, task, j), (j, R)
    red, acc_dt, steps, k = lane_steps(spec["op"], "k", Kv, reduce)
    at = lane_temps(kb, acc_dt, V + (tail > 0))
    deps = [kb.assign(at(l), red, within + ["l"])]
    domains = ["{[" + ", ".join([*steps, "l"]) + "]: " + " and ".join(
        f"0 <= {v} < {n}" for v, n in steps.items()) + f" and 0 <= l < {V} and "
        f"{k} < {Kv} and {Kv} * c + {k} < {Rv}}}"]
    if tail:            # the last R % V elements, in the last chunk
        jt = p.Sum((V * Rv, t))
        red_t, _ = reduction_expr(spec["op"], ("t",), body_at(kb, spec, task, jt), (jt, R))
        deps.append(kb.assign(at(V), red_t, within))
        domains.append(f"{{[t]: 0 <= t < {tail} and c >= {C - 1}}}")
    domains.append(f"{{[l_sum]: 0 <= l_sum < {V + (tail > 0)}}}")
    total = Reduction(red.operation, ("l_sum",), at(p.Variable("l_sum")))
    return Lanes(spec["M"], task, total, red.operation, acc_dt, tuple(within), tuple(deps),
                 tuple(domains))


def _along_kept(kb, spec, prm, task):
    """Lanes along the input's last axis, kept: ``V`` outputs per task."""
    R, V, K = spec["R"], prm["V"], prm["K"]
    kept_shape = spec["kept_shape"]
    n = kept_shape[-1]
    blocks = ceil_div(n, V)
    c, k, l = (p.Variable(x) for x in "ckl")
    outer = p.FloorDiv(task, blocks) if spec["M"] > n else 0
    start = p.Product((V, p.Remainder(task, blocks))) if blocks > 1 else 0
    if n % V:           # the last block overlaps its neighbour: loads stay contiguous
        start = p.If(p.Comparison(start, "<", n - V), start, n - V)
    last = p.Sum((start, l))
    j = p.Sum((p.Product((K, c)), k))
    kept = decompose(outer, kept_shape[:-1]) + (last,)
    red, acc_dt = reduction_expr(spec["op"], ("k",), spec["body"](
        kb, kept, decompose(j, spec["red_shape"]), j), (j, R))
    domains = (f"{{[l]: 0 <= l < {V}}}", f"{{[k]: 0 <= k < {K} and {K} * c + k < {R}}}")
    return Lanes((spec["M"] // n) * blocks, p.Sum((p.Product((n, outer)), last)), red,
                 red.operation, acc_dt, OUTER + ("l",), (), domains)
