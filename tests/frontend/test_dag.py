"""The DAG: interning, O(N) evaluation, shared subexpressions, inspection,
determinism across processes, output structures and the default target."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import polyarray as pa
from polyarray.ir import nodes as N
from helpers import assert_same, subprocess_env



def hermite(x, n):
    """Physicists' Hermite polynomials H_0..H_n: each uses the previous two."""
    H = [pa.ones_like(x), 2.0 * x]
    for k in range(1, n):
        H.append(2.0 * x * H[k] - 2.0 * k * H[k - 1])
    return H


def hermite_np(x, n):
    H = [np.ones_like(x), 2.0 * x]
    for k in range(1, n):
        H.append(2.0 * x * H[k] - 2.0 * k * H[k - 1])
    return H


def test_structurally_equal_nodes_are_one_node():
    x = pa.placeholder("x", (3,), np.float32)
    a = pa.exp(x) * 2.0
    b = pa.exp(x) * 2.0
    assert a.node is b.node
    assert hash(a.node) == hash(b.node) and a.node.digest == b.node.digest
    assert (pa.exp(x) * 3.0).node is not a.node


def test_hermite_34_terms_evaluates_each_node_once():
    x = pa.placeholder("x", (1000,), np.float64)
    H = hermite(x, 33)
    assert len(H) == 34
    prog = pa.compile(H[-1], target="numpy")
    order = N.topological_order([H[-1].node])
    xv = np.random.default_rng(0).uniform(-1, 1, 1000)
    out = prog(x=xv)
    assert prog._exe.nodes_evaluated == len(order) < 34 * 6
    assert_same(out, hermite_np(xv, 33)[-1])


def test_repr_of_shared_dag_is_bounded():
    x = pa.placeholder("x", (4,), np.float64)
    text = repr(hermite(x, 33)[-1])
    assert text.startswith("pa.Array(shape=(4,), dtype=float64, expr=")
    assert len(text) < 600


def test_deep_chain_no_recursion_limit():
    x = pa.placeholder("x", (8,), np.float64)
    y = x
    for _ in range(5000):
        y = y * 1.0001 + 0.0
    out = y.to_numpy(x=np.ones(8))
    np.testing.assert_allclose(out, 1.0001 ** 5000)


def test_digest_independent_of_build_order():
    x = pa.placeholder("x", (3,), np.float32)
    e1 = pa.sin(x) + pa.cos(x)
    d = e1.node.digest
    del e1
    y = pa.placeholder("x", (3,), np.float32)
    c = pa.cos(y)
    s = pa.sin(y)
    assert (s + c).node.digest == d


def test_show_marks_shared_nodes():
    x = pa.placeholder("x", (3,), np.float32)
    e = pa.exp(x)
    text = pa.format_dag(e * e + e)
    assert "shared: 2 uses" in text
    assert "placeholder 'x'" in text and "-> output 0" in text
    assert repr(e) == "pa.Array(shape=(3,), dtype=float32, expr=exp(x))"


def test_metadata_is_concrete():
    W = pa.array(np.random.rand(64, 32).astype(np.float32))
    x = pa.placeholder("x", shape=(128, 64), dtype=np.float32)
    d = pa.dot(x, W) * 2.0 + pa.exp(-x.sum(axis=1, keepdims=True)[:, :1])
    assert (d.shape, d.dtype, d.ndim, d.size) == ((128, 32), np.float32, 2, 4096)
    assert d.nbytes == 4096 * 4 and len(d) == 128


def test_compile_output_structures(target):
    x = pa.placeholder("x", (4,), np.float32)
    xv = np.arange(4, dtype=np.float32)
    d = pa.compile({"a": x + 1.0, "s": x.sum()}, target=target)(x=xv)
    assert set(d) == {"a", "s"} and d["s"].shape == ()
    lst = pa.compile([x * 2.0, x], target=target)(x=xv)
    assert isinstance(lst, list) and len(lst) == 2
    assert lst[1] is not xv
    np.testing.assert_array_equal(lst[1], xv)
    tup = pa.compile((x,), target=target)(x=xv)
    assert isinstance(tup, tuple)
    single = pa.compile(x - 1.0, target=target)(x=xv)
    assert isinstance(single, np.ndarray)
    np.testing.assert_array_equal(single, xv - 1.0)


def test_evaluate_and_to_numpy_agree():
    x = pa.placeholder("x", (3,), np.float64)
    xv = np.array([1.0, 2.0, 3.0])
    e = pa.log(x) * x
    np.testing.assert_array_equal(e.evaluate("numpy", x=xv), e.to_numpy(x=xv))
    np.testing.assert_array_equal(e.to_numpy(x=xv), np.log(xv) * xv)


def test_default_target_selection(monkeypatch):
    x = pa.placeholder("x", (2,), np.float64)
    monkeypatch.delenv("POLYARRAY_TARGET", raising=False)
    assert pa.get_default_target() in pa.available_targets()
    monkeypatch.setenv("POLYARRAY_TARGET", "numpy")
    assert pa.get_default_target() == "numpy"
    with pa.target("numpy"):
        assert pa.get_default_target() == "numpy"
        np.testing.assert_array_equal(x.evaluate(x=np.ones(2)), np.ones(2))
    pa.set_default_target("numpy")
    try:
        assert pa.get_default_target() == "numpy"
        with pytest.raises(ValueError, match="unknown target"):
            pa.set_default_target("gpu9000")
    finally:
        pa.set_default_target(None)


_DETERMINISM_SCRIPT = textwrap.dedent("""
    import hashlib, numpy as np, polyarray as pa
    x = pa.placeholder("x", (5, 4), np.float32)
    W = pa.array(np.arange(12, dtype=np.float32).reshape(4, 3))
    e = pa.exp(x - x.max(axis=1, keepdims=True))
    g = pa.dot(e / e.sum(axis=1, keepdims=True), W)[::-1, [0, 2]]
    prog = pa.compile({"g": g, "m": x.mean()}, target="numpy")
    out = prog(x=np.linspace(-1, 1, 20, dtype=np.float32).reshape(5, 4))
    print(g.node.digest)
    print(prog.source)
    print(repr(g))
    print(hashlib.sha256(out["g"].tobytes() + out["m"].tobytes()).hexdigest())
""")


def test_deterministic_across_hash_seeds():
    outs = []
    for seed in ("0", "1", "4242"):
        env = subprocess_env(PYTHONHASHSEED=seed)
        outs.append(subprocess.run([sys.executable, "-c", _DETERMINISM_SCRIPT], env=env,
                                   check=True, capture_output=True, text=True).stdout)
    assert outs[0] == outs[1] == outs[2]
    assert len(outs[0].splitlines()) > 5


def test_show_of_a_program_lists_its_dag_and_kernels():
    """``pa.show(prog)`` prints the DAG, then each kernel with its form and
    the policy rule that chose it (it raised AttributeError before)."""
    import io
    from polyarray import targets
    ok, why = targets.availability("opencl")
    if not ok:
        pytest.skip(f"opencl: {why}")
    x = pa.placeholder("x", (100, 8), np.float32)
    c = pa.placeholder("c", (5, 8), np.float32)
    prog = pa.compile(pa.argmin(((x[:, None, :] - c[None]) ** 2).sum(axis=2), axis=1),
                      target="opencl")
    buf = io.StringIO()
    pa.show(prog, file=buf)
    text = buf.getvalue()
    assert "argmin(" in text and "-> output 0" in text
    assert "<kernel k0_argmin (thread [" in text        # one kernel: the sum is inlined


def test_remembered_builds_tell_scalars_of_other_types_apart():
    """An operation traced again gives the node built the first time
    (``ops/memo``), and only where NumPy's result would be the same: 0.0 and
    -0.0, 2 and 2.0 (on integers) are other arguments; a slice of NumPy
    integers is the slice of the same Python integers."""
    x = pa.placeholder("x", (6,), np.float32)
    i = pa.placeholder("i", (6,), np.int64)
    assert (x + 1).node is (x + 1).node
    assert (x * 0.0).node is not (x * -0.0).node
    assert (i * 2).dtype == np.int64 and (i * 2.0).dtype == np.float64
    assert x[1:4].node is x[1:4].node is x[np.int64(1):np.int32(4)].node
    assert x[1:4].node is not x[1:5].node and x[::2].node is not x[::-2].node
    assert x[2].node is x[2].node and x[2].node is not x[-2].node
    x0 = np.arange(6, dtype=np.float32)
    got = pa.compile([x * -0.0, x * 0.0, x[np.int64(1)::2]], target="numpy")(x=x0)
    assert np.signbit(got[0]).all() and not np.signbit(got[1]).any()
    assert got[2].tolist() == [1, 3, 5]
