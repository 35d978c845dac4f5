"""Autotuning: time candidate schedules on the real device, keep the fastest
correct one per kernel, and remember the choice on disk.

For each kernel with more than one candidate (``candidates.tuning_candidates``,
from the facts its builder recorded in ``KernelInfo.facts``), every
candidate replaces that kernel's schedule (the other kernels keep their
best so far); the program is run on fixed random inputs and its outputs
are compared with the untuned program's (a wrong candidate is rejected,
never timed).  Timing is successive halving, so slow candidates cost little:
that first run is the warm-up, two more calls give a first time; the slower
half is dropped and the rest timed again with twice the calls, until two are
left, which are timed with ``repeat`` batches of calls (up to 10 a batch).

``budget_s`` (default 30 s; None: unlimited) bounds the whole tuning, and
each kernel gets the time left over the kernels left.  When a kernel's share
is spent, its remaining candidates are skipped ("skipped: tuning budget
spent" in ``tuning_report()``, and a log line), the halving stops, and the
fastest measured so far is kept.  On a 512^3 matmul on PoCL a tuning without
budget took 131 s: mostly compiling candidates and 100 calls of each.

The winners are stored under two keys.  The tuning's own (the program's
structure and shapes, the target, the device, the code generator's version,
the options, the candidates) lets ``tune()`` again skip timing
(``origin == "cache"`` in the report), unless that tuning was cut short by a
budget smaller than this call's.  The program's own (the source of its
default kernels, the target, the device, the code version, the options that
change kernels) is read by every later ``pa.compile`` of the same DAG for
the same device (``stored_schedule``): it compiles the tuned schedule, and
its kernels say ``origin == "tuned"``.  Opt out with ``pa.compile(..., tuned=False)``, or
for a whole process with ``POLYARRAY_USE_TUNED=0``.

Progress is reported through the ``polyarray.tune`` logger at INFO (or to a
``log(line)`` callable, e.g. ``log=print``), and as a tqdm bar where tqdm is
installed (the ``progress`` extra) and stderr is a terminal, or when asked
(``progress=True``).
"""
from __future__ import annotations

import logging
import os
import sys
import time

from polyarray.codegen.schedule import ScheduleError, Transform, format_schedule, parse_schedule

from .testing.compare import SCHEDULE_TOLERANCES, allclose, flat_outputs, random_bindings
from .testing.timing import median_time

DEFAULT_BUDGET_S = 30.0
SKIPPED = "skipped: tuning budget spent"
BATCH_SECONDS = 0.005   # calls per timed batch: as many as take this long, at most
MAX_BATCH = 10          # this many (back-to-back calls hide the launch latency)
# options that change no kernel, or that the device description already says
_NO_KERNEL_OPTIONS = ("out", "device", "device_kind")

_CACHE = None
_LOG = logging.getLogger("polyarray.tune")


def _cache():
    global _CACHE
    if _CACHE is None:
        from polyarray.targets.cache import DiskCache
        _CACHE = DiskCache("tune")
    return _CACHE


def use_tuned(tuned=None) -> bool:
    """Whether a compile uses the tuning cache's schedules: ``tuned`` if
    given, else ``$POLYARRAY_USE_TUNED`` (default on; "0" turns it off)."""
    if tuned is not None:
        return bool(tuned)
    return os.environ.get("POLYARRAY_USE_TUNED", "1").strip().lower() not in (
        "0", "false", "no", "off")


def _device(program):
    """The device the program runs on, or None (a CUDA program generated
    where no GPU is: nothing was tuned for it)."""
    try:
        return program._exe.device_description()
    except Exception:      # noqa: BLE001
        return None


def _program_key(program, device, source):
    """The key later compiles on ``device`` look up: the default program's
    ``source`` (its kernels, so the DAG and its shapes: a hash costs
    microseconds where ``program_key`` walks the DAG), target, code version
    and the options that change kernels."""
    import hashlib
    from polyarray.targets.cache import code_version, key_digest
    options = {k: v for k, v in program.options.items() if k not in _NO_KERNEL_OPTIONS}
    return key_digest("tuned", hashlib.sha256(source.encode()).hexdigest(),
                      program.target_name, device, code_version(),
                      repr(sorted(options.items())))


def _default_source(program):
    """The source of ``program`` compiled with the policy's schedules."""
    if not program.user_schedule:
        return program.source
    return type(program)(program.outputs, program.target_name, tuned=False,
                         **program.options).source


def stored_schedule(program):
    """``(schedule, report)`` of the last tuning of ``program`` (compiled
    with the default schedules) on its device and target, or None."""
    if program.target_name == "numpy":
        return None
    device = _device(program)
    hit = None if device is None else _cache().get(_program_key(program, device,
                                                                program.source))
    if hit is None:
        return None
    schedule = {k: parse_schedule(v) for k, v in hit["schedule"].items()
                if k in program.kernels}
    return (schedule, hit["report"]) if schedule else None


def default_candidates(info):
    """Candidate schedules for one kernel: the policy's for its form and
    facts, the default (the schedule in force) first."""
    from polyarray.codegen.policy.candidates import tuning_candidates
    default = tuple(info.schedule)
    try:
        out = tuning_candidates(info.form, info.facts)
    except KeyError:            # a kernel without the facts its form's candidates need
        out = []
    return [default] + [c for c in out if tuple(c) != default]


def tune_program(program, candidates=None, budget_s=DEFAULT_BUDGET_S, repeat=10, log=None,
                 progress=None):
    """The tuned program (see the module docstring).  ``candidates``: kernel
    name -> list of schedules, overriding ``default_candidates``; ``log``:
    a callable given each report line (None: the polyarray.tune logger);
    ``progress``: a tqdm bar (None: where stderr is a terminal)."""
    from polyarray.codegen import program_key
    from polyarray.targets.cache import code_version, key_digest
    log = _LOG.info if log is None else log
    if program.target_name == "numpy":
        raise ScheduleError("the numpy target runs no kernels: nothing to tune")
    t_start = time.perf_counter()
    device = _device(program) or program.target_name
    key = key_digest("tune", program_key(program._outputs), program.target_name, device,
                     code_version(), repr(sorted(program.options.items())),
                     repr(sorted((k, format_schedule(v)) for k, v in (candidates or {}).items())))
    hit = _cache().get(key)
    if hit is not None and _covers(hit["report"], budget_s):
        schedule = {k: parse_schedule(v) for k, v in hit["schedule"].items()}
        if hit["report"]["kernels"]:        # later compiles use the latest tuning
            _cache().put(_program_key(program, device, _default_source(program)), hit)
        log(f"polyarray tune: schedules from the tuning cache ({len(schedule)} kernels)")
        return _tuned(program, schedule, dict(hit["report"], origin="cache"))

    run = _Runner(program)
    best = dict(program.user_schedule)
    report = {"kernels": {}, "origin": "measured", "device": device, "budget_s": budget_s,
              "complete": True}
    todo = [(k, info, (candidates or {}).get(k) or default_candidates(info))
            for k, info in program.kernels.items()]
    todo = [t for t in todo if len(t[2]) > 1]
    end = None if budget_s is None else t_start + budget_s
    skipped = 0
    bar = _Progress(sum(len(t[2]) for t in todo), progress)
    try:
        for left, (kname, info, cands) in zip(range(len(todo), 0, -1), todo):
            now = time.perf_counter()
            deadline = None if end is None else now + max(0.0, end - now) / left
            rows, complete = _tune_kernel(run, best, kname, [tuple(c) for c in cands],
                                          deadline, repeat, log, bar)
            report["complete"] &= complete
            skipped += sum(status == SKIPPED for _, status in rows.values())
            # the last round
            timed = [(t, s) for s, (t, status) in rows.items() if status == "ok"]
            if timed:
                s_best = min(timed)[1]
                best[kname] = parse_schedule(s_best)
                report["kernels"][kname] = {
                    "candidates": [(s, t, status) for s, (t, status) in rows.items()],
                    "chosen": s_best, "default": format_schedule(info.schedule)}
    finally:
        bar.close()
    if not report["complete"]:
        log(f"polyarray tune: the budget of {budget_s:g} s was spent after "
            f"{time.perf_counter() - t_start:.1f} s: {skipped} candidates skipped"
            f"{'' if skipped else ', the timing cut short'}; the fastest measured kept "
            "(tune(budget_s=None) times them all)")
    report["skipped"] = skipped
    if not any(isinstance(s, Transform) for steps in best.values() for s in steps):
        entry = {"schedule": {k: format_schedule(v) for k, v in best.items()},
                 "report": report}
        _cache().put(key, entry)
        if report["kernels"]:
            _cache().put(_program_key(program, device, _default_source(program)), entry)
    return _tuned(program, best, report)


def _covers(report, budget_s):
    """Whether a stored tuning answers a call with ``budget_s``: it finished,
    or was cut short by a budget at least as large."""
    if report.get("complete", True):
        return True
    stored = report.get("budget_s")
    return budget_s is not None and stored is not None and budget_s <= stored


def _tuned(program, schedule, report):
    tuned = program.with_schedule(schedule) if schedule else type(program)(
        program.outputs, program.target_name, tuned=False, **program.options)
    tuned._tuning = report
    tuned._mark_tuned(report["kernels"])
    return tuned


class _Runner:
    """The tuning's fixed inputs (uploaded once: kernels are timed, not
    copies) and the untuned program's outputs, computed on the host."""

    def __init__(self, program):
        from .api.creation import placeholder
        Program = type(program)         # polyarray.program imports this module
        self.program, self.Program = program, Program
        bindings = random_bindings(program)
        self.options = dict(program.options, out="device")
        self.bindings = {}
        for name, value in bindings.items():
            ident = Program(placeholder(name, value.shape, value.dtype), program.target_name,
                            tuned=False, **self.options)
            self.bindings[name] = ident(**{name: value})
        host = dict(program.options, out="numpy")
        self.want = flat_outputs(Program(program.all_outputs, program.target_name,
                                         schedule=program.user_schedule or None, tuned=False,
                                         **host)(**bindings))

    def checked(self, schedule):
        """The program with ``schedule`` if its outputs are right, else None
        (ScheduleError: the schedule does not apply)."""
        prog = self.Program(self.program.all_outputs, self.program.target_name, schedule=schedule,
                            tuned=False, **self.options)
        got = flat_outputs(prog(**self.bindings))
        ok = all(allclose(g, w, tolerances=SCHEDULE_TOLERANCES) for g, w in zip(got, self.want))
        return prog if ok else None

    def seconds(self, prog, batches, batch, warmup):
        return median_time(lambda: prog(**self.bindings), prog.synchronize, repeat=batches,
                           warmup=warmup, min_time=0.0, batch=batch)


def _tune_kernel(run, best, kname, cands, deadline, repeat, log, bar):
    """Check and time ``cands`` for kernel ``kname`` until ``deadline``:
    ``({schedule text: (seconds or None, status)}, whether it finished)``."""
    def spent():
        return deadline is not None and time.perf_counter() > deadline
    rows, progs, batch = {}, {}, {}
    for n, steps in enumerate(cands, 1):
        bar.step(kname)
        text = format_schedule(steps)
        if text in rows:
            continue
        if spent():
            rows[text] = (None, SKIPPED)
            continue
        try:
            prog = run.checked(dict(best, **{kname: steps}))
        except ScheduleError as e:
            rows[text] = (None, f"invalid: {e}")
            continue
        if prog is None:
            rows[text] = (None, "rejected: wrong result")
            log(f"polyarray tune {kname} [{n}/{len(cands)}] {text}: wrong result, rejected")
            continue
        t = run.seconds(prog, 2, 1, warmup=0)     # the check was the warm-up
        rows[text], progs[text] = (t, "ok"), prog
        batch[text] = max(1, min(MAX_BATCH, int(BATCH_SECONDS / max(t, 1e-7))))
        log(f"polyarray tune {kname} [{n}/{len(cands)}] {text}: {t * 1e6:.1f} us")
    complete = not any(status == SKIPPED for _, status in rows.values())
    alive, batches = sorted(progs, key=lambda s: rows[s][0]), 1
    while len(alive) > 1:
        cut = False
        if len(alive) > 2:          # successive halving: the slower half goes
            keep = (len(alive) + 1) // 2
            for text in alive[keep:]:
                rows[text] = (rows[text][0], "dropped: in the slower half")
            alive = alive[:keep]
        batches = repeat if len(alive) <= 2 else min(repeat, 2 * batches)
        if deadline is not None:    # the batches the time left holds, one less for warm-ups
            cost = sum(rows[s][0] * batch[s] for s in alive)
            fit = int((deadline - time.perf_counter()) / max(cost, 1e-9)) - 1
            if fit < 1:
                return rows, False
            cut, batches = fit < batches, min(batches, fit)
        for text in alive:
            if spent():
                return rows, False
            rows[text] = (run.seconds(progs[text], batches, batch[text], warmup=1), "ok")
        if cut:
            return rows, False
        alive.sort(key=lambda s: rows[s][0])
        log(f"polyarray tune {kname}: {len(alive)} timed again, {batches} batches each; "
            f"fastest {rows[alive[0]][0] * 1e6:.1f} us")
        if len(alive) <= 2:
            break
    return rows, complete


class _Progress:
    """A tqdm bar over the candidates: where tqdm is installed, and stderr
    (where tqdm writes) is a terminal or ``progress`` is True."""

    def __init__(self, total, progress):
        self.bar = None
        if not total or progress is False or (progress is None and not _terminal()):
            return
        try:
            from tqdm.auto import tqdm
        except ImportError:
            if progress:
                _LOG.warning("polyarray tune: progress=True needs tqdm "
                             "(pip install 'polyarray[progress]')")
            return
        self.bar = tqdm(total=total, desc="polyarray tune", unit="candidate", leave=False)

    def step(self, kernel):
        if self.bar is not None:
            self.bar.set_postfix_str(kernel, refresh=False)
            self.bar.update(1)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def _terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):    # replaced or closed
        return False


def format_report(report) -> str:
    lines = [f"tuning on {report.get('device')} ({report.get('origin')})"]
    if report.get("complete") is False:
        lines[0] += (f": budget {report.get('budget_s'):g} s spent, "
                     f"{report.get('skipped', 0)} candidates skipped")
    for kname, r in report["kernels"].items():
        lines.append(f"{kname}: chosen {r['chosen']}  (default {r['default']})")
        for steps, t, status in r["candidates"]:
            mark = "*" if steps == r["chosen"] else " "
            timing = f"{t * 1e6:10.1f} us" if t is not None else " " * 13
            lines.append(f"  {mark} {timing}  {steps}  {'' if status == 'ok' else status}")
    return "\n".join(lines)
