"""``pa.random``: Philox4x32-10 against Random123's known answers, the same
bits on every target, streams that differ per draw and repeat per seed
(in another process too), the distributions' statistics with fixed seeds,
``integers``' bounds, sampling, fusion with the work around a draw, and
NumPy's errors."""
import subprocess
import sys

import numpy as np
import pytest

import polyarray as pa
from helpers import subprocess_env
from polyarray.codegen import program_key
from polyarray.ops import random as R

# Random123's kat_vectors, "philox4x32 10": counter (4 words), key (2), result (4)
KAT = [((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
       ((0xffffffff,) * 4, (0xffffffff,) * 2, (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
       ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
        (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1))]


def _run(outputs, target):
    return pa.compile(outputs, target=target)()


def test_philox_known_answers(target):
    ctr = np.array([c[1] << 32 | c[0] for c, _, _ in KAT], np.uint64)
    draw = np.array([c[3] << 32 | c[2] for c, _, _ in KAT], np.uint64)
    key = np.array([k[1] << 32 | k[0] for _, k, _ in KAT], np.uint64)
    nodes = [pa.Array(R.philox(pa.array(ctr).node, pa.array(draw).node, pa.array(key).node, h))
             for h in (0, 1)]
    low, high = _run(nodes, target)
    want_low = np.array([w[0] << 32 | w[1] for _, _, w in KAT], np.uint64)
    want_high = np.array([w[2] << 32 | w[3] for _, _, w in KAT], np.uint64)
    np.testing.assert_array_equal(low, want_low)
    np.testing.assert_array_equal(high, want_high)
    np.testing.assert_array_equal(R.philox_reference(ctr, draw, key, 1), want_high)


def _draws(seed):
    """One of every kind of draw, from a fresh generator."""
    g = pa.random.default_rng(seed)
    return {
        "random64": g.random((7, 9)), "random32": g.random(50, dtype=np.float32),
        "uniform": g.uniform(-2.0, 5.0, 40), "ints8": g.integers(-128, 128, 60, np.int8),
        "ints64": g.integers(-2**63, 2**63 - 1, 60, endpoint=True),
        "uint64": g.integers(0, 2**64 - 1, 60, np.uint64, endpoint=True),
        "uint32": g.integers(5, 2**32, 60, np.uint32), "bool": g.integers(0, 2, 30, bool),
        "arrays": g.integers(np.array([0, 10, -5]), np.array([3, 1000, 5]), (4, 3)),
        "perm": g.permutation(33), "choice": g.choice(10, (3, 4)),
        "choice_p": g.choice(4, 25, p=[0.1, 0.2, 0.3, 0.4]),
        "choice_unique": g.choice(20, 7, replace=False),
        "normal": g.normal(1.0, 3.0, 64), "normal32": g.standard_normal(64, np.float32),
        "exponential": g.exponential(2.0, 64),
        "exponential32": g.standard_exponential(64, np.float32),
    }


EXACT = ("random64", "random32", "uniform", "ints8", "ints64", "uint64", "uint32", "bool",
         "arrays", "perm", "choice", "choice_p", "choice_unique")


def test_same_bits_on_every_target(device_target):
    """Integers and uniform floats are bit for bit the NumPy reference's;
    normals and exponentials go through each target's log and cos."""
    names = sorted(_draws(3))
    ref = dict(zip(names, _run([_draws(3)[n] for n in names], "numpy")))
    dev = dict(zip(names, _run([_draws(3)[n] for n in names], device_target)))
    for name in names:
        assert dev[name].dtype == ref[name].dtype and dev[name].shape == ref[name].shape
        if name in EXACT:
            np.testing.assert_array_equal(dev[name], ref[name], err_msg=name)
        else:
            rtol = 1e-6 if ref[name].dtype == np.float32 else 1e-12
            np.testing.assert_allclose(dev[name], ref[name], rtol=rtol, atol=rtol, err_msg=name)


def test_streams_differ_per_draw_and_repeat_per_seed():
    a, b = pa.random.default_rng(5), pa.random.default_rng(5)
    x1, x2 = np.asarray(a.random(100)), np.asarray(a.random(100))
    assert not np.array_equal(x1, x2)                       # each call a new draw
    np.testing.assert_array_equal(np.asarray(b.random(100)), x1)   # same seed, same numbers
    np.testing.assert_array_equal(np.asarray(b.random(100)), x2)
    c = np.asarray(pa.random.default_rng(6).random(100))
    assert not np.array_equal(c, x1)
    # a draw's elements in C order: one shape or another, the same numbers
    np.testing.assert_array_equal(np.asarray(pa.random.default_rng(5).random((10, 10))),
                                  x1.reshape(10, 10))
    assert pa.random.default_rng(a) is a
    # a NumPy seed sequence or generator gives its seed's numbers
    np.testing.assert_array_equal(
        np.asarray(pa.random.default_rng(np.random.SeedSequence(5)).random(100)), x1)
    np.testing.assert_array_equal(
        np.asarray(pa.random.Generator(np.random.default_rng(5)).random(100)), x1)


def test_same_seed_same_numbers_in_another_process():
    code = ("import numpy as np, polyarray as pa\n"
            "g = pa.random.default_rng(1234)\n"
            "print(np.asarray(g.integers(0, 2**62, 5)).tolist(), "
            "np.asarray(g.random(3)).tolist())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=subprocess_env(PYTHONHASHSEED="77"), check=True).stdout
    g = pa.random.default_rng(1234)
    assert out.strip() == f"{np.asarray(g.integers(0, 2**62, 5)).tolist()} " \
                          f"{np.asarray(g.random(3)).tolist()}"


def test_draws_of_one_shape_are_one_program():
    g = pa.random.default_rng(0)
    x, y = g.random(1000), g.random(1000)
    assert program_key([x.node]) == program_key([y.node])
    assert not np.array_equal(np.asarray(x), np.asarray(y))


def test_a_draw_fuses_with_its_readers():
    g = pa.random.default_rng(0)
    x = pa.placeholder("x", (256,), np.float64)
    y = g.standard_normal(256) * x + g.random(256)
    prog = pa.compile(y, target="opencl") if "opencl" in pa.available_targets() else None
    if prog is None:
        pytest.skip("opencl: no OpenCL device")
    assert len(prog.kernels) == 1
    xs = np.linspace(0, 1, 256)
    np.testing.assert_allclose(prog(x=xs), pa.compile(y, target="numpy")(x=xs), rtol=1e-12)


N = 200_000


def _chi2_uniform(values, lo, hi, bins=40):
    counts, _ = np.histogram(values, bins=bins, range=(lo, hi))
    expected = len(values) / bins
    return ((counts - expected) ** 2 / expected).sum()


# chi-square with 39 degrees of freedom: P(> 80) is about 1e-4
CHI2_MAX = 80.0


def test_uniform_statistics(target):
    g = pa.random.default_rng(11)
    r64, r32, u = _run([g.random(N), g.random(N, np.float32), g.uniform(-3.0, 5.0, N)],
                       target)
    for x, lo, hi in ((r64, 0, 1), (r32, 0, 1), (u, -3, 5)):
        assert lo <= x.min() and x.max() < hi
        assert abs(x.mean() - (lo + hi) / 2) < 5 * (hi - lo) / np.sqrt(12 * N)
        assert abs(x.var() / ((hi - lo) ** 2 / 12) - 1) < 0.02
        assert _chi2_uniform(x, lo, hi) < CHI2_MAX
    assert r64.dtype == np.float64 and r32.dtype == np.float32
    assert np.all(r32 * 2**24 == np.floor(r32 * 2**24))            # 24 bits
    assert np.all(r64 * 2**53 == np.floor(r64 * 2**53))            # 53 bits
    assert len(np.unique(r64)) > N - 10


def test_normal_and_exponential_statistics(target):
    from math import erf, sqrt
    g = pa.random.default_rng(12)
    z, z32, n, e = _run([g.standard_normal(N), g.standard_normal(N, np.float32),
                         g.normal(2.0, 0.5, N), g.exponential(3.0, N)], target)
    assert z32.dtype == np.float32 and z.dtype == np.float64
    for x, mu, sd in ((z, 0, 1), (z32, 0, 1), (n, 2, 0.5)):
        assert abs(x.mean() - mu) < 5 * sd / np.sqrt(N)
        assert abs(x.std() / sd - 1) < 0.01
        # the normal CDF at each value is uniform
        u = np.array([0.5 * (1 + erf((v - mu) / (sd * sqrt(2)))) for v in x[:20000]])
        assert _chi2_uniform(u, 0, 1) < CHI2_MAX
    assert abs(e.mean() - 3.0) < 5 * 3.0 / np.sqrt(N) and e.min() >= 0
    assert _chi2_uniform(1 - np.exp(-e / 3.0), 0, 1) < CHI2_MAX


INT_CASES = [(np.int8, -128, 127), (np.uint8, 0, 255), (np.int16, -5, 3), (np.uint16, 7, 9),
             (np.int32, -2**31, 2**31 - 1), (np.uint32, 0, 2**32 - 1), (np.int64, -3, 4),
             (np.int64, -2**63, 2**63 - 1), (np.uint64, 2**64 - 4, 2**64 - 1),
             (np.uint64, 0, 2**64 - 1), (np.bool_, 0, 1)]


def test_integers_ranges(target):
    g = pa.random.default_rng(13)
    outs = []
    for dt, lo, hi in INT_CASES:
        outs.append(g.integers(lo, hi, 4000, dt, endpoint=True))
        if hi > lo:
            outs.append(g.integers(lo, hi, 4000, dt))
    got = _run(outs, target)
    k = 0
    for dt, lo, hi in INT_CASES:
        for endpoint in (True, False) if hi > lo else (True,):
            x = got[k]
            k += 1
            top = hi if endpoint else hi - 1
            assert x.dtype == np.dtype(dt) and x.shape == (4000,)
            xs = x.astype(object)
            assert xs.min() >= lo and xs.max() <= top, (dt, lo, hi, endpoint)
            if top - lo < 50:       # small ranges: both ends hit, every value about evenly
                assert xs.min() == lo and xs.max() == top
                counts = np.bincount((xs - lo).astype(np.int64), minlength=top - lo + 1)
                assert counts.min() > 4000 / (top - lo + 1) / 2


def test_integers_small_range_is_unbiased(target):
    """A range of 3 over 300000 draws: each value within 5 sigma of 1/3."""
    g = pa.random.default_rng(14)
    x = _run(g.integers(0, 3, 300_000, np.int32), target)
    p = np.bincount(x) / len(x)
    assert np.all(np.abs(p - 1 / 3) < 5 * np.sqrt(2 / 9 / len(x)))
    # NumPy's default dtype, high alone, arrays broadcast with size
    y = pa.random.default_rng(14).integers(5, size=(2, 3))
    assert y.dtype == np.int64 and y.shape == (2, 3)
    z = _run(pa.random.default_rng(1).integers(np.array([0, 100]), 110, size=(5000, 2)), target)
    assert z[:, 0].min() == 0 and z[:, 1].min() == 100 and z.max() == 109


def test_sampling(target):
    g = pa.random.default_rng(15)
    a = pa.array(np.arange(10.0) * 10)
    perm, shuffled, unique, weighted, picked, rows = _run(
        [g.permutation(1000), g.permutation(a), g.choice(50, 50, replace=False),
         g.choice(4, 40000, p=[0.1, 0.2, 0.3, 0.4]), g.choice(a, (3, 4)),
         g.choice(pa.array(np.arange(12).reshape(3, 4)), 5, axis=1)], target)
    assert perm.dtype == np.int64 and sorted(perm) == list(range(1000))
    assert not np.array_equal(perm, np.arange(1000))
    assert sorted(shuffled) == sorted(np.arange(10.0) * 10)
    assert sorted(unique) == list(range(50))
    freq = np.bincount(weighted, minlength=4) / len(weighted)
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.3, 0.4], atol=0.01)
    assert picked.shape == (3, 4) and set(picked.ravel()) <= set(np.arange(10.0) * 10)
    assert rows.shape == (3, 5) and np.all(rows % 4 == rows[0] % 4)


def test_shuffle_in_place():
    g = pa.random.default_rng(16)
    x = pa.array(np.arange(20).reshape(10, 2))
    view = x[:, 0]
    assert g.shuffle(x) is None
    got = np.asarray(x)
    assert sorted(got[:, 0]) == list(range(0, 20, 2)) and np.all(got[:, 1] == got[:, 0] + 1)
    np.testing.assert_array_equal(np.asarray(view), got[:, 0])      # views see the write
    with pytest.raises(TypeError, match="polyarray array"):
        g.shuffle(np.arange(3))


def test_legacy_module_functions():
    pa.random.seed(7)
    a = [np.asarray(f) for f in (pa.random.rand(2, 3), pa.random.randn(4),
                                 pa.random.randint(0, 5, 6), pa.random.random((2,)),
                                 pa.random.uniform(1, 2, 3), pa.random.normal(0, 1, 3))]
    pa.random.seed(7)
    b = [np.asarray(f) for f in (pa.random.rand(2, 3), pa.random.randn(4),
                                 pa.random.randint(0, 5, 6), pa.random.random((2,)),
                                 pa.random.uniform(1, 2, 3), pa.random.normal(0, 1, 3))]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert [x.shape for x in a] == [(2, 3), (4,), (6,), (2,), (3,), (3,)]
    assert a[2].dtype == np.int64 and a[0].dtype == np.float64
    assert pa.random.rand().shape == () and 0 <= float(pa.random.rand()) < 1
    # the default generator: the same numbers as default_rng with the seed
    np.testing.assert_array_equal(a[0], np.asarray(pa.random.default_rng(7).random((2, 3))))


def test_namespace_lists_its_functions_only():
    assert set(dir(pa.random)) == set(pa.random.__all__)
    assert "np" not in dir(pa.random) and "R" not in dir(pa.random)
    assert all(callable(getattr(pa.random, n)) for n in pa.random.__all__)
    assert pa.random is sys.modules["polyarray.random"]
    for name in ("rand", "randn", "randint", "random", "seed", "uniform", "normal",
                 "default_rng", "choice", "permutation", "shuffle", "exponential"):
        assert hasattr(np.random, name) and hasattr(pa.random, name)


def _numpy_error(fn):
    with pytest.raises(Exception) as info:
        fn(np.random.default_rng(0), np.random)
    return info.type, str(info.value)


@pytest.mark.parametrize("call", [
    lambda g, m: g.integers(5, 5), lambda g, m: g.integers(5, 4, endpoint=True),
    lambda g, m: g.integers(-1, 5, dtype=np.uint8), lambda g, m: g.integers(0, 257, dtype=np.uint8),
    lambda g, m: g.integers(0, 256, dtype=np.uint8, endpoint=True),
    lambda g, m: g.integers(0, 5, dtype=np.float64), lambda g, m: g.integers(0, 5, 3, bool),
    lambda g, m: g.integers(np.array([1, 5]), 3),
    lambda g, m: g.random(3, dtype=np.int32), lambda g, m: g.random(-1),
    lambda g, m: g.random(2.5), lambda g, m: g.normal(0, -1), lambda g, m: g.exponential(-1),
    lambda g, m: g.normal(0, np.array([1.0, -1.0])),
    lambda g, m: g.uniform(0, np.inf), lambda g, m: g.choice(0),
    lambda g, m: g.choice([], 3), lambda g, m: g.choice(5, 6, replace=False),
    lambda g, m: g.choice(5, p=[0.5, 0.5]), lambda g, m: g.choice(3, p=[0.5, 0.6, -0.1]),
    lambda g, m: g.choice(3, p=[0.5, 0.6, 0.1]), lambda g, m: g.choice(3, p=[[1.0]]),
    lambda g, m: g.standard_normal(3, dtype=np.int64),
    lambda g, m: g.standard_exponential(3, dtype=np.int32),
    lambda g, m: g.normal(np.zeros(3), 1, size=(2,)), lambda g, m: g.uniform(0, 1, size=-2),
    lambda g, m: m.rand(2.5), lambda g, m: m.randint(5, 2), lambda g, m: m.seed(-1),
    lambda g, m: type(g)(-1) if m is pa.random else np.random.default_rng(-1),
])
def test_errors_are_numpys(call):
    kind, message = _numpy_error(call)
    with pytest.raises(kind) as info:
        call(pa.random.default_rng(0), pa.random)
    assert str(info.value) == message


def test_cuda_source_compiles_with_nvcc():
    """Every kind of draw as one CUDA source, generated without a GPU and
    compiled by nvcc for sm_90 (the Philox function is C both dialects take)."""
    import shutil
    import tempfile

    import loopy as lp
    from polyarray.codegen import lower_program
    draws = _draws(0)
    source = lower_program([draws[n].node for n in sorted(draws)], lp.CudaTarget()).source
    assert "pa_u_philox4x32_10" in source
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc (the CUDA compiler) is not on PATH; the source was generated")
    with tempfile.TemporaryDirectory() as d:
        path = f"{d}/random.cu"
        with open(path, "w") as f:
            f.write(source)
        r = subprocess.run([nvcc, "-cubin", "-arch=sm_90", "-o", path + ".cubin", path],
                           capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[:4000]


def test_lazy_parameters_and_out(target):
    """Parameters may be lazy arrays (broadcast with ``size``; not checked),
    and ``random``/``standard_normal`` write ``out=`` (a polyarray array)."""
    g = pa.random.default_rng(21)
    lo = pa.placeholder("lo", (3,), np.int32)
    scale = pa.placeholder("scale", (2, 1), np.float64)
    ints = g.integers(lo, lo + 10, (4000, 3), np.int16)
    normals = g.normal(0.0, scale, (2, 5000))
    out = pa.zeros((6,), np.float32)
    assert g.random(dtype=np.float32, out=out) is out
    got_ints, got_normals, got_out = pa.compile([ints, normals, out], target=target)(
        lo=np.array([-5, 0, 30000], np.int32), scale=np.array([[1.0], [100.0]]))
    assert got_ints.dtype == np.int16
    for col, base in zip(got_ints.T, (-5, 0, 30000)):
        assert col.min() == base and col.max() == base + 9
    assert abs(got_normals[0].std() - 1) < 0.05 and abs(got_normals[1].std() - 100) < 5
    assert got_out.dtype == np.float32 and np.all((got_out >= 0) & (got_out < 1))
    assert len(set(got_out.tolist())) == 6
