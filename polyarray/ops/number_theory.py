"""``gcd`` and ``lcm``: Euclid's algorithm, a loop whose length depends on
the values, as a small C function (a custom elementwise kernel of ours,
``ops.custom``: inlined on the devices, NumPy's own ``gcd``/``lcm`` on the
NumPy target), so it fuses as any ufunc.

As NumPy's loops: the operands' magnitudes in the unsigned type of their
width (``|INT_MIN|`` wraps to ``2**(bits-1)``), Euclid there, and the
result converted back, wrapping; ``lcm`` is ``|a| / gcd * |b|``, wrapping,
and 0 where the gcd is 0."""
from __future__ import annotations

import numpy as np

from ..ir import nodes as N
from .custom import elementwise, elementwise_def
from .elementwise import apply_ufunc as U, astype
from .ufuncs import loop_operands

_GCD = """
while (a != 0) { T c = a; a = b % a; b = c; }
g = b;
"""
_LCM = """
T x = a, y = b;
while (x != 0) { T c = x; x = y % x; y = c; }
l = y == 0 ? (T) 0 : (T) (a / y * b);
"""


def _gcd_reference(a, b):
    return np.gcd(a, b)


def _lcm_reference(a, b):
    with np.errstate(over="ignore"):
        return np.lcm(a, b)


GCD = elementwise_def("T a, T b", "T g", _GCD, "gcd", reference=_gcd_reference)
LCM = elementwise_def("T a, T b", "T l", _LCM, "lcm", reference=_lcm_reference)


def _magnitudes(name, x1, x2):
    """The operands' magnitudes in the unsigned type of NumPy's loop dtype,
    and that dtype."""
    (a, b), out = loop_operands(name, x1, x2)
    wide = np.dtype(f"u{out.itemsize}")
    mags = [astype(U("absolute", v) if out.kind == "i" else v, wide) for v in (a, b)]
    return mags, out


def gcd(x1, x2) -> N.Node:
    """The greatest common divisor of ``|x1|`` and ``|x2|`` (0 for 0 and 0)."""
    (a, b), out = _magnitudes("gcd", x1, x2)
    (g,) = elementwise(GCD, [a, b])
    return astype(g, out)


def lcm(x1, x2) -> N.Node:
    """The least common multiple of ``|x1|`` and ``|x2|`` (0 where either is 0)."""
    (a, b), out = _magnitudes("lcm", x1, x2)
    (m,) = elementwise(LCM, [a, b])
    return astype(m, out)
