"""NPBench (NumPy programs nobody on this project wrote, ``../shared/npbench``)
through the benchmark's harness, ``benchmarks/npbench.py``: the kernels of
``CI_KERNELS`` (correct today; extend the list there as features land) on
each target in both modes, validated as NPBench validates them against the
NumPy kernel; and the harness's classes on a small corpus of its own (a hang
is a timeout, a dead process a crash, a wrong value wrong, polyarray's
refusal clear, anything else unclear).  The run's full tables are in
``benchmarks/RESULTS.md``."""
import json
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from benchmarks import npbench  # noqa: E402  (after the path is set)

try:
    CORPUS, MISSING = npbench.Corpus(), ""
except FileNotFoundError as e:
    CORPUS, MISSING = None, str(e)


@pytest.mark.skipif(CORPUS is None, reason=f"NPBench corpus missing: {MISSING}")
@pytest.mark.parametrize("mode", ["jit", "module"])
@pytest.mark.parametrize("kernel", npbench.CI_KERNELS)
def test_npbench_kernel_is_correct(target, mode, kernel):
    row = npbench.run_kernel(CORPUS, kernel, target, "S", mode, repeat=1)
    assert row["class"] == "correct", row
    assert row["first_s"] > 0 and row["later_s"] > 0 and row["numpy_s"] > 0


def test_compare_is_npbench_validate():
    ref = [("return[0]", np.linspace(1.0, 2.0, 100))]
    near = ref[0][1] * (1 + 3e-6)           # within rtol 1e-5
    assert npbench.compare(ref, [("return[0]", near)]) is None
    off = ref[0][1].copy()
    off[0] += 1e-4                          # one element off: allclose fails, norm within 1e-5
    assert not np.allclose(ref[0][1], off, rtol=1e-5, atol=1e-8)
    assert npbench.compare(ref, [("return[0]", off)]) is None
    off[1] += 1e-1
    assert "relative error" in npbench.compare(ref, [("return[0]", off)])
    assert "shape" in npbench.compare(ref, [("return[0]", ref[0][1][None])])
    assert "1 values" in npbench.compare(ref + ref, [("return[0]", off)])


def test_module_mode_source_imports_polyarray():
    src = "import numpy as np\nfrom numpy import linalg\n\ndef f(x):\n    import numpy as np\n"
    assert npbench.numpy_to_polyarray(src) == (
        "import polyarray as np\nfrom polyarray import linalg\n\n"
        "def f(x):\n    import polyarray as np\n")


FAKE_KERNELS = '''
import os, signal, time
import numpy as np


def initialize(N):
    return np.arange(1.0, N + 1.0)


def numpy_ran(x):
    return type(x).__module__ == "numpy"


def fine(x):
    return x * 2


def sleepy(x):
    if not numpy_ran(x):
        time.sleep(120)
    return x * 2


def dies(x):
    if not numpy_ran(x):
        os.kill(os.getpid(), signal.SIGKILL)
    return x * 2


def off(x):
    return x * 2 if numpy_ran(x) else x * 3


def refused(x):
    return np.histogramdd(x)[0]   # a NumPy function polyarray does not have


def unclear(x):
    return {}["no such key"] if not numpy_ran(x) else x
'''


def _fake_corpus(root):
    os.makedirs(os.path.join(root, "bench_info"))
    folder = os.path.join(root, "npbench", "benchmarks", "fake")
    os.makedirs(folder)
    with open(os.path.join(folder, "fake.py"), "w") as f:
        f.write(FAKE_KERNELS)
    with open(os.path.join(folder, "fake_numpy.py"), "w") as f:
        f.write(FAKE_KERNELS)
    for name in ("fine", "sleepy", "dies", "off", "refused", "unclear"):
        info = {"short_name": name, "relative_path": "fake", "module_name": "fake",
                "func_name": name, "parameters": {"S": {"N": 8}},
                "init": {"func_name": "initialize", "input_args": ["N"], "output_args": ["x"]},
                "input_args": ["x"], "array_args": ["x"], "output_args": []}
        with open(os.path.join(root, "bench_info", f"{name}.json"), "w") as f:
            json.dump({"benchmark": info}, f)


def test_each_kernel_in_its_own_process_is_classified(tmp_path, capsys):
    """One run of the command over kernels that hang, die, compute the wrong
    value, are refused by polyarray, or fail inside Python: every one is a
    row with its class, and the run goes on to the end."""
    root = str(tmp_path / "npbench")
    _fake_corpus(root)
    out = tmp_path / "rows.json"
    npbench.main(["--npbench", root, "--target", "numpy", "--mode", "jit", "--timeout", "10",
                  "--repeat", "2", "--json", str(out)])
    data = json.loads(out.read_text())
    rows = {r["kernel"]: r for r in data["rows"]}
    classes = {k: r["class"] for k, r in rows.items()}
    assert classes == {"fine": "correct", "sleepy": "timeout", "dies": "crash",
                       "off": "wrong", "refused": "error-clear", "unclear": "error-unclear"}
    assert rows["refused"]["error"].startswith("TypeError: numpy.histogramdd is not supported")
    assert rows["unclear"]["error"].startswith("KeyError:")
    assert "signal 9" in rows["dies"]["error"]
    assert "first call" in rows["sleepy"]["error"] and rows["sleepy"]["numpy_s"] > 0
    assert "relative error" in rows["off"]["detail"]
    assert rows["fine"]["ours_over_numpy"] > 0 and data["counts"]["correct"] == 1
    assert data["geomean_ours_over_best_peer"] > 0 and data["worst"]["kernel"] == "fine"
    table = capsys.readouterr().out
    assert "ours/np" in table and "timeout 1" in table


def test_a_peer_that_hangs_leaves_our_checked_row_correct():
    """A peer that hangs or dies after our result was checked and timed is
    noted as the peer's; a hang in our own call is ours."""
    ours_done = {"kernel": "k", "class": "correct", "phase": "peer cupy", "later_s": 1.0}
    row = npbench.settle(dict(ours_done), True, -9, 40)
    assert row["class"] == "correct" and row["peers_not_timed"] == {"cupy": "no result after 40 s"}
    row = npbench.settle(dict(ours_done), False, -9, 40)
    assert row["class"] == "correct" and row["peers_not_timed"] == {"cupy": "exit status -9"}
    row = npbench.settle({"kernel": "k", "class": None, "phase": "first call"}, True, -9, 40)
    assert row["class"] == "timeout" and "in first call" in row["error"]
    row = npbench.settle({"kernel": "k", "class": None, "phase": "first call"}, False, -9, 40)
    assert row["class"] == "crash" and "signal 9" in row["error"]
