"""Library calls (``pa.linalg``'s factorizations and solves, ``pa.fft``'s
transforms, and matrix products the policy gives the device's BLAS) in a
lowered program.

A call is a plan group of its own (``plan/group.py``), its inputs and
outputs materialized buffers.  Here it becomes a ``LibraryPlan`` beside the
Assembler's loopy kernels, in launch order, and then a ``KernelInfo`` of
the form the policy's row for it chose (``Form.HOST_LAPACK``, ``CUFFT``...): ``args`` are its input
buffers then its output buffers (a temporary for an output the DAG never
reads), ``facts`` say what the target calls (``op``, ``params``, the
outputs' shapes and dtypes).  It has no device code: the target runs it
between the kernels (``targets/library.py``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..policy.classify import (Call, letter_sizes, parse_subscripts, read_buffer,
                               stored_layout)
from ..policy import choose


@dataclass
class LibraryPlan:
    """What ``lower_program`` needs of one call (no ``tu``: no loopy kernel)."""
    name: str                   # k<group>_<op>: unique per call
    args: tuple                 # input buffers, then output buffers
    form: str
    rule: str
    facts: dict
    tu = None
    preprocessed = None

    def kernel_info(self, KernelInfo):
        """The call's ``KernelInfo`` (``KernelInfo``: codegen's class)."""
        return KernelInfo(self.name, self.args, (), (), self.form, rule=self.rule,
                          facts=self.facts)


def build(asm, name, group):
    """Append the ``LibraryPlan`` of ``group``'s call to ``asm.kernels``."""
    from ..schedule import ScheduleError
    node = group.units[0].node
    if name in asm.schedules:           # () replays prog.schedule
        asm.matched.add(name)
    if asm.schedules.get(name):
        raise ScheduleError(f"kernel {name} is a call of {node.op}: a library "
                            "routine, so it has no schedule")
    first = node.inputs[0]              # the dtype the routine computes in (eigh: not its w's)
    choice = choose(Call(node.op, first.dtype.str, tuple(first.shape)), asm.device,
                    asm.thresholds)
    outs = {u.node.index: asm.buffers[id(u.node)] for u in group.units}
    for index, (shape, dt) in enumerate(node.outputs):
        if index not in outs:           # computed, never read: a temporary
            outs[index] = f"{name}_out{index}"
            asm.add_buffer(outs[index], max(math.prod(shape), 1), np.dtype(dt))
    args = tuple(asm.buffers[id(a)] for a in node.inputs) + tuple(
        outs[i] for i in range(len(node.outputs)))
    facts = {"op": node.op, "params": node.params, "inputs": len(node.inputs),
             "input_specs": tuple((tuple(a.shape), a.dtype.str) for a in node.inputs),
             "outputs": node.outputs}
    asm.kernels.append(LibraryPlan(name, args, str(choice.form), choice.rule, facts))


def build_product(asm, name, node, choice, generated=None):
    """Append the ``LibraryPlan`` of Einsum ``node``, a matrix product the
    policy gave the device's BLAS (``Form.CUBLAS``): the call ``matmul`` of
    its operands' buffers as they are stored.  ``params`` say how:
    ``transpose_a`` (A stored as ``[k, i]``, not ``[i, k]``), ``transpose_b``
    (B as ``[j, k]``), ``batch_a``/``batch_b`` (the operand has the batch
    axes; else it is broadcast over them).  The output is C order
    ``[batch..., i, j]``.  ``generated``: the policy's choice for the same
    product under a user's schedule (a tiled matmul): its facts go with the
    call's, so that the tuner can time its schedules against the library."""
    sub = parse_subscripts(node.subscripts)
    size = letter_sizes(node)
    orders, specs, args = [], [], []
    for o, letters in zip(node.operands, sub.ins):
        src = read_buffer(o, asm.plan, asm.buffers)
        orders.append(letters if src is o else letters[::-1])    # as stored (x.T: reversed)
        specs.append((tuple(src.shape), src.dtype.str))
        args.append(asm.buffers[id(src)])
    facts = {"op": "matmul", "params": stored_layout(sub, orders), "inputs": 2,
             "input_specs": tuple(specs), "outputs": ((tuple(node.shape), node.dtype.str),),
             "M": size[sub.i], "N": size[sub.j], "K": size[sub.k],
             "batch": math.prod(size[c] for c in sub.batch),
             "precision": node.precision if node.dtype.itemsize == 4 else "highest"}
    if generated is not None and generated.form == "tiled matmul":
        split = generated.params.get("split", 1)
        # the tiled kernel's operands as its steps name them (the user's names;
        # the second an alias where both are one buffer)
        users = {c: u for u, c in asm._to_device_names().items()}
        facts["generated"] = {
            "A": users.get(args[0], args[0]),
            "B": args[1] + "_b" if args[1] == args[0] else users.get(args[1], args[1]),
            "M": facts["M"], "N": facts["N"], "K": facts["K"],
            "batch": facts["batch"] if sub.batch else 0, "split": split,
            "chunk": generated.params.get("chunk", facts["K"]), "itemsize": node.dtype.itemsize}
    asm.kernels.append(LibraryPlan(name, tuple(args) + (asm.buffers[id(node)],),
                                   str(choice.form), choice.rule, facts))
