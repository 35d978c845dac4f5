"""``_Builder``: the random state of one DAG under construction.

Holds the seed's RNG, the dimensions, the entries built so far and their
NumPy values; draws values, scalars and names; and ``apply``s one line of
code to both NumPy and polyarray, recording disagreements as build errors.
The op_* generators (ops_*.py) only talk to the DAG through this class.
"""
from __future__ import annotations

import warnings

import numpy as np

import polyarray as pa
from fuzz.case import Entry
from fuzz.dtypes import BOOL, DTYPES, NARROW, _tn
from fuzz.exactness import float_e, grid_exp
from fuzz.names import (HOSTILE_NAMES, HOSTILE_PAIRS, ORDINARY_NAMES, REFUSABLE,
                        UNICODE_NAMES)


class _Builder:
    def __init__(self, seed, max_ops=None, sizes=None):
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.entries = []
        self.bindings = {}
        self.build_errors = []
        self.used_names = set()
        self.ops = []
        rng = self.rng
        self.max_ops = max_ops if max_ops is not None else int(rng.integers(3, 15))
        # dimensions of this DAG: mostly small, sometimes long enough to reach the
        # other kernel forms (rows >= 64, split columns R >= 256, two-stage R >= 4096,
        # tiled matmuls, transposed tiles >= 32, 4 elements per work-item >= 65536)
        r = rng.random() if sizes is None else {"small": 0.0, "medium": 0.8,
                                               "large": 0.99}[sizes]
        if r < 0.72:
            self.A, self.B = (int(x) for x in rng.integers(2, 6, 2))
            self.size_class = "small"
        elif r < 0.94:
            pairs = [(3, 70), (70, 3), (300, 4), (2, 130), (33, 40), (16, 32), (64, 16),
                     (5, 257), (40, 64)]
            self.A, self.B = pairs[rng.integers(len(pairs))]
            self.size_class = "medium"
        else:
            pairs = [(2, 4100), (1, 5000), (256, 300), (4100, 3), (64, 64)]
            self.A, self.B = pairs[rng.integers(len(pairs))]
            self.size_class = "large"

    # -- helpers ----------------------------------------------------------
    def choice(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def coin(self, p):
        return bool(self.rng.random() < p)

    def fresh_var(self):
        return f"v{len(self.entries)}"

    def pick(self, pred=lambda e: True, recent=0.45, complex_ok=False):
        """An entry satisfying ``pred``, often a recent one; complex entries
        only where asked for (``ops_complex``: they are inexact, and no
        other generator's rules cover them)."""
        cands = [e for e in self.entries if pred(e) and (complex_ok or e.kind != "c")]
        if not cands:
            return None
        if self.coin(recent):
            return cands[-1] if self.coin(0.6) else cands[max(0, len(cands) - 3):][
                int(self.rng.integers(min(3, len(cands))))]
        return self.choice(cands)

    def shapes(self):
        A, B = self.A, self.B
        s = [(A, B), (A, B), (B,), (A, 1), (1, B), (), (A,), (B, A), (2, A, B)]
        if self.size_class == "small":
            s += [(1,), (A, B, 1), (0,)]
        return s

    # -- values -------------------------------------------------------------
    def values(self, shape, dtype):
        rng, dt = self.rng, np.dtype(dtype)
        if dt == BOOL:
            r = rng.random()
            if r < 0.1:
                return np.ones(shape, bool)
            if r < 0.2:
                return np.zeros(shape, bool)
            return rng.random(shape) < 0.5
        if dt.kind == "c":
            from fuzz.ops_complex import complex_values
            return complex_values(self, shape, dt)
        if dt.kind == "f":
            r = rng.random()
            if r < 0.55:        # exact: multiples of 1/4 in [-8, 8]
                v = rng.integers(-32, 33, shape) / 4.0
            elif r < 0.85:
                v = rng.uniform(-2, 2, shape)
            else:               # specials
                v = rng.integers(-8, 9, shape) / 2.0
                if v.size:
                    flat = v.reshape(-1)
                    for _ in range(int(rng.integers(1, 3))):
                        flat[rng.integers(flat.size)] = self.choice(
                            [np.nan, np.inf, -np.inf, -0.0, 0.0])
            return np.asarray(v).astype(dt)
        info = np.iinfo(dt)
        lo, hi = int(info.min), int(info.max)
        r = rng.random()
        if r < 0.25:
            a, b = max(lo, -20), min(hi, 20)
        elif r < 0.55 and dt.itemsize <= 2:
            # overflow-prone: large magnitudes of narrow types
            if dt.kind == "u":
                a, b = hi // 3, hi
            else:
                return (rng.choice([-1, 1], shape) *
                        rng.integers(hi // 3, hi + 1, shape)).astype(dt)
        elif r < 0.8:
            a, b = lo, hi
        else:
            edges = sorted({lo, lo + 1, -1 if lo else 0, 0, 1, 2, hi - 1, hi,
                            hi // 2, hi // 2 + 1})
            edges = [x for x in edges if lo <= x <= hi]
            return np.array(edges, dtype=object)[rng.integers(0, len(edges), shape)] \
                .astype(dt) if shape else dt.type(self.choice(edges))
        if dt.itemsize == 8:
            return rng.integers(a, b, shape, dtype=dt, endpoint=True)
        return rng.integers(a, b + 1, shape).astype(dt)

    def long_rows(self):
        """A float32 placeholder of rows as long as this DAG's longest axis,
        each one inexact decimal repeated: a long sum of it rounds the same
        way at every add, so summing a 4100-long row in one accumulator
        misses NumPy's pairwise sum by 2-4e-5, more than float32's tolerance
        (seed 1783).  Only for row sums: NumPy sums a column in order, so
        summing one of these columns otherwise (in chunks) would differ by
        as much (random values in placeholders: their sums may cancel to
        near 0, where NumPy's own rounding exceeds the tolerance)."""
        shape = (min(self.A, self.B), max(self.A, self.B))
        return self.add_placeholder(shape, np.float32,
                                    np.full(shape, self.choice([0.1, 0.7, 1.1, -0.9, 0.45])))

    def scalar(self, dtype, small=False):
        """A Python scalar operand suited to ``dtype``."""
        dt = np.dtype(dtype)
        rng = self.rng
        if dt == BOOL:
            return self.choice([True, False, 1, 0, 2, 0.5])
        if dt.kind == "f":
            return self.choice([0.5, 2.0, -1.5, 3.0, 0.25, -4.0, 1, 2, -3, 0.0])
        info = np.iinfo(dt)
        if small:
            return int(rng.integers(max(int(info.min), -9), min(int(info.max), 9) + 1))
        cands = [0, 1, 2, 3, 7, -1, -2, 100, 127, -128, 200, 255, 256, 1000, 32767,
                 -32768, 40000, 65535, 2**31 - 1, -2**31, 2**32 - 1, 2**40, -2**40,
                 2**63 - 1, 2**64 - 1, -2**63]
        inrange = [c for c in cands if info.min <= c <= info.max]
        return self.choice(inrange)

    # -- entries -------------------------------------------------------------
    def name(self):
        r = self.rng.random()
        if r < 0.4:
            pool = HOSTILE_NAMES
        elif r < 0.47:
            pool = UNICODE_NAMES
        elif r < 0.57:
            a, b = HOSTILE_PAIRS[int(self.rng.integers(len(HOSTILE_PAIRS)))]
            pool = [b] if a in self.used_names else [a, b]
        else:
            pool = ORDINARY_NAMES
        for n in [self.choice(pool)] + [f"x{k}" for k in range(100)]:
            if n not in self.used_names and n != "out":
                return n
        raise AssertionError("no free name")

    def add_placeholder(self, shape=None, dtype=None, values=None, name=None):
        if dtype is None:
            dtype = self.choice(DTYPES + NARROW + [np.dtype(np.float32)])
        dtype = np.dtype(dtype)
        if shape is None:
            shape = self.choice(self.shapes())
        name = name or self.name()
        try:
            arr = pa.placeholder(name, shape, dtype)
        except ValueError as err:
            if name not in REFUSABLE or name not in str(err):
                self.build_errors.append(f"placeholder({name!r}) refused: {err}")
            self.used_names.add(name)
            return self.add_placeholder(shape, dtype, values)
        self.used_names.add(name)
        val = np.asarray(self.values(shape, dtype) if values is None else values, dtype=dtype)
        self.bindings[name] = val
        e = grid_exp(val) if dtype.kind == "f" else (None if dtype.kind == "c" else 0)
        ent = Entry(self.fresh_var(), arr, val, e,
                    f"pa.placeholder({name!r}, {tuple(shape)!r}, pa.{_tn(dtype)})", (), name)
        self.entries.append(ent)
        return ent

    def apply(self, code, deps, rule=("move",), note=None):
        """Evaluate ``code`` with NumPy and with polyarray; add the entry.

        ``rule`` says how exact a float result is (see ``exactness.float_e``)."""
        by_var = {e.var: e for e in self.entries}
        env_np = {"xp": np, "np": np}
        env_pa = {"xp": pa, "np": np}
        for v in deps:
            env_np[v] = by_var[v].val
            env_pa[v] = by_var[v].arr
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                with np.errstate(all="ignore"):
                    want = eval(code, env_np)           # noqa: S307
            except MemoryError:         # the reference cannot hold it here: not a case
                return None
            except Exception as err:                    # noqa: BLE001  NumPy refuses
                try:
                    eval(code, env_pa)                  # noqa: S307
                except Exception:                       # noqa: BLE001
                    return None
                self.build_errors.append(f"{code}: NumPy raises {type(err).__name__}: "
                                         f"{err}, polyarray accepts it")
                return None
        want = np.asarray(want)
        try:
            arr = eval(code, env_pa)                    # noqa: S307
        except Exception as err:                        # noqa: BLE001
            self.build_errors.append(f"{code}: NumPy gives {want.dtype}{list(want.shape)}, "
                                     f"polyarray raises {type(err).__name__}: {err}")
            return None
        if not isinstance(arr, pa.Array):
            self.build_errors.append(f"{code}: polyarray returns {type(arr).__name__}")
            return None
        if arr.shape != want.shape or arr.dtype != want.dtype:
            self.build_errors.append(f"{code}: polyarray gives {arr.dtype}{list(arr.shape)}, "
                                     f"NumPy {want.dtype}{list(want.shape)}")
            return None
        if want.dtype == np.float16 or want.dtype.kind not in "biufc":
            return None
        ins = [by_var[v] for v in deps]
        if want.dtype in (np.float64, np.complex128) and any(x.lowp for x in ins):
            return None     # float32 rounding would be judged by float64's tolerance
        e = float_e(rule, ins, want)
        ent = Entry(self.fresh_var(), arr, want, e, code, tuple(dict.fromkeys(deps)))
        self.entries.append(ent)
        self.ops.append(note or code)
        return ent

    # -- operand helpers -------------------------------------------------------
    def usable(self, e, discrete=False):
        """``e`` may decide something discrete only when it is exact."""
        return e.exact if (discrete and e.kind == "f") else True

    def partner(self, a, pred=lambda e: True, complex_ok=False):
        """An entry whose shape broadcasts with ``a``'s."""
        def ok(e):
            try:
                np.broadcast_shapes(a.shape, e.shape)
            except ValueError:
                return False
            return pred(e)
        return self.pick(ok, complex_ok=complex_ok)

    def operand(self, a, pred=lambda e: True, p_scalar=0.3, small=False, discrete=False):
        """(code, deps, scalar e list) for a second operand of ``a``."""
        if self.coin(p_scalar):
            s = self.scalar(a.dtype, small)
            se = [grid_exp(float(s))] if isinstance(s, float) else []
            return repr(s), [], se
        b = self.partner(a, lambda e: pred(e) and self.usable(e, discrete))
        if b is None:
            s = self.scalar(a.dtype, small)
            return repr(s), [], ([grid_exp(float(s))] if isinstance(s, float) else [])
        return b.var, [b.var], []

    def axis_arg(self, a, allow_tuple=True):
        if a.ndim == 0 or self.coin(0.3):
            return None
        if allow_tuple and a.ndim >= 2 and self.coin(0.25):
            k = int(self.rng.integers(2, a.ndim + 1))
            return tuple(sorted(int(x) for x in self.rng.choice(a.ndim, k, replace=False)))
        ax = int(self.rng.integers(a.ndim))
        return ax - a.ndim if self.coin(0.3) else ax

# ---------------------------------------------------------------------------
# predicates and look-ups shared by the op_* generators

def _is_int(e):
    return e.kind in "iu"


def _is_intlike(e):
    return e.kind in "iub"

def _entry_of(b, var):
    return next(e for e in b.entries if e.var == var)
