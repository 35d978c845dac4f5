"""``Entry`` (one line of a generated program) and ``Case`` (a whole program
with its bindings and NumPy's expected values).

Separate from the builder because runners, tests and minimization only need
these: a ``Case`` can be cut down to sub-cases and printed as a standalone
script that rebuilds the failing program.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fuzz.dtypes import _tn


@dataclass
class Entry:
    var: str                 # Python variable in the script
    arr: object              # pa.Array
    val: np.ndarray          # NumPy's value
    e: object                # float grid exponent, None if inexact (0 for ints/bools)
    code: str                # right-hand side (placeholder: its constructor)
    deps: tuple = ()         # variables the code reads
    name: str = None         # placeholder name

    @property
    def dtype(self):
        return self.val.dtype

    @property
    def shape(self):
        return self.val.shape

    @property
    def lowp(self):
        """An inexact float32 (or complex64) value: its error is float32's, so
        it must not reach a float64 result (compared with float64's tolerance)."""
        return self.val.dtype in (np.float32, np.complex64) and self.e is None

    @property
    def ndim(self):
        return self.val.ndim

    @property
    def exact(self):
        return self.e is not None

    @property
    def kind(self):
        return self.val.dtype.kind


@dataclass
class Case:
    seed: int
    entries: list
    outputs: list            # [Entry]
    bindings: dict           # placeholder name -> np.ndarray
    build_errors: list = field(default_factory=list)
    description: str = ""
    all_bindings: dict = None    # every placeholder's value, used or not

    @property
    def arrays(self):
        return [o.arr for o in self.outputs]

    @property
    def expected(self):
        return [o.val for o in self.outputs]

    def ancestors(self, outputs):
        by_var = {e.var: e for e in self.entries}
        need, stack = set(), [o.var for o in outputs]
        while stack:
            v = stack.pop()
            if v not in need:
                need.add(v)
                stack.extend(by_var[v].deps)
        return [e for e in self.entries if e.var in need]

    def sub_case(self, outputs):
        """The case restricted to ``outputs`` (entries) and their ancestors."""
        ents = self.ancestors(outputs)
        names = {e.name for e in ents if e.name is not None}
        everything = self.all_bindings or self.bindings
        return Case(self.seed, ents, list(outputs),
                    {k: v for k, v in everything.items() if k in names},
                    [], self.description, everything)

    def script(self, target="opencl", device_kind=None, max_literal=64):
        """Standalone Python that rebuilds and runs this case."""
        ents = self.ancestors(self.outputs)
        lines = ["import numpy as np", "import polyarray as pa",
                 "nan, inf = np.nan, np.inf", "xp = pa"]
        big = False
        for e in ents:
            lines.append(f"{e.var} = {e.code}")
        lines.append(f"outs = [{', '.join(o.var for o in self.outputs)}]")
        lines.append("b = {")
        for e in ents:
            if e.name is None:
                continue
            v = self.bindings[e.name]
            if v.size <= max_literal:
                lit = f"np.array({v.tolist()!r}, np.{_tn(v.dtype)}).reshape({v.shape})"
            else:
                big = True
                lit = f"case.bindings[{e.name!r}]"
            lines.append(f"    {e.name!r}: {lit},")
        lines.append("}")
        if big:
            lines.insert(0, f"# large bindings: from dag_generator import make_case; "
                            f"case = make_case({self.seed})")
        opts = f", device_kind={device_kind!r}" if device_kind else ""
        lines.append(f"got = pa.compile(outs, target={target!r}{opts})(**b)")
        lines.append("want = pa.compile(outs, target='numpy')(**b)   "
                     "# or the lines above with xp = np on b's values")
        return "\n".join(lines)
