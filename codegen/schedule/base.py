"""What every schedule step is built on: the ``Step`` base class, the error
it raises, the context it checks against, and the argument checks the
steps share.

A step is a frozen value whose ``apply(knl, ctx)`` is a pure ``loopy kernel
-> loopy kernel`` function that checks its own arguments against the kernel
first and raises ``ScheduleError`` naming the step and the kernel: an
invalid step is never silently accepted.  This module imports none of the
step modules, so each family of steps (loops, memory, matmul, vectorize,
build) depends on it alone.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_TAG = re.compile(r"^(g\.[0-2]|l\.[0-2]|unr|unr_hint(\.[1-9][0-9]*)?|ilp|for)$")


class ScheduleError(ValueError):
    """A schedule step that does not apply to a kernel."""


class Step:
    """Base class: ``apply(knl, ctx)`` returns the transformed kernel."""
    build = False            # consumed by codegen before the kernel exists
    arrays = ()              # fields naming arrays (renamed to device-code names)

    def apply(self, knl, ctx):      # pragma: no cover - abstract
        raise NotImplementedError

    def fail(self, ctx, why):
        raise ScheduleError(f"{self!r} does not apply to kernel {ctx.name}: {why}")


@dataclass(frozen=True)
class KernelContext:
    """What steps may check against: the kernel's name and kind, and facts
    its builder knows (``transposed``: the operands a matmul reads
    transposed)."""
    name: str
    kind: str
    facts: dict = field(default_factory=dict, compare=False, hash=False)


def short_repr(value, limit=80):
    """``repr(value)``, cut to ``limit`` characters for error messages."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def format_schedule(steps) -> str:
    """A schedule's text: its steps' reprs in a list (``text.parse_schedule``
    reads it back).  Here, not in text.py, so that the limit checks can
    quote a schedule without importing the step registry."""
    return "[" + ", ".join(repr(s) for s in steps) + "]"


def _inames(knl):
    return set(knl.default_entrypoint.all_inames())


def _need_iname(step, knl, ctx, iname):
    have = _inames(knl)
    if iname not in have:
        step.fail(ctx, f"no loop named {iname!r}; its loops are {sorted(have)}")


def _need_positive(step, ctx, **values):
    for name, v in values.items():
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            step.fail(ctx, f"{name} must be a positive integer, got {v!r}")


def _need_tag(step, ctx, tag):
    if tag is not None and not _TAG.match(tag):
        step.fail(ctx, f"unknown tag {tag!r} (use g.0-2, l.0-2, unr, unr_hint[.N], ilp or for)")


def _split(step, knl, ctx, iname, factor, outer_tag=None, inner_tag=None):
    import loopy as lp
    _need_iname(step, knl, ctx, iname)
    _need_positive(step, ctx, factor=factor)
    _need_tag(step, ctx, outer_tag)
    _need_tag(step, ctx, inner_tag)
    taken = _inames(knl) & {f"{iname}_outer", f"{iname}_inner"}
    if taken:
        step.fail(ctx, f"splitting {iname!r} would create {sorted(taken)[0]!r}, which "
                       "already exists")
    if _tag_of(knl, iname):
        step.fail(ctx, f"{iname!r} is already mapped to {_tag_of(knl, iname)}")
    return lp.split_iname(knl, iname, factor, outer_tag=outer_tag, inner_tag=inner_tag)


def _tag_of(knl, iname):
    kern = knl.default_entrypoint
    tags = kern.inames[iname].tags if iname in kern.inames else ()
    return ", ".join(str(t) for t in tags)


def _set_tag(step, knl, ctx, iname, tag):
    import loopy as lp
    _need_iname(step, knl, ctx, iname)
    _need_tag(step, ctx, tag)
    old = _tag_of(knl, iname)
    if old:
        step.fail(ctx, f"{iname!r} is already mapped to {old}")
    return lp.tag_inames(knl, {iname: tag})


def _extent(knl, iname):
    """The constant extent of loop ``iname``, or None."""
    try:
        size = knl.default_entrypoint.get_iname_bounds(iname, constants_only=True).size
        (_, aff), = size.get_pieces()
        return int(aff.get_constant_val().to_python())
    except Exception:      # noqa: BLE001  (non-constant bounds)
        return None


def _reduction_inames(knl):
    found = set()
    for insn in knl.default_entrypoint.instructions:
        found |= set(insn.reduction_inames())
    return found
