"""float64 matrix products on the FP64 tensor cores (CUDA, sm_80+): the
warp-level ``mma.sync.aligned.m8n8k4.row.col.f64`` instruction.

Why a form of its own: the register-tiled matmul (``forms/matmul.py``)
issues plain FP64 FMAs and reached 16 TFLOP/s at 2048^3 on an H100, where
cuBLAS's DGEMM, on the tensor cores, reached 54.  A DMMA multiplies an 8 x 4
by a 4 x 8 fragment held across the 32 lanes of a warp, so the work is laid
out by warps, not by work-items, which no schedule step expresses: this
builder fixes the loops itself and the kernel's schedule is empty.

* **Layout.** A work-group of ``warps`` warps (``l.1``; lanes ``l.0``)
  computes ``block_m`` x ``block_n`` outputs (``g.1``, ``g.0``; a batch on
  ``g.2``); warp ``w`` computes a ``warp_m`` x ``warp_n`` part as
  (warp_m/8) x (warp_n/8) fragments, 2 accumulators per lane each.
* **Tiles.** Per step of ``depth`` along K, every work-item copies its share
  of both operands' tiles into local memory, in the operand's own memory
  order (coalesced, a transposed operand read in place) with rows padded by
  4 doubles, so the fragment loads of a warp hit 16 distinct banks per
  half-warp either way.
* **Any size, convergence.** The 32 lanes of a warp must run each ``mma``
  together: the loops run over sizes padded to the tiles, the tile copies
  read 0 past M, N, K (``guard_reads``) and only the final store is
  predicated (``predicate_store``), as in ``forms/matmul.py`` (``parts``).
* **The instruction** is the helper ``pa_dmma_m8n8k4`` (``PaDmma``, one
  loopy call with two results); below sm_80 the helper computes the same
  fragment product with warp shuffles, so the source runs anywhere.
"""
from __future__ import annotations

import math

import loopy as lp
import numpy as np
import pymbolic.primitives as p
from loopy.kernel.function_interface import ScalarCallable
from loopy.types import NumpyType

from ..policy.classify import letter_sizes, parse_subscripts, read_buffer
from ..lowering.builder import KernelBuilder
from .parts import guard_reads, predicate_store

DMMA = "pa_dmma_m8n8k4"
FRAG_M, FRAG_N, FRAG_K = 8, 8, 4    # the instruction's shape
LANES = 32
PAD = 4                             # doubles per tile row: rows 4 banks apart

_DMMA_SOURCE = r"""__device__ static __forceinline__ double pa_dmma_m8n8k4(double a, double b,
    double c0, double c1, double *d1)
{
  /* D = A B + C for an 8 x 4 A and a 4 x 8 B across the warp: lane l holds
     A[l / 4][l % 4], B[l % 4][l / 4] and C[l / 4][2 (l % 4) + {0, 1}] */
#if __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};"
               : "+d"(c0), "+d"(c1) : "d"(a), "d"(b));
#else
  unsigned l;
  asm("mov.u32 %0, %%laneid;" : "=r"(l));
  for (unsigned k = 0; k < 4; ++k) {
    double ak = __shfl_sync(0xffffffffu, a, (l & ~3u) | k);
    c0 = fma(ak, __shfl_sync(0xffffffffu, b, (l & 3u) * 8u + k), c0);
    c1 = fma(ak, __shfl_sync(0xffffffffu, b, (l & 3u) * 8u + 4u + k), c1);
  }
#endif
  *d1 = c1;
  return c0;
}
"""


class PaDmma(ScalarCallable):
    """``pa_dmma_m8n8k4(a, b, c0, c1, &d1)`` returns d0: one DMMA on a
    lane's fragments (loopy passes the second result by pointer)."""

    def with_types(self, arg_id_to_dtype, clbl_inf_ctx):
        from constantdict import constantdict
        T = NumpyType(np.dtype(np.float64))
        return self.copy(arg_id_to_dtype=constantdict({k: T for k in (0, 1, 2, 3, -1, -2)}),
                         name_in_target=self.name), clbl_inf_ctx

    def generate_preambles(self, target):
        yield (f"50_{DMMA}", _DMMA_SOURCE)


def _emit(kb, lhs, rhs, within, id, depends_on=frozenset()):
    """One instruction with a fixed id (the builder states its dependencies)."""
    from loopy.kernel.instruction import make_assignment
    kb.instructions.append(make_assignment(lhs if isinstance(lhs, tuple) else (lhs,), rhs,
                                           id=id, within_inames=frozenset(within),
                                           depends_on=depends_on))


def build(asm, name, node, choice):
    """The kernel of float64 Einsum ``node`` (a matrix product)."""
    prm = choice.params
    BM, BN, WM, WN, BK = (prm[x] for x in ("block_m", "block_n", "warp_m", "warp_n", "depth"))
    Mp, Np, Kp = prm["pad"]
    sub = parse_subscripts(node.subscripts)
    size = letter_sizes(node)
    M, Nn, K = size[sub.i], size[sub.j], size[sub.k]
    nbatch = math.prod(size[c] for c in sub.batch)
    batched = bool(sub.batch)
    warps_n = BN // WN
    warps = (BM // WM) * warps_n
    threads = warps * LANES
    V = p.Variable
    b, gi, gj, w, lane, ko = (V(x) for x in ("b", "gi", "gj", "w", "lane", "ko"))
    kb = KernelBuilder(asm.plan, asm.buffers, [])
    outer = ("b",) * batched + ("gi", "gj", "w", "lane")
    bounds = {sub.i: M if Mp > M else None, sub.j: Nn if Np > Nn else None,
              sub.k: K if Kp > K else None}
    shapes, guards, args, tiles = {}, {}, [], {}
    start = {sub.i: gi * BM, sub.j: gj * BN, sub.k: ko * BK}
    extent = {sub.i: BM, sub.j: BN, sub.k: BK}
    for t, (o, letters) in enumerate(zip(node.operands, sub.ins)):
        src = read_buffer(o, asm.plan, asm.buffers)
        order = (letters if src is o else letters[::-1])[-2:]   # memory order of its last two
        arg = asm.buffers[id(src)]
        flat = (b,) if len(letters) > 2 else ()
        shapes[arg] = (nbatch,) * len(flat) + src.shape[-2:]
        if any(bounds[c] for c in order):
            guards[arg] = (None,) * len(flat) + tuple(bounds[c] for c in order)
        # copy: work-item f of every ``threads`` copies element f of the tile, row-major
        # in the operand's order (rows: order[0], contiguous: order[1])
        rows, cols = extent[order[0]], extent[order[1]]
        tile, u = f"{'ab'[t]}_tile", f"{'ab'[t]}u"
        f = p.Sum((p.Product((V(u), threads)), p.Product((w, LANES)), lane))
        r, c = p.FloorDiv(f, cols), p.Remainder(f, cols)
        kb.temporaries[tile] = lp.TemporaryVariable(
            tile, dtype=np.float64, shape=(rows, cols + PAD),
            address_space=lp.AddressSpace.LOCAL)
        _emit(kb, p.Subscript(V(tile), (r, c)),
                  p.Subscript(V(arg), flat + (start[order[0]] + r, start[order[1]] + c)),
                  outer + ("ko", u), id=f"fetch_{tile}")
        tiles[t] = (tile, order, u, rows * cols // threads)
        args.append(arg)

    # warp w's fragments: rows wm*WM + fi*8 + lane/4, columns wn*WN + fj*8 (+ lane/4
    # for B, 2*(lane%4) + h for C); k steps kk*4 + lane%4
    wm, wn = p.FloorDiv(w, warps_n), p.Remainder(w, warps_n)
    fi, fj, kk = V("fi"), V("fj"), V("kk")
    quad, pos = p.FloorDiv(lane, 4), p.Remainder(lane, 4)
    # (the loads run over loops of their own: the v2 scheduler wants one loop tree)
    at = {sub.i: wm * WM + V("la") * FRAG_M + quad, sub.j: wn * WN + V("lb") * FRAG_N + quad,
          sub.k: kk * FRAG_K + pos}
    frags = {}
    for t, loop in ((0, "la"), (1, "lb")):
        tile, order, _, _ = tiles[t]
        frag = f"{'ab'[t]}_frag"
        kb.temporaries[frag] = lp.TemporaryVariable(
            frag, dtype=np.float64, shape=((WM // FRAG_M) if t == 0 else (WN // FRAG_N),),
            address_space=lp.AddressSpace.PRIVATE)
        _emit(kb, p.Subscript(V(frag), (V(loop),)),
                  p.Subscript(V(tile), tuple(at[c] for c in order)),
                  outer + ("ko", "kk", loop), id=f"load_{frag}",
                  depends_on=frozenset({f"fetch_{tile}"}))
        frags[t] = p.Subscript(V(frag), ((fi, fj)[t],))
    acc = "acc"
    kb.temporaries[acc] = lp.TemporaryVariable(
        acc, dtype=np.float64, shape=(WM // FRAG_M, WN // FRAG_N, 2),
        address_space=lp.AddressSpace.PRIVATE)
    _emit(kb, p.Subscript(V(acc), (V("zi"), V("zj"), V("zh"))), np.float64(0),
              outer + ("zi", "zj", "zh"), id="acc_zero")
    c0, c1 = (p.Subscript(V(acc), (fi, fj, x)) for x in (0, 1))
    _emit(kb, (c0, c1), p.Call(V(DMMA), (frags[0], frags[1], c0, c1)),
              outer + ("ko", "kk", "fi", "fj"), id="dmma",
              depends_on=frozenset({"acc_zero", "load_a_frag", "load_b_frag"}))
    si, sj, sh = V("si"), V("sj"), V("sh")
    row = gi * BM + wm * WM + si * FRAG_M + quad
    col = gj * BN + wn * WN + sj * FRAG_N + 2 * pos + sh
    out = asm.buffers[id(node)]
    store_idx = (b,) * batched + (row, col)
    _emit(kb, p.Subscript(V(out), store_idx), p.Subscript(V(acc), (si, sj, sh)),
              outer + ("si", "sj", "sh"), id="store", depends_on=frozenset({"dmma"}))

    box = {"gi": Mp // BM, "gj": Np // BN, "w": warps, "lane": LANES, "ko": Kp // BK,
           "kk": BK // FRAG_K, "la": WM // FRAG_M, "lb": WN // FRAG_N, "fi": WM // FRAG_M, "fj": WN // FRAG_N,
           "zi": WM // FRAG_M, "zj": WN // FRAG_N, "zh": 2,
           "si": WM // FRAG_M, "sj": WN // FRAG_N, "sh": 2}
    if batched:
        box["b"] = nbatch
    for tile, _, u, per in tiles.values():
        box[u] = per
    domain = "{[%s]: %s}" % (", ".join(box), " and ".join(f"0 <= {x} < {n}"
                                                          for x, n in box.items()))
    tags = {"gi": "g.1", "gj": "g.0", "w": "l.1", "lane": "l.0", "au": "unr", "bu": "unr",
            "la": "unr", "lb": "unr", "fi": "unr", "fj": "unr", "zi": "unr", "zj": "unr", "zh": "unr",
            "si": "unr", "sj": "unr", "sh": "unr", "kk": "unr_hint"}
    if batched:
        tags["b"] = "g.2"

    def construct(knl):
        knl = lp.register_callable(knl, DMMA, PaDmma(DMMA))
        knl = lp.tag_inames(knl, tags)
        return lp.prioritize_loops(knl, "ko, kk, fi, fj")

    store_bounds = (None,) * batched + (bounds[sub.i], bounds[sub.j])
    asm.finish(name, kb, [domain], {out}, (), choice.form, choice.rule,
               shapes=dict(shapes, **{out: (nbatch,) * batched + (M, Nn)}),
               construct=construct, scheduled=lambda knl: guard_reads(knl, guards),
               preprocessed=(lambda kern: predicate_store(kern, out, store_bounds))
               if any(store_bounds) else None,
               facts={"M": M, "N": Nn, "K": K, "batch": nbatch if batched else 0,
                      "A": args[0], "B": args[1], "itemsize": 8})
