"""Index arithmetic of flat buffers: a C-order position and its
multi-index, a reduction's input index from its kept and reduced parts,
and the integer helpers the policy's sizes use.  Plain Python and
pymbolic: the policy reads it without the builder."""
from __future__ import annotations

import math

import pymbolic.primitives as p


def decompose(flat, shape):
    """Multi-index of C-order position ``flat`` in ``shape``."""
    if len(shape) == 0:
        return ()
    if len(shape) == 1:
        return (flat,)
    strides = [math.prod(shape[k + 1:]) for k in range(len(shape))]
    idx = []
    for k, (n, s) in enumerate(zip(shape, strides)):
        e = flat if s == 1 else p.FloorDiv(flat, s)
        if k > 0 and n != 1:
            e = p.Remainder(e, n)
        idx.append(0 if n == 1 else e)
    return tuple(idx)


def interleave(kept, reduced, axes, ndim):
    """The full index of a reduction's input: ``reduced`` on ``axes``,
    ``kept`` on the other axes, in order."""
    kept, reduced = iter(kept), iter(reduced)
    return tuple(next(reduced) if d in axes else next(kept) for d in range(ndim))


def linearize(idx, shape):
    """C-order linear index of ``idx`` in ``shape``."""
    stride = 1
    terms = []
    for e, n in zip(reversed(idx), reversed(shape)):
        if n != 1 and not (isinstance(e, int) and e == 0):
            terms.append(e if stride == 1 else p.Product((stride, e)))
        stride *= n
    terms.reverse()
    if not terms:
        return 0
    return terms[0] if len(terms) == 1 else p.Sum(tuple(terms))


def pow2_floor(n):
    return 1 << (max(1, n).bit_length() - 1)


def ceil_div(a, b):
    return -(-a // b)


__all__ = ["ceil_div", "decompose", "interleave", "linearize", "pow2_floor"]
