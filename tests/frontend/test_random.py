"""``pa.random``: Philox4x32-10 and Philox4x64-10 against Random123's known
answers, ``Generator(Philox(seed))`` against NumPy's own
``Generator(Philox(seed))`` bit for bit (and its state after each call),
the same bits on every target for both bit generators, streams that differ
per draw and repeat per seed (in another process too), the distributions'
statistics with fixed seeds, ``integers``' bounds, sampling, fusion with
the work around a draw, and NumPy's errors."""
import re
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


def _draws(seed, bit_generator=pa.random.Philox4x32):
    """One of every kind of draw, from a fresh generator."""
    g = pa.random.Generator(bit_generator(seed))
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
        "ints8_rejected": g.integers(0, 100, 200, np.int8),
        "mixed_ranges": g.integers(np.array([0, 0, 5]), np.array([2**40, 7, 2**33]), (5, 3)),
        "lazy_bounds": g.integers(0, pa.arange(1, 9) * 1000, (3, 8)),
        "lazy_bounds16": g.integers(-3, pa.arange(1, 9) * 7, (3, 8), np.int16, endpoint=True),
        "uniform_arrays": g.uniform(np.array([0.0, -3.0]), np.array([[1.0], [2.0]]), (4, 2, 2)),
        # low + range * u with the product rounded first: no overflow of
        # range * 2**53, no double rounding into subnormals
        "uniform_huge": g.uniform(0.0, 1.7e308, 64), "uniform_tiny": g.uniform(0.0, 3e-308, 64),
    }


EXACT = ("random64", "random32", "uniform", "ints8", "ints64", "uint64", "uint32", "bool",
         "arrays", "perm", "choice", "choice_p", "choice_unique", "ints8_rejected",
         "mixed_ranges", "lazy_bounds", "lazy_bounds16", "uniform_arrays", "uniform_huge",
         "uniform_tiny")


@pytest.mark.parametrize("bits", [pa.random.Philox4x32, pa.random.Philox])
def test_same_bits_on_every_target(device_target, bits):
    """Integers and uniform floats are bit for bit the NumPy reference's
    (the values NumPy's Philox would reject too: their fallback streams);
    normals and exponentials go through each target's log and cos."""
    names = sorted(_draws(3, bits))
    ref = dict(zip(names, _run([_draws(3, bits)[n] for n in names], "numpy")))
    dev = dict(zip(names, _run([_draws(3, bits)[n] for n in names], device_target)))
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
    lambda g, m: g.uniform(5, 1), lambda g, m: g.uniform(np.array([0, 5.0]), 1),
    lambda g, m: g.uniform(np.array([0, 1.0]), np.array([np.nan, 2.0])),
    lambda g, m: g.uniform(0.0, -0.0),
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
    """Every kind of draw of both bit generators as one CUDA source,
    generated without a GPU and compiled by nvcc for sm_90 (the Philox4x64
    helpers pick CUDA's intrinsics by ``__CUDACC__``)."""
    import shutil
    import tempfile

    import loopy as lp
    from polyarray.codegen import lower_program
    draws = _draws(0)
    numpy_draws = _draws(0, pa.random.Philox)
    source = lower_program([d[n].node for d in (draws, numpy_draws) for n in sorted(d)],
                           lp.CudaTarget()).source
    assert "pa_u_philox4x32_10" in source and "pa_philox4x64_unit" in source
    assert "__umul64hi" in source and "__dmul_rn" in source
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


# -- NumPy's Philox (Philox4x64-10) against NumPy itself ---------------------------

# Random123's kat_vectors, "philox4x64 10": counter (4 words), key (2), result (4)
KAT64 = [((0, 0, 0, 0), (0, 0),
          (0x16554d9eca36314c, 0xdb20fe9d672d0fdc, 0xd7e772cee186176b, 0x7e68b68aec7ba23b)),
         ((2**64 - 1,) * 4, (2**64 - 1,) * 2,
          (0x87b092c3013fe90b, 0x438c3c67be8d0224, 0x9cc7d7c69cd777b6, 0xa09caebf594f0ba0)),
         ((0x243f6a8885a308d3, 0x13198a2e03707344, 0xa4093822299f31d0, 0x082efa98ec4e6c89),
          (0x452821e638d01377, 0xbe5466cf34e90c6c),
          (0xa528f45403e61d95, 0x38c72dbd566e9788, 0xa5a1610e72fd18b5, 0x57bd43b5e52b7fe6))]


def _int(words):
    return sum(int(w) << (64 * k) for k, w in enumerate(words))


def test_philox4x64_known_answers(target):
    """The stream's next block is the one of counter + 1: a bit generator
    one below each known counter draws the known block as its 4 raw words."""
    bits = [pa.random.Philox(key=_int(k), counter=(_int(c) - 1) % 2**256) for c, k, _ in KAT64]
    got = _run([b.random_raw(4) for b in bits], target)
    for (_, _, want), words in zip(KAT64, got):
        assert words.dtype == np.uint64
        assert [int(w) for w in words] == list(want)
    words = R.philox4x64_block(*(np.array([c[j] for c, _, _ in KAT64], np.uint64)
                                 for j in range(4)),
                               *(np.array([k[j] for _, k, _ in KAT64], np.uint64)
                                 for j in range(2)))
    assert [[int(w[i]) for w in words] for i in range(3)] == [list(r) for _, _, r in KAT64]


def _same_state(ours, numpy_bits):
    theirs = numpy_bits.state
    assert ours.state["state"]["counter"].tolist() == theirs["state"]["counter"].tolist()
    assert ours.state["state"]["key"].tolist() == theirs["state"]["key"].tolist()
    for field in ("buffer_pos", "has_uint32", "uinteger"):
        assert ours.state[field] == theirs[field], field
    assert ours.state["buffer"].tolist() == theirs["buffer"].tolist()


def _pair(seed=None, **kw):
    return (pa.random.Generator(pa.random.Philox(seed, **kw)),
            np.random.Generator(np.random.Philox(seed, **kw)))


# ranges that NumPy's Lemire method never rejects in (8- and 16-bit dtypes:
# power-of-two and full ranges), or with probability below 1e-6 per value
# (32- and 64-bit units: a fixed seed)
CALLS = [
    ("random", (7,), {}), ("random", (5,), {"dtype": np.float32}),
    ("random", (3,), {"dtype": np.float32}), ("random", (), {}),
    ("random", (1,), {"dtype": np.float32}), ("random", ((2, 3),), {}),
    ("uniform", (-2.0, 5.0, 9), {}), ("uniform", (), {}),
    ("uniform", (0.0, 1.7e308, 9), {}), ("uniform", (0.0, 3e-308, 9), {}),
    ("uniform", (np.array([0.0, -3.0]), np.array([[1.0], [1e300]])), {}),
    ("random", (3,), {"dtype": np.float32}),
    ("integers", (0, 10, 13), {}), ("integers", (-5, 2**40, 5), {}),
    ("integers", (0, 2, 37), {"dtype": bool}),
    ("integers", (0, 1, 5), {"dtype": bool, "endpoint": True}),
    ("integers", (-128, 127, 9), {"dtype": np.int8, "endpoint": True}),
    ("integers", (0, 64, 7), {"dtype": np.uint8}),
    ("integers", (0, 2**16, 5), {"dtype": np.uint16}),
    ("integers", (-2**14, 2**14, 3), {"dtype": np.int16}),
    ("integers", (0, 2**32, 5), {"dtype": np.uint32}),
    ("integers", (7, 1000, 6), {"dtype": np.int32}),
    ("integers", (0, 2**64 - 1, 5), {"dtype": np.uint64, "endpoint": True}),
    ("integers", (-2**63, 2**63 - 1, 3), {"endpoint": True}),
    ("integers", (5, 5, 4), {"dtype": np.uint16, "endpoint": True}),
    ("integers", (3, 4, 4), {}),
    ("integers", (np.array([0, 5, 7]), np.array([[10], [2**40]])), {}),
    ("integers", (np.array([[0], [12], [15]]), np.array([16]), (3, 2)), {"dtype": np.int16}),
    ("integers", (np.array([0, 5, 7, 0, 0, 0, 0, 9]),
                  np.array([10, 6, 2**35, 1, 4, 7, 2**33, 10])), {}),
    ("integers", (0, 2**10, (2, 3)), {"dtype": np.uint64}),
    ("choice", (10, 7), {}), ("choice", (4, 9), {"p": [0.1, 0.2, 0.3, 0.4]}),
    ("choice", (5,), {}), ("random", (3,), {}),
]


@pytest.mark.parametrize("seed", [1234, 0, 2**70 + 5, [3, 1, 4]])
def test_numpy_philox_bit_for_bit(target, seed):
    """``Generator(Philox(seed))`` is NumPy's, call after call (odd lengths,
    32-bit halves left buffered, every dtype and unit of ``integers``), and
    leaves NumPy's state after each."""
    ours, theirs = _pair(seed)
    draws, want = [], []
    for name, args, kw in CALLS:
        draws.append(getattr(ours, name)(*args, **kw))
        want.append(getattr(theirs, name)(*args, **kw))
        _same_state(ours.bit_generator, theirs.bit_generator)
    for (name, args, kw), got, expected in zip(CALLS, _run(draws, target), want):
        expected = np.asarray(expected)
        assert got.dtype == expected.dtype and got.shape == expected.shape, (name, args)
        np.testing.assert_array_equal(got, expected, err_msg=f"{name}{args} {kw}")


def test_numpy_philox_keys_counters_and_raw_words(target):
    """``key=``/``counter=`` as NumPy sets them (the counter's carries
    across its 64-bit words, and past 2**256, inside the kernel), and
    ``random_raw``."""
    cases = [{"key": 7}, {"key": 2**128 - 1, "counter": 2**64 - 2},
             {"key": [5, 6], "counter": [2**64 - 1, 2**64 - 1, 2**64 - 1, 2**64 - 1]},
             {"seed": 9, "counter": 2**192 - 3}]
    draws, want = [], []
    for kw in cases:
        ours, theirs = _pair(**kw)
        for g, out in ((ours, draws), (theirs, want)):
            out += [g.bit_generator.random_raw(11), g.random(13), g.random(6, np.float32),
                    g.integers(0, 2**33, 9)]
            out.append(g.bit_generator.random_raw())
        _same_state(ours.bit_generator, theirs.bit_generator)
    for got, expected in zip(_run(draws, target), want):
        np.testing.assert_array_equal(got, np.asarray(expected))


def test_numpy_philox_state_advance_jumped():
    ours = pa.random.Philox(3)
    theirs = np.random.Philox(3)
    assert ours.seed_seq.entropy == theirs.seed_seq.entropy == 3
    assert pa.random.Philox(key=1).seed_seq is None
    g, h = pa.random.Generator(ours), np.random.Generator(theirs)
    for step in (lambda b: b.advance(5), lambda b: b.advance(2**256 + 3),
                 lambda b: b.advance(-1)):
        g.random(3, np.float32)
        h.random(3, np.float32)
        assert step(ours) is ours
        step(theirs)
        _same_state(ours, theirs)
        np.testing.assert_array_equal(np.asarray(g.random(5)), h.random(5))
    for jumps in (1, 3):
        mine, numpys = ours.jumped(jumps), theirs.jumped(jumps)
        _same_state(mine, numpys)
        _same_state(ours, theirs)           # jumped leaves its source as it was
        np.testing.assert_array_equal(np.asarray(mine.random_raw(6)), numpys.random_raw(6))
    assert ours.random_raw(4, output=False) is None
    theirs.random_raw(4, output=False)
    _same_state(ours, theirs)
    # a state NumPy made can be set, and continues as NumPy does
    h.random(1, np.float32)
    ours.state = theirs.state
    _same_state(ours, theirs)
    np.testing.assert_array_equal(np.asarray(g.random(3, np.float32)),
                                  h.random(3, np.float32))
    # a NumPy Philox (or a Generator over one) is copied, its state unchanged
    before = theirs.state
    copied = pa.random.Generator(h)
    assert isinstance(copied.bit_generator, pa.random.Philox)
    _same_state(copied.bit_generator, theirs)
    np.testing.assert_array_equal(np.asarray(copied.integers(0, 2**20, 5)),
                                  h.integers(0, 2**20, 5))
    assert before["state"]["counter"].tolist() != theirs.state["state"]["counter"].tolist() \
        or before["buffer_pos"] != theirs.state["buffer_pos"]
    assert isinstance(pa.random.default_rng(np.random.Philox(1)).bit_generator,
                      pa.random.Philox)
    assert isinstance(pa.random.default_rng(1).bit_generator, pa.random.Philox4x32)
    assert repr(pa.random.Generator(ours)) == "Generator(Philox)"


@pytest.mark.parametrize("call", [
    lambda m: m.Philox(1, key=2), lambda m: m.Philox(counter=2**256),
    lambda m: m.Philox(key=-1), lambda m: m.Philox(key=[1, 2, 3]),
    lambda m: m.Philox(key=0).advance("a"),
    lambda m: setattr(m.Philox(key=0), "state", [1]),
    lambda m: setattr(m.Philox(key=0), "state", {"bit_generator": "PCG64"}),
])
def test_numpy_philox_errors_are_numpys(call):
    with pytest.raises(Exception) as info:
        call(np.random)
    with pytest.raises(info.type) as ours:
        call(pa.random)
    assert str(ours.value) == str(info.value)


def test_numpy_philox_refuses_a_state_it_cannot_continue():
    bits = np.random.Philox(2)
    bits.random_raw(1)
    state = bits.state
    state["buffer"][2] ^= np.uint64(1)
    with pytest.raises(ValueError, match="block of its counter"):
        pa.random.Philox(key=0).state = state


def _plain(numpy_state, width, count):
    """A NumPy Philox from ``numpy_state``, past ``count`` units of ``width``
    bits as NumPy's bounded integers take them (its 32-bit halves, and the
    pieces its local buffers cut them into), and those units."""
    bits = np.random.Philox(key=0)
    bits.state = numpy_state
    dtype = {64: np.uint64, 32: np.uint32, 16: np.uint16, 8: np.uint8}[width]
    return bits, np.random.Generator(bits).integers(0, 2**width, count, dtype).astype(object)


def _first_rejection(units, width, rng):
    """Where NumPy's Lemire method first rejects a unit (None: nowhere):
    the product's low bits below ``(2**width - 1 - rng) % (rng + 1)``."""
    excl = rng + 1
    rejected = np.flatnonzero((units * excl) % 2**width < (2**width - 1 - rng) % excl)
    return int(rejected[0]) if rejected.size else None


@pytest.mark.parametrize("dtype, low, high, width", [
    (np.int8, 0, 100, 8), (np.uint8, 3, 200, 8), (np.int16, -1000, 30000, 16),
    (np.uint16, 0, 40000, 16), (np.int32, -2**31, 2**30, 32),
    (np.int64, 0, 2**31 + 1, 32), (np.uint64, 0, 2**63 + 2**62, 64)])
def test_numpy_philox_integers_up_to_a_rejection(target, dtype, low, high, width):
    """Where NumPy's Lemire method rejects a value and draws again (often
    for these ranges), the values before the first rejection are NumPy's,
    each later one is in range, and the generator moves past the units a
    draw without rejection takes; a draw without a rejection is NumPy's."""
    ours, theirs = _pair(77)
    draws, checks = [], []
    for n in (1, 3, 40, 400):
        plain, units = _plain(theirs.bit_generator.state, width, n)
        draws.append(ours.integers(low, high, n, dtype))
        checks.append((theirs.integers(low, high, n, dtype),
                       _first_rejection(units, width, high - low - 1)))
        _same_state(ours.bit_generator, plain)
        ours.bit_generator.state = theirs.bit_generator.state
    assert any(first is not None for _, first in checks)
    assert any(first is None for _, first in checks)
    for got, (want, first) in zip(_run(draws, target), checks):
        stop = len(want) if first is None else first
        np.testing.assert_array_equal(got[:stop], want[:stop])
        assert got.min() >= low and got.max() < high


def test_numpy_philox_rejection_fallback_is_uniform(target):
    """A range of 100 in 8 bits: NumPy rejects 56 of 256 bytes; the
    fallback draws keep every value at 1/100 (chi-square)."""
    g = pa.random.Generator(pa.random.Philox(5))
    x = _run(g.integers(0, 100, 200_000, np.int8), target)
    counts = np.bincount(x, minlength=100)
    expected = len(x) / 100
    # 99 degrees of freedom: P(> 160) is below 1e-4
    assert ((counts - expected) ** 2 / expected).sum() < 160


@pytest.mark.parametrize("bits", [pa.random.Philox4x32, pa.random.Philox])
def test_distributions_of_both_bit_generators(target, bits):
    """Normals, exponentials and permutations (NumPy's in distribution only
    with Philox) and uniform floats, integers and weighted choices."""
    from math import erf, sqrt
    g = pa.random.Generator(bits(21))
    z, e, u, k, perm, w = _run([g.standard_normal(N), g.exponential(2.0, N),
                                g.random(N, np.float32), g.integers(0, 7, N, np.int16),
                                g.permutation(500), g.choice(3, N, p=[0.5, 0.3, 0.2])], target)
    assert abs(z.mean()) < 5 / np.sqrt(N) and abs(z.std() - 1) < 0.01
    cdf = np.array([0.5 * (1 + erf(v / sqrt(2))) for v in z[:20000]])
    assert _chi2_uniform(cdf, 0, 1) < CHI2_MAX
    assert _chi2_uniform(1 - np.exp(-e / 2.0), 0, 1) < CHI2_MAX
    assert _chi2_uniform(u, 0, 1) < CHI2_MAX and u.dtype == np.float32
    assert np.all(np.abs(np.bincount(k, minlength=7) / N - 1 / 7) < 5 * np.sqrt(6 / 49 / N))
    assert sorted(perm) == list(range(500))
    np.testing.assert_allclose(np.bincount(w, minlength=3) / N, [0.5, 0.3, 0.2], atol=0.01)


def test_monte_carlo_pi_draws_fuse_into_the_count():
    """The draws of a Monte Carlo pi are computed inside the count's
    kernels, with either bit generator: as many kernels as counting over
    stored inputs takes (no kernel makes the draws alone)."""
    if "opencl" not in pa.available_targets():
        pytest.skip("opencl: no OpenCL device")
    n = 2**17
    p, q = pa.placeholder("p", (n,), np.float32), pa.placeholder("q", (n,), np.float32)
    stored = pa.compile((p * p + q * q <= 1).sum(), target="opencl")
    for bits in (pa.random.Philox4x32, pa.random.Philox):
        g = pa.random.Generator(bits(3))
        x, y = g.random(n, np.float32), g.random(n, np.float32)
        inside = (x * x + y * y <= 1).sum()
        prog = pa.compile(inside, target="opencl")
        assert len(prog.kernels) == len(stored.kernels), bits
        assert int(prog()) == int(pa.compile(inside, target="numpy")())


def test_numpy_philox_lazy_bounds(target):
    """Bounds that are lazy arrays: NumPy's numbers when every range holds
    more than one value (and more than 2**32 for 64-bit dtypes)."""
    ours, theirs = _pair(11)
    cases = [(0, np.arange(1, 9) * 2**33, (3, 8), np.int64),
             (np.array([-8, 0, 4, 6]), np.full(4, 8), (5, 4), np.int16),
             (0, np.full(3, 2**31), None, np.uint32)]
    draws, want = [], []
    for low, high, size, dtype in cases:
        lazy = [pa.array(b) + 0 if isinstance(b, np.ndarray) else b for b in (low, high)]
        draws.append(ours.integers(*lazy, size, dtype))
        want.append(theirs.integers(low, high, size, dtype))
        _same_state(ours.bit_generator, theirs.bit_generator)
    for got, expected in zip(_run(draws, target), want):
        np.testing.assert_array_equal(got, expected)


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


# -- neighbours sharing Philox4x32 blocks ----------------------------------------------

def _block_draws(g, n):
    return [g.random(n, np.float32), g.random(n), g.standard_normal(n, np.float32),
            g.standard_normal(n), g.integers(0, 1000, n, np.int32), g.integers(-2**62, 2**62, n),
            g.standard_exponential(n)]


@pytest.mark.parametrize("n", [4096, 4100, 1001])
def test_runs_of_neighbours_draw_what_one_element_per_item_draws(target, n):
    """A kernel whose work-items take runs of 4 neighbours (the layout the
    GPU policy gives draws: ``ElementsPerItem(4, contiguous=True)``) draws
    the numbers of the NumPy target, with whole runs, a last run cut short
    (1001) and a last group of runs cut short (4100)."""
    from polyarray.schedules import ElementsPerItem
    draws = _block_draws(pa.random.default_rng(21), n)
    ref = _run(draws, "numpy")
    for x, want in zip(draws, ref):
        prog = pa.compile(x, target=target)
        if target != "numpy":
            (name,) = prog.kernels
            prog = prog.with_schedule({name: [ElementsPerItem(4, 64, contiguous=True)]})
            assert prog.kernels[name].schedule == (ElementsPerItem(4, 64, contiguous=True),)
        got = prog()
        if want.dtype.kind == "f" and want.dtype != np.float32 or x is draws[3]:
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        elif x is draws[2]:
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        else:
            np.testing.assert_array_equal(got, want)


def test_draws_of_one_block_are_independent(target):
    """Neighbours of one block (four float32 uniforms; the cosine and sine
    of one Box-Muller pair) are uncorrelated, and every word of the block
    is used: the float32 uniforms of a draw are all different numbers."""
    g = pa.random.default_rng(22)
    u, z = _run([g.random(N, np.float32), g.standard_normal(N, np.float32)], target)
    for k in range(1, 4):
        assert abs(np.corrcoef(u[:-k], u[k:])[0, 1]) < 5 / np.sqrt(N)
    assert abs(np.corrcoef(z[0::2], z[1::2])[0, 1]) < 5 / np.sqrt(N / 2)
    assert abs(np.corrcoef(z[0::2] ** 2, z[1::2] ** 2)[0, 1]) < 5 / np.sqrt(N / 2)
    assert len(np.unique(u)) > 0.99 * N


def _body(source):
    return source[source.index('extern "C"'):]


def test_gpu_policy_gives_draws_runs_that_share_blocks():
    """On a GPU kind the policy gives a kernel that draws runs of 4
    neighbours per work-item (elementwise) or per step (a two-stage sum).
    The two-stage sum's flat index is ``4 * Y + u`` in unsigned arithmetic,
    which the C compiler sees through; the elementwise run lowers each
    element with its constant offset, so its source computes each half
    block, each pair's logarithm and square root, and one sincos per pair,
    once."""
    g = pa.random.default_rng(23)
    x, y = g.random(2**22, np.float32), g.random(2**22, np.float32)
    pi = pa.compile((x * x + y * y <= 1).sum(), target="cuda")
    s1 = next(k for name, k in pi.kernels.items() if name.endswith("_s1"))
    assert "shared random blocks" in s1.rule or any(
        getattr(step, "tag", None) == "unr" for step in s1.schedule)
    assert "4ul * (unsigned long)" in pi.source
    z = pa.compile(g.standard_normal(10**6, np.float32), target="cuda")
    (k,) = z.kernels.values()
    assert "shared random blocks" in k.rule
    assert k.schedule[0].contiguous and k.schedule[0].n == 4
    assert 10**6 // 4 % k.schedule[0].size == 0        # no clamped index (250 of 256)
    body = _body(z.source)
    assert body.count("pa_u_philox4x32_10_") == 2         # a half block per pair
    assert body.count("pa_log_float32(") == 2             # a radius per pair
    assert body.count("pa_cx_cis_complex64(") == 2        # one sincos per pair
    assert "sin_float32(" not in body and "cos_float32(" not in body
    # every value of the run before its stores
    assert body.rindex(" = v") > body.rindex("pa_cx_cis") \
        and body.index("out0[") > body.rindex("pa_cx_cis")


@pytest.mark.parametrize("shape", [(1024, 1000), (8, 128, 1000)])
def test_runs_share_blocks_in_draws_of_any_rank(shape):
    """A draw of several axes reads its block through its C-order flat
    index, which the run's lowering takes from the kernel's own flat index
    (not rebuilt from the axes): the blocks are still shared."""
    z = pa.compile(pa.random.default_rng(3).standard_normal(shape, np.float32),
                   target="cuda")
    (k,) = z.kernels.values()
    assert "shared random blocks" in k.rule
    assert _body(z.source).count("pa_u_philox4x32_10_") == 2
    u = pa.compile(pa.random.default_rng(3).random(shape, np.float32), target="cuda")
    counters = re.findall(r"pa_u_philox4x32_10_word_\w+\(([^,]+),", _body(u.source))
    assert len(counters) == 4 and len(set(counters)) == 1      # the words of one block
