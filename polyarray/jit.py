"""``pa.jit``: a function written against NumPy, traced once per signature.

``pa.jit(f)`` calls ``f`` with polyarray placeholders in place of its array
arguments; NumPy's functions, methods and operators then build the DAG
(``polyarray.protocols``).  The outputs are compiled for the target, and
the program is kept per *signature*: the shapes and dtypes of the array
arguments, the values of the static ones, and how they are nested.

* Arrays are NumPy arrays, NumPy scalars, or device arrays of any library
  the target reads (CuPy, torch, JAX, pycuda, pyopencl).  Lists, tuples and
  dicts of them are walked.
* Python scalars are static: each value is a constant of its own program,
  so ``f(x, 0.5)`` promotes exactly as NumPy does (a traced 0-d array would
  not).  ``static_argnums`` / ``static_argnames`` make any other hashable
  argument static, as in JAX.
* Results come back as the caller's arrays came in: NumPy in, NumPy out;
  CUDA arrays in, device results out (zero-copy to CuPy, torch or JAX
  through ``__cuda_array_interface__`` / DLPack; ``pa.jit(..., out="device")``
  to keep pycuda results as they are).
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

from .array import Array
from .ops.creation import placeholder as _placeholder
from .program import compile as _compile, get_default_target


class _Static:
    """A static argument's value, in the signature (hashable)."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _kind(value):
    """'numpy', 'cuda' (a CUDA array of another library), 'pycuda',
    'opencl', or None (not an array)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return "numpy"
    from polyarray.targets.foreign import CudaView
    if isinstance(value, CudaView):
        return "cuda"
    mod = type(value).__module__.split(".")[0]
    if mod == "pycuda":
        return "pycuda"
    if mod == "pyopencl":
        return "opencl"
    from polyarray.targets.foreign import is_foreign_cuda
    return "cuda" if is_foreign_cuda(value) else None


def _flatten(value, path, leaves, static):
    """The signature of ``value``; array leaves are appended to ``leaves``
    as (name, array)."""
    if static:
        try:
            hash(value)
        except TypeError:
            raise TypeError(f"static argument {path} must be hashable, got a "
                            f"{type(value).__name__}") from None
        return ("static", type(value).__name__, value)
    if isinstance(value, (list, tuple)):
        return (type(value).__name__,
                tuple(_flatten(v, f"{path}_{k}", leaves, False) for k, v in enumerate(value)))
    if isinstance(value, dict):
        keys = sorted(value)
        return ("dict", tuple((k, _flatten(value[k], f"{path}_{k}", leaves, False))
                              for k in keys))
    if isinstance(value, Array):
        raise TypeError(f"argument {path} is a lazy polyarray array: pa.jit functions "
                        "take concrete arrays (call the function itself for lazy ones)")
    kind = _kind(value)
    if kind is None:
        if isinstance(value, (bool, int, float, complex)) or value is None:
            return ("static", type(value).__name__, value)
        raise TypeError(f"argument {path} is a {type(value).__name__}: pa.jit takes "
                        "arrays, Python scalars, and lists/tuples/dicts of them; mark "
                        "other arguments static (static_argnames=...)")
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in path)
    library = type(value).__module__.split(".")[0]
    if kind == "cuda":          # read once, in place: its shape and NumPy dtype
        from polyarray.targets.foreign import cuda_view
        value = cuda_view(value)
    shape = tuple(int(n) for n in value.shape)
    leaves.append((name, value, library))
    return ("array", kind, shape, np.dtype(value.dtype).str)


def _rebuild(sig, leaves):
    """``sig`` with its array leaves replaced, in order, from ``leaves``."""
    tag = sig[0]
    if tag == "static":
        return sig[2]
    if tag == "array":
        return next(leaves)
    if tag in ("list", "tuple"):
        items = [_rebuild(s, leaves) for s in sig[1]]
        return items if tag == "list" else tuple(items)
    return {k: _rebuild(s, leaves) for k, s in sig[1]}


class Jitted:
    """A traced-and-compiled NumPy function (see the module docstring);
    ``programs`` maps each signature seen to its ``pa.Program``."""

    def __init__(self, fun, static_argnums=(), static_argnames=(), target=None,
                 **compile_options):
        self.fun = fun
        self.signature = inspect.signature(fun)
        params = list(self.signature.parameters)
        nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        names = (static_argnames,) if isinstance(static_argnames, str) else \
            tuple(static_argnames)
        for k in nums:
            if not -len(params) <= k < len(params):
                raise ValueError(f"static_argnums {k} is out of range: {fun.__name__} takes "
                                 f"{len(params)} arguments")
        for n in names:
            if n not in params:
                raise ValueError(f"static_argnames {n!r} is not an argument of "
                                 f"{fun.__name__} ({', '.join(params)})")
        self.static = frozenset(params[k] for k in nums) | frozenset(names)
        self.target, self.options = target, compile_options
        self.programs = {}
        functools.update_wrapper(self, fun)

    def _signature(self, args, kwargs):
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        leaves, parts = [], []
        for name, value in bound.arguments.items():
            kind = self.signature.parameters[name].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                parts.append((name, "*", tuple(_flatten(v, f"{name}_{k}", leaves, False)
                                               for k, v in enumerate(value))))
            elif kind is inspect.Parameter.VAR_KEYWORD:
                parts.append((name, "**", tuple(
                    (k, _flatten(v, k, leaves, k in self.static)) for k, v in
                    sorted(value.items()))))
            else:
                parts.append((name, "", _flatten(value, name, leaves, name in self.static)))
        return tuple(parts), leaves

    def _target_for(self, leaves):
        if self.target is not None:
            return self.target
        kinds = {_kind(v) for _, v, _ in leaves}
        if kinds & {"cuda", "pycuda"}:
            return "cuda"
        if "opencl" in kinds:
            return "opencl"
        return get_default_target()

    def _trace(self, sig, leaves, target):
        arrays = iter(Array(_placeholder(name, v.shape, np.dtype(v.dtype)))
                      for name, v, _ in leaves)
        args, kwargs = [], {}
        for name, how, part in sig:
            if how == "*":
                args.extend(_rebuild(s, arrays) for s in part)
            elif how == "**":
                kwargs.update({k: _rebuild(s, arrays) for k, s in part})
            else:
                param = self.signature.parameters[name]
                value = _rebuild(part, arrays)
                if param.kind is inspect.Parameter.KEYWORD_ONLY:
                    kwargs[name] = value
                else:
                    args.append(value)
        result = self.fun(*args, **kwargs)
        shape, outputs = _outputs(result)
        device = {_kind(v) for _, v, _ in leaves} & {"cuda", "pycuda", "opencl"}
        options = dict(self.options)
        if device and target in ("cuda", "opencl"):
            options.setdefault("out", "device")
        return _compile(outputs, target=target, **options), shape

    def _entry(self, args, kwargs):
        """((program, output structure), array leaves) of this call's
        signature, traced and compiled the first time it is seen."""
        sig, leaves = self._signature(args, kwargs)
        key = (sig, self._target_for(leaves))
        entry = self.programs.get(key)
        if entry is None:
            entry = self.programs[key] = self._trace(sig, leaves, key[1])
        return entry, leaves

    def __call__(self, *args, **kwargs):
        (prog, shape), leaves = self._entry(args, kwargs)
        used = prog.placeholders         # arguments the outputs do not read are not bound
        results = prog(**{name: v for name, v, _ in leaves if name in used})
        convert = _converter(leaves)
        return _unflatten(shape, [convert(r) for r in results])

    def lower(self, *args, **kwargs) -> "object":
        """The ``pa.Program`` this call would run (traced now if new): its
        ``source``, ``kernels`` and ``schedule`` are there to inspect."""
        return self._entry(args, kwargs)[0][0]


def _outputs(result):
    """(structure, list of Arrays) of what the traced function returned."""
    if isinstance(result, (list, tuple)):
        parts = [_outputs(r) for r in result]
        return ((type(result).__name__, tuple(p[0] for p in parts)),
                [a for p in parts for a in p[1]])
    if isinstance(result, dict):
        keys = sorted(result)
        parts = [_outputs(result[k]) for k in keys]
        return ("dict", tuple(zip(keys, (p[0] for p in parts)))), \
            [a for p in parts for a in p[1]]
    if isinstance(result, Array):
        return "array", [result]
    if isinstance(result, (np.ndarray, np.generic, int, float, bool)):
        from .api import asarray
        return "array", [asarray(result)]
    raise TypeError(f"a pa.jit function must return arrays (or lists, tuples, dicts of "
                    f"them), got {type(result).__name__}")


def _unflatten(shape, values):
    values = iter(values)

    def build(s):
        if s == "array":
            return next(values)
        tag, parts = s
        if tag == "dict":
            return {k: build(p) for k, p in parts}
        items = [build(p) for p in parts]
        return items if tag == "list" else tuple(items)
    return build(shape)


def _converter(leaves):
    """Results as the first array argument came in: a CUDA array of another
    library -> that library's array (zero-copy); otherwise unchanged."""
    from polyarray.targets.foreign import CudaView
    mod = next((lib for _, v, lib in leaves if isinstance(v, CudaView)), None)
    if mod == "torch":
        import torch
        return torch.from_dlpack
    if mod == "cupy":
        import cupy
        return cupy.asarray
    if mod in ("jax", "jaxlib"):
        import jax.dlpack
        return jax.dlpack.from_dlpack
    return lambda r: r


def jit(fun=None, *, static_argnums=(), static_argnames=(), target=None, **compile_options):
    """``pa.jit(f)`` or ``@pa.jit(static_argnames=...)``: run a NumPy function
    through polyarray (see the module docstring).  ``target`` is chosen from
    the arguments when not given (CUDA arrays: "cuda"), else the default
    target; ``compile_options`` go to ``pa.compile`` (e.g. ``schedule=``)."""
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums,
                                 static_argnames=static_argnames, target=target,
                                 **compile_options)
    return Jitted(fun, static_argnums, static_argnames, target, **compile_options)
