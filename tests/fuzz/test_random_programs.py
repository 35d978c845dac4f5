"""Differential testing of NumPy's mutation semantics: random NumPy functions
run by NumPy and through ``pa.jit`` must agree.

The functions come from ``fuzz.make_program(seed)`` (tests/fuzz/programs.py):
NPBench-style kernels that write their arguments and locals with every
in-place operator, ``x[key] = v`` and ``x[key] op= v`` (basic keys, integer
arrays, masks and indices from the data), write through views (``.T``,
``reshape``, ``ravel``, slices, ``expand_dims``), use ``out=``, create arrays
with NumPy's functions (lazy inside pa.jit), loop, branch on traced values
(graph breaks), call ``pa.fori_loop``/``pa.while_loop``, and now and then
raise NumPy's errors.  Arguments are float32/float64/int32/int64/bool arrays
of up to 3-D in C, Fortran, strided, offset and read-only layouts, sometimes
the same array twice, and a static Python scalar.  Every argument after the
call (and the buffers strided arguments view), the results and the exception
type where NumPy raises must agree, on the call that traces and on a call
from the cache.

A failing example prints ``seed=...`` and a standalone script; rerun one seed
with ``python tests/support/dag_generator.py --programs --target opencl --seed N --show``.
CI runs ``POLYARRAY_PROGRAM_EXAMPLES`` (default 40) seeds per device target and
four times as many on numpy; long runs:
``python tests/support/dag_generator.py --programs --target opencl --n 300``.
"""
import os
import re

import numpy as np
import pytest
from hypothesis import Phase, note, settings, given, strategies as st

import polyarray as pa
from polyarray import targets
from conftest import TEST_TARGETS
from fuzz.program_check import check_program, minimize
from fuzz.programs import STATEMENTS, make_program, run_numpy

EXAMPLES = int(os.environ.get("POLYARRAY_PROGRAM_EXAMPLES", "40"))


def _examples(target_name):
    return EXAMPLES * (4 if target_name == "numpy" else 1)


@pytest.mark.parametrize("target_name", TEST_TARGETS)
def test_random_program_matches_numpy(target_name):
    """``_examples(target)`` programs per target (numpy: four times as many)."""
    ok, reason = targets.availability(target_name)
    if not ok:
        pytest.skip(f"{target_name}: {reason}")

    # no shrinking: a smaller seed is an unrelated program (--minimize shrinks programs)
    @settings(max_examples=_examples(target_name), deadline=None, database=None,
              phases=(Phase.explicit, Phase.generate))
    @given(seed=st.integers(0, 2**32 - 1))
    def check(seed):
        note(f"seed={seed}  (rerun: python tests/support/dag_generator.py --programs --target "
             f"{target_name} --seed {seed} --show)")
        prog = make_program(seed)
        note(prog.describe())
        reason = check_program(prog, target_name)
        if reason is not None:
            small, why = minimize(prog, target_name)
            note(small.script(target_name))
        assert reason is None, f"seed={seed}: {reason}"
    check()


# -- the generator itself ----------------------------------------------------------------

def test_random_program_is_reproducible():
    for seed in (0, 1, 12345, 3000004335):
        a, b = make_program(seed), make_program(seed)
        assert a.source() == b.source() and a.script() == b.script()
        (xa, _), (xb, _) = a.inputs(), b.inputs()
        for u, v in zip(xa, xb):
            if isinstance(u, np.ndarray):
                np.testing.assert_array_equal(u, v)
                assert u.strides == v.strides and u.flags.writeable == v.flags.writeable
        for u in xa:                        # each call's inputs are its own (seed
            if isinstance(u, np.ndarray) and u.flags.writeable:   # 3000004335: a Fortran
                u[...] = 1                  # column was the spec's array, written by a call
        for u, v in zip(a.inputs()[0], xb):
            if isinstance(u, np.ndarray):
                np.testing.assert_array_equal(u, v)


def test_random_programs_cover_the_mutation_semantics():
    """Over 300 seeds the generator draws every statement kind and feature."""
    seen, errors, breaks = set(), 0, 0
    kinds = {gen.__name__[3:] for gen, _ in STATEMENTS}
    layouts, dtypes, aliased, statics = set(), set(), 0, set()
    for seed in range(300):
        prog = make_program(seed)
        seen |= prog.features
        seen |= {b.kind for b in prog.blocks}
        errors += prog.error is not None
        src = prog.source()
        breaks += bool(re.search(r"\bif |\bwhile |int\(|float\(", src))
        for s in prog.specs:
            if s.is_array and s.alias is None:
                layouts.add(s.layout)
                dtypes.add(s.values.dtype)
            aliased += s.alias is not None
            if not s.is_array:
                statics.add(type(s.static))
    must = {"aug name", "aug key", "aug view", "setitem key", "setitem view", "adv set",
            "adv aug", "integer key", "mask from data", "index from data", "view key",
            "view T", "view reshape", "view ravel", "view expand", "view diagonal",
            "view broadcast", "view write set", "view write aug", "out ufunc",
            "out ufunc where", "out reduction", "out function", "create empty",
            "create zeros", "create arange", "create linspace", "create eye", "create copy",
            "create list", "create asarray (same array)", "create 0-d array", "local expr",
            "second name", "rebind", "rebind to view", "stencil", "loop recurrence",
            "loop columns", "loop steps", "if on traced value", "while on traced value",
            "int() index", "slice bound from data", "range from data", "float() scalar",
            "mask set scalar", "mask aug", "mask set values", "mask read", "fori_loop",
            "while_loop", "scalar rebinds", "0-d view write", "0-d result",
            "0-d array written in place", "NumPy raises", "returns argument", "returns tuple",
            "returns value", "error"}
    must |= {f"op {op}" for op in ("+=", "-=", "*=", "/=", "//=", "%=", "**=", "&=", "|=",
                                   "^=", "<<=", ">>=", "@=")}
    assert must <= seen, sorted(must - seen)
    assert {"aug", "setitem", "adv", "view", "out", "create", "loop", "branch", "while",
            "break", "mask", "fori", "while_loop", "scalar", "error"} <= seen
    assert kinds and layouts == {"c", "strided", "offset", "fortran", "readonly"}
    assert {np.dtype(t) for t in ("float32", "float64", "int32", "int64", "bool")} <= dtypes
    assert aliased > 10 and statics == {int, float} and errors > 15 and breaks > 60


def test_programs_are_exact():
    """Every float value a program holds is exact: float32 promoted to float64
    gives the same values (so no order of evaluation can change them)."""
    from fuzz.programs import _values, exact_values, same_values
    for seed in range(40):
        prog = make_program(seed)
        if prog.error:
            continue
        env, err, args, _ = run_numpy(prog, locals_=True)
        env64, err64, args64, _ = run_numpy(prog, locals_=True, float64=True)
        assert err is None and err64 is None
        values = [v for _, v in _values(env)]
        assert exact_values(values), seed
        assert same_values(values, [env64.get(k) for k, _ in _values(env)]), seed


def test_the_check_finds_a_wrong_write_back(monkeypatch):
    """The differential check fails when pa.jit does not write an argument
    back, and minimizing keeps the statement that writes it."""
    import sys
    jit = sys.modules["polyarray.jit"]
    seed = next(s for s in range(200) if not make_program(s).error and any(
        b.kind in ("aug", "setitem") for b in make_program(s).blocks)
        and check_program(make_program(s), "numpy") is None
        and _writes_an_argument(make_program(s)))
    prog = make_program(seed)
    monkeypatch.setattr(jit, "_write_back", lambda arg, value: None)
    reason = check_program(prog, "numpy")
    assert reason is not None and "argument" in reason
    small, why = minimize(prog, "numpy")
    assert why is not None and len(small.blocks) <= len(prog.blocks)
    assert "def inputs():" in small.script("numpy")


def _writes_an_argument(prog):
    (before, _), (after_args) = prog.inputs(), run_numpy(prog)[2]
    return any(isinstance(a, np.ndarray) and not np.array_equal(a, b)
               for a, b in zip(before, after_args))


def test_a_reproducer_script_runs_standalone(tmp_path):
    import subprocess
    import sys
    from helpers import subprocess_env
    prog = next(p for p in map(make_program, range(50))
                if not p.error and "pa.fori_loop" in p.source())
    path = tmp_path / "repro.py"
    path.write_text(prog.script("numpy"))
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                       env=subprocess_env(), timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "polyarray:" in r.stdout
