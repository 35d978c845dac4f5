"""A pytest plugin for suites that run polyarray eagerly (the array API
conformance suite): every value is computed by the default target.

Eager evaluation computes a small value of host data alone (at most
``reevaluation.SMALL_WORK`` operations), or a program new at one line for
the ninth time, with NumPy on the host: right for users, but a suite of
small arrays would then test the host.  With this plugin
(``-p device_values``, ``tests/support`` on ``PYTHONPATH``) they compile
for the target.  ``DEVICE_VALUES_COUNTS=<dir>``: each process writes how
many values it computed there."""
import os

import polyarray.reevaluation as _r

_r.SMALL_WORK = 0
_r.MAX_PROGRAMS_PER_LINE = 10**9
_r.MAX_KERNELS = 10**9
_r.MAX_ELEMENT_WRITES = 10**9
_COMPUTE = _r._compute
_COUNT = [0]


def _counted(nodes, line):
    _COUNT[0] += 1
    return _COMPUTE(nodes, line)


_r._compute = _counted


def pytest_sessionfinish(session, exitstatus):
    where = os.environ.get("DEVICE_VALUES_COUNTS")
    if where:
        with open(os.path.join(where, f"values_{os.getpid()}.txt"), "w") as f:
            f.write(f"{_COUNT[0]}\n")
