"""The differential check of a generated program, its minimization, and the
command line for long runs (``tests/support/dag_generator.py --programs``).

``check_program(prog, target)`` runs the function with NumPy on fresh
inputs and through ``pa.jit(fn, target=...)`` on others, twice (the call
that traces, then a call from the cache), and compares every argument
after the call (and the buffers that strided arguments view), the results
and which argument objects were returned.  Where NumPy raises, polyarray
must raise an exception of the same built-in type, while tracing (except
what the values decide: lazy gather bounds and negative integer exponents,
checked when the program runs), and leave every argument as it was.  Integers and booleans compare exactly; floats with
``pa.testing``'s per-dtype tolerances (the programs are exact, so this is
equality in practice).
"""
from __future__ import annotations

import re
import warnings

import numpy as np

import polyarray as pa
from fuzz.programs import make_program, run_numpy

BUILTIN_ERRORS = (IndexError, TypeError, ValueError, ZeroDivisionError, OverflowError,
                  KeyError, AttributeError, RuntimeError, NotImplementedError)


def _public_types(err):
    """The built-in exception classes ``err`` is an instance of."""
    return [t for t in BUILTIN_ERRORS if isinstance(err, t)]


def _short(err):
    msg = str(err).strip().splitlines()
    return f"{type(err).__name__}: {msg[0][:240] if msg else ''}"


def _flat(result):
    if isinstance(result, (list, tuple)):
        return list(result)
    return [] if result is None else [result]


def _compare(got, want, what):
    """None, or how ``got`` differs from ``want`` (values, shape, dtype)."""
    g, w = np.asarray(got), np.asarray(want)
    if g.shape != w.shape:
        return f"{what}: shape {g.shape}, NumPy {w.shape}"
    if g.dtype != w.dtype:
        return f"{what}: dtype {g.dtype}, NumPy {w.dtype}"
    try:
        pa.testing.assert_allclose(g, w, strict=False)
    except AssertionError:
        if w.dtype.kind == "f":
            bad = ~np.isclose(g, w, equal_nan=True)
        else:
            bad = g != w
        at = tuple(int(i) for i in np.argwhere(bad)[0]) if w.ndim else ()
        return (f"{what}: {int(bad.sum())}/{bad.size} differ, first at {at}: got "
                f"{g[at]!r}, NumPy {w[at]!r}")
    return None


def _to_device(a, target):
    """``a`` as the target's own device array (pyopencl or pycuda)."""
    if target == "opencl":
        import pyopencl as cl
        import pyopencl.array as cla
        from polyarray.targets.opencl import select_device
        if "queue" not in _DEVICE:
            _DEVICE["queue"] = cl.CommandQueue(select_device()[0])
        return cla.to_device(_DEVICE["queue"], a)
    import pycuda.autoprimaryctx  # noqa: F401
    import pycuda.gpuarray as ga
    return ga.to_gpu(a)


_DEVICE = {}


def _host(x):
    if isinstance(x, (tuple, list)):
        return type(x)(_host(v) for v in x)
    return x.get() if hasattr(x, "get") and not isinstance(x, np.ndarray) else x


def device_arguments(prog, target) -> bool:
    """Whether ``prog``'s arrays are passed as the target's device arrays
    (a quarter of the seeds on a device target): written back on the device."""
    return target in ("opencl", "cuda") and prog.seed % 4 == 1


def host_fallback(prog, target) -> dict:
    """``pa.jit`` options of ``prog``: a quarter of the seeds allow 2 new
    kernels, and a sixteenth one program per graph break, so that many
    programs run through the NumPy fallbacks, with host arrays (seeds 3 mod
    8) and device arrays (5 mod 8, and 1 mod 16: ``device_arguments``)."""
    if target == "numpy":
        return {}
    if prog.seed % 8 in (3, 5):
        return {"max_kernels": 2}
    return {"max_break_programs": 1} if prog.seed % 16 == 1 else {}


def _call(prog, target, jitted):
    args, bases = prog.inputs()
    device = device_arguments(prog, target)
    if device:              # writable arrays that view no other argument's buffer (one passed
        views = {id(a) for a, b in zip(args, bases) if b is not None}   # twice stays one)
        made = {}
        for a in args:
            if isinstance(a, np.ndarray) and id(a) not in views and id(a) not in made \
                    and a.size and a.flags.c_contiguous and a.flags.writeable:
                made[id(a)] = _to_device(a, target)
        args = [made.get(id(a), a) for a in args]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = jitted(*args)
    except Exception as err:                    # noqa: BLE001
        return None, err, [_host(a) for a in args], bases
    return _host(result) if device else result, None, [_host(a) for a in args], bases


def check_program(prog, target, options=None, calls=2):
    """None if ``pa.jit`` agrees with NumPy on ``prog``, else a one-line reason
    (saying where the arguments were device arrays, or the kernels few)."""
    reason = _check_program(prog, target, options, calls)
    if reason is None:
        return None
    how = (["device arguments"] if device_arguments(prog, target) else []) + \
        [f"{k}={v}" for k, v in host_fallback(prog, target).items()]
    return f"({', '.join(how)}) {reason}" if how else reason


def _check_program(prog, target, options, calls):
    device = device_arguments(prog, target)
    want, np_err, want_args, want_bases = run_numpy(prog)
    options = {**host_fallback(prog, target), **(options or {})}
    try:
        jitted = pa.jit(prog.function(), target=target, **options)
    except Exception as err:                    # noqa: BLE001
        return "pa.jit refused the function: " + _short(err)
    for call in range(calls):
        which = "first call" if call == 0 else "cached call"
        got, pa_err, got_args, got_bases = _call(prog, target, jitted)
        if np_err is not None:
            if pa_err is None:
                return f"{which}: NumPy raised {_short(np_err)}; polyarray did not"
            if isinstance(pa_err, pa.LazyValueError) or not (
                    set(_public_types(np_err)) & set(_public_types(pa_err))):
                return (f"{which}: NumPy raised {_short(np_err)}; polyarray raised "
                        f"{_short(pa_err)}")
            fresh, fresh_bases = prog.inputs()
            for k, (g, w, n) in enumerate(zip(got_args + got_bases, fresh + fresh_bases,
                                              want_args + want_bases)):
                if isinstance(w, np.ndarray):
                    diff = _compare(g, w, f"argument {k} after the failed call")
                    if diff and (options.get("max_kernels") or options.get(
                            "max_break_programs")) and isinstance(n, np.ndarray) \
                            and _compare(g, n, "") is None:
                        diff = None     # run by NumPy on the host: NumPy's state at its error
                    if diff:
                        return f"{which}: {diff} (polyarray raised {type(pa_err).__name__})"
            if call == 0 and not _checked_when_run(pa_err):
                try:            # tracing alone (and compiling) must raise it
                    pa.jit(prog.function(), target=target, **(options or {})).lower(
                        *prog.inputs()[0])
                except Exception:           # noqa: BLE001
                    pass
                else:
                    return (f"{which}: polyarray raised {_short(pa_err)} only when the "
                            "program ran, not while tracing")
            continue
        if pa_err is not None:
            return f"{which}: polyarray raised {_short(pa_err)}"
        for k, (s, g, w) in enumerate(zip(prog.specs, got_args, want_args)):
            if isinstance(w, np.ndarray):
                diff = _compare(g, w, f"argument {s.name}")
                if diff:
                    return f"{which}: {diff}"
        for k, (g, w) in enumerate(zip(got_bases, want_bases)):
            if w is not None:
                diff = _compare(g, w, f"the buffer argument {prog.specs[k].name} views")
                if diff:
                    return f"{which}: {diff}"
        wants, gots = _flat(want), _flat(got)
        if (want is None) != (got is None) or len(wants) != len(gots) or \
                isinstance(want, tuple) != isinstance(got, tuple):
            return (f"{which}: returned {type(got).__name__} of {len(gots)}, NumPy "
                    f"{type(want).__name__} of {len(wants)}")
        for k, (g, w) in enumerate(zip(gots, wants)):
            # an argument returned is the caller's own array, as NumPy's is
            for a_want, a_got, s in zip(want_args, got_args, prog.specs):
                if w is a_want and isinstance(w, np.ndarray) and g is not a_got \
                        and not device:     # (a device array came back as a host copy)
                    return f"{which}: result {k} is not the argument {s.name} itself"
            diff = _compare(g, w, f"result {k}")
            if diff:
                return f"{which}: {diff}"
    return None


def _checked_when_run(err) -> bool:
    """Errors polyarray raises when the program runs, by design: the values
    decide them (lazy gather indices, lazy negative integer exponents)."""
    msg = str(err)
    return "negative integer powers" in msg or "out of bounds" in msg


def minimize(prog, target, options=None):
    """The program with as many statements removed as keep it failing the
    same way (and NumPy's behaviour the same: raising or not), the return
    dropped where it can be, and unused parameters removed."""
    from dataclasses import replace
    reason = check_program(prog, target, options)
    if reason is None:
        return prog, None
    kind = _reason_kind(reason)

    def still(p):
        _, err, _, _ = run_numpy(p)
        if (err is None) != (prog.error is None):
            return None
        if err is not None and type(err).__name__ != prog.error:
            return None
        try:
            r = check_program(p, target, options)
        except Exception:                       # noqa: BLE001
            return None
        return r if r is not None and _reason_kind(r) == kind else None

    best = prog
    changed = True
    while changed:
        changed = False
        for k in range(len(best.blocks) - 1, -1, -1):
            cand = replace(best, blocks=best.blocks[:k] + best.blocks[k + 1:])
            r = still(cand)
            if r is not None:
                best, reason, changed = cand, r, True
        if best.ret is not None:
            cand = replace(best, ret=None)
            r = still(cand)
            if r is not None:
                best, reason, changed = cand, r, True
    used = " ".join(b.text() for b in best.blocks) + " " + (best.ret or "")
    keep = [s for s in best.specs if re.search(rf"\b{s.name}\b", used) or s.alias is not None]
    if len(keep) < len(best.specs) and all(s.alias is None for s in keep):
        cand = replace(best, specs=keep)
        r = still(cand)
        if r is not None:
            best, reason = cand, r
    return best, reason


def _reason_kind(reason):
    r = re.sub(r"^(first|cached) call: ", "", reason)
    if "raised" in r:
        return re.sub(r"[:(].*", "", r.split("raised", 1)[1]).strip()
    return re.sub(r"\d+|'[^']*'", "N", r.split(":")[0])


def run_program_seed(seed, target, do_minimize=False):
    """(reason, description, script or None) of a failing seed, else None."""
    try:
        prog = make_program(seed)
    except Exception as err:                    # noqa: BLE001
        return f"generator: {_short(err)}", "", None
    try:
        reason = check_program(prog, target)
    except Exception as err:                    # noqa: BLE001
        reason = f"checker: {_short(err)}"
    if reason is None:
        return None
    script = None
    if do_minimize:
        small, why = minimize(prog, target)
        script = (why or reason, small.script(target))
    return reason, prog.describe(), script
