"""``pa.random``: NumPy's random API (the ``Generator`` of ``default_rng``,
NumPy's ``Philox`` bit generator, and the legacy module functions on a
global generator) as lazy arrays.

Both bit generators are counter-based: element ``i`` of a draw is a
function of its place in the stream, the key and the state before the draw,
so a draw is an elementwise node that fuses with the work around it and
gives the same numbers on every target, in any process, for the same seed.
The state lives here, on the host; each call moves it past its draw.

* ``Philox4x32`` (``default_rng``'s; Philox4x32-10, as cuRAND's, JAX's and
  CuPy's): not NumPy's numbers (NumPy's ``default_rng`` is the sequential
  ``PCG64``), cheaper on GPUs.
* ``Philox`` (NumPy's Philox4x64-10): ``Generator(Philox(seed))`` gives
  NumPy's numbers for ``random``, ``uniform``, ``integers`` and ``choice``
  with replacement, and NumPy's state after them.

See ``docs/design/random.md``; the nodes are :mod:`polyarray.ops.random`."""
from __future__ import annotations

import math
import numbers
import operator

import numpy as np

from .array import Array, node_of
from .ir import nodes as N
from .ops.axes import normalize_axis_index
from .ops import random as R
from .ops.creation import array as _data, as_node
from .ops.elementwise import apply_ufunc as _U, astype as _astype
from .ops.indexing import take as _take
from .ops.ordering import argsort as _argsort, searchsorted as _searchsorted
from .ops.shapes import reshape as _reshape

__all__ = ["Generator", "Philox", "Philox4x32", "default_rng", "seed", "rand", "randn",
           "random", "random_sample", "randint", "uniform", "normal", "standard_normal",
           "exponential", "standard_exponential", "choice", "permutation", "shuffle"]


def __dir__():
    """Its functions alone (the names it imports stay unlisted)."""
    return list(__all__)


_FLOATS = (np.dtype(np.float64), np.dtype(np.float32))


def _size(size) -> tuple:
    """NumPy's ``size``: None (one value, a 0-d array here), an int or a
    sequence of ints."""
    if size is None:
        return ()
    if isinstance(size, (numbers.Integral, np.integer)) and not isinstance(size, bool):
        size = (size,)
    try:
        shape = tuple(operator.index(n) for n in size)
    except TypeError:
        raise TypeError(f"expected a sequence of integers or a single integer, "
                        f"got '{size}'") from None
    if any(n < 0 for n in shape):
        raise ValueError("negative dimensions are not allowed")
    return shape


def _float_dtype(dtype, what):
    dt = np.dtype(dtype)
    if dt not in _FLOATS:
        raise TypeError(f"Unsupported dtype {dt!r} for {what}")
    return dt


def _known(x):
    """The values of a parameter known now (a scalar, host data), else None."""
    if isinstance(x, Array):
        x = x.node
    if isinstance(x, N.DataWrapper):
        return x.data if isinstance(x.data, np.ndarray) else None
    return None if isinstance(x, N.Node) else np.asarray(x)


def _parameter(x):
    """A distribution parameter: a Python float, or a float64 node."""
    if isinstance(x, (numbers.Real, np.generic)) and not isinstance(x, (bool, np.bool_)) \
            and np.ndim(x) == 0:
        return float(x)
    return _astype(as_node(node_of(x)), np.float64)


def _nonnegative(x, name):
    values = _known(x)
    if values is not None and np.any(values < 0):
        raise ValueError(f"{name} < 0")


def _seed_sequence(seed):
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, (np.random.BitGenerator, np.random.Generator)):
        bits = seed.bit_generator if isinstance(seed, np.random.Generator) else seed
        return bits.seed_seq
    return np.random.SeedSequence(seed)


_F64, _F32, _I64 = np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.int64)


# -- bit generators ---------------------------------------------------------------
# What a Generator asks of its bit generator (each call builds the nodes of
# one draw from the state before it, then moves the state past it):
#   _uniform01(shape, dtype)   floats in [0, 1)
#   _integers(shape, lo, hi, dtype, endpoint, known)   validated bounds
#   _stream(shape) / _done(stream)   64 random bits per element (bits(half, halves))
#                                     for the draws built on raw bits

class Philox4x32:
    """The default bit generator (``default_rng``'s): Philox4x32-10, as
    cuRAND's, JAX's and CuPy's.  The key comes from
    ``np.random.SeedSequence(seed)``; draw ``d`` of a generator reads the
    counter blocks ``(b, d)``, each shared by up to 4 neighbouring elements
    (``ops/random.py``), so each call is one draw whatever its size.  Cheaper on GPUs than NumPy's Philox (32-bit
    multiplications), and not NumPy's numbers: NumPy's ``default_rng`` is
    PCG64, a sequential generator no parallel one can reproduce."""

    def __init__(self, seed=None):
        self._seed_seq = _seed_sequence(seed)
        words = self._seed_seq.generate_state(2, np.uint32)
        self._key = int(words[0]) | int(words[1]) << 32
        self._draws = 0

    @property
    def seed_seq(self):
        """The ``SeedSequence`` the key came from."""
        return self._seed_seq

    def __repr__(self):
        return f"Philox4x32(key={self._key:#018x}, draws={self._draws})"

    def _stream(self, shape) -> R.Stream:
        draw, self._draws = self._draws, self._draws + 1
        return R.Stream(shape, draw, self._key)

    def _done(self, stream):
        pass

    def _uniform01(self, shape, dtype):
        return R.uniform01(self._stream(shape), dtype)

    def _integers(self, shape, lo, hi, dtype, endpoint, known):
        if isinstance(lo, int) and isinstance(hi, int):
            span = hi - lo + int(endpoint)
        else:
            u64 = np.dtype(np.uint64)
            span = _U("subtract", *(_astype(b, u64) if not isinstance(b, int)
                                    else np.uint64(b % 2**64) for b in (hi, lo)))
            if endpoint:
                span = _U("add", span, np.uint64(1))
        return R.integers(self._stream(shape), lo, span, dtype, dtype.itemsize == 8)


class Philox:
    """NumPy's ``np.random.Philox`` (Philox4x64-10): seeded as NumPy seeds
    it (``SeedSequence(seed).generate_state(2, uint64)`` is the key, the
    counter 0; or ``key=``/``counter=`` set directly), with NumPy's state,
    ``advance``, ``jumped`` and ``random_raw``.  ``Generator(Philox(seed))``
    gives ``np.random.Generator(np.random.Philox(seed))``'s numbers for
    ``random``, ``uniform``, ``integers`` and ``choice`` with replacement,
    and leaves the same state (see ``docs/design/random.md`` for where it
    cannot: a value NumPy rejects and draws again)."""

    def __init__(self, seed=None, counter=None, key=None):
        numpy_philox = np.random.Philox(seed, counter=counter, key=key)
        self._seed_seq = numpy_philox.seed_seq
        self.state = numpy_philox.state

    @classmethod
    def _of(cls, numpy_philox):
        """A copy of a NumPy ``Philox``'s state and seed sequence."""
        bits = cls(key=0)
        bits.state = numpy_philox.state
        bits._seed_seq = numpy_philox.seed_seq
        return bits

    @property
    def seed_seq(self):
        """The ``SeedSequence`` the key came from (None when ``key`` was given)."""
        return self._seed_seq

    def __repr__(self):
        state = self.state["state"]
        return f"Philox(counter={_int256(state['counter']):#x}, key={_int256(state['key']):#x})"

    # -- NumPy's state ----------------------------------------------------------
    # ``_pos``: the stream position of the next word, ``4 * (counter - 1) +
    # buffer_pos``; ``_has``/``_half``: NumPy's ``has_uint32``/``uinteger``,
    # ``_half_at``: the position of the word whose high half that is;
    # ``_buffer``: what NumPy's buffer shows: "zeros", "block" (the block of
    # the counter) or the words a state set
    @property
    def state(self) -> dict:
        """NumPy's state dict: counter, key, buffer, buffer_pos, has_uint32,
        uinteger."""
        pos = self._pos % 2**258
        counter, buffer_pos = (pos // 4, 4) if pos % 4 == 0 else (pos // 4 + 1, pos % 4)
        counter %= 2**256
        if self._buffer == "zeros":
            buffer = np.zeros(4, np.uint64)
        elif self._buffer == "block":
            buffer = self._block(counter)
        else:
            buffer = np.array(self._buffer, np.uint64)
        return {"bit_generator": "Philox",
                "state": {"counter": np.array(R.words256(counter), np.uint64),
                          "key": np.array(self._key, np.uint64)},
                "buffer": buffer, "buffer_pos": buffer_pos, "has_uint32": self._has,
                "uinteger": self._half}

    @state.setter
    def state(self, value):
        if not isinstance(value, dict):
            raise TypeError("state must be a dict")
        if value.get("bit_generator", "") != "Philox":
            raise ValueError("state must be for a Philox PRNG")
        counter = _int256(value["state"]["counter"])
        key = tuple(int(np.uint64(k)) for k in value["state"]["key"])
        buffer = tuple(int(np.uint64(b)) for b in value["buffer"])
        buffer_pos = int(value["buffer_pos"])
        if not 0 <= buffer_pos <= 4:
            raise ValueError(f"buffer_pos must be in [0, 4], got {buffer_pos}")
        self._key = key
        block = [int(w) for w in self._block(counter)]
        if buffer[buffer_pos:] != tuple(block[buffer_pos:]):
            raise ValueError("the state's buffer holds words other than the block of its "
                             "counter: polyarray computes the buffered words from the "
                             "counter, so it takes the states NumPy's Philox makes")
        self._pos = (4 * (counter - 1) + buffer_pos) % 2**258
        self._buffer = "block" if buffer == tuple(block) else \
            "zeros" if not any(buffer) else buffer
        self._has = int(value["has_uint32"])
        self._half = int(value["uinteger"]) & 0xFFFFFFFF
        # the word of the buffered half: the one before the next, as NumPy
        # leaves it unless 64-bit draws followed (read only where a value
        # NumPy would reject is drawn again, see ops/random.py)
        self._half_at = self._pos - 1

    def _block(self, counter) -> np.ndarray:
        words = R.philox4x64_block(*R.words256(counter), *self._key)
        return np.array([w[0] for w in words], np.uint64)

    def _word(self, pos) -> int:
        """The stream's word at position ``pos``, computed here."""
        return int(self._block(pos // 4 + 1)[pos % 4])

    def advance(self, delta):
        """Advance the counter by ``delta`` (NumPy's ``advance``: as if
        ``4 * delta`` words were drawn, buffers reset)."""
        self._reset(self._numpy().advance(delta))
        return self

    def jumped(self, jumps=1):
        """A new ``Philox``, its counter advanced by ``jumps * 2**128``."""
        bits = type(self)(key=0)
        bits._seed_seq = self._seed_seq
        bits._reset(self._numpy().jumped(jumps), self._key)
        return bits

    def random_raw(self, size=None, output=True):
        """The stream's next 64-bit words (uint64; a 0-d array for
        ``size=None``); ``output=False`` skips them."""
        shape = _size(size)
        words = R.Draw64(self._pos, self._key, mode=R.WIDE).bits(R.element_index(shape))
        self._advance(math.prod(shape))
        return Array(words) if output else None

    def _numpy(self):
        """NumPy's Philox at this counter (for its checks and arithmetic)."""
        counter = _int256(self.state["state"]["counter"])
        return np.random.Philox(key=_int256(self._key, 2), counter=counter)

    def _reset(self, numpy_philox, key=None):
        """Take a NumPy Philox's counter (key), buffers emptied as NumPy does."""
        counter = _int256(numpy_philox.state["state"]["counter"])
        self._key = key or self._key
        self._pos, self._buffer = 4 * counter, "zeros"
        self._has = self._half = 0
        self._half_at = self._pos - 1

    # -- draws ------------------------------------------------------------------
    def _start(self, mode, rng=0) -> R.Draw64:
        return R.Draw64(self._pos, self._key, self._half if self._has else 0, self._half_at,
                        mode, rng)

    def _narrow(self, lg) -> int:
        """The mode of units of ``32 >> lg`` bits, from NumPy's 32-bit halves."""
        return lg << 3 | (R.HAS_HALF if self._has else 0)

    def _advance(self, words, used_half=False, halved=None, buffered=False):
        """Past a draw that took ``words`` new words and the buffered half
        (``used_half``); ``halved``: the last word (relative to the draw's
        first) it cut into 32-bit halves, whose high half is NumPy's
        ``uinteger`` from then on, still buffered if ``buffered``."""
        if used_half:
            self._has = 0
        if halved is not None:
            self._half_at = self._pos + halved
            self._half = self._word(self._half_at % 2**258) >> 32
            self._has = int(buffered)
        if words:
            self._pos = (self._pos + words) % 2**258
            self._buffer = "block"

    def _take_halves(self, count):
        """Past ``count`` draws of 32-bit halves (``next_uint32``)."""
        if count == 0:
            return
        used = self._has
        fresh = count - used
        words = (fresh + 1) // 2
        self._advance(words, bool(used), words - 1 if fresh else None, fresh % 2 == 1)

    def _stream(self, shape):
        return _Words(self, shape)

    def _done(self, stream):
        self._advance(stream.size * stream.lanes)

    def _uniform01(self, shape, dtype):
        index = R.element_index(shape)
        if dtype == _F64:
            words = self._start(R.WIDE).bits(index)
            self._advance(math.prod(shape))
            return R.scaled(words, 11, 2.0**-53, _F64)
        halves = self._start(self._narrow(0)).bits(index)
        self._take_halves(math.prod(shape))
        return R.scaled(halves, 8, 2.0**-24, _F32)

    def _integers(self, shape, lo, hi, dtype, endpoint, known):
        """NumPy's bounded integers (Lemire's method, ``use_masked=False``):
        the unit by dtype and range as NumPy's ``random_bounded_*_fill``
        and ``_rand_*_broadcast`` take it."""
        n, closed = math.prod(shape), int(not endpoint)
        lg = 5 if dtype.kind == "b" else {1: 2, 2: 1, 4: 0}.get(dtype.itemsize)
        if n == 0:
            return _data(np.zeros(shape, dtype))
        index = R.element_index(shape)
        if isinstance(lo, int) and isinstance(hi, int):
            rng = hi - lo - closed
            if rng == 0:
                return _data(np.full(shape, lo, dtype))
            if lg is None and rng > 0xFFFFFFFF:
                value = self._start(R.WIDE, rng).bounded(index)
                self._advance(n)
            else:
                lg = lg or 0
                value = self._start(self._narrow(lg), rng).bounded(index)
                self._take_halves(-(-n // (1 << lg)))
            return R.offset_by(value, lo, dtype)
        if known[0] is not None and known[1] is not None:
            rng = np.broadcast_to(known[1] - known[0] - closed, shape).astype(np.uint64)
            return R.offset_by(self._known_ranges(rng, lg, index), lo, dtype)
        # lazy bounds: every element takes a unit of its dtype, 64 bits for
        # 64-bit dtypes (NumPy's numbers when no range is a single value, and,
        # for 64-bit dtypes, every range is above 2**32 values)
        u64 = np.dtype(np.uint64)
        span = _U("subtract", *(_astype(b, u64) if not isinstance(b, int)
                                else np.uint64(b % 2**64) for b in (hi, lo)))
        rng = span if endpoint else _U("subtract", span, np.uint64(1))
        if lg is None:
            value = self._start(R.WIDE).bounded(index, rng=rng)
            self._advance(n)
        else:
            value = self._start(self._narrow(lg)).bounded(index, rng=rng)
            self._take_halves(-(-n // (1 << lg)))
        return R.offset_by(value, lo, dtype)

    def _known_ranges(self, rng, lg, index):
        """Bounded integers for ranges known now (``rng``, uint64 of the
        output's shape): the units taken in C order by the elements whose
        range holds more than one value, for 64-bit dtypes ``wide`` (64 bits)
        or ``narrow`` (32) by range (NumPy's ``random_bounded_uint64``)."""
        flat = rng.reshape(-1)
        wide = (flat > 0xFFFFFFFF) if lg is None else np.zeros(flat.shape, bool)
        narrow = (flat != 0) & ~wide
        ranges = _data(rng)
        if not narrow.any() or not wide.any():
            takes = wide if wide.any() else narrow
            units = _exclusive_count(takes)
            u = index if takes.all() else _data(units.astype(np.uint64).reshape(rng.shape))
            if wide.any():
                value = self._start(R.WIDE).bounded(u, rng=ranges)
                self._advance(int(takes.sum()))
            else:
                lg = lg or 0
                value = self._start(self._narrow(lg)).bounded(u, rng=ranges)
                self._take_halves(-(-int(takes.sum()) // (1 << lg)))
            return value
        # 32- and 64-bit units mixed: each element's word and half, as
        # NumPy's next_uint32 and next_uint64 interleave
        has = self._has
        before32, before64 = _exclusive_count(narrow), _exclusive_count(wide)
        in_half = narrow & (before32 == 0) & bool(has)
        fresh = np.maximum(before32 - has, 0)
        pointer = before64 + (fresh + 1) // 2
        drawn = np.flatnonzero(narrow & ~in_half)
        word = pointer.copy()
        odd = drawn[fresh[drawn] % 2 == 1]
        word[odd] = pointer[drawn][fresh[odd] - 1]
        position = word.astype(np.uint64) << np.uint64(6)
        position[odd] |= np.uint64(32)
        position[in_half] = np.uint64(R.HALF_WORD << 6 | 32)
        mode = np.where(wide, R.EXPLICIT | R.WIDE, R.EXPLICIT).astype(np.uint64)
        value = self._start(R.EXPLICIT).bounded(
            _data(position.reshape(rng.shape)), _data(mode.reshape(rng.shape)), ranges)
        total = len(drawn)
        last = int(word[drawn[-1]]) if total else None
        self._advance(int(wide.sum()) + (total + 1) // 2, bool(in_half.any()), last,
                      total % 2 == 1)
        return value


class _Words:
    """The raw bits of a draw of NumPy's Philox for the draws that are
    NumPy's in distribution only: ``bits(h)`` is the stream's words
    ``h * size`` to ``h * size + size - 1`` of the draw, one per element."""

    def __init__(self, bit_generator, shape):
        self.shape, self.size, self.lanes = tuple(shape), math.prod(shape), 0
        self._draw = bit_generator._start(R.WIDE)
        self._index = R.element_index(self.shape)

    def bits(self, half=0, halves=1):
        """Words ``half * size`` on (``halves``: how many the draw takes per
        element; the words are consecutive here whatever it is)."""
        self.lanes = max(self.lanes, half + 1)
        u = self._index if half == 0 else _U("add", self._index, np.uint64(half * self.size))
        return self._draw.bits(u)


def _exclusive_count(flags) -> np.ndarray:
    """How many of ``flags`` are set before each (int64)."""
    flags = flags.astype(np.int64)
    return np.cumsum(flags) - flags


def _int256(words, n=4) -> int:
    """NumPy's little-endian uint64 words as one int."""
    return sum(int(np.uint64(w)) << (64 * k) for k, w in enumerate(list(words)[:n]))


def _bit_generator(x):
    """A Generator's bit generator: ours as given, a NumPy ``Philox`` (or a
    NumPy ``Generator`` over one) copied, else a ``Philox4x32`` seeded from
    ``x`` (a seed, a ``SeedSequence``, another NumPy generator's seed
    sequence)."""
    if isinstance(x, (Philox4x32, Philox)):
        return x
    numpy_bits = x.bit_generator if isinstance(x, np.random.Generator) else x
    if isinstance(numpy_bits, np.random.Philox):
        return Philox._of(numpy_bits)
    return Philox4x32(x)


class Generator:
    """A random generator (NumPy's ``Generator`` API): every method returns
    a lazy array of a new draw.

    ``Generator(bit_generator)``: a ``Philox4x32`` (the default, and what a
    seed gives: ``Generator(seed)`` is ``default_rng(seed)``) or NumPy's
    ``Philox`` (``pa.random.Philox``, or a NumPy one, whose state is
    copied), which gives NumPy's numbers for ``random``, ``uniform``,
    ``integers`` and ``choice`` with replacement.  ``size=None`` gives a 0-d
    array (NumPy gives a scalar)."""

    def __init__(self, bit_generator=None):
        self._bits = _bit_generator(bit_generator)

    @property
    def bit_generator(self):
        """The bit generator (``Philox4x32`` or ``Philox``)."""
        return self._bits

    def __repr__(self):
        return f"Generator({type(self._bits).__name__})"

    def _draw(self, shape, build):
        """A draw built on raw bits: ``build(stream)``, then the state past it."""
        stream = self._bits._stream(shape)
        node = build(stream)
        self._bits._done(stream)
        return node

    # -- floats ------------------------------------------------------------------
    def random(self, size=None, dtype=np.float64, out=None) -> Array:
        """Floats uniform in [0, 1): 53 random bits (float64) or 24 (float32)."""
        dt = _float_dtype(dtype, "random")
        shape = _size(size) if out is None or size is not None else tuple(out.shape)
        return _into(out, Array(self._bits._uniform01(shape, dt)))

    def uniform(self, low=0.0, high=1.0, size=None) -> Array:
        """Floats uniform in [low, high): ``low + (high - low) * random()``,
        float64, the product rounded before the sum as NumPy's; ``low``/``high``
        may be arrays (broadcast)."""
        lo, hi = _parameter(low), _parameter(high)
        if isinstance(lo, float) and isinstance(hi, float):
            span = known = hi - lo
            if not math.isfinite(span):
                raise OverflowError("high - low range exceeds valid bounds")
        else:
            values, known = [_known(b) for b in (low, high)], None
            if values[0] is not None and values[1] is not None:
                with np.errstate(all="ignore"):
                    known = np.subtract(np.asarray(values[1], np.float64),
                                        np.asarray(values[0], np.float64))
                if not np.all(np.isfinite(known)):
                    raise OverflowError("Range exceeds valid bounds")
            span = _U("subtract", hi, lo)
        if known is not None and np.any(np.signbit(known)):
            raise ValueError("high - low < 0")
        shape = R.shape_of(lo, hi, size=_size(size) if size is not None else None)
        u = self._bits._uniform01(shape, _F64)
        return Array(R.affine(lo, span, u))

    def standard_normal(self, size=None, dtype=np.float64, out=None) -> Array:
        """Standard normal floats, by Box-Muller (not NumPy's ziggurat)."""
        dt = _float_dtype(dtype, "standard_normal")
        shape = _size(size) if out is None or size is not None else tuple(out.shape)
        return _into(out, Array(self._draw(shape, lambda s: R.standard_normal(s, dt))))

    def normal(self, loc=0.0, scale=1.0, size=None) -> Array:
        """Normal floats, ``loc + scale * standard_normal()`` (float64);
        ``loc``/``scale`` may be arrays (broadcast)."""
        _nonnegative(scale, "scale")
        mu, sigma = _parameter(loc), _parameter(scale)
        shape = R.shape_of(mu, sigma, size=_size(size) if size is not None else None)
        z = self._draw(shape, lambda s: R.standard_normal(s, _F64))
        return Array(_U("add", mu, _U("multiply", sigma, z)))

    def standard_exponential(self, size=None, dtype=np.float64, method="zig",
                             out=None) -> Array:
        """Exponential floats of mean 1, by inversion (``-log u``) whatever
        ``method``."""
        dt = _float_dtype(dtype, "standard_exponential")
        shape = _size(size) if out is None or size is not None else tuple(out.shape)
        return _into(out, Array(self._draw(shape, lambda s: R.standard_exponential(s, dt))))

    def exponential(self, scale=1.0, size=None) -> Array:
        """Exponential floats of mean ``scale`` (float64; an array broadcasts)."""
        _nonnegative(scale, "scale")
        beta = _parameter(scale)
        shape = R.shape_of(beta, size=_size(size) if size is not None else None)
        e = self._draw(shape, lambda s: R.standard_exponential(s, _F64))
        return Array(_U("multiply", beta, e))

    # -- integers ----------------------------------------------------------------
    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False) -> Array:
        """Integers uniform in [low, high) (``endpoint=True``: [low, high]),
        without modulo bias: the high bits of ``X * range`` (``Philox4x32``:
        ``X`` of 64 bits, 128 for 64-bit dtypes, no rejection; ``Philox``:
        NumPy's Lemire method).  ``low``/``high`` may be arrays; data are
        checked now, lazy arrays are not."""
        dt = np.dtype(dtype)
        if dt.kind not in "biu":
            raise TypeError(f"Unsupported dtype {dt!r} for integers")
        if high is None:
            low, high = 0, low
        info = (0, 1) if dt.kind == "b" else (int(np.iinfo(dt).min), int(np.iinfo(dt).max))
        known = [_known(b) for b in (low, high)]
        known = [None if v is None else np.asarray(v).astype(np.int64).astype(object)
                 if v.dtype.kind == "f" else v.astype(object) for v in known]
        if known[0] is not None and np.any(known[0] < info[0]):
            raise ValueError(f"low is out of bounds for {dt.name}")
        if known[1] is not None and np.any(known[1] > info[1] + (not endpoint)):
            raise ValueError(f"high is out of bounds for {dt.name}")
        if known[0] is not None and known[1] is not None \
                and np.any(known[1] - known[0] + int(endpoint) < 1):
            raise ValueError("low > high" if endpoint else "low >= high")
        lo, hi = (_bound(b) for b in (low, high))
        shape = R.shape_of(*(b for b in (lo, hi) if not isinstance(b, int)),
                           size=_size(size) if size is not None else None)
        return Array(self._bits._integers(shape, lo, hi, dt, endpoint, known))

    # -- sampling ----------------------------------------------------------------
    def permutation(self, x, axis=0) -> Array:
        """A random permutation of ``range(x)`` (an int), or ``x`` shuffled
        along ``axis``: the order that sorts one random 64-bit key per
        position (ties, of probability about ``n**2 / 2**65``, keep their
        order)."""
        if isinstance(x, (numbers.Integral, np.integer)) and not isinstance(x, bool):
            return Array(self._order(operator.index(x)))
        node = as_node(node_of(x))
        axis = normalize_axis_index(axis, node.ndim)
        return Array(_take(node, self._order(node.shape[axis]), axis))

    def shuffle(self, x, axis=0) -> None:
        """Shuffle the polyarray array ``x`` in place along ``axis``."""
        if not isinstance(x, Array):
            raise TypeError(f"shuffle: x must be a polyarray array (it is written in "
                            f"place), got {type(x).__name__}")
        if x.ndim == 0:
            raise TypeError("object of type 'polyarray.Array' (0-d) has no len()")
        x[...] = self.permutation(x, axis)

    def choice(self, a, size=None, replace=True, p=None, axis=0, shuffle=True) -> Array:
        """Random samples of ``a`` (an int: ``range(a)``) along ``axis``:
        with replacement uniform ``integers`` or, with ``p``, the inverse
        of its cumulative sum; without, the first of a ``permutation``.
        ``p`` must be data (it is checked now); ``replace=False`` with
        ``p`` is not supported."""
        shape = _size(size)
        if isinstance(a, (numbers.Integral, np.integer)) and not isinstance(a, bool):
            n, node = operator.index(a), None
            if n <= 0 and (n < 0 or math.prod(shape)):
                raise ValueError("a must be a positive integer unless no samples are taken")
        else:
            node = as_node(node_of(a))
            if node.ndim == 0:
                raise ValueError("a must be 1-dimensional or an integer")
            axis = normalize_axis_index(axis, node.ndim)
            n = node.shape[axis]
            if n == 0 and math.prod(shape):
                raise ValueError("a cannot be empty unless no samples are taken")
        count = math.prod(shape)
        if p is not None:
            if not replace:
                raise NotImplementedError("choice: replace=False with p is not supported")
            idx = self._weighted(n, p, shape)
        elif replace:
            idx = self._bits._integers(shape, 0, max(n, 1), _I64, False,
                                       [np.asarray(0, object), np.asarray(max(n, 1), object)]) \
                if count else _data(np.zeros(shape, np.int64))
        else:
            if count > n:
                raise ValueError("Cannot take a larger sample than population when replace "
                                 "is False")
            order = self._order(n)
            idx = _reshape(_take(order, _data(np.arange(count))), shape)
        if node is None:
            return Array(idx)
        return Array(_take(node, idx, axis))

    def _order(self, n):
        """A random permutation of ``range(n)`` (int64)."""
        return self._draw((n,), lambda s: _argsort(s.bits()))

    def _weighted(self, n, p, shape):
        p = np.asarray(node_of(p).data if hasattr(node_of(p), "data") else p, np.float64)
        if p.ndim != 1:
            raise ValueError("p must be 1-dimensional")
        if p.size != n:
            raise ValueError("a and p must have same size")
        if np.any(p < 0) or np.any(np.isnan(p)):
            raise ValueError("Probabilities are not non-negative")
        if abs(p.sum() - 1.0) > np.sqrt(np.finfo(np.float64).eps):
            raise ValueError("Probabilities do not sum to 1. See Notes section of docstring "
                             "for more information.")
        cdf = np.cumsum(p)
        cdf /= cdf[-1]
        u = self._bits._uniform01(shape, _F64)
        idx = _searchsorted(_data(cdf), u, "right")
        return _U("minimum", idx, n - 1)


def _bound(b):
    """An integer bound: a Python int (NumPy converts floats), or a node."""
    if isinstance(b, (numbers.Real, np.generic)) and np.ndim(b) == 0:
        return int(b)
    node = as_node(node_of(b))
    if node.dtype.kind == "f":
        node = _astype(node, np.int64)
    return node


def _into(out, result):
    if out is None:
        return result
    if not isinstance(out, Array):
        raise TypeError(f"out must be a polyarray array, got {type(out).__name__}")
    if out.shape != result.shape or out.dtype != result.dtype:
        raise ValueError(f"out has shape {out.shape} and dtype {out.dtype}; the result has "
                         f"{result.shape} and {result.dtype}")
    out[...] = result
    return out


def default_rng(seed=None) -> Generator:
    """A new ``Generator`` over ``Philox4x32`` seeded from ``seed`` as NumPy's
    ``default_rng`` seeds (``np.random.SeedSequence``); a ``pa.random.Generator``
    is returned as it is, a bit generator (``pa.random.Philox``, a NumPy
    ``Philox``) is wrapped."""
    if isinstance(seed, Generator):
        return seed
    return Generator(seed)


# -- the legacy module functions, on one global generator --------------------------

_GLOBAL = [Generator()]


def seed(seed=None) -> None:
    """Reseed the global generator of the module functions (``np.random.seed``)."""
    if seed is not None and np.any(np.asarray(seed, dtype=object) < 0):
        raise ValueError("Seed must be between 0 and 2**32 - 1")
    _GLOBAL[0] = Generator(seed)


def rand(*dims) -> Array:
    """Floats uniform in [0, 1) of shape ``dims`` (``np.random.rand``)."""
    return _GLOBAL[0].random(tuple(operator.index(d) for d in dims))


def randn(*dims) -> Array:
    """Standard normal floats of shape ``dims`` (``np.random.randn``)."""
    return _GLOBAL[0].standard_normal(tuple(operator.index(d) for d in dims))


def random(size=None) -> Array:
    """Floats uniform in [0, 1) (``np.random.random``)."""
    return _GLOBAL[0].random(size)


random_sample = random


def randint(low, high=None, size=None, dtype=int) -> Array:
    """Integers uniform in [low, high) (``np.random.randint``)."""
    return _GLOBAL[0].integers(low, high, size, dtype)


def uniform(low=0.0, high=1.0, size=None) -> Array:
    """Floats uniform in [low, high) (``np.random.uniform``)."""
    return _GLOBAL[0].uniform(low, high, size)


def normal(loc=0.0, scale=1.0, size=None) -> Array:
    """Normal floats (``np.random.normal``)."""
    return _GLOBAL[0].normal(loc, scale, size)


def standard_normal(size=None) -> Array:
    """Standard normal floats (``np.random.standard_normal``)."""
    return _GLOBAL[0].standard_normal(size)


def exponential(scale=1.0, size=None) -> Array:
    """Exponential floats of mean ``scale`` (``np.random.exponential``)."""
    return _GLOBAL[0].exponential(scale, size)


def standard_exponential(size=None) -> Array:
    """Exponential floats of mean 1 (``np.random.standard_exponential``)."""
    return _GLOBAL[0].standard_exponential(size)


def choice(a, size=None, replace=True, p=None) -> Array:
    """Random samples of ``a`` (``np.random.choice``)."""
    return _GLOBAL[0].choice(a, size, replace, p)


def permutation(x) -> Array:
    """A random permutation (``np.random.permutation``)."""
    return _GLOBAL[0].permutation(x)


def shuffle(x) -> None:
    """Shuffle the polyarray array ``x`` in place along axis 0 (``np.random.shuffle``)."""
    _GLOBAL[0].shuffle(x)
