"""The one registry of step names and the text round trip.

``repr(step)`` is valid Python, so ``parse_schedule(format_schedule(s)) ==
s``: a schedule prints (``prog.schedule``), is stored as text (the tuning
cache) and is read back here, accepting only the registered step
constructors with literal arguments.  ``normalize``/``normalize_schedule``
turn what a user passes as ``schedule=`` into tuples of steps, or a
``ScheduleError`` that lists the steps there are.
"""
from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterable, Mapping

from .base import ScheduleError, Step, format_schedule, short_repr
from .build import ElementsPerItem, Layout
from .loops import GroupReduce, Split, Tag, Tile, Unroll, WorkGroup, coalesce_as_work_group
from .matmul import RegisterTile
from .memory import Prefetch, StoreThroughLocal
from .transform import Transform
from .vectorize import Vectorize

__all__ = ["STEPS", "ALIASES", "format_schedule", "parse_schedule", "normalize",
           "normalize_schedule", "schedule_key", "rename_arrays", "user_names"]

# every step with a text form, by the name its repr starts with
STEPS = {c.__name__: c for c in (Split, Tile, WorkGroup, Unroll, Tag, Prefetch, GroupReduce,
                                 RegisterTile, StoreThroughLocal, Layout, ElementsPerItem,
                                 Vectorize)}

# retired step names that saved text may still hold -> what builds their step
ALIASES = {"Coalesce": coalesce_as_work_group}


def parse_schedule(text):
    """Steps from ``format_schedule`` text (only step constructors with
    literal arguments are accepted)."""
    tree = ast.parse(text.strip(), mode="eval").body
    if not isinstance(tree, (ast.List, ast.Tuple)):
        raise ScheduleError(f"not a list of steps: {text!r}")
    steps = []
    for node in tree.elts:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and (node.func.id in STEPS or node.func.id in ALIASES)):
            raise ScheduleError(f"not a schedule step: {ast.unparse(node)!r}")
        args = [ast.literal_eval(a) for a in node.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
        steps.append((STEPS.get(node.func.id) or ALIASES[node.func.id])(*args, **kwargs))
    return tuple(steps)


def normalize(steps, name="?"):
    """A tuple of steps; build steps first; ScheduleError otherwise."""
    if isinstance(steps, Step):
        steps = (steps,)
    try:
        if isinstance(steps, (str, bytes, dict)):
            raise TypeError
        steps = tuple(steps)
    except TypeError:
        raise ScheduleError(f"schedule for kernel {name}: expected a step or a list of steps "
                            f"({', '.join(sorted(STEPS))}), got {type(steps).__name__} "
                            f"{short_repr(steps)}"
                            + (" (parse_schedule reads text)" if isinstance(steps, str) else "")
                            ) from None
    seen_other = False
    for s in steps:
        if not isinstance(s, Step):
            raise ScheduleError(f"schedule for kernel {name}: {s!r} is not a schedule step "
                                f"(steps: {', '.join(sorted(STEPS))})")
        if s.build and seen_other:
            raise ScheduleError(f"{s!r} must come before the other steps (kernel {name})")
        seen_other |= not s.build
    return steps


def normalize_schedule(schedule) -> dict:
    """``{kernel name or fnmatch pattern: tuple of steps}`` from a user's
    ``schedule=``: a dict whose values are a step or an iterable of steps."""
    if schedule is None:
        return {}
    if not isinstance(schedule, Mapping):
        hint = ""
        if isinstance(schedule, Step) or (isinstance(schedule, Iterable)
                                          and not isinstance(schedule, (str, bytes))):
            hint = " (name the kernel: {'k0_elementwise': [...]}; prog.schedule lists the names)"
        given = (f"the step {short_repr(schedule)}" if isinstance(schedule, Step) else
                 f"{type(schedule).__name__} {short_repr(schedule)}")
        raise ScheduleError(
            "schedule must be a dict mapping kernel names or fnmatch patterns to a step or a "
            f"list of steps, e.g. {{'k0_elementwise': [WorkGroup(128)]}}; got {given}{hint}")
    out = {}
    for key, steps in schedule.items():
        if not isinstance(key, str):
            raise ScheduleError(f"schedule keys must be kernel names or fnmatch patterns "
                                f"(str), got {type(key).__name__} {short_repr(key)}")
        out[key] = normalize(steps, key)
    return out


def schedule_key(schedules) -> str | None:
    """Deterministic text for cache keys; None when a step is not replayable."""
    if not schedules:
        return ""
    parts = []
    for pattern in sorted(schedules):
        steps = normalize(schedules[pattern], pattern)
        if any(isinstance(s, Transform) for s in steps):
            return None
        parts.append(f"{pattern}={format_schedule(steps)}")
    return ";".join(parts)


def rename_arrays(step, names):
    """``step`` with the array names in ``names`` replaced: placeholder names
    (``Prefetch("x")``) by their device-code names (``p1_x``,
    ``codegen.c_name``) before a step applies, and back for display."""
    changes = {f: names[getattr(step, f)] for f in step.arrays if getattr(step, f) in names}
    return dataclasses.replace(step, **changes) if changes else step


def user_names(message, users):
    """``message`` with quoted device-code names (``'p1_x'``) replaced by the
    placeholder names they stand for."""
    for c, u in users.items():
        message = message.replace(repr(c), repr(u))
    return message
