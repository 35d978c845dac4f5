"""``sort``, ``argsort``, ``searchsorted`` and the scans (``cumsum``,
``cumprod``, ``cumulative_sum``, ``cumulative_prod``) against NumPy on every
target: ragged lengths, every axis, NaN and inf placement, stable ties,
integer promotion and wrap-around, NumPy's errors; the generated source of a
sort and of a chain of permuting reads stays linear; CUDA's compiles.

Each test compiles one program holding all its cases (CI's time)."""
import numpy as np
import pytest

import polyarray as pa
from helpers import CORE_DTYPES, assert_same

LENGTHS = (1, 2, 3, 5, 17, 100, 257)
EXTRA_DTYPES = [np.dtype(t) for t in (np.int8, np.uint8, np.float16)]


def _dtypes():
    return [pytest.param(d, id=d.name) for d in CORE_DTYPES + EXTRA_DTYPES]


def _keys(rng, shape, dtype):
    """Values with many ties and the extremes; floats with NaN, +-inf and -0.0."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        a = rng.integers(-3 if dtype.kind == "i" else 0, 4, shape).astype(dtype)
        flat = a.reshape(-1)
        flat[::7] = info.max
        flat[3::11] = info.min
        return a
    a = rng.integers(-3, 4, shape).astype(dtype)
    flat = a.reshape(-1)
    for k, v in enumerate((np.nan, np.inf, -np.inf, -0.0)):
        flat[k::9] = v
    return a


def _run(target, outputs, **inputs):
    """Compile ``outputs`` (a dict of Arrays) once, with placeholders named
    as ``inputs``, and return the results."""
    return pa.compile(outputs, target=target)(**inputs)


def _place(inputs):
    return {k: pa.placeholder(k, v.shape, v.dtype) for k, v in inputs.items()}


def _same_exactly(actual, expected, what):
    """Equal dtype, shape and values (NaN where NumPy has NaN)."""
    assert_same(actual, expected, what)
    np.testing.assert_array_equal(actual, expected, err_msg=what)


def _descending_argsort(x, axis=-1):
    """The array API's stable descending argsort (array_api_strict's formula)."""
    flipped = np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
    return x.shape[axis] - 1 - flipped


# -- sort and argsort --------------------------------------------------------

def test_sort_lengths(target):
    """Ragged lengths, NaN/inf/-0.0 and ties: sort and stable argsort both
    ways along the last axis (sort and argsort share their merge levels)."""
    rng = np.random.default_rng(0)
    inputs = {f"x{n}": _keys(rng, (2, n), np.float32) for n in LENGTHS}
    xs = _place(inputs)
    outs = {}
    for name, x in xs.items():
        outs[name + "_sort"] = pa.sort(x)
        outs[name + "_argsort"] = pa.argsort(x)
    for name in ("x5", "x100"):
        outs[name + "_desc"] = pa.sort(xs[name], descending=True)
        outs[name + "_argdesc"] = pa.argsort(xs[name], descending=True, stable=True)
    got = _run(target, outs, **inputs)
    for name, v in inputs.items():
        _same_exactly(got[name + "_sort"], np.sort(v), name + " sort")
        _same_exactly(got[name + "_argsort"], np.argsort(v, kind="stable"), name + " argsort")
    for name in ("x5", "x100"):
        v = inputs[name]
        _same_exactly(got[name + "_argdesc"], _descending_argsort(v), name + " argsort desc")
        _same_exactly(got[name + "_desc"], np.take_along_axis(v, _descending_argsort(v), -1),
                      name + " sort desc")
        assert np.isnan(got[name + "_desc"][:, 0]).all()      # NaN first, descending


@pytest.mark.parametrize("dtype", _dtypes())
def test_sort_dtypes(target, dtype):
    v = _keys(np.random.default_rng(1), (3, 21), dtype)
    x = pa.placeholder("x", v.shape, v.dtype)
    outputs = {"s": pa.sort(x), "a": pa.argsort(x), "s0": pa.sort(x, axis=0),
               "d": pa.argsort(x, descending=True)}
    got = _run(target, outputs, x=v)
    _same_exactly(got["s"], np.sort(v), "sort")
    _same_exactly(got["a"], np.argsort(v, kind="stable"), "argsort")
    _same_exactly(got["s0"], np.sort(v, axis=0), "sort axis 0")
    _same_exactly(got["d"], _descending_argsort(v), "argsort descending")


def test_sort_axes(target):
    """Every axis of a 3-D array (first, middle, last, None), NaN included;
    the kind and stable arguments change nothing (every kind is stable)."""
    v = _keys(np.random.default_rng(2), (4, 5, 6), np.float64)
    x = pa.placeholder("x", v.shape, v.dtype)
    outs = {f"s{a}": pa.sort(x, axis=a) for a in (0, 1, -1, None)}
    outs.update({f"a{a}": pa.argsort(x, axis=a, kind="quicksort") for a in (0, -2, None)})
    outs["m"] = x.argsort(axis=1, stable=True)
    got = _run(target, outs, x=v)
    for a in (0, 1, -1, None):
        _same_exactly(got[f"s{a}"], np.sort(v, axis=a), f"sort axis={a}")
    for a in (0, -2, None):
        _same_exactly(got[f"a{a}"], np.argsort(v, axis=a, kind="stable"), f"argsort axis={a}")
    _same_exactly(got["m"], np.argsort(v, axis=1, kind="stable"), "Array.argsort")


def test_argsort_ties_are_stable(target):
    """Many equal keys keep their index order, ascending and descending."""
    rng = np.random.default_rng(3)
    inputs = {"i": rng.integers(0, 3, 100).astype(np.int32), "b": rng.random((2, 40)) < 0.5,
              "z": np.zeros(9, np.float32)}
    xs = _place(inputs)
    outs = {}
    for k, x in xs.items():
        outs[k + "_a"] = pa.argsort(x)
        outs[k + "_d"] = pa.argsort(x, descending=True)
    got = _run(target, outs, **inputs)
    for k, v in inputs.items():
        _same_exactly(got[k + "_a"], np.argsort(v, kind="stable"), k + " argsort")
        _same_exactly(got[k + "_d"], _descending_argsort(v), k + " argsort descending")


def test_sort_edges(target):
    """Empty, one-element and 0-d arrays, as NumPy has them."""
    inputs = {"e": np.zeros((0, 3), np.float32), "z": np.int32(3), "o": np.array([2.5])}
    e, z, o = _place(inputs).values()
    outs = {"se": pa.sort(e, axis=0), "ae": pa.argsort(e), "az": pa.argsort(z),
            "sz": pa.sort(z, axis=None), "so": pa.sort(o), "ao": pa.argsort(o)}
    got = _run(target, outs, **inputs)
    ev, zv, ov = inputs.values()
    expected = {"se": np.sort(ev, axis=0), "ae": np.argsort(ev), "az": np.argsort(zv),
                "sz": np.sort(zv, axis=None), "so": np.sort(ov), "ao": np.argsort(ov)}
    for k, want in expected.items():
        _same_exactly(got[k], want, k)


# -- searchsorted ------------------------------------------------------------

def test_indices_that_do_not_depend_on_the_values_keep_their_inputs(target):
    """``argsort`` along an axis of one element (or none) and ``lexsort`` of
    0-d keys are zeros whatever the values, and the program still takes the
    placeholders they were computed from (a binding of each was refused)."""
    w = pa.placeholder("w", (2, 1), np.float16)
    v = pa.placeholder("v", (3, 0), np.float32)
    s = pa.placeholder("s", (), np.int64)
    outs = [pa.argsort(w), pa.lexsort([w, -w]), pa.argsort(v, axis=1), pa.lexsort([s])]
    prog = pa.compile(outs, target=target)
    assert set(prog.placeholders) == {"w", "v", "s"}
    wv, vv, sv = np.array([[-np.inf], [np.inf]], np.float16), np.zeros((3, 0), np.float32), 7
    got = prog(w=wv, v=vv, s=sv)
    for g, e in zip(got, [np.argsort(wv), np.lexsort([wv, -wv]), np.argsort(vv, axis=1),
                          np.lexsort([np.int64(sv)])]):
        assert_same(g, e)


def test_searchsorted(target):
    """Both sides, duplicates, queries out of range (and inf, NaN), NumPy's
    common dtype (a Python scalar counts as an array), a sorter, 0-d and
    empty cases."""
    a = np.array([-2.0, 1, 1, 1, 3.5, 3.5, 7, np.inf, np.nan])
    q = np.array([[-np.inf, -5, -2, 0, 1, 2, 3.5, 7, 8],
                  [np.inf, np.nan, 1.0, 1, 3, 7, 100, -3, 2]])
    ai = np.array([1, 2, 2, 5, 9, 9, 9], np.int64)
    u8 = np.array([0, 3, 3, 200], np.uint8)
    unsorted = np.array([5.0, 1, 9, 0, 7])
    perm = np.argsort(unsorted)
    inputs = {"a": a, "q": q, "ai": ai, "u8": u8, "uns": unsorted}
    A, Q, AI, U8, UNS = _place(inputs).values()
    outs = {}
    for side in ("left", "right"):
        outs["f" + side] = pa.searchsorted(A, Q, side=side)
        outs["i" + side] = pa.searchsorted(AI, Q[0, 1:8], side=side)
        outs["u" + side] = pa.searchsorted(U8, 300, side=side)
        outs["s" + side] = pa.searchsorted(UNS, Q, side=side, sorter=perm)
        outs["d" + side] = pa.searchsorted(AI, pa.sort(AI)[::-1], side=side)
    outs["scalar"] = pa.searchsorted(A, 3.5)
    outs["empty"] = pa.searchsorted(A[:0], Q)
    got = _run(target, outs, **inputs)
    for side in ("left", "right"):
        _same_exactly(got["f" + side], np.searchsorted(a, q, side=side), "float " + side)
        _same_exactly(got["i" + side], np.searchsorted(ai, q[0, 1:8], side=side), "int " + side)
        _same_exactly(got["u" + side], np.asarray(np.searchsorted(u8, 300, side=side)),
                      "uint8 and 300 " + side)
        _same_exactly(got["s" + side], np.searchsorted(unsorted, q, side=side, sorter=perm),
                      "sorter " + side)
        _same_exactly(got["d" + side], np.searchsorted(ai, ai[::-1], side=side), "dups " + side)
    _same_exactly(got["scalar"], np.asarray(np.searchsorted(a, 3.5)), "scalar")
    _same_exactly(got["empty"], np.searchsorted(a[:0], q), "empty")


def test_searchsorted_read_inside_a_reduction(target):
    """A binary search's probes in a reduction's body (their subscripts
    hold casts of the search's values): loopy's simplification of such a
    subscript raised instead of leaving it (fuzzer seed 1628201, a
    ``digitize`` then a ``min``)."""
    q = np.array([3.25, -7.0, 1.0, 0.5])
    Q = pa.placeholder("q", (4,), np.float64)
    edges = np.array([-1.0, 1.0, 4.0])
    outs = {"min": pa.searchsorted(pa.asarray(edges), Q[:1]).min(axis=-1, keepdims=True),
            "sum": (3 - pa.searchsorted(pa.asarray(edges), Q, side="right")).sum(),
            "digitize": pa.digitize(Q, edges[::-1], right=True).max()}
    got = _run(target, outs, q=q)
    _same_exactly(got["min"], np.searchsorted(edges, q[:1]).min(axis=-1, keepdims=True), "min")
    _same_exactly(got["sum"], np.asarray((3 - np.searchsorted(edges, q, side="right")).sum()),
                  "sum")
    _same_exactly(got["digitize"], np.asarray(np.digitize(q, edges[::-1], right=True).max()),
                  "digitize")


# -- scans -------------------------------------------------------------------

def _scan_values(rng, shape, dtype):
    """Small integers (exact in every dtype, float16 included), or floats
    near 1 (long products stay finite)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.7
    if dtype.kind in "iu":
        return rng.integers(-3 if dtype.kind == "i" else 0, 4, shape).astype(dtype)
    if dtype == np.float16:
        return rng.integers(-3, 4, shape).astype(dtype)
    return rng.uniform(0.9, 1.1, shape).astype(dtype) * rng.choice([-1, 1], shape)


@pytest.mark.parametrize("dtype", _dtypes())
def test_scans_dtypes(target, dtype):
    """Every scan of one dtype: default dtypes (small integers accumulate in
    int64 / uint64), axes, ``dtype=``, ``include_initial``."""
    rng = np.random.default_rng(4)
    v = _scan_values(rng, (3, 40), dtype)
    x = pa.placeholder("x", v.shape, v.dtype)
    with np.errstate(all="ignore"):
        cases = {
            "sum1": (pa.cumsum(x, axis=1), np.cumsum(v, axis=1)),
            "sum0": (pa.cumsum(x, axis=0), np.cumsum(v, axis=0)),
            "sumflat": (pa.cumsum(x), np.cumsum(v)),
            "prod1": (pa.cumprod(x, axis=-1), np.cumprod(v, axis=-1)),
            "prod0": (x.cumprod(axis=0), np.cumprod(v, axis=0)),
            "csum": (pa.cumulative_sum(x, axis=1, include_initial=True),
                     np.cumulative_sum(v, axis=1, include_initial=True)),
            "cprod": (pa.cumulative_prod(x, axis=0, include_initial=True),
                      np.cumulative_prod(v, axis=0, include_initial=True)),
            "int8": (x.cumsum(axis=1, dtype=np.int8), np.cumsum(v, axis=1, dtype=np.int8)),
            "bool": (pa.cumsum(x, axis=1, dtype=bool), np.cumsum(v, axis=1, dtype=bool)),
        }
    outputs = {k: c[0] for k, c in cases.items()}
    got = _run(target, outputs, x=v)
    for k, (_, want) in cases.items():
        assert_same(got[k], want, k)


def test_scan_lengths(target):
    """Ragged lengths across block boundaries, exact for integers
    (wrapping products included) and within tolerance for floats."""
    rng = np.random.default_rng(5)
    inputs = {f"i{n}": rng.integers(-5, 6, (2, n)).astype(np.int64) for n in LENGTHS}
    inputs.update({f"f{n}": rng.standard_normal((2, n)).astype(np.float32)
                   for n in (3, 16, 17, 257)})
    xs = _place(inputs)
    outs = {k + "_sum": pa.cumsum(x, axis=-1) for k, x in xs.items()}
    outs.update({k + "_prod": pa.cumprod(x, axis=1) for k, x in xs.items() if k[0] == "i"})
    got = _run(target, outs, **inputs)
    with np.errstate(all="ignore"):
        for k, v in inputs.items():
            assert_same(got[k + "_sum"], np.cumsum(v, axis=-1), k + " cumsum")
            if k[0] == "i":
                assert_same(got[k + "_prod"], np.cumprod(v, axis=1), k + " cumprod")


def test_scan_overflow_and_specials(target):
    """Integer results wrap exactly as NumPy's; NaN and inf land where
    NumPy's sequential loop puts them."""
    inputs = {
        "i8": np.full(40, 100, np.int8),
        "u8": np.full(40, 250, np.uint8),
        "i64": np.array([2**62, 2**62, 2**62, -5, 7] * 8, np.int64),
        "b": np.array([True, False, True, True] * 10),
        "f": np.array([1.0, np.inf, 2, -np.inf, 3, np.nan, 4] * 5),
        "g": np.array([2.0, 0.0, np.inf, 3.0, -1.0] * 7, np.float32),
    }
    i8, u8, i64, b, f, g = _place(inputs).values()
    outs = {"i8": pa.cumsum(i8), "i8w": pa.cumsum(i8, dtype=np.int8), "i8p": pa.cumprod(i8),
            "u8": pa.cumsum(u8), "u8w": pa.cumsum(u8, dtype=np.uint8),
            "i64": pa.cumsum(i64), "i64p": pa.cumprod(i64),
            "b": pa.cumsum(b), "bp": pa.cumprod(b), "ball": pa.cumprod(b, dtype=bool),
            "f": pa.cumsum(f), "fp": pa.cumprod(f), "gp": pa.cumprod(g), "gs": pa.cumsum(g)}
    got = _run(target, outs, **inputs)
    with np.errstate(all="ignore"):
        want = {"i8": np.cumsum(inputs["i8"]), "i8w": np.cumsum(inputs["i8"], dtype=np.int8),
                "i8p": np.cumprod(inputs["i8"]), "u8": np.cumsum(inputs["u8"]),
                "u8w": np.cumsum(inputs["u8"], dtype=np.uint8), "i64": np.cumsum(inputs["i64"]),
                "i64p": np.cumprod(inputs["i64"]), "b": np.cumsum(inputs["b"]),
                "bp": np.cumprod(inputs["b"]), "ball": np.cumprod(inputs["b"], dtype=bool),
                "f": np.cumsum(inputs["f"]), "fp": np.cumprod(inputs["f"]),
                "gp": np.cumprod(inputs["g"]), "gs": np.cumsum(inputs["g"])}
    for k, w in want.items():
        assert_same(got[k], w, k)          # NaN exactly where NumPy has NaN


def test_scan_edges(target):
    inputs = {"e": np.zeros((0, 3), np.float32), "z": np.int32(3), "o": np.array([2.5])}
    e, z, o = _place(inputs).values()
    outs = {"ce": pa.cumsum(e, axis=0), "cz": pa.cumsum(z), "ie": pa.cumulative_sum(
        e, axis=0, include_initial=True), "io": pa.cumulative_prod(o, include_initial=True),
        "iz": pa.cumulative_sum(z), "cz0": pa.cumprod(z, axis=0)}
    got = _run(target, outs, **inputs)
    ev, zv, ov = inputs.values()
    want = {"ce": np.cumsum(ev, axis=0), "cz": np.cumsum(zv), "cz0": np.cumprod(zv, axis=0),
            "ie": np.cumulative_sum(ev, axis=0, include_initial=True),
            "io": np.cumulative_prod(ov, include_initial=True), "iz": np.cumulative_sum(zv)}
    for k, w in want.items():
        assert_same(got[k], w, k)


LONG_ROWS = ((5000,), (3, 4097), (2, 70001), (1, 1 << 16))


def test_long_scans(target):
    """Rows long enough for the single-pass kernel (CUDA) across tile
    boundaries, in each of its dtypes: sums and products as NumPy's, -0.0
    first kept, NaN and inf placed, integers wrapping; two scans of one
    input; a scan of a computed value; a second call (the tile states
    start again from zero)."""
    rng = np.random.default_rng(11)
    inputs = {}
    for k, shape in enumerate(LONG_ROWS):
        f = rng.standard_normal(shape)
        f.reshape(-1)[0] = -0.0
        inputs[f"f32_{k}"] = f.astype(np.float32)
        inputs[f"f64_{k}"] = rng.uniform(0.999, 1.001, shape)
        inputs[f"i64_{k}"] = rng.integers(-2**40, 2**40, shape)
        inputs[f"i32_{k}"] = rng.integers(-2**30, 2**30, shape).astype(np.int32)
        inputs[f"u32_{k}"] = rng.integers(0, 2**32, shape, dtype=np.uint32)
        inputs[f"u64_{k}"] = rng.integers(1, 4, shape).astype(np.uint64)
    special = np.ones(9000, np.float32)
    special[[10, 5000]] = np.inf, np.nan
    special[7000] = -np.inf
    inputs["special"] = special
    xs = _place(inputs)
    outs, want = {}, {}
    with np.errstate(all="ignore"):
        for k, x in xs.items():
            v = inputs[k]
            dt = v.dtype                                # the kernels' dtype, not int64's
            outs[k + "_sum"] = pa.cumsum(x, axis=-1, dtype=dt)
            want[k + "_sum"] = np.cumsum(v, axis=-1, dtype=dt)
            if k[0] in "iu" or k.startswith("f64"):     # wrapping and near-1 products
                outs[k + "_prod"] = pa.cumprod(x, axis=-1, dtype=dt)
                want[k + "_prod"] = np.cumprod(v, axis=-1, dtype=dt)
        outs["computed"] = pa.cumsum(xs["f32_2"] * 2 + 1, axis=1) - 3
        want["computed"] = np.cumsum(inputs["f32_2"] * 2 + 1, axis=1) - 3
        outs["initial"] = pa.cumulative_sum(xs["i64_1"], axis=1, include_initial=True)
        want["initial"] = np.cumulative_sum(inputs["i64_1"], axis=1, include_initial=True)
        # columns (CUDA's column scan): ragged tiles of rows, a partial warp of columns
        for k, (shape, axis) in enumerate((((300, 70), 0), ((3, 129, 40), 1),
                                           ((65, 2, 33), 0))):
            for dt in (np.float32, np.int64, np.uint32):
                v = (rng.standard_normal(shape) if dt == np.float32 else
                     rng.integers(0, 2**20, shape)).astype(dt)
                c = pa.asarray(v)
                outs[f"col{k}_{np.dtype(dt).name}"] = pa.cumsum(c, axis=axis, dtype=dt)
                want[f"col{k}_{np.dtype(dt).name}"] = np.cumsum(v, axis=axis, dtype=dt)
            if k == 0:
                w = rng.uniform(0.99, 1.01, shape)
                outs["colprod"] = pa.cumprod(pa.asarray(w), axis=0)
                want["colprod"] = np.cumprod(w, axis=0)
    prog = pa.compile(outs, target=target)
    for call in range(2):
        got = prog(**inputs)
        for k, w in want.items():
            assert_same(got[k], w, f"{k} (call {call + 1})")
            if w.dtype.kind in "iu":
                np.testing.assert_array_equal(got[k], w, err_msg=k)
        if target in ("numpy", "cuda"):     # NumPy's loop, the single-pass kernel
            assert np.signbit(got["f32_0_sum"][0])      # -0.0 is its own first sum


def test_long_sorts(target):
    """Rows long enough for the radix sort (CUDA) in every dtype it takes:
    sort equal to NumPy's, argsort to NumPy's stable one (ties, -0.0 and
    0.0, NaN in index order), descending as the array API's; a sort of a
    computed value and a flattened 2-D array."""
    rng = np.random.default_rng(12)
    inputs = {}
    for n in (1500, 70001):
        for dt in (np.float32, np.float64, np.int8, np.uint8, np.int16, np.uint16, np.int32,
                   np.uint32, np.int64, np.uint64, np.bool_):
            inputs[f"{np.dtype(dt).name}_{n}"] = _keys(rng, (n,), dt)
    inputs["wide"] = rng.standard_normal(1 << 18).astype(np.float32)
    inputs["grid"] = rng.integers(-100, 100, (40, 60)).astype(np.int32)
    xs = _place(inputs)
    outs, want = {}, {}
    for k, x in xs.items():
        v = inputs[k]
        outs[k + "_s"], want[k + "_s"] = pa.sort(x, axis=None), np.sort(v, axis=None)
        outs[k + "_a"] = pa.argsort(x, axis=None)
        want[k + "_a"] = np.argsort(v, axis=None, kind="stable")
        if k.endswith("_1500"):
            outs[k + "_d"] = pa.argsort(x.reshape(-1), descending=True)
            want[k + "_d"] = _descending_argsort(v.reshape(-1))
            outs[k + "_ds"] = pa.sort(x.reshape(-1), descending=True)
            want[k + "_ds"] = np.flip(np.sort(v.reshape(-1)))
    outs["computed"] = pa.sort(xs["wide"] * -2 + 1)
    want["computed"] = np.sort(inputs["wide"] * -2 + 1)
    prog = pa.compile(outs, target=target)
    for call in range(2):
        got = prog(**inputs)
        for k, w in want.items():
            _same_exactly(got[k], w, f"{k} (call {call + 1})")


def test_radix_sort_wide_states(target):
    """Rows sorted with 64-bit tile states (CUDA: ``RADIX_WIDE_STATES``
    lowered to 0; the other targets sort as always) equal NumPy's."""
    from polyarray.codegen.policy import using_thresholds
    rng = np.random.default_rng(5)
    inputs = {"f": rng.standard_normal(90001).astype(np.float32),
              "i": rng.integers(-2**62, 2**62, 20011),
              "h": rng.integers(-9, 9, 30003).astype(np.int16)}
    xs = _place(inputs)
    outs = {}
    for k, x in xs.items():
        outs[k + "_s"], outs[k + "_a"] = pa.sort(x), pa.argsort(x, descending=True)
    with using_thresholds(RADIX_WIDE_STATES=0):
        prog = pa.compile(outs, target=target)
    if target == "cuda":
        assert prog.source.count("_pass_wide(") == 6
    got = prog(**inputs)
    for k, v in inputs.items():
        _same_exactly(got[k + "_s"], np.sort(v), k)
        _same_exactly(got[k + "_a"], _descending_argsort(v), k)


def test_radix_sort_kernels():
    """CUDA's radix sort of a row: the counts zeroed, every pass's digits
    counted in one read, then one kernel per 8-bit pass."""
    import loopy as lp
    from polyarray.codegen import lower_program
    for dt, passes in ((np.float32, 4), (np.int64, 8), (np.bool_, 1)):
        x = pa.placeholder("x", (5000,), dt)
        for y in (pa.sort(x), pa.argsort(x)):
            kernels = lower_program([y.node], lp.CudaTarget()).kernels
            assert [k.form for k in kernels] == ["radix sort"] * (2 + passes)
            kinds = [k.name.rsplit("_", 1)[-1] for k in kernels]
            assert kinds == ["init", "hist"] + ["pass"] * passes, kinds


def test_scan_kernels_by_policy():
    """CUDA: rows of at least ``SCAN_SINGLE_PASS`` values are the
    single-pass kernel (and the one zeroing its states), shorter rows and
    other axes the blocked scan; OpenCL has the blocked scan alone.  The
    numpy target runs NumPy's own loop: equal bit for bit."""
    import loopy as lp
    from polyarray.codegen import lower_program
    from polyarray.codegen.thresholds import current_thresholds
    n = current_thresholds().SCAN_SINGLE_PASS
    long_, short = (pa.placeholder(k, (2, m), np.float32) for k, m in (("a", n), ("b", n - 1)))
    outs = [pa.cumsum(long_, axis=1).node, pa.cumsum(short, axis=1).node,
            pa.cumsum(long_, axis=0).node]
    forms = [k.form for k in lower_program(outs[:1], lp.CudaTarget()).kernels]
    assert forms == ["single-pass scan"] * 2, forms
    cols = pa.placeholder("c", (current_thresholds().SCAN_COLUMNS, 32), np.float64)
    forms = [k.form for k in lower_program([pa.cumsum(cols, axis=0).node],
                                           lp.CudaTarget()).kernels]
    assert forms == ["column scan"] * 3, forms
    for target in (lp.CudaTarget(), lp.PyOpenCLTarget()):
        for out in (outs[1:] if isinstance(target, lp.CudaTarget) else outs):
            kernels = lower_program([out], target).kernels
            assert "single-pass scan" not in [k.form for k in kernels]
            assert any(k.form != "elementwise" for k in kernels)     # the blocks' sums
    v = np.random.default_rng(0).standard_normal((2, n)).astype(np.float32)
    got = pa.compile(pa.cumsum(long_, axis=1), target="numpy")(a=v)
    np.testing.assert_array_equal(got, np.cumsum(v, axis=1))

# -- errors ------------------------------------------------------------------

_ERRORS = {
    "kind": lambda xp, x: xp.sort(x, kind="fast"),
    "kind type": lambda xp, x: xp.argsort(x, kind=1),
    "order": lambda xp, x: xp.sort(x, order="a"),
    "kind and stable": lambda xp, x: xp.sort(x, kind="stable", stable=True),
    "axis": lambda xp, x: xp.sort(x, axis=2),
    "float axis": lambda xp, x: xp.argsort(x, axis=1.0),
    "0-d sort": lambda xp, x: xp.sort(x[0, 0]),
    "side": lambda xp, x: xp.searchsorted(x[0], 1.0, side="L"),
    "2-d searchsorted": lambda xp, x: xp.searchsorted(x, 1.0),
    "0-d searchsorted": lambda xp, x: xp.searchsorted(x[0, 0], 1.0),
    "sorter size": lambda xp, x: xp.searchsorted(x[0], 1.0, sorter=[0, 1]),
    "sorter dtype": lambda xp, x: xp.searchsorted(x[0], 1.0, sorter=[0.0, 1.0, 2.0]),
    "cumsum axis": lambda xp, x: xp.cumsum(x, axis=-3),
    "0-d cumsum axis": lambda xp, x: xp.cumsum(x[0, 0], axis=1),
    "cumulative_sum axis": lambda xp, x: xp.cumulative_sum(x),
    "cumulative_prod axis": lambda xp, x: xp.cumulative_prod(x, axis=2),
    "cumsum dtype": lambda xp, x: xp.cumsum(x, dtype="not a dtype"),
}


@pytest.mark.parametrize("name", list(_ERRORS))
def test_errors_as_numpy(name):
    """The same exception type as NumPy, when the node is built."""
    v = np.ones((2, 3))
    with pytest.raises(Exception) as want:
        _ERRORS[name](np, v)
    with pytest.raises(type(want.value)):
        _ERRORS[name](pa, pa.placeholder("x", v.shape, v.dtype))


def test_polyarray_refusals():
    """No ``out=`` for scans; a sorter out of range is an error (NumPy 2
    reads past the array)."""
    x = pa.placeholder("x", (3,), np.float64)
    with pytest.raises(NotImplementedError, match="out="):
        pa.cumsum(x, out=np.empty(3))
    with pytest.raises(ValueError, match="Sorter index out of range"):
        pa.searchsorted(x, 1.0, sorter=[0, 1, 3])


# -- generated code ----------------------------------------------------------

def _lowered(outputs):
    import loopy as lp
    from polyarray.codegen import lower_program
    return lower_program([o.node for o in outputs], lp.OpenCLTarget())


def test_sort_is_a_kernel_per_level():
    """log2(n) merge levels, keys and positions of a level in one kernel;
    a scan is a reduction kernel per level and one elementwise kernel."""
    x = pa.placeholder("x", (1000,), np.float32)
    assert len(_lowered([pa.sort(x)]).kernels) == 10
    assert len(_lowered([pa.argsort(x)]).kernels) == 10
    kernels = _lowered([pa.cumsum(x)]).kernels      # 1000 -> 63 -> 4 block totals
    assert [k.name.split("_")[1] for k in kernels] == ["sum"] * 3 + ["elementwise"]


def test_permuting_chain_source_is_linear():
    """Twenty stages that each read the last one at two places (the shape of
    a sorting network): the materialization pass cuts the chain into kernels
    (``MAX_INLINE_COPIES``, gathers read twice), so the source grows
    linearly; inlined, eight stages were already 22 KB and each two more
    multiplied it by four."""
    x = pa.placeholder("x", (64,), np.float32)
    perm = np.arange(64) ^ 1
    sizes = {}
    for stages in (10, 20):
        y = x
        for s in range(stages):
            y = y * 0.5 + y[perm ^ (s % 5)] * 0.25
        lowered = _lowered([y])
        sizes[stages] = len(lowered.source)
        assert len(lowered.kernels) <= stages
    assert sizes[20] < 2.5 * sizes[10] and sizes[20] < 20000, sizes


def test_cuda_source_compiles():
    """The CUDA source of sort, argsort, searchsorted and the scans, for a
    float, an integer and a boolean input, and of the single-pass scans in
    each of their dtypes, compiles with nvcc (no GPU)."""
    import loopy as lp
    from polyarray.codegen import lower_program
    from test_cuda_codegen import NVCC, _nvcc
    if NVCC is None:
        pytest.skip("nvcc (the CUDA compiler) is not on PATH")
    outs = []
    for dt in (np.float32, np.int64, np.bool_):
        x = pa.placeholder(f"x_{np.dtype(dt).name}", (3, 21), dt)
        outs += [pa.sort(x, axis=0), pa.argsort(x, descending=True), pa.cumsum(x, axis=1),
                 pa.cumprod(x), pa.searchsorted(pa.sort(x, axis=None), x)]
    for dt in (np.float32, np.int64, np.bool_, np.uint16):
        # the radix sorts' kernels
        x = pa.placeholder(f"row_{np.dtype(dt).name}", (3000,), dt)
        outs += [pa.sort(x), pa.argsort(x, descending=True)]
    for dt in (np.float32, np.float64, np.int32, np.int64, np.uint32, np.uint64):
        # the single-pass kernels: two of one dtype and one of each other
        x = pa.placeholder(f"long_{np.dtype(dt).name}", (2, 5000), dt)
        outs += [pa.cumsum(x, axis=1, dtype=dt), pa.cumprod(x, dtype=dt)]
    source = lower_program([o.node for o in outs], lp.CudaTarget()).source
    from polyarray.codegen.policy import using_thresholds
    with using_thresholds(RADIX_WIDE_STATES=0):         # 64-bit tile states
        wide = pa.placeholder("wide", (3000,), np.float64)
        wide_source = lower_program([pa.argsort(wide).node], lp.CudaTarget()).source
    assert wide_source.count("_pass_wide(") == 1
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in (("sort_scan", source), ("wide", wide_source)):
            result = _nvcc(text, tmp, name)
            assert result.returncode == 0, result.stderr[-3000:]
