"""NumPy ufuncs that no target lowers directly, composed from those that do
(``hypot``, ``copysign``, ``logaddexp``, ``fmax``, shifts, ``fmod``,
``frexp``/``ldexp``, ...), plus ``nan_to_num``, ``isclose``, ``sinc`` and
``select``.

Each resolves NumPy's own loop for its operands first
(``ufunc.resolve_dtypes``, so dtypes, NEP 50 weak scalars and "no loop"
TypeErrors are NumPy's), casts them to the loop dtype, then builds the
composition in that dtype.  Compositions run on every target unchanged, so
codegen needs no new C helpers; ``signbit`` and ``copysign`` are C's own
(``cfuncs``), as only they read the sign bit of a NaN.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir import nodes as N
from .axes import no_out
from .creation import array, as_node, full
from .dtypes import check_dtype, is_python_scalar, resolve_ufunc, weak_type
from .elementwise import (apply_ufunc as U, astype, clip, complex_join, complex_part, where,
                          _operand)

_LN2 = math.log(2.0)


# the docstring notes every ufunc of polyarray.api.elementwise shares
UFUNC_NOTE = """Returns a lazy ``pa.Array``; nothing is computed until it is evaluated.
The result dtype is NumPy's loop dtype (int8, uint8 and bool operands of
float functions give float16, which only the NumPy target computes).
``out=`` must be None and ``where=`` is not supported (use ``pa.where``);
``dtype=`` picks NumPy's loop, as in NumPy."""

BINARY_NOTE = """The operands broadcast as in NumPy, and their dtypes promote by NumPy 2's
rules (NEP 50: a Python scalar is weak, so ``x_float32 * 2.0`` stays
float32, while a NumPy scalar or 0-d array takes part in the promotion)."""


def loop_operands(name, *args):
    """``(operands cast to np.<name>'s loop dtypes, output dtype)``."""
    ufunc = getattr(np, name)
    ops = [_operand(a) for a in args]
    if not any(isinstance(o, N.Node) for o in ops):
        ops[0] = array(ops[0])
    types = [o.dtype if isinstance(o, N.Node) else o for o in ops]
    ins, out = resolve_ufunc(ufunc, types)
    nodes = [astype(o, dt) if isinstance(o, N.Node) else full((), o, dt)
             for o, dt in zip(ops, ins)]
    return nodes, check_dtype(out, name)


def cast_for_dtype(name, args, dtype):
    """``np.<name>(*args, dtype=dtype)``'s operands: NumPy picks the loop whose
    output is ``dtype`` (its ``signature``), and the operands are cast to that
    loop's input types (Python scalars stay weak)."""
    ufunc, dtype = getattr(np, name), check_dtype(dtype, name)
    ops = [_operand(a) for a in args]
    types = [o.dtype if isinstance(o, N.Node) else o for o in ops]
    types = [t if isinstance(t, np.dtype) else weak_type(t) for t in types]
    loop = ufunc.resolve_dtypes(tuple(types) + (None,) * ufunc.nout,
                                signature=(None,) * ufunc.nin + (dtype,) * ufunc.nout)
    return [astype(o, dt) if isinstance(o, N.Node) else o for o, dt in zip(ops, loop)]


def ufunc_node(name, args, out=None, where=True, dtype=None, fn=None) -> N.Node:
    """``np.<name>(*args, out=None, where=True, dtype=None)`` as a node: a
    ``dtype`` picks NumPy's loop with that output (``cast_for_dtype``); a
    ``where`` mask leaves NumPy's output uninitialized where it is False,
    which only means something with ``out``, so it is refused.  ``fn``
    builds the node (default: the lowered ufunc of that name)."""
    no_out(out, name)
    if where is not True:
        raise NotImplementedError(f"{name}: where= is not supported (without out= NumPy "
                                  "leaves the masked elements uninitialized); use "
                                  "pa.where(mask, value, other)")
    if dtype is not None:
        args = cast_for_dtype(name, args, dtype)
    return U(name, *args) if fn is None else fn(*args)


def constant_value(node):
    """The value of a lazy constant of one element (``full((), v)``), else None."""
    if isinstance(node, N.IndexLambda) and not node.bindings and isinstance(node.expr, np.generic):
        return node.expr
    return None


def _float(name, x):
    (x,), out = loop_operands(name, x)
    return x, out


def signbit(x) -> N.Node:
    """The sign bit (C's ``signbit``: -0.0 and -NaN too); integers: ``x < 0``."""
    node = _operand(x)
    if isinstance(node, N.Node) and node.dtype.kind in "biu":
        loop_operands("signbit", node)      # NumPy's errors
        return U("less", node, 0)           # no float16 loop for small ints
    return U("signbit", x)


def copysign(x1, x2) -> N.Node:
    """C's ``copysign`` in NumPy's loop dtype (the sign bit of a NaN too)."""
    (a, b), _ = loop_operands("copysign", x1, x2)
    return U("copysign", a, b)


def hypot(x1, x2) -> N.Node:
    """``m * sqrt(1 + (n/m)**2)`` with ``m = max(|x1|, |x2|)``: no overflow
    where the result is finite; inf wins over NaN, as in C's hypot."""
    (a, b), _ = loop_operands("hypot", x1, x2)
    a, b = U("absolute", a), U("absolute", b)
    m, n = U("maximum", a, b), U("minimum", a, b)
    r = U("divide", n, m)
    val = U("multiply", m, U("sqrt", U("add", 1, U("multiply", r, r))))
    val = where(U("equal", m, 0), 0, val)
    return where(U("logical_or", U("isinf", a), U("isinf", b)), math.inf, val)


def logaddexp(x1, x2) -> N.Node:
    """``max + log1p(exp(-|x1 - x2|))``; equal operands (infinities
    included) give ``x + log(2)``, as NumPy's loop does."""
    (a, b), _ = loop_operands("logaddexp", x1, x2)
    d = U("absolute", U("subtract", a, b))
    val = U("add", U("maximum", a, b), U("log1p", U("exp", U("negative", d))))
    return where(U("equal", a, b), U("add", a, _LN2), val)


def _fminmax(op, x1, x2):
    (a, b), _ = loop_operands("f" + op[:3], x1, x2)
    if a.dtype.kind == "c":     # NumPy's loop: a NaN second operand, or the order
        order = U("greater_equal" if op == "maximum" else "less_equal", a, b)
        return where(U("logical_or", U("isnan", b), order), a, b)
    m = U(op, a, b)
    if a.dtype.kind != "f":
        return m
    return where(U("isnan", a), b, where(U("isnan", b), a, m))


def fmax(x1, x2) -> N.Node:
    """``maximum`` that ignores NaN (NaN only where both are NaN)."""
    return _fminmax("maximum", x1, x2)


def fmin(x1, x2) -> N.Node:
    return _fminmax("minimum", x1, x2)


def deg2rad(x) -> N.Node:
    x, _ = _float("deg2rad", x)
    return U("multiply", x, math.pi / 180.0)


def rad2deg(x) -> N.Node:
    x, _ = _float("rad2deg", x)
    return U("multiply", x, 180.0 / math.pi)


radians, degrees = deg2rad, rad2deg


def reciprocal(x) -> N.Node:
    """``1 / x``.  Integers: NumPy's loop converts ``1.0 / x`` to the type,
    so only +-1 give nonzero; ``1 / 0`` is what NumPy gives on x86-64
    (the type's minimum for 32- and 64-bit signed ints, else 0)."""
    (x,), out = loop_operands("reciprocal", x)
    if out.kind == "f":
        return U("divide", 1, x)
    if out.kind == "c":             # NumPy's own loop (1 / 0 is NaN, not inf + NaN j)
        return U("reciprocal", x)
    if out.kind == "b":
        return x
    one = full((), 1, out)
    r = where(U("equal", x, one), one, full((), 0, out))
    if out.kind == "i":
        r = where(U("equal", x, full((), -1, out)), full((), -1, out), r)
        if out.itemsize >= 4:
            r = where(U("equal", x, full((), 0, out)), full((), np.iinfo(out).min, out), r)
    return r


def cbrt(x) -> N.Node:
    x, _ = _float("cbrt", x)
    return U("cbrt", x)         # C's cbrt: exact cubes stay exact


def exp2(x) -> N.Node:
    x, _ = _float("exp2", x)
    return U("exp2", x)


def heaviside(x1, x2) -> N.Node:
    """0 below zero, ``x2`` at zero, 1 above; NaN stays NaN."""
    (a, b), out = loop_operands("heaviside", x1, x2)
    step = where(U("less", a, 0), full((), 0, out), full((), 1, out))
    return where(U("isnan", a), a, where(U("equal", a, 0), b, step))


def float_power(x1, x2) -> N.Node:
    (a, b), _ = loop_operands("float_power", x1, x2)
    return U("power", a, b)


def _shift_parts(name, x1, x2):
    """Loop-typed operands, the output dtype, its width, and the count as a
    Python int when it is a constant (then no run-time range test)."""
    (a, b), out = loop_operands(name, x1, x2)
    const = constant_value(b)
    return a, b, out, out.itemsize * 8, None if const is None else int(const)


def _pow2(count, dtype):
    """``2 ** count`` as ``dtype`` (counts in range for it), by integer
    power in the unsigned type of its width: exact (a float ``pow`` then a
    cast gave 2**31 - 1 on NVIDIA's OpenCL and CUDA)."""
    wide = np.dtype(f"u{np.dtype(dtype).itemsize}")
    return astype(U("power", full((), 2, wide), astype(count, wide)), dtype)


def _in_range(b, lo, hi, out):
    """(``lo <= b < hi``, ``b`` where that holds else 0).  NumPy compares the
    count unsigned, so negative counts are out of range too."""
    ok = U("less", b, hi)
    if b.dtype.kind == "i":
        ok = U("logical_and", U("greater_equal", b, lo), ok)
    return ok, where(ok, b, full((), 0, out))


def left_shift(x1, x2) -> N.Node:
    """``x1 * 2**x2``, wrapping, computed in the unsigned type of the same
    width; counts outside ``[0, bits)`` give 0, as NumPy's ``npy_lshift``."""
    a, b, out, bits, const = _shift_parts("left_shift", x1, x2)
    wide = np.dtype(f"u{out.itemsize}")
    if const is not None:
        factor = (1 << const) if 0 <= const < bits else 0
        return astype(U("multiply", astype(a, wide), full((), factor, wide)), out)
    ok, safe = _in_range(b, 0, bits, out)
    r = astype(U("multiply", astype(a, wide), _pow2(safe, wide)), out)
    return where(ok, r, full((), 0, out))


def right_shift(x1, x2) -> N.Node:
    """Floor division by ``2**x2`` (arithmetic for signed types); counts
    outside ``[0, bits)`` give 0, or -1 for negative signed ``x1``."""
    a, b, out, bits, const = _shift_parts("right_shift", x1, x2)
    top = bits - 1 if out.kind == "i" else bits     # 2**(bits - 1) fits no signed type
    far = where(U("less", a, 0), full((), -1, out), full((), 0, out)) if out.kind == "i" \
        else U("multiply", a, full((), 0, out))
    if const is not None:
        return U("floor_divide", a, full((), 1 << const, out)) if 0 <= const < top else far
    ok, safe = _in_range(b, 0, top, out)
    return where(ok, U("floor_divide", a, _pow2(safe, out)), far)


def _setitem(value, dtype):
    """``value`` converted as NumPy's ``arr[...] = value`` converts it."""
    tmp = np.empty((), dtype)
    with np.errstate(all="ignore"):
        tmp[()] = value
    return tmp[()]


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None) -> N.Node:
    """NaN -> ``nan``, +-inf -> ``posinf``/``neginf`` (default: the
    dtype's largest and smallest finite values); integers unchanged."""
    node = _operand(x)
    node = node if isinstance(node, N.Node) else array(node)
    dt = node.dtype
    if dt.kind == "c":          # each part as a float, as NumPy's
        parts = [nan_to_num(complex_part(p, node), copy, nan, posinf, neginf)
                 for p in ("real", "imag")]
        return complex_join(*parts)
    if dt.kind != "f":
        return node
    info = np.finfo(dt)
    big = _setitem(info.max if posinf is None else posinf, dt)
    small = _setitem(info.min if neginf is None else neginf, dt)
    out = where(U("isnan", node), full((), _setitem(nan, dt), dt), node)
    out = where(U("equal", node, math.inf), full((), big, dt), out)
    return where(U("equal", node, -math.inf), full((), small, dt), out)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> N.Node:
    """NumPy 2's formula: ``|a - b| <= atol + rtol * |b|`` where ``b`` is
    finite, or ``a == b``; ``b`` is first promoted with a float."""
    x, y = _operand(a), _operand(b)
    for t in (rtol, atol):
        if isinstance(t, N.Node):
            raise TypeError("isclose: rtol and atol must be scalars, not lazy arrays")
    if isinstance(y, N.Node):
        y = astype(y, np.result_type(y.dtype, 1.0))
    elif is_python_scalar(y) and not isinstance(y, bool):
        y = float(y)
    close = U("less_equal", U("absolute", U("subtract", x, y)),
              U("add", atol, U("multiply", rtol, U("absolute", y))))
    result = U("logical_or", U("logical_and", close, U("isfinite", y)), U("equal", x, y))
    if equal_nan:
        result = U("logical_or", result, U("logical_and", U("isnan", x), U("isnan", y)))
    return result


# -- more of NumPy's ufuncs, composed ----------------------------------------------

def fabs(x) -> N.Node:
    """``|x|`` in NumPy's float loop (integers converted)."""
    x, _ = _float("fabs", x)
    return U("absolute", x)


def fmod(x1, x2) -> N.Node:
    """C's ``fmod`` (the sign of ``x1``): floats ``copysign(remainder(|x1|,
    |x2|), x1)``, exact (a remainder of non-negative operands is C's
    ``fmod``); integers the floor remainder moved to the dividend's sign
    (a zero divisor gives 0, as NumPy's)."""
    (a, b), out = loop_operands("fmod", x1, x2)
    if out.kind == "f":
        return U("copysign", U("remainder", U("absolute", a), U("absolute", b)), a)
    r = U("remainder", a, b)
    if out.kind == "u":
        return r
    moved = U("logical_and", U("not_equal", r, 0),
              U("not_equal", U("less", r, 0), U("less", a, 0)))
    return where(moved, U("subtract", r, b), r)


def modf(x) -> tuple:
    """(fractional part, integral part), both with ``x``'s sign: ``x -
    trunc(x)`` (exact) and ``trunc(x)``; infinities have fraction 0."""
    x, out = _float("modf", x)
    whole = U("trunc", x)
    frac = where(U("isinf", x), full((), 0, out), U("subtract", x, whole))
    return U("copysign", frac, x), whole


def _exponent_steps(dtype):
    """The powers ``j`` of the normalizing steps of ``dtype``: down from
    its largest finite values, up from its smallest subnormals."""
    info = np.finfo(dtype)
    top = 1 << (info.maxexp - 1).bit_length() - 1            # 512 for float64
    down = [top >> k for k in range(top.bit_length())]
    smallest = info.nmant - info.minexp + 1                  # 1074: 2**-1074
    up = [top] * max(1, -(-(smallest - (top - 1)) // top)) + down[1:]
    return down, up


def _normalized(x, dtype):
    """``(y, e)`` with ``|x| = y * 2**e``, ``y`` in [1, 2), for finite
    nonzero ``x``: multiplications by powers of two, exact, the exponent
    found bit by bit (no ``log2``: the same bits on every target)."""
    y, e = U("absolute", x), full(x.shape, 0, np.int32)
    down, up = _exponent_steps(dtype)
    for j in down:
        big = U("greater_equal", y, dtype.type(2.0 ** j))
        y = where(big, U("multiply", y, dtype.type(2.0 ** -j)), y)
        e = where(big, U("add", e, np.int32(j)), e)
    for j in up:
        small = U("less", y, dtype.type(2.0 ** (1 - j)))
        y = where(small, U("multiply", y, dtype.type(2.0 ** j)), y)
        e = where(small, U("subtract", e, np.int32(j)), e)
    return y, e


def frexp(x) -> tuple:
    """(mantissa in [0.5, 1) with ``x``'s sign, int32 exponent): exact;
    0, inf and NaN give ``(x, 0)``, as C's ``frexp``."""
    given = x
    x, out = _float("frexp", x)
    work = out
    if out == np.float16:       # small integers: the same exact values in float32, so
        work = np.dtype(np.float32)     # the exponent alone runs on the devices too
        x = astype(as_node(_operand(given)), work)
    y, e = _normalized(x, work)
    special = U("logical_or", U("equal", x, 0), U("logical_not", U("isfinite", x)))
    mantissa = where(special, x, U("copysign", U("multiply", y, work.type(0.5)), x))
    return astype(mantissa, out), where(special, full((), 0, np.int32),
                                        U("add", e, np.int32(1)))


def _float_pow2(k, dtype):
    """``2.0 ** k`` in ``dtype`` for int64 ``k`` in its normal range: a
    product of the powers ``2 ** (+-2 ** j)`` of ``|k|``'s bits, exact."""
    info = np.finfo(dtype)
    neg = U("less", k, 0)
    mag = U("absolute", k)
    out = full((), 1, dtype)
    for j in range((info.maxexp - 1).bit_length()):
        bit = U("not_equal", U("bitwise_and", mag, np.int64(1 << j)), 0)
        factor = where(neg, dtype.type(2.0 ** -(1 << j)), dtype.type(2.0 ** (1 << j)))
        out = U("multiply", out, where(bit, factor, dtype.type(1)))
    return out


def ldexp(x1, x2) -> N.Node:
    """``x1 * 2**x2``, correctly rounded as C's ``ldexp``: ``x1``
    normalized exactly, scaled by an exact power of two within the normal
    range, then one multiplication that alone may round (to a subnormal,
    0 or inf).  0, inf and NaN are returned as they are."""
    (a, n), out = loop_operands("ldexp", x1, x2)
    info = np.finfo(out)
    y, e = _normalized(a, out)
    wide = np.dtype(np.int64)
    exponent = U("add", astype(e, wide), clip(astype(n, wide), -8 * info.maxexp,
                                               8 * info.maxexp))
    lo, hi = info.minexp - 1, info.maxexp - 1            # 2**lo, 2**hi: normal
    normal = clip(exponent, lo, hi)
    rest = clip(U("subtract", exponent, normal), -(info.nmant + 3), 2)
    value = U("multiply", U("multiply", y, _float_pow2(normal, out)), _float_pow2(rest, out))
    special = U("logical_or", U("equal", a, 0), U("logical_not", U("isfinite", a)))
    return where(special, a, U("copysign", value, a))


_LOG2E = 1.0 / math.log(2.0)


def logaddexp2(x1, x2) -> N.Node:
    """``log2(2**x1 + 2**x2)``: ``max + log2(1 + 2**-|x1 - x2|)``, NumPy's
    formula; equal operands (infinities included) give ``x + 1``."""
    (a, b), _ = loop_operands("logaddexp2", x1, x2)
    d = U("absolute", U("subtract", a, b))
    val = U("add", U("maximum", a, b),
            U("multiply", U("log1p", U("exp2", U("negative", d))), _LOG2E))
    return where(U("equal", a, b), U("add", a, 1), val)


def sinc(x) -> N.Node:
    """``sin(pi x) / (pi x)``, NumPy's formula: ``pi x`` replaced by the
    dtype's epsilon where it is 0 (1 there)."""
    node = _operand(x)
    node = node if isinstance(node, N.Node) else array(node)
    px = U("multiply", math.pi, node)
    eps = np.finfo(px.dtype).eps if px.dtype.kind == "f" else 1e-20
    y = where(U("not_equal", px, 0), px, full((), eps, px.dtype))
    return U("divide", U("sin", y), y)


def select(condlist, choicelist, default=0) -> N.Node:
    """The first choice whose condition holds, else ``default``, elementwise:
    NumPy's dtype (of the choices and default, Python scalars weak) and
    checks, then one ``where`` per condition, the last first."""
    condlist, choicelist = list(condlist), list(choicelist)
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    weak = lambda v: v if type(v) in (int, float) else as_node(v)    # noqa: E731  NumPy's
    choices = [weak(c) for c in choicelist] + [weak(default)]
    try:
        dtype = np.result_type(*(c.dtype if isinstance(c, N.Node) else c for c in choices))
    except TypeError as e:
        raise TypeError(f"Choicelist and default value do not have a common dtype: {e}") \
            from None
    dtype = check_dtype(dtype, "select")
    choices = [astype(c, dtype) if isinstance(c, N.Node) else full((), c, dtype)
               for c in choices]
    conds = [as_node(c) for c in condlist]
    for i, c in enumerate(conds):
        if c.dtype != np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    out = choices[-1]
    for cond, choice in zip(conds[::-1], choices[-2::-1]):
        out = where(cond, choice, out)
    return out
