"""Autotuning: time candidate schedules on the real device, keep the fastest
correct one per kernel, and remember the choice on disk.

For each kernel with more than one candidate, every candidate schedule
replaces that kernel's schedule (the other kernels keep their best so far);
the program is run on fixed random inputs, its outputs are compared with the
untuned program's (a wrong candidate is rejected, never timed), and the
correct ones are timed: warm-up, then the median over ``repeat`` calls with a
synchronize after each.  The winners are stored under a key made of the
program's structure and shapes, the target, the device and the code
generator's version, so a later process gets the tuned program without
timing anything (``origin == "cache"`` in the report).
"""
from __future__ import annotations

import math
import time

import numpy as np

from polyarray.codegen.schedule import Prefetch, ScheduleError, format_schedule, parse_schedule

from .testing import (SCHEDULE_TOLERANCES, allclose, flat_outputs, random_bindings,
                      seconds_per_call)

_CACHE = None


def _cache():
    global _CACHE
    if _CACHE is None:
        from polyarray.targets.cache import DiskCache
        _CACHE = DiskCache("tune")
    return _CACHE


def default_candidates(info, program):
    """Candidate schedules for one kernel: the policy's (``policy.tuning_candidates``)
    for its form and sizes, the default first."""
    from polyarray.codegen.policy import Form, tuning_candidates
    form = info.form
    facts = {}
    if form == Form.ELEMENTWISE:
        _, node = _first_output(program, info)
        facts = dict(size=math.prod(node.shape), shape=tuple(node.shape))
    elif form == Form.TILED_MATMUL:
        out_name, out = _first_output(program, info)
        A, B = _matmul_operands(info, out_name)
        M, Nn = out.shape
        K = program._exe.lowered.buffers[A].size // M      # A may be read transposed
        facts = dict(M=M, N=Nn, K=K, A=A, B=B)
    out = tuning_candidates(form, **facts)
    default = tuple(info.schedule)
    if default not in out:
        out.insert(0, default)
    return out


def _matmul_operands(info, out_name):
    """``(A, B)`` of a tiled matmul kernel, in product order: from the
    schedule in force when it names them (its arguments are sorted by name)."""
    from polyarray.codegen.schedule import RegisterTile
    steps = tuple(info.schedule)
    if steps and isinstance(steps[0], RegisterTile):
        return steps[0].a, steps[0].b
    fetched = [s.array for s in steps if isinstance(s, Prefetch)]
    if len(fetched) == 2:
        return tuple(fetched)
    return tuple([a for a in info.args if a != out_name][:2])


def _first_output(program, info):
    """``(name, BufferSpec)`` of the first buffer kernel ``info`` writes."""
    name = next(a.name for a in info.loopy_kernel.args if a.is_output)
    return name, program._exe.lowered.buffers[name]


def tune_program(program, candidates=None, budget_s=None, repeat=10, log=print):
    """The tuned program (see the module docstring).  ``candidates``: kernel
    name -> list of schedules, overriding ``default_candidates``."""
    from polyarray.codegen import program_key
    from polyarray.targets.cache import code_version, key_digest
    Program = type(program)         # polyarray.program imports this module
    if program.target_name == "numpy":
        raise ScheduleError("the numpy target runs no kernels: nothing to tune")
    exe = program._exe
    device = getattr(exe, "device_description", lambda: program.target_name)()
    key = key_digest("tune", program_key(program._outputs), program.target_name, device,
                     code_version(), repr(sorted(program.options.items())),
                     repr(sorted((k, format_schedule(v)) for k, v in (candidates or {}).items())))
    hit = _cache().get(key)
    if hit is not None:
        schedule = {k: parse_schedule(v) for k, v in hit["schedule"].items()}
        tuned = program.with_schedule(schedule)
        tuned._tuning = dict(hit["report"], origin="cache")
        log(f"polyarray tune: schedules from the tuning cache ({len(schedule)} kernels)")
        return tuned

    bindings = random_bindings(program)
    device_opts = dict(program.options, out="device")
    dev_bindings = {}
    for name, value in bindings.items():      # upload once: time kernels, not copies
        from .api import placeholder
        ident = Program(placeholder(name, value.shape, value.dtype), program.target_name,
                        **device_opts)
        dev_bindings[name] = ident(**{name: value})
    host_opts = dict(program.options, out="numpy")
    want = flat_outputs(Program(program.outputs, program.target_name,
                         schedule=program.user_schedule or None, **host_opts)(**bindings))
    t_start = time.perf_counter()
    best = dict(program.user_schedule)
    report = {"kernels": {}, "origin": "measured", "device": device}
    for kname, info in program.kernels.items():
        cands = (candidates or {}).get(kname) or default_candidates(info, program)
        if len(cands) < 2:
            continue
        rows = []
        for n, steps in enumerate(cands, 1):
            if budget_s is not None and time.perf_counter() - t_start > budget_s:
                rows.append((format_schedule(steps), None, "skipped: tuning budget spent"))
                continue
            trial = dict(best, **{kname: tuple(steps)})
            try:
                prog = Program(program.outputs, program.target_name, schedule=trial,
                               **device_opts)
                got = flat_outputs(prog(**dev_bindings))
                ok = all(allclose(g, w, tolerances=SCHEDULE_TOLERANCES) for g, w in zip(got, want))
            except ScheduleError as e:
                rows.append((format_schedule(steps), None, f"invalid: {e}"))
                continue
            if not ok:
                rows.append((format_schedule(steps), None, "rejected: wrong result"))
                log(f"polyarray tune {kname} [{n}/{len(cands)}] {format_schedule(steps)}: "
                    "wrong result, rejected")
                continue
            t = seconds_per_call(prog, dev_bindings, repeat)
            rows.append((format_schedule(steps), t, "ok"))
            log(f"polyarray tune {kname} [{n}/{len(cands)}] {format_schedule(steps)}: "
                f"{t * 1e6:.1f} us")
        timed = [(t, s) for s, t, status in rows if t is not None]
        if timed:
            t_best, s_best = min(timed)
            best[kname] = parse_schedule(s_best)
            report["kernels"][kname] = {"candidates": rows, "chosen": s_best,
                                        "default": format_schedule(info.schedule)}
    _cache().put(key, {"schedule": {k: format_schedule(v) for k, v in best.items()},
                       "report": report})
    tuned = program.with_schedule(best)
    tuned._tuning = report
    return tuned


def format_report(report) -> str:
    lines = [f"tuning on {report.get('device')} ({report.get('origin')})"]
    for kname, r in report["kernels"].items():
        lines.append(f"{kname}: chosen {r['chosen']}  (default {r['default']})")
        for steps, t, status in r["candidates"]:
            mark = "*" if steps == r["chosen"] else " "
            timing = f"{t * 1e6:10.1f} us" if t is not None else " " * 13
            lines.append(f"  {mark} {timing}  {steps}  {'' if status == 'ok' else status}")
    return "\n".join(lines)
