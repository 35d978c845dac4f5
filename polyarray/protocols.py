"""NumPy's dispatch protocols and the eager hooks of ``pa.Array``.

* ``np.exp(x)``, ``ndarray + x`` (``__array_ufunc__``) and ``np.dot``,
  ``np.sum``, ``np.where``, ... (``__array_function__``) build lazy nodes
  through the ``pa`` function of the same name, so NumPy code runs
  unchanged on polyarray arrays.  A NumPy function polyarray lacks raises a
  ``TypeError`` naming it: never an object array of scalar expressions.
* The eager hooks (``np.asarray(x)``, ``bool``, ``float``, ``int``,
  ``__index__``, ``item``, ``tolist``, ``__dlpack__``) evaluate an
  expression with no placeholders on the default target, as one program.
  On an expression with unbound placeholders they raise ``LazyValueError``
  naming them and the user's line (``pa.jit`` relies on it: a function
  that branches on a traced value fails there, clearly).

They need compilation, so they live here, above ``polyarray.program``, and
are attached to ``Array`` at import, as ``evaluate`` is.
"""
from __future__ import annotations

import sys

import numpy as np

from .array import Array, mark_array_0d, out_casting, ufunc_into
from .ops.axes import no_out
from .ops.eager import LazyValueError, require_bound, value_at_break
from . import reevaluation
from .program import compile as _compile, get_default_target



def concrete(x: Array, what: str) -> np.ndarray:
    """The value of ``x`` (a NumPy array), computed on the default target
    (or, inside a pa.jit call that traces, at a graph break)."""
    found = value_at_break(x.node, what)
    if found is not None:
        return found
    require_bound(x.node, f"{what} needs the value of a lazy array that",
                  "use pa.where(...) instead of branching on it, pass it as a static "
                  "argument to pa.jit, or evaluate it with bindings first")
    return np.asarray(reevaluation.value(x.node))


def _scalar(x, what, kind):
    if x.size != 1:
        raise TypeError(f"only arrays of one element can be converted to Python "
                        f"{kind}s; this one has shape {x.shape}")
    return concrete(x, what).reshape(())


def _bool(self):
    if self.size > 1:      # NumPy's error, before any evaluation
        raise ValueError("The truth value of an array with more than one element is "
                         "ambiguous. Use a.any() or a.all()")
    return bool(_scalar(self, "bool()", "bool"))


def _float(self):
    return float(_scalar(self, "float()", "scalar"))


def _int(self):
    return int(_scalar(self, "int()", "scalar"))


def _complex(self):
    return complex(_scalar(self, "complex()", "scalar"))


def _index(self):
    if self.dtype.kind not in "iu" or self.ndim:
        raise TypeError(f"only 0-d integer arrays can be used as an index, not "
                        f"{self.dtype.name} of shape {self.shape}")
    return int(concrete(self, "an index (__index__)"))


def _item(self, *args):
    """One element as a Python scalar (``ndarray.item``).

    Eager: evaluates the whole expression on the default target now;
    ``pa.LazyValueError`` if it depends on unbound placeholders."""
    return concrete(self, "item()").item(*args)


def _tolist(self):
    """The values as nested Python lists (``ndarray.tolist``).

    Eager: evaluates the whole expression on the default target now;
    ``pa.LazyValueError`` if it depends on unbound placeholders."""
    return concrete(self, "tolist()").tolist()


def _array(self, dtype=None, copy=None):
    if sys._getframe(1).f_globals.get("__name__", "").startswith("numpy.ma"):
        raise TypeError("a numpy.ma.MaskedArray cannot be combined with a polyarray array: "
                        "polyarray has no masked arrays, and using its data would silently "
                        "ignore the mask; pass np.ma.filled(value, fill_value) explicitly")
    if copy is False:
        raise ValueError("a lazy polyarray array has no memory to share: "
                         "np.asarray(x, copy=False) cannot avoid computing it")
    value = concrete(self, "np.asarray() (__array__)")
    return value if dtype is None else value.astype(dtype, copy=False)


# -- __array_ufunc__ -------------------------------------------------------------

def _pa():
    return sys.modules["polyarray"]


def _own(module, name):
    """``module``'s own attribute ``name`` (not one polyarray's module
    ``__getattr__`` lends from NumPy), or None."""
    return vars(module).get(name)


def _foreign(values):
    """Operands that neither polyarray nor NumPy can take part in."""
    return [v for v in values if not isinstance(
        v, (Array, np.ndarray, np.generic, int, float, bool, complex, list, tuple))]


def _array_ufunc(self, ufunc, method, *inputs, out=None, **kwargs):
    if _foreign(inputs):
        return NotImplemented
    name = ufunc.__name__
    if isinstance(out, tuple) and all(o is None for o in out):
        out = None              # NumPy passes ``out=(None,)`` for a ufunc
    pa = _pa()
    if out is not None and method == "__call__":
        where = kwargs.pop("where", True)
        make = lambda w: _array_ufunc(self, ufunc, method, *inputs, **kwargs)   # noqa: E731
        target = out[0] if isinstance(out, tuple) and len(out) == 1 else out
        if isinstance(target, np.ndarray):
            return _into_ndarray(target, make(True), name, where)
        return ufunc_into(out, name, where, lambda w: make(w).node, inputs)
    no_out(out, f"numpy.{name}")
    if method == "__call__":
        fn = _own(pa, name)
        if fn is None or not callable(fn):
            raise TypeError(f"numpy.{name} is not supported by polyarray")
        dtype = kwargs.pop("dtype", None)
        _no_kwargs(kwargs, f"numpy.{name}")
        if dtype is not None:       # NumPy computes in ``dtype``: cast the operands
            inputs = [pa.astype(pa.asarray(x), dtype) if isinstance(x, (Array, np.ndarray))
                      else x for x in inputs]
        return fn(*inputs)
    ours = _own(pa, name)
    if isinstance(ours, pa.ufunc) and method in ("reduce", "accumulate", "outer", "at",
                                                 "reduceat"):
        return getattr(ours, method)(*inputs, **kwargs)
    raise TypeError(f"numpy.{name}.{method} is not supported by polyarray")


def _no_kwargs(kwargs, what):
    bad = {k: v for k, v in kwargs.items()
           if not (k in ("casting", "order", "subok", "signature") and v in (None, "K", True,
                                                                              "same_kind"))}
    if bad:
        raise TypeError(f"{what}: polyarray does not support the keyword(s) "
                        f"{', '.join(sorted(bad))}")


# -- __array_function__ ----------------------------------------------------------

# NumPy functions that only read metadata (answered without evaluating)
_METADATA = {
    "shape": lambda a: a.shape if isinstance(a, Array) else np.shape(a),
    "ndim": lambda a: a.ndim if isinstance(a, Array) else np.ndim(a),
    "size": lambda a, axis=None: (a.size if axis is None else a.shape[axis])
    if isinstance(a, Array) else np.size(a, axis),
    "result_type": lambda *xs: _pa().result_type(*xs),
    "can_cast": lambda *a, **k: _pa().can_cast(*a, **k),
    "iscomplexobj": lambda x: _pa().iscomplexobj(x),
    "isrealobj": lambda x: _pa().isrealobj(x),
    "copy": lambda a, order="K", subok=False: _array_copy(a),
    "asanyarray": lambda a, dtype=None, order=None, **kw: a if dtype is None else a.astype(dtype),
}


def _array_copy(a):
    """``np.copy``: a new handle (``x[i] = v`` rebinds it alone), and an
    array, never a scalar (a 0-d copy is written in place)."""
    out = Array(a.node)
    return mark_array_0d(out) if not out.shape else out


_SCIMATH = ("numpy.lib.scimath", "numpy.lib._scimath_impl", "numpy.emath")


def numpy_implementation(func):
    """The polyarray function that implements NumPy's ``func``, or None."""
    name = getattr(func, "__name__", None)
    module = getattr(func, "__module__", "") or ""
    if module in _SCIMATH:
        return None         # np.emath: its dtype depends on the values (complex for x < 0)
    if module.startswith("numpy.linalg"):
        namespace = getattr(_pa(), "linalg", None)
    elif module.startswith("numpy.fft"):
        namespace = getattr(_pa(), "fft", None)
    elif module in ("numpy", "numpy._core.fromnumeric", "numpy._core.numeric",
                    "numpy._core.multiarray") or module.startswith("numpy._core") \
            or module.startswith("numpy.lib"):
        if name in _METADATA:
            return _METADATA[name]
        namespace = _pa()
    else:
        return None
    impl = _own(namespace, name) if namespace is not None else None
    if impl is None or impl is func or isinstance(impl, type) or not callable(impl):
        return None
    return impl


def _array_function(self, func, types, args, kwargs):
    if any(not issubclass(t, (Array, np.ndarray)) for t in types):
        return NotImplemented
    impl = numpy_implementation(func)
    if impl is None and func.__module__ in _SCIMATH:
        raise TypeError(f"numpy.emath.{func.__name__} is not supported on polyarray arrays: "
                        "its result's dtype depends on the values (complex where one is "
                        "outside the real domain), which a lazy array does not know yet; "
                        f"call pa.{func.__name__} on x.astype(complex) (or on real values)")
    if impl is None:
        name = f"{func.__module__.split('._')[0]}.{func.__name__}"
        raise TypeError(f"{name} is not supported on polyarray arrays (it has no polyarray "
                        "implementation); `python -m polyarray differences` lists what is")
    return call_with_out(impl, func.__name__, args, kwargs)


def call_with_out(impl, name, args, kwargs):
    """``impl(*args, **kwargs)`` as NumPy's function ``name``, with its
    ``out=``: a polyarray function that writes ``out`` itself (a reduction:
    its shape checks) is given it; for the others, the result is written
    into ``out`` (a polyarray array, or a NumPy array: evaluated now).  The
    one path of NumPy's dispatch and of ``np.<name>`` inside ``pa.jit``."""
    out = kwargs.get("out")
    if out is None or (getattr(impl, "writes_out", False) and isinstance(out, Array)):
        return impl(*args, **kwargs)
    kwargs = {k: v for k, v in kwargs.items() if k != "out"}
    result = impl(*args, **kwargs)
    if not isinstance(result, Array):
        no_out(out, f"numpy.{name}")
    if isinstance(out, np.ndarray):
        return _into_ndarray(out, result, name, True)
    return ufunc_into(out, name, True, lambda w: result.node)


def _into_ndarray(out: np.ndarray, result: Array, name: str, where) -> np.ndarray:
    """NumPy's ``out=ndarray`` for a lazy result: evaluated now (it must not
    depend on placeholders) and written into ``out`` with NumPy's checks."""
    value = concrete(result, f"numpy.{name}(..., out=<NumPy array>)")
    casting = out_casting(name)
    if casting != "unsafe" and not np.can_cast(value.dtype, out.dtype, casting):
        raise TypeError(f"Cannot cast ufunc {name!r} output from {value.dtype!r} to "
                        f"{out.dtype!r} with casting rule {casting!r}")
    mask = where
    if isinstance(where, Array):
        mask = concrete(where, f"numpy.{name}(where=)")
    np.copyto(out, np.broadcast_to(value, out.shape), casting="unsafe", where=mask)
    return out


# -- the array API's attributes --------------------------------------------------

class Device:
    """Where a lazy array is computed: a target, chosen when it is evaluated
    (``pa.target(...)`` / ``pa.compile(target=...)``)."""
    __slots__ = ("target",)

    def __init__(self, target):
        self.target = str(target)

    def __eq__(self, other):
        return isinstance(other, Device) and other.target == self.target

    def __hash__(self):
        return hash(("polyarray.Device", self.target))

    def __repr__(self):
        return f"Device({self.target!r})"


def _device(self):
    """The array API's ``x.device``: the default target, where an evaluation
    would run now (a lazy array lives on no device until it is computed)."""
    return Device(get_default_target())


def _check_device(device, what) -> None:
    """Accept the default target's device (a ``Device`` or its target's
    name): a lazy array is computed where it is evaluated."""
    from polyarray import targets
    target = device.target if isinstance(device, Device) else device
    if not isinstance(target, str) or target not in targets.REGISTRY:
        raise ValueError(f"{what}: device {device!r} is not understood; polyarray's "
                         "devices are pa.Device objects (x.device, "
                         "pa.__array_namespace_info__().devices()) or their target names "
                         f"({', '.join(map(repr, targets.REGISTRY))})")
    if target != get_default_target():
        raise ValueError(f"{what}: a lazy array is computed on the target it is evaluated "
                         f"on ({get_default_target()!r} here); to compute on {target!r}, "
                         "evaluate inside "
                         f"`with pa.target({target!r}):` or compile with target={target!r}")


def _to_device(self, device, /, *, stream=None):
    """The array API's ``x.to_device``: ``x`` itself for the default target.
    Any other target raises ValueError: a lazy array is computed where it is
    evaluated (``with pa.target(...)`` or ``pa.compile(..., target=...)``)."""
    _check_device(device, "to_device")
    return self


def from_dlpack(x, /, *, device=None, copy=None) -> Array:
    """An array from any DLPack producer (``np.from_dlpack``, the array API's).

    ``device``: None (``x``'s own), ``"cpu"`` (host memory: a CUDA array is
    copied to the host), or the default target's ``pa.Device`` (``y.device``
    of a polyarray array) or name; any other raises ValueError.  ``copy``
    as the array API says: None reuses ``x``'s memory where it can, False
    always does (BufferError where a copy is needed: a CUDA array with
    ``device="cpu"``), True copies.  Reused host memory is a view: a
    ``pa.SharedVariable`` over it, which every call reads as it is then (as
    NumPy's view sees later changes to ``x``), with no binding; a reused
    CUDA array is a device-resident leaf, as ``pa.asarray`` makes.  A copy
    is a data leaf (read when ``from_dlpack`` is called)."""
    from polyarray.targets.foreign import cuda_view, is_foreign_cuda, to_host
    from .ops import creation as C
    from .shared import view_of
    if copy not in (None, True, False):
        raise ValueError(f"pa.from_dlpack: copy must be None, True or False, got {copy!r}")
    to_cpu = isinstance(device, str) and device == "cpu"
    if device is not None and not to_cpu:
        _check_device(device, "pa.from_dlpack")
    if is_foreign_cuda(x):
        if to_cpu and copy is False:
            raise BufferError("pa.from_dlpack: x is on a CUDA device, and device='cpu' "
                              "needs a copy, which copy=False forbids")
        if to_cpu or copy:
            return Array(C.array(to_host(cuda_view(x))))
        return Array(C.device_leaf(x))
    if copy:
        return Array(C.array(np.from_dlpack(x, copy=True)))
    return view_of(np.from_dlpack(x, copy=False), "pa.from_dlpack")


def _array_namespace(self, /, *, api_version=None):
    if api_version not in (None, "2021.12", "2022.12", "2023.12"):
        raise ValueError(f"unsupported array API version {api_version!r}; polyarray "
                         "implements 2023.12")
    return _pa()


def _dlpack_device(self):
    from polyarray.targets import foreign
    if get_default_target() == "cuda":
        return (foreign.CUDA, 0)
    return (foreign.CPU, 0)


def _dlpack(self, /, *, stream=None, max_version=None, dl_device=None, copy=None):
    target = get_default_target()
    concrete(self, "__dlpack__")        # the clear error for unbound placeholders
    if target == "cuda":
        result = _compile(self, target="cuda", out="device")()
    else:
        result = np.asarray(_compile(self, target=target)())
    kwargs = {"stream": stream} if stream is not None else {}
    return result.__dlpack__(**kwargs)


_HOOKS = {
    "__array_ufunc__": _array_ufunc, "__array_function__": _array_function,
    "__array__": _array, "__bool__": _bool, "__float__": _float, "__int__": _int,
    "__complex__": _complex, "__index__": _index, "item": _item, "tolist": _tolist,
    "__array_namespace__": _array_namespace, "__dlpack__": _dlpack,
    "__dlpack_device__": _dlpack_device, "to_device": _to_device,
    "device": property(_device),
}
for _name, _hook in _HOOKS.items():
    setattr(Array, _name, _hook)
del _name, _hook


# -- choosing a namespace from arguments ----------------------------------------

def get_array_module(*args):
    """The module for these arrays: ``polyarray`` if any argument is a polyarray
    array, else ``numpy`` (CuPy's ``get_array_module``), so generic code can
    write ``xp = pa.get_array_module(x); xp.exp(x)``."""
    return _pa() if any(isinstance(a, Array) for a in args) else np


def array_namespace(*arrays):
    """The array API namespace of ``arrays`` (``array_api_compat``'s
    ``array_namespace``): ``polyarray`` if any is a polyarray array (mixed
    with NumPy ones or not), ``numpy`` for NumPy arrays only."""
    if not arrays:
        raise TypeError("array_namespace() needs at least one array")
    return get_array_module(*arrays)


class ArrayNamespaceInfo:
    """``pa.__array_namespace_info__()``: what this namespace supports."""

    def capabilities(self):
        # boolean masks need concrete data; output shapes that depend on
        # values (unique, nonzero) are computed eagerly
        return {"boolean indexing": False, "data-dependent shapes": False,
                "max dimensions": None}

    def default_device(self):
        return Device(get_default_target())

    def devices(self):
        from polyarray import targets
        return [Device(t) for t in targets.available_targets()]

    def default_dtypes(self, *, device=None):
        return {"real floating": np.dtype(np.float64),
                "complex floating": np.dtype(np.complex128),
                "integral": np.dtype(np.int64), "indexing": np.dtype(np.int64)}

    def dtypes(self, *, device=None, kind=None):
        groups = {"bool": ["bool"],
                  "signed integer": ["int8", "int16", "int32", "int64"],
                  "unsigned integer": ["uint8", "uint16", "uint32", "uint64"],
                  "real floating": ["float32", "float64"],
                  "complex floating": ["complex64", "complex128"]}
        groups["integral"] = groups["signed integer"] + groups["unsigned integer"]
        groups["numeric"] = groups["integral"] + groups["real floating"] + \
            groups["complex floating"]
        kinds = [kind] if isinstance(kind, str) or kind is None else list(kind)
        names = []
        for k in kinds:
            names += (groups["bool"] + groups["numeric"]) if k is None else groups[k]
        return {n: np.dtype(n) for n in names}


def array_namespace_info():
    return ArrayNamespaceInfo()
