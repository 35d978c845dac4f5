"""Op generators for complex64 and complex128 values: made from real entries
or drawn as placeholders, then computed (arithmetic with Python complex
scalars and real or complex partners, division, parts, transcendental
functions where their inputs are finite and moderate, reductions, products,
layout and gathers, ``where``, casts between the complex types).

Complex values are inexact (``exactness.float_e`` gives them no grid), and
the other generators never pick them (``_Builder.pick``'s ``complex_ok``):
nothing discrete is decided by a complex value, and the comparison is part
by part within the part's tolerance, NaN where NumPy has NaN.  Each
``op_*(b)`` takes the ``_Builder`` and returns the new entry or None.
"""
from __future__ import annotations

import numpy as np

COMPLEX_DTYPES = [np.dtype(np.complex64), np.dtype(np.complex128)]
_SCALARS = [1j, 2 - 1j, -0.5 + 0.25j, 3.0, 1.5j, -2]


def _is_complex(e):
    return e.kind == "c"


def _finite(e, bound=None):
    """All of ``e``'s values finite (and below ``bound`` in magnitude)."""
    v = np.asarray(e.val)
    if not np.isfinite(v).all():
        return False
    return bound is None or not v.size or float(np.abs(v).max()) < bound


def complex_values(b, shape, dtype):
    """Values of a complex placeholder: parts from the real generator (exact
    quarters, uniform values, now and then an infinity or NaN)."""
    part = np.dtype(np.float32) if np.dtype(dtype) == np.complex64 else np.dtype(np.float64)
    re, im = b.values(shape, part), b.values(shape, part)
    out = np.empty(np.shape(re), dtype)
    out.real, out.imag = re, im
    return out


def _source(b):
    """A complex entry: an earlier one, a new placeholder, or one made from a
    real entry."""
    z = b.pick(_is_complex, complex_ok=True, recent=0.6)
    if z is not None and b.coin(0.7):
        return z
    if b.coin(0.4):
        return b.add_placeholder(dtype=b.choice(COMPLEX_DTYPES))
    f = b.pick(lambda e: e.kind in "fiu")
    if f is None:
        return b.add_placeholder(dtype=b.choice(COMPLEX_DTYPES))
    form = b.choice(["({0} * (1.5 - 0.5j))", "({0} + 2j)", "({0}.astype(xp.complex64))",
                     "({0}.astype(xp.complex128))", "(1j * {0})", "({0} - 0.25j * {0})"])
    return b.apply(form.format(f.var), [f.var], ("inexact",))


def op_complex(b):
    z = _source(b)
    if z is None:
        return None
    v, s = z.var, repr(b.choice(_SCALARS))
    w = b.partner(z, lambda e: e is not z and (e.kind in "fc" or e.kind in "iu"),
                  complex_ok=True)
    forms = [(f"({v} + {s})", [v]), (f"({v} * {s})", [v]), (f"({s} - {v})", [v]),
             (f"(-{v})", [v]), (f"{v}.conj()", [v]), (f"({v} * {v})", [v]),
             (f"xp.square({v})", [v]), (f"{v}.real", [v]), (f"{v}.imag", [v]),
             (f"xp.abs({v})", [v]), (f"({v}.real + 2 * {v}.imag)", [v]),
             (f"{v}.astype(xp.complex128)", [v]), (f"{v}.astype(xp.complex64)", [v])]
    if w is not None:
        forms += [(f"({v} + {w.var})", [v, w.var]), (f"({v} * {w.var})", [v, w.var]),
                  (f"({w.var} - {v})", [v, w.var])]
        if (np.asarray(w.val) != 0).all():
            forms.append((f"({v} / {w.var})", [v, w.var]))
    if (np.asarray(z.val) != 0).all():
        forms += [(f"({s} / {v})", [v]), (f"xp.reciprocal({v})", [v])]
    if _finite(z, 30.0):
        forms += [(f"xp.exp({v})", [v]), (f"xp.sin({v})", [v]), (f"xp.cos({v})", [v]),
                  (f"xp.tanh({v})", [v]), (f"xp.expm1({v})", [v]), (f"xp.sqrt({v})", [v]),
                  (f"xp.sign({v})", [v]), (f"xp.angle({v})", [v]), (f"({v} ** 2)", [v]),
                  (f"({v} ** 3)", [v])]
        if (np.abs(np.asarray(z.val)) > 1e-3).all():
            forms += [(f"xp.log({v})", [v]), (f"xp.log1p({v})", [v])]
    vals = np.asarray(z.val)
    finite = vals[np.isfinite(vals)]
    if z.ndim >= 1 and z.val.size and float(np.abs(finite).max(initial=0)) < 1e15:
        # no order of a sum overflows (infinities alone give one answer in any order)
        ax = b.axis_arg(z)
        forms += [(f"{v}.sum(axis={ax!r})", [v]), (f"{v}.mean(axis={ax!r})", [v]),
                  (f"xp.vdot({v}, {v})", [v])]
        if z.ndim == 2:
            forms += [(f"({v} @ {v}.T)", [v]), (f"({v}.conj().T @ {v})", [v])]
            m = b.pick(lambda e: e.ndim in (1, 2) and e.shape[0] == z.shape[1]
                       and e.kind in "fc" and _finite(e, 1e15), complex_ok=True)
            if m is not None:
                forms.append((f"({v} @ {m.var})", [v, m.var]))
    if z.ndim >= 1 and z.val.size:
        forms += [(f"{v}[::-1]", [v]), (f"xp.concatenate([{v}, {v} * 1j])", [v]),
                  (f"{v}.reshape(-1)", [v]), (f"{v}[xp.asarray([{z.shape[0] - 1}, 0])]", [v])]
        if z.val.size <= 16 and _finite(z, 4.0):
            forms.append((f"{v}.prod(axis={ax!r})", [v]))
    if z.ndim == 2:
        forms.append((f"{v}.T", [v]))
    c = b.partner(z, lambda e: e.kind == "b")
    if c is not None:
        forms.append((f"xp.where({c.var}, {v}, {s})", [v, c.var]))
    code, deps = b.choice(forms)
    return b.apply(code, deps, ("inexact",))
