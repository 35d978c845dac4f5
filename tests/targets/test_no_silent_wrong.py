"""Regression tests for silently wrong results found before, on every target
and, on OpenCL, both reduction layouts (CPU and GPU):

* 8- and 16-bit integers wrap before any use (reductions, casts,
  comparisons, wider arithmetic), and signed overflow wraps as in NumPy;
* bitwise results under comparisons keep C's meaning (property test over
  random expression trees against NumPy);
* placeholder names cannot collide with each other, with generated names or
  with C/OpenCL/CUDA keywords, macros and builtins;
* lazy gathers with out-of-bounds indices and negative integer powers raise
  NumPy's errors, and the program (and the device) works afterwards.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import polyarray as pa
from polyarray import targets
from conftest import TEST_TARGETS
from helpers import assert_same

LAYOUTS = [pytest.param((t, kind), id=f"{t}-{kind or 'default'}")
           for t in TEST_TARGETS
           for kind in (("cpu", "gpu") if t == "opencl" else (None,))]


@pytest.fixture(params=LAYOUTS)
def layout(request):
    name, kind = request.param
    ok, reason = targets.availability(name)
    if not ok:
        pytest.skip(f"{name}: {reason}")
    return name, kind


def run(layout, outs, **bindings):
    name, kind = layout
    opts = {"device_kind": kind} if kind else {}
    return pa.compile(outs, target=name, **opts)(**bindings)


def check(layout, outs, **bindings):
    got = run(layout, outs, **bindings)
    want = pa.compile(outs, target="numpy")(**bindings)
    for key in want:
        assert_same(got[key], want[key], f"{key} on {layout}")


# -- narrow integers ---------------------------------------------------------

NARROW = [np.int8, np.uint8, np.int16, np.uint16]


@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: np.dtype(d).name)
def test_narrow_integers_wrap_before_every_use(layout, dtype):
    """Every one of these overflowed its intermediate and was wrong before:
    C promotes to int and loopy dropped the cast back."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(1)
    xv = rng.integers(info.min, info.max, 64, endpoint=True).astype(dtype)
    xv[:4] = [info.max, info.max - 1, info.min, info.min + 3]
    yv = rng.integers(info.min, info.max, 64, endpoint=True).astype(dtype)
    x, y = pa.placeholder("x", (64,), dtype), pa.placeholder("y", (64,), dtype)
    sq, s2 = x * x, x + y
    outs = {"sum": sq.sum(), "sum2": s2.sum(), "max": sq.max(), "min": (x - y).min(),
            "argmax": sq.argmax(), "argmin": s2.argmin(), "i32": sq.astype(np.int32),
            "f64": s2.astype(np.float64), "eq": sq == sq[0], "lt": s2 < 3,
            "wide": sq + np.int32(1), "neg": (-x).astype(np.int64), "inv": (~x).sum(),
            "rows": (x * y).reshape(8, 8).sum(axis=1), "cols": sq.reshape(8, 8).max(axis=0),
            "any": ((x * y) == 0).any(), "mm": (x.reshape(8, 8) @ y.reshape(8, 8))}
    check(layout, outs, x=xv, y=yv)


def test_issue_examples_of_narrow_wrapping(target):
    x = pa.placeholder("x", (4,), np.uint8)
    w = pa.placeholder("w", (4,), np.uint8)
    y = pa.placeholder("y", (4,), np.int8)
    z = pa.placeholder("z", (3,), np.int8)
    outs = [(x * x).sum(), (w * w).max(), (w * w).argmax(), (y + y).sum(),
            (z * z).astype(np.int32), (z * z) == 16]
    got = pa.compile(outs, target=target)(x=np.array([200, 100, 17, 3], np.uint8),
                                          w=np.array([16, 15, 1, 2], np.uint8),
                                          y=np.array([100, 100, 50, 3], np.int8),
                                          z=np.array([100, 20, -3], np.int8))
    assert got[0] == 122 and got[1] == 225 and got[2] == 1 and got[3] == -6
    assert got[4].tolist() == [16, -112, 9] and got[5].tolist() == [True, False, False]


def test_signed_overflow_wraps_as_numpy(layout):
    """Signed overflow is undefined in C; NumPy wraps.  ``x + 1 > x`` at the
    maximum is False in NumPy, and a compiler may fold it to True."""
    for dtype in (np.int32, np.int64):
        info = np.iinfo(dtype)
        xv = np.array([info.max, info.min, -1, 7], dtype)
        x = pa.placeholder("x", (4,), dtype)
        check(layout, {"gt": x + 1 > x, "mul": x * x, "neg": -x, "sub": x - 1,
                       "floordiv": x // -1, "pow": x ** 3}, x=xv)


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.uint32, np.int64,
                                   np.uint64], ids=lambda d: np.dtype(d).name)
def test_integer_contractions_reductions_and_unary_ops_wrap(layout, dtype):
    """Found by the fuzzer on the H100 (seed 1071): ``square`` of int32
    overflowed in C, and nvcc folded ``v == max(v)`` on the assumption it
    could not.  Products, sums and matmuls of every integer width wrap."""
    rng = np.random.default_rng(3)
    info = np.iinfo(dtype)
    av = rng.integers(info.min, info.max, (32, 48), endpoint=True, dtype=dtype)
    bv = rng.integers(info.min, info.max, (48, 16), endpoint=True, dtype=dtype)
    av[0, :3] = [info.min, info.max, info.min + 1]
    a, b = pa.placeholder("a", (32, 48), dtype), pa.placeholder("b", (48, 16), dtype)
    sq = pa.square(a)
    outs = {"mm": a @ b, "ein": pa.einsum("ij,ij->i", a, a), "sum": a.sum(axis=0),
            "prod": a.prod(axis=1), "sq": sq, "sqmax": sq == sq.max(axis=-1, keepdims=True),
            "abs": pa.abs(a), "u": (a - b[0, 0]).astype(np.float64)}
    check(layout, outs, a=av, b=bv)


# -- bitwise precedence --------------------------------------------------------

def test_bitwise_results_under_comparisons(layout):
    x, y = pa.placeholder("x", (4,), np.int32), pa.placeholder("y", (4,), np.int32)
    outs = {"ne": (x ^ y) != 0, "nesum": ((x ^ y) != 0).sum(), "eq": (x & y) == 0,
            "lt": (x | y) < 3, "bool": (x & y).astype(bool), "not": pa.logical_not(x & y),
            "all": ((x & y) == 0).all(), "any": (x ^ y).astype(bool).any(),
            "where": pa.where(x & y, x, y), "and": pa.logical_and(x & y, x | y)}
    check(layout, outs, x=np.array([1, 2, 3, 4], np.int32), y=np.array([1, 3, 3, 0], np.int32))


_BINARY = ["bitwise_and", "bitwise_or", "bitwise_xor", "add", "subtract", "multiply",
           "equal", "not_equal", "less", "greater_equal", "logical_and", "logical_or",
           "logical_xor", "maximum"]
_UNARY = ["invert", "logical_not", "negative", "to_bool", "to_int8", "to_uint16"]


@st.composite
def expression_trees(draw, depth=4):
    """A random tree of bitwise, comparison, logical and arithmetic ops, as
    a function of two placeholders."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(["x", "y", "b", "3", "2"]))
    if draw(st.booleans()):
        return (draw(st.sampled_from(_UNARY)), draw(expression_trees(depth=depth - 1)))
    return (draw(st.sampled_from(_BINARY)), draw(expression_trees(depth=depth - 1)),
            draw(expression_trees(depth=depth - 1)))


def build(tree, env, top=True):
    if isinstance(tree, str):
        return env[tree] if (tree in env or top) and tree in env else \
            (env["x"] if top else int(tree))
    op, *args = tree
    vals = [build(a, env, top=False) for a in args]
    if all(isinstance(v, int) for v in vals):     # keep at least one array operand
        vals[0] = env["x"]
    if op.startswith("to_"):
        v = vals[0]
        return (v.astype(np.dtype(op[3:])) if not isinstance(v, int) else v)
    if op in ("invert", "negative") and _is_bool(vals[0]):
        op = "logical_not"
    if op == "negative" or op == "subtract":
        vals = [v.astype(np.int32) if _is_bool(v) else v for v in vals]
    mod = pa if not isinstance(env["x"], np.ndarray) else np
    return getattr(mod, op)(*vals)


def _is_bool(v):
    return not isinstance(v, int) and np.dtype(v.dtype) == np.bool_


@pytest.mark.parametrize("target_name", [t for t in TEST_TARGETS if t != "numpy"])
@settings(max_examples=20, deadline=None)
@given(trees=st.lists(expression_trees(), min_size=3, max_size=3))
def test_random_bitwise_comparison_trees_match_numpy(target_name, trees):
    ok, reason = targets.availability(target_name)
    if not ok:
        pytest.skip(f"{target_name}: {reason}")
    rng = np.random.default_rng(0)
    vals = {"x": rng.integers(-40, 40, 16).astype(np.int32),
            "y": rng.integers(-3, 300, 16).astype(np.int16),
            "b": rng.random(16) < 0.5}
    env = {k: pa.placeholder(k, (16,), v.dtype) for k, v in vals.items()}
    outs = []
    for tree in trees:
        out = build(tree, env)
        outs += [out, out.sum() if out.dtype != np.bool_ else out.any()]
    want = []
    for tree in trees:
        w = np.asarray(build(tree, vals))
        want += [w, w.sum() if w.dtype != np.bool_ else w.any()]
    used = pa.compile(outs, target="numpy").placeholders
    got = pa.compile(outs, target=target_name)(**{k: v for k, v in vals.items() if k in used})
    for g, w, tree in zip(got, want, [t for t in trees for _ in (0, 1)]):
        assert_same(g, np.asarray(w), f"{tree} on {target_name}")


# -- names ------------------------------------------------------------------

HOSTILE = ("NULL INFINITY NAN M_PI __global __restrict__ get_local_id get_group_id class new "
           "this template typename namespace operator threadIdx blockIdx int float double "
           "kernel global local half bool restrict uchar long signed char void return if "
           "for while sizeof lid gid i j k m t g u c uf row j0 j1 i0 i1 v1 v2 t0 out0 data0 "
           "insn1 acc_j x_r x_fetch p_x p_i p1_x k0_elementwise pa_err pa_add_int32 "
           "self cls lambda def").split()


def _names_program(names, dtype=np.float32):
    """Every kernel form over placeholders called ``names``: elementwise,
    reductions (row, column, full), a fused row kernel, a matmul, arg-reduce
    and a gather."""
    ps = [pa.placeholder(n, (8, 16), dtype) for n in names]
    total = ps[0]
    for k, p in enumerate(ps[1:], 1):
        total = total + p * float(k + 1)
    idx = pa.placeholder(names[-1] + "_idx", (5,), np.int64)
    soft = pa.exp(total - total.max(axis=1, keepdims=True))
    return {"ew": total, "rows": total.sum(axis=1), "cols": total.max(axis=0),
            "all": total.sum(), "soft": soft / soft.sum(axis=1, keepdims=True),
            "mm": ps[0] @ ps[-1].T, "arg": total.argmax(axis=1), "gather": total[idx]}


def _names_bindings(names):
    rng = np.random.default_rng(len(names))
    b = {n: rng.uniform(-1, 1, (8, 16)).astype(np.float32) for n in names}
    b[names[-1] + "_idx"] = np.array([0, 7, -1, 3, -8])
    return b


def test_hostile_names_on_every_kernel_form(layout):
    names = HOSTILE
    check(layout, _names_program(names), **_names_bindings(names))


@pytest.mark.parametrize("pair", [("i", "p_i"), ("t0", "p_t0"), ("v1", "p_v1"), ("x", "x_r"),
                                  ("x", "p1_x"), ("x", "x_fetch")], ids=str)
def test_colliding_name_pairs(layout, pair):
    a, b = (pa.placeholder(n, (3,), np.float32) for n in pair)
    got = run(layout, a - b, **{pair[0]: np.ones(3, np.float32),
                                pair[1]: np.full(3, 5, np.float32)})
    assert got.tolist() == [-4.0, -4.0, -4.0]


@pytest.mark.parametrize("target_name", [t for t in TEST_TARGETS if t != "numpy"])
@settings(max_examples=8, deadline=None)
@given(names=st.lists(st.sampled_from(HOSTILE) | st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}",
                                                                  fullmatch=True),
                      min_size=2, max_size=5, unique=True))
def test_drawn_names_match_numpy(target_name, names):
    ok, reason = targets.availability(target_name)
    if not ok:
        pytest.skip(f"{target_name}: {reason}")
    names = [n for n in names if not n.endswith("_idx")] or ["x"]
    out = _names_program(names)
    b = _names_bindings(names)
    want = pa.compile(out, target="numpy")(**b)
    got = pa.compile(out, target=target_name)(**b)
    for k in want:
        assert_same(got[k], want[k], f"{k} with names {names} on {target_name}")


# -- run-time checks ------------------------------------------------------------

def test_out_of_bounds_gathers_raise_and_the_program_still_works(layout):
    x = pa.placeholder("x", (10,), np.float32)
    idx = pa.placeholder("idx", (2,), np.int64)
    y = pa.placeholder("y", (4, 1000), np.float32)
    cols = pa.placeholder("cols", (3,), np.int32)
    xv, yv = np.arange(10, dtype=np.float32), np.ones((4, 1000), np.float32)
    name, kind = layout
    prog = pa.compile({"g": x[idx] * 2, "s": y[:, cols].sum(axis=1)}, target=name,
                      **({"device_kind": kind} if kind else {}))
    good = dict(x=xv, y=yv, cols=np.array([0, -1, 999], np.int32))
    for bad, msg in (([0, 100], "index 100 is out of bounds for axis 0 with size 10"),
                     ([-1000, 1], "index -1000 is out of bounds for axis 0 with size 10"),
                     ([2**40, 1], f"index {2**40} is out of bounds for axis 0 with size 10")):
        with pytest.raises(IndexError, match=msg):
            prog(idx=np.array(bad), **good)
        r = prog(idx=np.array([1, -2]), **good)       # state unchanged, device healthy
        assert r["g"].tolist() == [2.0, 16.0] and r["s"].tolist() == [3.0] * 4
    with pytest.raises(IndexError, match="index 1000 is out of bounds for axis 1 with size 1000"):
        prog(idx=np.array([0, 1]), x=xv, y=yv, cols=np.array([0, 1000, 1], np.int32))
    assert prog(idx=np.array([3, 4]), **good)["g"].tolist() == [6.0, 8.0]


def test_int64_uint64_comparisons_and_the_int64_minimum(layout):
    """NumPy compares int64 with uint64 by value (C converts the signed side
    to unsigned: fuzzer seed 7213), and -2**63 has no C literal (nvcc made
    it unsigned: fuzzer seed 7089 on the H100)."""
    a = pa.placeholder("a", (6,), np.int64)
    b = pa.placeholder("b", (6,), np.uint64)
    av = np.array([-13, -1, 0, 5, 2**62, -2**63], np.int64)
    bv = np.array([2**64 - 13, 2**64 - 1, 0, 5, 2**62, 3], np.uint64)
    outs = {f"{n}{k}": getattr(pa, n)(*((a, b) if k == 0 else (b, a)))
            for n in ("less", "less_equal", "greater", "greater_equal", "equal",
                      "not_equal") for k in (0, 1)}
    outs["min"] = a < -2**63
    outs["min_plus"] = a + np.int64(-2**63)
    check(layout, outs, a=av, b=bv)


def test_concatenated_gathers_read_inside_their_pieces(layout):
    """Fuzzer seed 2143 (PoCL, GPU layout): a piece of a concatenation shared
    by several reads is computed into a temporary ahead of the select, at an
    index past the piece; its gather then read past the index buffer and the
    check raised on garbage (now and then).  Pieces are read at a clamped
    index (codegen/lowering/builder.py map_concatenate)."""
    a = pa.placeholder("a", (4,), np.uint32)
    z = pa.placeholder("z", (5,), np.uint8)
    g = a[z]
    v = (((g ^ 9) + 3) * g) - g
    out = pa.concatenate([v, v[::-1], v[1:3]], axis=0)
    b = dict(a=np.array([183100015, 919521474, 3513126339, 2710802095], np.uint32),
             z=np.array([0, 1, 2, 2, 3], np.uint8))
    name, kind = layout
    prog = pa.compile(out, target=name, **({"device_kind": kind} if kind else {}))
    want = pa.compile(out, target="numpy")(**b)
    for _ in range(10):
        assert_same(prog(**b), want)


DEVICE_TARGETS = [t for t in TEST_TARGETS if t != "numpy"]


@pytest.mark.parametrize("name", DEVICE_TARGETS)
def test_device_results_raise_failed_checks_when_read(name):
    """With out="device" a call returns while its kernels run; a failed check
    is raised where a result reaches the host or another program's host
    output (targets/deferred_checks.py), never silently."""
    ok, reason = targets.availability(name)
    if not ok:
        pytest.skip(f"{name}: {reason}")
    x = pa.placeholder("x", (10,), np.float32)
    idx = pa.placeholder("idx", (2,), np.int64)
    y = pa.placeholder("y", (2,), np.float32)
    xv = np.arange(10, dtype=np.float32)
    prog = pa.compile(x[idx] * 2, target=name, out="device")
    after = pa.compile(y + 1, target=name, out="device")     # no checks of its own
    host = pa.compile(y + 1, target=name)
    msg = "index 100 is out of bounds for axis 0 with size 10.*out='device'"

    with pytest.raises(IndexError, match=msg):      # the result's own get()
        prog(x=xv, idx=np.array([1, 100])).get()
    assert prog(x=xv, idx=np.array([1, 2])).get().tolist() == [2.0, 4.0]

    chained = after(y=prog(x=xv, idx=np.array([100, 2])))
    with pytest.raises(IndexError, match=msg):      # a result computed from it
        chained.get()
    assert after(y=prog(x=xv, idx=np.array([3, 2]))).get().tolist() == [7.0, 5.0]

    r = prog(x=xv, idx=np.array([100, 0]))
    with pytest.raises(IndexError, match=msg):      # another program's host output
        host(y=r)
    assert host(y=prog(x=xv, idx=np.array([0, 1]))).tolist() == [1.0, 3.0]

    prog(x=xv, idx=np.array([0, 100]))
    with pytest.raises(IndexError, match=msg):
        prog.synchronize()
    prog.synchronize()                              # the flags were cleared
    if name == "cuda":                              # export to another library
        r = prog(x=xv, idx=np.array([100, 0]))
        with pytest.raises(IndexError, match=msg):
            r.__cuda_array_interface__
        assert prog(x=xv, idx=np.array([5, 0])).__cuda_array_interface__["shape"] == (2,)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64],
                         ids=lambda d: np.dtype(d).name)
def test_negative_integer_powers_raise(layout, dtype):
    a, b = pa.placeholder("a", (3,), dtype), pa.placeholder("b", (3,), dtype)
    name, kind = layout
    prog = pa.compile(a ** b, target=name, **({"device_kind": kind} if kind else {}))
    av, bv = np.array([2, 3, -2], dtype), np.array([3, 2, 5], dtype)
    assert_same(prog(a=av, b=bv), av ** bv)
    with pytest.raises(ValueError, match="Integers to negative integer powers are not allowed"):
        prog(a=av, b=np.array([-1, 2, 1], dtype))
    assert_same(prog(a=av, b=bv), av ** bv)
    assert_same(run(layout, (a ** b).sum(), a=av, b=bv), (av ** bv).sum())


def test_where_casts_python_scalars_as_numpy(target):
    """A Python scalar out of the result dtype's range: NumPy 2.4's where
    casts it unsafely (where(c, -1, uint16) holds 65535), NumPy 2.5's raises
    OverflowError; polyarray does what the installed NumPy does."""
    c = pa.placeholder("c", (3,), np.bool_)
    u = pa.placeholder("u", (3,), np.uint16)
    cv, uv = np.array([True, False, True]), np.array([1, 2, 3], np.uint16)
    for x, y in ((-1, u), (u, 70000), (2.5, u), (7, u)):
        def arg(v):
            return uv if v is u else v
        try:
            want = np.where(cv, arg(x), arg(y))
        except OverflowError as e:
            with pytest.raises(OverflowError, match=str(e)):
                pa.where(c, x, y)
            continue
        assert_same(pa.compile(pa.where(c, x, y), target=target)(c=cv, u=uv), want)


def test_schedule_of_a_placeholder_named_like_a_buffer_replays():
    """A placeholder ``data0`` beside the generated buffer ``data0``: the
    schedule names each unambiguously and replays to the same source."""
    a = pa.array(np.arange(48 * 48, dtype=np.float32).reshape(48, 48))
    d = pa.placeholder("data0", (48, 48), np.float32)
    prog = pa.compile(a @ d, target="cuda")          # source only: no GPU needed
    arrays = {s.array for steps in prog.schedule.values() for s in steps
              if hasattr(s, "array")}
    assert arrays == {"data0", "p5_data0"}, prog.schedule
    assert prog.with_schedule(prog.schedule).source == prog.source


def test_take_modes_and_empty_indices(target):
    x = pa.placeholder("x", (4, 10), np.float32)
    i = pa.placeholder("i", (3,), np.int32)
    xv, iv = np.arange(40, dtype=np.float32).reshape(4, 10), np.array([0, 12, -13], np.int32)
    for mode in ("wrap", "clip"):
        for axis in (None, 0, 1):
            got = pa.compile(pa.take(x, i, axis=axis, mode=mode), target=target)(x=xv, i=iv)
            assert_same(got, np.take(xv, iv, axis=axis, mode=mode))
    with pytest.raises(IndexError, match="out of bounds for axis 1 with size 10"):
        pa.compile(pa.take(x, i, axis=1), target=target)(x=xv, i=iv)
    assert_same(pa.compile(pa.take(x, [], axis=0), target=target)(x=xv), np.take(xv, [], axis=0))
    with pytest.raises(ValueError, match="clipmode"):
        pa.take(x, i, mode="bogus")


@pytest.mark.parametrize("kind", ["gpu", "cpu"])
@pytest.mark.parametrize("shape", [(20000, 257), (3000, 2000), (260, 3), (100000, 7)])
def test_split_column_partials_are_all_written(shape, kind):
    """A chunk of the reduced range past its end once left its partials
    unwritten: the combine then read whatever the memory pool held (right
    by luck on fresh, zeroed memory).  The suite poisons allocations
    (POLYARRAY_POISON), so this fails every time if it comes back."""
    ok, why = targets.availability("opencl")
    if not ok:
        pytest.skip(f"opencl: {why}")
    rng = np.random.default_rng(0)
    xv = rng.standard_normal(shape).astype(np.float32)
    x = pa.placeholder("x", shape, np.float32)
    prog = pa.compile(x.sum(axis=0), target="opencl", device_kind=kind)
    assert_same(prog(x=xv), xv.sum(axis=0), f"{shape} {kind}")


@pytest.mark.parametrize("index_dtype", [np.uint64, np.int64, np.int32])
def test_gather_through_a_concatenation_with_any_index_dtype(index_dtype):
    """The pieces of a concatenation are read at an index clamped into each
    piece; with a uint64 gather index OpenCL's min/max were ambiguous and the
    program did not build (fuzzer seed 9342)."""
    ok, why = targets.availability("opencl")
    if not ok:
        pytest.skip(f"opencl: {why}")
    a, b = pa.placeholder("a", (70,), np.float64), pa.placeholder("b", (70,), np.uint64)
    i = pa.placeholder("i", (4,), index_dtype)
    av, bv = np.arange(70.0), np.arange(70, dtype=np.uint64) * 3
    iv = np.array([82, 111, 42, 70], index_dtype)
    got = pa.compile(pa.concatenate([a, b])[i], target="opencl")(a=av, b=bv, i=iv)
    assert_same(got, np.concatenate([av, bv])[iv])


# -- x ** 0.5 is NumPy's sqrt --------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16])
def test_power_one_half_is_sqrt_at_minus_inf_and_minus_zero(layout, dtype):
    """NumPy computes ``x ** 0.5`` with an exponent of one value (a Python or
    NumPy scalar, a one-element array) as sqrt: NaN at -inf, -0.0 at -0.0,
    where C's pow gives inf and 0 (fuzzer seed 106).  An array of
    exponents keeps pow's answers in both."""
    xv = np.array([-np.inf, -0.0, np.inf, 4.0, -4.0, 0.25, np.nan, 2.0], dtype=np.float64)
    if np.dtype(dtype).kind == "f":
        xv = xv.astype(dtype)
    else:
        xv = np.array([0, 1, 4, 9, -4, 7, 100, 2], dtype)
    x = pa.placeholder("x", xv.shape, dtype)
    halves = np.full(xv.shape, 0.5)
    outs = {"op": x ** 0.5, "ufunc": pa.power(x, 0.5), "np32": x ** np.float32(0.5),
            "one": x ** np.array([0.5]), "new axis": x ** np.array([[0.5]]),
            "array": x ** halves, "quarter": x ** 0.25}
    got = run(layout, outs, x=xv)
    with np.errstate(all="ignore"):
        want = {"op": xv ** 0.5, "ufunc": np.power(xv, 0.5), "np32": xv ** np.float32(0.5),
                "one": xv ** np.array([0.5]), "new axis": xv ** np.array([[0.5]]),
                "array": xv ** halves, "quarter": xv ** 0.25}
    for key in want:
        assert_same(got[key], want[key], key)
        real = ~np.isnan(want[key])           # (a NaN's sign is not NumPy's contract)
        np.testing.assert_array_equal(np.signbit(got[key])[real], np.signbit(want[key])[real],
                                      key)


def test_expressions_differing_deep_down_are_different_programs(target):
    """Digests wrote expressions with pymbolic's ``repr``, which elides what
    lies a few levels down: sort and descending sort had one program key,
    and a target returned the first one compiled for both."""
    v = pa.placeholder("v", (9,), np.float32)
    data = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5], np.float32)
    up, down = pa.sort(v), pa.sort(v, descending=True)
    assert up.node.digest != down.node.digest
    assert_same(pa.compile(up, target=target)(v=data), np.sort(data))
    assert_same(pa.compile(down, target=target)(v=data), np.sort(data)[::-1])
    deep = [pa.sin(pa.cos(pa.exp(pa.sqrt(pa.abs(v) + c)))) for c in (1.0, 2.0)]
    assert deep[0].node.digest != deep[1].node.digest


def test_logical_ops_refuse_python_ints_past_a_c_long_as_numpy():
    """Fuzzer seed 12639 (opencl, 300 examples): NumPy converts the Python int
    of a bool loop through a C long, and raises past it; polyarray took it."""
    x = pa.placeholder("x", (3,), np.uint64)
    for v in (2**63, 2**64 - 1, -2**63 - 1):
        with pytest.raises(OverflowError, match="too large to convert to C long"):
            np.logical_or(np.ones(3, np.uint64), v)
        with pytest.raises(OverflowError, match="too large to convert to C long"):
            pa.logical_or(x, v)
    assert pa.logical_and(x, 2**63 - 1).dtype == np.bool_


def test_divisions_in_unrolled_subscripts_stay_floor_divisions(layout):
    """Fuzzer seed 2261382048 (opencl cpu, 300 examples): loopy re-simplified
    an unrolled lane's subscript ``(16*k + 8) // 14`` to ``1 + (k - 3) / 7``
    and printed it as C's truncating ``/``, so the CPU lanes form summed the
    wrong elements of a transposed array (codegen/loopy_fixes/exact_division.py).
    Reads through transposes and moved axes, in reductions of every extent
    mod 16 and in an elementwise kernel large enough to unroll its items."""
    rng = np.random.default_rng(7)
    outs, want, binds = [], [], {}
    for k, (a, b) in enumerate([(14, 15), (7, 30), (13, 17), (3, 70)]):
        data = rng.integers(-9, 9, (a, b)).astype(np.int32)
        x = pa.placeholder(f"x{k}", (a, b), np.int32)
        binds[f"x{k}"] = data
        cube = data.reshape(a, b, 1)
        outs += [x.T.sum(), pa.moveaxis(x.reshape(a, b, 1), 0, -1).sum(axis=(0, 2)),
                 x.T.sum(axis=0), (x.T * 2).max(axis=1)]
        want += [data.T.sum(), np.moveaxis(cube, 0, -1).sum(axis=(0, 2)),
                 data.T.sum(axis=0), (data.T * 2).max(axis=1)]
    big = rng.standard_normal((300, 700)).astype(np.float32)
    y = pa.placeholder("y", big.shape, np.float32)
    outs.append(y.T + 1)
    want.append(big.T + 1)
    for got, w in zip(run(layout, outs, y=big, **binds), want):
        assert_same(got, w)


def test_constant_indices_never_take_a_float_constant_of_the_kernel(layout):
    """Fuzzer seed 24621316 (opencl): a flipped view's write read back at a
    constant position put ``(-1)*2`` in an index beside ``x + (-1)*2.0`` in a
    value; loopy's mappers memoize by expression, those two are equal in
    Python, and the index came back as ``2 + (-1)*2.0`` (the kernel did not
    build).  Also with an integer subtrahend and an integer array, where a
    float in place of an int would compute silently in the wrong type."""
    name, kind = layout
    opts = {"device_kind": kind} if kind else {}

    def kernel(v, w):
        v[::-1][:] -= 2.0
        v[1:-1] = 0.5 * (v[:-2] + v[2:])
        w[::-1][:] -= 2
        w[1:-1] = w[:-2] * 3 + w[2:]
        return v[2:] * 1.0, w[-1:] + 0

    base = np.array([-1.75, 0.0, -0.5]), np.array([5, -3, 7])
    want_args = [a.copy() for a in base]
    want = kernel(*want_args)
    got_args = [a.copy() for a in base]
    got = pa.jit(kernel, target=name, **opts)(*got_args)
    for g, w in zip(list(got) + got_args, list(want) + want_args):
        assert_same(g, w)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_sign_of_signed_zeros_is_numpys(layout, dtype):
    """``sign(-0.0)`` is ``+0.0`` in NumPy (the helper returned its argument
    for both zeros: ``-0.0``, and ``1 / sign(x)`` was ``-inf``); NaN stays
    NaN.  Found by the array API suite on cuda; the random-DAG test
    compares the signs of zeros since."""
    xv = np.array([-0.0, 0.0, np.nan, -np.inf, np.inf, -2.5, 3.0], dtype)
    x = pa.placeholder("x", xv.shape, dtype)
    got = run(layout, {"sign": pa.sign(x), "inverse": 1 / pa.sign(x)}, x=xv)
    with np.errstate(divide="ignore"):
        want = {"sign": np.sign(xv), "inverse": 1 / np.sign(xv)}
    for key in want:
        assert_same(got[key], want[key], key)
        real = ~np.isnan(want[key])
        np.testing.assert_array_equal(np.signbit(got[key])[real], np.signbit(want[key])[real],
                                      key)
