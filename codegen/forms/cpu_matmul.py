"""Matrix products on CPUs, batched or not, of any size: both operands
packed into panels, then register blocks of vector accumulators.

* **Packing** (``<name>_pack_a``, ``<name>_pack_b``).  A is copied into
  panels of ``rows`` rows stored k-major (``Ap[ib, k, r]``), B into panels
  of ``vectors x lanes`` columns (``Bp[jb, k, v, l]``), zero past the real
  sizes.  So the product reads two contiguous streams whatever the
  operands' layout: a transposed operand (``x.T``), one buffer read twice
  (``x @ x.T``), ragged edges and broadcast batches are all handled here,
  in O(M K + K N), and the product's inner loop has no condition.  An
  unpacked B, rows N apart, ran at a third of the packed speed on PoCL.
* **The product** (``<name>``).  A work-item computes a ``rows`` x
  (``vectors`` x ``lanes``) block of C: ``rows x vectors`` accumulators of
  the device's vector width (``float8`` on AVX2), each k step one scalar of
  A per row times ``vectors`` vector loads of B.  The accumulators are
  explicit (not a loopy reduction) so that the k loop encloses the
  unrolled row and vector loops; the rows nest outside the vectors (the
  other order ran 6 x 16 blocks at 40 GFLOP/s instead of 89: LLVM then
  keeps more broadcasts live).  Integer lanes are a plain loop (their
  wrapping helpers are scalar functions).  The store is predicated to the
  real outputs, lane by lane.

The policy (``policy/rules.py``, "cpu: packed register tiles") picks ``rows``,
``vectors`` and ``lanes``; a batch runs on grid axis 2."""
from __future__ import annotations

import math

import loopy as lp
import numpy as np
import pymbolic.primitives as p

from ..emit.cfuncs import lower_call
from ..policy.classify import letter_sizes, parse_subscripts, read_buffer
from ..lowering.builder import KernelBuilder
from ..lowering.index import ceil_div
from ..policy import Form
from ..schedule import Tag
from .parts import product

# the loops of the accumulators' zeroing, update and store (rows, vectors, lanes)
ZERO, UPDATE, STORE = ("r_zero", "v_zero", "l_zero"), ("r", "v", "l"), ("r_out", "v_out", "l_out")


def build(asm, name, node, choice):
    """Kernels ``<name>_pack_a``, ``<name>_pack_b``, then ``<name>``."""
    sub = parse_subscripts(node.subscripts)
    size = letter_sizes(node)
    rows, vectors, lanes = (choice.params[x] for x in ("rows", "vectors", "lanes"))
    M, Nn, K = size[sub.i], size[sub.j], size[sub.k]
    batch = math.prod(size[c] for c in sub.batch) if sub.batch else 0
    out = asm.buffers[id(node)]
    packed = [_pack(asm, f"{name}_pack_{ab}", f"{out}_packed_{ab}", operand, letters,
                    (sub.k, kept), np.dtype(node.dtype), K, batch, width, bound, choice.rule)
              for ab, operand, letters, kept, width, bound in
              zip("ab", node.operands, sub.ins, (sub.i, sub.j), (rows, vectors * lanes), (M, Nn))]
    _product(asm, name, out, packed, np.dtype(node.dtype), (M, Nn, K), batch,
             (rows, vectors, lanes), choice)


def _pack(asm, name, buf, operand, letters, axes, dtype, K, batch, width, bound, rule):
    """Kernel ``name``: ``operand`` (A, or B) copied into ``buf``: panels of
    ``width`` of its rows (B: columns), each stored k-major, zero past
    ``bound``.  ``axes``: its contracted letter and its kept one.  Returns
    ``(buf, whether it has a batch axis)``."""
    src = read_buffer(operand, asm.plan, asm.buffers)
    order = letters if src is operand else letters[::-1]
    arg = asm.buffers[id(src)]
    batched = len(order) > 2
    panels = ceil_div(bound, width)
    inames = ["b"] * batched + ["panel", "k", "x"]
    b, panel, k, x = (p.Variable(n) for n in ("b", "panel", "k", "x"))
    at = p.Sum((p.Product((width, panel)), x))          # row of A / column of B
    env = dict(zip(axes, (k, at)))
    read = p.Subscript(p.Variable(arg), (b,) * batched + tuple(env[c] for c in order[-2:]))
    if panels * width > bound:
        read = p.If(p.Comparison(at, "<", bound), read, dtype.type(0))
    kb = KernelBuilder(asm.plan, asm.buffers, inames)
    shape = (batch,) * batched + (panels, K, width)
    asm.add_buffer(buf, math.prod(shape), dtype)
    kb.assign(p.Subscript(p.Variable(buf), (b,) * batched + (panel, k, x)), read, inames)
    box = [f"0 <= b < {batch}"] * batched + [f"0 <= panel < {panels}", f"0 <= k < {K}",
                                             f"0 <= x < {width}"]
    steps = (Tag("panel", "g.0"),) + ((Tag("b", "g.1"),) if batched else ())
    asm.finish(name, kb, [f"{{[{', '.join(inames)}]: {' and '.join(box)}}}"], {buf}, steps,
               Form.PACK, rule, shapes={arg: (batch,) * batched + src.shape[-2:], buf: shape})
    return buf, batched


def _product(asm, name, out, packed, dtype, sizes, batch, block, choice):
    """Kernel ``name``: ``out`` from the panels, a register block per work-item."""
    (Ap, a_batched), (Bp, b_batched) = packed
    (M, Nn, K), (rows, vectors, lanes) = sizes, block
    cols = vectors * lanes
    Mb, Nb = ceil_div(M, rows), ceil_div(Nn, cols)
    vectorized = dtype.kind == "f"
    inames = ["b"] * bool(batch) + ["ib", "jb"]
    kb = KernelBuilder(asm.plan, asm.buffers, inames)
    b, ib, jb, k = (p.Variable(x) for x in ("b", "ib", "jb", "k"))
    kb.temporaries["acc"] = lp.TemporaryVariable(
        "acc", dtype=dtype, shape=block, dim_tags="c,c,vec" if vectorized else "c,c,c",
        address_space=lp.AddressSpace.PRIVATE)

    def acc(names):
        return p.Subscript(p.Variable("acc"), tuple(p.Variable(x) for x in names))
    zero = kb.assign(acc(ZERO), dtype.type(0), inames + list(ZERO))
    r, v, l = (p.Variable(x) for x in UPDATE)
    a = p.Subscript(p.Variable(Ap), (b,) * a_batched + (ib, k, r))
    bv = p.Subscript(p.Variable(Bp), (b,) * b_batched + (jb, k, v, l))
    total, _ = lower_call("add", [(acc(UPDATE), dtype), (product(kb, [a, bv], dtype), dtype)],
                          kb.functions)
    update = kb.assign(acc(UPDATE), total, inames + ["k", *UPDATE], depends=[zero])
    ro, vo, lo = (p.Variable(x) for x in STORE)
    i = p.Sum((p.Product((rows, ib)), ro))
    j = p.Sum((p.Product((cols, jb)), p.Product((lanes, vo)), lo))
    bounds = frozenset(p.Comparison(x, "<", n) for x, n, padded
                       in ((i, M, Mb * rows), (j, Nn, Nb * cols)) if padded > n)
    kb.assign(p.Subscript(p.Variable(out), (b,) * bool(batch) + (i, j)), acc(STORE),
              inames + list(STORE), depends=[update], predicates=bounds)
    box = ([f"0 <= b < {batch}"] * bool(batch)
           + [f"0 <= ib < {Mb}", f"0 <= jb < {Nb}", f"0 <= k < {K}"]
           + [f"0 <= {x} < {n}" for names in (ZERO, UPDATE, STORE)
              for x, n in zip(names, block)])
    domain = f"{{[{', '.join(inames + ['k', *ZERO, *UPDATE, *STORE])}]: {' and '.join(box)}}}"
    b_shape = (batch,) * b_batched + (Nb, K, vectors, lanes)

    def construct(knl):
        """The register block: the k loop around the update's unrolled rows
        and vectors, the lanes vectorized (and stored one by one, so that
        the store can be predicated)."""
        tags = {x: "unr" for x in ZERO[:2] + UPDATE[:2]}
        if vectorized:
            tags.update({ZERO[2]: "vec", UPDATE[2]: "vec", STORE[2]: "unr"})
            knl = lp.tag_array_axes(knl, Bp, ",".join(["c"] * (len(b_shape) - 1) + ["vec"]))
        knl = lp.tag_inames(knl, tags)
        for names in (ZERO, ("k",) + UPDATE, STORE):
            knl = lp.prioritize_loops(knl, ",".join(names))
        return knl
    steps = (Tag("ib", "g.0"), Tag("jb", "g.1")) + ((Tag("b", "g.2"),) if batch else ())
    asm.finish(name, kb, [domain], {out}, steps, choice.form, choice.rule,
               shapes={Ap: (batch,) * a_batched + (Mb, K, rows), Bp: b_shape,
                       out: (batch,) * bool(batch) + (M, Nn)},
               construct=construct)
