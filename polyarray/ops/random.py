"""Random numbers as lazy nodes: Philox4x32-10, a counter-based generator.

Element ``i`` of draw ``d`` of a generator with key ``k`` is a function of
``(i, d, k)`` alone: Philox4x32-10 (Salmon et al., SC'11; Random123,
cuRAND, JAX, CuPy) of the counter ``(i, d)`` (two 64-bit halves, four
32-bit words) under the key ``k``.  So a draw is an elementwise node, fused
with the work that reads it, and every target computes the same bits.

The block cipher is one C function, given as a custom elementwise kernel
(``ops.custom``: the devices inline it, the NumPy target runs
``philox_reference``, the same arithmetic in uint64).  Everything after the
bits (floats, normals, bounded integers) is ordinary nodes.  The draw
number and key are a data leaf, so every draw of one shape and dtype is the
same program (data values are kernel arguments, not part of the key).

* Floats in [0, 1): the top 53 (float64) or 24 (float32) bits times
  ``2**-53`` / ``2**-24``, as NumPy; exact, so identical on every target.
* Normals: Box-Muller, ``sqrt(-2 log u1) cos(2 pi u2)`` in float64 (the
  float32 ones rounded from it); exponentials: ``-log u``.  These use each
  target's ``log``/``cos``, so they agree across targets to the last bits
  of those functions, not bit for bit.
* Integers in a range of ``r`` values: ``floor(X r / 2**w)`` with ``X`` a
  uniform ``w``-bit integer (the multiply-shift of Lemire, without the
  rejection step): ``w = 64`` for dtypes of up to 32 bits (``r <= 2**32``),
  ``w = 128`` for 64-bit dtypes.  No modulo bias; each value's probability
  is off from ``1/r`` by less than ``r / 2**w`` (at most ``2**-32``, and
  ``2**-64`` for 64-bit dtypes), and there is no loop.
"""
from __future__ import annotations

import math

import numpy as np
import pymbolic.primitives as p

from ..ir import nodes as N
from ..ir.expr import cast, index_var
from .creation import array, constant, full
from .custom import elementwise, elementwise_def
from .elementwise import apply_ufunc as U, astype, broadcast_shapes, where
from .shapes import remap
from .ufuncs import right_shift

U64 = np.dtype(np.uint64)
U32 = np.dtype(np.uint32)
F64 = np.dtype(np.float64)
F32 = np.dtype(np.float32)
_LOW32 = 0xFFFFFFFF

# Philox4x32's multipliers and Weyl key increments (Random123's constants)
M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85
ROUNDS = 10

# ``ctr``: counter words 0 and 1 (low word first), ``draw``: words 2 and 3,
# ``key``: the two key words; ``upper`` picks output words (0, 1) or (2, 3)
# returned as one 64-bit value, the lower-numbered word high
_PHILOX_C = f"""
W c0 = (W) ctr, c1 = (W) (ctr >> 32), c2 = (W) draw, c3 = (W) (draw >> 32);
W k0 = (W) key, k1 = (W) (key >> 32);
for (int r = 0; r < {ROUNDS}; ++r) {{
  if (r > 0) {{ k0 += (W) 0x{W0:08X}u; k1 += (W) 0x{W1:08X}u; }}
  U p0 = (U) 0x{M0:08X}u * (U) c0;
  U p1 = (U) 0x{M1:08X}u * (U) c2;
  W n0 = ((W) (p1 >> 32)) ^ c1 ^ k0;
  W n2 = ((W) (p0 >> 32)) ^ c3 ^ k1;
  c1 = (W) p1; c3 = (W) p0; c0 = n0; c2 = n2;
}}
bits = upper ? ((((U) c2) << 32) | (U) c3) : ((((U) c0) << 32) | (U) c1);
"""


def philox_reference(ctr, draw, key, half):
    """The C above in NumPy (uint64 arithmetic on 32-bit words)."""
    ctr, draw, key, half = np.broadcast_arrays(*(np.asarray(a, U64) for a in
                                                 (ctr, draw, key, half)))
    c0, c1, c2, c3 = ctr & _LOW32, ctr >> 32, draw & _LOW32, draw >> 32
    k0, k1 = key & _LOW32, key >> 32
    for r in range(ROUNDS):
        if r:
            k0, k1 = (k0 + W0) & _LOW32, (k1 + W1) & _LOW32
        p0, p1 = c0 * M0, c2 * M1
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & _LOW32, (p0 >> 32) ^ c3 ^ k1, p0 & _LOW32
    return np.where(half != 0, (c2 << 32) | c3, (c0 << 32) | c1)


PHILOX = elementwise_def("U ctr, U draw, U key, W upper", "uint64 bits", _PHILOX_C,
                         "philox4x32_10", reference=philox_reference)


def philox(ctr, draw, key, half) -> N.Node:
    """Philox4x32-10 of the counter ``(ctr, draw)`` (uint64 nodes or
    scalars, broadcast) under ``key``: output words ``2 half`` and
    ``2 half + 1`` as one uint64 (the first high)."""
    args = [a if isinstance(a, N.Node) else full((), a, U64) for a in (ctr, draw, key)]
    (bits,) = elementwise(PHILOX, args + [full((), int(half), U32)])
    return bits


def element_index(shape) -> N.Node:
    """The C-order position of each element, as uint64."""
    terms, stride = [], 1
    for d in reversed(range(len(shape))):
        terms.append(index_var(d) if stride == 1 else p.Product((stride, index_var(d))))
        stride *= shape[d]
    flat = p.Sum(tuple(reversed(terms))) if len(terms) > 1 else (terms[0] if terms else 0)
    return constant(shape, U64, cast(U64, flat), f"random: element index {tuple(shape)}")


class Stream:
    """One draw: its shape, and the bits of each element (``bits(half)``)."""

    def __init__(self, shape, draw, key):
        self.shape = tuple(shape)
        state = array(np.array([draw % 2**64, key % 2**64], U64))
        self._draw = remap(state, (), (0,), "random: draw")
        self._key = remap(state, (), (1,), "random: key")
        self._index = element_index(self.shape)

    def bits(self, half=0) -> N.Node:
        """64 random bits per element (two of Philox's four words)."""
        return philox(self._index, self._draw, self._key, half)


def _scaled(bits, shift, scale, dtype, plus=0):
    """``((bits >> shift) + plus) * scale`` in ``dtype``: exact."""
    top = right_shift(bits, shift)
    if plus:
        top = U("add", top, plus)
    return U("multiply", astype(top, dtype), dtype.type(scale))


def uniform01(stream, dtype) -> N.Node:
    """Floats in [0, 1): 53 (float64) or 24 (float32) random bits."""
    if dtype == F64:
        return _scaled(stream.bits(), 11, 2.0**-53, F64)
    return _scaled(stream.bits(), 40, 2.0**-24, F32)


def _positive01(bits, bits_taken=53):
    """float64 in (0, 1]: ``bits_taken`` top bits, plus one, scaled."""
    return _scaled(bits, 64 - bits_taken, 2.0**-bits_taken, F64, plus=1)


def standard_normal(stream, dtype) -> N.Node:
    """Box-Muller's cosine branch, in float64 (float32: rounded from it).
    float64 takes 53 bits for each of ``u1`` and ``u2`` (both halves of
    Philox's block); float32 32 bits each (one half)."""
    a = stream.bits(0)
    if dtype == F64:
        u1, u2 = _positive01(a), _scaled(stream.bits(1), 11, 2.0**-53, F64)
    else:
        u1 = _scaled(right_shift(a, 32), 0, 2.0**-32, F64, plus=1)
        u2 = _scaled(U("bitwise_and", a, _LOW32), 0, 2.0**-32, F64)
    radius = U("sqrt", U("multiply", U("log", u1), -2.0))
    z = U("multiply", radius, U("cos", U("multiply", u2, 2.0 * math.pi)))
    return z if dtype == F64 else astype(z, F32)


def standard_exponential(stream, dtype) -> N.Node:
    """``-log(u)`` for ``u`` in (0, 1] (53 bits), float32 rounded from it."""
    e = U("negative", U("log", _positive01(stream.bits())))
    return e if dtype == F64 else astype(e, F32)


def _mulhi64(a, b):
    """The high 64 bits of the 128-bit product of uint64 nodes (or a
    uint64 constant ``b``), by 32-bit pieces."""
    mask = _LOW32
    a0, a1 = U("bitwise_and", a, mask), right_shift(a, 32)
    if isinstance(b, N.Node):
        b0, b1 = U("bitwise_and", b, mask), right_shift(b, 32)
    else:
        b0, b1 = np.uint64(int(b) & _LOW32), np.uint64(int(b) >> 32)
    p00, p01 = U("multiply", a0, b0), U("multiply", a0, b1)
    p10, p11 = U("multiply", a1, b0), U("multiply", a1, b1)
    mid = U("add", U("add", right_shift(p00, 32), U("bitwise_and", p01, mask)),
            U("bitwise_and", p10, mask))
    return U("add", U("add", p11, right_shift(p01, 32)),
             U("add", right_shift(p10, 32), right_shift(mid, 32)))


def bounded(stream, span, wide) -> N.Node:
    """Uniform integers in ``[0, span)`` as uint64: ``span`` a Python int in
    ``[1, 2**64]`` or a uint64 node (0 meaning ``2**64``).  ``wide``: 128
    random bits (64-bit dtypes), else 64 (``span <= 2**32``)."""
    a = stream.bits(0)
    if isinstance(span, int) and span == 2**64:
        return a
    r = span if isinstance(span, N.Node) else np.uint64(span)
    if not wide:
        mask = _LOW32
        hi = U("multiply", right_shift(a, 32), r)
        lo = right_shift(U("multiply", U("bitwise_and", a, mask), r), 32)
        return right_shift(U("add", hi, lo), 32)
    b = stream.bits(1)
    high = _mulhi64(a, r)
    low = U("multiply", a, r)                      # wraps: the low 64 bits
    total = U("add", low, _mulhi64(b, r))
    result = U("add", high, astype(U("less", total, low), U64))    # the carry
    if isinstance(span, N.Node):
        result = where(U("equal", span, 0), a, result)
    return result


def integers(stream, low, span, dtype, wide) -> N.Node:
    """``low + bounded(span)`` in ``dtype`` (wrapping through uint64)."""
    offset = bounded(stream, span, wide)
    base = astype(low, U64) if isinstance(low, N.Node) else np.uint64(int(low) % 2**64)
    return astype(U("add", offset, base), dtype)


def shape_of(*operands, size=None) -> tuple:
    """The output shape of a draw with array parameters: their broadcast
    shape, or ``size``, which they must broadcast to (NumPy's rule)."""
    shapes = [o.shape for o in operands if isinstance(o, N.Node)]
    if size is None:
        return broadcast_shapes(*shapes) if shapes else ()
    for s in shapes:
        try:
            fits = broadcast_shapes(s, size) == tuple(size)
        except ValueError:
            fits = False
        if not fits:
            raise ValueError("shape mismatch: objects cannot be broadcast to a single shape."
                             f"  Mismatch is between arg 0 with shape {tuple(size)} and "
                             f"arg 1 with shape {s}.")
    return tuple(size)


__all__ = ["PHILOX", "Stream", "bounded", "element_index", "integers", "philox",
           "philox_reference", "shape_of", "standard_exponential", "standard_normal",
           "uniform01"]
