"""Parity of every function and operator with direct NumPy, on every target."""
import numpy as np
import pytest

from parity_cases import CASES, run_case

PARAMS = [pytest.param(c, d, id=f"{c.name}-{d.name}") for c in CASES for d in c.dtypes]


@pytest.mark.parametrize("case,dtype", PARAMS)
def test_parity(case, dtype, target):
    run_case(case, dtype, target)
