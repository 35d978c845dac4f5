"""``pa.fft``: the public ``numpy.fft`` namespace over lazy arrays.

Each transform is one library call in the DAG (``polyarray.ops.fourier``):
pocketfft through NumPy on the numpy target, cuFFT on CUDA, NumPy on the
host (the copies logged) where a device has no library of its own; which
is the policy's choice (``docs/design/fft.md``).  What NumPy does around a
transform, cropping or zero-padding to ``n``, the normalization, the
conjugations of ``hfft``/``ihfft``, is ordinary arithmetic in the DAG, so
it fuses with the kernels before and after the call.

NumPy's rules: ``norm`` is "backward" (None), "ortho" or "forward";
``s``/``axes`` as ``numpy.fft.fftn`` reads them (NumPy 2's deprecations
included); float32 and complex64 compute in single precision, other
numbers in double; ``irfft``'s result is float16 for float16 input."""
from __future__ import annotations

import operator
import warnings

import numpy as _np

from .array import Array, node_of
from .api.creation import asarray as _asarray
from .api.elementwise import astype as _astype, conj as _conj, where as _where
from .api.shapes import moveaxis as _moveaxis
from .api.arrange import pad as _pad, roll as _roll
from .ops import fourier as F
from .ops.axes import no_out as _no_out

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2",
           "irfft2", "fftn", "ifftn", "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift",
           "ifftshift"]

_NORMS = {None: 0, "backward": 0, "ortho": 1, "forward": 2}


def __dir__():
    """Its functions alone (the names it imports stay unlisted)."""
    return list(__all__)


def _norm_code(norm):
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward","ortho" or '
                         '"forward".')
    return _NORMS[norm]


def _real_dtype(a) -> _np.dtype:
    """NumPy's computing precision: single for float16/float32/complex64."""
    single = a.dtype in (_np.float16, _np.float32, _np.complex64)
    return _np.dtype(_np.float32 if single else _np.float64)


def _scaled(x, norm, ns, inverse, source):
    """``x`` times NumPy's factors for ``norm`` (the inverse swaps "backward"
    and "forward"): NumPy's 1-D transforms over the sizes ``ns`` in the order
    it runs them, each factor ``1/n`` or ``1/sqrt(n)`` computed in the real
    type of its transform's input as NumPy's ``_raw_fft`` computes it
    (``result_type(input.real, 1.0)``: half precision for float16, whose
    first factor is so rounded; then the precision of the complex results),
    and applied as one product."""
    code = _norm_code(norm)
    if inverse:
        code = 2 - code if code != 1 else 1
    if code == 0:
        return x
    real = _np.float32 if x.dtype in (_np.float32, _np.complex64) else _np.float64
    first = _np.result_type(_np.dtype(source).type(0).real.dtype, 1.0)
    fct = 1.0
    for k, n in enumerate(ns):
        dt = first if k == 0 else _np.dtype(real)
        fct *= float(_np.reciprocal(_np.sqrt(n, dtype=dt)) if code == 1
                     else _np.reciprocal(dt.type(n)))
    return x * real(fct)


def _fit(x, n, axis):
    """``x`` cropped or zero-padded to ``n`` along ``axis`` (NumPy's ``n``)."""
    m = x.shape[axis]
    if n == m:
        return x
    if n < m:
        key = [slice(None)] * x.ndim
        key[axis] = slice(0, n)
        return x[tuple(key)]
    width = [(0, 0)] * x.ndim
    width[axis] = (0, n - m)
    return _pad(x, width)


def _moved(x, source, destination):
    """``moveaxis``, or ``x`` itself where nothing moves."""
    if list(source if isinstance(source, list) else [source]) == \
            list(destination if isinstance(destination, list) else [destination]):
        return x
    return _moveaxis(x, source, destination)


def _check_n(n):
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    return n


def _axis(a, axis):
    return _np.lib.array_utils.normalize_axis_index(operator.index(axis), a.ndim)


def _c2c(a, n, axis, norm, inverse):
    a = _asarray(a)
    axis = _axis(a, axis)
    n = _check_n(a.shape[axis] if n is None else n)
    x = _fit(_astype(a, F.complex_of(_real_dtype(a))), n, axis)
    y = _moved(Array(F.c2c(node_of(_moved(x, axis, x.ndim - 1)), 1, inverse)), x.ndim - 1, axis)
    return _scaled(y, norm, [n], inverse, a.dtype)


def _r2c(a, n, axis, norm, inverse=False):
    a = _asarray(a)
    if a.dtype.kind == "c":
        raise TypeError(f"rfft: the input is {a.dtype}; the real transforms take real "
                        "numbers (NumPy refuses complex too): use fft, or pass .real")
    axis = _axis(a, axis)
    n = _check_n(a.shape[axis] if n is None else n)
    x = _fit(_astype(a, _real_dtype(a)), n, axis)
    y = _moved(Array(F.r2c(node_of(_moved(x, axis, x.ndim - 1)))), x.ndim - 1, axis)
    return _scaled(y, norm, [n], inverse, a.dtype)


def _c2r(a, n, axis, norm, inverse=True):
    a = _asarray(a)
    axis = _axis(a, axis)
    n = _check_n((a.shape[axis] - 1) * 2 if n is None else n)
    real = _real_dtype(a)
    x = _moved(_fit(_astype(a, F.complex_of(real)), n // 2 + 1, axis), axis, a.ndim - 1)
    # pocketfft reads only the real parts at frequency 0 and n/2 (n even)
    k = _np.arange(n // 2 + 1)
    ignored = (k == 0) | ((n % 2 == 0) & (k == n // 2))
    x = _where(_asarray(ignored), _astype(x.real, x.dtype), x)
    y = _moved(Array(F.c2r(node_of(x), n)), a.ndim - 1, axis)
    y = _scaled(y, norm, [n], inverse, a.dtype)
    return _astype(y, _np.float16) if a.dtype == _np.float16 else y


def fft(a, n=None, axis=-1, norm=None, out=None) -> Array:
    """The 1-D discrete Fourier transform (``np.fft.fft``), lazily."""
    _no_out(out, "fft")
    return _c2c(a, n, axis, norm, False)


def ifft(a, n=None, axis=-1, norm=None, out=None) -> Array:
    """The 1-D inverse discrete Fourier transform (``np.fft.ifft``), lazily."""
    _no_out(out, "ifft")
    return _c2c(a, n, axis, norm, True)


def rfft(a, n=None, axis=-1, norm=None, out=None) -> Array:
    """The 1-D transform of real input, non-negative frequencies only
    (``n // 2 + 1`` of them) (``np.fft.rfft``), lazily."""
    _no_out(out, "rfft")
    return _r2c(a, n, axis, norm)


def irfft(a, n=None, axis=-1, norm=None, out=None) -> Array:
    """The inverse of ``rfft`` (``np.fft.irfft``): ``n`` real values, by
    default ``2 * (m - 1)``; the imaginary parts at frequency 0 and ``n/2``
    are ignored, as NumPy ignores them."""
    _no_out(out, "irfft")
    return _c2r(a, n, axis, norm)


def hfft(a, n=None, axis=-1, norm=None, out=None) -> Array:
    """The transform of a Hermitian-symmetric signal given by its first half
    (``np.fft.hfft``: ``irfft(conj(a), n)`` with the norm swapped), lazily."""
    _no_out(out, "hfft")
    a = _asarray(a)
    return _c2r(_conj(a), n, axis, norm, inverse=False)


def ihfft(a, n=None, axis=-1, norm=None, out=None) -> Array:
    """The inverse of ``hfft`` (``np.fft.ihfft``: ``conj(rfft(a, n))`` with the
    norm swapped), lazily."""
    _no_out(out, "ihfft")
    return _conj(_r2c(a, n, axis, norm, inverse=True))


def _cook(a, s, axes, invreal=False):
    """``(s, axes)`` as ``numpy.fft._pocketfft._cook_nd_args`` makes them,
    its deprecation warnings included."""
    shapeless = s is None
    if s is None:
        s = list(a.shape) if axes is None else [a.shape[_axis(a, ax)] for ax in axes]
    s = list(s)
    if axes is None:
        if not shapeless:
            warnings.warn("`axes` should not be `None` if `s` is not `None` (Deprecated in "
                          "NumPy 2.0). In a future version of NumPy, this will raise an error "
                          "and `s[i]` will correspond to the size along the transformed axis "
                          "specified by `axes[i]`. To retain current behaviour, pass a "
                          "sequence [0, ..., k-1] to `axes` for an array of dimension k.",
                          DeprecationWarning, stacklevel=4)
        axes = list(range(-len(s), 0))
    axes = [_axis(a, ax) for ax in axes]
    if len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    if invreal and shapeless:
        s[-1] = (a.shape[axes[-1]] - 1) * 2
    if None in s:
        warnings.warn("Passing an array containing `None` values to `s` is deprecated in "
                      "NumPy 2.0 and will raise an error in a future version of NumPy. To "
                      "use the default behaviour of the corresponding 1-D transform, pass "
                      "the value matching the default for its `n` parameter. To use the "
                      "default behaviour for every axis, the `s` argument can be omitted.",
                      DeprecationWarning, stacklevel=4)
    s = [a.shape[ax] if n == -1 else n for n, ax in zip(s, axes)]
    if invreal and s[-1] is None:       # each 1-D transform's default n
        s[-1] = (a.shape[axes[-1]] - 1) * 2
    s = [a.shape[ax] if n is None else n for n, ax in zip(s, axes)]
    return s, axes


def _c2c_nd(a, s, axes, norm, inverse):
    """One call over all of ``axes`` where they are distinct (NumPy's
    sequence of 1-D transforms, as one transform: they commute); a repeated
    axis is transformed again, in NumPy's order."""
    if len(set(axes)) != len(axes):
        for n, ax in reversed(list(zip(s, axes))):
            a = _c2c(a, n, ax, norm, inverse)
        return a
    if not axes:
        return a                        # NumPy's: no transform, the input as it is
    x = _astype(a, F.complex_of(_real_dtype(a)))
    for n, ax in zip(s, axes):
        x = _fit(x, _check_n(n), ax)
    ends = list(range(a.ndim - len(axes), a.ndim))
    y = _moved(Array(F.c2c(node_of(_moved(x, axes, ends)), len(axes), inverse)), ends, axes)
    return _scaled(y, norm, [_check_n(n) for n in reversed(s)], inverse, a.dtype)


def fftn(a, s=None, axes=None, norm=None, out=None) -> Array:
    """The N-D discrete Fourier transform over ``axes`` (``np.fft.fftn``), lazily."""
    _no_out(out, "fftn")
    a = _asarray(a)
    s, axes = _cook(a, s, axes)
    return _c2c_nd(a, s, axes, norm, False)


def ifftn(a, s=None, axes=None, norm=None, out=None) -> Array:
    """The N-D inverse discrete Fourier transform (``np.fft.ifftn``), lazily."""
    _no_out(out, "ifftn")
    a = _asarray(a)
    s, axes = _cook(a, s, axes)
    return _c2c_nd(a, s, axes, norm, True)


def fft2(a, s=None, axes=(-2, -1), norm=None, out=None) -> Array:
    """The 2-D discrete Fourier transform (``np.fft.fft2``), lazily."""
    _no_out(out, "fft2")
    return fftn(a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None, out=None) -> Array:
    """The 2-D inverse discrete Fourier transform (``np.fft.ifft2``), lazily."""
    _no_out(out, "ifft2")
    return ifftn(a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None, out=None) -> Array:
    """The N-D transform of real input (``np.fft.rfftn``): ``rfft`` over the
    last of ``axes``, then ``fft`` over the others, lazily."""
    _no_out(out, "rfftn")
    a = _asarray(a)
    s, axes = _cook(a, s, axes)
    if not axes:
        raise IndexError("list index out of range")         # NumPy's, for axes=()
    a = _r2c(a, s[-1], axes[-1], norm)
    return _c2c_nd(a, s[:-1], axes[:-1], norm, False)


def irfftn(a, s=None, axes=None, norm=None, out=None) -> Array:
    """The inverse of ``rfftn`` (``np.fft.irfftn``): ``ifft`` over all of
    ``axes`` but the last, then ``irfft`` over the last, lazily."""
    _no_out(out, "irfftn")
    a = _asarray(a)
    s, axes = _cook(a, s, axes, invreal=True)
    if not axes:
        raise IndexError("list index out of range")         # NumPy's, for axes=()
    a = _c2c_nd(a, s[:-1], axes[:-1], norm, True)
    return _c2r(a, s[-1], axes[-1], norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None, out=None) -> Array:
    """The 2-D transform of real input (``np.fft.rfft2``), lazily."""
    _no_out(out, "rfft2")
    return rfftn(a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None, out=None) -> Array:
    """The inverse of ``rfft2`` (``np.fft.irfft2``), lazily."""
    _no_out(out, "irfft2")
    return irfftn(a, s, axes, norm)


def fftfreq(n, d=1.0, device=None, *, dtype=None) -> Array:
    """The sample frequencies of an ``n``-point transform with spacing ``d``
    (``np.fft.fftfreq``): NumPy's values, float64 (or ``dtype``, the array
    API 2024.12's keyword)."""
    return _asarray(_np.fft.fftfreq(n, d), dtype=dtype)


def rfftfreq(n, d=1.0, device=None, *, dtype=None) -> Array:
    """The non-negative sample frequencies of ``rfft`` (``np.fft.rfftfreq``),
    float64 or ``dtype``."""
    return _asarray(_np.fft.rfftfreq(n, d), dtype=dtype)


def _shift(x, axes, sign):
    x = _asarray(x)
    if axes is None:
        axes = tuple(range(x.ndim))
    elif isinstance(axes, (int, _np.integer)):
        axes = (axes,)
    shift = [sign * (x.shape[_axis(x, ax)] // 2) for ax in axes]
    return _roll(x, shift, tuple(axes))


def fftshift(x, axes=None) -> Array:
    """The zero frequency moved to the middle (``np.fft.fftshift``), lazily."""
    return _shift(x, axes, 1)


def ifftshift(x, axes=None) -> Array:
    """The inverse of ``fftshift`` (``np.fft.ifftshift``), lazily."""
    return _shift(x, axes, -1)
