"""Test configuration: which targets run, and bounded Hypothesis budgets.

``POLYARRAY_TEST_TARGETS`` (comma-separated) picks the targets the
target-parametrized tests run on; by default every registered target.  A
target whose device is missing is skipped, and the skip says why.
"""
import os
import sys

import pytest
from hypothesis import HealthCheck, settings

# the tests import shared modules by name: the fuzz package (here), helpers and
# parity_cases (support/), and the cases other test modules define (test_quiet's
# nvcc, test_row_fusion's fused cases), whichever folder holds them
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_HERE] + [os.path.join(_HERE, *area.split("/")) for area in (
    "support", "frontend", "codegen", "targets", "targets/cuda", "targets/opencl",
    "system")]
# every buffer a device target allocates starts as 0xFF bytes (targets/poison.py): a
# kernel that leaves part of a buffer unwritten fails every time, not only when the
# memory pool hands back a used block
os.environ.setdefault("POLYARRAY_POISON", "1")
# a DAG tuned by one test must not change what a later test compiles (the tuning cache
# is shared); tests/codegen/test_tuning.py turns the stored schedules on where it tests them
os.environ.setdefault("POLYARRAY_USE_TUNED", "0")

from polyarray import targets  # noqa: E402

settings.register_profile("ci", max_examples=40, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=500, deadline=None)
settings.load_profile(os.environ.get("POLYARRAY_HYPOTHESIS_PROFILE", "ci"))

_IMPLEMENTED = [t for t in targets.REGISTRY if targets.target_class(t) is not None]
TEST_TARGETS = [t for t in os.environ.get("POLYARRAY_TEST_TARGETS",
                                          ",".join(_IMPLEMENTED)).split(",") if t]


def _target_param(name):
    ok, reason = targets.availability(name)
    marks = [] if ok else [pytest.mark.skip(reason=f"{name}: {reason}")]
    return pytest.param(name, marks=marks, id=name)


@pytest.fixture(params=[_target_param(t) for t in TEST_TARGETS])
def target(request):
    """Every target under test that is available here."""
    return request.param


DEVICE_TARGETS = [t for t in TEST_TARGETS if t != "numpy"]


@pytest.fixture(params=DEVICE_TARGETS)
def device_target(request):
    """Every device target under test (not the NumPy reference); skipped,
    saying why, where its device is missing."""
    ok, reason = targets.availability(request.param)
    if not ok:
        pytest.skip(f"{request.param}: {reason}")
    return request.param
