"""Matrix products in cuBLAS: the policy's row, the column-major call its
facts make (checked here by a NumPy model of BLAS's column-major ``gemm``,
no GPU needed), the host's fallback, and on a CUDA device with
nvmath-python every layout against NumPy."""
from __future__ import annotations

import numpy as np
import pytest

import polyarray as pa
from polyarray import targets
from polyarray.codegen.emit import dialect
from polyarray.codegen.thresholds import using_thresholds
from polyarray.schedules import Tile
from polyarray.targets.cuda.blas import gemm_arguments
from polyarray.targets.library import run_routine

CUDA_OK, CUDA_WHY = targets.availability("cuda")


def _has_cublas():
    try:
        from nvmath.bindings import cublas
        cublas.get_property(0)
        return True
    except Exception:       # noqa: BLE001
        return False


needs_cublas = pytest.mark.skipif(not (CUDA_OK and _has_cublas()),
                                  reason=f"a CUDA device with nvmath-python's cuBLAS "
                                         f"(cuda: {CUDA_WHY})")


@pytest.fixture
def with_cublas(monkeypatch):
    """Code generation as where nvmath-python is installed (no GPU needed)."""
    monkeypatch.setattr(dialect, "_installed", lambda package: True)


def _products(dtype=np.float32):
    """Products above ``BLAS_MIN_WORK``: x.T @ w, b @ c.T (batch 16), x @ x.T."""
    x = pa.placeholder("x", (1024, 512), dtype)
    w = pa.placeholder("w", (1024, 768), dtype)
    b = pa.placeholder("b", (16, 512, 128), dtype)
    c = pa.placeholder("c", (512, 128), dtype)
    return x, w, b, c


def _calls(outs, **kw):
    return [k for k in pa.compile(outs, target="cuda", **kw).kernels.values()]


def test_the_policy_gives_plain_float_products_to_cublas(with_cublas):
    """Products that nothing is fused into go to cuBLAS with their layout
    as stored (a transposed buffer read in place, a broadcast operand); an
    elementwise reader becomes a kernel of its own."""
    x, w, b, c = _products()
    ks = _calls([pa.tanh(x.T @ w), b @ c.T, x @ x.T])
    assert [(k.form, k.rule) for k in ks] == [
        ("cublas", "matmul: cuBLAS"), ("elementwise", "gpu: elements per item"),
        ("cublas", "matmul: cuBLAS"), ("cublas", "matmul: cuBLAS")]
    first, _, batched, gram = ks
    assert dict(first.facts["params"]) == dict(transpose_a=True, transpose_b=False,
                                               batch_a=False, batch_b=False)
    assert (first.facts["M"], first.facts["N"], first.facts["K"]) == (512, 768, 1024)
    assert dict(batched.facts["params"]) == dict(transpose_a=False, transpose_b=True,
                                                 batch_a=True, batch_b=False)
    assert batched.facts["batch"] == 16
    assert gram.args[0] == gram.args[1]         # x @ x.T: one buffer, both operands


def test_what_stays_generated(with_cublas):
    """Integers, complex values, small products, a user's schedule, and
    everything when nvmath-python is missing or the row is turned off."""
    x, w, _, _ = _products()
    xi = pa.placeholder("xi", (1024, 512), np.int32)
    wi = pa.placeholder("wi", (1024, 768), np.int32)
    z = pa.placeholder("z", (1024, 512), np.complex64)
    small = pa.placeholder("s", (256, 256), np.float32)     # 2^24 multiply-adds
    forms = [k.form for k in _calls([xi.T @ wi, z.T @ z, small @ small])]
    assert "cublas" not in forms, forms
    ks = _calls(x.T @ w, schedule={"k0_einsum": [Tile("i", "j", 16, 16)]})
    assert ks[0].form == "tiled matmul"
    with using_thresholds(BLAS_MIN_WORK=1 << 62):
        assert _calls(x.T @ w)[0].form == "tiled matmul"


def test_without_nvmath_products_are_generated(monkeypatch):
    monkeypatch.setattr(dialect, "_installed", lambda package: False)
    x, w, _, _ = _products()
    assert _calls(x.T @ w)[0].form == "tiled matmul"


def test_same_shaped_products_and_products_seen_before(with_cublas):
    """Kernel reuse (a group launched as an earlier one's instance, a
    group's code kept for later programs) does not apply to a library call:
    two products of one shape in a program are two calls, and a product a
    program compiled before is still called by the next one."""
    x = pa.placeholder("x", (2048, 1024), np.float32)
    w1 = pa.placeholder("w1", (1024, 1024), np.float32)
    w2 = pa.placeholder("w2", (1024, 1024), np.float32)
    layer = [k.form for k in _calls(pa.tanh(x @ w1) @ w2)]
    assert layer == ["cublas", "elementwise", "cublas"], layer
    y = pa.placeholder("y", (2048, 1024), np.float32)
    v = pa.placeholder("v", (1024, 1536), np.float32)
    assert [k.form for k in _calls(y @ v)] == ["cublas"]
    again = [(k.form, k.args) for k in _calls([y @ v, pa.sin(y)])]
    assert [f for f, _ in again] == ["cublas", "elementwise"], again


def test_a_replayed_schedule_keeps_the_library_call(with_cublas):
    x, w, _, _ = _products()
    prog = pa.compile(x.T @ w, target="cuda")
    again = pa.compile(x.T @ w, target="cuda", schedule=prog.schedule)
    assert [k.form for k in again.kernels.values()] == ["cublas"]


def _column_major(flat, rows, cols, ld, op):
    """BLAS's operand: ``op(X)`` of the column-major ``X`` at ``flat`` with
    leading dimension ``ld`` (``op`` 1: transposed), ``rows x cols`` after op."""
    stored = (cols, rows) if op else (rows, cols)
    x = flat[:ld * stored[1]].reshape(stored[1], ld).T[:stored[0]]
    return x.T if op else x


def _gemm_model(facts, a, b):
    """C of the column-major strided-batched call ``gemm_arguments`` makes."""
    opb, opa, m, n, k, ldb, lda, ldc, sb, sa, sc, batch = gemm_arguments(facts)
    a, b = a.ravel(), b.ravel()
    c = np.zeros(batch * sc, np.result_type(a, b))
    for s in range(batch):
        first = _column_major(b[s * sb:], m, k, ldb, opb)
        second = _column_major(a[s * sa:], k, n, lda, opa)
        c[s * sc:s * sc + ldc * n].reshape(n, ldc).T[:m] = first @ second
    return c


@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
@pytest.mark.parametrize("batch", [(), (3,), (2, 3)])
@pytest.mark.parametrize("broadcast", ["", "a", "b"])
def test_the_column_major_call_computes_numpys_product(transpose_a, transpose_b, batch,
                                                       broadcast):
    """Every layout a product's facts can say, through the call's arguments
    in a model of column-major BLAS, and through the host's fallback."""
    rng = np.random.default_rng(7)
    M, N, K = 5, 7, 3
    ba, bb = (batch if broadcast != "a" else ()), (batch if broadcast != "b" else ())
    a = rng.standard_normal(ba + ((K, M) if transpose_a else (M, K)))
    b = rng.standard_normal(bb + ((N, K) if transpose_b else (K, N)))
    want = np.matmul(np.swapaxes(a, -1, -2) if transpose_a else a,
                     np.swapaxes(b, -1, -2) if transpose_b else b)
    if not batch:
        want = want.reshape(M, N)
    params = (("batch_a", bool(ba)), ("batch_b", bool(bb)), ("transpose_a", transpose_a),
              ("transpose_b", transpose_b))
    facts = {"params": params, "M": M, "N": N, "K": K, "batch": int(np.prod(batch))}
    np.testing.assert_allclose(_gemm_model(facts, a, b), want.ravel(), rtol=1e-12)
    out, = run_routine("matmul", params, ((want.shape, "<f8"),), [a, b])
    np.testing.assert_allclose(out, want, rtol=1e-12)


@needs_cublas
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", ["plain", "transposed", "batched", "broadcast", "gram",
                                  "epilogue", "ragged"])
def test_cublas_products_match_numpy(dtype, case):
    rng = np.random.default_rng(3)
    m, n, k = (300, 257, 301) if case == "ragged" else (256, 384, 512)
    shapes = {"plain": ((m, k), (k, n)), "transposed": ((k, m), (n, k)),
              "batched": ((4, m, k), (4, k, n)), "broadcast": ((4, m, k), (k, n)),
              "gram": ((m, k), None), "epilogue": ((m, k), (k, n)), "ragged": ((m, k), (k, n))}
    sa, sb = shapes[case]
    va = rng.standard_normal(sa).astype(dtype)
    vb = rng.standard_normal(sb).astype(dtype) if sb else None
    a = pa.placeholder("a", va.shape, dtype)
    b = pa.placeholder("b", vb.shape, dtype) if sb else None
    if case == "transposed":
        expr, want = a.T @ b.T, va.T @ vb.T
    elif case == "gram":
        expr, want = a @ a.T, va @ va.T
    elif case == "epilogue":
        expr, want = pa.tanh(a @ b) + 1, np.tanh(va @ vb) + 1
    else:
        expr, want = a @ b, va @ vb
    with using_thresholds(BLAS_MIN_WORK=1):         # the row for these sizes too
        prog = pa.compile(expr, target="cuda")
    assert "cublas" in [k.form for k in prog.kernels.values()]
    got = prog(**{"a": va, **({"b": vb} if sb else {})})
    tol = 1e-4 if dtype == np.float32 else 1e-12
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(k))
    times = prog.profile(**{"a": va, **({"b": vb} if sb else {})})
    blas = [k.name for k in prog.kernels.values() if k.form == "cublas"]
    assert blas and all(name in str(times) for name in blas), times


@needs_cublas
def test_products_in_repeated_calls_and_replayed_graphs(monkeypatch):
    """A cuBLAS step inside CUDA graphs: ``prog.repeat``'s captured steps
    (64 per graph, then one by one) and a program replayed as one graph;
    each result is NumPy's loop's."""
    from polyarray.targets.cuda import graphs
    rng = np.random.default_rng(5)
    xv = (rng.standard_normal((256, 256)) / 16).astype(np.float32)
    w0 = np.eye(256, dtype=np.float32)
    w = pa.shared(w0, name="w_blas_repeat")
    x = pa.placeholder("x", (256, 256), np.float32)
    with using_thresholds(BLAS_MIN_WORK=1):
        prog = pa.compile([], target="cuda", updates={w: pa.tanh(x @ w) + w0})
    assert "cublas" in [k.form for k in prog.kernels.values()]
    assert prog._exe.repeats_in_graphs(), "the product is captured, not called call by call"
    prog.repeat(70, x=xv)
    want = w0
    for _ in range(70):
        want = np.tanh(xv @ want) + w0
    np.testing.assert_allclose(w.get_value(), want, rtol=1e-4, atol=1e-4)

    monkeypatch.setattr(graphs, "REPLAY_MIN_LAUNCHES", 1)
    a = pa.placeholder("a", (256, 512), np.float32)
    with using_thresholds(BLAS_MIN_WORK=1):
        replayed = pa.compile(pa.tanh(a @ a.T) + 1, target="cuda")
    for seed in (1, 2):
        av = np.random.default_rng(seed).standard_normal((256, 512)).astype(np.float32)
        np.testing.assert_allclose(replayed(a=av), np.tanh(av @ av.T) + 1, rtol=1e-4,
                                   atol=1e-4)
    assert replayed._exe._replay is not None, "the program was replayed as a graph"


def test_tensor_core_precisions_go_to_cublas_at_any_size(with_cublas):
    """A float32 product asking for "tf32" or "bf16" is a cuBLAS call
    however small (the user asked for tensor cores); float64 and "highest"
    products keep the size rule."""
    s = pa.placeholder("s", (64, 64), np.float32)
    d = pa.placeholder("d", (64, 64), np.float64)
    ks = _calls([pa.matmul(s, s, precision="tf32"), pa.matmul(s, s, precision="bf16"),
                 s @ s + 1, pa.matmul(d, d, precision="tf32")])
    assert [k.form for k in ks if "einsum" in k.name] == ["cublas", "cublas", "tiled matmul",
                                                          "mma matmul"]
    assert [k.facts.get("precision") for k in ks[:2]] == ["tf32", "bf16"]


@needs_cublas
@pytest.mark.parametrize("precision,tol", [("tf32", 2e-3), ("bf16", 2e-2)])
def test_tensor_core_products_are_close_to_numpy_and_not_exact(precision, tol):
    """TF32 / bfloat16 inputs on the tensor cores: within the format's
    rounding of NumPy's product, and not NumPy's bits (the tensor cores ran)."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal((512, 1024)).astype(np.float32)
    b = rng.standard_normal((1024, 384)).astype(np.float32)
    x, y = pa.placeholder("x", a.shape, np.float32), pa.placeholder("y", b.shape, np.float32)
    prog = pa.compile(pa.matmul(x, y, precision=precision), target="cuda")
    assert [k.facts.get("precision") for k in prog.kernels.values()] == [precision]
    got, want = prog(x=a, y=b), a @ b
    scale = np.abs(a) @ np.abs(b)
    assert np.all(np.abs(got - want) <= tol * scale)
    highest = pa.compile(x @ y, target="cuda")(x=a, y=b)
    assert np.abs(got - want).max() > 10 * np.abs(highest - want).max()


def test_float16_products_become_half_calls(with_cublas):
    """A float16 product above ``BLAS_MIN_WORK`` is cuBLAS's half product on
    its operands' bits (``x.T`` read in place, no copy); smaller ones, and
    every one without nvmath-python, compute in float32 kernels."""
    x = pa.placeholder("x16", (1024, 512), np.float16)
    w = pa.placeholder("w16", (1024, 768), np.float16)
    ks = _calls([x.T @ w, pa.tanh(x.T @ w)])
    assert [(k.form, k.rule) for k in ks][0] == ("cublas", "matmul: float16 in cuBLAS")
    call = ks[0]
    assert call.facts["op"] == "matmul_half"
    assert [a.split("_", 1)[1] for a in call.args[:2]] == ["x16", "w16"]   # the inputs themselves
    assert dict(call.facts["params"])["transpose_a"] is True
    assert len(ks) == 2, ks                 # the call, then one kernel for both outputs
    s = pa.placeholder("s16", (256, 256), np.float16)
    assert "cublas" not in [k.form for k in _calls(s @ s)]


def test_float16_products_on_the_host_are_numpys():
    """The fallback (cuBLAS missing at run time): NumPy's float16 matmul on
    the bits, every layout."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 7, 5)).astype(np.float16)
    b = rng.standard_normal((3, 6, 7)).astype(np.float16)      # [j, k]: transposed
    params = (("batch_a", True), ("batch_b", True), ("transpose_a", True),
              ("transpose_b", True))
    out, = run_routine("matmul_half", params, (((3, 5, 6), "<u2"),),
                       [a.view(np.uint16), b.view(np.uint16)])
    want = np.matmul(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2))
    np.testing.assert_array_equal(out.view(np.float16), want)


@needs_cublas
@pytest.mark.parametrize("case", ["plain", "transposed", "batched"])
def test_float16_products_in_cublas_match_numpy(case):
    rng = np.random.default_rng(4)
    shapes = {"plain": ((512, 768), (768, 256)), "transposed": ((768, 512), (256, 768)),
              "batched": ((4, 256, 512), (4, 512, 384))}
    sa, sb = shapes[case]
    va = rng.standard_normal(sa).astype(np.float16)
    vb = rng.standard_normal(sb).astype(np.float16)
    a, b = pa.placeholder("a", sa, np.float16), pa.placeholder("b", sb, np.float16)
    expr, want = (a.T @ b.T, va.T @ vb.T) if case == "transposed" else (a @ b, va @ vb)
    with using_thresholds(BLAS_MIN_WORK=1):
        prog = pa.compile(expr, target="cuda")
    assert [k.facts.get("op") for k in prog.kernels.values()][0] == "matmul_half"
    got = prog(a=va, b=vb)
    assert got.dtype == np.float16 and got.shape == want.shape
    pa.testing.assert_allclose(got, want)


def test_the_tuner_times_the_library_call_against_generated_schedules(with_cublas):
    """A cuBLAS product's candidates: the call itself (no steps, first) and
    the tiled matmul's schedules, each of which builds the generated form
    (code generation only: no GPU); the operands named as the user's."""
    from polyarray import tuning
    x = pa.placeholder("x", (1024, 512), np.float32)
    for expr in (x.T @ x, x @ x.T):
        (info,) = pa.compile(expr, target="cuda").kernels.values()
        cands = tuning.default_candidates(info)
        assert cands[0] == () and len(cands) > 3
        assert all("'x'" in repr(c) for c in cands[1:])
        for steps in cands[1:3]:
            prog = pa.compile(expr, target="cuda", schedule={info.name: list(steps)})
            assert [k.form for k in prog.kernels.values()][0] == "tiled matmul"


@needs_cublas
def test_tuning_a_cublas_product_keeps_the_fastest_correct_form(tmp_path, monkeypatch):
    import polyarray.targets.device_common as dc
    monkeypatch.setenv("POLYARRAY_CACHE_DIR", str(tmp_path))
    dc.clear_memory_cache()
    rng = np.random.default_rng(8)
    av = rng.standard_normal((1024, 1024)).astype(np.float32)
    a = pa.placeholder("a", av.shape, np.float32)
    prog = pa.compile(a @ a.T, target="cuda")
    (name,) = prog.kernels
    from polyarray import tuning
    cands = tuning.default_candidates(prog.kernels[name])[:3]   # the call and two tilings
    tuned = prog.tune(candidates={name: cands}, budget_s=None, repeat=2, log=lambda line: None)
    rows = tuned._tuning["kernels"][name]["candidates"]
    assert rows[0][0] == "[]" and len(rows) == 3, rows         # the library call first
    assert all(r[1] is not None for r in rows), rows            # each one timed
    # (1024^3: cuBLAS 67 us, 8 x 8 tiles 780 us on an H200)
    assert tuned._tuning["kernels"][name]["chosen"] == "[]", rows
    assert [k.form for k in tuned.kernels.values()] == ["cublas"]
    np.testing.assert_allclose(tuned(a=av), av @ av.T, rtol=1e-4, atol=1e-3)
