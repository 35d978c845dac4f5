"""Exactness of float values: grid exponents and how each operation changes them.

A float entry carries a grid exponent ``e`` (all its values are multiples of
2**-e) or None (inexact).  Only exact values may decide something discrete
(comparisons, casts to integers, argmax, ...), because then fused multiply-adds,
reduction orders and math libraries cannot change the answer.  ``float_e``
derives a result's exponent from its inputs' by the op's ``rule``.
"""
from __future__ import annotations

import math

import numpy as np

from fuzz.dtypes import MANTISSA


def grid_exp(val) -> int:
    """Smallest e >= 0 with every finite value a multiple of 2**-e."""
    v = np.asarray(val, dtype=np.float64).ravel()
    v = v[np.isfinite(v) & (v != 0)]
    if v.size == 0:
        return 0
    m, ex = np.frexp(np.abs(v))
    mant = (m * 2.0**53).astype(np.int64)
    low = mant & -mant
    tz = np.log2(low.astype(np.float64)).astype(np.int64)
    return int(max(0, -(ex - 53 + tz).min()))


def finite_abs(val):
    v = np.abs(np.asarray(val, dtype=np.float64))
    return np.where(np.isfinite(v), v, 0.0)


def fits(bound, e, dtype) -> bool:
    """Values below ``bound`` on the 2**-e grid are exact in ``dtype``."""
    p = MANTISSA[np.dtype(dtype)]
    if not np.isfinite(bound) or bound >= float(np.finfo(dtype).max):
        return False
    return bound == 0 or math.log2(bound) + e < p


def float_e(rule, ins, out):
    """Grid exponent of a float result, or None when it may be rounded
    (complex results always: ``ops_complex``)."""
    if out.dtype.kind == "c":
        return None
    if out.dtype.kind != "f":
        return 0
    kind, *args = rule
    if kind == "inexact":
        return None
    es = []
    for x in ins:
        if x.kind == "f":
            if x.e is None:
                return None
            es.append(x.e)
        elif x.kind in "iu" and x.val.size and \
                float(np.abs(x.val.astype(np.float64)).max()) >= 2.0**MANTISSA[out.dtype]:
            return None              # the conversion to float rounds
    extra = args[0] if args else []   # grid exponents of scalar operands
    if kind == "move":               # values are copies of the inputs'
        return max(es + list(extra) + [0])
    if kind == "integral":           # floor, rint, x // 2**k, sign: integer values
        return 0
    if kind == "value":              # constants: exact as computed
        return grid_exp(out)
    if kind == "same":               # +, -, with result bound
        e = max(es + list(extra) + [0])
        bound = float(finite_abs(out).max(initial=0))
    elif kind == "mul":
        e = sum(es) + sum(extra)
        bound = float(finite_abs(out).max(initial=0))
        if len(ins) == 1 and not extra:      # v * v
            e = 2 * es[0] if es else 0
    elif kind == "pow":              # a polynomial of degree k in one input
        k = args[0]
        e = k * max(es + [0])
        x = float(finite_abs(ins[0].val).max(initial=0))
        bound = max(float(finite_abs(out).max(initial=0)), 2 * (x + 1.0) ** k)
    elif kind == "sum":              # every partial sum is below sum(|x|)
        axes = args[1]
        e = max(es + [0])
        bound = partial_sum_bound(ins[0].val, axes)
    elif kind == "prod":
        axes = args[1]
        x = ins[0].val
        n = max(1, int(np.prod([x.shape[a] for a in axes]))) if x.ndim else 1
        e = (es[0] if es else 0) * n
        with np.errstate(over="ignore"):
            bound = float(np.exp2(partial_product_log2(x, axes)[0])) * 2
    elif kind in ("matmul", "matmul_t"):
        e = sum(es)
        a = finite_abs(ins[0].val)
        if len(ins) == 1:               # x @ x.T or x.T @ x: bound both
            prods = [a @ a.T, a.T @ a]
        else:                           # a @ b, or a.T @ b ("matmul_t")
            b = finite_abs(ins[1].val)
            prods = [(a.T if kind == "matmul_t" else a) @ b]
        bound = float(max(np.max(x, initial=0) for x in prods))
    else:
        raise AssertionError(kind)
    return e if fits(bound, e, out.dtype) else None


def reduction_order_safe(op, val, axes, dtype) -> bool:
    """Whether a float ``sum`` or ``prod`` of ``val`` over ``axes`` in
    ``dtype`` ends the same in every order (tolerance aside): no partial
    sum or product can overflow, nor a partial product underflow to 0, so
    whether a result is 0, +-inf or NaN does not depend on the order.  Seed
    4136: a float64 product of 64 values near 2**95 with zeros among them
    overflowed to inf before meeting a zero in one order (inf * 0: NaN)
    and met the zero first in NumPy's (0).  Integers, and NaN or inf inputs
    alone, end the same in any order."""
    dtype = np.dtype(dtype)
    if dtype.kind != "f" or op not in ("sum", "prod") or np.asarray(val).size == 0:
        return True
    info = np.finfo(dtype)
    if op == "sum":
        return partial_sum_bound(val, axes) < float(info.max) / 2
    up, down = partial_product_log2(val, axes)
    return up < math.log2(float(info.max)) - 1 and down > math.log2(float(info.tiny)) + 1


def partial_sum_bound(val, axes) -> float:
    """The largest magnitude a partial sum of ``val``'s finite values over
    ``axes`` can reach, in any order: the largest sum of magnitudes."""
    with np.errstate(over="ignore"):
        return float(finite_abs(val).sum(axis=axes).max(initial=0))


def partial_product_log2(val, axes) -> tuple:
    """``(up, down)``: log2 of the largest and of the smallest magnitude a
    partial product of ``val``'s finite nonzero values over ``axes`` can
    reach, in any order (the products of the factors above 1, and of those
    below 1)."""
    a = finite_abs(val)
    a = np.where(a > 0, a, 1.0)
    return (float(np.log2(np.maximum(a, 1.0)).sum(axis=axes).max(initial=0)),
            float(np.log2(np.minimum(a, 1.0)).sum(axis=axes).min(initial=0)))


def scan_rounding_safe(op, val, axis, dtype, margin=0.25) -> bool:
    """Whether NumPy's running ``sum`` or ``prod`` (``cumsum``/``cumprod``)
    of ``val`` along ``axis`` (None: flattened) in float ``dtype`` stays
    within ``margin`` of the comparison's tolerance of the exact one.
    NumPy's loop adds in order, so its rounding grows with the row: a
    float32 running sum of 4100 random values in [-2, 2] is off by up to
    3e-6 of the largest partial sum, past float32's absolute tolerance
    (1e-6 of the largest value) where a partial sum cancels to near 0.  A
    target that combines in another order rounds otherwise; both are near
    the exact sum only where NumPy's own error is well inside the
    tolerance.  Integers are exact; so are scans of values whose every
    partial result is exact (``float_e``'s "sum" and "prod" rules)."""
    dtype = np.dtype(dtype)
    x = np.asarray(val)
    if dtype.kind != "f" or x.size == 0:
        return True
    from polyarray.testing import tolerance
    wide = np.longdouble if dtype.itemsize >= 8 else np.float64
    fn = np.cumsum if op == "sum" else np.cumprod
    with np.errstate(all="ignore"):
        cast = x.astype(dtype)
        got = fn(cast, axis=axis)
        exact = fn(cast.astype(wide), axis=axis)
        fin = np.isfinite(got)
        if not np.array_equal(fin, np.isfinite(exact)):
            return False
        rtol, atol = tolerance(got)
        err = np.abs(got[fin].astype(wide) - exact[fin])
        return bool(np.all(err <= margin * (rtol * np.abs(exact[fin]) + atol)))
