"""Parity of every function and operator with direct NumPy, on every target.

The NumPy target runs every case over all 12 dtypes; device targets run the
dtypes the lowering issue names (float32, float64, int32, int64, bool).
"""
import pytest

from polyarray import targets
from conftest import TEST_TARGETS
from helpers import CORE_DTYPES
from parity_cases import CASES, run_case


def _params():
    out = []
    for t in TEST_TARGETS:
        ok, reason = targets.availability(t)
        marks = [] if ok else [pytest.mark.skip(reason=f"{t}: {reason}")]
        for c in CASES:
            dts = c.dtypes if (t == "numpy" or len(c.dtypes) == 1) else \
                [d for d in c.dtypes if d in CORE_DTYPES]
            out.append(pytest.param(t, c, dts, id=f"{t}-{c.name}", marks=marks))
    return out


@pytest.mark.parametrize("target_name,case,dtypes", _params())
def test_parity(target_name, case, dtypes):
    run_case(case, dtypes, target_name)
