"""NPBench through polyarray: ``python -m benchmarks.npbench --target opencl``.

NPBench (github spcl/npbench) is 54 NumPy programs that nobody on this
project wrote: PolyBench kernels, stencils, CFD, deep-learning layers and
more, each with an ``initialize`` that makes its inputs, presets of sizes
(S, M, L, paper) and the arguments it writes (``output_args``).  This runs
each kernel's NumPy source unchanged through polyarray, checks it against
the same kernel run by NumPy, and prints one row per kernel.

Modes:

* ``jit``: ``pa.jit(kernel)(*args)`` with NumPy inputs (CuPy, else pycuda,
  arrays on the CUDA target, so the results stay on the device).
* ``module``: the kernel's file executed with ``import numpy as np``
  replaced by ``import polyarray as np`` (``from numpy import`` likewise),
  called with ``pa.asarray`` inputs; the results are read with
  ``np.asarray`` (where the work happens: it is timed).

Validation is NPBench's (``npbench/infrastructure``): the return value
(each element of a returned tuple) and every ``output_args`` argument as
it is after the call (kernels write their arguments in place), compared
with ``np.allclose(rtol, atol)``, else the relative error of the norm
against ``norm_error`` (1e-5, 1e-8, 1e-5 unless the benchmark's JSON says
otherwise).  Two things are stricter than NPBench: shapes must match
(``np.allclose`` broadcasts), and the four benchmarks whose
``output_args`` miss what they write (``WRITES_UNLISTED``) compare every
array argument.  NaNs compare equal to NaNs.  The reference is the NumPy
kernel on fresh copies of the same inputs.

Each kernel runs in its own process (a hang or a crash is a result, not
the end of the run).  Classes: ``correct``; ``wrong`` (ran, wrong values);
``error-clear`` (polyarray refused, naming the problem: see
``classify_error``); ``error-unclear`` (any other exception); ``timeout``;
``crash`` (the process died); ``skipped`` (the inputs could not be made
here, e.g. ``spmv`` needs scipy).

Times: ``first`` is the first call (trace, compile, run, results on the
host for the module mode); ``later`` the median of ``--repeat`` later calls
with fresh copies of the inputs (the copies are not timed; a call ends when
its results are computed: device results are synchronized, not copied back).
``NumPy`` is the NumPy kernel's median on the same inputs.  Ratios are
ours/theirs: lower is better, < 1 means polyarray is faster.  NumPy is a
peer everywhere (``benchmarks/peers.py``'s convention); on CUDA,
``--peers cupy,jax`` adds NPBench's own ``_cupy.py`` / ``_jax.py`` ports,
inputs on the device, timed in the same process (a peer whose result does
not validate is reported, not counted).  No fraction of the hardware is
printed: what these kernels must move is not known from their inputs.
"""
from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import math
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_T0 = time.monotonic()          # a worker's start (its imports come before)
WORKER_MARGIN_S = 5.0           # the timed loops end this long before --timeout

CLASSES = ("correct", "wrong", "error-clear", "error-unclear", "timeout", "crash", "skipped")
# benchmarks whose output_args miss what the kernel writes: doitgen and
# scattering_self_energies list none, trisolv lists b but writes x, heat_3d's
# small inputs are a fixed point of the stencil
WRITES_UNLISTED = frozenset({"doitgen", "scattering_self_energies", "trisolv", "heat_3d"})
# kernels that are correct on the numpy and opencl targets in both modes and
# quick at preset S: the CI subset (tests/system/test_npbench.py); extend as features land
CI_KERNELS = ("arc_distance", "bicg", "compute", "gesummv", "softmax")
PEERS = ("cupy", "jax")


def default_root():
    """``$POLYARRAY_NPBENCH``, else ``shared/npbench`` beside the checkout."""
    return os.environ.get("POLYARRAY_NPBENCH") or os.path.join(
        os.path.dirname(ROOT), "shared", "npbench")


class Corpus:
    """An NPBench checkout: its benchmarks' JSON, inputs and implementations
    (loaded from their files; NPBench's own package is not imported)."""

    def __init__(self, root=None):
        self.root = os.path.abspath(root or default_root())
        self.info_dir = os.path.join(self.root, "bench_info")
        if not os.path.isdir(self.info_dir):
            raise FileNotFoundError(
                f"no NPBench corpus at {self.root} (no bench_info/ there): pass --npbench "
                "PATH or set POLYARRAY_NPBENCH to a checkout of github spcl/npbench")

    def names(self):
        return sorted(f[:-5] for f in os.listdir(self.info_dir) if f.endswith(".json"))

    def info(self, name):
        path = os.path.join(self.info_dir, f"{name}.json")
        if not os.path.isfile(path):
            raise KeyError(f"no NPBench benchmark {name!r} (bench_info/{name}.json); "
                           f"known: {', '.join(self.names())}")
        with open(path) as f:
            return json.load(f)["benchmark"]

    def source_path(self, info, postfix=None):
        stem = info["module_name"] + (f"_{postfix}" if postfix else "")
        return os.path.join(self.root, "npbench", "benchmarks", *info["relative_path"].split("/"),
                            stem + ".py")

    def inputs(self, name, preset, params=None):
        """The preset's parameters and ``initialize``'s outputs, by name
        (NPBench's ``Benchmark.get_data``); ``params`` overrides sizes."""
        info = self.info(name)
        if preset not in info["parameters"]:
            raise KeyError(f"{name} has no preset {preset!r}")
        data = dict(info["parameters"][preset], **(params or {}))
        init = info.get("init")
        if init:
            mod = _load(self.source_path(info), f"npbench_init_{name}")
            outs = getattr(mod, init["func_name"])(*[data[a] for a in init["input_args"]])
            names = init["output_args"]
            data.update(zip(names, outs if len(names) > 1 else (outs,)))
        return data

    def function(self, name, postfix="numpy", polyarray_module=False):
        """The implementation ``<module>_<postfix>.py``'s kernel; with
        ``polyarray_module``, its source with NumPy's imports made polyarray's."""
        info = self.info(name)
        path = self.source_path(info, postfix)
        mod = _load(path, f"npbench_{postfix}_{name}",
                    rewrite=numpy_to_polyarray if polyarray_module else None)
        return getattr(mod, info["func_name"])


def numpy_to_polyarray(source):
    """``import numpy as np`` -> ``import polyarray as np``, ``from numpy
    import`` -> ``from polyarray import`` (line numbers unchanged)."""
    source = re.sub(r"^(\s*)import numpy as ", r"\1import polyarray as ", source, flags=re.M)
    source = re.sub(r"^(\s*)import numpy\s*$", r"\1import polyarray as numpy", source, flags=re.M)
    return re.sub(r"^(\s*)from numpy import ", r"\1from polyarray import ", source, flags=re.M)


def _load(path, module_name, rewrite=None):
    with open(path) as f:
        source = f.read()
    if rewrite:
        source = rewrite(source)
    spec = importlib.util.spec_from_loader(module_name, loader=None, origin=path)
    mod = importlib.util.module_from_spec(spec)
    mod.__file__ = path
    sys.modules[module_name] = mod      # dataclasses, pickling and tracebacks find it
    exec(compile(source, path, "exec"), mod.__dict__)
    return mod


# -- validation -----------------------------------------------------------

def to_host(value):
    """A NumPy value of a host or device result (CuPy, pycuda, JAX, torch)."""
    if hasattr(value, "get") and not isinstance(value, dict):
        return np.asarray(value.get())
    if type(value).__module__.startswith("torch"):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def flatten_result(result):
    """NPBench's view of a return value: a tuple or list is its elements,
    None is nothing, anything else one value."""
    if result is None:
        return []
    if isinstance(result, (tuple, list)):
        return list(result)
    return [result]


def validated_outputs(name, info, result, args):
    """``[(label, value)]``: the return values, then the arguments the kernel
    writes (``output_args``; every array argument in ``WRITES_UNLISTED``)."""
    out = [(f"return[{k}]", v) for k, v in enumerate(flatten_result(result))]
    written = info["array_args"] if name in WRITES_UNLISTED else info["output_args"]
    return out + [(a, args[info["input_args"].index(a)]) for a in written]


def tolerances(info):
    return info.get("rtol", 1e-5), info.get("atol", 1e-8), info.get("norm_error", 1e-5)


def compare(ref, got, rtol=1e-5, atol=1e-8, norm_error=1e-5):
    """``None`` if ``got`` validates against ``ref`` (both ``[(label, value)]``)
    as NPBench's ``validate`` does, else what differs (one line)."""
    if len(got) != len(ref):
        return (f"{len(got)} values ({', '.join(l for l, _ in got)}), NumPy has {len(ref)} "
                f"({', '.join(l for l, _ in ref)})")
    for (label, r), (_, v) in zip(ref, got):
        r, v = np.asarray(r), to_host(v)
        if r.shape != v.shape:
            return f"{label}: shape {v.shape}, NumPy's is {r.shape}"
        try:
            if np.allclose(r, v, rtol=rtol, atol=atol, equal_nan=True):
                continue
        except TypeError as e:
            return f"{label}: not comparable with NumPy's ({e})"
        rn = float(np.linalg.norm(r))
        err = float(np.linalg.norm(r - v)) / rn if rn else float(np.linalg.norm(v))
        if err < norm_error:
            continue
        return f"{label}: relative error {err:.3g} (norm_error {norm_error:g})"
    return None


# -- errors ---------------------------------------------------------------

def _source_dirs():
    import polyarray as pa
    dirs = {os.path.dirname(pa.__file__), os.path.dirname(pa.codegen.__file__),
            os.path.dirname(pa.targets.__file__)}
    return tuple(d + os.sep for d in dirs)


def classify_error(exc):
    """``(class, where)``: ``error-clear`` for polyarray's own refusals
    (``LazyValueError``, boolean masks of traced values, schedule errors), a
    ``TypeError``/``ValueError``/``NotImplementedError``/``IndexError``
    raised by polyarray's code, and a NumPy name ``polyarray`` lacks (module
    mode: the ``AttributeError`` names it); ``error-unclear`` otherwise
    (``KeyError``, ``RecursionError``, loopy's or a compiler's errors, an
    operand Python could not combine...).  ``where`` is the innermost frame."""
    import polyarray as pa
    frames = traceback.extract_tb(exc.__traceback__)
    last = frames[-1] if frames else None
    where = f"{_short(last.filename)}:{last.lineno}" if last else "?"
    own = (pa.LazyValueError, pa.NonConcreteBooleanIndexError, pa.ScheduleError)
    if isinstance(exc, own):
        return "error-clear", where
    if (isinstance(exc, AttributeError)
            and re.match(r"module 'polyarray(\.\w+)*' has no attribute", str(exc))):
        return "error-clear", where
    if (type(exc) in (TypeError, ValueError, NotImplementedError, IndexError)
            and last and last.filename.startswith(_source_dirs())):
        return "error-clear", where
    return "error-unclear", where


def _short(path):
    """``path`` from this checkout, the corpus or site-packages on."""
    for base in (ROOT, os.path.dirname(default_root())):
        if path.startswith(base + os.sep):
            return os.path.relpath(path, base)
    parts = path.split(os.sep)
    if "site-packages" in parts:
        return os.sep.join(parts[parts.index("site-packages") + 1:])
    return os.sep.join(parts[-3:])


def one_line(exc, limit=240):
    text = str(exc).strip().splitlines()
    return shorten(f"{type(exc).__name__}: {text[0] if text else ''}")[:limit]


def shorten(message):
    """``message`` with the corpus's file paths from the benchmark's folder on."""
    return re.sub(r"/\S*/npbench/benchmarks/", "", message)


# -- running one kernel ---------------------------------------------------

def _copy_args(info, data):
    """The kernel's arguments, array arguments copied (NPBench's setup)."""
    return [np.copy(data[a]) if a in info["array_args"] else data[a]
            for a in info["input_args"]]


class Device:
    """How ours is called, synchronized and read on one target."""

    def __init__(self, target):
        self.target = target
        self.sync = lambda: None
        self.to_device = None           # jit inputs: NumPy unless CUDA
        self.desc = target
        if target == "opencl":
            from polyarray.targets.opencl import select_device
            self.desc = "OpenCL / " + select_device()[2]
        elif target == "cuda":
            import pycuda.autoprimaryctx  # noqa: F401
            import pycuda.driver as drv
            self.sync = drv.Context.synchronize
            self.desc = f"CUDA / {drv.Context.get_device().name()}"
            try:
                import cupy
                self.to_device = cupy.asarray
            except Exception:           # noqa: BLE001  (no CuPy: pycuda arrays)
                import pycuda.gpuarray as ga
                self.to_device = lambda a: ga.to_gpu(a) if isinstance(a, np.ndarray) else a
        else:
            self.desc = f"NumPy {np.__version__} / {_cpu_name()}"


def _cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return f"{line.split(':', 1)[1].strip()}, {os.cpu_count()} cores"
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ours(corpus, name, info, mode, dev):
    """``(prepare, call)``: ``prepare()`` makes one call's inputs from host
    copies (not timed); ``call(args)`` runs the kernel and returns its
    result, computed (module mode: read back) and synchronized."""
    import polyarray as pa
    if mode == "jit":
        fn = pa.jit(corpus.function(name, "numpy"))

        def prepare(args):
            if dev.to_device is None:
                return args
            return [dev.to_device(a) if isinstance(a, np.ndarray) else a for a in args]

        def call(args):
            result = fn(*args)
            dev.sync()
            return result
        return prepare, call
    if mode != "module":
        raise ValueError(f"unknown mode {mode!r} (jit, module)")
    fn = corpus.function(name, "numpy", polyarray_module=True)
    arrays = set(info["array_args"])

    def prepare(args):
        return [pa.asarray(a) if n in arrays else a for n, a in zip(info["input_args"], args)]

    def call(args):
        result = fn(*args)
        # read back everything validated: the return values and the written
        # arguments (results of a lazy array are computed here)
        values = [np.asarray(v) if isinstance(v, pa.Array) else v
                  for v in flatten_result(result)]
        for label, v in validated_outputs(name, info, None, args):
            if isinstance(v, pa.Array):
                args[info["input_args"].index(label)] = np.asarray(v)
        return tuple(values) if isinstance(result, (tuple, list)) else \
            (values[0] if values else None)
    return prepare, call


def _time_calls(info, data, prepare, call, sync, repeat, deadline):
    """Median seconds of up to ``repeat`` calls on fresh copies, stopping
    before ``deadline`` (at least one call if there is time for one)."""
    times = []
    while len(times) < repeat:
        est = statistics.median(times) if times else 0.0
        if times and time.monotonic() + est > deadline:
            break
        args = prepare(_copy_args(info, data))
        sync()
        t0 = time.perf_counter()
        call(args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) if times else None, len(times)


def _peer(corpus, name, info, data, which, ref, repeat, deadline):
    """``(first s, later s, None)`` of NPBench's ``_cupy``/``_jax`` port with
    inputs on the device, or ``(None, None, why)``."""
    try:
        if which == "cupy":
            import cupy
            put, sync = cupy.asarray, cupy.cuda.Device().synchronize
        elif which == "jax":
            import jax
            jax.config.update("jax_enable_x64", True)     # as NPBench runs it
            import jax.numpy as jnp
            put, sync = jnp.array, (lambda: None)
        else:
            return None, None, f"unknown peer {which!r} ({', '.join(PEERS)})"
        fn = corpus.function(name, which)
        prepare = (lambda args: [put(a) if isinstance(a, np.ndarray) else a for a in args])

        def call(args):
            r = fn(*args)
            if which == "jax":
                r = jax.block_until_ready(r)
            sync()
            return r
        args = prepare(_copy_args(info, data))
        sync()
        t0 = time.perf_counter()
        result = call(args)
        first = time.perf_counter() - t0
        # NPBench's check of a peer: returns then output_args, pairs zipped (a
        # JAX port returns what it writes; its arguments are unchanged)
        got = validated_outputs(name, info, result, args)
        n = min(len(got), len(ref))
        why = compare(ref[:n], got[:n], *tolerances(info)) if n else "nothing to compare"
        if why:
            return None, None, f"does not validate: {why}"
        later, _ = _time_calls(info, data, prepare, call, sync, repeat, deadline)
        return first, later, None
    except Exception as e:          # noqa: BLE001  (a peer's failure is a note)
        return None, None, one_line(e, 120)


def run_kernel(corpus, name, target="numpy", preset="S", mode="jit", repeat=5,
               budget_s=None, peers=(), params=None, report=None):
    """Run benchmark ``name`` once through polyarray and return its row
    (a dict).  ``report(row)`` is called after each phase, so a caller
    that kills a hung process still has the phases before the hang."""
    import polyarray as pa
    deadline = time.monotonic() + (budget_s if budget_s else 1e9)
    row = {"kernel": name, "class": None, "phase": "inputs", "first_s": None,
           "later_s": None, "later_calls": 0, "numpy_s": None, "peers_s": {},
           "peers_first_s": {}, "peers_not_timed": {}, "error": None, "where": None,
           "detail": None}

    def phase(p):
        row["phase"] = p
        if report:
            report(row)

    info = corpus.info(name)
    try:
        data = corpus.inputs(name, preset, params)
    except Exception as e:      # noqa: BLE001  (not polyarray's: e.g. scipy missing)
        row.update({"class": "skipped", "error": one_line(e)})
        phase("done")
        return row
    # the reference: NumPy on fresh copies, and its time
    np_fn = corpus.function(name, "numpy")
    args = _copy_args(info, data)
    result = np_fn(*args)
    ref = [(label, np.copy(to_host(v))) for label, v in validated_outputs(name, info, result, args)]
    np_budget = time.monotonic() + 0.2 * (deadline - time.monotonic())
    row["numpy_s"], _ = _time_calls(info, data, lambda a: a, lambda a: np_fn(*a),
                                    lambda: None, repeat,
                                    min(np_budget, deadline))
    phase("first call")

    dev = Device(target)
    row["device"] = dev.desc
    pa.set_default_target(target)
    try:
        prepare, call = _ours(corpus, name, info, mode, dev)
        args = prepare(_copy_args(info, data))
        dev.sync()
        t0 = time.perf_counter()
        result = call(args)
        row["first_s"] = time.perf_counter() - t0
    except Exception as e:      # noqa: BLE001  (the result: classified)
        row["class"], row["where"] = classify_error(e)
        row["error"] = one_line(e)
        phase("done")
        return row
    try:
        why = compare(ref, validated_outputs(name, info, result, args), *tolerances(info))
    except Exception as e:      # noqa: BLE001  (a result NumPy cannot read is wrong too)
        why = f"the result cannot be read as a NumPy array: {one_line(e)}"
    if why:
        row.update({"class": "wrong", "detail": why})
        phase("done")
        return row
    row["class"] = "correct"
    phase("later calls")
    try:
        row["later_s"], row["later_calls"] = _time_calls(info, data, prepare, call, dev.sync,
                                                         repeat, deadline)
    except Exception as e:      # noqa: BLE001  (a later call failing is an error too)
        row["class"], row["where"] = classify_error(e)
        row["error"] = "later call: " + one_line(e)
    for which in peers:
        phase(f"peer {which}")
        first, later, why = _peer(corpus, name, info, data, which, ref, repeat, deadline)
        if why:
            row["peers_not_timed"][which] = why
        else:
            row["peers_first_s"][which], row["peers_s"][which] = first, later
    phase("done")
    return row


# -- the run: one process per kernel ------------------------------------

def run_in_process(name, args, cache_dir):
    """The row of ``name``, run in a new process: ``timeout`` or ``crash``
    when it hangs or dies (with the phase it was in)."""
    with tempfile.TemporaryDirectory(prefix="npbench-") as tmp:
        out, log = os.path.join(tmp, "row.json"), os.path.join(tmp, "log.txt")
        cmd = [sys.executable, "-m", "benchmarks.npbench", "--worker", name, "--result", out,
               "--npbench", args.npbench, "--target", args.target, "--preset", args.preset,
               "--mode", args.mode, "--repeat", str(args.repeat),
               "--timeout", str(args.timeout)]
        if args.peers:
            cmd += ["--peers", args.peers]
        env = dict(os.environ, POLYARRAY_USE_TUNED="0",
                   PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
        if cache_dir:
            env["POLYARRAY_CACHE_DIR"] = cache_dir
            # PoCL keeps built kernels too: a first call builds from nothing
            env.setdefault("POCL_CACHE_DIR", os.path.join(cache_dir, "pocl"))
        t0 = time.monotonic()
        with open(log, "w") as logf:
            proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=logf, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            try:
                rc = proc.wait(timeout=args.timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)   # the worker and its compilers
                rc, timed_out = proc.wait(), True
        row = None
        if os.path.exists(out):
            with open(out) as f:
                row = json.load(f)
        if row is None:
            row = {"kernel": name, "class": None, "phase": "start"}
        row["wall_s"] = time.monotonic() - t0
        return settle(row, timed_out, rc, args.timeout, log)


def settle(row, timed_out, rc, timeout, log=None):
    """The class of a worker's row once its process has ended: ``timeout`` or
    ``crash`` when it hung or died before finishing, with the phase it was in.
    A peer that hangs or dies after our result was checked and timed is the
    peer's entry (``peers_not_timed``), not our class."""
    in_peer = str(row.get("phase", "")).startswith("peer ")
    if (timed_out or rc != 0) and in_peer and row.get("class") == "correct":
        peer = row["phase"][len("peer "):]
        row.setdefault("peers_not_timed", {})[peer] = (
            f"no result after {timeout:g} s" if timed_out else f"exit status {rc}")
        row["phase"] = "done"
    elif timed_out:
        row.update({"class": "timeout",
                    "error": f"no result after {timeout:g} s (in {row['phase']})"})
    elif rc != 0 or row.get("phase") != "done":
        tail = []
        if log and os.path.exists(log):
            with open(log) as f:
                tail = [line.strip() for line in f.read().strip().splitlines()][-3:]
        how = f"killed by signal {-rc}" if rc < 0 else f"exit status {rc}"
        row.update({"class": "crash", "error": f"{how} in {row.get('phase')}: "
                    + " | ".join(tail)[-300:]})
    return row


def ratios(row):
    """ours/NumPy and ours/best peer (NumPy included) of a correct row."""
    ours = row.get("later_s") if row.get("class") == "correct" else None
    peers = dict(row.get("peers_s") or {})
    if row.get("numpy_s"):
        peers["numpy"] = row["numpy_s"]
    best = min(peers, key=peers.get) if peers else None
    row["best_peer"] = best
    row["ours_over_numpy"] = ours / row["numpy_s"] if ours and row.get("numpy_s") else None
    row["ours_over_best_peer"] = ours / peers[best] if ours and best else None
    return row


def summary(rows):
    counts = {c: sum(r["class"] == c for r in rows) for c in CLASSES}
    ok = [r for r in rows if r.get("ours_over_best_peer")]
    geo = math.exp(statistics.fmean(math.log(r["ours_over_best_peer"]) for r in ok)) if ok else None
    worst = max(ok, key=lambda r: r["ours_over_best_peer"]) if ok else None
    return {"counts": counts, "geomean_ours_over_best_peer": geo, "correct_timed": len(ok),
            "worst": {"kernel": worst["kernel"], "ours_over_best_peer":
                      worst["ours_over_best_peer"], "best_peer": worst["best_peer"]}
            if worst else None}


def _fmt(seconds):
    from .bench import _fmt as fmt
    return fmt(seconds)


def _x(ratio):
    return f"{ratio:.2f}" if ratio else "-"


def print_table(rows, peers, head, file=None):
    file = file or sys.stdout
    print(f"\n{head}", file=file)
    print("times: first call (trace+compile+run) and median of later calls; NumPy: the NumPy "
          "kernel's median; ratios ours/theirs (lower is better, < 1: polyarray faster)",
          file=file)
    cols = f"{'kernel':26s} {'class':13s} {'first':>9s} {'later':>9s} {'NumPy':>9s} " \
           f"{'ours/np':>8s}"
    for p in peers:
        cols += f" {p:>9s}"
    cols += f" {'ours/best':>9s}  error or difference"
    print(cols, file=file)
    for r in rows:
        line = (f"{r['kernel']:26s} {r['class']:13s} {_fmt(r.get('first_s')):>9s} "
                f"{_fmt(r.get('later_s')):>9s} {_fmt(r.get('numpy_s')):>9s} "
                f"{_x(r.get('ours_over_numpy')):>8s}")
        for p in peers:
            line += f" {_fmt((r.get('peers_s') or {}).get(p)):>9s}"
        note = r.get("error") or r.get("detail") or ""
        if r.get("where") and r.get("error"):
            note += f" [{r['where']}]"
        for p, why in (r.get("peers_not_timed") or {}).items():
            note += f" ({p} not timed: {why})"
        print(f"{line} {_x(r.get('ours_over_best_peer')):>9s}  {note}", file=file)
    s = summary(rows)
    print("\n" + ", ".join(f"{c} {n}" for c, n in s["counts"].items()) + f" (of {len(rows)})",
          file=file)
    if s["geomean_ours_over_best_peer"]:
        w = s["worst"]
        print(f"geometric mean of ours/best peer over {s['correct_timed']} correct kernels: "
              f"{s['geomean_ours_over_best_peer']:.2f}; worst: {w['kernel']} "
              f"{w['ours_over_best_peer']:.2f} (best peer {w['best_peer']})", file=file)
    return s


def markdown(runs):
    """The rows of several runs of one corpus (their JSON, e.g. the two modes
    on one target) as one Markdown table, a kernel per line."""
    label = [f"{d['target']} {d['mode']}" for d in runs]
    head = ["kernel", "NumPy"] + [f"{lb} {c}" for lb in label
                                  for c in ("class", "first", "later", "ours/np")]
    lines = ["| " + " | ".join(head) + " | error or difference |",
             "|" + " --- |" * (len(head) + 1)]
    by_run = [{r["kernel"]: r for r in d["rows"]} for d in runs]
    names = list(dict.fromkeys(k for rows in by_run for k in rows))
    for name in names:
        rs = [rows.get(name, {}) for rows in by_run]
        npt = next((r["numpy_s"] for r in rs if r.get("numpy_s")), None)
        cells = [name, _fmt(npt)]
        notes = []
        for lb, r in zip(label, rs):
            cells += [r.get("class", "-"), _fmt(r.get("first_s")), _fmt(r.get("later_s")),
                      _x(r.get("ours_over_numpy"))]
            why = shorten(r.get("error") or r.get("detail") or "")
            if why:
                notes.append(f"{lb.split()[-1]}: {why[:140]}".replace("|", "/"))
        lines.append("| " + " | ".join(cells) + " | " + "; ".join(notes) + " |")
    for lb, d in zip(label, runs):
        c = d["counts"]
        geo = d.get("geomean_ours_over_best_peer")
        w = d.get("worst")
        lines.append("")
        lines.append(f"{lb}: " + ", ".join(f"{k} {v}" for k, v in c.items() if v)
                     + (f"; geometric mean ours/best peer over {d['correct_timed']} correct: "
                        f"{geo:.2f}, worst {w['kernel']} {w['ours_over_best_peer']:.2f}"
                        if geo else ""))
    return "\n".join(lines)


def _worker(args):
    corpus = Corpus(args.npbench)
    peers = [p for p in (args.peers or "").split(",") if p]

    def report(row):
        tmp = args.result + ".tmp"
        with open(tmp, "w") as f:
            json.dump(row, f, default=str)
        os.replace(tmp, args.result)
    # the parent kills the process at --timeout: leave the timed loops a margin
    run_kernel(corpus, args.worker, args.target, args.preset, args.mode, args.repeat,
               budget_s=max(1.0, args.timeout - WORKER_MARGIN_S - (time.monotonic() - _T0)),
               peers=peers, report=report)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.npbench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--npbench", default=default_root(),
                    help="the NPBench checkout (default: $POLYARRAY_NPBENCH, else "
                         "../shared/npbench beside this checkout)")
    ap.add_argument("--target", default="numpy", choices=["numpy", "opencl", "cuda"])
    ap.add_argument("--preset", default="S", choices=["S", "M", "L", "paper"])
    ap.add_argument("--mode", default="jit", choices=["jit", "module"])
    ap.add_argument("--kernels", default=None, help="a comma-separated subset (default: all)")
    ap.add_argument("--timeout", type=float, default=120.0,
                    help="seconds per kernel: its process (start-up, the NumPy reference, "
                         "ours, peers) is killed then")
    ap.add_argument("--peers", default=None, help="cuda only: cupy,jax (NPBench's ports)")
    ap.add_argument("--repeat", type=int, default=5, help="later calls timed per kernel")
    ap.add_argument("--json", default=None, help="write the rows here")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--result", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--markdown", nargs="+", default=None, metavar="JSON",
                    help="print the rows of earlier runs (their --json files) as one "
                         "Markdown table, and run nothing")
    ap.add_argument("--merge", nargs="+", default=None, metavar="JSON",
                    help="join the rows of runs of one corpus split into parts (same target, "
                         "mode and preset; e.g. runs with --kernels that together cover it) "
                         "into --json, print their table, and run nothing")
    args = ap.parse_args(argv)
    if args.merge:
        return _merge(ap, args)
    if args.markdown:
        runs = []
        for path in args.markdown:
            with open(path) as f:
                runs.append(json.load(f))
        print(markdown(runs))
        return None
    if args.worker:
        return _worker(args)
    peers = [p for p in (args.peers or "").split(",") if p]
    if peers and args.target != "cuda":
        ap.error("--peers: NPBench's CuPy and JAX ports run on the CUDA target only")
    if bad := [p for p in peers if p not in PEERS]:
        ap.error(f"--peers: unknown {', '.join(bad)} (known: {', '.join(PEERS)})")
    try:
        corpus = Corpus(args.npbench)
    except FileNotFoundError as e:
        ap.error(str(e))
    names = corpus.names()
    if args.kernels:
        wanted = [k for k in args.kernels.split(",") if k]
        if unknown := [k for k in wanted if k not in names]:
            ap.error(f"--kernels: unknown {', '.join(unknown)} (known: {', '.join(names)})")
        names = wanted
    # one cache dir for the run (polyarray's and PoCL's), empty at its start:
    # first calls compile
    own_cache = None if os.environ.get("POLYARRAY_CACHE_DIR") else \
        tempfile.TemporaryDirectory(prefix="npbench-cache-")
    command = " ".join(["python -m benchmarks.npbench"] + list(argv if argv is not None
                                                              else sys.argv[1:]))
    rows = []
    try:
        for name in names:
            row = ratios(run_in_process(name, args, own_cache and own_cache.name))
            rows.append(row)
            print(f"  {name}: {row['class']} {_fmt(row.get('later_s'))} "
                  f"{row.get('error') or row.get('detail') or ''}"[:200],
                  file=sys.stderr, flush=True)
            if args.json:       # after every kernel: a run stopped from outside keeps its rows
                _write_json(args, corpus, command, rows, complete=False)
    finally:
        if own_cache:
            own_cache.cleanup()
    device = next((r["device"] for r in rows if r.get("device")), args.target)
    head = (f"NPBench {args.preset} through polyarray, target {args.target}, mode {args.mode}; "
            f"device: {device}")
    print_table(rows, peers, head)
    if args.json:
        _write_json(args, corpus, command, rows, complete=True)


def _merge(ap, args):
    parts = []
    for path in args.merge:
        with open(path) as f:
            parts.append(json.load(f))
    if len({(d["target"], d["mode"], d["preset"]) for d in parts}) != 1:
        ap.error("--merge: the parts differ in target, mode or preset")
    rows = [r for d in parts for r in d["rows"]]
    if dup := sorted(k for k, n in collections.Counter(r["kernel"] for r in rows).items()
                     if n > 1):
        ap.error(f"--merge: kernels in more than one part: {', '.join(dup)}")
    first = parts[0]
    peers = sorted({p for r in rows for p in (r.get("peers_s") or {}) if p != "numpy"})
    print_table(rows, peers, f"NPBench {first['preset']} through polyarray, target "
                f"{first['target']}, mode {first['mode']}; device: {first['device']} "
                f"({len(parts)} parts)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({**{k: v for k, v in first.items() if k != "rows"},
                       "command": " ; ".join(d["command"] for d in parts),
                       "date": " ; ".join(d["date"] for d in parts),
                       "complete": all(d.get("complete", True) for d in parts),
                       **summary(rows), "rows": rows}, f, indent=1, default=str)


def _write_json(args, corpus, command, rows, complete):
    device = next((r["device"] for r in rows if r.get("device")), args.target)
    tmp = args.json + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"suite": "npbench", "device": device, "target": args.target,
                   "mode": args.mode, "preset": args.preset, "command": command,
                   "host": platform.node(), "date": time.strftime("%Y-%m-%d %H:%M"),
                   "timeout_s": args.timeout, "repeat": args.repeat,
                   "npbench": corpus.root, "complete": complete, **summary(rows),
                   "rows": rows}, f, indent=1, default=str)
    os.replace(tmp, args.json)


if __name__ == "__main__":
    main()
