"""Random numbers as lazy nodes: counter-based generators, Philox4x32-10
(the default) and Philox4x64-10 (NumPy's ``Philox``, at the end).

A draw of a generator with key ``k`` is a function of ``(element, d, k)``
alone, ``d`` the draw's number: Philox4x32-10 (Salmon et al., SC'11;
Random123, cuRAND, JAX, CuPy) of the counter ``(b, d)`` (two 64-bit halves,
four 32-bit words) under the key ``k`` gives a block of four 32-bit words,
and neighbouring elements share a block: as many as the block holds of
what each takes (``Stream``: 4 elements of 32 bits, 2 of 64, 1 of 128).
So a draw is an elementwise node, fused with the work that reads it, every
target computes the same bits, and a kernel whose work-items take runs of
4 neighbouring elements (the policy gives kernels that draw such runs)
computes each block once: the C compiler shares the cipher between the
run's elements.

The block cipher is one C function, given as a custom elementwise kernel
(``ops.custom``: the devices inline it, the NumPy target runs
``philox_reference``, the same arithmetic in uint64).  Everything after the
bits (floats, normals, bounded integers) is ordinary nodes.  The draw
number and key are a data leaf, so every draw of one shape and dtype is the
same program (data values are kernel arguments, not part of the key).

* Floats in [0, 1): the top 53 (float64, of 64 bits) or 24 (float32, of
  32 bits) bits times ``2**-53`` / ``2**-24``, as NumPy; exact, so
  identical on every target.
* Normals: Box-Muller, ``sqrt(-2 log u1)`` times ``cos(2 pi u2)`` for an
  even element and ``sin(2 pi u2)`` for the odd one after it (the two share
  ``u1, u2``: 53 bits each for float64, 32 bits each and float32
  arithmetic for float32); exponentials: ``-log u``.  These use each
  target's ``log``/``cos``/``sin``, so they agree across targets to the
  last bits of those functions, not bit for bit.
* Integers (Philox4x32's) in a range of ``r`` values: ``floor(X r / 2**w)``
  with ``X`` a uniform ``w``-bit integer (the multiply-shift of Lemire,
  without the rejection step): ``w = 64`` for dtypes of up to 32 bits
  (``r <= 2**32``), ``w = 128`` for 64-bit dtypes.  No modulo bias; each
  value's probability is off from ``1/r`` by less than ``r / 2**w`` (at
  most ``2**-32``, and ``2**-64`` for 64-bit dtypes), and there is no loop.
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
_ROUNDS_C = f"""
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
"""
_PHILOX_C = _ROUNDS_C + """
bits = upper ? ((((U) c2) << 32) | (U) c3) : ((((U) c0) << 32) | (U) c1);
"""
# one word of the block, ``word`` 0..3 (a select after the rounds: a run of
# neighbours computing one block's words shares the rounds)
_PHILOX_WORD_C = _ROUNDS_C + """
bits = word == 0 ? c0 : word == 1 ? c1 : word == 2 ? c2 : c3;
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


def philox_word_reference(ctr, draw, key, word):
    """Word ``word`` (0..3) of the block, by ``philox_reference``."""
    word = np.asarray(word, U64)
    both = philox_reference(ctr, draw, key, word >> 1)
    return np.where(word & 1, both & _LOW32, both >> 32)


PHILOX = elementwise_def("U ctr, U draw, U key, W upper", "uint64 bits", _PHILOX_C,
                         "philox4x32_10", reference=philox_reference)
PHILOX_WORD = elementwise_def("U ctr, U draw, U key, W word", "uint64 bits", _PHILOX_WORD_C,
                              "philox4x32_10_word", reference=philox_word_reference)


def philox(ctr, draw, key, half) -> N.Node:
    """Philox4x32-10 of the counter ``(ctr, draw)`` (uint64 nodes or
    scalars, broadcast) under ``key``: output words ``2 half`` and
    ``2 half + 1`` as one uint64 (the first high); ``half`` 0 or 1, or a
    node of them."""
    args = [a if isinstance(a, N.Node) else full((), a, U64) for a in (ctr, draw, key)]
    upper = astype(half, U32) if isinstance(half, N.Node) else full((), int(half), U32)
    (bits,) = elementwise(PHILOX, args + [upper])
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
    """One draw of Philox4x32: its shape, and each element's bits from the
    block it shares with its neighbours (``bits``, ``word``, ``pair_bits``).
    Element ``i`` taking ``w`` of the block's 4 words reads block
    ``i // (4 / w)``, words ``(i % (4 / w)) * w`` on."""
    pairs = True    # elements 2j and 2j+1 can share their bits (``pair_bits``)

    def __init__(self, shape, draw, key):
        self.shape = tuple(shape)
        state = array(np.array([draw % 2**64, key % 2**64], U64))
        self._draw = remap(state, (), (0,), "random: draw")
        self._key = remap(state, (), (1,), "random: key")
        self._index = element_index(self.shape)

    def _shared(self, log2_per_block):
        """(block, position in it) of each element when ``2**log2_per_block``
        neighbours share a block."""
        i = self._index
        return (right_shift(i, log2_per_block),
                U("bitwise_and", i, 2**log2_per_block - 1))

    def _half(self, block, half) -> N.Node:
        return philox(block, self._draw, self._key, half)

    def bits(self, half=0, halves=1) -> N.Node:
        """64 random bits per element: of an element taking ``halves`` (1 or
        2) halves of a block, half number ``half``."""
        if halves == 2:
            return self._half(self._index, half)
        if half:
            raise ValueError("an element taking one half of a block has half 0 alone")
        block, pos = self._shared(1)
        return self._half(block, pos)

    def word(self) -> N.Node:
        """32 random bits per element (as uint64): word ``i % 4`` of block
        ``i // 4`` (a half holds words ``2h`` (high) and ``2h + 1``)."""
        block, pos = self._shared(2)
        (bits,) = elementwise(PHILOX_WORD, [block, self._draw, self._key, astype(pos, U32)])
        return bits

    def pair_bits(self, half=0, halves=1) -> N.Node:
        """``bits(half, halves)`` of pair ``i // 2``: the same bits for
        elements ``2j`` and ``2j + 1``."""
        if halves == 1 and half:
            raise ValueError("a pair taking one half of a block has half 0 alone")
        if halves == 2:
            return self._half(right_shift(self._index, 1), half)
        block, pos = self._shared(2)        # (``pos >> 1``: the compiler sees it
        return self._half(block, right_shift(pos, 1))     # constant along a run)

    def odd(self) -> N.Node:
        """Whether each element's flat index is odd (the second of a pair)."""
        return U("not_equal", U("bitwise_and", self._index, 1), 0)


def scaled(bits, shift, scale, dtype, plus=0):
    """``((bits >> shift) + plus) * scale`` in ``dtype``: exact."""
    top = right_shift(bits, shift)
    if plus:
        top = U("add", top, plus)
    return U("multiply", astype(top, dtype), dtype.type(scale))


def uniform01(stream, dtype) -> N.Node:
    """Floats in [0, 1): the top 53 of 64 random bits (float64), or 24 of
    32 (float32)."""
    if dtype == F64:
        return scaled(stream.bits(), 11, 2.0**-53, F64)
    return scaled(stream.word(), 8, 2.0**-24, F32)


def _positive01(bits, bits_taken=53):
    """float64 in (0, 1]: ``bits_taken`` top bits, plus one, scaled."""
    return scaled(bits, 64 - bits_taken, 2.0**-bits_taken, F64, plus=1)


def standard_normal(stream, dtype) -> N.Node:
    """Box-Muller: ``sqrt(-2 log u1)`` times ``cos(2 pi u2)``.  float64 takes
    53 bits for each of ``u1`` and ``u2`` (both halves of a block), float32
    32 bits each (one half).  Where the stream lets neighbours share bits
    (``stream.pairs``) the odd element of a pair takes the sine of its even
    neighbour's ``u1, u2``, and float32 is float32 arithmetic; otherwise
    each element takes the cosine of its own, computed in float64 (float32
    rounded from it)."""
    pairs = getattr(stream, "pairs", False)
    if dtype == F64:
        a, b = (stream.pair_bits(h, halves=2) if pairs else stream.bits(h) for h in (0, 1))
        u1, u2 = _positive01(a), scaled(b, 11, 2.0**-53, F64)
    elif pairs:
        a = stream.pair_bits()
        u1 = scaled(right_shift(a, 32), 0, 2.0**-32, F32, plus=1)
        u2 = scaled(U("bitwise_and", a, _LOW32), 0, 2.0**-32, F32)
        radius = U("sqrt", U("multiply", U("log", u1), np.float32(-2.0)))
        angle = U("multiply", u2, np.float32(2.0 * math.pi))
        return where(stream.odd(), U("multiply", radius, U("sin", angle)),
                     U("multiply", radius, U("cos", angle)))
    else:
        a = stream.bits(0)
        u1 = scaled(right_shift(a, 32), 0, 2.0**-32, F64, plus=1)
        u2 = scaled(U("bitwise_and", a, _LOW32), 0, 2.0**-32, F64)
    radius = U("sqrt", U("multiply", U("log", u1), -2.0))
    angle = U("multiply", u2, 2.0 * math.pi)
    z = U("multiply", radius, U("cos", angle))
    if pairs:
        z = where(stream.odd(), U("multiply", radius, U("sin", angle)), z)
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
    every = isinstance(span, int) and span == 2**64
    a = stream.bits(0, halves=2 if wide and not every else 1)
    if every:
        return a
    r = span if isinstance(span, N.Node) else np.uint64(span)
    if not wide:
        mask = _LOW32
        hi = U("multiply", right_shift(a, 32), r)
        lo = right_shift(U("multiply", U("bitwise_and", a, mask), r), 32)
        return right_shift(U("add", hi, lo), 32)
    b = stream.bits(1, halves=2)
    high = _mulhi64(a, r)
    low = U("multiply", a, r)                      # wraps: the low 64 bits
    total = U("add", low, _mulhi64(b, r))
    result = U("add", high, astype(U("less", total, low), U64))    # the carry
    if isinstance(span, N.Node):
        result = where(U("equal", span, 0), a, result)
    return result


def integers(stream, low, span, dtype, wide) -> N.Node:
    """``low + bounded(span)`` in ``dtype`` (wrapping through uint64)."""
    return offset_by(bounded(stream, span, wide), low, dtype)


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




# -- NumPy's Philox: Philox4x64-10 ----------------------------------------------
# ``np.random.Philox``: a 256-bit counter (four 64-bit words) and a 128-bit
# key; ten rounds of two 64 x 64 -> 128-bit multiplications.  Its stream is
# the four words of the block of counter ``c + 1``, then of ``c + 2``, ...,
# and NumPy's Generator takes 64-bit words (``next_uint64``) or 32-bit
# halves of them, low half first, the high one kept for the next
# ``next_uint32`` (``has_uint32``).  Element ``i`` of a draw finds its unit
# (a word, a half, or the 16-, 8- or 1-bit piece of a half that NumPy's
# local buffers hand out) by arithmetic on ``i``, and computes its block.

P64_M0, P64_M1 = 0xD2E7470EE14C6C93, 0xCA5A826395121157
P64_W0, P64_W1 = 0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B
# xor-ed into key word 0 for the streams that replace a value NumPy would
# reject (b"fallback"); key word 1 counts the attempts
P64_FALLBACK = int.from_bytes(b"fallback", "big")
_MASK64 = 2**64 - 1

# A draw's ``mode``: bit 0: 64-bit units (whole words); bit 1: ``u`` is an
# explicit position, ``(word << 6) | bit offset``, the word relative to the
# draw's first (``HALF_WORD`` for the half buffered before the draw); bit 2:
# a 32-bit half is buffered before the draw (the first units come from it);
# bits 3-5: log2 of the units per 32 bits (0: 32-bit units, 1: 16, 2: 8, 5: 1)
WIDE, EXPLICIT, HAS_HALF = 1, 2, 4
HALF_WORD = 2**58 - 1

_P64_PREAMBLE = f"""
#ifndef PA_PHILOX4X64_10
#define PA_PHILOX4X64_10
#if defined(__CUDACC__)
#define PA_P64_FN __device__ static inline
#define PA_P64_MULHI(a, b) __umul64hi(a, b)
typedef unsigned long long pa_p64;
#elif defined(__OPENCL_VERSION__)
#define PA_P64_FN static inline
#define PA_P64_MULHI(a, b) mul_hi(a, b)
typedef ulong pa_p64;
#else
#error "Philox4x64: CUDA or OpenCL C"
#endif

/* word w of the Philox4x64-10 block of counter (c0, c1, c2, c3), key (k0, k1) */
PA_P64_FN pa_p64 pa_philox4x64_word(pa_p64 c0, pa_p64 c1, pa_p64 c2, pa_p64 c3,
                                    pa_p64 k0, pa_p64 k1, unsigned int w)
{{
  for (int r = 0; r < {ROUNDS}; ++r) {{
    if (r > 0) {{ k0 += (pa_p64) 0x{P64_W0:016X}; k1 += (pa_p64) 0x{P64_W1:016X}; }}
    pa_p64 hi0 = PA_P64_MULHI((pa_p64) 0x{P64_M0:016X}, c0);
    pa_p64 lo0 = (pa_p64) 0x{P64_M0:016X} * c0;
    pa_p64 hi1 = PA_P64_MULHI((pa_p64) 0x{P64_M1:016X}, c2);
    pa_p64 lo1 = (pa_p64) 0x{P64_M1:016X} * c2;
    c0 = hi1 ^ c1 ^ k0; c1 = lo1; c2 = hi0 ^ c3 ^ k1; c3 = lo0;
  }}
  return w == 0u ? c0 : w == 1u ? c1 : w == 2u ? c2 : c3;
}}

/* unit u of a draw (its mode: polyarray/ops/random.py): the draw's first
   word is word s0 of the block of counter b (256 bits, b0 low); the half
   buffered before it is `kept` (`half` is a type in OpenCL), the high half
   of word qw of block q.
   attempt > 0: the same unit of the stream of key (k0 ^ FALLBACK, k1 +
   attempt - 1), which replaces a value NumPy would reject */
PA_P64_FN pa_p64 pa_philox4x64_unit(pa_p64 u, pa_p64 s0, pa_p64 b0, pa_p64 b1,
    pa_p64 b2, pa_p64 b3, pa_p64 q0, pa_p64 q1, pa_p64 q2, pa_p64 q3, pa_p64 k0,
    pa_p64 k1, pa_p64 kept, pa_p64 qw, pa_p64 mode, pa_p64 attempt)
{{
  unsigned int lg = (unsigned int) (mode >> 3) & 7u;
  unsigned int bits = (mode & 1u) ? 64u : 32u >> lg, o;
  pa_p64 t, c0, c1, c2, c3, carry;
  int in_half;
  if (mode & 2u) {{
    t = u >> 6; o = (unsigned int) (u & 63u);
    in_half = t == (pa_p64) 0x{HALF_WORD:X};
    t += s0;
  }} else if (mode & 1u) {{
    t = s0 + u; o = 0u; in_half = 0;
  }} else {{
    pa_p64 has = (mode >> 2) & 1u, v = u >> lg;
    o = (unsigned int) (u & ((1u << lg) - 1u)) * bits;
    in_half = has && v == 0;
    v -= has;
    t = s0 + (v >> 1);
    o += in_half ? 32u : 32u * (unsigned int) (v & 1u);
  }}
  if (in_half) {{
    if (attempt == 0) return (kept >> (o - 32u)) & ((((pa_p64) 1) << bits) - 1u);
    c0 = q0; c1 = q1; c2 = q2; c3 = q3; t = qw;
  }} else {{
    pa_p64 off = t >> 2;
    c0 = b0 + off; carry = c0 < off;
    c1 = b1 + carry; carry &= (pa_p64) (c1 == 0);
    c2 = b2 + carry; carry &= (pa_p64) (c2 == 0);
    c3 = b3 + carry;
  }}
  if (attempt) {{ k0 ^= (pa_p64) 0x{P64_FALLBACK:016X}; k1 += attempt - 1u; }}
  pa_p64 word = pa_philox4x64_word(c0, c1, c2, c3, k0, k1, (unsigned int) (t & 3u));
  return bits == 64u ? word : (word >> o) & ((((pa_p64) 1) << bits) - 1u);
}}
#endif
"""

_P64_POSITION = ("uint64 u, uint64 s0, uint64 b0, uint64 b1, uint64 b2, uint64 b3, "
                 "uint64 q0, uint64 q1, uint64 q2, uint64 q3, uint64 k0, uint64 k1, "
                 "uint64 kept, uint64 qw, uint64 mode")
_P64_ARGS = "u, s0, b0, b1, b2, b3, q0, q1, q2, q3, k0, k1, kept, qw, mode"

# Lemire's bounded integer in [0, rng] (NumPy's ``bounded_lemire_uint64`` and
# ``buffered_bounded_lemire_uint32/16/8``, ``use_masked=False``), the unit's
# width from the mode; rng == 0: 0 (no draw), rng == the unit's maximum:
# the unit.  Where NumPy would reject the product and draw again, the next
# attempts come from the fallback streams (pa_philox4x64_unit).
_P64_BOUNDED_C = f"""
pa_p64 x = pa_philox4x64_unit({_P64_ARGS}, 0);
unsigned int bits = (mode & 1u) ? 64u : 32u >> ((unsigned int) (mode >> 3) & 7u);
pa_p64 mask = bits == 64u ? ~(pa_p64) 0 : (((pa_p64) 1) << bits) - 1u;
pa_p64 excl = rng + 1u, hi = x, lo, attempt = 0;
if (rng == 0) hi = 0;
else if (rng != mask) for (;;) {{
  if (bits == 64u) {{ hi = PA_P64_MULHI(x, excl); lo = x * excl; }}
  else {{ lo = x * excl; hi = lo >> bits; lo &= mask; }}
  if (lo >= excl || lo >= (mask - rng) % excl) break;
  x = pa_philox4x64_unit({_P64_ARGS}, ++attempt);
}}
value = hi;
"""


def _mulhilo64(a, b):
    """The high and low 64 bits of ``a * b`` (uint64 arrays), by 32-bit halves."""
    a0, a1, b0, b1 = a & _LOW32, a >> 32, b & _LOW32, b >> 32
    w0 = a0 * b0
    t = a1 * b0 + (w0 >> 32)
    w1 = (t & _LOW32) + a0 * b1
    return a1 * b1 + (t >> 32) + (w1 >> 32), a * b


def _flat(*args):
    """The broadcast shape of ``args`` and each as a flat uint64 copy."""
    arrays = np.broadcast_arrays(*(np.asarray(a, U64) for a in args))
    shape = arrays[0].shape if arrays else ()
    return shape, [np.array(a, U64).reshape(-1) for a in arrays]


def philox4x64_block(c0, c1, c2, c3, k0, k1):
    """Philox4x64-10 of the counters ``(c0, .., c3)`` under the keys
    ``(k0, k1)`` (uint64 arrays, broadcast, flat): its four words."""
    _, (c0, c1, c2, c3, k0, k1) = _flat(c0, c1, c2, c3, k0, k1)
    m0, m1, w0, w1 = (np.uint64(v) for v in (P64_M0, P64_M1, P64_W0, P64_W1))
    with np.errstate(over="ignore"):
        for r in range(ROUNDS):
            if r:
                k0, k1 = k0 + w0, k1 + w1
            hi0, lo0 = _mulhilo64(m0, c0)
            hi1, lo1 = _mulhilo64(m1, c2)
            c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


def _p64_unit_reference(u, s0, b0, b1, b2, b3, q0, q1, q2, q3, k0, k1, kept, qw, mode,
                        attempt=0):
    """``pa_philox4x64_unit`` in NumPy (uint64 arrays, broadcast)."""
    shape, args = _flat(u, s0, b0, b1, b2, b3, q0, q1, q2, q3, k0, k1, kept, qw, mode,
                        attempt)
    u, s0, b0, b1, b2, b3, q0, q1, q2, q3, k0, k1, kept, qw, mode, attempt = args
    one = np.uint64(1)
    with np.errstate(over="ignore"):
        lg = (mode >> 3) & 7
        wide, explicit, has = mode & 1, (mode >> 1) & 1, (mode >> 2) & 1
        bits = np.where(wide != 0, 64, np.uint64(32) >> lg).astype(U64)
        v = u >> lg
        narrow_half = (has != 0) & (v == 0)
        v = v - has
        t = np.where(explicit != 0, (u >> 6) + s0,
                     np.where(wide != 0, s0 + u, s0 + (v >> 1)))
        o = np.where(explicit != 0, u & 63,
                     np.where(wide != 0, 0, (u & ((one << lg) - one)) * bits
                              + np.where(narrow_half, 32, 32 * (v & one))))
        in_half = np.where(explicit != 0, (u >> 6) == HALF_WORD, narrow_half & (wide == 0))
        mask = np.where(bits == 64, np.uint64(_MASK64), (one << (bits & 63)) - one)
        off = t >> 2
        c0 = b0 + off
        carry = (c0 < off).astype(U64)
        c1 = b1 + carry
        carry &= (c1 == 0)
        c2 = b2 + carry
        carry &= (c2 == 0)
        c3 = b3 + carry
        w = np.where(in_half, qw, t) & 3
        c0, c1, c2, c3 = (np.where(in_half, q, c) for q, c in
                          ((q0, c0), (q1, c1), (q2, c2), (q3, c3)))
        k0 = np.where(attempt != 0, k0 ^ np.uint64(P64_FALLBACK), k0)
        k1 = np.where(attempt != 0, k1 + attempt - one, k1)
        words = philox4x64_block(c0, c1, c2, c3, k0, k1)
        word = np.choose(w.astype(np.intp), words)
        value = np.where(bits == 64, word, (word >> (o & 63)) & mask)
        buffered = (kept >> ((o - 32) & 63)) & mask
        return np.where(in_half & (attempt == 0), buffered, value).reshape(shape)


def _p64_bounded_reference(*args):
    """``_P64_BOUNDED_C`` in NumPy: the rejected elements draw again from
    the fallback streams, a vectorized loop over those left."""
    shape, args = _flat(*args)
    position, rng = args[:-1], args[-1]
    mode = position[-1]
    x = _p64_unit_reference(*position)
    bits = np.where(mode & 1 != 0, 64, np.uint64(32) >> ((mode >> 3) & 7)).astype(U64)
    one = np.uint64(1)
    with np.errstate(over="ignore"):
        mask = np.where(bits == 64, np.uint64(_MASK64), (one << (bits & 63)) - one)
        excl = rng + one
        value = np.where(rng == 0, np.uint64(0), x)
        todo = np.flatnonzero((rng != 0) & (rng != mask))
        attempt = 0
        while todo.size:
            xs, ex, b, m = x[todo], excl[todo], bits[todo], mask[todo]
            hi64, lo64 = _mulhilo64(xs, ex)
            hi = np.where(b == 64, hi64, lo64 >> (b & 63))
            lo = np.where(b == 64, lo64, lo64 & m)
            done = (lo >= ex) | (lo >= (m - rng[todo]) % ex)
            value[todo[done]] = hi[done]
            todo = todo[~done]
            attempt += 1
            if todo.size:
                x[todo] = _p64_unit_reference(*(a[todo] for a in position), attempt)
    return value.reshape(shape)


PHILOX64 = elementwise_def(_P64_POSITION, "uint64 bits",
                           f"bits = pa_philox4x64_unit({_P64_ARGS}, 0)", "philox4x64_10",
                           preamble=_P64_PREAMBLE, reference=_p64_unit_reference)
PHILOX64_BOUNDED = elementwise_def(_P64_POSITION + ", uint64 rng", "uint64 value",
                                   _P64_BOUNDED_C, "philox4x64_10_lemire",
                                   preamble=_P64_PREAMBLE, reference=_p64_bounded_reference)

# ``low + range * u`` rounded twice, as NumPy's C computes it: compilers may
# fuse the product and the sum into one fma (OpenCL and CUDA do by default)
_AFFINE_PREAMBLE = """
#ifndef PA_AFFINE_RN
#define PA_AFFINE_RN
#if defined(__CUDACC__)
__device__ static inline double pa_affine_rn(double low, double range, double u)
{
  return __dadd_rn(low, __dmul_rn(range, u));
}
#else
static inline double pa_affine_rn(double low, double range, double u)
{
#pragma OPENCL FP_CONTRACT OFF
  return low + range * u;
}
#endif
#endif
"""


def _affine_reference(low, range_, u):
    return np.asarray(low, F64) + np.asarray(range_, F64) * np.asarray(u, F64)


AFFINE = elementwise_def("float64 low, float64 range, float64 u", "float64 out",
                         "out = pa_affine_rn(low, range, u)", "affine_rn",
                         preamble=_AFFINE_PREAMBLE, reference=_affine_reference)


def affine(low, range_, u) -> N.Node:
    """``low + range * u`` (float64; floats or float64 nodes, broadcast),
    the product rounded before the sum on every target."""
    (out,) = elementwise(AFFINE, [low, range_, u])
    return out


class Draw64:
    """Where one draw of NumPy's Philox starts, as kernel data: the stream
    position ``start`` of its first word (``4 * (counter - 1) + buffer_pos``
    in NumPy's state), the key, and the 32-bit half buffered before it
    (``half``, the high half of the word at position ``half_at``).  Data
    values are kernel arguments, so every draw of one shape, dtype and kind
    is one program."""

    def __init__(self, start, key, half=0, half_at=0, mode=0, rng=0):
        s, s0 = divmod(start % 2**258, 4)
        q, qw = divmod(half_at % 2**258, 4)
        words = [s0, *words256(s + 1), *words256(q + 1), key[0], key[1], half, qw,
                 mode, rng % 2**64]
        leaf = array(np.array(words, U64))
        self._args = [remap(leaf, (), (k,), "random: Philox state") for k in range(len(words))]

    def position(self, u, mode=None) -> list:
        """The arguments locating unit ``u`` (a uint64 node) of the draw:
        ``mode`` per element (a node), else the draw's."""
        return [u] + self._args[:13] + [self._args[13] if mode is None else mode]

    def bits(self, u, mode=None) -> N.Node:
        """The unit (its low bits) at ``u``, as uint64."""
        (bits,) = elementwise(PHILOX64, self.position(u, mode))
        return bits

    def bounded(self, u, mode=None, rng=None) -> N.Node:
        """Lemire's integer in ``[0, rng]`` from the unit at ``u`` (NumPy's
        numbers unless NumPy would reject it): ``rng`` per element (a uint64
        node), else the draw's."""
        (value,) = elementwise(PHILOX64_BOUNDED, self.position(u, mode)
                               + [self._args[14] if rng is None else rng])
        return value


def words256(x) -> list:
    """An int modulo 2**256 as four 64-bit words, low first (NumPy's counter)."""
    x %= 2**256
    return [(x >> (64 * k)) & _MASK64 for k in range(4)]


def offset_by(value, low, dtype) -> N.Node:
    """``low + value`` in ``dtype`` (wrapping through uint64)."""
    base = astype(low, U64) if isinstance(low, N.Node) else np.uint64(int(low) % 2**64)
    return astype(U("add", value, base), dtype)


__all__ = ["AFFINE", "Draw64", "EXPLICIT", "HALF_WORD", "HAS_HALF", "PHILOX", "PHILOX64",
           "PHILOX64_BOUNDED", "Stream", "WIDE", "affine", "bounded", "element_index",
           "integers", "offset_by", "philox", "philox4x64_block", "philox_reference",
           "scaled", "shape_of", "standard_exponential", "standard_normal", "uniform01",
           "words256"]
