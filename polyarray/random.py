"""``pa.random``: NumPy's random API (the ``Generator`` of ``default_rng``,
and the legacy module functions on a global generator) as lazy arrays.

The generator is counter-based (Philox4x32-10, as cuRAND's, JAX's and
CuPy's): element ``i`` of a draw is a function of ``(i, the draw's number,
the key)``, so a draw is an elementwise node that fuses with the work
around it and gives the same numbers on every target, in any process,
for the same seed.  The state is the key (from ``np.random.SeedSequence(seed)``)
and the number of draws so far, held here; each call is a new draw.  The
numbers are not NumPy's (NumPy's ``PCG64`` and ``MT19937`` are
sequential).  See ``docs/design/random.md``; the nodes are
:mod:`polyarray.ops.random`."""
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

__all__ = ["Generator", "default_rng", "seed", "rand", "randn", "random", "random_sample",
           "randint", "uniform", "normal", "standard_normal", "exponential",
           "standard_exponential", "choice", "permutation", "shuffle"]


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


class Generator:
    """A random generator (``pa.random.default_rng(seed)``, NumPy's
    ``Generator`` API): every method returns a lazy array of a new draw.

    Philox4x32-10, counter-based: the key comes from
    ``np.random.SeedSequence(seed)`` (any seed NumPy's ``default_rng``
    takes, or a NumPy ``Generator``/``BitGenerator``, whose seed sequence is
    used), and each call is the next draw.  ``size=None`` gives a 0-d array
    (NumPy gives a scalar)."""

    def __init__(self, seed=None):
        words = _seed_sequence(seed).generate_state(2, np.uint32)
        self._key = int(words[0]) | int(words[1]) << 32
        self._draws = 0

    def __repr__(self):
        return f"Generator(Philox4x32-10, key={self._key:#018x}, draws={self._draws})"

    def _stream(self, shape) -> R.Stream:
        draw, self._draws = self._draws, self._draws + 1
        return R.Stream(shape, draw, self._key)

    # -- floats ------------------------------------------------------------------
    def random(self, size=None, dtype=np.float64, out=None) -> Array:
        """Floats uniform in [0, 1): 53 random bits (float64) or 24 (float32)."""
        dt = _float_dtype(dtype, "random")
        shape = _size(size) if out is None or size is not None else tuple(out.shape)
        return _into(out, Array(R.uniform01(self._stream(shape), dt)))

    def uniform(self, low=0.0, high=1.0, size=None) -> Array:
        """Floats uniform in [low, high): ``low + (high - low) * random()``,
        float64; ``low``/``high`` may be arrays (broadcast)."""
        lo, hi = _parameter(low), _parameter(high)
        if isinstance(lo, float) and isinstance(hi, float) and not math.isfinite(hi - lo):
            raise OverflowError("high - low range exceeds valid bounds")
        shape = R.shape_of(lo, hi, size=_size(size) if size is not None else None)
        u = R.uniform01(self._stream(shape), np.dtype(np.float64))
        return Array(_U("add", lo, _U("multiply", _U("subtract", hi, lo), u)))

    def standard_normal(self, size=None, dtype=np.float64, out=None) -> Array:
        """Standard normal floats, by Box-Muller (not NumPy's ziggurat)."""
        dt = _float_dtype(dtype, "standard_normal")
        shape = _size(size) if out is None or size is not None else tuple(out.shape)
        return _into(out, Array(R.standard_normal(self._stream(shape), dt)))

    def normal(self, loc=0.0, scale=1.0, size=None) -> Array:
        """Normal floats, ``loc + scale * standard_normal()`` (float64);
        ``loc``/``scale`` may be arrays (broadcast)."""
        _nonnegative(scale, "scale")
        mu, sigma = _parameter(loc), _parameter(scale)
        shape = R.shape_of(mu, sigma, size=_size(size) if size is not None else None)
        z = R.standard_normal(self._stream(shape), np.dtype(np.float64))
        return Array(_U("add", mu, _U("multiply", sigma, z)))

    def standard_exponential(self, size=None, dtype=np.float64, method="zig",
                             out=None) -> Array:
        """Exponential floats of mean 1, by inversion (``-log u``) whatever
        ``method``."""
        dt = _float_dtype(dtype, "standard_exponential")
        shape = _size(size) if out is None or size is not None else tuple(out.shape)
        return _into(out, Array(R.standard_exponential(self._stream(shape), dt)))

    def exponential(self, scale=1.0, size=None) -> Array:
        """Exponential floats of mean ``scale`` (float64; an array broadcasts)."""
        _nonnegative(scale, "scale")
        beta = _parameter(scale)
        shape = R.shape_of(beta, size=_size(size) if size is not None else None)
        e = R.standard_exponential(self._stream(shape), np.dtype(np.float64))
        return Array(_U("multiply", beta, e))

    # -- integers ----------------------------------------------------------------
    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False) -> Array:
        """Integers uniform in [low, high) (``endpoint=True``: [low, high]),
        without modulo bias: the high bits of ``X * range`` for a 64-bit
        (128-bit for 64-bit dtypes) random ``X``.  ``low``/``high`` may be
        arrays; data are checked now, lazy arrays are not."""
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
        wide = dt.itemsize == 8
        if isinstance(lo, int) and isinstance(hi, int):
            span = hi - lo + int(endpoint)
        else:
            u64 = np.dtype(np.uint64)
            span = _U("subtract", *(_astype(b, u64) if not isinstance(b, int)
                                    else np.uint64(b % 2**64) for b in (hi, lo)))
            if endpoint:
                span = _U("add", span, np.uint64(1))
        return Array(R.integers(self._stream(shape), lo, span, dt, wide))

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
            idx = R.integers(self._stream(shape), 0, max(n, 1), np.dtype(np.int64), True) \
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
        return _argsort(self._stream((n,)).bits())

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
        u = R.uniform01(self._stream(shape), np.dtype(np.float64))
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
    """A new ``Generator`` (Philox4x32-10) seeded from ``seed`` as NumPy's
    ``default_rng`` seeds (``np.random.SeedSequence``); a ``pa.random.Generator``
    is returned as it is."""
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
