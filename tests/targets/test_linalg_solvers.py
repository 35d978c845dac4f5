"""``pa.linalg``'s factorizations and solves on every target against
``numpy.linalg``: stacks of matrices, NumPy's dtype rules (float32 stays
float32, integers compute in float64), NumPy 2's ``solve`` rule for the
right-hand side, the work around a call fused with it, and NumPy's errors
(``LinAlgError`` for singular or not positive-definite matrices)."""
from __future__ import annotations

import numpy as np
import pytest

import polyarray as pa

# LAPACK on the host and a device library differ in the last bits; these are
# the comparisons' tolerances per dtype for well-conditioned inputs
TOL = {np.dtype(np.float32): 2e-4, np.dtype(np.float64): 1e-10,
       np.dtype(np.complex64): 2e-4, np.dtype(np.complex128): 1e-10}


def close(got, want, dtype=None):
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    tol = TOL[np.dtype(dtype or want.dtype)]
    scale = max(float(np.max(np.abs(want), initial=0.0)), 1.0)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


def spd(rng, shape, dtype=np.float64):
    a = rng.standard_normal(shape)
    n = shape[-1]
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dtype)


def well_conditioned(rng, shape, dtype=np.float64):
    n = shape[-1]
    return (rng.standard_normal(shape) + 2 * n ** 0.5 * np.eye(n)).astype(dtype)


def run(target, fn, *arrays):
    """``fn`` of placeholders bound to ``arrays`` on ``target``, so that the
    arrays are a program's inputs (data leaves would be folded on the host)."""
    names = [f"a{i}" for i in range(len(arrays))]
    ph = [pa.placeholder(n, a.shape, a.dtype) for n, a in zip(names, arrays)]
    out = fn(*ph)
    many = isinstance(out, (tuple, list))
    prog = pa.compile(list(out) if many else out, target=target)
    return prog(**dict(zip(names, arrays)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(5, 5), (3, 4, 4), (2, 1, 6, 6)])
def test_cholesky_inv_det_match_numpy(target, dtype, shape):
    rng = np.random.default_rng(0)
    a = spd(rng, shape, dtype)
    got = run(target, lambda x: [pa.linalg.cholesky(x), pa.linalg.cholesky(x, upper=True),
                                 pa.linalg.inv(x), pa.linalg.det(x)], a)
    close(got[0], np.linalg.cholesky(a))
    close(got[1], np.linalg.cholesky(a, upper=True))
    close(got[2], np.linalg.inv(a))
    close(got[3], np.linalg.det(a))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_solve_follows_numpy2s_rule_for_b(target, dtype):
    """``b`` 1-D: a vector (broadcast against the stack of ``a``); else
    ``(..., M, K)`` matrices, their stack broadcast against ``a``'s."""
    rng = np.random.default_rng(1)
    a = well_conditioned(rng, (3, 4, 4), dtype)
    cases = [rng.standard_normal(4), rng.standard_normal((4, 2)),
             rng.standard_normal((3, 4, 1)), rng.standard_normal((2, 1, 4, 3))]
    for b in cases:
        b = b.astype(dtype)
        got = run(target, pa.linalg.solve, a, b)
        close(got, np.linalg.solve(a, b))


def test_integers_compute_in_float64_and_mixed_promote(target):
    rng = np.random.default_rng(2)
    a = (rng.integers(-3, 4, (4, 4)) + 8 * np.eye(4, dtype=np.int64)).astype(np.int32)
    b = rng.standard_normal(4).astype(np.float32)
    got = run(target, lambda x, y: [pa.linalg.inv(x), pa.linalg.solve(x, y)], a, b)
    close(got[0], np.linalg.inv(a))
    close(got[1], np.linalg.solve(a, b))
    assert np.asarray(got[1]).dtype == np.float64


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_slogdet_eigh_eigvalsh(target, dtype):
    rng = np.random.default_rng(3)
    a = spd(rng, (2, 5, 5), dtype)
    m = well_conditioned(rng, (2, 5, 5), dtype)
    sign, logdet, w, v, w_u = run(target, lambda x, y: [*pa.linalg.slogdet(y),
                                                       *pa.linalg.eigh(x),
                                                       pa.linalg.eigvalsh(x, UPLO="U")], a, m)
    want_sign, want_log = np.linalg.slogdet(m)
    close(sign, want_sign)
    close(logdet, want_log)
    close(w, np.linalg.eigvalsh(a))
    close(w_u, np.linalg.eigvalsh(a, UPLO="U"))
    # eigenvectors are unique up to sign: compare what they reconstruct
    v = np.asarray(v)
    close(v @ (np.asarray(w)[..., None] * np.swapaxes(v, -1, -2)), a.astype(dtype))


@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (2, 5, 3)])
def test_qr_modes(target, mode, shape):
    rng = np.random.default_rng(4)
    a = rng.standard_normal(shape)
    got = run(target, lambda x: pa.linalg.qr(x, mode=mode), a)
    if mode == "r":
        r = np.asarray(got)
        close(np.abs(r), np.abs(np.linalg.qr(a, mode="r")))
        return
    q, r = map(np.asarray, got)
    wq, wr = np.linalg.qr(a, mode=mode)
    assert q.shape == wq.shape and r.shape == wr.shape
    close(q @ r, a)
    k = q.shape[-1]
    close(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(k), q.shape[:-2] + (k, k)))
    close(np.abs(r), np.abs(wr))


@pytest.mark.parametrize("full", [True, False])
@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (3, 5, 5)])
def test_svd_and_svdvals(target, full, shape):
    rng = np.random.default_rng(5)
    a = rng.standard_normal(shape)
    u, s, vh, s2 = run(target, lambda x: [*pa.linalg.svd(x, full_matrices=full),
                                         pa.linalg.svdvals(x)], a)
    wu, ws, wvh = np.linalg.svd(a, full_matrices=full)
    close(s, ws)
    close(s2, ws)
    assert np.asarray(u).shape == wu.shape and np.asarray(vh).shape == wvh.shape
    k = ws.shape[-1]
    u, vh = np.asarray(u), np.asarray(vh)
    close((u[..., :k] * np.asarray(s)[..., None, :]) @ vh[..., :k, :], a)


def test_built_on_the_calls_pinv_rank_power_multi_dot_norms(target):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((3, 5, 4))
    sq = well_conditioned(rng, (4, 4))
    low_rank = rng.standard_normal((6, 2)) @ rng.standard_normal((2, 5))
    chain = [rng.standard_normal(s) for s in ((10, 3), (3, 40), (40, 2), (2,))]
    got = run(target, lambda x, y, z, c0, c1, c2, c3: [
        pa.linalg.pinv(x), pa.linalg.matrix_rank(z), pa.linalg.matrix_power(y, 5),
        pa.linalg.matrix_power(y, -2), pa.linalg.matrix_power(y, 0),
        pa.linalg.multi_dot([c0, c1, c2, c3]), pa.linalg.norm(y, 2),
        pa.linalg.norm(x, "nuc", axis=(0, 2)), pa.linalg.matrix_norm(x, ord=-2)],
        a, sq, low_rank, *chain)
    close(got[0], np.linalg.pinv(a))
    assert int(np.asarray(got[1])) == np.linalg.matrix_rank(low_rank) == 2
    close(got[2], np.linalg.matrix_power(sq, 5))
    close(got[3], np.linalg.matrix_power(sq, -2))
    close(got[4], np.linalg.matrix_power(sq, 0))
    close(got[5], np.linalg.multi_dot(chain))
    close(got[6], np.linalg.norm(sq, 2))
    close(got[7], np.linalg.norm(a, "nuc", axis=(0, 2)))
    close(got[8], np.linalg.matrix_norm(a, ord=-2))


@pytest.mark.parametrize("bshape", [(7,), (7, 2)])
@pytest.mark.parametrize("ashape", [(7, 3), (3, 7)])
def test_lstsq(target, ashape, bshape):
    rng = np.random.default_rng(7)
    a = rng.standard_normal(ashape)
    b = rng.standard_normal((ashape[0],) + bshape[1:])
    pa.set_default_target(target)
    try:
        got = pa.linalg.lstsq(a, b)
        want = np.linalg.lstsq(a, b)
        close(got[0], want[0])
        close(got[1], want[1])
        assert int(np.asarray(got[2])) == want[2]
        close(got[3], want[3])
    finally:
        pa.set_default_target(None)


def test_the_work_around_a_call_runs_with_it(target):
    """Elementwise work before and after a call is one program with it:
    ``solve(2 * a + I, exp(b)) * 3``."""
    rng = np.random.default_rng(8)
    a = well_conditioned(rng, (2, 6, 6)) / 2
    b = rng.standard_normal((2, 6, 3))
    got = run(target, lambda x, y: pa.linalg.solve(2 * x + pa.eye(6), pa.exp(y)) * 3, a, b)
    close(got, np.linalg.solve(2 * a + np.eye(6), np.exp(b)) * 3)


def test_singular_and_indefinite_matrices_raise_numpys_error(target):
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(np.linalg.LinAlgError):
        np.asarray(run(target, pa.linalg.inv, singular))
    with pytest.raises(np.linalg.LinAlgError):
        np.asarray(run(target, pa.linalg.cholesky, -np.eye(3)))
    for b in (np.ones(2), np.ones((2, 3))):
        with pytest.raises(np.linalg.LinAlgError):
            np.asarray(run(target, pa.linalg.solve, singular, b))


def test_bad_input_is_refused_when_built():
    with pytest.raises(np.linalg.LinAlgError, match="must be square"):
        pa.linalg.inv(np.ones((2, 3)))
    with pytest.raises(np.linalg.LinAlgError, match="at least two-dimensional"):
        pa.linalg.cholesky(np.ones(3))
    with pytest.raises(TypeError, match="float16 is unsupported in linalg"):
        pa.linalg.det(np.ones((2, 2), np.float16))
    with pytest.raises(ValueError, match="does not match"):
        pa.linalg.solve(np.eye(3), np.ones(4))
    with pytest.raises(ValueError, match="UPLO"):
        pa.linalg.eigh(np.eye(2), UPLO="X")
    with pytest.raises(NotImplementedError, match="raw"):
        pa.linalg.qr(np.eye(2), mode="raw")
    with pytest.raises(TypeError, match="integer"):
        pa.linalg.matrix_power(np.eye(2), 1.5)
    assert pa.linalg.LinAlgError is np.linalg.LinAlgError


def test_shapes_and_dtypes_are_known_at_once():
    x = pa.placeholder("x", (3, 5, 4), np.float32)
    u, s, vh = pa.linalg.svd(x, full_matrices=False)
    assert (u.shape, s.shape, vh.shape) == ((3, 5, 4), (3, 4), (3, 4, 4))
    assert u.dtype == s.dtype == np.float32
    q, r = pa.linalg.qr(x, mode="complete")
    assert (q.shape, r.shape) == ((3, 5, 5), (3, 5, 4))
    sign, logdet = pa.linalg.slogdet(pa.placeholder("y", (2, 3, 3), np.int64))
    assert sign.shape == (2,) and sign.dtype == logdet.dtype == np.float64
    assert "linalg.svdvals" in pa.format_dag(pa.linalg.svdvals(x))


def test_the_policy_gives_cusolvers_routines_to_it_on_cuda_and_the_rest_to_the_host():
    """The policy's rows, read from a CUDA program's kernels (code generation
    alone: no GPU needed): cholesky, solve, inv, det, slogdet, eigh and
    eigvalsh of real matrices are cuSOLVER calls, qr and complex ones NumPy's
    LAPACK; on OpenCL all run on the host."""
    x = pa.placeholder("x", (3, 4, 4), np.float64)
    z = pa.placeholder("z", (4, 4), np.complex128)
    outs = [pa.linalg.cholesky(x), pa.linalg.inv(x), pa.linalg.solve(x, x), pa.linalg.det(x),
            *pa.linalg.slogdet(x), *pa.linalg.eigh(x), pa.linalg.eigvalsh(x),
            pa.linalg.qr(x, mode="r"), pa.linalg.inv(z), pa.linalg.eigvalsh(z)]
    on_cuda = {(k.facts["op"], k.facts["input_specs"][0][1], k.form, k.rule)
               for k in pa.compile(outs, target="cuda").kernels.values() if "op" in k.facts}
    device = ("cusolver", "linalg: cuSOLVER on the device")
    host = ("host lapack", "linalg: LAPACK on the host")
    assert on_cuda == {*((op, "<f8", *device) for op in ("cholesky", "inv", "solve", "det",
                                                          "slogdet", "eigh", "eigvalsh")),
                       ("qr", "<f8", *host), ("inv", "<c16", *host),
                       ("eigvalsh", "<c16", *host)}
    from polyarray import targets
    if targets.availability("opencl")[0]:
        forms = {k.form for k in pa.compile(outs, target="opencl").kernels.values()
                 if "op" in k.facts}
        assert forms == {"host lapack"}


def test_eig_and_eigvals_are_eager_with_numpys_value_dependent_dtype(target):
    """Real eigenvalues give float64 and complex ones complex128, as NumPy:
    the input is evaluated on the target, ``geev`` runs on the host, and a
    placeholder input is a clear error naming the reason."""
    rotation, symmetric = np.array([[0.0, -1.0], [1.0, 0.0]]), np.array([[2.0, 1.0], [1.0, 3.0]])
    stack = np.stack([symmetric, 2 * symmetric]).astype(np.float32)
    with pa.target(target):
        for m in (rotation, symmetric, stack):
            w, v = pa.linalg.eig(pa.asarray(m) * 1)
            ww, vv = np.linalg.eig(m)
            assert (w.dtype, v.dtype) == (ww.dtype, vv.dtype)
            close(np.asarray(w), ww)
            close(np.asarray(v), vv)
            assert pa.linalg.eigvals(pa.asarray(m) + 0).dtype == ww.dtype
    with pytest.raises(pa.LazyValueError, match="the dtype of its result depends on the values"):
        pa.linalg.eig(pa.placeholder("x", (2, 2), np.float64))
    with pytest.raises(np.linalg.LinAlgError, match="must be square"):
        pa.linalg.eigvals(np.ones((2, 3)))
