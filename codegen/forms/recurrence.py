"""Recurrences (``ir.nodes.Recurrence``): rows computed in order.

One kernel: a work-item per element of a row (``i``, in work-groups of
``wg``: a row's elements are neighbours in memory, so every row's loads and
stores are coalesced) runs a loop over the rows.  The first ``lags`` rows
(``row_init``) are copied from ``init``; the rows they hold are loaded into
private registers ``lag1 .. lagK`` (``lagk``: the row ``k`` before), and
each later row (``row``) is computed from those registers, stored, and
shifted into them: the loop carries its values in registers, not through
memory.  The values a row reads from elsewhere are inlined, as an
elementwise kernel inlines them.
"""
from __future__ import annotations

import loopy as lp
import pymbolic.primitives as p

from polyarray.ir import nodes as N
from ..emit.cfuncs import storage_dtype
from ..lowering.builder import KernelBuilder, _ExprLowerer
from ..lowering.index import decompose
from ..schedule import WorkGroup


class _StepLowerer(_ExprLowerer):
    """A step's expression, its reads of earlier rows (``_self[_0 - k, ...]``)
    as the registers that hold them."""

    def map_subscript(self, s):
        if s.aggregate.name == N.Recurrence.SELF:
            row = s.index[0]                    # _0 - k (the pass made it so)
            return p.Variable(f"lag{-row.children[1]}"), self.env[N.Recurrence.SELF].dtype
        return super().map_subscript(s)


def build(asm, name, group, choice):
    node = group.units[0].node
    rows, lags = node.shape[0], node.lags
    size = node.size // rows if rows else 0
    kb = KernelBuilder(asm.plan, asm.buffers, ["i"])
    kb.analyze([node])
    i, r0, r = p.Variable("i"), p.Variable("row_init"), p.Variable("row")
    element = decompose(i, node.shape[1:])
    kb.flat[node.shape[1:]] = (i, element)
    out = asm.buffers[id(node)]
    sdt = storage_dtype(node.dtype)

    def at(row):
        return p.Subscript(p.Variable(out), (p.Sum((p.Product((size, row)), i)),))
    first, _ = kb.value(node.init, (r0,) + element, ["i", "row_init"])
    copied = kb.assign(at(r0), first, ["i", "row_init"])
    kb._memo.clear()            # values of the first loop are not in scope in the second
    kb._below.clear()
    for k in range(1, lags + 1):        # the rows the loop starts from, in registers
        reg = f"lag{k}"
        kb.temporaries[reg] = lp.TemporaryVariable(reg, dtype=sdt, shape=(),
                                                   address_space=lp.AddressSpace.PRIVATE)
        kb._tmp_writer[reg] = kb.assign(p.Variable(reg), at(lags - k), ["i"],
                                        depends=(copied,))
    env = dict(node.bindings)
    env[N.Recurrence.SELF] = node
    expr, dt = _StepLowerer(kb, (r,) + element, env, ["i", "row"], False).rec(node.expr)
    value = kb.temp(expr, dt, ["i", "row"])
    stored = kb.assign(at(r), value, ["i", "row"])
    shifted = kb._tmp_writer[value.name]
    for k in range(lags, 0, -1):        # lagK = lagK-1, ..., lag1 = the new row
        shifted = kb.assign(p.Variable(f"lag{k}"),
                            p.Variable(f"lag{k - 1}") if k > 1 else value, ["i", "row"],
                            depends=(shifted, stored))
    domain = (f"{{[i, row_init, row]: 0 <= i < {size} and 0 <= row_init < {lags} and "
              f"{lags} <= row < {rows}}}")
    asm.finish(name, kb, [domain], {out}, (WorkGroup(choice.params["wg"]),), choice.form,
               choice.rule, facts={"size": size, "rows": rows})
