"""Schedules: explicit, replayable loop transformations of one kernel.

A schedule is a tuple of frozen ``Step`` values, each a checked ``loopy
kernel -> loopy kernel`` function; every kernel has a default schedule
(``KernelInfo.schedule``), and a user's schedule for a kernel replaces it
entirely.  The steps live by what they transform:

  base.py       Step, ScheduleError, KernelContext, the shared checks
  loops.py      Split, Tile, WorkGroup, Unroll, Tag, GroupReduce
  memory.py     Prefetch, StoreThroughLocal
  matmul.py     RegisterTile
  vectorize.py  Vectorize (vector loads and stores)
  build.py      Layout, ElementsPerItem: build options, read before the kernel exists
  transform.py  Transform: any loopy function
  limits.py     apply_steps and the unroll and work-group limits
  text.py       the registry STEPS and the text round trip

This module re-exports them all, so callers import from the package.
``Coalesce`` is a deprecated alias of ``WorkGroup``.  loopy's own corrections
(loop order, hash order, exact division) are in ``codegen/loopy_fixes/``.
"""
from .base import (_TAG, KernelContext, ScheduleError, Step, _extent,  # noqa: F401
                   _inames, _need_iname, _need_positive, _need_tag, _reduction_inames,
                   _set_tag, _split, _tag_of, format_schedule, short_repr)
from .build import ElementsPerItem, Layout, build_options  # noqa: F401
from .limits import (CUDA_MAX_GRID, CUDA_MAX_WORK_GROUP, MAX_UNROLL,  # noqa: F401
                     MAX_UNROLL_HINT, MAX_UNROLLED, _check_hints, _tags, _unrolled,
                     apply_steps, check_grid, check_unrolling, check_work_groups)
from .loops import (Coalesce, GroupReduce, Split, Tag, Tile, Unroll,  # noqa: F401
                    WorkGroup, coalesce_as_work_group)
from .matmul import RegisterTile  # noqa: F401
from .memory import Prefetch, StoreThroughLocal, read_indices  # noqa: F401
from .text import (ALIASES, STEPS, normalize, normalize_schedule,  # noqa: F401
                   parse_schedule, rename_arrays, schedule_key, user_names)
from .transform import Transform  # noqa: F401
from .vectorize import (_LANE_TYPES, Vectorize, _store_through_vector,  # noqa: F401
                        _subscripts)

