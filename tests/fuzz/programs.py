"""Random NumPy *functions* from a seed, for ``pa.jit``'s mutation semantics.

Where the DAG fuzzer (``fuzz.generate``) builds expressions, this one writes
Python functions in the style of NPBench's kernels, as source text:

    def kernel(A, x, alpha):
        A[1:, ::2] += x[:3] * alpha
        v0 = A.T
        v0[0] = 0.5 * (A[0] + A[-1])
        t1 = np.empty((4,), np.float32)
        t1[...] = A.sum(axis=0)
        if t1.max() > 2.0:
            np.add(t1, 1, out=t1)
        return t1

compiled with ``exec`` in a module namespace whose ``np`` is NumPy (so
``pa.jit`` rebinds it to polyarray's names) and whose ``pa`` is polyarray.
The differential check (``fuzz.program_check``) runs the function with
NumPy on copies of the inputs and through ``pa.jit`` on other copies, and
compares every argument after the call and the results.

Each statement is drawn (``fuzz.program_statements``) against the values
the program holds at that point: the generator runs the program so far
with NumPy after every statement it draws, and keeps the statement only if

* NumPy ran it, or (now and then) raised a TypeError, ValueError or
  IndexError: then the statement ends the program and polyarray must raise
  the same type, leaving the arguments untouched;
* every float value stayed exact: each expression node is checked by its
  grid exponent (``fuzz.program_exprs``), every array in scope stays on a
  grid of 2**-8 below 2**10 (integers below 2**15), and the whole program
  run again with float32 promoted to float64 gives the same values (no
  float32 rounding anywhere), so fused multiply-adds or another order of
  evaluation cannot change a comparison, a floor or a cast;
* NumPy's result does not depend on the order in which it copies an
  overlapping value (``x[9:14:2] = x[9:12]`` on a 1-D array reads elements
  it wrote; polyarray's writes are as if the value were copied first).

Writes through ``reshape``/``ravel`` are drawn only where NumPy's memory
layout is one polyarray knows (an argument's, or C order): NumPy keeps the
Fortran order of arrays computed from Fortran-ordered or transposed ones
(its "K" order), polyarray's computed arrays are C-ordered, so
``(A.T * 2).reshape(-1)`` is a copy in NumPy and a view in polyarray
(polyarray/numpy_differences.md).

``make_program(seed)`` is deterministic: the same seed gives the same
source and inputs in any process.
"""
from __future__ import annotations

import re
import types
import warnings
from dataclasses import dataclass, field, replace

import numpy as np

from fuzz.exactness import grid_exp
from fuzz.program_exprs import Exprs
from fuzz.program_inputs import ArgSpec, draw_args, inputs_source, make_inputs
from fuzz.program_arrays import st_create, st_local, st_scalar, st_view
from fuzz.program_flow import (st_branch, st_error, st_fori, st_int_break, st_loop,
                               st_loop_recurrence, st_loop_sum, st_mask, st_while,
                               st_while_loop)
from fuzz.program_statements import (Stmt, st_adv_setitem, st_aug, st_matmul_inplace, st_out,
                                     st_setitem, st_stencil, st_view_write)

# statement generators and their weights (the order is part of every seed)
STATEMENTS = [(st_aug, 12), (st_setitem, 8), (st_adv_setitem, 5), (st_view, 7),
              (st_view_write, 4), (st_out, 5), (st_create, 6), (st_local, 5),
              (st_stencil, 3), (st_loop, 4), (st_branch, 2), (st_while, 1),
              (st_int_break, 2), (st_mask, 3), (st_fori, 1), (st_while_loop, 1),
              (st_scalar, 3), (st_matmul_inplace, 1), (st_error, 1), (st_loop_sum, 2),
              (st_loop_recurrence, 3)]
ERRORS = (TypeError, ValueError, IndexError)
FLOAT_GRID, FLOAT_BOUND, INT_BOUND = 8, 2.0 ** 10, 2 ** 15
# reshapes written through per program (reshape, ravel, expand_dims, squeeze; a
# view of a view counts each): the generated kernel nests the index arithmetic
# of a reshape inside every later write, and the source grows exponentially
# (u[1:, i % 3:] = i and u.reshape(-1)[i:i + 20] = i alternating on a 3x4x3
# array: 4 writes 11 KB, 6 writes 122 KB, 8 writes 1 MB; seed 177 timed out
# after 10 minutes in PoCL's build)
MAX_RESHAPE_WRITES = 1
_RESHAPING = re.compile(r"reshape\(|ravel\(|expand_dims\(|squeeze\(")
MAX_LOOP_ITERATIONS = 64


# -- pa.fori_loop and pa.while_loop, as NumPy code runs them ---------------------------

def _tree_leaves(tree):
    if isinstance(tree, (list, tuple)):
        return [leaf for t in tree for leaf in _tree_leaves(t)]
    return [tree]


def _same_structure(a, b):
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and \
            all(_same_structure(x, y) for x, y in zip(a, b))
    return True


def _check_carry(init, out, what):
    if not _same_structure(init, out):
        raise TypeError(f"{what}: body_fun must return the structure of init_val")
    for a, b in zip(_tree_leaves(init), _tree_leaves(out)):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            raise TypeError(f"{what}: body_fun's result is {b.dtype}{list(b.shape)}, the "
                            f"carried value {a.dtype}{list(a.shape)}")


def _copy_tree(tree):
    if isinstance(tree, (list, tuple)):
        return type(tree)(_copy_tree(t) for t in tree)
    return np.array(tree)


def fori_loop(lower, upper, body_fun, init_val):
    """``pa.fori_loop`` as NumPy runs it: the index is an int64 scalar (the
    traced index is an int64 0-d array: a strong operand, as in NumPy)."""
    val = _copy_tree(init_val)
    for i in range(int(lower), int(upper)):
        out = body_fun(np.int64(i), val)
        _check_carry(val, out, "fori_loop")
        val = out
    return val


def while_loop(cond_fun, body_fun, init_val):
    """``pa.while_loop`` as NumPy runs it (stopped after MAX_LOOP_ITERATIONS)."""
    val = _copy_tree(init_val)
    for _ in range(MAX_LOOP_ITERATIONS):
        if not bool(cond_fun(val)):
            return val
        out = body_fun(val)
        _check_carry(val, out, "while_loop")
        val = out
    raise RuntimeError("while_loop did not end")


NUMPY_LOOPS = types.SimpleNamespace(fori_loop=fori_loop, while_loop=while_loop)


class _Float64Numpy(types.ModuleType):
    """NumPy with ``float32`` meaning float64: the program run again so, any
    float32 rounding shows as a difference."""

    def __init__(self):
        super().__init__("numpy")

    def __getattr__(self, name):
        if name == "float32":
            return np.float64
        return getattr(np, name)


FLOAT64_NUMPY = _Float64Numpy()


# -- a program ---------------------------------------------------------------------------

@dataclass
class Program:
    seed: int
    specs: list                  # [ArgSpec]
    blocks: list                 # [Stmt]
    ret: str = None              # the return expression, or None
    error: str = None            # the exception type NumPy raises, if it does
    dims: tuple = ()
    features: set = field(default_factory=set)

    name = "kernel"

    @property
    def params(self):
        return [s.name for s in self.specs]

    def source(self, blocks=None, ret=None, locals_=False):
        blocks = self.blocks if blocks is None else blocks
        ret = self.ret if ret is None else ret
        lines = [f"def {self.name}({', '.join(self.params)}):"]
        for b in blocks:
            lines.append(b.text())
        if locals_:
            lines.append("    return locals()")
        elif ret is not None and ret != "None":
            lines.append(f"    return {ret}")
        if len(lines) == 1:
            lines.append("    pass")
        return "\n".join(lines)

    def function(self, numpy_module=np, loops=None, **source_kw):
        """The program as a function of a fresh module namespace: ``np`` is
        ``numpy_module``; ``pa`` is polyarray, or ``loops`` (NumPy's loops)."""
        import polyarray as pa
        ns = {"np": numpy_module, "pa": loops if loops is not None else pa,
              "__name__": f"fuzz_program_{self.seed}"}
        exec(compile(self.source(**source_kw), f"<program {self.seed}>", "exec"), ns)   # noqa: S102
        return ns[self.name]

    def numpy_function(self, **source_kw):
        return self.function(np, NUMPY_LOOPS, **source_kw)

    def inputs(self):
        return make_inputs(self.specs)

    def describe(self):
        return (f"{len(self.blocks)} statements, args " +
                ", ".join(s.describe() for s in self.specs) +
                (f"; NumPy raises {self.error}" if self.error else ""))

    def script(self, target="opencl"):
        """Standalone Python that reruns this program with NumPy and through
        ``pa.jit`` and compares them."""
        loops = any(k in self.source() for k in ("pa.fori_loop", "pa.while_loop"))
        out = ["import types", "import numpy as np", "import polyarray as pa", "",
               self.source(), "", inputs_source(self.specs), ""]
        if loops:
            out += ["class numpy_loops:   # pa.fori_loop / pa.while_loop as NumPy runs them",
                    "    @staticmethod",
                    "    def fori_loop(lo, hi, body, v):",
                    "        v = np.array(v)",
                    "        for i in range(lo, hi):",
                    "            v = body(np.int64(i), v)",
                    "        return v",
                    "    @staticmethod",
                    "    def while_loop(cond, body, v):",
                    "        v = np.array(v)",
                    "        while cond(v):",
                    "            v = body(v)",
                    "        return v", "",
                    f"reference = types.FunctionType({self.name}.__code__, "
                    "dict(globals(), pa=numpy_loops))"]
        else:
            out.append(f"reference = {self.name}")
        out += ["want_args, want_bases = inputs()",
                "try:",
                "    want = reference(*want_args)",
                "except Exception as err:      # then polyarray must raise the same type",
                "    want, (want_args, want_bases) = err, inputs()",
                "got_args, got_bases = inputs()",
                "try:",
                f"    got = pa.jit({self.name}, target={target!r})(*got_args)",
                "except Exception as err:",
                "    got = err",
                "print('NumPy:    ', repr(want))",
                "print('polyarray:', repr(got))",
                "for k, (w, g) in enumerate(zip(want_args + want_bases, got_args + got_bases)):",
                "    if isinstance(w, np.ndarray):   # the arguments, then the buffers they view",
                "        pa.testing.assert_allclose(g, w, err_msg=f'argument/buffer {k}')"]
        return "\n".join(out)


# -- running a program with NumPy ------------------------------------------------------------

def run_numpy(prog, blocks=None, ret=None, locals_=False, float64=False):
    """(result, error, args, bases) of ``prog`` run by NumPy on fresh inputs
    (``locals_``: the result is the function's locals at its end)."""
    fn = prog.function(FLOAT64_NUMPY if float64 else np, NUMPY_LOOPS, blocks=blocks,
                       ret=ret, locals_=locals_)
    specs = prog.specs
    if float64:
        specs = [replace(s, values=s.values.astype(np.float64))
                 if s.is_array and s.values.dtype == np.float32 else s for s in specs]
    args, bases = make_inputs(specs)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            result = fn(*args)
        except Exception as err:                # noqa: BLE001
            return None, err, args, bases
    return result, None, args, bases


def _values(obj):
    """The arrays (and scalars) reachable from a result, flattened."""
    if isinstance(obj, dict):
        return [(k, v) for k, v in obj.items() if isinstance(v, (np.ndarray, np.generic,
                                                                    int, float))]
    if isinstance(obj, (list, tuple)):
        return [(str(k), v) for k, v in enumerate(obj)]
    return [("result", obj)] if obj is not None else []


def exact_values(values) -> bool:
    """Every float finite, on the 2**-FLOAT_GRID grid and below FLOAT_BOUND;
    every integer below INT_BOUND."""
    for v in values:
        if isinstance(v, bool) or v is None:
            continue
        a = np.asarray(v)
        if a.dtype.kind == "f":
            if not np.isfinite(a).all() or (a.size and np.abs(a).max() > FLOAT_BOUND) \
                    or grid_exp(a) > FLOAT_GRID:
                return False
        elif a.dtype.kind in "iu":
            if a.size and np.abs(a.astype(np.int64)).max() > INT_BOUND:
                return False
        elif a.dtype.kind != "b":
            return False
    return True


def same_values(xs, ys) -> bool:
    """The float32 run's values equal the float64 run's, exactly."""
    if len(xs) != len(ys):
        return False
    for x, y in zip(xs, ys):
        a, b = np.asarray(x), np.asarray(y)
        if a.shape != b.shape:
            return False
        if a.dtype.kind in "fiub" and b.dtype.kind in "fiub":
            if not np.array_equal(a.astype(np.float64), b.astype(np.float64)):
                return False
    return True


# -- the generator ------------------------------------------------------------------------------

class ProgramBuilder:
    """The random state of one program under construction: the seed's RNG,
    the statements kept, and the environment NumPy reached after them."""

    def __init__(self, seed):
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        specs, dims = draw_args(self.rng)
        self.prog = Program(seed, specs, [], dims=dims)
        self.dims = dims
        self.arg_names = {s.name for s in specs if s.is_array}
        self.statics = {s.name for s in specs if not s.is_array}
        self.used = set(self.prog.params) | {"np", "pa", "i", "j", "v", "body", "s_"}
        self.counter = 0
        self.reshape_views, self.reshape_writes = set(), 0
        self.x = Exprs(self)
        self.env = {}
        self.refresh()

    # -- helpers the statement generators use --------------------------------------------
    def coin(self, p):
        return bool(self.rng.random() < p)

    def choice(self, seq):
        seq = list(seq)
        return seq[int(self.rng.integers(len(seq)))]

    def ints(self, lo, hi):
        return int(self.rng.integers(lo, hi)) if hi > lo else lo

    def new_local(self, prefix):
        while True:
            self.counter += 1
            name = f"{prefix}{self.counter}"
            if name not in self.used:
                self.used.add(name)
                return name

    def eval(self, text):
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return eval(text, {"np": np, "pa": NUMPY_LOOPS}, dict(self.env))   # noqa: S307

    # -- the program so far ----------------------------------------------------------------
    def refresh(self):
        env, err, args, bases = run_numpy(self.prog, locals_=True)
        assert err is None, err
        self._keep(env, args, bases)

    def _keep(self, env, args, bases):
        self.env = {k: v for k, v in env.items() if not callable(v)}
        self.input_ids = {id(a) for a in args + bases if isinstance(a, np.ndarray)}

    def reshape_safe(self, name) -> bool:
        """Whether a reshape or ravel of ``name`` is a view in NumPy exactly
        where polyarray makes one: its memory is an argument's (whose
        strides pa.jit records) or C-ordered.  An array NumPy computes from
        a Fortran-ordered or transposed one keeps that order (NumPy's "K"),
        where polyarray's are C-ordered (polyarray/numpy_differences.md)."""
        v = self.env.get(name)
        if not isinstance(v, np.ndarray):
            return False
        root = v
        while isinstance(root.base, np.ndarray):
            root = root.base
        return id(root) in self.input_ids or root.flags.c_contiguous

    def _reshaping_writes(self, st: Stmt) -> int:
        """The lines of ``st`` that write through a reshaped view."""
        count = 0
        for line in st.lines:
            target = line.split("=", 1)[0] if "=" in line.replace("==", "") else ""
            if "out=" in line:
                target = line.split("out=", 1)[1]
            count += len(_RESHAPING.findall(target)) + sum(
                1 for v in self.reshape_views if re.search(rf"\b{v}\b", target))
        return count

    def try_add(self, st: Stmt, allow_error=True) -> bool:
        """Keep ``st`` if NumPy runs it exactly (or raises, now and then)."""
        writes = self._reshaping_writes(st)
        if self.reshape_writes + writes > MAX_RESHAPE_WRITES:
            return False
        blocks = self.prog.blocks + [st]
        env, err, args, bases = run_numpy(self.prog, blocks=blocks, locals_=True)
        if err is not None:
            if not isinstance(err, ERRORS) or not allow_error or \
                    not (st.kind == "error" or self.coin(0.15)):
                return False
            if isinstance(err, (NameError, AttributeError, SyntaxError)):
                return False
            self.prog.blocks = blocks
            self.prog.error = type(err).__name__
            self.prog.features |= st.features | {"NumPy raises"}
            return True
        values = [v for _, v in _values(env)] + [a for a in args + bases
                                                 if isinstance(a, np.ndarray)]
        if not exact_values(values):
            return False
        env64, err64, args64, bases64 = run_numpy(self.prog, blocks=blocks, locals_=True,
                                                  float64=True)
        if err64 is not None:
            return False
        values64 = [env64.get(k) for k, _ in _values(env)] + \
            [a for a in args64 + bases64 if isinstance(a, np.ndarray)]
        if not same_values(values, values64):
            return False
        copied = _value_copied(st)
        if copied is not None:
            envc, errc, argsc, basesc = run_numpy(self.prog, blocks=self.prog.blocks + [copied],
                                                  locals_=True)
            valuesc = [envc.get(k) for k, _ in _values(env)] + \
                [a for a in argsc + basesc if isinstance(a, np.ndarray)] if errc is None else []
            if not same_values(values, valuesc):
                return False            # NumPy's result depends on its copy order
        self.prog.blocks = blocks
        self.prog.features |= st.features
        self.reshape_writes += writes
        if st.reshape_view:
            self.reshape_views.add(st.reshape_view)
        self._keep(env, args, bases)
        return True

    def finish(self):
        """Draw the return: None, an argument, a created array, an expression,
        or a tuple of them; kept only if exact."""
        if self.prog.error:
            return
        names = [n for n, v in self.env.items() if isinstance(v, (np.ndarray, np.generic))]
        for _ in range(8):
            r = self.rng.random()
            if r < 0.3 or not names:
                ret = None
            elif r < 0.6:
                ret = self.choice(names)
            elif r < 0.8:
                k = self.ints(2, 4)
                ret = ", ".join(self.choice(names) for _ in range(k))
            else:
                n = self.choice(names)
                v = np.asarray(self.env[n])
                forms = [f"{n}.sum()", f"{n} * 2" if v.dtype.kind != "b" else f"~{n}",
                         f"{n}[::-1]" if v.ndim else n, f"({n}, {n}.max())"
                         if v.dtype.kind != "b" else n, f"{n}.T"]
                ret = self.choice(forms)
            if ret is None:
                self.prog.ret = None
                return
            result, err, args, bases = run_numpy(self.prog, ret=ret)
            if err is None and exact_values([v for _, v in _values(result)]):
                r64, e64, _, _ = run_numpy(self.prog, ret=ret, float64=True)
                if e64 is None and same_values([v for _, v in _values(result)],
                                               [v for _, v in _values(r64)]):
                    self.prog.ret = ret
                    self.prog.features.add("returns " + ("tuple" if "," in ret else
                                                         "argument" if ret in self.arg_names
                                                         else "value"))
                    return
        self.prog.ret = None


# ``x[key] = value``; the key may compare (``u[u != -1] = u[1:4]``)
_ASSIGNMENT = re.compile(r"^(\s*)([A-Za-z_].*?\])\s=\s(.+)$")


def _value_copied(st):
    """``st`` with the value of each ``x[key] = value`` copied first, or None
    (no such line).  NumPy copies an overlapping value first only in some
    layouts: ``x[9:14:2] = x[9:12]`` on a 1-D array reads elements it has
    already written; polyarray's writes are always as if copied, so a
    statement whose result depends on NumPy's order is not drawn."""
    lines, changed = [], False
    for line in st.lines:
        m = _ASSIGNMENT.match(line)
        if m and not m.group(2).rstrip().endswith(("=", "<", ">", "!")):
            lines.append(f"{m.group(1)}{m.group(2)} = np.copy({m.group(3)})")
            changed = True
        else:
            lines.append(line)
    return Stmt(st.kind, lines, st.features) if changed else None


def make_program(seed, n_statements=None) -> Program:
    """The random program of ``seed`` (see the module docstring)."""
    b = ProgramBuilder(seed)
    rng = b.rng
    want = n_statements if n_statements is not None else int(rng.integers(3, 12))
    gens, weights = zip(*STATEMENTS)
    p = np.array(weights, float) / sum(weights)
    tries = 0
    while len(b.prog.blocks) < want and tries < 15 * want and b.prog.error is None:
        tries += 1
        gen = gens[rng.choice(len(gens), p=p)]
        saved = b.counter, set(b.used)
        try:
            st = gen(b)
        except Exception as err:                # noqa: BLE001  a generator bug: report it
            raise RuntimeError(f"seed {seed}: {gen.__name__} failed: {err!r}") from err
        if st is None or not b.try_add(st):
            b.counter, b.used = saved
    b.finish()
    return b.prog


__all__ = ["ArgSpec", "NUMPY_LOOPS", "Program", "ProgramBuilder", "STATEMENTS",
           "make_program", "run_numpy"]
