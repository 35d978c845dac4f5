"""``pa.*`` creation (:mod:`polyarray.ops.creation`): ``array``, ``asarray``,
``placeholder``, ``zeros``, ``ones``, ``full``, ``empty`` and their ``*_like``,
``arange``, ``linspace``, ``eye``, ``identity``, ``tri``."""
from __future__ import annotations

import numpy as np

from ..array import Array, is_scalar, node_of, mark_array_0d
from ..ops import creation as C, elementwise as E, shapes as S

# -- creation ----------------------------------------------------------------


def array(object, dtype=None, *, copy=True, order="K", ndmin=0) -> Array:   # noqa: A002
    """An array holding a copy of ``object``'s data (``np.array``).

    The data is copied now, so later changes to ``object`` are not seen.
    ``copy`` and ``order`` are accepted and mean nothing (data leaves are
    private C-order copies); ``ndmin`` prepends axes of length one.  A
    polyarray array gives a new handle of the same expression (cast when
    ``dtype`` is given), which ``x[i] = v`` rebinds alone."""
    if isinstance(object, Array):
        out = Array(object.node) if dtype is None else Array(object.astype(dtype).node)
    elif isinstance(object, (list, tuple)) and _holds_arrays(object):
        out = Array(_nested(object, dtype))
    else:
        out = Array(C.array(object, dtype))
    if out.ndim < ndmin:
        out = Array(out.reshape((1,) * (ndmin - out.ndim) + out.shape).node)
    return _made(out)


def _holds_arrays(obj) -> bool:
    return any(isinstance(o, Array) or (isinstance(o, (list, tuple)) and _holds_arrays(o))
               for o in obj)


def _nested(obj, dtype):
    """A (nested) list holding lazy arrays as one node: the items stacked, in
    the dtype ``np.array`` gives such a list (every item's dtype, Python
    scalars as NumPy's default types, not weak)."""
    def leaves(o):
        if isinstance(o, Array):
            return o.node
        if isinstance(o, (list, tuple)):
            return [leaves(i) for i in o]
        return C.array(o)

    def dtypes(o):
        if isinstance(o, list):
            for i in o:
                yield from dtypes(i)
        else:
            yield o.dtype
    tree = leaves(obj)
    to = np.dtype(dtype) if dtype is not None else np.result_type(*dtypes(tree))

    def build(o):
        if isinstance(o, list):
            return S.stack([build(i) for i in o], 0, to, "unsafe")
        return E.astype(o, to)
    return build(tree)


def _made(out: Array) -> Array:
    """A created array: a 0-d one is an array (``+=`` writes it), as
    NumPy's ``np.zeros(())``, not a scalar."""
    return mark_array_0d(out) if not out.shape else out


def asarray(a, dtype=None, order=None, *, copy=None, device=None) -> Array:
    """``a`` as a polyarray array (``np.asarray``).

    Host data is copied as by ``pa.array``; a polyarray array is returned
    unchanged (with ``copy=True``, a new array that writes to either leave
    the other alone, as NumPy's copy).  Another library's CUDA array (CuPy, torch, JAX, ...) is read
    in place, without a copy: a device-resident leaf that sees later
    in-place changes to it.  A pyopencl array is copied to the host (its
    ``.get()``): to read one in place, bind it to a placeholder of an OpenCL
    program (made on ``pa.opencl_queue()``, it is used without a copy)."""
    from polyarray.targets.foreign import is_foreign_cuda
    if not isinstance(a, Array) and is_foreign_cuda(a):
        leaf = Array(C.device_leaf(a))
        return leaf if dtype is None else leaf.astype(dtype)
    if isinstance(a, Array) and dtype is None and copy is not True:
        # the same handle, as NumPy's asarray; a scalar becomes a 0-d array
        return a if not is_scalar(a) else _made(Array(a.node))
    return array(a, dtype)          # copy=True: a new handle, which writes leave apart


def placeholder(name: str, shape, dtype=np.float64) -> Array:
    """A named input of ``shape`` and ``dtype``, bound when the program runs.

    No NumPy equivalent: the value is passed to the compiled program
    (``pa.compile(out)(name=value)``) and must have exactly this shape and
    dtype (NumPy arrays are not cast; Python scalars and lists are converted
    when no value changes).  ``name`` must be a Python identifier, unique in
    a program; ``"out"`` is reserved."""
    return Array(C.placeholder(name, shape, dtype))


# ``order`` (memory layout) is accepted and means nothing for a lazy array

def full(shape, fill_value, dtype=None, order="C", *, device=None) -> Array:
    """An array of ``shape`` filled with ``fill_value`` (``np.full``).

    A lazy constant (computed where it is used, never uploaded); an array
    ``fill_value`` is broadcast to ``shape``, as NumPy does.  ``dtype``
    defaults to NumPy's dtype for it."""
    if not isinstance(fill_value, Array) and np.ndim(fill_value):
        fill = Array(C.array(fill_value, dtype))
        return _made(Array(S.broadcast_to(fill.node, C._normalize_shape(shape))))
    return _made(Array(C.full(shape, node_of(fill_value), dtype)))


def zeros(shape, dtype=np.float64, order="C", *, device=None) -> Array:
    """An array of ``shape`` filled with zeros (``np.zeros``), as a lazy constant."""
    return _made(Array(C.zeros(shape, dtype)))


def ones(shape, dtype=np.float64, order="C", *, device=None) -> Array:
    """An array of ``shape`` filled with ones (``np.ones``), as a lazy constant."""
    return _made(Array(C.ones(shape, dtype)))


def empty(shape, dtype=np.float64, order="C", *, device=None) -> Array:
    """An array of ``shape`` (``np.empty``): zeros, since lazy arrays are
    never uninitialized."""
    return _made(Array(C.empty(shape, dtype)))


def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None) -> Array:
    """Zeros with the shape and dtype of ``a`` (``np.zeros_like``); ``a`` is
    not evaluated."""
    return _made(Array(C.zeros_like(node_of(a), dtype, shape)))


def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None) -> Array:
    """Ones with the shape and dtype of ``a`` (``np.ones_like``); ``a`` is
    not evaluated."""
    return _made(Array(C.ones_like(node_of(a), dtype, shape)))


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *,
              device=None) -> Array:
    """``fill_value`` (a scalar) with the shape and dtype of ``a``
    (``np.full_like``); ``a`` is not evaluated."""
    return _made(Array(C.full_like(node_of(a), node_of(fill_value), dtype, shape)))


def empty_like(prototype, dtype=None, order="K", subok=True, shape=None, *,
               device=None) -> Array:
    """An array with the shape and dtype of ``prototype`` (``np.empty_like``):
    zeros, since lazy arrays are never uninitialized."""
    return _made(Array(C.empty_like(node_of(prototype), dtype, shape)))


def arange(start, stop=None, step=None, dtype=None, *, device=None) -> Array:
    """Evenly spaced values in ``[start, stop)`` (``np.arange``).

    A lazy constant equal to NumPy's element for element (same dtype rule,
    same rounding).  The bounds must be scalars, not lazy arrays."""
    return Array(C.arange(node_of(start), node_of(stop), node_of(step), dtype))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    """``num`` evenly spaced values over ``[start, stop]`` (``np.linspace``).

    A lazy constant.  The bounds must be scalars (NumPy also takes arrays),
    so ``axis`` can only be 0 or -1; ``retstep=True`` also returns the step,
    as NumPy's."""
    from ..ops.axes import normalize_axis_index
    normalize_axis_index(axis, 1)
    out = Array(C.linspace(start, stop, num, endpoint, dtype))
    if retstep:
        div = (num - 1) if endpoint else num
        return out, ((stop - start) / div if div > 0 else np.nan)
    return out


def eye(N, M=None, k=0, dtype=np.float64, order="C", *, device=None) -> Array:
    """An ``N`` x ``M`` array with ones on diagonal ``k`` (``np.eye``), as a
    lazy constant."""
    return Array(C.eye(N, M, k, dtype))


def identity(n, dtype=None, *, like=None) -> Array:
    """The ``n`` x ``n`` identity (``np.identity``), as a lazy constant
    (dtype None: float64)."""
    return Array(C.identity(n, dtype))


def tri(N, M=None, k=0, dtype=np.float64, *, like=None) -> Array:
    """An ``N`` x ``M`` array with ones at and below diagonal ``k``
    (``np.tri``), as a lazy constant (dtype None: float64)."""
    return Array(C.tri(N, M, k, dtype))
