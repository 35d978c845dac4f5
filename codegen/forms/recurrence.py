"""Recurrences (``ir.nodes.Recurrence``): rows computed in order.

One kernel: a work-item per element of a row (``i``, in work-groups of
``wg``: a row's elements are neighbours in memory, so every row's loads and
stores are coalesced) runs a loop over the rows: the first
``lags`` rows (``row_init``: copied from ``init``) and then the others
(``row``), each row from the rows
before it, read back from the node's own buffer at the same element: the
same work-item wrote them, so no barrier is needed.  The values a row reads
from elsewhere are inlined, as an elementwise kernel inlines them.
"""
from __future__ import annotations

import pymbolic.primitives as p

from polyarray.codegen.ir import nodes as N
from ..lower import KernelBuilder, _ExprLowerer, decompose
from ..schedule import WorkGroup


def build(asm, name, group, choice):
    node = group.units[0].node
    rows, lags = node.shape[0], node.lags
    size = node.size // rows if rows else 0
    kb = KernelBuilder(asm.plan, asm.buffers, ["i"])
    kb.analyze([node])
    i, t0, t = p.Variable("i"), p.Variable("row_init"), p.Variable("row")
    element = decompose(i, node.shape[1:])
    kb.flat[node.shape[1:]] = (i, element)
    out = asm.buffers[id(node)]

    def at(row):
        return p.Subscript(p.Variable(out), (p.Sum((p.Product((size, row)), i)),))
    first, _ = kb.value(node.init, (t0,) + element, ["i", "row_init"])
    copied = kb.assign(at(t0), first, ["i", "row_init"])
    kb._memo.clear()            # values of the first loop are not in scope in the second
    kb._below.clear()
    env = dict(node.bindings)
    env[N.Recurrence.SELF] = node
    expr, _ = _ExprLowerer(kb, (t,) + element, env, ["i", "row"], False).rec(node.expr)
    kb.assign(at(t), expr, ["i", "row"], depends=(copied,))
    domain = (f"{{[i, row_init, row]: 0 <= i < {size} and 0 <= row_init < {lags} and "
              f"{lags} <= row < {rows}}}")
    asm.finish(name, kb, [domain], {out}, (WorkGroup(choice.params["wg"]),), choice.form,
               choice.rule, facts={"size": size, "rows": rows})
