"""``pa.check`` / ``prog.check`` / ``pa.testing.assert_targets_agree``:
one DAG on every target against the NumPy reference, in one call.

Every row's verdict is ``pa.testing``'s (per-dtype tolerances, integers and
booleans exact, NaN where NumPy has NaN); unavailable targets are skipped rows
with the reason, targets that raise are error rows.  A target's wrong result is
made by wrapping ``Program.__call__``, so the tests do not depend on a bug."""
from __future__ import annotations

import numpy as np
import pytest

import polyarray as pa
from polyarray import targets
from polyarray.testing import checking
from polyarray.testing.checking import compare

N, D, H, O = 24, 10, 7, 5


def backprop():
    """The gradient of the issue's goal, and its bindings (float32)."""
    X = pa.placeholder("X", (N, D), np.float32)
    W = pa.placeholder("W", (O, H), np.float32)
    h = pa.placeholder("h", (N, H), np.float32)
    delta_o = pa.placeholder("delta_o", (N, O), np.float32)
    delta_h = pa.dot(delta_o, W) * h * (1.0 - h)
    grad_W = pa.dot(X.T, delta_h)
    rng = np.random.default_rng(17)
    b = dict(X=rng.standard_normal((N, D)).astype(np.float32),
             W=rng.standard_normal((O, H)).astype(np.float32),
             h=rng.random((N, H)).astype(np.float32),
             delta_o=rng.standard_normal((N, O)).astype(np.float32))
    return {"grad_W": grad_W, "delta_h": delta_h}, b


def perturb(monkeypatch, target, change):
    """Make ``target``'s programs return ``change(list of results)``."""
    call = pa.Program.__call__

    def wrong(self, /, *args, **kw):
        out = call(self, *args, **kw)
        if self.target_name != target:
            return out
        if isinstance(out, dict):
            keys = list(out)
            return dict(zip(keys, change([np.array(out[k]) for k in keys])))
        if isinstance(out, (list, tuple)):
            return type(out)(change([np.array(v) for v in out]))
        return change([np.array(out)])[0]
    monkeypatch.setattr(pa.Program, "__call__", wrong)


def test_backprop_gradient_on_every_target():
    outputs, b = backprop()
    report = pa.check(outputs, targets=("numpy", "opencl", "cuda"), **b)
    assert isinstance(report, pa.CheckReport) and report.ok
    assert report.targets == ("numpy", "opencl", "cuda")
    assert [(r.output, r.target) for r in report.rows] == [
        (k, t) for k in ("grad_W", "delta_h") for t in ("numpy", "opencl", "cuda")]
    text = repr(report)
    assert text.splitlines()[1].split()[:3] == ["output", "target", "result"]
    for key in outputs:
        assert report.row(key, "numpy").status == "reference"
        for t in ("opencl", "cuda"):
            row, (available, reason) = report.row(key, t), targets.availability(t)
            if available:       # on the GPU machine: all three targets compared
                assert row.status == "pass" and not row.exact, row
                assert row.rtol == pa.testing.TOLERANCES[np.dtype(np.float32)][0]
                assert row.max_abs is not None and row.message == "", row
            else:               # here: CUDA without a GPU, skipped and saying why
                assert row.status == "skipped" and row.message == reason and reason, row
                assert row.max_abs is None and reason in text
    assert pa.testing.assert_targets_agree(outputs, targets=("numpy", "opencl", "cuda"),
                                           **b).rows == report.rows


def test_a_wrong_device_result_fails_with_the_table(device_target, monkeypatch):
    outputs, b = backprop()

    def off(results):
        results[0][2, 3] += 1e-3 * (1 + abs(results[0][2, 3]))   # grad_W, one element
        return results
    perturb(monkeypatch, device_target, off)
    report = pa.check(outputs, targets=("numpy", device_target), **b)
    assert not report.ok
    bad = report.row("grad_W", device_target)
    assert bad.status == "fail" and bad.max_abs > bad.atol
    assert bad.message.startswith(f"1 of {D * H} elements differ; first at (2, 3):")
    assert report.row("delta_h", device_target).status == "pass"
    assert report.failures == (bad,)
    line = next(x for x in repr(report).splitlines() if x.startswith("grad_W")
                and device_target in x)
    assert "fail" in line and "first at (2, 3)" in line
    with pytest.raises(AssertionError) as e:
        pa.testing.assert_targets_agree(outputs, targets=("numpy", device_target), **b)
    assert repr(report) in str(e.value)
    # the tolerance overrides: loose enough, the same difference passes
    loose = pa.testing.assert_targets_agree(outputs, targets=("numpy", device_target),
                                            rtol=1e-2, **b)
    assert loose.row("grad_W", device_target).rtol == 1e-2


def test_integers_and_booleans_are_exact(device_target, monkeypatch):
    a = pa.placeholder("a", (6, 9), np.int32)
    c = pa.placeholder("c", (9,), np.int64)
    outputs = [(a * 7 + c) // 3, pa.sum(a, axis=1), (a % 4) == 1]
    rng = np.random.default_rng(3)
    b = dict(a=rng.integers(-1000, 1000, (6, 9), dtype=np.int32),
             c=rng.integers(-10**6, 10**6, 9, dtype=np.int64))
    report = pa.check(outputs, targets=("numpy", device_target), **b)
    for k in range(3):
        row = report.row(k, device_target)
        assert (row.status, row.exact, row.max_abs, row.rtol, row.atol) == \
            ("pass", True, 0.0, 0.0, 0.0)
    assert "exact" in repr(report)

    # a result off by one is a failure however large the values: no float tolerance
    def off(results):
        results[0][0, 0] += 1
        results[2][1, 1] = ~results[2][1, 1]
        return results
    perturb(monkeypatch, device_target, off)
    report = pa.check(outputs, targets=("numpy", device_target), rtol=0.5, **b)
    assert [report.row(k, device_target).status for k in range(3)] == ["fail", "pass", "fail"]
    assert report.row(0, device_target).max_abs == 1.0
    assert report.row(2, device_target).max_abs == 1.0
    big = np.array([2**63, 5], np.uint64)      # float64 cannot tell 2**63 + 1 from 2**63
    row = compare(big + np.uint64(1), big)
    assert row["status"] == "fail" and row["max_abs"] == 1.0 and row["exact"]
    assert row["message"] == "2 of 2 elements differ; first at (0,): " \
        "9223372036854775809 against 9223372036854775808"


def test_nan_and_inf_must_be_where_numpy_has_them(device_target):
    x = pa.placeholder("x", (40,), np.float64)
    outputs = {"log": pa.log(x), "recip": 1.0 / x, "sqrt": pa.sqrt(x) + x}
    v = np.linspace(-2.0, 2.0, 40)
    v[[3, 20]] = 0.0
    report = pa.testing.assert_targets_agree(
        outputs, targets=("numpy", device_target), x=v)
    for key in outputs:
        row = report.row(key, device_target)
        assert row.status == "pass" and np.isfinite(row.max_abs), row
    # the comparer, directly: NaN moved, NaN missing, infinities of another sign
    e = np.array([1.0, np.nan, np.inf, 3.0], np.float32)
    assert compare(e.copy(), e)["status"] == "pass"
    assert compare(e.copy(), e)["max_abs"] == 0.0
    moved = compare(np.array([np.nan, 1.0, np.inf, 3.0], np.float32), e)
    assert moved["status"] == "fail"
    assert "NaN where the reference has a number: 1, a number where it has NaN: 1" \
        in moved["message"]
    assert compare(np.array([1.0, np.nan, -np.inf, 3.0], np.float32), e)["max_abs"] == np.inf


def test_shapes_and_dtypes_must_match():
    e = np.arange(6, dtype=np.float32).reshape(2, 3)
    shape = compare(e.T, e)
    assert shape["status"] == "fail" and shape["max_abs"] is None
    assert shape["message"] == "shape (3, 2) != reference (2, 3)"
    dtype = compare(e.astype(np.float64), e)
    assert dtype["status"] == "fail" and dtype["max_abs"] == 0.0
    assert dtype["message"] == "dtype float64 != reference float32"
    assert compare(np.zeros((0, 3), bool), np.zeros((0, 3), bool))["status"] == "pass"
    assert compare(np.float32(1.5), np.float32(1.0))["message"] == \
        "1 of 1 elements differ; first at (): 1.5 against 1.0"


def test_output_names_for_dicts_lists_and_single_arrays():
    x = pa.placeholder("x", (3,), np.float32)
    v = np.ones(3, np.float32)
    assert [r.output for r in pa.check({"b": x + 1, "a": x * 2}, "numpy", x=v).rows] == \
        ["b", "a"]
    assert [r.output for r in pa.check([x, x + 1], "numpy", x=v).rows] == [0, 1]
    assert [r.output for r in pa.check((x,), "numpy", x=v).rows] == [0]
    report = pa.check(x - 1, targets="numpy", x=v)
    assert [(r.output, r.target, r.status) for r in report.rows] == [("out", "numpy", "reference")]
    with pytest.raises(KeyError, match="no row for output 'out' on target 'opencl'"):
        report.row("out", "opencl")
    row = report.rows[0]
    with pytest.raises(AttributeError):         # frozen dataclasses
        row.status = "pass"
    # the reference is computed even when "numpy" is not asked for
    only = pa.check(x * 3, targets=(), x=v)
    assert only.rows == () and only.ok


def test_unavailable_targets_are_skipped_with_the_reason(monkeypatch):
    outputs, b = backprop()
    real = checking.availability
    monkeypatch.setattr(checking, "availability",
                        lambda t: (False, "no device of this kind here") if t == "opencl"
                        else real(t))
    report = pa.check(outputs, targets=("numpy", "opencl"), **b)
    assert report.ok and len(report.skipped) == 2
    assert all(r.message == "no device of this kind here" for r in report.skipped)
    assert "skipped: opencl" in repr(report).splitlines()[0]
    assert repr(report).count("no device of this kind here") == 2


def test_a_target_that_raises_is_an_error_row(device_target, monkeypatch):
    outputs, b = backprop()

    def refuse(*args, **kw):
        raise targets.BuildError("k0_matmul: error: expected ';'\nsecond line of the log")
    monkeypatch.setattr(targets.get_target(device_target), "compile", refuse)
    report = pa.check(outputs, targets=("numpy", device_target), **b)
    row = report.row("grad_W", device_target)
    assert row.status == "error" and not report.ok
    assert row.message == "BuildError: k0_matmul: error: expected ';'\nsecond line of the log"
    assert "BuildError: k0_matmul: error: expected ';'" in repr(report)
    assert "second line" not in repr(report)        # one line per row
    with pytest.raises(AssertionError, match="BuildError"):
        pa.testing.assert_targets_agree(outputs, targets=("numpy", device_target), **b)


def test_a_failed_run_time_check_is_reported_on_every_target(device_target):
    i = pa.placeholder("i", (4,), np.int64)
    report = pa.check(pa.take(pa.arange(5.0), i), targets=(device_target,),
                      i=np.array([0, 1, 9, 2]))
    assert [r.target for r in report.rows] == ["numpy", device_target]    # the reference's row
    assert [r.status for r in report.rows] == ["error", "error"]
    assert report.rows[0].message == \
        "the reference raised IndexError: index 9 is out of bounds for axis 0 with size 5"
    assert report.rows[1].message.startswith("IndexError: index 9 is out of bounds")


def test_bad_bindings_raise_before_anything_runs(monkeypatch):
    outputs, b = backprop()
    ran = []
    call = pa.Program.__call__

    def recorded(self, /, *args, **kw):
        ran.append(self.target_name)
        return call(self, *args, **kw)
    monkeypatch.setattr(pa.Program, "__call__", recorded)
    prog = pa.compile(outputs, target="numpy")
    cases = [({k: v for k, v in b.items() if k != "h"}, TypeError),
             (dict(b, W=b["W"][:2]), ValueError),
             (dict(b, W=b["W"].astype(np.float64)), TypeError),
             (dict(b, bogus=1.0), TypeError)]
    for bad, error in cases:
        with pytest.raises(error) as expected:
            prog.check_bindings(bad)
        with pytest.raises(error) as got:
            pa.check(outputs, **bad)
        assert str(got.value) == str(expected.value)
        with pytest.raises(error):
            prog.check(**bad)
    with pytest.raises(ValueError, match="unknown target 'metal'"):
        pa.check(outputs, targets=("numpy", "metal"), **b)
    with pytest.raises(TypeError, match="bound twice"):
        pa.check(outputs, bindings={"X": b["X"]}, **b)
    assert ran == []


def test_program_check_and_clashing_names(device_target):
    outputs, b = backprop()
    prog = pa.compile(outputs, target=device_target)
    names = list(prog.placeholders)
    report = prog.check(*[b[n] for n in names], targets=(device_target,))
    assert [r.target for r in report.rows] == [device_target] * 2 and report.ok
    assert pa.check(prog, targets=("numpy", device_target), **b).ok
    # device results are compared on the host, device bindings read on every target
    dprog = pa.compile(outputs, target=device_target, out="device")
    h_on_device = dprog(**b)["delta_h"]
    assert not isinstance(h_on_device, np.ndarray)
    report = dprog.check(targets=("numpy", device_target), **dict(b, h=h_on_device))
    assert report.ok and report.row("grad_W", device_target).status == "pass"
    # a placeholder named like one of check's keywords is bound through bindings=
    t = pa.placeholder("targets", (2,), np.int32)
    report = pa.check(t * 2, targets="numpy", bindings={"targets": np.array([1, 2], np.int32)})
    assert report.ok and report.rows[0].status == "reference"
