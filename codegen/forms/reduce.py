"""Single-kernel reductions over a flattened view (``parts.reduction_spec``):
kept axes flattened to ``i`` (M outputs), reduced axes to ``j`` (length R).

* ``thread``: one work-item per output, a sequential loop over ``j``
  (coalesced across work-items when the reduced axis is not the contiguous one);
* ``group``: one work-group per output, a tree reduction in local memory;
* ``neutral``: an empty reduction writes NumPy's identity.

argmax/argmin are two standard reductions (``arg_stages``): the extremum,
then the first flat index whose value equals it (NaN-aware), so they get
the same parallel forms as every other reduction.
"""
from __future__ import annotations

import pymbolic.primitives as p
from loopy.symbolic import TypeCast

from ..cfuncs import storage_dtype
from ..lower import KernelBuilder, linearize
from ..policy import Form
from ..schedule import GroupReduce, WorkGroup
from .parts import body_at, write_result
from .reduction_ops import I64, reduction_expr


def single(asm, name, spec, choice):
    """A ``thread`` or ``group`` kernel."""
    kb = KernelBuilder(asm.plan, asm.buffers, ["i"])
    kb.analyze([spec["node"]])
    i, j = p.Variable("i"), p.Variable("j")
    red, acc_dt = reduction_expr(spec["op"], ("j",), body_at(kb, spec, i, j))
    write_result(kb, spec, i, red, acc_dt, ["i"])
    M, R = spec["M"], spec["R"]
    domain = f"{{[i, j]: 0 <= i < {M} and 0 <= j < {R}}}"
    if choice.form == Form.GROUP:
        steps = (GroupReduce("j", choice.params["size"]),)
    else:
        steps = (WorkGroup(choice.params["wg"]),)
    asm.finish(name, kb, [domain], {spec["out"]}, steps, choice.form, choice.rule)


def neutral(asm, name, spec, choice):
    """The identity of ``sum``/``prod``/``any``/``all`` in every output."""
    value = {"sum": 0, "prod": 1, "any": 0, "all": 1}[spec["op"]]
    kb = KernelBuilder(asm.plan, asm.buffers, ["i"])
    i = p.Variable("i")
    kb.assign(p.Subscript(p.Variable(spec["out"]), (i,)),
              storage_dtype(spec["out_dtype"]).type(value), ["i"])
    asm.finish(name, kb, [f"{{[i]: 0 <= i < {spec['M']}}}"], {spec["out"]},
               (WorkGroup(choice.params["wg"]),), choice.form, choice.rule)


def arg_stages(asm, name, spec, value_dtype):
    """argmax/argmin as ``[(name, spec)]`` of two reductions: the extremum
    into a new buffer, then the first index that holds it."""
    ext = spec["out"] + "_ext"
    asm.add_buffer(ext, spec["M"], value_dtype)
    value_of, R = spec["body"], spec["R"]

    def first_index(kb, kept, red, jflat):
        v, dt = value_of(kb, kept, red, jflat)
        mv = p.Subscript(p.Variable(ext), (linearize(kept, spec["kept_shape"]),))
        hit = p.Comparison(v, "==", mv)
        if dt.kind == "f":
            hit = p.LogicalOr((hit, p.LogicalAnd((p.Comparison(mv, "!=", mv),
                                                  p.Comparison(v, "!=", v)))))
        return p.If(hit, TypeCast(I64, jflat), I64.type(R)), I64
    return [(name + "_ext", dict(spec, op=spec["op"][3:], out=ext, out_dtype=value_dtype)),
            (name, dict(spec, op="min", body=first_index, out_dtype=I64))]
