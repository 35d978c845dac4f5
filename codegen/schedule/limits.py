"""Limits that keep every accepted schedule either right or a clear error.

* ``apply_steps``: applies a kernel's steps in order; loopy's own refusals
  become ``ScheduleError`` naming the step, and ``check_unrolling`` runs
  after each step, before code generation (which huge unrolls stall).
* ``check_unrolling``: no loop is unrolled (``unr``, and ``ilp``, which
  loopy unrolls too) more than ``MAX_UNROLL`` times, and no instruction is
  copied more than ``MAX_UNROLLED`` times by the unrolled loops around it.
  Larger unrolls make loopy's code generator and the device compilers
  (PoCL's LLVM, nvcc) run for minutes.  ``unr_hint`` (a ``#pragma unroll``)
  leaves unrolling to the device compiler, which fully unrolls a loop of
  constant extent when told to: PoCL took 8 s for a trivial body over 1024
  iterations, 34 s over 2048 and 110 s over 5000, so a hint's unroll count
  (the loop's extent, or N of ``unr_hint.N`` when smaller) is bounded by
  ``MAX_UNROLL_HINT``.
* ``check_work_groups``: after code generation, each kernel's work-group
  (the product of its ``l.*`` loop extents) fits the device's limits, so a
  launch never fails with ``INVALID_WORK_GROUP_SIZE``.

The user's ``schedule=`` argument itself is checked by
``text.normalize_schedule`` (it needs the step registry).
"""
from __future__ import annotations

from .base import ScheduleError, _extent, format_schedule

MAX_UNROLL = 64          # iterations of one unrolled loop
MAX_UNROLLED = 1024      # copies of one instruction made by the unrolled loops around it
MAX_UNROLL_HINT = 512    # iterations a #pragma unroll (unr_hint) may ask the compiler for
CUDA_MAX_WORK_GROUP = (1024, (1024, 1024, 64))      # (per block, per axis x, y, z)
# blocks per grid axis y, z (x allows 2^31 - 1: more than any array that fits a
# device, so it is not checked; a huge program still compiles, test_frontend_robustness)
CUDA_MAX_GRID = (None, 65535, 65535)


def apply_steps(knl, steps, ctx):
    """Apply ``steps`` in order; loopy's own errors become ScheduleError."""
    for s in steps:
        if s.build:
            continue
        try:
            knl = s.apply(knl, ctx)
        except ScheduleError:
            raise
        except Exception as e:      # noqa: BLE001  (loopy refused the step)
            raise ScheduleError(f"{s!r} does not apply to kernel {ctx.name}: "
                                f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}") from e
        check_unrolling(knl, s, ctx)        # before codegen, which huge unrolls stall
    return knl


def _unrolled(kern):
    """``{iname: its tags}`` of the loops loopy unrolls (``unr``, ``ilp``)."""
    from loopy.kernel.data import UnrolledIlpTag, UnrollTag
    return {name: iname.tags for name, iname in kern.inames.items()
            if any(isinstance(t, (UnrollTag, UnrolledIlpTag)) for t in iname.tags)}


def check_unrolling(knl, step, ctx):
    """ScheduleError naming ``step`` when the kernel, after it, unrolls a
    loop more than MAX_UNROLL times or an instruction more than MAX_UNROLLED
    times."""
    kern = knl.default_entrypoint
    _check_hints(knl, kern, step, ctx)
    unrolled = _unrolled(kern)
    if not unrolled:
        return
    extents = {}
    for name in sorted(unrolled):
        n = _extent(knl, name)
        if n is None:
            continue            # loopy refuses non-constant unrolls itself, clearly
        extents[name] = n
        if n > MAX_UNROLL:
            step.fail(ctx, f"it unrolls loop {name!r} ({_tags(unrolled[name])}) {n} times; "
                           f"at most {MAX_UNROLL} per loop (MAX_UNROLL) -- use a smaller "
                           "factor, or Tag(..., 'unr_hint.4') to leave unrolling to the "
                           "device compiler")
    for insn in kern.instructions:
        nest = sorted(i for i in insn.within_inames | insn.reduction_inames() if i in extents)
        total = 1
        for i in nest:
            total *= extents[i]
        if total > MAX_UNROLLED:
            step.fail(ctx, f"its unrolled loops {' x '.join(f'{i}({extents[i]})' for i in nest)}"
                           f" copy instruction {insn.id!r} {total} times; at most "
                           f"{MAX_UNROLLED} copies per instruction (MAX_UNROLLED) -- unroll fewer "
                           "loops, or use Tag(..., 'unr_hint.4')")


def _check_hints(knl, kern, step, ctx):
    from loopy.kernel.data import UnrollHintTag
    for name, iname in sorted(kern.inames.items()):
        hint = next((t for t in iname.tags if isinstance(t, UnrollHintTag)), None)
        if hint is None:
            continue
        n = _extent(knl, name)
        count = hint.value if n is None else min(hint.value or n, n)
        if count is not None and count > MAX_UNROLL_HINT:
            step.fail(ctx, f"its {hint} on loop {name!r} asks the device compiler to unroll "
                           f"{count} iterations; at most {MAX_UNROLL_HINT} (MAX_UNROLL_HINT) "
                           f"-- use unr_hint.N with a small N, or split the loop first")


def _tags(tags):
    return ", ".join(str(t) for t in tags)


def check_work_groups(kernels, max_work_group):
    """ScheduleError when a kernel's work-group exceeds ``max_work_group``,
    ``(work-items per group, (per axis 0, 1, 2))``; None checks nothing."""
    if max_work_group is None:
        return
    total_max, axis_max = max_work_group
    for k in kernels:
        lsize = tuple(int(x) for x in k.lsize)
        total = 1
        for n in lsize:
            total *= n
        over = [a for a, n in enumerate(lsize) if a < len(axis_max) and n > axis_max[a]]
        if total <= total_max and not over:
            continue
        shape = " x ".join(str(n) for n in lsize)
        what = (f"{lsize[over[0]]} work-items on axis l.{over[0]}, more than the device's "
                f"limit of {axis_max[over[0]]} on that axis" if over else
                f"{total} work-items ({shape}), more than the device's limit of {total_max} "
                "per work-group")
        raise ScheduleError(
            f"kernel {k.name} has work-groups of {what} (limits: {total_max} per group, "
            f"{' x '.join(str(n) for n in axis_max)} per axis); its schedule is "
            f"{format_schedule(k.schedule)} -- split the loops mapped to l.0-l.2 smaller "
            "(e.g. WorkGroup(256))")


def check_grid(kernels, max_grid):
    """ScheduleError when a kernel's grid exceeds ``max_grid`` (work-groups
    per axis g.0, g.1, g.2); None checks nothing.  The policy keeps its own
    choices inside CUDA's y/z limit (``MAX_GRID_YZ``, ``thresholds.py``); a user
    schedule that maps a long loop to g.1 or g.2 gets this error."""
    if max_grid is None:
        return
    for k in kernels:
        over = [a for a, n in enumerate(k.gsize)
                if a < len(max_grid) and max_grid[a] is not None and n > max_grid[a]]
        if over:
            a = over[0]
            raise ScheduleError(
                f"kernel {k.name} has a grid of {k.gsize[a]} work-groups on axis g.{a}, more "
                f"than the device's limit of {max_grid[a]} (limits: "
                f"{' x '.join(str(n or 'any') for n in max_grid)}); its schedule is "
                f"{format_schedule(k.schedule)} -- map the longest loop to g.0")
