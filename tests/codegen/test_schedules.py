"""Schedules: every step type applied and checked against NumPy (on PoCL in
CI), every invalid step refused with ScheduleError, print -> replay round
trips, loop-nest inspection, raw loopy transforms, and autotuning with its
disk cache."""
import logging

import numpy as np
import pytest

import polyarray as pa
from polyarray import targets
from helpers import assert_same
from polyarray.schedules import (ElementsPerItem, GroupReduce, Layout, Prefetch,
                                 RegisterTile, Split, StoreThroughLocal, Tag, Tile, Unroll,
                                 Vectorize,
                                 WorkGroup,
                                 check_schedule, format_schedule, parse_schedule)

ok, reason = targets.availability("opencl")
needs_opencl = pytest.mark.skipif(not ok, reason=f"opencl: {reason}")
RNG = np.random.default_rng(11)


def _elementwise():
    x = pa.placeholder("x", (300, 16), np.float32)
    y = pa.placeholder("y", (16,), np.float32)
    xv, yv = RNG.standard_normal((300, 16)).astype(np.float32), \
        RNG.standard_normal(16).astype(np.float32)
    return pa.sin(x) * 2.0 + y, {"x": xv, "y": yv}, np.sin(xv) * np.float32(2) + yv


def _big_elementwise():
    n = (1 << 16) + 5                      # a ragged last work-group
    x = pa.placeholder("x", (n,), np.float32)
    xv = RNG.standard_normal(n).astype(np.float32)
    return x * x - 3.0, {"x": xv}, xv * xv - np.float32(3)


def _direct(dtype):
    """Elementwise over same-shape inputs only: every read is direct."""
    x, y = (pa.placeholder(n, (256, 12), dtype) for n in "xy")
    if np.dtype(dtype).kind == "f":
        xv, yv = (RNG.standard_normal((256, 12)).astype(dtype) for _ in "xy")
        return x * y + pa.exp(x), {"x": xv, "y": yv}, xv * yv + np.exp(xv)
    xv, yv = (RNG.integers(-50, 50, (256, 12)).astype(dtype) for _ in "xy")
    return x * y - 3 * x, {"x": xv, "y": yv}, xv * yv - 3 * xv


def _row_sum():
    x = pa.placeholder("x", (64, 500), np.float64)
    xv = RNG.standard_normal((64, 500))
    return x.sum(axis=1), {"x": xv}, xv.sum(axis=1)


def _col_sum():
    x = pa.placeholder("x", (3000, 40), np.float32)
    xv = RNG.standard_normal((3000, 40)).astype(np.float32)
    return x.sum(axis=0), {"x": xv}, xv.sum(axis=0)


def _hermite(N=6):
    rows = 1000                             # not a multiple of the work-group
    x = pa.placeholder("x", (rows, 1), np.float32)
    xv = RNG.uniform(-1, 1, (rows, 1)).astype(np.float32)
    H, Hn = [pa.ones_like(x), 2.0 * x], [np.ones_like(xv), 2 * xv]
    for k in range(1, N - 1):
        H.append(2.0 * x * H[k] - 2.0 * k * H[k - 1])
        Hn.append(np.float32(2) * xv * Hn[k] - np.float32(2 * k) * Hn[k - 1])
    return pa.concatenate(H, axis=1), {"x": xv}, np.concatenate(Hn, axis=1)


def _matmul():
    a = pa.placeholder("a", (64, 48), np.float32)
    b = pa.placeholder("b", (48, 32), np.float32)
    av, bv = (RNG.standard_normal(s).astype(np.float32) for s in ((64, 48), (48, 32)))
    return pa.tanh(a) @ b, {"a": av, "b": bv}, np.tanh(av) @ bv


def _matmul_transposed():
    """Both operands transposed views of inputs, read in place."""
    a = pa.placeholder("a", (48, 64), np.float32)
    b = pa.placeholder("b", (32, 48), np.float32)
    av, bv = (RNG.standard_normal(s).astype(np.float32) for s in ((48, 64), (32, 48)))
    return a.T @ b.T, {"a": av, "b": bv}, av.T @ bv.T


# (case, kernel pattern, steps, expected kind): one or more cases per step type
STEP_CASES = [
    ("elementwise", "k*_elementwise", [WorkGroup(64)]),
    ("elementwise", "k*_elementwise", [Split("i", 128, outer_tag="g.0", inner_tag="l.0")]),
    ("elementwise", "k*_elementwise", [Split("i", 32, outer_tag="g.0"), Tag("i_inner", "l.0")]),
    ("elementwise", "k*_elementwise", [Layout("axes"), WorkGroup(16, "i1"), Tag("i0", "g.1")]),
    ("elementwise", "k*_elementwise", [Layout("axes"), WorkGroup(128, "i0"), Unroll("i1")]),
    ("elementwise", "k*_elementwise", [Split("i", 512, outer_tag="g.0"),
                                       Split("i_inner", 128, inner_tag="l.0"),
                                       Unroll("i_inner_outer")]),
    ("hermite", "k0_elementwise", [Layout("axes"), WorkGroup(64, "i0"), Unroll("i1"),
                                   StoreThroughLocal()]),
    ("hermite", "k0_elementwise", [Layout("axes"), WorkGroup(256, "i0"), StoreThroughLocal()]),
    # N=16: the recurrence is deep enough for its root to be a spill point
    ("hermite16", "k0_elementwise", [Layout("axes"), WorkGroup(256, "i0"), Unroll("i1")]),
    ("direct_f32", "k*_elementwise", [Vectorize("i", 4), WorkGroup(64, "i_outer")]),
    ("direct_f64", "k*_elementwise", [Vectorize("i", 2), WorkGroup(128, "i_outer")]),
    ("direct_i32", "k*_elementwise", [Vectorize("i", 4), WorkGroup(32, "i_outer")]),
    ("big", "k*_elementwise", [ElementsPerItem(2, 128)]),
    ("big", "k*_elementwise", [ElementsPerItem(8)]),
    ("row_sum", "k0_sum", [GroupReduce("j", 128)]),
    ("row_sum", "k0_sum", [WorkGroup(16), Unroll("j", 4)]),
    ("col_sum", "k0_sum_c1", [WorkGroup(16), Tag("c", "g.1")]),
    ("matmul", "k*_einsum", [Tile("i", "j", 8, 8), Split("k", 8),
                             Prefetch("t0", ("i_inner", "k_inner")),
                             Prefetch("b", ("k_inner", "j_inner"))]),
    ("matmul", "k*_einsum", [RegisterTile("t0", "b", 32, 8, 8)]),
    ("matmul", "k*_einsum", [RegisterTile("t0", "b", 32, 4, 8, vector=4)]),
    ("matmul", "k*_einsum", [RegisterTile("t0", "b", 32, 8, 16, vector=2)]),
    ("matmul", "k*_einsum", [Tile("i", "j", 16, 8), Split("k", 16),
                             Prefetch("t0", ("i_inner", "k_inner"), order="F", pad=1, align=16),
                             Prefetch("b", ("k_inner", "j_inner"), pad=2),
                             Tag("k_inner", "unr_hint")]),
    ("matmul", "k*_einsum", [Tile("i", "j", 16, 8), Split("k", 16),
                             Prefetch("b", ("k_inner", "j_inner"), into="local")]),
    ("matmul_t", "k*_einsum", [RegisterTile("a", "b", 32, 8, 8)]),
    ("matmul_t", "k*_einsum", [RegisterTile("a", "b", 32, 4, 8, vector=4)]),
    ("matmul", "k*_einsum", [RegisterTile("t0", "b", 32, 4, 8, vector=4, block_j=16)]),
]
CASES = {"elementwise": _elementwise, "big": _big_elementwise, "row_sum": _row_sum,
         "hermite": _hermite, "hermite16": lambda: _hermite(16),
         "col_sum": _col_sum, "matmul": _matmul, "matmul_t": _matmul_transposed,
         "direct_f32": lambda: _direct(np.float32), "direct_f64": lambda: _direct(np.float64),
         "direct_i32": lambda: _direct(np.int32)}


@needs_opencl
@pytest.mark.parametrize("case,pattern,steps", STEP_CASES,
                         ids=[f"{c}-{format_schedule(s)}" for c, _, s in STEP_CASES])
def test_every_step_type_keeps_results(case, pattern, steps):
    out, binds, want = CASES[case]()
    ref, new = check_schedule(out, {pattern: steps}, target="opencl", bindings=binds,
                              device_kind="gpu")
    assert_same(new(**binds), want, f"{case} {steps}")
    # the steps are in force, printed, and change the generated code
    scheduled = [k for k in new.kernels.values() if k.schedule == tuple(steps)]
    assert scheduled, new.schedule
    assert new.source != ref.source
    for k in scheduled:
        nest = k.loop_nest()
        assert nest.startswith(f"kernel {k.name}")
        tags = [s.inner_tag for s in steps if isinstance(s, Split) and s.inner_tag]
        for tag in tags:
            assert f"parallel {tag}" in nest, nest


def test_steps_round_trip_through_text():
    steps = (Layout("axes"), WorkGroup(64, "i1"), Tile("i", "j", 16, 8), Split("k", 4, "g.0"),
             Unroll("k_inner"), Prefetch("a", ["i_inner", "k_inner"], into="private"),
             GroupReduce("j", 128, over="m"), ElementsPerItem(4, 128), Tag("i", "l.1"),
             WorkGroup(32, "q"), StoreThroughLocal(), RegisterTile("a", "b", 128, 16, 8))
    text = format_schedule(steps)
    assert parse_schedule(text) == steps
    assert eval(text, vars(pa.schedules)) == list(steps)      # repr is valid Python
    with pytest.raises(pa.ScheduleError, match="not a schedule step"):
        parse_schedule("[__import__('os').system('true')]")


def test_coalesce_is_a_deprecated_alias_of_work_group():
    """Coalesce split its loop exactly as WorkGroup does (the same loopy call):
    it builds a WorkGroup now, and saved text naming it still loads."""
    import warnings
    from polyarray.schedules import Coalesce
    with pytest.warns(DeprecationWarning, match="use WorkGroup"):
        assert Coalesce("i0", 64) == WorkGroup(64, "i0")
    with pytest.warns(DeprecationWarning):
        assert Coalesce("i1") == WorkGroup(256, "i1")
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # old tuning-cache text loads quietly
        assert parse_schedule("[Layout(kind='axes'), Coalesce(iname='i0', size=128), "
                              "Coalesce('i1')]") == (Layout("axes"), WorkGroup(128, "i0"),
                                                     WorkGroup(256, "i1"))


def test_schedule_base_imports_no_step_module():
    """The step families build on base.py; base.py needs none of them."""
    import ast
    import polyarray.codegen.schedule.base as base
    tree = ast.parse(open(base.__file__).read())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert imported <= {"__future__", "re", "dataclasses", "loopy"}, imported


@needs_opencl
def test_printed_schedule_replays_to_the_same_program():
    out, binds, want = _matmul()
    prog = pa.compile(out, target="opencl", device_kind="gpu")
    assert all(prog.schedule.values()), prog.schedule       # defaults are steps too
    replay = pa.compile(out, target="opencl", device_kind="gpu",
                        schedule=eval(repr(prog.schedule), vars(pa.schedules)))
    assert replay.source == prog.source
    tuned = prog.with_schedule({"k1_einsum": [Tile("i", "j", 8, 8)]})
    assert tuned.schedule["k1_einsum"] == (Tile("i", "j", 8, 8),)
    assert prog.schedule["k1_einsum"] != tuned.schedule["k1_einsum"]    # prog unchanged
    assert_same(tuned(**binds), want)


BAD = [
    ([Split("zz", 4)], "no loop named 'zz'; its loops are \\['i'\\]"),
    ([WorkGroup(0)], "must be a positive integer, got 0"),
    ([Split("i", -3)], "must be a positive integer, got -3"),
    ([Unroll("i", 0)], "must be a positive integer, got 0"),
    ([Split("i", 4), Split("i", 8)], "no loop named 'i'"),
    ([Split("i", 4), Split("i_outer", 2), Split("i_outer_outer", 2), Split("i_inner", 2)],
     None),                                        # valid: a control for the next case
    ([Split("i", 4, "g.0"), Tag("i_outer", "l.0")], "already mapped to g.0"),
    ([Tag("i", "l.9")], "unknown tag 'l.9'"),
    ([Prefetch("nope", ("i",))], "it reads no array 'nope'"),
    ([Prefetch("x", ("i",), into="texture")], "into must be 'local' or 'private'"),
    ([GroupReduce("i", 64)], "'i' is not a reduction loop"),
    ([WorkGroup(64), Layout("axes")], "must come before the other steps"),
    ([Layout("diagonal")], "kind must be 'flat' or 'axes'"),
    ([Unroll("i")], "full unrolling needs a constant <= 64"),
    ([Tile("i", "i", 4, 4)], "the two tiled loops must differ"),
    ([Split("i", 64, "l.0", "l.0")], "does not generate code"),
    (["WorkGroup(64)"], "is not a schedule step"),
    ([WorkGroup(64), StoreThroughLocal()], "needs Layout\\('axes'\\) and WorkGroup"),
    ([RegisterTile("x", "x", 64, 12)], "block 64 is not a multiple of threads x vector 12 x 1"),
    ([RegisterTile("x", "x", 64, 16, vector=8)], "not a multiple of threads x vector 16 x 8"),
    ([RegisterTile("x", "x", 64, 16, vector=0)], "vector must be a positive integer, got 0"),
    ([RegisterTile("x", "x", 64, 16, block_j=40)], "block_j 40 is not a multiple of threads"),
    ([Prefetch("x", ("i",), order="K")], "order must be 'C' or 'F', got 'K'"),
    ([Prefetch("x", ("i",), align=12)], "align must be a power of two"),
    ([Prefetch("x", ("i",), order="F")], "needs a copy of two or more dimensions"),
    ([Tag("i", "unr_hint.0")], "unknown tag 'unr_hint.0'"),
    ([Vectorize("i", 3)], "width must be 2 or 4, got 3"),
    ([Vectorize("i", 0)], "width must be a positive integer, got 0"),
    ([Vectorize("i", 4), WorkGroup(64, "i_outer")], None),         # valid: the control
    ([Vectorize("i", 4), Vectorize("i_outer", 2)], "needs 'i_outer' alone as its last index"),
    ([WorkGroup(8), Vectorize("i_inner", 4)], "already mapped to l.0"),
    ([RegisterTile("x", "x")], "this kernel is no tiled matmul"),
]


@pytest.mark.parametrize("steps,match", BAD, ids=[str(s) for s, _ in BAD])
def test_invalid_steps_raise_schedule_error(steps, match):
    x = pa.placeholder("x", (1000,), np.float32)
    out = pa.exp(x) + 1.0
    import loopy as lp
    from polyarray.codegen import lower_program
    if match is None:
        lower_program([out.node], lp.OpenCLTarget(), schedules={"k0_elementwise": steps})
        return
    with pytest.raises(pa.ScheduleError, match=match) as info:
        lower_program([out.node], lp.OpenCLTarget(), schedules={"k0_elementwise": steps})
    assert "k0_elementwise" in str(info.value)


@pytest.mark.parametrize("make,match", [
    (lambda: pa.placeholder("x", (10, 8), np.float32) + pa.placeholder("y", (8,), np.float32),
     "array 'y' is indexed"),
    (lambda: pa.placeholder("x", (64,), np.int8) * 2, "type int8, which has no 4-lane"),
    (lambda: pa.placeholder("x", (64,), np.float64) * 2, "type float64, which has no 4-lane"),
    (lambda: pa.placeholder("x", (30,), np.float32) * 2, "extent 30, not a multiple of 4"),
], ids=["broadcast", "int8", "float64x4", "ragged"])
def test_vectorize_refuses_what_it_cannot_vectorize(make, match):
    import loopy as lp
    from polyarray.codegen import lower_program
    with pytest.raises(pa.ScheduleError, match=match):
        lower_program([make().node], lp.OpenCLTarget(),
                      schedules={"k0_elementwise": [Vectorize("i", 4)]})


def test_schedule_errors_name_kernel_and_target():
    x = pa.placeholder("x", (100, 8), np.float32)
    import loopy as lp
    from polyarray.codegen import lower_program
    with pytest.raises(pa.ScheduleError, match="'k9' matches no kernel; this program's "
                                               "kernels are: k0_elementwise"):
        lower_program([(x * 2).node], lp.OpenCLTarget(), schedules={"k9": [WorkGroup(8)]})
    with pytest.raises(pa.ScheduleError, match="only elementwise kernels take it"):
        lower_program([x.sum(axis=1).node], lp.OpenCLTarget(),
                      schedules={"k0_sum": [Layout("axes")]})
    with pytest.raises(pa.ScheduleError, match="numpy target runs no kernels"):
        pa.compile(x * 2, target="numpy", schedule={"k0_elementwise": [WorkGroup(8)]})


@needs_opencl
def test_transform_takes_any_loopy_function():
    import loopy as lp
    out, binds, want = _elementwise()
    prog = pa.compile(out, target="opencl", device_kind="gpu")
    name = next(iter(prog.kernels))

    def raw(knl):
        return lp.split_iname(knl, "i", 32, outer_tag="g.0", inner_tag="l.0")
    custom = prog.with_schedule({name: []}).transform(name, raw)
    assert "raw" in repr(custom.schedule[name][-1])
    assert custom.kernels[name].lsize == (32,)
    assert_same(custom(**binds), want)
    with pytest.raises(pa.ScheduleError, match=f"failed on kernel {name}: KeyError"):
        prog.transform(name, raw)           # after the default split, 'i' is gone
    with pytest.raises(pa.ScheduleError, match="returned int, not a loopy kernel"):
        prog.with_schedule({name: []}).transform(name, lambda knl: 3)


@needs_opencl
def test_scheduled_programs_have_their_own_cache_entries(tmp_path, monkeypatch):
    import polyarray.targets.device_common as dc
    monkeypatch.setenv("POLYARRAY_CACHE_DIR", str(tmp_path))
    dc.clear_memory_cache()
    out, binds, want = _elementwise()
    a = pa.compile(out, target="opencl", device_kind="gpu")
    b = pa.compile(out, target="opencl", device_kind="gpu",
                   schedule={"k0_elementwise": [WorkGroup(32)]})
    assert a.source != b.source
    dc.clear_memory_cache()
    b2 = pa.compile(out, target="opencl", device_kind="gpu",
                    schedule={"k0_elementwise": [WorkGroup(32)]})
    assert b2._exe.compiled.origin == "disk" and b2.source == b.source
    assert b2.kernels["k0_elementwise"].schedule == (WorkGroup(32),)
    assert_same(b2(**binds), want)


@needs_opencl
def test_tuning_picks_a_correct_candidate_and_caches_it(tmp_path, monkeypatch, caplog):
    import polyarray.targets.device_common as dc
    monkeypatch.setenv("POLYARRAY_CACHE_DIR", str(tmp_path))
    dc.clear_memory_cache()
    out, binds, want = _elementwise()
    prog = pa.compile(out, target="opencl", device_kind="gpu")
    name = next(iter(prog.kernels))
    from polyarray.schedules import Transform

    def doubled(knl):               # computes something else: must be rejected
        kern = knl.default_entrypoint
        insns = [i.copy(expression=2 * i.expression) for i in kern.instructions]
        return knl.with_kernel(kern.copy(instructions=insns))
    cands = {name: [(WorkGroup(64),), (WorkGroup(128),),
                    (Layout("axes"), WorkGroup(64, "i0"), Unroll("i1")),
                    (WorkGroup(64), Transform(doubled)),
                    (WorkGroup(64), Tag("i_outer", "g.1"))]}          # invalid: refused
    lines = []
    tuned = prog.tune(candidates=cands, repeat=3, log=lines.append)
    report = tuned.tuning_report()
    assert name in report and "measured" in report
    assert "rejected: wrong result" in report and "invalid: " in report
    assert len([ln for ln in lines if name in ln]) >= 3       # a log line per candidate
    chosen = tuned.schedule[name]
    assert chosen in [tuple(c) for c in cands[name]]
    assert_same(tuned(**binds), want)
    # a new process (memory layers cleared) reuses the choice without timing
    dc.clear_memory_cache()
    lines2 = []
    again = prog.tune(candidates=cands, repeat=3, log=lines2.append)
    assert again.schedule[name] == chosen and "tuning cache" in lines2[0]
    assert "(cache)" in again.tuning_report()
    # a corrupted entry is reported and tuned again
    for f in tmp_path.glob("tune-*.pkl"):
        f.write_bytes(b"garbage")
    dc.clear_memory_cache()
    with caplog.at_level(logging.WARNING, logger="polyarray.cache"):
        lines3 = []
        third = prog.tune(candidates=cands, repeat=3, log=lines3.append)
    assert any("corrupted" in r.getMessage() for r in caplog.records)
    assert "(measured)" in third.tuning_report()
    assert_same(third(**binds), want)


@needs_opencl
def test_compile_with_tune_true():
    out, binds, want = _row_sum()
    prog = pa.compile(out, target="opencl", device_kind="gpu", tune=True)
    assert "k0_sum" in prog.tuning_report()
    assert_same(prog(**binds), want)
    assert pa.compile(out, target="opencl").tuning_report().startswith("not tuned")


@needs_opencl
def test_tuning_a_device_output_program_compares_on_the_host():
    """Regression: tuning a program compiled with out="device" compared
    device arrays element by element through NumPy (hours on pycuda)."""
    from polyarray.testing import SCHEDULE_TOLERANCES, allclose, to_host

    class FakeDevice:
        def get(self):
            return np.arange(3.0)
    assert allclose(FakeDevice(), np.arange(3.0), tolerances=SCHEDULE_TOLERANCES) and \
        to_host(FakeDevice()).shape == (3,)
    out, binds, want = _row_sum()
    prog = pa.compile(out, target="opencl", device_kind="gpu", out="device")
    tuned = prog.tune(candidates={"k0_sum": [(GroupReduce("j", 64),), (WorkGroup(32),)]},
                      repeat=2, log=lambda line: None)
    assert_same(tuned(**binds).get(), want)
