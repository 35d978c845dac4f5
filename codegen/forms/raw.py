"""Raw kernels (``pa.raw_kernel``) in a lowered program.

A raw kernel's launch is a plan group of its own (``plan/group.py``).
Here it becomes a ``RawPlan`` beside the Assembler's loopy kernels, in
launch order, and then a ``KernelInfo`` like theirs: ``args`` name buffers
(inputs, outputs: the plan's, or a temporary for an output the DAG never
reads) and scalars (``s<group>_<name>_<param>``, values in ``Lowered.scalars``, which
the launchers pass by value), ``gsize``/``lsize`` are the user's grid and
block, ``entry`` the function's name in the source.  Each distinct kernel's
source is appended once after the generated code (CUDA: in ``extern "C"``,
as PyCUDA's ``SourceModule`` does), so two launches of one kernel share it.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from ..policy.classify import Raw
from ..policy import choose
from ..user_functions import LANGUAGES as _LANG, RAW_END as _END, RAW_MARK as _MARK


@dataclass
class RawPlan:
    """What ``lower_program`` needs of one launch (the Assembler's loopy
    kernels are ``KernelPlan``s; this one has no ``tu``)."""
    name: str                   # k<group>_<entry>: unique per launch
    entry: str                  # the function in the source
    spec: object                # ir.nodes.RawKernelSpec
    args: tuple                 # buffer and scalar names, in parameter order
    grid: tuple
    block: tuple
    rule: str
    scalars: dict = field(default_factory=dict)     # scalar name -> NumPy scalar
    form: str = "raw"           # the policy's (ours: "single-pass scan")
    tu = None
    preprocessed = None

    def kernel_info(self, KernelInfo):
        """The launch's ``KernelInfo`` (``KernelInfo``: codegen's class)."""
        return KernelInfo(self.name, self.args, self.grid, self.block, self.form, rule=self.rule,
                          facts={"language": self.spec.language}, entry=self.entry)


def build(asm, name, group):
    """Append the ``RawPlan`` of ``group``'s launch to ``asm.kernels``."""
    from ..schedule import ScheduleError
    node = group.units[0].node
    spec = node.kernel
    language = asm.dialect.name
    if spec.language != language:
        raise ValueError(f"raw kernel {spec.name!r} is written in {_LANG[spec.language]}; the "
                         f"{language} target cannot run it (compile it for "
                         f"target={spec.language!r})")
    if name in asm.schedules:           # () replays prog.schedule
        asm.matched.add(name)
    if asm.schedules.get(name):
        raise ScheduleError(f"kernel {name} is the raw kernel {spec.name!r}: its code and "
                            "launch sizes are the user's, so it has no schedule")
    _check_block(spec.name, node.block, asm.device.max_work_group)
    choice = choose(Raw(spec.name, spec.language), asm.device, asm.thresholds)
    outs = {u.node.index: asm.buffers[id(u.node)] for u in group.units}
    inputs, out_index, args, scalars = iter(node.inputs), 0, [], {}
    values = dict(node.scalars)
    for role, pname, _, dt in spec.params:
        if role == "in":
            args.append(asm.buffers[id(next(inputs))])
        elif role == "out":
            if out_index not in outs:           # written, never read: a temporary
                shape, odt = node.outputs[out_index]
                outs[out_index] = f"{name}_{pname}"
                asm.add_buffer(outs[out_index], math.prod(shape), np.dtype(odt))
            args.append(outs[out_index])
            out_index += 1
        else:
            sname = f"s{name[1:]}_{pname}"
            scalars[sname] = np.dtype(dt).type(values[pname])
            args.append(sname)
    asm.kernels.append(RawPlan(name, spec.name, spec, tuple(args), node.grid, node.block,
                               choice.rule, scalars, str(choice.form)))


def _check_block(kname, block, limits):
    """A ValueError naming the kernel when its block exceeds the device's."""
    if limits is None:
        return
    total, axes = limits
    if math.prod(block) > total or any(n > m for n, m in zip(block, axes)):
        raise ValueError(f"raw kernel {kname!r}: block {block} exceeds the device's "
                         f"work-group limits ({total} per group, "
                         f"{' x '.join(map(str, axes))} per axis)")


def source_after(plans, dialect) -> str:
    """The text appended to the generated code (in ``dialect``, an
    ``emit.dialect.Dialect``): each distinct raw kernel's source once, loopy's
    macros undefined first.  Two different kernels of one name are refused
    (one program, one symbol)."""
    specs = {}
    for kp in plans:
        if isinstance(kp, RawPlan):
            seen = specs.setdefault(kp.entry, kp.spec)
            if seen.source != kp.spec.source:
                raise ValueError(f"two different raw kernels are named {kp.entry!r} in one "
                                 "program; rename one")
    if not specs:
        return ""
    parts = ["\n" + "".join(f"#undef {m}\n" for m in dialect.loopy_macros)]
    for entry, spec in specs.items():
        text = spec.source.rstrip() + "\n"
        if dialect.extern_c and not re.search(r'extern\s+"C"', spec.source):
            text = 'extern "C" {\n' + text + '}\n'
        parts.append(_MARK.format(name=entry, language=dialect.name) + "\n" + text
                     + _END.format(name=entry) + "\n")
    return "\n".join(parts)


def scalars_of(plans) -> dict:
    return {k: v for kp in plans if isinstance(kp, RawPlan) for k, v in kp.scalars.items()}
