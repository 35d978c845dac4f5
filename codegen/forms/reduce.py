"""Single-kernel reductions over a flattened view (``parts.reduction_spec``):
kept axes flattened to ``i`` (M outputs), reduced axes to ``j`` (length R).

* ``thread``: one work-item per output, a sequential loop over ``j``
  (coalesced across work-items when the reduced axis is not the contiguous one);
* ``group``: one work-group per output, a tree reduction in local memory;
* ``neutral``: an empty reduction writes NumPy's identity.

argmax/argmin reduce (value, index) pairs in one pass
(``reduction_ops.PaArgExtremum``), in these forms and the two-stage and
split-column ones alike.
"""
from __future__ import annotations

import pymbolic.primitives as p

from ..emit.cfuncs import storage_dtype
from ..lowering.builder import IDENTITY, KernelBuilder
from ..policy import Form
from ..schedule import GroupReduce, WorkGroup
from .parts import body_at, epilogue_result, write_result
from ..user_functions import identity_call, is_user_reduce
from .reduction_ops import hoist_nested_pairs, reduction_expr


def single(asm, name, spec, choice, epilogue=()):
    """A ``thread`` or ``group`` kernel; ``epilogue``: an elementwise unit
    stored instead of the result (``parts.write_result``)."""
    kb = KernelBuilder(asm.plan, asm.buffers, ["i"])
    kb.analyze([spec["node"]])
    i, j = p.Variable("i"), p.Variable("j")
    M, R = spec["M"], spec["R"]
    red, acc_dt = reduction_expr(spec["op"], ("j",), body_at(kb, spec, i, j), (j, R))
    written = write_result(kb, spec, i, red, acc_dt, ["i"], epilogue=epilogue,
                           buffers=asm.buffers)
    domain = f"{{[i, j]: 0 <= i < {M} and 0 <= j < {R}}}"
    if choice.form == Form.GROUP:
        steps = (GroupReduce("j", choice.params["size"]),)
    else:
        steps = (WorkGroup(choice.params["wg"]),)
    asm.finish(name, kb, [domain], {written}, steps, choice.form, choice.rule,
               scheduled=lambda knl: epilogue_result(hoist_nested_pairs(knl), epilogue))


def neutral(asm, name, spec, choice):
    """The identity of ``sum``/``prod``/``any``/``all`` in every output."""
    kb = KernelBuilder(asm.plan, asm.buffers, ["i"])
    if is_user_reduce(spec["op"]):      # a custom reduction's identity
        value = identity_call(spec["op"], kb.functions)
    else:
        value = storage_dtype(spec["out_dtype"]).type(IDENTITY[spec["op"]])
    i = p.Variable("i")
    kb.assign(p.Subscript(p.Variable(spec["out"]), (i,)), value, ["i"])
    asm.finish(name, kb, [f"{{[i]: 0 <= i < {spec['M']}}}"], {spec["out"]},
               (WorkGroup(choice.params["wg"]),), choice.form, choice.rule)
