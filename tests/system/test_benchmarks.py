"""Smoke run of the benchmark suite (``python -m benchmarks --device opencl
--quick``) on whatever OpenCL device CI has: every workload runs, checks
its result against NumPy (a wrong answer raises before timing) and lands in
the table and the JSON.  Timings are not asserted here; they live in
``benchmarks/RESULTS.md``."""
import json
import subprocess
import sys

import pytest

from polyarray import targets
from helpers import subprocess_env

ok, reason = targets.availability("opencl")


@pytest.mark.skipif(not ok, reason=f"opencl: {reason}")
def test_quick_suite_runs_every_workload(tmp_path):
    out = tmp_path / "bench.json"
    r = subprocess.run([sys.executable, "-m", "benchmarks", "--device", "opencl", "--quick",
                        "--json", str(out)], capture_output=True, text=True, timeout=900,
                       env=subprocess_env(POLYARRAY_CACHE_DIR=str(tmp_path / "cache")))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "FAILED" not in r.stdout, r.stdout
    data = json.loads(out.read_text())
    rows = {row["workload"]: row for row in data["rows"]}
    # workloads 1-8 of the suite (9 compares OpenCL with CUDA: GPU machines only)
    for prefix in ("1. 10-op chain", "2. softmax", "2. sum all", "2. sum axis=0",
                   "2. sum axis=1", "3. gradient", "4. logistic regression", "5. matmul",
                   "6. hermite", "7. host time per call", "8. compile chain+sum (8-op): cold",
                   "8. compile chain+sum: disk hit", "8. compile gradient (w3): cold",
                   "8. compile gradient (w3): disk hit"):
        hits = [name for name in rows if name.startswith(prefix)]
        assert hits, f"no row for {prefix!r}: {list(rows)}"
        assert all(rows[h]["polyarray_s"] > 0 for h in hits), hits
    # NumPy is a peer everywhere, timed beside us with its ratio
    chain = next(v for k, v in rows.items() if k.startswith("1. "))
    assert chain["peers_s"].get("numpy", 0) > 0 and chain["ratio_to_best_peer"] > 0
    assert data["copy_bw_bytes_per_s"] > 0 and chain["fraction_of_copy_bw"] > 0
    assert "python -m benchmarks" in data["command"]
    assert "workload" in r.stdout and "polyarray" in r.stdout     # the table itself
