"""Unsigned index arithmetic folded while lowering.

A random draw's element reads its block through its flat index in uint64
arithmetic: block ``i // 4``, word ``i & 3``, half ``(i & 3) // 2``, parity
``i & 1``.  A work-item that computes a run of neighbours ``i = 4*Y + u``
(the elementwise ``run`` layout) lowers each ``u`` as a constant, and these
folds turn those reads into ``Y``, ``u``, ``u // 2``, ``u & 1``: the run's
elements then hold the same expressions for what they share (a block, a
pair's radius and angle), which the builder computes once, and their
parities are constants that pick one branch of a ``where``.

An expression here is *linear*: a sum of constants and terms ``k * x``
(``k`` a constant, ``x`` anything), all uint64.  The folds:

* ``X & m`` (``m + 1`` a power of two dividing every ``k``) -> ``c & m``:
  exact in modular arithmetic;
* ``X // d``, ``X >> s`` (``d`` dividing every ``k``, ``0 <= c < d``) ->
  ``sum (k/d) x``, and ``X % d`` -> ``c % d``: exact when ``X`` does not
  wrap, which the builder knows for index arithmetic bounded by the
  node's shape (``nowrap``);
* operations on constants alone -> their value (NumPy's uint64 rules).
"""
from __future__ import annotations

import numpy as np
import pymbolic.primitives as p

U64 = np.dtype(np.uint64)
BOOL = np.dtype(bool)
_BITS = 2**64


def _const(x):
    return type(x) is int or (isinstance(x, np.integer) and not isinstance(x, np.bool_))


def linear(e):
    """``([(k, x), ...], c)`` for a linear uint64 expression, or None."""
    terms, const = [], 0
    for t in (e.children if isinstance(e, p.Sum) else (e,)):
        if _const(t):
            const += int(t)
        elif isinstance(t, p.Product) and len(t.children) == 2 and _const(t.children[0]):
            terms.append((int(t.children[0]), t.children[1]))
        else:
            terms.append((1, t))
    return terms, const % _BITS


def build(terms, const):
    """The expression of ``linear``'s pair."""
    parts = [x if k == 1 else p.Product((np.uint64(k), x)) for k, x in terms if k]
    if const or not parts:
        parts.append(np.uint64(const))
    return parts[0] if len(parts) == 1 else p.Sum(tuple(parts))


def _on_constants(name, a, b):
    if name == "bitwise_and":
        return a & b, U64
    if name == "bitwise_or":
        return a | b, U64
    if name == "floor_divide":
        return (a // b if b else 0), U64          # NumPy: integer division by 0 is 0
    if name == "remainder":
        return (a % b if b else 0), U64
    if name == "right_shift":
        return (a >> b if b < 64 else 0), U64
    if name in ("equal", "not_equal"):
        return int((a == b) == (name == "equal")), BOOL
    return None


def fold(name, args, nowrap):
    """``(expr, dtype)`` of ``name(*args)`` folded, or None.  ``args``:
    ``(expr, dtype)`` pairs; ``nowrap``: the linear expressions known not to
    wrap (index arithmetic bounded by its node's shape)."""
    if len(args) != 2 or any(dt != U64 for _, dt in args):
        return None
    (x, _), (b, _) = args
    if not _const(b):
        return None
    b = int(b) % _BITS
    if _const(x):
        done = _on_constants(name, int(x) % _BITS, b)
        if done is None:
            return None
        value, dt = done
        return (np.uint8(value) if dt == BOOL else np.uint64(value)), dt
    if name not in ("bitwise_and", "floor_divide", "right_shift", "remainder"):
        return None
    terms, c = linear(x)
    if name == "bitwise_and":
        if b & (b + 1) == 0 and all(k % (b + 1) == 0 for k, _ in terms):
            return np.uint64(c & b), U64
        return None
    d = (1 << b if b < 64 else 0) if name == "right_shift" else b
    if d == 1 and name != "remainder":
        return x, U64
    if x not in nowrap:
        return None
    if d == 0 or any(k % d for k, _ in terms):
        return None
    if name == "remainder":
        return np.uint64(c % d), U64
    if c >= d:
        return None
    out = build([(k // d, t) for k, t in terms], 0)
    nowrap.add(out)
    return out, U64


def _index_terms(e):
    """``({k: coefficient of _k}, constant)`` of index arithmetic ``e`` that
    is a sum of constant multiples of the index variables ``_k``, or None."""
    coef, const = {}, 0
    for t in (e.children if isinstance(e, p.Sum) else (e,)):
        factors = t.children if isinstance(t, p.Product) else (t,)
        k, var = 1, None
        for f in factors:
            if _const(f):
                k *= int(f)
            elif isinstance(f, p.Variable) and f.name.startswith("_") \
                    and f.name[1:].isdigit() and var is None:
                var = int(f.name[1:])
            else:
                return None
        if var is None:
            const += k
        else:
            coef[var] = coef.get(var, 0) + k
    return coef, const


def bounded(e, shape):
    """Whether index arithmetic ``e`` (on the node's index variables
    ``_k``, each in ``[0, shape[k])``) is a sum of nonnegative multiples of
    them and a nonnegative constant, below ``2**63``: it cannot wrap."""
    found = _index_terms(e)
    if found is None:
        return False
    coef, const = found
    if const < 0 or any(k < 0 or v >= len(shape) for v, k in coef.items()):
        return False
    return const + sum(k * (shape[v] - 1) for v, k in coef.items()) < 2**63


def own_flat(e, shape):
    """Whether index arithmetic ``e`` is the C-order flat index of the
    node's own multi-index in ``shape`` (``sum stride_k * _k``)."""
    found = _index_terms(e)
    if found is None or found[1] != 0 or any(v >= len(shape) for v in found[0]):
        return False
    want, stride = {}, 1
    for k in reversed(range(len(shape))):
        if shape[k] != 1:
            want[k] = stride
        stride *= shape[k]
    return {v: k for v, k in found[0].items() if shape[v] != 1 and k} == want


__all__ = ["bounded", "build", "fold", "linear", "own_flat"]
