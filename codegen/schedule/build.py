"""Build options: steps that act before the kernel is built, because they
change how codegen constructs it rather than how its loops are arranged
(``Step.build``).  ``Layout`` (elementwise: one flat index, or one index per
output axis) and ``ElementsPerItem`` (elementwise: several coalesced
elements per work-item, loads before stores) must come first in a
schedule; ``build_options`` reads them for the elementwise builder."""
from __future__ import annotations

from dataclasses import dataclass

from .base import KernelContext, ScheduleError, Step, _need_positive
from .limits import MAX_UNROLL


@dataclass(frozen=True)
class Layout(Step):
    """Elementwise kernels only, first step: ``"flat"`` (one index ``i``
    over all elements, the default) or ``"axes"`` (one index per output axis:
    ``i0``, ``i1``, ... -- for schedules that treat axes differently)."""
    kind: str
    build = True

    def apply(self, knl, ctx):
        return knl


@dataclass(frozen=True)
class ElementsPerItem(Step):
    """Elementwise kernels only, first step: each work-item of a ``size``
    group takes ``n`` coalesced elements, loading all its inputs before it
    stores (the GPU default for large kernels, n=4); ``contiguous``: ``n``
    neighbouring elements instead (neighbours that share work, such as the
    elements of one counter-based random block, compute it once)."""
    n: int
    size: int = 256
    contiguous: bool = False
    build = True

    def apply(self, knl, ctx):
        return knl


def build_options(steps, kind, ctx_name):
    """``(layout, elements per item, work-group size, contiguous)`` from
    build steps."""
    layout, ilp, wg, contiguous = "flat", None, None, False
    for s in steps:
        if not s.build:
            continue
        if kind != "elementwise":
            raise ScheduleError(f"{s!r} does not apply to kernel {ctx_name}: only "
                                f"elementwise kernels take it (this one is {kind})")
        if isinstance(s, Layout):
            if s.kind not in ("flat", "axes"):
                raise ScheduleError(f"{s!r} does not apply to kernel {ctx_name}: kind must "
                                    "be 'flat' or 'axes'")
            layout = s.kind
        else:
            _need_positive(s, KernelContext(ctx_name, kind), n=s.n, size=s.size)
            if s.n > MAX_UNROLL:        # its element loops are unrolled
                s.fail(KernelContext(ctx_name, kind), f"n={s.n} unrolls each work-item's "
                       f"loops {s.n} times; at most {MAX_UNROLL} (MAX_UNROLL)")
            ilp, wg, contiguous = s.n, s.size, s.contiguous
    if ilp is not None and layout != "flat":
        raise ScheduleError(f"ElementsPerItem needs Layout('flat') (kernel {ctx_name})")
    return layout, ilp, wg, contiguous
