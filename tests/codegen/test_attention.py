"""Attention chains, ``softmax(scale(Q @ K^T)) @ V`` as NumPy code writes
them: the chains the recognizer (``codegen/plan/attention.py``) turns into
the one-kernel form on CUDA (scales, head dims, batches, ragged and
non-square sizes, float64), and the near misses it must leave alone (the
other axis, a missing maximum, another maximum, masks, a value the user
also returns), each against NumPy on every target; which chains CUDA's
lowering makes the fused form (no GPU needed); its CUDA source compiles."""
import numpy as np
import pytest

import polyarray as pa
from helpers import assert_same


def _softmax_rows(xp, s, axis=-1):
    e = xp.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _t(x):
    return x.swapaxes(-1, -2)


# name -> (shapes of q, k, v, dtype, f(xp, q, k, v) -> output): recognized chains
FUSED = {
    "divide 8": ((70, 64), (130, 64), (130, 64), np.float32,
                 lambda xp, q, k, v: _softmax_rows(xp, (q @ k.T) / 8.0) @ v),
    "times 0.125": ((33, 32), (200, 32), (200, 48), np.float32,
                    lambda xp, q, k, v: _softmax_rows(xp, q @ k.T * 0.125) @ v),
    "0.125 times": ((64, 128), (100, 128), (100, 128), np.float32,
                    lambda xp, q, k, v: _softmax_rows(xp, 0.125 * (q @ k.T)) @ v),
    "negative scale": ((50, 64), (300, 64), (300, 64), np.float32,
                       lambda xp, q, k, v: _softmax_rows(xp, (q @ k.T) * -0.3) @ v),
    "divide negative": ((17, 16), (65, 16), (65, 8), np.float32,
                        lambda xp, q, k, v: _softmax_rows(xp, (q @ k.T) / -4.0) @ v),
    "no scale": ((40, 64), (1100, 64), (1100, 64), np.float32,
                 lambda xp, q, k, v: _softmax_rows(xp, q @ k.T) @ v),
    "batched 3-d": ((3, 45, 64), (3, 90, 64), (3, 90, 64), np.float32,
                    lambda xp, q, k, v: _softmax_rows(xp, xp.matmul(q, _t(k)) / 8.0) @ v),
    "batch and heads": ((2, 3, 66, 32), (2, 3, 70, 32), (2, 3, 70, 32), np.float32,
                        lambda xp, q, k, v: _softmax_rows(xp, (q @ _t(k)) * 0.2) @ v),
    "keys as rows": ((30, 24), (80, 24), (80, 24), np.float32,
                     lambda xp, q, k, v: _softmax_rows(xp, xp.einsum("id,jd->ij", q, k) / 2.0)
                     @ v),
    "kt given": ((20, 64), (64, 100), (100, 64), np.float32,
                 lambda xp, q, kt, v: _softmax_rows(xp, (q @ kt) / 8.0) @ v),
    "float64": ((60, 64), (150, 64), (150, 64), np.float64,
                lambda xp, q, k, v: _softmax_rows(xp, (q @ k.T) / 8.0) @ v),
    "float64 d128": ((20, 128), (70, 128), (70, 32), np.float64,
                     lambda xp, q, k, v: _softmax_rows(xp, (q @ k.T) / 8.0) @ v),
}


# near misses: each computed as written (never the fused form)
def _other_max_axis(xp, q, k, v):
    s = (q @ k.T) / 8.0
    e = xp.exp(s - s.max(axis=0, keepdims=True))
    return e / e.sum(axis=1, keepdims=True) @ v


def _other_sum_axis(xp, q, k, v):
    s = (q @ k.T) / 8.0
    e = xp.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=0, keepdims=True) @ v


def _no_max(xp, q, k, v):
    e = xp.exp((q @ k.T) / 8.0)
    return e / e.sum(axis=1, keepdims=True) @ v


def _max_of_unscaled(xp, q, k, v):
    raw = q @ k.T
    e = xp.exp(raw / 8.0 - raw.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True) @ v


def _masked(xp, q, k, v):
    s = (q @ k.T) / 8.0
    s = xp.where(xp.asarray(np.tri(s.shape[0], s.shape[1], dtype=bool)), s, -1e9)
    return _softmax_rows(xp, s) @ v


def _bias(xp, q, k, v):
    s = (q @ k.T) / 8.0 + 0.5
    return _softmax_rows(xp, s) @ v


def _divided_by_scores(xp, q, k, v):
    s = 8.0 / ((xp.abs(q) + 1.0) @ (xp.abs(k) + 1.0).T)      # products >= 16: well conditioned
    return _softmax_rows(xp, s) @ v


def _sum_of_other(xp, q, k, v):
    s = (q @ k.T) / 8.0
    e = xp.exp(s - s.max(axis=1, keepdims=True))
    return e / xp.exp(s).sum(axis=1, keepdims=True) @ v


def _p_transposed(xp, q, k, v):
    p = _softmax_rows(xp, (q @ k.T) / 8.0)
    return p.T @ v


NEAR = {
    "max over the other axis": ((40, 16), (40, 16), (40, 16), _other_max_axis),
    "sum over the other axis": ((40, 16), (40, 16), (40, 16), _other_sum_axis),
    "no max": ((30, 16), (100, 16), (100, 16), _no_max),
    "max of another operand": ((30, 16), (100, 16), (100, 16), _max_of_unscaled),
    "causal mask": ((70, 16), (70, 16), (70, 16), _masked),
    "bias": ((30, 16), (100, 16), (100, 16), _bias),
    "constant over scores": ((30, 16), (100, 16), (100, 16), _divided_by_scores),
    "sum of another exp": ((30, 16), (100, 16), (100, 16), _sum_of_other),
    "p transposed": ((100, 16), (100, 16), (100, 16), _p_transposed),
}


def _inputs(rng, shapes, dtype):
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def _program(cases, target, rng):
    """Compile every case as one program (a output each) and compare each
    with NumPy."""
    outs, want, binds = {}, {}, {}
    for name, (shapes, dtype, f) in cases.items():
        key = "c_" + "".join(c if c.isalnum() else "_" for c in name)
        vals = _inputs(rng, shapes, dtype)
        ph = [pa.placeholder(f"{key}_{a}", v.shape, v.dtype) for a, v in zip("qkv", vals)]
        outs[key] = f(pa, *ph)
        want[key] = f(np, *vals)
        binds.update({f"{key}_{a}": v for a, v in zip("qkv", vals)})
    got = pa.compile(outs, target=target)(**binds)
    for key in outs:
        assert_same(got[key], want[key], key)


def test_fused_chains_match_numpy(target):
    rng = np.random.default_rng(1)
    _program({k: (v[:3], v[3], v[4]) for k, v in FUSED.items()}, target, rng)


def test_near_misses_match_numpy(target):
    rng = np.random.default_rng(2)
    _program({k: (v[:3], np.float32, v[3]) for k, v in NEAR.items()}, target, rng)


def test_values_the_user_returns_are_computed(target):
    """The scores and the probabilities returned beside the output: each
    is NumPy's, and the chain keeps its kernels."""
    rng = np.random.default_rng(3)
    q, k, v = _inputs(rng, ((50, 32), (90, 32), (90, 32)), np.float32)
    ph = [pa.placeholder(a, x.shape, x.dtype) for a, x in zip("qkv", (q, k, v))]

    def both(xp, q, k, v):
        s = (q @ k.T) / 8.0
        p = _softmax_rows(xp, s)
        return {"s": s, "p": p, "out": p @ v}
    got = pa.compile(both(pa, *ph), target=target)(q=q, k=k, v=v)
    for key, w in both(np, q, k, v).items():
        assert_same(got[key], w, key)


def test_inf_and_nan_scores(target):
    """Rows with an inf or NaN score are NaN, as NumPy's; a row whose first
    keys score -inf and whose later ones do not is finite."""
    rng = np.random.default_rng(4)
    q, k, v = _inputs(rng, ((8, 16), (600, 16), (600, 16)), np.float32)
    q[1, 0] = np.inf
    q[2, 3] = np.nan
    k[:100, 0] = 1.0
    q[5, 0] = -np.inf           # keys 0..99 score -inf for row 5, the others NaN (0 * inf)
    k[100:, 0] = 0.0
    q[5, 1:] = 0.0
    ph = [pa.placeholder(a, x.shape, x.dtype) for a, x in zip("qkv", (q, k, v))]
    f = FUSED["divide 8"][4]
    with np.errstate(invalid="ignore"):
        want = f(np, q, k, v)
    got = pa.compile(f(pa, *ph), target=target)(q=q, k=k, v=v)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    fin = ~np.isnan(want)
    np.testing.assert_allclose(got[fin], want[fin], rtol=2e-5, atol=1e-6)


def _forms(out, target):
    import loopy as lp
    from polyarray.codegen import lower_program
    lt = lp.CudaTarget() if target == "cuda" else lp.PyOpenCLTarget()
    return [k.form for k in lower_program([out.node], lt).kernels]


def _nodes(f, shapes, dtype=np.float32):
    return f(pa, *[pa.placeholder(a, s, dtype) for a, s in zip("qkv", shapes)])


def test_cuda_fuses_exactly_the_chains():
    """CUDA: every chain of FUSED is the fused form (with the key ranges'
    combine where it splits them), every near miss keeps the generated
    kernels; OpenCL never takes the form."""
    for name, (qs, ks, vs, dt, f) in FUSED.items():
        forms = _forms(_nodes(f, (qs, ks, vs), dt), "cuda")
        assert set(forms) <= {"flash attention", "attention ranges combined"} \
            and "flash attention" in forms, (name, forms)
        assert "flash attention" not in _forms(_nodes(f, (qs, ks, vs), dt), "opencl"), name
    for name, (qs, ks, vs, f) in NEAR.items():
        assert "flash attention" not in _forms(_nodes(f, (qs, ks, vs)), "cuda"), name
    # the scores or the probabilities returned too: not fused
    q, k, v = (pa.placeholder(a, (64, 64), np.float32) for a in "qkv")
    s = (q @ k.T) / 8.0
    p = _softmax_rows(pa, s)
    import loopy as lp
    from polyarray.codegen import lower_program
    for extra in (s, p):
        kernels = lower_program([(p @ v).node, extra.node], lp.CudaTarget()).kernels
        assert "flash attention" not in [x.form for x in kernels]
    # too few keys for the form: the generated kernels
    short = _nodes(FUSED["divide 8"][4], ((64, 64), (16, 64), (16, 64)))
    assert "flash attention" not in _forms(short, "cuda")


def test_large_chain_splits_the_keys():
    """4096 x 64: the keys in ranges side by side (too few row tiles to fill
    the device), then the combine: two kernels, the scores never stored."""
    import loopy as lp
    from polyarray.codegen import lower_program
    out = _nodes(FUSED["divide 8"][4], ((4096, 64),) * 3)
    lowered = lower_program([out.node], lp.CudaTarget())
    assert [k.form for k in lowered.kernels] == ["flash attention", "attention ranges combined"]
    assert max(b.size for b in lowered.buffers.values()) < 4096 * 4096 // 4


def test_cuda_source_compiles():
    """The fused kernels of every chain of FUSED compile with nvcc (no GPU)."""
    import tempfile
    import loopy as lp
    from polyarray.codegen import lower_program
    from test_cuda_codegen import NVCC, _nvcc
    if NVCC is None:
        pytest.skip("nvcc (the CUDA compiler) is not on PATH")
    outs = []
    for name, (qs, ks, vs, dt, f) in FUSED.items():
        key = "c_" + "".join(c if c.isalnum() else "_" for c in name)
        outs.append(f(pa, *[pa.placeholder(f"{key}_{a}", s, dt) for a, s in zip("qkv", (qs, ks, vs))]))
    big = [pa.placeholder(f"big_{a}", (4096, 64), np.float32) for a in "qkv"]
    outs.append(FUSED["divide 8"][4](pa, *big))
    source = lower_program([o.node for o in outs], lp.CudaTarget()).source
    with tempfile.TemporaryDirectory() as tmp:
        result = _nvcc(source, tmp, "attention")
    assert result.returncode == 0, result.stderr[-3000:]
