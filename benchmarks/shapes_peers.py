"""Helpers of the shape sweep (``benchmarks/shapes.py``): the peers'
spellings of the functions their frameworks name differently, one row
measured (polyarray compiled, checked against NumPy and timed, then its peers
through ``peers.run_peers`` on the same rotating inputs), and the
per-family summary against the sweep's goals, whose headline is the WORST
row of each family, not the best."""
from __future__ import annotations

import gc
import sys
import time
from dataclasses import dataclass

from .common import check, device_prog, median_time, rotation, to_device
from .peers import run_peers

CUBLAS = ("cupy", "torch")          # cuBLAS, TF32 off (peers.frameworks sets it)
# peers that add nothing to a row: cupy.fuse cannot fuse a GEMM, argmax or a
# broadcast of views; torch.compile of a lone GEMM calls the same cuBLAS
SKIP = {"matmul": ("cupy.fuse", "torch.compile"), "gemv": ("cupy.fuse",),
        "fused": ("cupy.fuse",), "sums": (), "argmax": ("cupy.fuse",),
        "broadcast": ("cupy.fuse",), "scans": ("cupy.fuse",),
        "sorts": ("cupy.fuse", "torch.compile"), "attention": ("cupy.fuse",)}
SLOW_S = 0.5                         # a call this slow is timed 3 times, not 10+


def argext(ns, x, axis, op):
    """``argmax``/``argmin`` over one axis in any peer's namespace."""
    if ns.name == "torch":
        return getattr(x, op)(dim=axis)
    return getattr(ns.mod, op)(x, axis=axis)


def tanh(ns, x):
    return ns.mod.tanh(x)


def kernel_forms(prog):
    """``"2 kernel(s): thread [cpu: thread] x2"``: which policy rows ran.
    Read from the lowered program where there is one: ``prog.kernels``
    re-lowers a program that came from the disk cache, for its loopy kernels."""
    lowered = getattr(getattr(prog, "_exe", None), "lowered", None)
    infos = lowered.kernels if lowered is not None else list(prog.kernels.values())
    seen = {}
    for k in infos:
        key = f"{k.form} [{k.rule}]" if k.rule else str(k.form)
        seen[key] = seen.get(key, 0) + 1
    forms = " + ".join(f"{k} x{c}" if c > 1 else k for k, c in seen.items())
    return f"{len(infos)} kernel(s): {forms}"


def time_ours(b, prog, names, sets):
    """Seconds per call over the rotating input sets; a slow call (the
    fallback kernels of a shape that misses the fast forms) is timed as
    peers.run_peers times a slow peer, 3 single calls after no warm-up."""
    dev = [{n: to_device(b, a) for n, a in zip(names, s)} for s in sets]
    nxt = rotation(dev)
    t0 = time.perf_counter()
    prog(**nxt())
    prog.synchronize()
    slow = time.perf_counter() - t0 > SLOW_S
    return median_time(lambda: prog(**nxt()), prog.synchronize,
                       **({"repeat": 3, "warmup": 0, "min_time": 0, "batch": 1} if slow else {}))


def release(b, prog=None):
    """Hand the row's device memory back (polyarray's pool, torch's caching
    allocator, CuPy's pool), so a later big row is not refused for memory
    that an earlier row's pools still hold."""
    if not b.gpu:
        return
    gc.collect()
    pool = getattr(getattr(prog, "_exe", None), "pool", None)
    if pool is not None:
        pool.free_held()
    if "torch" in sys.modules:
        sys.modules["torch"].cuda.empty_cache()
    if "cupy" in sys.modules:
        sys.modules["cupy"].get_default_memory_pool().free_all_blocks()


def failed_row(b, family, label, e):
    """A row that says why polyarray was not timed (the sweep goes on)."""
    why = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
    print(f"FAILED {label}: {why}")
    r = {"workload": label, "polyarray_s": None, "peers_s": {}, "best_peer": None,
         "ratio_to_best_peer": None, "fraction_of_copy_bw": None,
         "fraction_of_peak_flops": None, "peers_not_timed": {}, "note": f"FAILED: {why}",
         "family": family, "failed": why}
    b.rows.append(r)
    return r


def measure(b, family, label, build, names, fn, sets, want, *, peers="matmul", nbytes=None,
            flops=None, rtol=1e-4, note="", extra=None):
    """One row of the sweep: build (``build()``) and compile polyarray's
    expression, check it against ``want`` (NumPy on ``sets[0]``), time it,
    then time the peers (``SKIP[peers]`` left out; NumPy only on a CPU
    device) on the same inputs.  Any failure of polyarray's is a FAILED row."""
    prog = None
    try:
        prog = device_prog(b, build())
        got = prog(**{n: to_device(b, a) for n, a in zip(names, sets[0])})
        check(label, got.get(), want, rtol=rtol)
        del got
        ours = time_ours(b, prog, names, sets)
    except Exception as e:      # noqa: BLE001  (report the row, keep sweeping)
        release(b, prog)
        return failed_row(b, family, label, e)
    forms = kernel_forms(prog)
    release(b, prog)
    skip = SKIP[peers] + (("numpy",) if b.gpu else ())
    times, notes, _ = run_peers(b, fn, sets, want, rtol=rtol, skip=skip)
    release(b)
    rate = _rate(flops / ours) if flops else ""
    rot = f"; {len(sets)} rotating input sets" if len(sets) > 1 else ""
    r = b.row(label, ours, times, nbytes=nbytes, flops=flops, failed=notes,
              note=f"{rate}{forms}{rot}{'; ' + note if note else ''}")
    r.update(family=family, **(extra or {}))
    return r


def _rate(flop_s):
    return f"{flop_s / 1e12:.2f} TFLOP/s; " if flop_s >= 1e12 else f"{flop_s / 1e9:.2f} GFLOP/s; "


# ---- the per-family summary ----

@dataclass(frozen=True)
class Goal:
    """One of the sweep's goals: ``text``, met when every row it ``applies``
    to reaches ``at`` of the peers ``versus`` (the fastest of them; empty:
    the best peer) or, with ``bandwidth``, of the copy bandwidth."""
    text: str
    at: float
    versus: tuple = ()
    bandwidth: bool = False
    applies: object = None          # row -> bool; None: every row


GPU_GOALS = {
    "square": Goal("f32 n >= 1000: >= 0.8 of cuBLAS", 0.8, CUBLAS,
                   applies=lambda r: r.get("n", 0) >= 1000),
    "rectangular": Goal("no row below 0.5 of cuBLAS", 0.5, CUBLAS),
    "gram": Goal("no row below 0.5 of cuBLAS", 0.5, CUBLAS),
    "batched": Goal(">= 0.7 of torch.bmm", 0.7, ("torch",)),
    "f64": Goal(">= 0.55 of cuBLAS DGEMM", 0.55, CUBLAS),
    "fused": Goal(">= 1.0x torch eager", 1.0, ("torch",)),
    "gemv": Goal(">= 0.85 of copy bandwidth", 0.85, bandwidth=True),
    "sums": Goal(">= 0.9 of the best peer", 0.9),
    "argmax": Goal(">= 0.9 of the best peer", 0.9),
    "broadcast-reductions": Goal(">= 1.0x torch.compile", 1.0, ("torch.compile",)),
    "scans": Goal(">= 0.9 of the best peer", 0.9),
    "sorts": Goal(">= 0.8 of CuPy", 0.8, ("cupy",)),
    "attention": Goal(">= 1.0x the best peer", 1.0),
}
CPU_GOALS = {
    "square": Goal("512^3: >= 0.3 of NumPy's BLAS", 0.3, ("numpy",),
                   applies=lambda r: r.get("n") == 512),
    "sums": Goal(">= 1.0x NumPy", 1.0, ("numpy",)),
}
FAMILIES = tuple(GPU_GOALS)
FLOOR = 0.5                           # no row of the sweep below this (GPU)


def goal_value(r, goal):
    """``(value, against)`` of one row under ``goal``; None when not timed."""
    if r["polyarray_s"] is None:
        return None, "FAILED"
    if goal.bandwidth:
        return r["fraction_of_copy_bw"], "of copy bw"
    ref = {k: r["peers_s"][k] for k in goal.versus if k in r["peers_s"]} if goal.versus \
        else r["peers_s"]
    if not ref:
        return None, "no peer timed"
    best = min(ref, key=ref.get)
    return ref[best] / r["polyarray_s"], f"vs {best}"


def _worst(rows, value):
    """``(value, row)`` of the lowest value, a failed row first."""
    scored = [(value(r), r) for r in rows]
    failed = [r for v, r in scored if r["polyarray_s"] is None]
    if failed:
        return None, failed[0]
    scored = [(v, r) for v, r in scored if v is not None]
    return min(scored, key=lambda vr: vr[0]) if scored else (None, None)


def summary(b):
    """Per family: the worst ratio to the best peer, and the goal's worst
    value with its verdict (``met`` None where no row was judged)."""
    goals = GPU_GOALS if b.gpu else CPU_GOALS
    out = []
    for fam in FAMILIES:
        rows = [r for r in b.rows if r.get("family") == fam]
        if not rows:
            continue
        ratio, worst = _worst(rows, lambda r: r["ratio_to_best_peer"])
        entry = {"family": fam, "rows": len(rows), "worst_ratio": ratio,
                 "worst_row": worst["workload"] if worst else None,
                 "goal": None, "goal_value": None, "goal_row": None, "met": None}
        goal = goals.get(fam)
        judged = [r for r in rows if goal and (goal.applies is None or goal.applies(r))]
        if judged:
            value, row = _worst(judged, lambda r: goal_value(r, goal)[0])
            entry.update(goal=goal.text, goal_value=value,
                         goal_row=row["workload"] if row else None,
                         against=goal_value(row, goal)[1] if row else "",
                         met=None if row is None else bool(value is not None
                                                            and value >= goal.at))
        elif goal:
            entry["goal"] = f"{goal.text} (no row of this size here)"
        out.append(entry)
    return out


def print_summary(b):
    entries = summary(b)
    kind = "the GPU goals" if b.gpu else "a CPU: the issue's CPU goals, where it has one"
    print(f"\nshape sweep, worst row per family ({kind}):")
    print(f"{'family':21s} {'rows':>4s} {'worst':>7s}  {'worst row':38s} goal")
    for e in entries:
        ratio = "FAILED" if e["worst_ratio"] is None and e["worst_row"] else \
            (f"{e['worst_ratio']:.2f}x" if e["worst_ratio"] is not None else "-")
        goal = "-"
        if e["goal"]:
            verdict = {True: "MET", False: "NOT MET", None: ""}[e["met"]]
            value = (f"{e['goal_value']:.2f} " if e["goal_value"] is not None else "") + \
                (f"{e.get('against', '')} ({e['goal_row']})" if e["goal_row"] else "")
            goal = f"{e['goal']}: {verdict} {value}".rstrip()
        print(f"{e['family']:21s} {e['rows']:4d} {ratio:>7s}  {str(e['worst_row']):38s} {goal}")
    timed = [r for r in b.rows if r.get("family")]
    ratio, worst = _worst(timed, lambda r: r["ratio_to_best_peer"])
    if worst is not None and b.gpu:
        ok = ratio is not None and ratio >= FLOOR
        shown = "FAILED" if ratio is None else f"{ratio:.2f}x"
        print(f"no row below {FLOOR} of its best peer: {'MET' if ok else 'NOT MET'} "
              f"(worst {shown}, {worst['workload']})")
    return entries
