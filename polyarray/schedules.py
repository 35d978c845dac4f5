"""Schedule steps for ``pa.compile(..., schedule={kernel: [steps]})``.

    from polyarray.schedules import WorkGroup, Tile, Coalesce, Unroll, Prefetch
    prog = pa.compile(out, target="opencl", schedule={"k0_*": [WorkGroup(128)]})
    print(prog.kernels["k0_elementwise"].loop_nest())

See ``codegen/schedule.py`` for each step and ``docs/DESIGN.md`` for the model.
"""
import numpy as np

from polyarray.codegen.schedule import (STEPS, ElementsPerItem, GroupReduce, Layout,  # noqa: F401
                              Prefetch, RegisterTile, ScheduleError, Split, Step, StoreThroughLocal,
                              Tag, Tile,
                              Transform,
                              Unroll, Vectorize, WorkGroup, Coalesce, format_schedule,
                              parse_schedule)


def check_schedule(outputs, schedule, target=None, bindings=None, **options):
    """Check that ``schedule`` computes what the default schedules compute:
    both programs run on the same inputs (random ones unless ``bindings``),
    every output is compared (exactly for integers and booleans, to a
    dtype-dependent tolerance for floats), and an AssertionError names the
    first output that differs.  Returns the programs ``(default, scheduled)``.
    Modelled on loopy's ``auto_test_vs_ref``."""
    from .program import Program
    from .tuning import _agree, _flat, _host, _random_bindings
    ref = Program(outputs, target, **options)
    new = Program(outputs, target, schedule=schedule, **options)
    bindings = bindings if bindings is not None else _random_bindings(ref)
    want, got = _flat(ref(**bindings)), _flat(new(**bindings))
    for k, (g, w) in enumerate(zip(got, want)):
        if not _agree(g, w):
            raise AssertionError(f"output {k}: the schedule {schedule} changes the result "
                                 f"(max abs difference "
                                 f"{np.max(np.abs(_host(g).astype(float) - _host(w).astype(float)))})")
    return ref, new

