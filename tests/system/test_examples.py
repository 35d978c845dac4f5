"""The examples run as written (small sizes), on OpenCL where it exists."""
import os
import subprocess
import sys

import pytest

from polyarray import targets
from helpers import subprocess_env

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ok, reason = targets.availability("opencl")


def run(args, **env):
    proc = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          env=subprocess_env(**env), timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def test_quickstart_runs():
    out = run(["examples/quickstart.py"])
    assert "relative error vs NumPy" in out and "OK: matches NumPy" in out, out


@pytest.mark.skipif(not ok, reason=f"opencl: {reason} (the example runs schedules on a device)")
def test_coalescing_example_runs_every_schedule_and_tunes():
    out = run(["examples/coalescing.py", "--quick"],
              POLYARRAY_TARGET="opencl")
    assert "small sizes (--quick" in out and "rows = 5000" in out, out
    for label in ("row ", "row+tile", "flat"):
        assert label in out, out
    assert "parallel l.0" in out and "out0_tile" in out
    assert "autotuning chose:" in out and "chosen" in out


@pytest.mark.skipif(not ok, reason=f"opencl: {reason} (the example trains on a device)")
def test_training_loop_example_matches_numpy():
    out = run(["examples/training_loop.py", "--target", "opencl", "--quick"])
    assert "OK: matches NumPy" in out and "50 steps on opencl" in out, out


@pytest.mark.skipif(not ok, reason=f"opencl: {reason} (the example counts device kernels)")
def test_custom_kernel_example_runs():
    out = run(["examples/custom_kernel.py", "--target", "opencl", "--quick"])
    assert "OK: matches NumPy" in out and "with the custom op 1" in out, out
    assert "static inline float pa_u_softplus_scaled_" in out, out
    out = run(["examples/custom_kernel.py", "--target", "numpy", "--rows", "50"])
    assert "OK: matches NumPy" in out and "float32[50, 256]" in out, out
    assert "small sizes (numpy runs on the CPU" in out, out


@pytest.mark.skipif(not ok, reason=f"opencl: {reason} (the example profiles kernels)")
def test_profile_example_prints_the_table_and_the_graph():
    out = run(["examples/profile.py", "--target", "opencl", "--quick"])
    assert "profile on opencl" in out and "median of 2 calls" in out, out
    assert "digraph polyarray {" in out and "subgraph cluster_k0_" in out, out
    assert "kernel times / synchronized call:" in out, out


def test_hermite_setitem_example_is_one_kernel_matching_numpy():
    target = "opencl" if ok else "numpy"
    out = run(["examples/hermite_setitem.py", "--target", target, "--quick"])
    assert "max relative error vs NumPy" in out, out
    assert "the same DAG as the stack form: True" in out, out
    if ok:
        assert "kernels: 1;" in out and "row+tile" in out and "of copy" in out, out
