"""Tiled matrix products of any size, batched or not: ``A @ B`` over loops
``b`` (the batch axes, flattened), ``i``, ``j`` and ``k``.

* **Reads.** Each operand is read in place from its buffer at its einsum
  letters; an operand that transposes a buffer (``x.T``, recorded by the
  materialization pass) or letters in the other order (``ki,kj->ij``) make
  a transposed read.  The kernel tells its schedule which operands are read
  transposed (``KernelContext.facts``), so the local tiles are laid out the
  same either way.  An operand without some batch letters is broadcast.
* **Ragged sizes.** The loops run over sizes padded to the policy's tile
  multiples (``params["pad"]``).  Reads outside an operand give 0 (guarded
  loads, in its local-memory copy), and the store is predicated to the real
  outputs after the accumulation, so the inner loop carries no condition.
* **One buffer twice** (``x @ x.T``): the second operand is a second kernel
  argument naming the same buffer (an alias), so each gets its own copy.

The policy picks the schedule: register tiles (``RegisterTile``: several
outputs per work-item, wide shared loads) or 16 x 16 tiles with both
operands prefetched into local memory; a batch runs on grid axis 2."""
from __future__ import annotations

import math

import pymbolic.primitives as p

from ..policy.classify import letter_sizes, parse_subscripts, read_buffer
from ..lowering.builder import KernelBuilder
from ..lowering.index import decompose
from ..schedule import Prefetch, RegisterTile, Split, Tag, Tile
from ..policy import Form
from .parts import combine, guard_reads, predicate_store, product
from .reduction_ops import reduction_expr


def build(asm, name, node, choice, epilogue=()):
    """The kernel(s) of Einsum ``node``; ``epilogue``: one elementwise unit
    to store instead of the product (``plan/epilogue.py``)."""
    sub = parse_subscripts(node.subscripts)
    size = letter_sizes(node)
    M, Nn, K = size[sub.i], size[sub.j], size[sub.k]
    split = choice.params.get("split", 1)       # split-K: chunks of K on grid axis 2
    user = asm.user_steps(name)
    Mp, Np, Kp = choice.params["pad"] if user is None else padded_for(user, M, Nn, K)
    if split > 1:
        Kp = choice.params["chunk"]
    nbatch = math.prod(size[c] for c in sub.batch)     # 1 without batch axes
    # the b loop: split-K's chunks (the policy splits only products of one batch),
    # else the batch, if any
    batch = split if split > 1 else nbatch if sub.batch else 0
    b, i, j, k = (p.Variable(x) for x in "bijk")
    env = {sub.i: i, sub.j: j, sub.k: k if split == 1 else p.Sum((p.Product((Kp, b)), k))}
    bound = {sub.i: M if Mp > M else None, sub.j: Nn if Np > Nn else None,
             sub.k: K if max(split, 1) * Kp > K else None}
    reads, shapes, guards, aliases, args, orders = [], {}, {}, {}, [], []
    for t, (o, letters) in enumerate(zip(node.operands, sub.ins)):
        src = read_buffer(o, asm.plan, asm.buffers)
        order = letters if src is o else letters[::-1]
        orders.append(order)
        arg = buf = asm.buffers[id(src)]
        if t == 1 and buf == args[0]:
            arg = f"{buf}_b"
            aliases[arg] = buf
        args.append(arg)
        # its batch axes (all or none: parse_subscripts) as one flat axis
        flat = ((b if split == 1 else 0),) if len(order) > 2 else ()
        reads.append(p.Subscript(p.Variable(arg), flat + tuple(env[c] for c in order[-2:])))
        shapes[arg] = (nbatch,) * len(flat) + src.shape[-2:]
        if any(bound.get(c) for c in order[-2:]):
            guards[arg] = (None,) * len(flat) + tuple(bound.get(c) for c in order[-2:])
    A, B = args
    # A[k, i] and B[j, k] are read transposed: their local copies are stored
    # the other way round (RegisterTile)
    transposed = {arg for arg, order, k_at in zip(args, orders, (-2, -1))
                  if order[k_at] == sub.k}
    out = asm.buffers[id(node)]
    inames = ["b"] * bool(batch) + ["i", "j"]
    kb = KernelBuilder(asm.plan, asm.buffers, inames)
    red, acc_dt = reduction_expr("sum", ("k",), (product(kb, reads, node.dtype), node.dtype))
    store = out
    if epilogue:            # store tanh(x @ W + b), not x @ W
        (unit,) = epilogue
        idx = tuple(decompose(b, tuple(size[c] for c in sub.batch))) + (i, j)
        kb.analyze([unit.node])
        kb.local[id(node)] = (kb.temp(red, acc_dt, inames), idx)
        red, _ = kb.define(unit.node, idx, inames)
        red = _flat_operand_reads(asm, kb, red, {aliases.get(a, a) for a in args}, aliases,
                                  shapes)
        store = asm.buffers[id(unit.node)]
    if split > 1:           # partials[s, i, j], then a kernel adds them
        store = out + "_part"
        asm.add_buffer(store, split * M * Nn, acc_dt)
    kb.assign(p.Subscript(p.Variable(store), (b,) * bool(batch) + (i, j)), red, inames)
    box = [f"0 <= b < {batch}"] * bool(batch) + [f"0 <= i < {Mp}", f"0 <= j < {Np}",
                                                   f"0 <= k < {Kp}"]
    domain = f"{{[{', '.join(inames + ['k'])}]: {' and '.join(box)}}}"
    store_bounds = (None,) * bool(batch) + (bound[sub.i], bound[sub.j])

    def predicated(kern):
        return predicate_store(kern, store, store_bounds)
    steps = default_schedule(choice.params, A, B)
    if batch:               # first: the copies then run in every batch's work-groups
        steps = (Tag("b", "g.2"),) + steps
    asm.finish(name, kb, [domain], {store}, steps, choice.form, choice.rule,
               shapes=dict(shapes, **{store: (batch,) * bool(batch) + (M, Nn)}),
               scheduled=lambda knl: guard_reads(knl, guards), aliases=aliases,
               preprocessed=predicated if any(store_bounds) else None,
               facts={"transposed": frozenset(transposed), "M": M, "N": Nn, "K": K,
                      "batch": nbatch if sub.batch else 0, "split": max(split, 1),
                      "chunk": Kp if split > 1 else K, "A": A, "B": B,
                      "itemsize": node.dtype.itemsize})
    if split > 1:
        spec = {"M": M * Nn, "out": out, "out_dtype": node.dtype}
        combine(asm, name + "_combine", spec, store, red.operation, acc_dt, split,
                lambda i, j: p.Sum((p.Product((M * Nn, j)), i)), Form.COMBINE_THREAD,
                choice.rule, min(256, M * Nn))


def _flat_operand_reads(asm, kb, expr, operands, aliases, shapes):
    """The product reads its operands as 2-D (3-D) arrays, an epilogue
    reads buffers at flat indices (``x @ W + x``): its reads of an operand
    go through a flat alias argument ``<buf>_e`` naming the same buffer."""
    from loopy.symbolic import IdentityMapper

    class Flat(IdentityMapper):
        def map_subscript(self, e, *args):
            name = getattr(e.aggregate, "name", None)
            if name in operands and len(e.index_tuple) == 1:
                alias = f"{name}_e"
                aliases[alias], shapes[alias] = name, (asm.buffer_specs[name][0],)
                return p.Subscript(p.Variable(alias), self.rec(e.index, *args))
            return super().map_subscript(e, *args)

    flat = Flat()
    kb.instructions = [insn.copy(expression=flat(insn.expression)) for insn in kb.instructions]
    return flat(expr)


def padded_for(steps, M, N, K):
    """Loop sizes for a user's schedule: M, N, K rounded up to the tiles its
    steps name (``RegisterTile``, ``Tile``, ``Split``), so that a tile
    never straddles the end of a loop (the edges are guarded, not split)."""
    tile = {"i": 1, "j": 1, "k": 1}
    for s in steps:
        if isinstance(s, RegisterTile):
            sizes = {"i": s.block, "j": s.block_j or s.block, "k": s.depth}
        elif isinstance(s, Tile):
            sizes = {s.i: s.fi, s.j: s.fj}
        elif isinstance(s, Split):
            sizes = {s.iname: s.factor}
        else:
            continue
        for x, f in sizes.items():
            if x in tile and isinstance(f, int) and f > 0:
                tile[x] = math.lcm(tile[x], f)
    return tuple(-(-n // tile[x]) * tile[x] for x, n in zip("ijk", (M, N, K)))


def default_schedule(params, A, B):
    """The steps of the policy's matmul parameters, for operands ``A``, ``B``."""
    if params["schedule"] == "registers":
        block_j = params.get("block_j", params["block"])
        return (RegisterTile(A, B, params["block"], params["threads"], params["depth"],
                             vector=params["vector"],
                             block_j=0 if block_j == params["block"] else block_j),)
    t = params["tile"]
    return (Tile("i", "j", t, t), Split("k", t),
            Prefetch(A, ("i_inner", "k_inner")), Prefetch(B, ("k_inner", "j_inner")))
