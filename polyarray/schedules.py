"""Schedule steps for ``pa.compile(..., schedule={kernel: [steps]})``.

    from polyarray.schedules import WorkGroup, Tile, Unroll, Prefetch
    prog = pa.compile(out, target="opencl", schedule={"k0_*": [WorkGroup(128)]})
    print(prog.kernels["k0_elementwise"].loop_nest())

See ``codegen/schedule/`` for each step and ``docs/design/schedules.md`` for the model.
``Coalesce`` is a deprecated alias of ``WorkGroup`` (kept for old code).
"""
import numpy as np

from polyarray.codegen.schedule import (STEPS, Coalesce, ElementsPerItem,  # noqa: F401
                                       GroupReduce, Layout, Prefetch, RegisterTile,
                                       ScheduleError, Split, Step, StoreThroughLocal, Tag, Tile,
                                       Transform, Unroll, Vectorize, WorkGroup, format_schedule,
                                       parse_schedule)


def check_schedule(outputs, schedule, target=None, bindings=None, **options):
    """Check that ``schedule`` computes what the default schedules compute:
    both programs run on the same inputs (random ones unless ``bindings``),
    every output is compared (exactly for integers and booleans, to a
    dtype-dependent tolerance for floats), and an AssertionError names the
    first output that differs.  Returns the programs ``(default, scheduled)``.
    Modelled on loopy's ``auto_test_vs_ref``."""
    from .program import Program
    from .testing.compare import SCHEDULE_TOLERANCES, allclose, flat_outputs, random_bindings, to_host
    ref = Program(outputs, target, **options)
    new = Program(outputs, target, schedule=schedule, **options)
    bindings = bindings if bindings is not None else random_bindings(ref)
    want, got = flat_outputs(ref(**bindings)), flat_outputs(new(**bindings))
    for k, (g, w) in enumerate(zip(got, want)):
        if not allclose(g, w, tolerances=SCHEDULE_TOLERANCES):
            raise AssertionError(f"output {k}: the schedule {schedule} changes the result "
                                 f"(max abs difference "
                                 f"{np.max(np.abs(to_host(g).astype(float) - to_host(w).astype(float)))})")
    return ref, new

