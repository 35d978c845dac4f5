"""Differential testing: random DAGs evaluated by NumPy and by each device
target must agree.  Each DAG is built from one integer seed, which Hypothesis
prints (``seed=...``) when a case fails; rebuild it with ``random_dag(seed)``.
"""
import numpy as np
import pytest
from hypothesis import given, note, settings, strategies as st

import polyarray as pa
import targets
from conftest import TEST_TARGETS
from helpers import assert_same

DEVICE_TARGETS = [t for t in TEST_TARGETS if t != "numpy"]
SHAPES = [(4, 5), (5,), (4, 1), (1, 5), ()]


def random_dag(seed):
    """(outputs, bindings): elementwise ops with broadcasting, reductions,
    matmul, slicing and shared subexpressions, all from ``seed``."""
    rng = np.random.default_rng(seed)
    dtype = np.float32 if rng.random() < 0.6 else np.float64
    pool, bindings = [], {}
    for k in range(rng.integers(1, 4)):
        shape = SHAPES[rng.integers(len(SHAPES))]
        name = f"x{k}"
        pool.append(pa.placeholder(name, shape, dtype))
        bindings[name] = rng.uniform(-1, 1, shape).astype(dtype)
    if rng.random() < 0.3:
        pool.append(pa.array(rng.uniform(-1, 1, (4, 5)).astype(dtype)))

    def pick():
        return pool[rng.integers(len(pool))]

    for _ in range(rng.integers(3, 14)):
        a = pick()
        kind = rng.integers(7)
        try:
            if kind == 0:
                f = [pa.tanh, pa.sin, pa.cos, pa.abs, lambda v: pa.exp(-(v * v)),
                     lambda v: pa.sqrt(pa.abs(v) + 1.0)][rng.integers(6)]
                new = f(a)
            elif kind == 1:
                b = pick()
                op = ["add", "subtract", "multiply", "maximum", "minimum"][rng.integers(5)]
                new = getattr(pa, op)(a, b)
            elif kind == 2:
                b = pick()
                new = pa.where(a > b, a, b * 0.5)
            elif kind == 3 and a.ndim:
                op = ["sum", "max", "min", "mean"][rng.integers(4)]
                axis = int(rng.integers(a.ndim)) if rng.random() < 0.7 else None
                new = getattr(a, op)(axis=axis, keepdims=axis is not None)
            elif kind == 4 and a.ndim == 2 and a.shape[1] == 5:
                w = pa.placeholder(f"w{len(bindings)}", (5, 3), dtype)
                bindings[w.node.name] = rng.uniform(-1, 1, (5, 3)).astype(dtype)
                new = pa.tanh(a @ w)
            elif kind == 5 and a.ndim:
                new = a[::-1] if rng.random() < 0.5 else a[..., : max(1, a.shape[-1] - 1)]
            else:
                new = a * a + a          # shared use of one node
        except ValueError:
            continue                     # shapes did not broadcast
        pool.append(new)
    outs = [pool[-1]]
    if len(pool) > 2 and rng.random() < 0.5:
        outs.append(pool[-2])
    return outs, bindings


@pytest.mark.parametrize("target_name", DEVICE_TARGETS)
@settings(max_examples=int(__import__("os").environ.get("POLYARRAY_DAG_EXAMPLES", "25")))
@given(seed=st.integers(0, 2**32 - 1))
def test_random_dag_matches_numpy(target_name, seed):
    ok, reason = targets.availability(target_name)
    if not ok:
        pytest.skip(f"{target_name}: {reason}")
    note(f"seed={seed}  (rebuild with random_dag({seed}))")
    outs, bindings = random_dag(seed)
    want = pa.compile(outs, target="numpy")
    got = pa.compile(outs, target=target_name)
    b = {k: v for k, v in bindings.items() if k in want.placeholders}
    for g, w in zip(got(**b), want(**b)):
        assert_same(g, w, f"random DAG seed={seed} on {target_name}")
