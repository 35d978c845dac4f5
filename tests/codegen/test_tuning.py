"""Tuning made practical: a time budget with successive halving,
later compiles of a tuned DAG using the tuning cache (and the opt-outs), and
candidates from the facts each builder records, for the matmul forms that
codegen's facts describe (batched, split-K, one buffer read twice)."""
import logging
import sys
import types

import numpy as np
import pytest

import polyarray as pa
import polyarray.targets.device_common as dc
from helpers import assert_same
from polyarray import targets, tuning
from polyarray.schedules import Tag, WorkGroup

ok, reason = targets.availability("opencl")
pytestmark = pytest.mark.skipif(not ok, reason=f"opencl: {reason}")
RNG = np.random.default_rng(15)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh cache directory, stored tunings used (conftest turns them off)."""
    monkeypatch.setenv("POLYARRAY_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("POLYARRAY_USE_TUNED", "1")
    dc.clear_memory_cache()
    yield tmp_path
    dc.clear_memory_cache()


def _elementwise():
    x = pa.placeholder("x", (300, 16), np.float32)
    xv = RNG.standard_normal((300, 16)).astype(np.float32)
    return pa.sin(x) * 2.0, {"x": xv}, np.sin(xv) * np.float32(2)


WGS = [(WorkGroup(n),) for n in (32, 64, 128, 16, 8)]


def test_budget_stops_early_reports_skipped_and_keeps_the_best(cache, monkeypatch):
    out, binds, want = _elementwise()
    prog = pa.compile(out, target="opencl")
    name = next(iter(prog.kernels))
    clock = [0.0]               # each candidate's check takes "1 s"
    monkeypatch.setattr(tuning, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
    checked = tuning._Runner.checked

    def slow_check(self, schedule):
        clock[0] += 1.0
        return checked(self, schedule)
    monkeypatch.setattr(tuning._Runner, "checked", slow_check)
    lines = []
    tuned = prog.tune(candidates={name: WGS}, budget_s=2.5, log=lines.append)
    rows = tuned._tuning["kernels"][name]["candidates"]
    assert [status for _, _, status in rows].count(tuning.SKIPPED) == 2
    assert tuned._tuning["skipped"] == 2 and not tuned._tuning["complete"]
    assert any("budget of 2.5 s was spent" in ln and "2 candidates skipped" in ln
               for ln in lines)
    assert "2 candidates skipped" in tuned.tuning_report()
    assert tuned.schedule[name] in WGS[:3]
    assert_same(tuned(**binds), want)
    # the same budget again: from the cache; no budget: tuned again, every candidate
    assert prog.tune(candidates={name: WGS}, budget_s=2.5, log=lines.append)._tuning[
        "origin"] == "cache"
    full = prog.tune(candidates={name: WGS}, budget_s=None, log=lines.append)._tuning
    assert full["origin"] == "measured" and full["complete"] and full["skipped"] == 0
    statuses = [s for _, _, s in full["kernels"][name]["candidates"]]
    assert statuses.count("ok") == 2 and statuses.count("dropped: in the slower half") == 3


def test_a_spent_budget_keeps_the_default(cache):
    out, binds, want = _elementwise()
    prog = pa.compile(out, target="opencl")
    lines = []
    tuned = prog.tune(budget_s=0, log=lines.append)
    assert tuned.schedule == prog.schedule and tuned._tuning["skipped"] > 0
    assert "budget of 0 s was spent" in lines[-1]
    assert_same(tuned(**binds), want)
    # nothing was measured: later compiles keep the default
    assert all(k.origin == "policy" for k in pa.compile(out, target="opencl").kernels.values())


def test_tuning_reports_through_the_log_and_a_progress_bar(cache, monkeypatch, capsys, caplog):
    """By default the tuner prints nothing: its lines go to the
    polyarray.tune logger, and a tqdm bar (where tqdm is installed) counts
    the candidates in a terminal or with ``progress=True``."""
    bars = []

    class FakeTqdm:             # tqdm is an optional extra: a stand-in records the calls
        def __init__(self, total, **kwargs):
            self.total, self.n, self.closed = total, 0, False
            bars.append(self)

        def update(self, n):
            self.n += n

        def set_postfix_str(self, s, refresh=True):
            self.kernel = s

        def close(self):
            self.closed = True
    monkeypatch.setitem(sys.modules, "tqdm.auto", types.SimpleNamespace(tqdm=FakeTqdm))
    out, binds, want = _elementwise()
    prog = pa.compile(out, target="opencl")
    name = next(iter(prog.kernels))
    with caplog.at_level(logging.INFO, logger="polyarray.tune"):
        tuned = prog.tune(candidates={name: WGS[:2]}, repeat=2, progress=True)
        prog.tune(candidates={name: WGS[:3]}, budget_s=0)      # not a terminal: no bar
    assert capsys.readouterr() == ("", "")
    lines = [r.getMessage() for r in caplog.records if r.name == "polyarray.tune"]
    assert any(f"polyarray tune {name} [1/2]" in ln for ln in lines), lines
    assert any("budget of 0 s was spent" in ln for ln in lines), lines
    (bar,) = bars
    assert (bar.total, bar.n, bar.kernel, bar.closed) == (2, 2, name, True)
    assert_same(tuned(**binds), want)


def test_later_compiles_use_the_tuned_schedule_unless_told_not_to(cache, monkeypatch):
    out, binds, want = _elementwise()
    prog = pa.compile(out, target="opencl", device_kind="gpu")
    name = next(iter(prog.kernels))
    assert prog.kernels[name].origin == "policy" and prog.schedule[name] not in WGS[:2]
    tuned = prog.tune(candidates={name: WGS[:2]}, repeat=2, log=lambda line: None)
    chosen = tuned.schedule[name]
    assert chosen in WGS[:2] and tuned.kernels[name].origin == "tuned"
    assert "schedule (tuned)" in repr(tuned.kernels[name])
    for _ in range(2):          # in this process, then as a new one would (from disk)
        later = pa.compile(out, target="opencl", device_kind="gpu", out="device")
        assert later.schedule[name] == chosen and later.kernels[name].origin == "tuned"
        assert later.source == tuned.source and "(cache)" in later.tuning_report()
        assert_same(later(**binds).get(), want)
        dc.clear_memory_cache()
    # a user's schedule for one kernel: that kernel says so
    mine = later.with_schedule({name: [WorkGroup(16)]})
    assert mine.kernels[name].origin == "user"
    # the opt-outs: per compile, and for the process
    plain = pa.compile(out, target="opencl", device_kind="gpu", tuned=False)
    assert plain.schedule == prog.schedule and plain.kernels[name].origin == "policy"
    assert plain.tuning_report().startswith("not tuned")
    monkeypatch.setenv("POLYARRAY_USE_TUNED", "0")
    assert pa.compile(out, target="opencl", device_kind="gpu").schedule == prog.schedule
    assert pa.compile(out, target="opencl", device_kind="gpu", tuned=True).schedule[name] \
        == chosen
    # another device layout is another device: nothing tuned there
    monkeypatch.setenv("POLYARRAY_USE_TUNED", "1")
    cpu = pa.compile(out, target="opencl", device_kind="cpu")
    assert all(k.origin == "policy" for k in cpu.kernels.values())


def _batched():
    av, bv = (RNG.standard_normal(s).astype(np.float32) for s in ((3, 20, 17), (3, 17, 40)))
    a, b = pa.placeholder("a", av.shape, np.float32), pa.placeholder("b", bv.shape, np.float32)
    return a @ b, {"a": av, "b": bv}, av @ bv


def _split_k():
    av, bv = (RNG.standard_normal(s).astype(np.float32) for s in ((64, 1100), (1100, 64)))
    a, b = pa.placeholder("a", av.shape, np.float32), pa.placeholder("b", bv.shape, np.float32)
    return a @ b, {"a": av, "b": bv}, av @ bv


def _gram():
    xv = RNG.standard_normal((70, 33)).astype(np.float32)
    x = pa.placeholder("x", xv.shape, np.float32)
    return x @ x.T, {"x": xv}, xv @ xv.T


def _matmul_info(expr):
    prog = pa.compile(expr, target="opencl", device_kind="gpu")
    (info,) = [k for k in prog.kernels.values() if k.form == "tiled matmul"]
    return prog, info


def test_matmul_candidates_come_from_the_builders_facts(cache, monkeypatch):
    prog, info = _matmul_info(_batched()[0])
    assert {k: info.facts[k] for k in ("M", "N", "K", "batch", "split", "A", "B")} == \
        dict(M=20, N=40, K=17, batch=3, split=1, A="a", B="b")
    cands = tuning.default_candidates(info)
    assert len(cands) > 2 and all(c[0] == Tag("b", "g.2") for c in cands)

    prog, info = _matmul_info(_split_k()[0])
    f = info.facts
    assert (f["M"], f["N"], f["K"], f["batch"]) == (64, 64, 1100, 0) and f["split"] > 1
    assert f["split"] * f["chunk"] >= 1100 and len(prog.kernels) == 2     # + the combine
    cands = tuning.default_candidates(info)
    assert len(cands) > 2 and all(c[0] == Tag("b", "g.2") for c in cands)
    depths = [s.depth if hasattr(s, "depth") else s.factor for c in cands for s in c
              if type(s).__name__ in ("RegisterTile", "Split")]
    assert depths and all(f["chunk"] % d == 0 for d in depths)

    prog, info = _matmul_info(_gram()[0])
    assert (info.facts["A"], info.facts["B"]) == ("x", "p1_x_b")    # the alias argument
    assert all(info.facts["B"] in repr(c) for c in tuning.default_candidates(info))

    # facts are plain data the disk cache keeps: a disk hit tunes without lowering
    dc.clear_memory_cache()
    import polyarray.codegen as codegen

    def refuse(*args, **kwargs):
        raise AssertionError("lowered after a disk-cache hit")
    monkeypatch.setattr(codegen, "lower_program", refuse)
    again, info2 = _matmul_info(_gram()[0])
    assert again._exe.compiled.origin == "disk" and info2.facts == info.facts
    assert tuning.default_candidates(info2) == tuning.default_candidates(info)


@pytest.mark.parametrize("make", [_batched, _split_k, _gram])
def test_tuning_matmul_forms(make, cache):
    expr, binds, want = make()
    prog, info = _matmul_info(expr)
    tuned = prog.tune(budget_s=4, repeat=2, log=lambda line: None)
    rows = tuned._tuning["kernels"][info.name]["candidates"]
    assert rows[0][0] == pa.schedules.format_schedule(info.schedule)     # the default first
    assert not [r for r in rows if r[2].startswith(("invalid", "rejected"))], rows
    assert_same(tuned(**binds), want)
    later = pa.compile(expr, target="opencl", device_kind="gpu")
    assert later.kernels[info.name].origin == "tuned"
    assert_same(later(**binds), want)
