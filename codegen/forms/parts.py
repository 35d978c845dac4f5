"""Pieces that several kernel forms share: the instructions of elementwise
outputs, the flattened view of a reduction, the store of a reduced value,
integer-safe products, the kernel that combines partials, and the guarded
reads and predicated store of matrix products of any size."""
from __future__ import annotations

import math

import loopy as lp
import numpy as np
import pymbolic.primitives as p
from loopy.symbolic import Reduction, TypeCast

from polyarray.ir import nodes as N
from ..emit.cfuncs import BOOL, U8, lower_call, storage_dtype
from ..policy.classify import letter_sizes, parse_subscripts
from ..lowering.builder import KernelBuilder
from ..lowering.index import decompose, interleave
from ..emit.pending import realize
from ..plan.data import materialized_deps
from ..policy import Form
from ..schedule import GroupReduce, WorkGroup
from .reduction_ops import hoist_nested_pairs, result_buffers


def elementwise_body(asm, kb, group, i, within, store_index=None, predicates=(), axes=None,
                     outline=False, stores=None, analyze=True):
    """Instructions writing every unit of ``group`` at flat index ``i``
    (``axes``: (shape, multi-index) of the same point); returns the
    buffers written.  ``outline``: a long chain of temporaries may become
    one C function (``outline.py``; only where no later step rewrites the
    expressions).  ``stores``: a list that takes ``(target, value,
    predicates)`` of each store, the value in a temporary, for the caller
    to store later (a run's elements: every value before any store);
    ``analyze``: False for the same units lowered again at another index."""
    start = len(kb.instructions)
    kb.deferring = outline      # records, until outlining takes them or declines
    if analyze:
        kb.analyze([u.node for u in group.units])
    later_deps = set()
    for u in group.units[1:]:
        later_deps |= {id(d) for d in materialized_deps(u.node, asm.plan.materialized)}
    for u in group.units:
        kb.flat[u.node.shape] = (i, decompose(i, u.node.shape))
    if axes is not None:
        kb.flat[axes[0]] = (i, axes[1])
    kb.prewarm({shape: v[1] for shape, v in kb.flat.items()}, within)
    written = set()
    for u in group.units:
        n = u.node
        expr, dt = kb.define(n, kb.flat[n.shape][1], within)
        if id(n) in later_deps:
            expr = kb.temp(expr, dt, within)
            kb.local[id(n)] = (expr, kb.flat[n.shape][1])
        buf = asm.buffers[id(n)]
        target = p.Subscript(p.Variable(buf), (store_index if store_index is not None else i,))
        if stores is not None:
            stores.append((target, kb.temp(expr, dt, within), frozenset(predicates)))
        else:
            kb.assign(target, expr, within, predicates=frozenset(predicates))
        written.add(buf)
    if outline:
        from ..emit.outline import outline as outline_region
        outline_region(asm, kb, start, within)
        realize(kb)
    return written


def product(kb, factors, dtype):
    """``factors[0] * factors[1] * ...``; integers through the wrapping
    helper (``cfuncs.wraps_in_helper``: NumPy wraps, C's overflow is UB),
    complex values through theirs."""
    if np.dtype(dtype).kind not in "iuc":
        return p.Product(tuple(factors))
    prod = factors[0]
    for f in factors[1:]:
        prod = lower_call("multiply", [(prod, dtype), (f, dtype)], kb.functions)[0]
    return prod


def reduction_spec(node, transposed=()):
    """Flattened view of a Reduce/Einsum: sizes, shapes and a body builder
    (``transposed``: ids of einsum operands read as a buffer transposed)."""
    if isinstance(node, N.Reduce):
        x = node.array
        axes = node.axes
        kept_shape = tuple(n for d, n in enumerate(x.shape) if d not in axes)
        red_shape = tuple(x.shape[d] for d in axes)
        inner = bool(x.ndim) and (x.ndim - 1) in axes

        def body(kb, kept, red, jflat):
            return kb.value(x, interleave(kept, red, axes, x.ndim), kb.inames, reducing=True)
        op = node.op
    else:
        sub = parse_subscripts(node.subscripts)
        ins, out, contracted = sub.ins, sub.out, sub.contracted
        sizes = letter_sizes(node)
        kept_shape = tuple(sizes[c] for c in out)
        red_shape = tuple(sizes[c] for c in contracted)
        # inner: the largest operand's contiguous axis is reduced (``A @ x``
        # reads rows of A; ``x @ A`` reads its columns)
        big = max(range(len(ins)), key=lambda t: (node.operands[t].size, -t))
        fastest = -1 if id(node.operands[big]) not in transposed else 0
        inner = bool(ins[big]) and ins[big][fastest] in contracted

        def body(kb, kept, red, jflat):
            env = dict(zip(out, kept))
            env.update(zip(contracted, red))
            factors = []
            for s, o in zip(ins, node.operands):
                e, _ = kb.value(o, tuple(env[c] for c in s), kb.inames, reducing=True)
                factors.append(e)
            if node.dtype == BOOL:
                return p.LogicalAnd(tuple(factors)), BOOL
            if len(factors) == 1:
                return factors[0], node.dtype
            return product(kb, factors, node.dtype), node.dtype
        op = "sum"
    M = math.prod(kept_shape)
    R = math.prod(red_shape)
    return {"M": M, "R": R, "kept_shape": kept_shape, "red_shape": red_shape,
            "inner": inner, "body": body, "op": op, "node": node}


def body_at(kb, spec, i_expr, j_expr):
    """Value of the reduction body at output ``i_expr``, flat index ``j_expr``."""
    kept = decompose(i_expr, spec["kept_shape"])
    red = decompose(j_expr, spec["red_shape"])
    return spec["body"](kb, kept, red, j_expr)


def write_result(kb, spec, lhs_index, red_expr, acc_dt, within, depends=(), epilogue=(),
                 buffers=None):
    """Store a reduced value in the output's storage dtype; of a (value,
    index) pair (argmax/argmin), the index (``depends``: instructions the
    store waits for).  ``epilogue``: one elementwise unit that reads the
    result only at its own index (``plan/epilogue.py``): the result goes
    to a temporary and the unit's value is stored instead, in its buffer
    (``buffers``: node id -> buffer name).  Returns the buffer written."""
    out = p.Subscript(p.Variable(spec["out"]), (lhs_index,))
    if isinstance(acc_dt, tuple):       # the value goes to a register nobody reads
        assert not epilogue, "an epilogue of an arg-reduction"
        value = kb.fresh("v")
        kb.temporaries[value] = lp.TemporaryVariable(
            value, dtype=acc_dt[0], shape=(), address_space=lp.AddressSpace.PRIVATE)
        kb.assign((p.Variable(value), out), red_expr, within, depends)
        return spec["out"]
    out_dt = np.dtype(spec["out_dtype"])
    res = red_expr
    if out_dt == BOOL:
        res = TypeCast(U8, red_expr)
    elif acc_dt != out_dt:
        res = TypeCast(storage_dtype(out_dt), red_expr)
    if epilogue:
        (unit,) = epilogue
        kept = decompose(lhs_index, spec["kept_shape"])
        kb.analyze([unit.node])
        kb.local[id(spec["node"])] = (kb.temp(res, out_dt, within, depends), kept)
        value, _ = kb.define(unit.node, kept, within)
        buf = buffers[id(unit.node)]
        kb.assign(p.Subscript(p.Variable(buf), (lhs_index,)), value, within)
        return buf
    kb.assign(out, res, within, depends)
    return spec["out"]


def epilogue_result(knl, epilogue):
    """After the schedule: a reduction result that an epilogue reads goes to
    local memory where the reduction runs across work-items (only work-item
    0 holds it), with a barrier before its readers (``result_space``); the
    store then runs on every work-item (the same value; loopy asks every
    instruction to use the kernel's local axes)."""
    if not epilogue:
        return knl
    kern = knl.default_entrypoint
    results = [n for n, t in kern.temporary_variables.items() if t.shape == ()
               and any(insn.reduction_inames() and n in insn.assignee_var_names()
                       for insn in kern.instructions)]
    import loopy as lp
    knl = result_space(knl, results)
    plain = [i.id for i in knl.default_entrypoint.instructions if not i.reduction_inames()]
    return lp.add_inames_for_unused_hw_axes(knl, " or ".join(f"id:{i}" for i in plain)) \
        if plain else knl


def result_space(knl, results):
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


def combine(asm, name, spec, part, operation, acc_dt, n, index, form, rule, wg, epilogue=()):
    """Reduce ``n`` partials per output (in the buffers
    ``result_buffers(part, acc_dt)``) with the first stage's ``operation``;
    ``index(i, j)`` locates one.  ``form``: COMBINE_GROUP
    (a work-group of ``wg`` per output) or COMBINE_THREAD; ``epilogue`` as
    for ``write_result``."""
    M = spec["M"]
    kb = KernelBuilder(asm.plan, asm.buffers, ["i"])
    i, j = p.Variable("i"), p.Variable("j")
    reads = tuple(p.Subscript(p.Variable(buf), (index(i, j),))
                  for buf, _ in result_buffers(part, acc_dt))
    red = Reduction(operation, ("j",), reads if len(reads) > 1 else reads[0])
    written = write_result(kb, spec, i, red, acc_dt, ["i"], epilogue=epilogue,
                           buffers=asm.buffers)
    steps = (GroupReduce("j", wg),) if form == Form.COMBINE_GROUP else (WorkGroup(wg),)
    asm.finish(name, kb, [f"{{[i, j]: 0 <= i < {M} and 0 <= j < {n}}}"],
               {written}, steps, form, rule,
               scheduled=lambda knl: epilogue_result(hoist_nested_pairs(knl), epilogue))


def guard_reads(knl, guards):
    """Reads of array ``name`` at an index past ``guards[name]`` (a bound
    per axis, None: unbounded) give 0: ``a[x, y]`` becomes
    ``x < M && y < K ? a[x, y] : 0`` wherever the kernel reads ``a`` (in
    its local-memory copies, after ``Prefetch``).  The 0 has ``a``'s dtype:
    an untyped one made loopy type ``uint64 ? : 0`` as double, rounding
    every uint64 product (fuzzer seeds 85 and 167)."""
    if not guards:
        return knl
    from loopy.symbolic import IdentityMapper
    kern = knl.default_entrypoint
    zero = {name: kern.arg_dict[name].dtype.numpy_dtype.type(0) for name in guards}

    class Guard(IdentityMapper):
        def map_subscript(self, expr, *args):
            name = getattr(expr.aggregate, "name", None)
            if name not in guards:
                return super().map_subscript(expr, *args)
            conds = tuple(p.Comparison(x, "<", n)
                          for x, n in zip(expr.index_tuple, guards[name]) if n is not None)
            return p.If(conds[0] if len(conds) == 1 else p.LogicalAnd(conds), expr, zero[name])

    guard = Guard()
    insns = [insn.copy(expression=guard(insn.expression)) for insn in kern.instructions]
    return knl.with_kernel(kern.copy(instructions=insns))


def predicate_store(kern, out, bounds):
    """Store ``out`` only where its index is below ``bounds`` (one per axis,
    None: unbounded).  Applied to the preprocessed kernel, whose reduction
    is realized: only the final store, not the accumulation, carries the
    condition."""
    insns = []
    for insn in kern.instructions:
        if out in insn.assignee_var_names():
            idx = insn.assignee.index_tuple
            insn = insn.copy(predicates=insn.predicates | frozenset(
                p.Comparison(x, "<", n) for x, n in zip(idx, bounds) if n is not None))
        insns.append(insn)
    return kern.copy(instructions=insns)
