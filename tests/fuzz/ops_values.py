"""Op generators for elementwise values: arithmetic (with narrow-integer
overflow), bitwise operators fed into comparisons, truth tests and reductions,
comparisons and logical ops, casts, ``where``, integer ``//``, ``%`` and ``**``,
unary and float functions, and long or shared-subexpression chains.

Each ``op_*(b)`` takes the ``_Builder``, appends one entry and returns it, or
returns None when the draw does not fit the DAG so far.  The weights live in
``fuzz.generate.OPS``.
"""
from __future__ import annotations

import warnings

import numpy as np

from fuzz.builder import _entry_of, _is_int, _is_intlike
from fuzz.dtypes import BOOL, DTYPES, FLOAT_DTYPES, INT_DTYPES, NARROW, _tn
from fuzz.exactness import grid_exp


def op_arith(b):
    a = b.pick()
    if a is None:
        return None
    op = b.choice(["+", "-", "*", "*", "+"])
    code, deps, se = b.operand(a)
    if b.coin(0.2):
        expr = f"({code} {op} {a.var})"
    else:
        expr = f"({a.var} {op} {code})"
    return b.apply(expr, [a.var] + deps, ("mul", se) if op == "*" else ("same", se))


def op_narrow_chain(b):
    """A narrow-integer computation that overflows, fed straight into a consumer."""
    a = b.pick(lambda e: e.dtype in NARROW) or b.add_placeholder(dtype=b.choice(NARROW))
    inner = b.choice([f"({a.var} * {a.var})", f"({a.var} + {a.var})", f"(-{a.var})",
                      f"({a.var} * {b.scalar(a.dtype)})", f"({a.var} - {b.scalar(a.dtype)})",
                      f"({b.scalar(a.dtype)} - {a.var})", f"xp.square({a.var})",
                      f"({a.var} ** 3)", f"xp.abs({a.var})", f"(~{a.var})"])
    ax = b.axis_arg(a)
    consumer = b.choice([
        f"{inner}.sum(axis={ax!r})", f"{inner}.max(axis={ax!r})", f"{inner}.min()",
        f"{inner}.prod(axis={ax!r})",
        f"{inner}.argmax()", f"{inner}.argmin()", f"{inner}.astype(xp.int32)",
        f"{inner}.astype(xp.{_tn(b.choice(DTYPES))})", f"({inner} == {b.scalar(a.dtype)})",
        f"({inner} < {b.scalar(a.dtype)})", f"({inner} + xp.int32(1))",
        f"({inner} * 1.0)", f"{inner}.any()", f"({inner} != 0).sum()",
        f"xp.where({inner} > 0, {inner}, 0)", f"{inner}.mean(axis={ax!r})"])
    if "argm" in consumer and a.val.size == 0:
        return None
    rule = ("inexact",) if ".mean(" in consumer else ("mul", [])
    return b.apply(consumer, [a.var], rule)


def op_bitwise(b):
    a = b.pick(_is_intlike)
    if a is None:
        a = b.add_placeholder(dtype=b.choice(INT_DTYPES + [BOOL]))
    op = b.choice(["&", "|", "^"])
    code, deps, _ = b.operand(a, _is_intlike, p_scalar=0.3)
    return b.apply(f"({a.var} {op} {code})", [a.var] + deps)


def op_shift(b):
    """``<<`` and ``>>`` with counts in and out of ``[0, bits)`` (NumPy gives
    0, or -1 for negative signed values shifted right; a float ``pow`` for
    ``2**count`` was off by one on NVIDIA, and escaped until this op)."""
    a = b.pick(_is_intlike)
    if a is None:
        a = b.add_placeholder(dtype=b.choice(INT_DTYPES))
    op = b.choice(["<<", ">>", "<<"])
    c = b.partner(a, _is_int)
    if c is not None and b.coin(0.6):
        return b.apply(f"({a.var} {op} {c.var})", [a.var, c.var])
    top = 127 if a.dtype == BOOL else int(np.iinfo(a.dtype).max)
    count = b.choice([k for k in (0, 1, 3, 7, 8, 15, 31, 33, 63, 64, 100) if k <= top])
    return b.apply(f"({a.var} {op} {count})", [a.var])


def op_invert(b):
    a = b.pick(_is_intlike)
    if a is None:
        return None
    return b.apply(f"(~{a.var})", [a.var])


def op_bitcmp(b):
    """Bitwise results tested by comparisons, truth tests and reductions."""
    a = b.pick(_is_intlike)
    if a is None:
        a = b.add_placeholder(dtype=b.choice(INT_DTYPES + [BOOL]))
    c = b.partner(a, _is_intlike)
    cv = c.var if c is not None and b.coin(0.8) else repr(b.scalar(a.dtype, small=True))
    deps = [a.var] + ([c.var] if cv == getattr(c, "var", None) else [])
    bit = f"({a.var} {b.choice(['&', '|', '^'])} {cv})"
    cmp = b.choice(["==", "!=", "<", "<=", ">", ">="])
    k = b.scalar(a.dtype, small=True)
    test = b.choice([
        f"({bit} {cmp} {k})", f"({bit} {cmp} {a.var})", f"xp.logical_not({bit})",
        f"{bit}.astype(xp.bool_)", f"xp.where({bit}, {a.var}, {k})",
        f"({bit} {cmp} {k}).sum()", f"({bit} != 0).sum(axis={b.axis_arg(a, False)!r})",
        f"{bit}.any()", f"{bit}.all()", f"xp.logical_and({bit}, {a.var})",
        f"xp.logical_xor({bit}, {k})", f"(~{bit} {cmp} {k})", f"(-{bit} {cmp} {k})"
        if a.kind != "b" else f"({bit} == {k})",
        f"(({a.var} {cmp} {k}) & ({bit} {cmp} {k}))",
        f"(({a.var} {cmp} {k}) ^ ({cv} {cmp} {k}))"])
    return b.apply(test, deps)


def op_compare(b):
    a = b.pick(lambda e: b.usable(e, True))
    if a is None:
        return None
    cmp = b.choice(["==", "!=", "<", "<=", ">", ">="])
    if _is_int(a) and b.coin(0.25):      # out-of-range Python ints compare exactly
        code, deps = repr(b.choice([-1, 256, -129, 70000, -2**40, 2**64])), []
    else:
        code, deps, _ = b.operand(a, discrete=True)
    return b.apply(f"({a.var} {cmp} {code})", [a.var] + deps)


def op_logical(b):
    a = b.pick(lambda e: b.usable(e, True))
    if a is None:
        return None
    if b.coin(0.3):
        return b.apply(f"xp.logical_not({a.var})", [a.var])
    code, deps, _ = b.operand(a, discrete=True)
    fn = b.choice(["logical_and", "logical_or", "logical_xor"])
    return b.apply(f"xp.{fn}({a.var}, {code})", [a.var] + deps)


def op_astype(b):
    a = b.pick()
    if a is None:
        return None
    to = b.choice(DTYPES + NARROW)
    if a.kind == "f" and to.kind in "iub":
        if not a.exact:
            return None
        if to.kind in "iu":
            info = np.iinfo(to)
            v = np.trunc(a.val.astype(np.float64))
            if not (np.isfinite(v).all() and (v >= float(info.min)).all()
                    and (v < float(info.max) + 1.0).all()):
                # cast an in-range version instead: clip first (exact)
                lo, hi = max(float(info.min), -100.0), min(float(info.max), 100.0)
                if not np.isfinite(a.val).all():
                    return None
                return b.apply(f"xp.clip({a.var}, {lo!r}, {hi!r}).astype(xp.{_tn(to)})",
                               [a.var])
    if a.kind == "f" and to.kind == "f":
        rule = ("move",) if to.itemsize >= a.dtype.itemsize else ("same", [])
    else:
        rule = ("same", [])
    return b.apply(f"{a.var}.astype(xp.{_tn(to)})", [a.var], rule)


def op_where(b):
    c = b.pick(lambda e: e.kind == "b" or (b.coin(0.3) and b.usable(e, True)))
    if c is None:
        return None
    x = b.partner(c)
    y = b.partner(c) if b.coin(0.7) else None
    xs = x.var if x is not None else repr(b.scalar(c.dtype))
    ys = y.var if y is not None else repr(b.scalar(x.dtype if x is not None else BOOL))
    deps = [c.var] + [e.var for e in (x, y) if e is not None]
    se = [grid_exp(float(s)) for s in (xs, ys) if _is_float_literal(s)]
    return b.apply(f"xp.where({c.var}, {xs}, {ys})", deps, ("move", se))


def _is_float_literal(s):
    try:
        float(s)
    except ValueError:
        return False
    return "." in s


def op_divmod(b):
    a = b.pick(lambda e: _is_intlike(e) or (e.kind == "f" and e.exact
                                            and np.isfinite(e.val).all()))
    if a is None:
        return None
    op = b.choice(["//", "%"])
    if a.kind == "f":               # exact: power-of-two divisors
        k = b.choice([0.5, 2.0, 4.0, -2.0, 1.0, 0.25])
        return b.apply(f"({a.var} {op} {k!r})", [a.var],
                       ("integral",) if op == "//" else ("move", [grid_exp(k)]))
    d = b.partner(a, _is_intlike) if b.coin(0.7) else None
    if d is None:
        s = b.scalar(a.dtype, small=True)
        if a.kind == "b":
            s = b.choice([1, 2, 3])
        s = s or 3
        div, deps = repr(s), []
    else:
        alt = b.choice([3, 1, -1, 7] if d.kind == "i" else [3, 1, 7])
        div, deps = (f"xp.where({d.var} == 0, {alt}, {d.var})"
                     if d.kind != "b" else f"({d.var} | True)"), [d.var]
    expr = f"({a.var} {op} {div})"
    # MIN // -1 overflows (NumPy warns, C traps): check on the values
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = {"xp": np, a.var: a.val}
        env.update({v: _entry_of(b, v).val for v in deps})
        try:
            with np.errstate(all="ignore"):
                num = np.asarray(eval(f"{a.var} + 0 * {div}", env))      # noqa: S307
                den = np.asarray(eval(f"0 * {a.var} + {div}", env))      # noqa: S307
        except Exception:                                               # noqa: BLE001
            return None
        if num.dtype.kind in "iu" and (den == 0).any():
            return None
        if num.dtype.kind == "i" and ((num == np.iinfo(num.dtype).min) & (den == -1)).any():
            return None
    return b.apply(expr, [a.var] + deps, ("integral",) if op == "//" else ("inexact",))


def op_power(b):
    a = b.pick(lambda e: e.kind in "iu" or (e.kind == "f" and b.coin(0.3)))
    if a is None:
        return None
    if a.kind == "f":
        return b.apply(f"({a.var} ** {b.choice([2, 3, 0.5, 2.0])})", [a.var],
                       ("inexact",))
    e = b.partner(a, _is_int) if b.coin(0.5) else None
    if e is not None:
        return b.apply(f"({a.var} ** ({e.var} & 3))", [a.var, e.var])
    return b.apply(f"({a.var} ** {int(b.rng.integers(0, 6))})", [a.var])


def op_unary_int(b):
    a = b.pick(lambda e: e.kind in "iuf")
    if a is None:
        return None
    fn = b.choice(["-{}", "xp.abs({})", "xp.square({})", "xp.sign({})", "xp.negative({})",
                   "xp.positive({})", "xp.floor({})", "xp.rint({})", "xp.trunc({})",
                   "xp.ceil({})", "xp.isnan({})", "xp.isfinite({})", "xp.isinf({})"])
    discrete = fn.startswith(("xp.sign", "xp.floor", "xp.rint", "xp.trunc", "xp.ceil"))
    if discrete and not b.usable(a, True):
        return None
    rule = ("integral",) if discrete else (("mul", []) if "square" in fn else ("move",))
    return b.apply(fn.format(a.var), [a.var], rule)


def op_float(b):
    a = b.pick(lambda e: e.kind == "f")
    if a is None:
        a = b.pick()
        if a is None:
            return None
        return b.apply(f"{a.var}.astype(xp.{_tn(b.choice(FLOAT_DTYPES))})", [a.var],
                       ("same", []))
    fn = b.choice(["xp.tanh({})", "xp.sin({})", "xp.cos({})", "xp.exp(-({0} * {0}))",
                   "xp.sqrt(xp.abs({}) + 1.0)", "xp.log1p(xp.abs({}))", "xp.arctan({})",
                   "({} / 3.0)", "xp.maximum({}, 0.0)", "xp.clip({}, -1.0, 1.0)"])
    if fn in ("xp.sin({})", "xp.cos({})") and not periodic_safe(a):
        return None
    rule = ("move", [0]) if fn.startswith(("xp.maximum", "xp.clip")) else ("inexact",)
    return b.apply(fn.format(a.var), [a.var], rule)


PERIODIC_BOUND = 16.0


def periodic_safe(a) -> bool:
    """Whether sin or cos of ``a`` is within tolerance of NumPy's in any
    evaluation order: an exact ``a``, or an inexact one no larger than
    ``PERIODIC_BOUND``.  An inexact value's rounding (ulps of its magnitude)
    becomes sin's or cos's absolute error: seed 2361 took cos of a float32
    row sum of 4100 terms (1845, 2 ulps apart from NumPy's pairwise sum: 2.4e-4
    off, past float32's tolerance), which a sum or any order may give."""
    if a.exact or a.kind != "f":
        return True
    finite = a.val[np.isfinite(a.val)]
    return finite.size == 0 or float(np.max(np.abs(finite))) <= PERIODIC_BOUND


def op_maxmin(b):
    a = b.pick()
    if a is None:
        return None
    code, deps, se = b.operand(a)
    fn = b.choice(["maximum", "minimum"])
    return b.apply(f"xp.{fn}({a.var}, {code})", [a.var] + deps, ("move", se))


def op_divide(b):
    a = b.pick()
    if a is None:
        return None
    d = b.partner(a, lambda e: e.kind in "iuf")
    if d is None:
        return b.apply(f"({a.var} / 4)", [a.var], ("inexact",))
    return b.apply(f"({a.var} / (xp.abs({d.var}) + 1))", [a.var, d.var], ("inexact",))


def op_shared(b):
    a = b.pick(lambda e: e.kind in "iuf")
    if a is None:
        return None
    form = b.choice(["({0} * {0} + {0})", "({0} - {0} * 2)", "(({0} + 1) * ({0} + 1))",
                     "xp.where({0} > 0, {0}, -{0})"])
    if "> 0" in form and not b.usable(a, True):
        return None
    return b.apply(form.format(a.var), [a.var], ("pow", 2))


def op_deep(b):
    """One long chain of integer operations (deeper than the spill depth)."""
    a = b.pick(lambda e: e.kind in "iu") or b.add_placeholder(dtype=b.choice(INT_DTYPES))
    expr = a.var
    for _ in range(int(b.rng.integers(20, 40))):
        op = b.choice(["+", "*", "^", "-", "|", "&"])
        k = b.scalar(a.dtype, small=True)
        if op in "&|" and k == 0:
            k = 1
        expr = f"({expr} {op} {k})" if not b.coin(0.2) else f"({expr} {op} {a.var})"
    return b.apply(expr, [a.var])
