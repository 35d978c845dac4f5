"""Tiled matrix products ``A @ B`` over loops i, j, k.

An operand that transposes a buffer (``x.T``) is read in place as
``x[k, i]``: the materialization pass recorded it (``plan.transposed``).
The policy picks the schedule: register tiles (``RegisterTile``: several
outputs per work-item, 16-byte shared loads) or 16 x 16 tiles with both
operands prefetched into local memory."""
from __future__ import annotations

import pymbolic.primitives as p

from ..classify import read_buffer
from ..lower import KernelBuilder
from ..schedule import Prefetch, RegisterTile, Split, Tile
from .parts import product
from .reduction_ops import reduction_expr


def build(asm, name, node, choice):
    (M, K), (_, Nn) = node.operands[0].shape, node.operands[1].shape
    i, j = p.Variable("i"), p.Variable("j")
    reads, shapes = [], {}
    for o, idx in zip(node.operands, ((i, p.Variable("k")), (p.Variable("k"), j))):
        src = read_buffer(o, asm.plan, asm.buffers)
        buf = asm.buffers[id(src)]
        reads.append(p.Subscript(p.Variable(buf), idx[::-1] if src is not o else idx))
        shapes[buf] = src.shape
    A, B = (r.aggregate.name for r in reads)
    out = asm.buffers[id(node)]
    kb = KernelBuilder(asm.plan, asm.buffers, ["i", "j"])
    kb.assign(p.Subscript(p.Variable(out), (i, j)),
              reduction_expr("sum", ("k",), (product(kb, reads, node.dtype), node.dtype))[0],
              ["i", "j"])
    domain = f"{{[i, j, k]: 0 <= i < {M} and 0 <= j < {Nn} and 0 <= k < {K}}}"
    asm.finish(name, kb, [domain], {out}, default_schedule(choice.params, A, B),
               choice.form, choice.rule, shapes=dict(shapes, **{out: (M, Nn)}))


def default_schedule(params, A, B):
    """The steps of the policy's matmul parameters, for operands ``A``, ``B``."""
    if params["schedule"] == "registers":
        return (RegisterTile(A, B, params["block"], params["threads"], params["depth"],
                             vector=params["vector"]),)
    t = params["tile"]
    return (Tile("i", "j", t, t), Split("k", t),
            Prefetch(A, ("i_inner", "k_inner")), Prefetch(B, ("k_inner", "j_inner")))
