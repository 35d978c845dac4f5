"""NumPy's names, as a function traced by ``pa.jit`` sees them.

Inside a traced function ``np.zeros((n, n))`` has no lazy argument, so
NumPy's dispatch never reaches polyarray and the result would be a NumPy
array, which a traced value cannot be written into.  So ``pa.jit`` calls
a copy of the function whose module globals are rebound (``rebound``):

* the ``numpy`` module (under any name) -> ``NUMPY``, a namespace that
  gives polyarray's function where polyarray has one (creation functions
  make lazy arrays) and NumPy's attribute otherwise (dtypes, constants,
  ``np.random``...; NumPy's functions still dispatch to polyarray when
  they are given lazy arrays); ``numpy.linalg`` likewise;
* names imported from NumPy (``from numpy import zeros``) -> polyarray's;
* the module's other functions -> copies rebound the same way, so helpers
  that the function calls create lazy arrays too.

Nothing outside the function's own module is changed, and the function
object the user holds is untouched.
"""
from __future__ import annotations

import functools
import inspect
import sys
import types

import numpy as np


def _pa():
    return sys.modules["polyarray"]


class _Ndarray(type):
    """``np.ndarray`` in traced code: ``isinstance`` accepts polyarray arrays
    too, and ``np.ndarray(shape, dtype)`` (NumPy's low-level constructor,
    uninitialized memory) is ``pa.empty``."""

    def __instancecheck__(cls, value):
        return isinstance(value, (np.ndarray, _pa().Array))

    def __subclasscheck__(cls, sub):
        return issubclass(sub, (np.ndarray, _pa().Array))

    def __call__(cls, shape, dtype=float, buffer=None, offset=0, strides=None, order=None):
        if buffer is not None:
            return np.ndarray(shape, dtype, buffer, offset, strides, order)
        return _pa().empty(shape, dtype)


class ndarray(metaclass=_Ndarray):          # noqa: N801  (NumPy's name)
    """NumPy's ``ndarray`` as traced code sees it (see ``_Ndarray``)."""


class Namespace(types.ModuleType):
    """A NumPy (sub)module with polyarray's functions in front: an attribute
    is polyarray's where ``polyarray_module`` has a callable of that name
    (not a type: dtypes and classes stay NumPy's), else NumPy's."""

    def __init__(self, name, numpy_module, polyarray_module):
        super().__init__(name, getattr(numpy_module, "__doc__", None))
        self._numpy, self._polyarray = numpy_module, polyarray_module
        self._with_out = {}

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        ours = self._polyarray() if callable(self._polyarray) else self._polyarray
        value = vars(ours).get(name)          # its own: not what it lends from NumPy
        if value is not None and callable(value) and not isinstance(value, type) \
                and not isinstance(value, types.ModuleType):
            return self._taking_out(name, value)
        if name == "ndarray":
            return ndarray
        sub = getattr(self._numpy, name)        # NumPy's AttributeError if absent
        if isinstance(sub, types.ModuleType) and sub.__name__ == "numpy.linalg":
            return LINALG
        return sub

    def __dir__(self):
        return sorted(set(dir(self._numpy)))

    def _taking_out(self, name, fn):
        """``fn``, or where it is a polyarray function that refuses ``out=``
        (``clip``, ``matmul``, ``cumsum``...), ``fn`` with NumPy's ``out=``
        as NumPy's dispatch gives it (``polyarray.protocols.call_with_out``):
        ``np.clip(x, 0, 1, out=x)`` works inside ``pa.jit`` as outside."""
        if not isinstance(fn, types.FunctionType) or getattr(fn, "writes_out", False):
            return fn               # pa.ufunc objects and reductions take out= themselves
        known = self._with_out.get(name)      # (fn, what is returned for it): a
        if known is not None and known[0] is fn:  # traced loop asks on every step
            return known[1]
        try:
            takes = "out" in inspect.signature(fn).parameters
        except (TypeError, ValueError):
            takes = False
        if not takes:
            self._with_out[name] = (fn, fn)
            return fn

        @functools.wraps(fn)
        def with_out(*args, **kwargs):
            if kwargs.get("out") is None:
                return fn(*args, **kwargs)
            return sys.modules["polyarray.protocols"].call_with_out(fn, name, args, kwargs)
        self._with_out[name] = (fn, with_out)
        return with_out


NUMPY = Namespace("numpy", np, _pa)
LINALG = Namespace("numpy.linalg", np.linalg, lambda: _pa().linalg)


def _replacement(value):
    """What a module global becomes in traced code, or None for itself."""
    if isinstance(value, types.ModuleType):
        if value is np:
            return NUMPY
        if value is np.linalg:
            return LINALG
        return None
    module = getattr(value, "__module__", None) or ""
    if (module == "numpy" or module.startswith("numpy.")) and callable(value) \
            and not isinstance(value, type):
        name = getattr(value, "__name__", None)
        space = LINALG if module.startswith("numpy.linalg") else NUMPY
        ours = getattr(space, name, None) if name else None
        if ours is not None and ours is not value:
            return ours
    if value is np.ndarray:
        return ndarray
    return None


def rebound(fun):
    """A copy of ``fun`` whose module's NumPy names are polyarray's (see the
    module docstring); ``fun`` itself where nothing in its globals is NumPy's."""
    if not isinstance(fun, types.FunctionType):
        return fun
    original = fun.__globals__
    changes = {}
    for name, value in original.items():
        new = _replacement(value)
        if new is not None:
            changes[name] = new
    if not changes:
        return fun
    env = dict(original)
    env.update(changes)
    for name, value in original.items():
        if isinstance(value, types.FunctionType) and value.__globals__ is original:
            env[name] = _copy(value, env)
    return env[fun.__name__] if env.get(fun.__name__) is not None and \
        original.get(fun.__name__) is fun else _copy(fun, env)


def _copy(fun, env):
    new = types.FunctionType(fun.__code__, env, fun.__name__, fun.__defaults__,
                             fun.__closure__)
    new.__kwdefaults__ = fun.__kwdefaults__
    new.__dict__.update(fun.__dict__)
    new.__qualname__, new.__doc__ = fun.__qualname__, fun.__doc__
    new.__wrapped__ = fun
    return new
