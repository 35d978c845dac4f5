"""The suite's goals, judged from a run's rows: met or not, with the gap."""
from __future__ import annotations


def _rows(rows, prefix):
    return [r for r in rows if r["workload"].startswith(prefix)]


def _vs_peers(r):
    ratio = r["ratio_to_best_peer"]
    if ratio is None:
        return True, "no GPU peer timed"
    return ratio >= 1.0, f"{ratio:.2f}x the best peer ({r['best_peer']})"


def judge(rows):
    """``[(goal, met, detail)]`` for the rows present."""
    out = []
    for r in _rows(rows, "1."):
        f = r["fraction_of_copy_bw"]
        ok, why = _vs_peers(r)
        out.append(("1: chain >= 0.95 of copy and >= every peer", f >= 0.95 and ok,
                    f"{f:.2f} of copy; {why}"))
    for p in ("2.", "3.", "6."):
        for r in _rows(rows, p):
            ok, why = _vs_peers(r)
            f = r["fraction_of_copy_bw"]
            bw_ok = f is None or f >= 0.85
            hw = (f"{f:.2f} of copy" if f is not None else
                  f"{r['fraction_of_peak_flops']:.2f} of FMA peak (compute-bound)"
                  if r["fraction_of_peak_flops"] else "")
            out.append((f"{r['workload']}: >= every peer, >= 0.85 of bandwidth",
                        ok and bw_ok, f"{hw}; {why}"))
    for r in _rows(rows, "4."):
        want = [k for k in ("jax.jit", "cupy", "numpy") if k in r["peers_s"]]
        slower = [k for k in want if r["peers_s"][k] < r["polyarray_s"]]
        out.append(("4: logistic regression faster than JAX jit, CuPy and NumPy", not slower,
                    ", ".join(f"{k} {r['peers_s'][k] / r['polyarray_s']:.2f}x" for k in want)))
    for r in _rows(rows, "5."):
        blas = {k: v for k, v in r["peers_s"].items() if k in ("cupy", "torch")}
        if blas:
            frac = min(blas.values()) / r["polyarray_s"]
            out.append(("5: default matmul >= 0.5 of cuBLAS (0.75 tuned)", frac >= 0.5,
                        f"{frac:.2f} of cuBLAS"))
    for r in _rows(rows, "7."):
        us = r["polyarray_s"] * 1e6
        out.append(("7: <= 10 us host time per call", us <= 10, f"{us:.1f} us"))
    for r in _rows(rows, "8. compile chain+sum (8-op): cold"):
        out.append(("8: cold compile of an 8-op expression <= 0.3 s", r["polyarray_s"] <= 0.3,
                    f"{r['polyarray_s']:.3f} s"))
    for r in _rows(rows, "8. compile chain+sum: disk hit"):
        out.append(("8: disk-cache hit in a new process <= 5 ms", r["polyarray_s"] <= 0.005,
                    f"{r['polyarray_s'] * 1e3:.1f} ms"))
    for r in _rows(rows, "19. first call: backprop"):
        out.append(("19: first call of the 5-product gradient under pa.jit <= 1.0 s",
                    r["polyarray_s"] <= 1.0, f"{r['polyarray_s']:.2f} s"))
    for r in _rows(rows, "13."):
        if "check_cost" in r:
            out.append((f"13: index checks cost <= 2% ({r['workload']})", r["check_cost"] <= 0.02,
                        f"{100 * r['check_cost']:+.1f}%"))
    return out


def print_goals(rows):
    print("\ngoals:")
    for goal, met, detail in judge(rows):
        print(f"  {'MET    ' if met else 'NOT MET'} {goal}: {detail}")
