"""polyarray benchmarks: ``python -m benchmarks --device opencl [--quick]``.

Every workload runs polyarray and its peers on the same inputs in the same
process; results are checked against NumPy before anything is timed.  Times
are medians after warm-up, with a device synchronize before each clock
read.  The table prints each peer's time, polyarray's ratio to the best
peer (>1 means polyarray is faster), and the fraction of the hardware limit
reached (bytes moved over the measured device copy bandwidth).  A JSON file
with the same numbers is written next to the table (``--json``).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# the rows measure the policy's default schedules, not ones an earlier .tune() stored
os.environ.setdefault("POLYARRAY_USE_TUNED", "0")

from . import dask_chunks, shapes, training, workloads as w  # noqa: E402  (after the path is set)
from .compile_profile import compile_rows       # noqa: E402
from .first_call import first_calls             # noqa: E402
from .bench import Bench                        # noqa: E402
from .gathers import gathers                    # noqa: E402
from .goals import judge, print_goals           # noqa: E402
from .shapes_peers import print_summary, summary  # noqa: E402

TRAINING = [training.gradient, training.logistic_regression, training.compile_gradient,
            training.logistic_regression_shared]
ALL = [w.fused_chain, w.softmax, w.reductions, *TRAINING[:2], w.matmul, w.hermite,
       w.compile_and_dispatch, TRAINING[2], TRAINING[3], w.opencl_vs_cuda, w.transpose, gathers]
QUICK = {"gathers": [gathers], "dispatch": [w.compile_and_dispatch],
         "compile": [compile_rows, w.compile_and_dispatch],
         "first": [first_calls],
         "schedules": [w.hermite, w.transpose, w.matmul],
         "training": TRAINING,
         "state": [training.logistic_regression_shared],
         "peers": [w.fused_chain, w.softmax, w.reductions, w.matmul],
         "reductions": [w.softmax, w.reductions],
         "rest": [*TRAINING[:2], w.hermite, w.compile_and_dispatch, TRAINING[2],
                  w.opencl_vs_cuda, w.transpose],
         "shapes": shapes.selected(),    # the shape sweep: long, so not in ALL
         "dask": [dask_chunks.workload]}  # needs dask + distributed, so not in ALL


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    ap.add_argument("--device", default="opencl", choices=["opencl", "cuda"])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (CI smoke run)")
    ap.add_argument("--json", default=None, help="write results here (default: none)")
    ap.add_argument("--only", default=None,
                    help="run one group of workloads: dispatch, compile, first, schedules, training, "
                         "peers, reductions, rest, shapes, dask")
    args = ap.parse_args(argv)
    b = Bench(args.device, args.quick)
    for workload in (QUICK[args.only] if args.only else ALL):
        try:
            workload(b)
        except Exception as e:      # noqa: BLE001  (report and keep going)
            print(f"FAILED {workload.__name__}: {type(e).__name__}: {str(e)[:300]}")
    b.print_table()
    sweep = print_summary(b) if args.only == "shapes" else None
    if b.gpu and not sweep:
        print_goals(b.rows)             # the goals are GPU goals
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": b.desc, "copy_bw_bytes_per_s": b.copy_bw,
                   "peak_flops_f32": b.peak_flops,
                   "peers_missing": b.missing,
                   "command": " ".join(["python -m benchmarks"] + list(argv or sys.argv[1:])),
                       "host": platform.node(), "date": time.strftime("%Y-%m-%d"),
                   "goals": [{"goal": g, "met": m, "detail": d} for g, m, d in judge(b.rows)],
                       **({"shapes_summary": summary(b)} if sweep else {}),
                       "rows": b.rows}, f, indent=1)


if __name__ == "__main__":
    main()
