"""``pa.check``: one DAG run on several targets, each compared with NumPy.

``pa.check(outputs, targets=("numpy", "opencl", "cuda"), **bindings)`` (and
``prog.check(**bindings)``) runs the same outputs on every target named,
always computes the NumPy reference (named or not), and returns a
``CheckReport``: per output and target, the max absolute and relative
error, the tolerance used and the verdict.  The verdict is
``pa.testing``'s, the one result comparer (CuPy's ``numpy_cupy_allclose``
is the model): per-dtype tolerances for floats, integers and booleans
exact, NaN where the reference has NaN, the reference's shape and dtype.

Nothing is dropped silently: a target that cannot run here is a
``skipped`` row with ``availability()``'s reason, a target that raises
(a build error, a failed run-time check) an ``error`` row with the
exception's message.  ``pa.testing.assert_targets_agree`` raises with the
report's table when any target fails or errors, for users' own tests.

This module compiles, so it sits above ``polyarray.program`` and attaches
``Program.check`` from here (as ``program`` attaches ``Array.evaluate``):
the layers below never import it, and ``pa.testing`` loads it on first use.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from . import compare as testing
from ..program import Program
from ..targets import TargetUnavailableError, availability, target_class

DEFAULT_TARGETS = ("numpy", "opencl", "cuda")
REFERENCE = "numpy"
_OK = ("reference", "pass", "skipped")


@dataclasses.dataclass(frozen=True)
class CheckRow:
    """One output on one target.  ``status``: "reference" (the NumPy row),
    "pass", "fail", "error" (the target raised) or "skipped" (unavailable
    here); ``message`` says why for the last three.  ``max_abs`` and
    ``max_rel`` (relative to ``|reference|`` where it is nonzero) are over
    the positions where neither value is NaN, None where nothing was
    compared; ``rtol`` and ``atol`` (absolute, scaled as
    ``pa.testing.tolerance`` scales it) are the tolerance applied, 0 and
    ``exact`` for integers and booleans."""
    output: object
    target: str
    status: str
    max_abs: float | None = None
    max_rel: float | None = None
    rtol: float | None = None
    atol: float | None = None
    exact: bool = False
    message: str = ""

    @property
    def ok(self) -> bool:
        """Whether this row lets the report pass (skipped rows do)."""
        return self.status in _OK


@dataclasses.dataclass(frozen=True)
class CheckReport:
    """What ``pa.check`` found: ``rows`` (``CheckRow``s, output by output,
    targets in the order asked), ``ok``, and a table as ``repr``."""
    rows: tuple
    targets: tuple
    reference: str = REFERENCE

    @property
    def ok(self) -> bool:
        """No row failed or errored (skipped targets do not count)."""
        return all(r.ok for r in self.rows)

    @property
    def failures(self) -> tuple:
        """The rows that failed or errored."""
        return tuple(r for r in self.rows if not r.ok)

    @property
    def skipped(self) -> tuple:
        """The rows of targets that are not available here."""
        return tuple(r for r in self.rows if r.status == "skipped")

    def row(self, output, target) -> CheckRow:
        """The row of ``output`` (a dict key, a list index or "out") on ``target``."""
        for r in self.rows:
            if r.output == output and r.target == target:
                return r
        raise KeyError(f"no row for output {output!r} on target {target!r}")

    def __repr__(self):
        return format_report(self)

    __str__ = __repr__


def _num(x) -> str:
    return "-" if x is None else f"{x:.3g}"


def _tolerance(r) -> str:
    if r.rtol is None:
        return "-"
    return "exact" if r.exact else f"rtol {r.rtol:.3g}, atol {r.atol:.3g}"


def _first_line(message, width=100) -> str:
    line = message.strip().splitlines()[0] if message.strip() else ""
    return line if len(line) <= width else line[:width - 3] + "..."


def format_report(report) -> str:
    """The report as a small aligned table under a one-line verdict."""
    bad = len(report.failures)
    verdict = "ok" if report.ok else f"FAILED ({bad} of {len(report.rows)} rows)"
    skipped = dict.fromkeys(r.target for r in report.skipped)
    if skipped:
        verdict += f"; skipped: {', '.join(skipped)}"
    head = ("output", "target", "result", "max abs err", "max rel err", "tolerance", "note")
    lines = [head] + [(str(r.output), r.target, r.status, _num(r.max_abs), _num(r.max_rel),
                       _tolerance(r), _first_line(r.message)) for r in report.rows]
    widths = [max(len(line[k]) for line in lines) for k in range(len(head))]
    text = [f"pa.check against {report.reference}: {verdict}"]
    for line in lines:
        text.append("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip())
    return "\n".join(text)


# -- comparing one result ------------------------------------------------
def _errors(a, e):
    """(max abs, max rel) of ``a`` against ``e`` (same shape), over the
    positions where neither is NaN; equal values (infinities too) differ by 0."""
    if a.size == 0:
        return 0.0, 0.0
    a, e = a.ravel(), e.ravel()
    if a.dtype.kind in "biu" and e.dtype.kind in "biu":
        differ = a != e      # exact: Python integers, no rounding through float
        if not differ.any():
            return 0.0, 0.0
        x, y = (v[differ].astype(np.int8 if v.dtype.kind == "b" else v.dtype).astype(object)
                for v in (a, e))
        d = np.abs(x - y)
        nonzero = y != 0
        rel = max((float(v) for v in d[nonzero] / np.abs(y[nonzero])), default=0.0)
        return float(max(d)), rel
    wide = np.result_type(a.dtype, e.dtype, np.float64)
    x, y = a.astype(wide), e.astype(wide)
    with np.errstate(all="ignore"):
        d = np.abs(x - y)
        d[x == y] = 0
        valid = ~(np.isnan(x) | np.isnan(y))
        d, ey = d[valid], np.abs(y[valid])
        rel = d[ey != 0] / ey[ey != 0]
        rel[np.isinf(d[ey != 0])] = np.inf
    return float(np.max(d, initial=0.0)), float(np.max(rel, initial=0.0))


def _where(differ, a, e) -> str:
    index = np.unravel_index(int(np.argmax(differ.ravel())), differ.shape)
    at = tuple(int(i) for i in index)
    return f"first at {at}: {a[at].item()!r} against {e[at].item()!r}"


def compare(actual, expected, rtol=None, atol=None) -> dict:
    """The fields of a ``CheckRow`` for ``actual`` (host or device) against
    the reference ``expected``: status "pass" or "fail", errors, tolerance,
    and for a failure what differs.  The verdict is ``pa.testing.allclose``'s,
    with the dtype compared as ``pa.testing.assert_allclose`` does."""
    a, e = np.asarray(testing.to_host(actual)), np.asarray(testing.to_host(expected))
    tol = testing.tolerance(e, rtol, atol)
    fields = dict(rtol=0.0, atol=0.0, exact=True) if tol is None else \
        dict(rtol=float(tol[0]), atol=float(tol[1]), exact=False)
    if a.shape != e.shape:
        return dict(fields, status="fail", max_abs=None, max_rel=None,
                    message=f"shape {a.shape} != reference {e.shape}")
    max_abs, max_rel = _errors(a, e)
    fields.update(max_abs=max_abs, max_rel=max_rel)
    problems = []
    if a.dtype != e.dtype:
        problems.append(f"dtype {a.dtype.name} != reference {e.dtype.name}")
    if not testing.allclose(a, e, rtol, atol):
        if tol is None:
            differ = a != e
        else:
            with np.errstate(all="ignore"):
                differ = ~np.isclose(a, e, rtol=tol[0], atol=tol[1], equal_nan=True)
        what = f"{int(differ.sum())} of {a.size} elements differ"
        if a.dtype.kind in "fc" and e.dtype.kind in "fc":
            na, ne = np.isnan(a), np.isnan(e)
            if (na != ne).any():
                what += (f" (NaN where the reference has a number: {int((na & ~ne).sum())}, "
                         f"a number where it has NaN: {int((ne & ~na).sum())})")
        problems.append(f"{what}; {_where(differ, a, e)}")
    status = "fail" if problems else "pass"
    return dict(fields, status=status, message="; ".join(problems))


# -- running the targets -------------------------------------------------
def _target_names(targets) -> tuple:
    names = (targets,) if isinstance(targets, str) else tuple(targets)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"targets must be target names, got {name!r}")
        target_class(name)                     # ValueError naming the known targets
    return tuple(dict.fromkeys(names))


def _output_keys(outputs) -> list:
    if isinstance(outputs, dict):
        return list(outputs)
    if isinstance(outputs, (list, tuple)):
        return list(range(len(outputs)))
    return ["out"]


def _listed(results, keys) -> list:
    if isinstance(results, dict):
        return [results[k] for k in keys]
    return list(results) if isinstance(results, (list, tuple)) else [results]


def _message(error) -> str:
    return f"{type(error).__name__}: {error}"


def _merge(bindings, named) -> dict:
    if bindings is None:
        return named
    if not isinstance(bindings, dict):
        raise TypeError("bindings= must be a dict of placeholder name -> value (for names "
                        f"that clash with check's own keywords), got {type(bindings).__name__}")
    twice = sorted(set(bindings) & set(named))
    if twice:
        raise TypeError(f"placeholder {twice[0]!r} is bound twice: in bindings= and by name")
    return {**bindings, **named}


def _host(value):
    """Device arrays (pyopencl, pycuda, CuPy: they have ``get``) as NumPy
    copies, so that every target, the reference too, reads the same values."""
    if hasattr(value, "get") and hasattr(value, "shape") and \
            not isinstance(value, (np.ndarray, np.generic)):
        return testing.to_host(value)
    return value


def _run(ref, own, names, rtol, atol, bindings) -> CheckReport:
    """Check ``bindings`` once, compute the reference, then each target."""
    bindings = {name: _host(value) for name, value in bindings.items()}
    ref.check_bindings(bindings)               # the usual errors, before anything runs
    outputs = ref.outputs
    keys = _output_keys(outputs)
    ref_error, want = None, None
    try:
        want = _listed(ref(**bindings), keys)
    except Exception as error:                 # reported as the reference's row
        ref_error = error
    if ref_error is not None and REFERENCE not in names:
        names = (REFERENCE,) + names
    by_target = {}
    for name in names:
        if name == REFERENCE:
            by_target[name] = [
                dict(status="reference") if ref_error is None else
                dict(status="error", message=f"the reference raised {_message(ref_error)}")
                for _ in keys]
            continue
        ok, reason = availability(name)
        if not ok:
            by_target[name] = [dict(status="skipped", message=reason)] * len(keys)
            continue
        try:
            prog = own if own is not None and own.target_name == name else \
                Program(outputs, target=name)
            got = _listed(prog(**bindings), keys)
        except TargetUnavailableError as error:
            by_target[name] = [dict(status="skipped", message=str(error))] * len(keys)
        except Exception as error:             # a build or run-time check error: a row
            by_target[name] = [dict(status="error", message=_message(error))] * len(keys)
        else:
            by_target[name] = [
                compare(g, w, rtol, atol) if ref_error is None else
                dict(status="error", message="not compared: the reference raised "
                                             + _message(ref_error))
                for g, w in zip(got, want or [None] * len(keys))]
    rows = tuple(CheckRow(output=key, target=name, **by_target[name][k])
                 for k, key in enumerate(keys) for name in names)
    return CheckReport(rows=rows, targets=names)


def check(outputs, targets=DEFAULT_TARGETS, *, rtol=None, atol=None, bindings=None,
          **named_bindings) -> CheckReport:
    """Run ``outputs`` (an array, a list/tuple or a dict of arrays, or a
    ``Program``) on each of ``targets`` and compare every result with the
    NumPy reference: a ``CheckReport`` (a table as its repr; ``.ok``,
    ``.rows``).  Bindings are checked once, with a call's errors, before
    anything runs.  Tolerances are ``pa.testing``'s per-dtype ones unless
    ``rtol``/``atol`` are given (integers and booleans are always exact).
    Unavailable targets are reported as skipped with the reason; a target
    that raises is an error row.  ``bindings=`` (a dict) binds placeholders
    named like this function's keywords."""
    bindings = _merge(bindings, named_bindings)
    if isinstance(outputs, Program):
        return _program_check(outputs, targets=targets, rtol=rtol, atol=atol,
                              bindings=bindings)
    names = _target_names(targets)
    return _run(Program(outputs, target=REFERENCE), None, names, rtol, atol, bindings)


def _program_check(self, /, *args, targets=DEFAULT_TARGETS, rtol=None, atol=None,
                   bindings=None, **named_bindings) -> CheckReport:
    """Run this program's outputs on each of ``targets`` and compare every
    result with the NumPy reference (``pa.check``): on its own target the
    program itself runs (its schedule included), on the others a default
    compile.  Bindings as for a call (by name, or by position).  Shared
    variables are read and not updated."""
    bindings = _merge(bindings, named_bindings)
    if args:
        bindings = self._positional(args, bindings)
    names = _target_names(targets)
    own = self
    if self._state is not None and self._state.targets:
        # a check updates no shared variable: the outputs alone, with its schedule
        own = Program(self.outputs, target=self.target_name,
                      schedule=self.user_schedule or None, **self.options)
    ref = own if own.target_name == REFERENCE else Program(own.outputs, target=REFERENCE)
    return _run(ref, own, names, rtol, atol, bindings)


def assert_targets_agree(outputs, targets=DEFAULT_TARGETS, *, rtol=None, atol=None,
                         bindings=None, **named_bindings) -> CheckReport:
    """``pa.check``, raising an AssertionError with the report's table when
    any available target disagrees with NumPy or raises; returns the
    report otherwise (skipped targets do not fail it)."""
    __tracebackhide__ = True
    report = check(outputs, targets, rtol=rtol, atol=atol, bindings=bindings,
                   **named_bindings)
    if not report.ok:
        raise AssertionError(f"targets disagree with the NumPy reference:\n{report}")
    return report


def _attach():
    _program_check.__name__, _program_check.__qualname__ = "check", "Program.check"
    Program.check = _program_check


_attach()
