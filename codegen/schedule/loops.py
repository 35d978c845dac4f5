"""Steps that rearrange a kernel's loops: split them, map them onto
work-groups and work-items, unroll them, or reduce one with a work-group.
They change where each iteration runs, never what a kernel reads or
stores (memory.py does that)."""
from __future__ import annotations

import warnings
from dataclasses import dataclass

from .base import Step, _extent, _need_iname, _need_positive, _reduction_inames, _set_tag, _split
from .limits import MAX_UNROLL


@dataclass(frozen=True)
class Split(Step):
    """``iname`` -> ``iname_outer`` x ``iname_inner`` (extent ``factor``),
    each optionally mapped to a hardware axis or unrolled."""
    iname: str
    factor: int
    outer_tag: str | None = None
    inner_tag: str | None = None

    def apply(self, knl, ctx):
        return _split(self, knl, ctx, self.iname, self.factor, self.outer_tag, self.inner_tag)


@dataclass(frozen=True)
class Tile(Step):
    """2-D work-groups: ``i`` in blocks of ``fi`` (``l.1``/``g.1``) and
    ``j`` in blocks of ``fj`` (``l.0``/``g.0``; ``j`` should be the
    contiguous axis)."""
    i: str
    j: str
    fi: int
    fj: int

    def apply(self, knl, ctx):
        if self.i == self.j:
            self.fail(ctx, "the two tiled loops must differ")
        knl = _split(self, knl, ctx, self.i, self.fi, "g.1", "l.1")
        return _split(self, knl, ctx, self.j, self.fj, "g.0", "l.0")


@dataclass(frozen=True)
class WorkGroup(Step):
    """Run ``iname`` (default: the kernel's flat index ``i``) as work-groups
    of ``size`` work-items: ``g.0`` x ``l.0``.  ``iname`` goes to the
    fastest-varying work-item index, so on the output's unit-stride axis
    neighbours in memory go to neighbouring work-items (coalesced)."""
    size: int
    iname: str = "i"

    def apply(self, knl, ctx):
        return _split(self, knl, ctx, self.iname, self.size, "g.0", "l.0")


def coalesce_as_work_group(iname, size=256):
    """What the retired ``Coalesce`` step stood for: it split ``iname`` onto
    g.0 x l.0 exactly as ``WorkGroup(size, iname)`` does (the same loopy
    call, the same generated code).  Saved schedule text naming it still
    parses (text.py), without a warning."""
    return WorkGroup(size, iname)


def Coalesce(iname, size=256):      # noqa: N802  (the name old schedules use)
    """Deprecated alias: ``Coalesce(iname, size)`` is ``WorkGroup(size,
    iname)`` and returns one."""
    warnings.warn(f"Coalesce({iname!r}, {size!r}) is WorkGroup({size!r}, {iname!r}); "
                  "use WorkGroup", DeprecationWarning, stacklevel=2)
    return coalesce_as_work_group(iname, size)


@dataclass(frozen=True)
class Unroll(Step):
    """Unroll ``iname`` fully (``factor=None``; its extent must be a
    constant <= 64), or split it and unroll the inner ``factor``."""
    iname: str
    factor: int | None = None

    def apply(self, knl, ctx):
        if self.factor is not None:
            return _split(self, knl, ctx, self.iname, self.factor, None, "unr")
        _need_iname(self, knl, ctx, self.iname)
        size = _extent(knl, self.iname)
        if size is None or size > MAX_UNROLL:
            self.fail(ctx, f"{self.iname!r} has extent {size if size else 'unknown'}; "
                           f"full unrolling needs a constant <= {MAX_UNROLL} (give a factor)")
        return _set_tag(self, knl, ctx, self.iname, "unr")


@dataclass(frozen=True)
class Tag(Step):
    """Map ``iname`` to ``tag``: a hardware axis (``g.0``-``g.2`` groups,
    ``l.0``-``l.2`` work-items), ``unr`` or ``ilp``."""
    iname: str
    tag: str

    def apply(self, knl, ctx):
        return _set_tag(self, knl, ctx, self.iname, self.tag)


@dataclass(frozen=True)
class GroupReduce(Step):
    """Reduce ``iname`` with a work-group of ``size`` work-items: a strided
    loop per work-item, then a tree in local memory; the kernel's output
    loop ``over`` runs one output per work-group (``g.0``); ``over=""``
    leaves the loops as they are (a row kernel's second reduction)."""
    iname: str
    size: int
    over: str = "i"

    def apply(self, knl, ctx):
        import loopy as lp
        _need_iname(self, knl, ctx, self.iname)
        _need_positive(self, ctx, size=self.size)
        if self.size & (self.size - 1):
            self.fail(ctx, f"size must be a power of two, got {self.size}")
        if self.iname not in _reduction_inames(knl):
            self.fail(ctx, f"{self.iname!r} is not a reduction loop")
        knl = _split(self, knl, ctx, self.iname, self.size)
        knl = lp.split_reduction_outward(knl, f"{self.iname}_inner")
        knl = _set_tag(self, knl, ctx, f"{self.iname}_inner", "l.0")
        return _set_tag(self, knl, ctx, self.over, "g.0") if self.over else knl
