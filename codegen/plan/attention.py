"""Attention chains found on a program's DAG: the nodes NumPy code builds
for ``softmax(scale(Q @ K^T)) @ V``,

    s = (q @ k.T) / 8.0                 # or * 0.125, 0.125 * ..., no scale
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    out = p @ v

become the kernels the policy chooses for the class ``Attention``
(``Form.FLASH_ATTENTION``: ``emit/attention_kernels.py``'s raw-kernel
nodes, which never store the scores) where every condition holds:

- two matrix products (``Einsum``, NumPy's precision), their operands in
  plain order (the keys may be ``K^T``'s buffer, a transposed read of K, or
  K itself read as rows), the same batch axes on every operand, no
  broadcasting;
- between them exactly the row softmax of the (scaled) scores: the scale is
  a real constant that multiplies or divides the product (or none), the
  maximum is the scores' along the last axis, subtracted from the scores
  themselves, ``exp`` of that, its sum along the same axis, the quotient;
- one dtype (float32 or float64) on every node;
- no node of the chain (the product, the scores, the maximum, the shifted
  scores, ``exp``, the sum, the probabilities, the broadcasts) read by
  anything outside it or returned: a value the user asks for is computed
  as written, and the chain then keeps today's kernels.

Anything else stays as it is.  The numpy target never sees this pass.
"""
from __future__ import annotations

import numbers

import numpy as np
from pymbolic.primitives import Call, Subscript, Variable

from polyarray.ir import nodes as N

from ..policy import choose
from ..policy.classify import Attention, parse_subscripts
from ..policy.rules import Form

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _idx(n) -> tuple:
    return tuple(Variable(f"_{i}") for i in range(n))


def _same_index(got, want) -> bool:
    if len(got) != len(want):
        return False
    for g, w in zip(got, want):
        if isinstance(w, Variable):
            if not (isinstance(g, Variable) and g.name == w.name):
                return False
        elif isinstance(g, Variable) or isinstance(g, bool) or not isinstance(g, numbers.Integral) \
                or g != w:
            return False
    return True


def _read(expr, lam, index):
    """The node ``lam`` binds where ``expr`` reads one of its bindings at
    exactly ``index``, else None."""
    if isinstance(expr, Subscript) and isinstance(expr.aggregate, Variable) \
            and _same_index(tuple(expr.index_tuple), index):
        return dict(lam.bindings).get(expr.aggregate.name)
    return None


def _call(node, name, arity):
    """The parameters of ``node``'s expression where it is the call
    ``name(...)`` of ``arity`` parameters, else None."""
    if not isinstance(node, N.IndexLambda):
        return None
    e = node.expr
    if isinstance(e, Call) and isinstance(e.function, Variable) and e.function.name == name \
            and len(e.parameters) == arity:
        return tuple(e.parameters)
    return None


def _row_stat(expr, lam, nd, op, array, chain):
    """Whether ``expr`` (in ``lam``) reads the ``op`` reduction of ``array``
    along its last axis, broadcast along that axis (``keepdims``, or the
    reduction read without the last index); adds its nodes to ``chain``."""
    full = _idx(nd - 1)
    b = _read(expr, lam, full + (0,))
    if isinstance(b, N.IndexLambda) and len(b.bindings) == 1 and b.shape == array.shape[:-1] + (1,):
        red = _read(b.expr, b, full)
        nodes = [b, red]
    else:
        red = _read(expr, lam, full)
        nodes = [red]
    if not (isinstance(red, N.Reduce) and red.op == op and red.array is array
            and tuple(red.axes) == (nd - 1,) and red.dtype == array.dtype):
        return False
    chain.extend(nodes)
    return True


def _scale(s, nd):
    """``(product node, scale op, scale)`` of the scores ``s``: the product
    times or divided by a real constant, or the product itself."""
    if isinstance(s, N.Einsum):
        return s, None, 1.0
    full = _idx(nd)
    for op in ("multiply", "divide"):
        args = _call(s, op, 2)
        if args is None:
            continue
        for x, c in ((args[0], args[1]), (args[1], args[0])) if op == "multiply" else (args,):
            raw = _read(x, s, full)
            if isinstance(raw, N.Einsum) and _real(c):
                return raw, op, c
    return None


def _real(c) -> bool:
    return isinstance(c, (numbers.Real, np.floating, np.integer)) and not isinstance(c, (bool,
                                                                                       np.bool_))


def _operands(einsum, nd):
    """``(left, right, right_transposed)`` of a batched matrix product with
    the same batch axes on both operands (``right_transposed``: the right
    operand's letters are ``j, k``), else None."""
    if not isinstance(einsum, N.Einsum) or len(einsum.operands) != 2 \
            or einsum.precision != "highest" or einsum.ndim != nd:
        return None
    sub = parse_subscripts(einsum.subscripts)
    if not sub.matmul or len(sub.batch) != nd - 2:
        return None
    a, b = sub.ins
    if a != sub.batch + sub.i + sub.k or sub.out != sub.batch + sub.i + sub.j:
        return None
    if b == sub.batch + sub.k + sub.j:
        return einsum.operands[0], einsum.operands[1], False
    if b == sub.batch + sub.j + sub.k:
        return einsum.operands[0], einsum.operands[1], True
    return None


def match(out):
    """The attention chain ending in ``out``: ``dict(q, k, kt, v, scale_op,
    scale, chain)`` (``chain``: its inner nodes, which nothing else may
    read), or None."""
    nd = out.ndim
    if nd < 2 or out.dtype not in _FLOATS:
        return None
    ops = _operands(out, nd)
    if ops is None or ops[2]:
        return None
    p, v, _ = ops
    full = _idx(nd)
    chain = [p]
    args = _call(p, "divide", 2)
    e = args and _read(args[0], p, full)
    if not (args and isinstance(e, N.IndexLambda) and _row_stat(args[1], p, nd, "sum", e, chain)):
        return None
    chain.append(e)
    args = _call(e, "exp", 1)
    shifted = args and _read(args[0], e, full)
    args = _call(shifted, "subtract", 2)
    s = args and _read(args[0], shifted, full)
    if not (args and s is not None and _row_stat(args[1], shifted, nd, "max", s, chain)):
        return None
    chain += [shifted, s]
    scaled = _scale(s, nd)
    if scaled is None:
        return None
    raw, scale_op, scale = scaled
    if raw is not s:
        chain.append(raw)
    ops = _operands(raw, nd)
    if ops is None:
        return None
    q, k, rows = ops
    kt = not rows
    if kt and isinstance(k, N.IndexLambda) and len(k.bindings) == 1:
        swapped = _idx(nd - 2) + (Variable(f"_{nd - 1}"), Variable(f"_{nd - 2}"))
        inner = _read(k.expr, k, swapped)
        if inner is not None and inner.shape == k.shape[:-2] + k.shape[:-3:-1]:
            k, kt = inner, False
    batch = out.shape[:-2]
    n, d = q.shape[-2:]
    m = raw.shape[-1]
    if q.shape[:-2] != batch or v.shape[:-2] != batch or k.shape[:-2] != batch \
            or k.shape[-2:] != ((d, m) if kt else (m, d)) or v.shape[-2] != m \
            or raw.shape != batch + (n, m):
        return None
    if any(x.dtype != out.dtype for x in chain + [q, k, v]):
        return None
    return dict(q=q, k=k, kt=kt, v=v, scale_op=scale_op, scale=scale, chain=chain)


def _class(found, out) -> Attention:
    q, v = found["q"], found["v"]
    n, d = q.shape[-2:]
    m, dv = v.shape[-2:]
    return Attention(int(np.prod(out.shape[:-2], dtype=np.int64)), n, m, d, dv, out.dtype.str)


def fused_attention(outputs, device, thresholds):
    """``(outputs, origin)``: ``outputs`` with each attention chain that the
    policy makes one kernel replaced by its kernels' nodes (the same list
    where there is none), and ``origin`` as ``kernel_calls`` gives it.
    O(N), no recursion."""
    if not device.flash_attention:
        return list(outputs), {}
    order = N.topological_order(outputs)
    if not any(isinstance(n, N.Einsum) for n in order):
        return list(outputs), {}
    uses = N.use_counts(order)
    returned = {id(o) for o in outputs}
    new = {}

    def get(n):
        return new.get(id(n), n)
    with N.collector_paused():
        for node in order:
            found = match(node) if isinstance(node, N.Einsum) else None
            if found is not None and _private(found, node, uses, returned):
                choice = choose(_class(found, node), device, thresholds)
                if choice.form == Form.FLASH_ATTENTION:
                    from ..emit.attention_kernels import attention_nodes
                    new[id(node)] = attention_nodes(
                        get(found["q"]), get(found["k"]), get(found["v"]), kt=found["kt"],
                        scale_op=found["scale_op"], scale=found["scale"], shape=node.shape,
                        **choice.params)
                    continue
            if any(id(c) in new for c in node.children()):
                new[id(node)] = N.remade(node, get)
    if not new:
        return list(outputs), {}
    from .kernel_calls import origins
    made = [get(o) for o in outputs]
    return made, origins(order, new, made)


def _private(found, out, uses, returned) -> bool:
    """Whether nothing outside the chain reads or returns its inner nodes:
    each is read by its one (two: the scores and ``exp``, by their row
    statistic too) consumer of the chain."""
    chain = found["chain"]
    readers = {id(n): 0 for n in chain}
    for n in chain + [out]:
        for c in set(map(id, n.children())):
            if c in readers:
                readers[c] += 1
    return all(id(n) not in returned and uses[id(n)] == readers[id(n)] for n in chain)
