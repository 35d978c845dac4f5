"""``pa.compile``: outputs + target -> a callable ``Program``.

Binding checks live here, shared by all targets, so every target reports a
missing, unknown or mistyped binding with the same error, before anything
runs: a failed call changes nothing.
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import time
from dataclasses import dataclass

import numpy as np

from .ir import nodes as N
from .array import Array
from .ops.inputs import binding_array, describe_dtype, python_binding
from .shared import StateUpdates
from .targets.foreign import host_array_of

_CONTEXT_TARGET = contextvars.ContextVar("polyarray_target", default=None)
_DEFAULT_TARGET = None


def set_default_target(name) -> None:
    """Set the target used when none is named ("numpy", "opencl", "cuda"), for
    compiles and the eager hooks (``np.asarray(x)``, ``float(x)``, ...);
    ``None`` restores the automatic choice (see ``get_default_target``)."""
    global _DEFAULT_TARGET
    if name is not None:
        from polyarray import targets
        targets.target_class(name)          # rejects unknown names now
    _DEFAULT_TARGET = name


@contextlib.contextmanager
def target(name):
    """A context manager that sets the default target in a block:
    ``with pa.target("opencl"): ...`` (compiles, ``evaluate()`` and the eager
    hooks inside use it)."""
    from polyarray import targets
    targets.target_class(name)
    token = _CONTEXT_TARGET.set(name)
    try:
        yield name
    finally:
        _CONTEXT_TARGET.reset(token)


def get_default_target() -> str:
    """The target used when none is named: a ``pa.target`` block, else
    ``pa.set_default_target``, else ``$POLYARRAY_TARGET``, else the best
    available one (cuda, opencl, numpy)."""
    from polyarray import targets
    for name in (_CONTEXT_TARGET.get(), _DEFAULT_TARGET,
                 os.environ.get("POLYARRAY_TARGET") or None):
        if name is not None:
            return name
    return targets.best_available()


def _flatten(outputs):
    """(kind, keys, list of nodes) for an array, list/tuple or dict."""
    def node_of(x, key):
        if isinstance(x, Array):
            return x.node
        raise TypeError(f"output {key!r} is a {type(x).__name__}, not a polyarray "
                        "array")
    if isinstance(outputs, Array):
        return "single", None, [outputs.node]
    if isinstance(outputs, dict):
        keys = list(outputs)
        return "dict", keys, [node_of(outputs[k], k) for k in keys]
    if isinstance(outputs, (list, tuple)):
        kind = "tuple" if isinstance(outputs, tuple) else "list"
        return kind, None, [node_of(x, k) for k, x in enumerate(outputs)]
    raise TypeError("pa.compile expects an array, a list/tuple or a dict of "
                    f"arrays, got {type(outputs).__name__}")


def _describe(shape, dtype):
    return f"shape {tuple(shape)}, dtype {np.dtype(dtype).name}"


@dataclass(frozen=True)
class CompileReport:
    """``prog.compile_report()``: the stages of making a program, in seconds
    (``stages``: ``(name, seconds)`` in order), where its kernels came from
    (``origin``: "built", "disk", "memory", or "none" on the numpy target),
    the target's whole compile call (``compile_seconds``, which the stages
    of codegen and the build are part of) and the sum of the stages."""
    target: str
    origin: str
    kernels: int
    stages: tuple
    compile_seconds: float
    total_seconds: float

    def __str__(self):
        lines = [f"compile report: {self.target}, {self.kernels} kernel(s), "
                 f"kernels from: {self.origin}"]
        lines += [f"  {name:28s} {seconds * 1e3:10.2f} ms" for name, seconds in self.stages]
        lines.append(f"  {'total':28s} {self.total_seconds * 1e3:10.2f} ms")
        return "\n".join(lines)


class Program:
    """A compiled set of outputs on one target.  Call it with bindings.

    Without a ``schedule``, a DAG tuned before on the same device and target
    (``prog.tune()``, ``tune=True``; in any process) compiles with the tuned
    schedules from the tuning cache: its kernels say ``origin == "tuned"``
    and ``tuning_report()`` shows that tuning.  ``tuned=False`` (or
    ``$POLYARRAY_USE_TUNED=0``, which ``tuned=True`` overrides) compiles the
    policy's defaults instead.

    ``updates`` ({shared variable: expression}) gives shared variables
    (``pa.shared``) new values after each call, computed from the old ones
    (``polyarray.shared``); shared variables are read without bindings."""

    def __init__(self, outputs, target=None, schedule=None, tune=False, tuned=None,
                 updates=None, **options):
        from polyarray import targets as _targets
        self._kind, self._keys, self._outputs = _flatten(outputs)
        self._n_out, self._updates = len(self._outputs), updates
        self._state = StateUpdates.make(updates, self._outputs)
        self.target_name = target or get_default_target()
        self._target = _targets.get_target(self.target_name)
        self.options = self._exe_options = options
        t0 = time.perf_counter()
        if self._state is not None:
            self._outputs = self._outputs + self._state.exprs
            if self._state.targets and self.target_name != "numpy":
                # updated values stay on the device; outputs are copied as asked
                self._exe_options = dict(options, out="device")
        with N.collector_paused():
            if self.target_name != "numpy":
                # sums written as loops become reductions, and loops whose rows
                # build on the rows before recurrences (the numpy target runs
                # the program as written)
                from .codegen.plan.recurrence import roll_recurrences
                from .codegen.plan.reroll import reroll_sums
                self._outputs = roll_recurrences(reroll_sums(self._outputs))
            self._outputs = N.without_written(self._outputs)
        self.placeholders = N.placeholders(self._outputs)     # ValueError: one name twice
        if self._state is not None:
            self.placeholders = {n: p for n, p in self.placeholders.items()
                                 if n not in self._state.variables}
        self._sorted_placeholders = sorted(self.placeholders.items())
        from polyarray.codegen.schedule import normalize_schedule
        self.user_schedule = normalize_schedule(schedule)   # ScheduleError if malformed
        self._use_tuned = tuned
        self._tuning, self._tuned_kernels, self._kernel_view = None, frozenset(), None
        t1 = time.perf_counter()
        self._exe = self._compile(self.user_schedule)
        self._made = (t1 - t0, time.perf_counter() - t1)   # frontend rewrites, target compile
        self.trace_seconds = None       # pa.jit's trace of the function, where it made this
        if tune:
            self._adopt(self.tune())
        elif not self.user_schedule:
            self._use_stored_tuning()

    def _compile(self, schedule):
        options = dict(self._exe_options, schedule=schedule) if schedule else self._exe_options
        return self._target.compile(self._outputs, **options)

    def _use_stored_tuning(self):
        """Compile the tuning cache's schedules for this DAG, if any (and
        wanted); a stored schedule that no longer applies is ignored."""
        from .tuning import stored_schedule, use_tuned
        if not use_tuned(self._use_tuned):
            return
        stored = stored_schedule(self)
        if stored is None:
            return
        schedule, report = stored
        from polyarray.codegen.schedule import ScheduleError
        try:
            self._exe = self._compile(schedule)
        except ScheduleError as e:
            import logging
            logging.getLogger("polyarray.tune").warning(
                "polyarray: the tuned schedule no longer applies (%s); using the default", e)
            return
        self.user_schedule = schedule
        self._tuning = dict(report, origin="cache")
        self._mark_tuned(report["kernels"])

    def _mark_tuned(self, names):
        """Kernels ``names`` run schedules chosen by tuning."""
        self._tuned_kernels, self._kernel_view = frozenset(names), None

    # -- inspection ------------------------------------------------------
    @property
    def source(self) -> str:
        """The generated device source (OpenCL C or CUDA C) of all kernels; it
        opens with a comment mapping device names to placeholders."""
        return self._exe.source

    @property
    def kernels(self):
        """Kernel name -> ``KernelInfo``; its ``origin`` says where its
        schedule came from: "policy" (the default), "user" or "tuned"."""
        if self._kernel_view is None:
            import dataclasses
            import fnmatch

            def origin(name):
                if name in self._tuned_kernels:
                    return "tuned"
                return "user" if any(fnmatch.fnmatchcase(name, pat)
                                     for pat in self.user_schedule) else "policy"
            self._kernel_view = {
                name: k if origin(name) == k.origin else dataclasses.replace(k, origin=origin(name))
                for name, k in self._exe.kernels.items()}
        return self._kernel_view

    @property
    def schedule(self) -> dict:
        """Kernel name -> the steps in force (the user's, else the default).
        Printable, and replayable: ``pa.compile(out, schedule=prog.schedule)``."""
        return {name: tuple(k.schedule) for name, k in self.kernels.items()}

    def with_schedule(self, schedule) -> "Program":
        """A new program with ``schedule`` (kernel name or pattern -> steps)
        replacing those kernels' schedules; this one is unchanged."""
        from polyarray.codegen.schedule import normalize_schedule
        merged = dict(self.user_schedule)
        merged.update(normalize_schedule(schedule))
        return Program(self.outputs, self.target_name, schedule=merged, tuned=self._use_tuned,
                       updates=self._updates, **self.options)

    def transform(self, kernel_name, fn) -> "Program":
        """A new program whose kernel ``kernel_name`` is also passed through
        ``fn`` (any loopy kernel -> kernel function) after its schedule."""
        from polyarray.codegen.schedule import ScheduleError, Transform
        if kernel_name not in self.kernels:
            raise ScheduleError(f"no kernel named {kernel_name!r}; this program's kernels "
                                f"are: {', '.join(self.kernels)}")
        steps = self.schedule[kernel_name] + (Transform(fn),)
        return self.with_schedule({kernel_name: steps})

    def tune(self, candidates=None, budget_s=30.0, repeat=10, log=None, progress=None):
        """Time candidate schedules of each kernel on the device and return
        the program with the fastest correct ones, within ``budget_s``
        seconds (None: no limit); later compiles of this DAG on this device
        use them (see ``polyarray.tuning``).  Progress goes to the
        ``polyarray.tune`` logger (or ``log(line)``, e.g. ``log=print``),
        and to a tqdm bar in a terminal (``progress=True``: always)."""
        from .tuning import tune_program
        return tune_program(self, candidates=candidates, budget_s=budget_s, repeat=repeat,
                            log=log, progress=progress)

    def compile_report(self) -> "CompileReport":
        """Where making this program went, stage by stage: ``pa.jit``'s trace
        (where it made it), the frontend's rewrites, planning, kernel forms
        and schedules, loopy's code generation, the device build (or a cache
        hit), and the work CUDA leaves to the first call (its module build),
        once that call ran.  ``print(prog.compile_report())`` shows a table."""
        origin, stages = self._exe.compile_stages()
        rewrites, compiled = self._made
        rows = ([("trace (pa.jit)", self.trace_seconds)] if self.trace_seconds is not None
                else []) + [("rewrites", rewrites)] + list(stages.items())
        rest = compiled - sum(stages.values())
        if rest > 0:
            rows.append(("keys, caches, loading", rest))
        first = self._exe.first_call_build
        if first is not None:
            rows.append(("first call: module build", first))
        total = sum(s for _, s in rows)
        return CompileReport(self.target_name, origin, len(self.kernels), tuple(rows),
                             compiled, total)

    def profile(self, /, *args, repeat=5, hardware=None, **bindings):
        """Run ``repeat`` calls with each kernel timed on the device (CUDA
        events; OpenCL events on a profiling queue; the NumPy target times
        its nodes) and return a ``polyarray.inspect.profiling.Profile``: a table
        (``print(p)``), rows as data (``p.rows``, ``p.to_dict()``), a
        roofline (``p.plot()``), ``pa.show(prog, profile=p)``.  Bindings are
        checked as by a call; host arrays go to the device once, first.
        ``hardware``: the ``polyarray.inspect.hardware.Hardware`` to compare with
        (None: measured once per process; False: none).  A placeholder named
        ``repeat`` or ``hardware`` is bound by position.  Shared variables
        are read and not updated."""
        if args:
            bindings = self._positional(args, bindings)
        from .inspect.profiling import profile_program
        return profile_program(self, bindings, repeat=repeat, hardware=hardware)

    def tuning_report(self) -> str:
        """Every candidate's time from the tuning that produced this program."""
        if self._tuning is None:
            return "not tuned (compile with tune=True, or call prog.tune())"
        from .tuning import format_report
        return format_report(self._tuning)

    # check(): attached by polyarray.testing.checking (it compiles on every target, so it
    # sits above this module), as this module attaches Array.evaluate

    def _adopt(self, other):
        """Take over ``other``'s executable (used by ``tune=True``)."""
        self.user_schedule, self._exe = other.user_schedule, other._exe
        self._tuning = other._tuning
        self._mark_tuned(other._tuned_kernels)

    @property
    def outputs(self):
        """The compiled outputs as lazy arrays, in the structure given to
        ``pa.compile`` (an array, a list/tuple or a dict)."""
        nodes = [Array(n) for n in self._outputs[:self._n_out]]
        return self._pack(nodes)

    @property
    def all_outputs(self) -> list:
        """Every array this program computes, as a list: the outputs, then the
        updates' new values (what tuning times)."""
        return [Array(n) for n in self._outputs]

    def __repr__(self):
        ph = ", ".join(f"{n}: {p.dtype.name}{list(p.shape)}"
                       for n, p in sorted(self.placeholders.items()))
        updates = f" updates={len(self._state.targets)}" if self._state and self._state.targets else ""
        return (f"<pa.Program target={self.target_name!r} outputs={self._n_out}{updates} "
                f"placeholders=({ph})>")

    # -- pickling: compiled again where it is loaded ---------------------
    def __reduce__(self):
        """A program pickles (and deep-copies) as what it was compiled from: the
        DAG of its outputs and updates (with the shared variables it reads,
        their values, and its custom kernels: ``polyarray.pickling``), its
        target, options and schedule; loading compiles again (a load from the
        compile cache where the kernels were built before).  A deep copy
        reads and updates copies of the shared variables."""
        from .pickling import dag_state
        updated = tuple(self._state.targets) if self._state is not None else ()
        return _unpickle, (dag_state(self._outputs), self._kind, self._keys, self._n_out,
                           updated, self.target_name, self.options, self.user_schedule,
                           self._use_tuned, self._tuning, tuple(self._tuned_kernels))

    # -- calling ---------------------------------------------------------
    def check_bindings(self, bindings) -> dict:
        """Validate ``bindings`` (placeholder name -> value) as a call would, before
    anything runs: a missing, unknown, wrongly shaped or typed binding raises
    (no dtype is cast).  Returns the prepared values."""
        if bindings.keys() != self.placeholders.keys():
            unknown = sorted(set(bindings) - set(self.placeholders))
            if unknown:
                known = ", ".join(sorted(self.placeholders)) or "none"
                raise TypeError(f"unexpected binding {unknown[0]!r}: the program's "
                                f"placeholders are: {known}")
            missing = sorted(set(self.placeholders) - set(bindings))
            ph = self.placeholders[missing[0]]
            raise TypeError(f"missing binding for placeholder {missing[0]!r} "
                            f"(expected {_describe(ph.shape, ph.dtype)})")
        info_of, prepare = self._target.binding_info, self._target.prepare_binding
        prepared = {}
        for name, ph in self._sorted_placeholders:
            value = bindings[name]
            if isinstance(value, (bool, int, float, list, tuple)):
                value = python_binding(value, name, ph.dtype)
            if isinstance(value, np.ndarray):   # subclasses, byte order
                value = binding_array(value, name, ph.dtype)
            elif not isinstance(value, (np.generic, Array)):
                value = self._target.import_binding(value)   # device arrays of any library
                if not self._target.binding_info(value):       # another library's host array
                    host = host_array_of(value)
                    value = value if host is None else binding_array(host, name, ph.dtype)
            info = info_of(value)
            if info is None:
                raise TypeError(
                    f"binding for placeholder {name!r} must be an array "
                    f"accepted by the {self.target_name} target (e.g. a "
                    f"numpy.ndarray), got {type(value).__name__}; expected "
                    f"{_describe(ph.shape, ph.dtype)}")
            shape, dtype = info
            if shape != ph.shape and tuple(shape) != ph.shape:
                raise ValueError(f"binding for placeholder {name!r} has the wrong "
                                 f"shape: expected {ph.shape}, got {tuple(shape)}")
            if dtype is not ph.dtype and dtype != ph.dtype:
                raise TypeError(f"binding for placeholder {name!r} has the wrong "
                                f"dtype: expected {ph.dtype.name}, got "
                                f"{describe_dtype(dtype)}")
            prepared[name] = prepare(value)
        return prepared

    def synchronize(self):
        """Wait for this program's queued device work (``out="device"`` calls
        return before the device finishes, as in CuPy)."""
        self._exe.synchronize()

    def __call__(self, /, *args, **bindings):   # positional-only: a placeholder may be 'self'
        """Run with ``bindings`` (placeholder name -> array); positional
        arguments bind the placeholders in ``prog.placeholders`` order."""
        if args:
            bindings = self._positional(args, bindings)
        if self._state is not None:
            return self._state.call(self, bindings)     # shared variables (shared.py)
        fast = self._exe.fast_call
        if fast is not None:
            results = fast(bindings)
            if results is not None:
                return self._pack(results)
        prepared = self.check_bindings(bindings)
        return self._pack(self._exe.run(prepared))

    def repeat(self, n, /, *args, **bindings):
        """``n`` calls with the same bindings, each seeing the shared variables
        as the previous one updated them (a training loop in one call);
        returns the last call's outputs.  On CUDA the steps are captured
        once as a CUDA graph and replayed (``targets/cuda/graphs.py``): one
        host launch per 64 steps.  Waits for the device."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"repeat: the number of calls must be a positive integer, "
                             f"got {n!r}")
        if args:
            bindings = self._positional(args, bindings)
        from .shared import repeat_calls
        return repeat_calls(self, int(n), bindings)

    def _positional(self, args, bindings):
        names = list(self.placeholders)
        if len(args) > len(names):
            raise TypeError(f"this program takes {len(names)} positional binding(s) "
                            f"({', '.join(names) or 'none'}), got {len(args)}")
        for name, value in zip(names, args):
            if name in bindings:
                raise TypeError(f"placeholder {name!r} is bound twice: by position and "
                                "by name")
            bindings[name] = value
        return bindings

    def _pack(self, results):
        if self._kind == "single":
            return results[0]
        if self._kind == "dict":
            return dict(zip(self._keys, results))
        return tuple(results) if self._kind == "tuple" else list(results)


def _unpickle(state, kind, keys, n_out, updated, target_name, options, schedule, tuned,
              tuning, tuned_kernels) -> Program:
    from .pickling import restore_dag
    nodes = [Array(n) for n in restore_dag(state)]
    outputs = nodes[0] if kind == "single" else dict(zip(keys, nodes[:n_out])) \
        if kind == "dict" else tuple(nodes[:n_out]) if kind == "tuple" else nodes[:n_out]
    updates = list(zip(updated, nodes[n_out:])) or None
    prog = Program(outputs, target_name, schedule=schedule, tuned=tuned, updates=updates,
                   **options)
    if tuning is not None:
        prog._tuning = tuning
        prog._mark_tuned(tuned_kernels)
    return prog


def compile(outputs, target=None, **options) -> Program:   # noqa: A001
    """Compile an array, a list/tuple or a dict of arrays into a callable
    ``pa.Program`` for ``target`` (default: ``pa.get_default_target()``).

    Call the program with the placeholders' values; it returns NumPy arrays
    in the same structure, or device arrays with ``out="device"`` (OpenCL
    and CUDA targets only).  ``schedule=``: kernel name or pattern -> steps;
    ``tune=True``: tune now; ``tuned=False``: ignore a tuning stored for
    this DAG (see ``Program``)."""
    return Program(outputs, target=target, **options)


# ``x.evaluate()`` and ``x.to_numpy()`` compile, so they are defined here:
# polyarray.array, below this module, builds expressions and never compiles.
def _evaluate(self, target=None, /, **bindings):
    """The array's values, computed now on ``target`` (default: the default
    target), as a NumPy array; ``bindings`` give the placeholders' values.
    Compiles once per expression and target (cached)."""
    return compile(self, target=target)(**bindings)


def _to_numpy(self, /, **bindings) -> np.ndarray:
    """The array's values computed by the NumPy reference target, as a NumPy
    array; ``bindings`` give the placeholders' values."""
    return self.evaluate("numpy", **bindings)


for _method in (_evaluate, _to_numpy):
    _method.__name__ = _method.__name__[1:]
    _method.__qualname__ = f"Array.{_method.__name__}"
    setattr(Array, _method.__name__, _method)
del _method
