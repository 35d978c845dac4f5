"""Running cases against a target: checking, minimizing, worker processes and
the command line (``tests/support/dag_generator.py`` is a shim that calls ``main``);
``--programs`` runs random functions through ``pa.jit`` instead of random DAGs
(``fuzz.program_check``).

Each batch of seeds runs in a child process (the same command line with
``--worker``) that is restarted if a seed crashes it, so a segfault or a
poisoned CUDA context is recorded against that seed and the run goes on.
"""
from __future__ import annotations

import os
import sys

import numpy as np

import polyarray as pa
from fuzz.generate import make_case

# the command line that runs a batch of seeds in a child process
CLI_SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "support", "dag_generator.py")


def layouts(target):
    """The layouts a target is tested in: compile options per layout
    (``thresholds``: numbers the compile runs under).  CUDA's "any-size":
    every matrix product the policy may give cuBLAS goes there, and every
    argmax/argmin of a buffer's rows to the row kernel, whatever its size
    (the products where nvmath-python is installed; cases without either
    skip it: ``size_gated``)."""
    if target == "opencl":
        return {"cpu": {"device_kind": "cpu"}, "gpu": {"device_kind": "gpu"}}
    if target == "cuda":
        return {"default": {}, "any-size": {"size_gated": True, "thresholds": {
            "BLAS_MIN_WORK": 1, "ARG_ROWS_MIN_ROWS": 1}}}
    return {"default": {}}


def _nodes_below(arrays) -> list:
    """The DAG nodes of ``arrays`` (lazy arrays; other values have none)."""
    from polyarray.ir import nodes as N
    return N.topological_order([a.node for a in arrays if getattr(a, "node", None) is not None])


def compile_in_layout(arrays, target, options):
    """``pa.compile(arrays, target)`` under one of ``layouts``' options."""
    from polyarray.codegen.thresholds import using_thresholds
    options = dict(options)
    options.pop("size_gated", None)
    with using_thresholds(**options.pop("thresholds", {})):
        return pa.compile(arrays, target=target, **options)


def has_size_gated_form(case) -> bool:
    """Whether a case's outputs contain a contraction (an Einsum node) or
    an argmax/argmin along a last axis: what the "any-size" layout changes."""
    from polyarray.ir import nodes as N
    return any(isinstance(n, N.Einsum) or isinstance(n, N.Reduce) and n.op in ("argmax", "argmin")
               and n.array.ndim >= 2 and tuple(n.axes) == (n.array.ndim - 1,)
               for n in _nodes_below(case.arrays))


def first_mismatch(got, want):
    """A short description of where ``got`` first differs from ``want``."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"got {got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)}"
    if want.dtype.kind == "f":
        rtol, atol = pa.testing.tolerance(want)
        with np.errstate(all="ignore"):
            bad = ~np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        bad = got != want
    if not bad.any():
        return None
    at = tuple(int(x) for x in np.argwhere(bad)[0]) if want.ndim else ()
    return (f"{int(bad.sum())}/{bad.size} differ; first at {at}: got {got[at]!r}, "
            f"expected {want[at]!r}")


def nvcc_check(case):
    """``cuda-nvcc`` pseudo-target (no GPU needed): the CUDA source of the
    case must compile with ``nvcc -cubin -arch=sm_90``."""
    import shutil
    import subprocess
    import tempfile
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return "nvcc is not on PATH"
    try:
        source = pa.compile(case.arrays, target="cuda").source
    except Exception as err:                     # noqa: BLE001
        msg = str(err).strip().splitlines()
        return f"{type(err).__name__}: {msg[0][:300] if msg else ''}"
    if not source:
        return None
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "case.cu")
        with open(path, "w") as f:
            f.write(source)
        r = subprocess.run([nvcc, "-cubin", "-arch=sm_90", "-o", path + ".cubin", path],
                           capture_output=True, text=True)
    if r.returncode == 0:
        return None
    errs = [x for x in r.stderr.splitlines() if "error" in x] or r.stderr.splitlines() or [""]
    return "nvcc: " + errs[0].split("case.cu", 1)[-1][:300]


def check_case(case, target, options=None, expected=None):
    """None if ``target`` agrees with NumPy on ``case``, else a one-line reason."""
    from helpers import assert_same
    if case.build_errors:
        return "build: " + case.build_errors[0]
    if target == "cuda-nvcc":
        return nvcc_check(case)
    expected = case.expected if expected is None else expected
    try:
        prog = compile_in_layout(case.arrays, target, options or {})
        # (an input whose value folds away, lexsort's one-element keys, is no placeholder)
        got = prog(**{k: v for k, v in case.bindings.items() if k in prog.placeholders})
    except Exception as err:                     # noqa: BLE001
        msg = str(err).strip().splitlines()
        return f"{type(err).__name__}: {msg[0][:300] if msg else ''}"
    for k, (g, w) in enumerate(zip(got, expected)):
        if complex_product(case.outputs[k]):
            g = nonfinite_as_expected(g, w)
        try:
            assert_same(g, w, f"output {k}")
        except AssertionError:
            return f"output {k} ({case.outputs[k].var}): " + (
                first_mismatch(g, w) if isinstance(g, np.ndarray)
                else f"got {type(g).__name__}")
        zeros = signed_zero_mismatch(g, w) if _accumulates_nothing(case.outputs[k]) else None
        if zeros is not None:
            return f"output {k} ({case.outputs[k].var}): {zeros}"
    return None


def _accumulates_nothing(entry):
    """Whether an output's DAG has no sum, product or library call: NumPy's
    own functions give the zero sum of ``-0.0`` terms other signs
    (``dot([-1.], [0.])`` is ``-0.0``, ``matmul`` and ``einsum`` without
    ``optimize`` ``+0.0``; a transform's zeros are its library's), so the
    signs of zeros are compared where nothing accumulates."""
    from polyarray.ir import nodes as N
    nodes = _nodes_below([entry.arr])
    return bool(nodes) and not any(
        isinstance(n, (N.Einsum, N.Reduce, N.LibraryCallOutput)) for n in nodes)


def complex_product(entry):
    """Whether an output's DAG has a complex matrix product: NumPy's
    ``matmul`` (BLAS's ``zgemm``) gives NaN where an infinity meets the
    product and NumPy's own ``einsum``, multiply and sum keep an infinity;
    the targets differ there (numpy_differences.md), finite values agree."""
    from polyarray.ir import nodes as N
    return any(isinstance(n, N.Einsum) and n.dtype.kind == "c"
               for n in _nodes_below([entry.arr]))


def nonfinite_as_expected(got, want):
    """``got`` with its values taken from ``want`` where both are non-finite
    (an infinity in one, NaN in the other, in either part)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or want.dtype.kind not in "fc" or got.dtype != want.dtype:
        return got
    both = ~np.isfinite(got) & ~np.isfinite(want)
    if not both.any():
        return got
    got = got.copy()
    got[both] = want[both]
    return got


def signed_zero_mismatch(got, want):
    """Where both are zero but of other signs (``sign(-0.0)`` is ``+0`` in
    NumPy; ``1 / x`` tells them apart), a description; else None."""
    got, want = np.asarray(got), np.asarray(want)
    if want.dtype.kind not in "fc" or got.shape != want.shape:
        return None
    for part in ("real", "imag") if want.dtype.kind == "c" else ("real",):
        g, w = getattr(got, part), getattr(want, part)
        bad = (g == 0) & (w == 0) & (np.signbit(g) != np.signbit(w))
        if bad.any():
            at = tuple(int(x) for x in np.argwhere(bad)[0]) if want.ndim else ()
            return (f"{int(bad.sum())}/{bad.size} zeros of another sign ({part}); first at "
                    f"{at}: got {g[at]!r}, expected {w[at]!r}")
    return None


def minimize(case, target, options):
    """The smallest sub-DAG (one output) that still fails, or the case."""
    for ent in case.ancestors(case.outputs):
        if ent.name is not None:
            continue
        sub = case.sub_case([ent])
        if check_case(sub, target, options) is not None:
            return sub
    for ent in case.outputs:
        sub = case.sub_case([ent])
        if check_case(sub, target, options) is not None:
            return sub
    return case


def run_seed(seed, target, only_layout=None, do_minimize=False):
    """[(layout, reason, minimal script or None)] for the failing layouts of ``seed``."""
    try:
        case = make_case(seed)
    except Exception as err:                     # noqa: BLE001
        return [("-", f"generator: {type(err).__name__}: {err}", None)]
    fails = []
    for lay, opts in layouts(target).items():
        if only_layout and lay != only_layout:
            continue
        if opts.get("size_gated") and not has_size_gated_form(case):
            continue            # the same program as the default layout's
        reason = check_case(case, target, opts)
        if reason is None:
            continue
        script = None
        if do_minimize:
            small = minimize(case, target, opts) if not case.build_errors else case
            why = check_case(small, target, opts) or reason
            script = (why, small.script(target, opts.get("device_kind")))
        fails.append((lay, reason, script))
    return fails


def _worker(args):
    """Child process: run seeds, one JSON line per seed on stdout."""
    import json
    import logging
    logging.disable(logging.WARNING)
    for seed in range(args.start, args.start + args.n):
        if seed in args.skip:
            continue
        print(json.dumps({"seed": seed, "started": True}), flush=True)
        if args.programs:
            from fuzz.program_check import run_program_seed
            found = run_program_seed(seed, args.target, args.minimize)
            fails = [] if found is None else [("-", found[0], found[2])]
            print(json.dumps({"seed": seed, "fails": fails, "desc": found and found[1]}),
                  flush=True)
            continue
        fails = run_seed(seed, args.target, args.layout, args.minimize)
        desc = ""
        if fails:
            try:
                desc = make_case(seed).description
            except Exception:                    # noqa: BLE001
                pass
        print(json.dumps({"seed": seed, "fails": fails, "desc": desc}), flush=True)


def main(argv=None):
    import argparse
    import json
    import subprocess
    import time
    ap = argparse.ArgumentParser(description="differential fuzzing: random DAGs (or, with "
                                 "--programs, random functions through pa.jit), NumPy vs a "
                                 "polyarray target")
    ap.add_argument("--target", default="opencl",
                    help="opencl, cuda, numpy, or cuda-nvcc (CUDA source through nvcc, "
                         "no GPU needed)")
    ap.add_argument("--n", type=int, default=100, help="number of seeds")
    ap.add_argument("--start", type=int, default=0, help="first seed")
    ap.add_argument("--layout", default=None,
                    help="only this layout (opencl: cpu or gpu; default: all)")
    ap.add_argument("--minimize", action="store_true",
                    help="print the smallest failing sub-expression of each failure")
    ap.add_argument("--seed", type=int, default=None, help="one seed (with --show: "
                    "print its script)")
    ap.add_argument("--show", action="store_true")
    ap.add_argument("--programs", action="store_true",
                    help="random NumPy functions through pa.jit (fuzz.programs: writes, "
                         "views, out=, loops, graph breaks) instead of random DAGs")
    ap.add_argument("--timeout", type=float, default=600,
                    help="seconds one seed may take before it is killed")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--skip", type=int, nargs="*", default=[], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.skip = set(args.skip)
    if args.seed is not None:
        args.start, args.n = args.seed, 1
        if args.show and args.programs:
            from fuzz.programs import make_program
            prog = make_program(args.seed)
            print(f"# seed {args.seed}: {prog.describe()}")
            print(prog.script(args.target if args.target != "cuda-nvcc" else "cuda"))
            return 0
        if args.show:
            case = make_case(args.seed)
            print(f"# seed {args.seed}: {case.description}")
            for err in case.build_errors:
                print(f"# build error: {err}")
            lay = args.layout or next(iter(layouts(args.target)))
            print(case.script(args.target, layouts(args.target).get(lay, {})
                              .get("device_kind")))
            return 0
    if args.worker:
        return _worker(args)

    from polyarray import targets
    if args.programs and args.target == "cuda-nvcc":
        print("--programs runs the functions through pa.jit: it needs a target that runs "
              "(numpy, opencl, cuda), not cuda-nvcc")
        return 2
    ok, why = (True, "") if args.target == "cuda-nvcc" else targets.availability(args.target)
    if not ok:
        print(f"{args.target}: {why}")
        return 2
    import tempfile
    import threading
    t0 = time.time()
    passed, failed, failures = 0, 0, []
    next_seed, end = args.start, args.start + args.n
    while next_seed < end:
        first = next_seed
        cmd = [sys.executable, CLI_SCRIPT, "--worker", "--target", args.target,
               "--start", str(next_seed), "--n", str(end - next_seed)]
        if args.layout:
            cmd += ["--layout", args.layout]
        if args.minimize:
            cmd.append("--minimize")
        if args.programs:
            cmd.append("--programs")
        err = tempfile.TemporaryFile(mode="w+")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
        current, timer = None, [None]

        def arm():          # kill the child if one seed takes longer than --timeout
            if timer[0] is not None:
                timer[0].cancel()
            timer[0] = threading.Timer(args.timeout, proc.kill)
            timer[0].start()
        arm()
        for line in proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if msg.get("started"):
                current = msg["seed"]
                arm()
                continue
            current = None
            seed = msg["seed"]
            next_seed = seed + 1
            if msg["fails"]:
                failed += 1
                for lay, reason, script in msg["fails"]:
                    failures.append((seed, lay, reason))
                    print(f"FAIL seed={seed} layout={lay}: {reason}\n    {msg['desc']}",
                          flush=True)
                    if script:
                        why, text = script
                        print(f"    minimal ({why}):")
                        print("\n".join("      " + x for x in text.splitlines()), flush=True)
            else:
                passed += 1
            if (passed + failed) % 100 == 0:
                print(f"... {passed + failed} seeds, {failed} failed "
                      f"({time.time() - t0:.0f} s)", flush=True)
        proc.wait()
        timer[0].cancel()
        if current is not None:         # the child died (or hung) inside this seed
            failed += 1
            how = f"signal {-proc.returncode}" if proc.returncode < 0 \
                else f"exit {proc.returncode}"
            err.seek(0)
            tail = [x for x in err.read().strip().splitlines() if x.strip()][-1:]
            reason = f"process died ({how}) or timed out" + (f": {tail[0][:200]}" if tail
                                                             else "")
            failures.append((current, "-", reason))
            print(f"FAIL seed={current}: {reason}", flush=True)
            next_seed = current + 1
        elif next_seed == first:        # the child failed before running any seed
            err.seek(0)
            print(f"worker failed (exit {proc.returncode}):\n{err.read()[-3000:]}")
            return 2
        err.close()
    import re
    kinds = {}
    for _, _, reason in failures:
        if reason.startswith("output "):
            key = "wrong values"
        elif reason.startswith("build: "):
            key = "build: " + re.sub(r"v\d+", "v", reason.split(":")[1])[:60]
        else:
            key = re.sub(r"\d+", "N", reason)[:70]
        kinds[key] = kinds.get(key, 0) + 1
    if kinds:
        print("failure kinds: " + ", ".join(f"{k}: {n}" for k, n in
                                          sorted(kinds.items(), key=lambda kv: -kv[1])))
    print(f"{passed} passed, {failed} failed  ({args.target}, seeds {args.start}.."
          f"{end - 1}, {time.time() - t0:.0f} s)")
    return 1 if failed else 0
