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
* NumPy's mutation semantics: an argument the function writes (``x[i] = v``,
  ``x += v``, through a view) holds NumPy's result after the call, written
  in place: NumPy arrays on the host, CUDA and OpenCL arrays on their
  device; arguments not written are not touched, and the function may
  return None.  An argument returned as it came is the caller's object.
  The same array passed twice is one array, as in NumPy; arrays that
  overlap otherwise may be read, and writing to one raises.
* Graph breaks: where Python needs a traced value (a branch, ``int()``, a
  slice bound, a boolean mask from the data), the work traced so far runs
  and tracing goes on with the value (``polyarray.tracing``); such a
  function is traced again at every call, its programs compiled once.
* Arrays the function creates with NumPy's functions (``np.zeros``,
  ``np.empty``, ``np.arange``, ``np.eye``, ...) are lazy: the function is
  traced with its module's NumPy names bound to polyarray's
  (``polyarray.numpy_names``).
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import time

import numpy as np

from .array import Array, mark_array_0d, mark_read_only, set_strides
from .masked import settle
from .ir import nodes as N
from .numpy_names import rebound
from .ops.creation import array as _data_leaf, placeholder as _placeholder
from .program import compile as _compile, get_default_target
from .codegen import TooManyKernels, kernel_budget
from .reevaluation import _small_on_host
from .tracing import Session, TooManyPrograms
from .targets.foreign import driver_library as _driver_library

_LOG = logging.getLogger("polyarray.jit")


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
    library = _driver_library(value)
    if library is not None:
        return library
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
                 graph_breaks=True, max_break_programs=32, max_kernels=64,
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
        self.graph_breaks, self.max_break_programs = graph_breaks, max_break_programs
        self.max_kernels = max_kernels
        self.max_element_writes = 1024 if max_kernels is not None else None
        self.programs = {}
        self.segment_programs = {}      # the programs of calls with graph breaks
        self.last_breaks = []           # the user's lines of the last trace's breaks
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

    def _arguments(self, sig, values):
        """(args, kwargs) of a call: ``sig``'s structure with its array
        leaves taken in order from the iterator ``values``."""
        args, kwargs = [], {}
        for name, how, part in sig:
            if how == "*":
                args.extend(_rebuild(s, values) for s in part)
            elif how == "**":
                kwargs.update({k: _rebuild(s, values) for k, s in part})
            else:
                param = self.signature.parameters[name]
                value = _rebuild(part, values)
                if param.kind is inspect.Parameter.KEYWORD_ONLY:
                    kwargs[name] = value
                else:
                    args.append(value)
        return args, kwargs

    def _trace(self, sig, leaves, target, aliases):
        """Trace the function on this call's arguments: (the _Trace, and the
        call's results where graph breaks made the trace run them, else None)."""
        inputs = _inputs(leaves, aliases)
        args, kwargs = self._arguments(sig, iter(inputs[a][0] for a in aliases))
        options = dict(self.options)
        device = {_kind(v) for _, v, _ in leaves} & {"cuda", "pycuda", "opencl"}
        if device and target in ("cuda", "opencl"):
            options.setdefault("out", "device")
        session = None
        if self.graph_breaks:
            bindings = {leaves[k][0]: leaves[k][1] for k in inputs}
            session = Session(target, bindings, [node for _, node in inputs.values()],
                              self.segment_programs, options,
                              max_programs=self.max_break_programs,
                              max_element_writes=self.max_element_writes)
        budget = kernel_budget(self.max_kernels)
        t0 = time.perf_counter()
        try:
            with session if session is not None else contextlib.nullcontext(), budget:
                result = rebound(self.fun)(*args, **kwargs)
                settle(result)      # selections returned: as NumPy has them, in the session
            traced = time.perf_counter() - t0
            written = [k for k, (arr, node) in inputs.items() if arr._node is not node]
            _check_overlaps(leaves, aliases, written)
            returned = {id(arr): k for k, (arr, _) in inputs.items()}
            shape, outputs = _outputs(result, returned)
            outputs += [inputs[k][0] for k in written]
            if session is not None and session.breaks:
                self.last_breaks = list(session.breaks)
                _log_breaks(self.fun, session.breaks)
                nodes = [a.node for a in outputs]
                final = _Trace(None, shape, tuple(written), aliases, breaking=True)
                if not nodes:
                    return final, []
                with kernel_budget(self.max_kernels):
                    results = _session_results(session, nodes, dict(options))
                final.program = self.segment_programs.get(
                    tuple(n for n in nodes if not _is_bound(n, session.bindings)))
                return final, results
        except TooManyPrograms as e:
            self.last_breaks = list(session.breaks)
            where = "; ".join(line for line, _ in _counts(session.breaks)[:3])
            _LOG.warning(
                "pa.jit(%s): %s (code that works element by element%s); this signature runs "
                "with NumPy on the host from now on (pa.jit(..., max_break_programs=..., "
                "max_kernels=...) set the limits)", getattr(self.fun, "__name__", "?"),
                e.args[0] if isinstance(e.args[0], str) else
                f"its graph breaks needed more than {self.max_break_programs} new programs",
                f": {where}" if where else "")
            # the trace stopped part way: which arguments the function writes
            # is not known (None: the host call compares each with a copy)
            return _Trace(None, None, None, aliases, host=True), None
        except TooManyKernels:
            return self._too_many_kernels(aliases), None
        self.last_breaks = []
        if outputs and target != "numpy" and not any(a.node.reads_placeholder
                                                     for a in outputs) \
                and _small_on_host([a.node for a in outputs], limit=False):
            outputs = _trace_constants(outputs)
        try:
            with kernel_budget(self.max_kernels):
                prog = _compile(outputs, target=target, **options) if outputs else None
        except TooManyKernels:
            return self._too_many_kernels(aliases, tuple(written)), None
        if prog is not None:
            prog.trace_seconds = traced
        return _Trace(prog, shape, tuple(written), aliases), None

    def _too_many_kernels(self, aliases, written=None):
        _LOG.warning(
            "pa.jit(%s): its program needs more than %d new kernels (a loop whose every "
            "step is a kernel of its own: shrinking slices, other offsets); this signature "
            "runs with NumPy on the host from now on (pa.jit(..., max_kernels=...) sets the "
            "limit)", getattr(self.fun, "__name__", "?"), self.max_kernels)
        # the arguments the trace wrote, where it got that far (a host call then
        # copies and writes back those alone)
        return _Trace(None, None, written, aliases, host="kernels")

    def _on_host(self, sig, leaves, aliases, written=None):
        """The call run by NumPy itself on the host (the fallback of a
        function whose graph breaks need too many programs): NumPy arrays as
        they are (NumPy writes them in place), device arrays as host copies
        written back where the function changed them: ``written``, the
        arguments its trace wrote, where the trace got that far (else every
        device argument is compared with a copy of itself)."""
        hosts, before = [], {}
        for k, (_, value, _) in enumerate(leaves):
            if aliases[k] != k:
                hosts.append(hosts[aliases[k]])
            elif isinstance(value, (np.ndarray, np.generic)):
                hosts.append(value)
            else:
                host = _host_copy(value)
                if written is None:
                    before[k] = host.copy()
                hosts.append(host)
        args, kwargs = self._arguments(sig, iter(hosts))
        result = self.fun(*args, **kwargs)
        if written is not None:
            for k in written:
                if aliases[k] == k and not isinstance(leaves[k][1], (np.ndarray, np.generic)):
                    _write_back(leaves[k][1], hosts[k])
        for k, old in before.items():
            if not np.array_equal(hosts[k], old, equal_nan=hosts[k].dtype.kind in "fc"):
                _write_back(leaves[k][1], hosts[k])
        return _to_callers(result, leaves)

    def _key(self, args, kwargs):
        sig, leaves = self._signature(args, kwargs)
        target = self._target_for(leaves)
        aliases = _aliases(leaves)
        # the products' default precision in force is part of what a trace builds
        from .ops.linalg import default_precision
        return (sig, target, aliases, default_precision()), sig, leaves

    def _entry(self, args, kwargs):
        """(the call's trace, array leaves, results or None): traced and
        compiled the first time this signature is seen; traced again on
        every call where the function breaks (its programs cached)."""
        key, sig, leaves = self._key(args, kwargs)
        entry = self.programs.get(key)
        results = None
        if entry is None or entry.breaking:
            entry, results = self._trace(sig, leaves, key[1], key[2])
            self.programs[key] = entry
        if entry.host:
            results = self._on_host(sig, leaves, key[2], entry.written)
        return entry, leaves, results

    def __call__(self, *args, **kwargs):
        trace, leaves, results = self._entry(args, kwargs)
        if trace.host:
            return results
        if results is None:
            prog = trace.program
            used = prog.placeholders if prog is not None else ()   # what the outputs read
            bindings = {}
            for k, (name, v, _) in enumerate(leaves):
                if trace.aliases[k] == k and name in used:
                    bindings[name] = v
            results = prog(**bindings) if prog is not None else []
            if not isinstance(results, (list, tuple)):
                results = [results]
        returned = len(results) - len(trace.written)
        for k, value in zip(trace.written, results[returned:]):
            _write_back(leaves[k][1], value)
        convert = _converter(leaves)
        values = iter(convert(r) for r in results[:returned])
        return _unflatten(trace.shape, values, leaves)

    def lower(self, *args, **kwargs) -> "object":
        """The ``pa.Program`` this call would run (traced now if new): its
        ``source``, ``kernels`` and ``schedule`` are there to inspect.  Its
        outputs are the returned arrays, then the arguments written.  For a
        function with graph breaks: the program of the code after the last
        break (``report()`` lists the breaks)."""
        return self._entry(args, kwargs)[0].program

    def report(self) -> str:
        """What this function compiled: per signature, its program, or its
        graph breaks (the user's lines, with counts, of the last call) and
        the programs its segments use."""
        lines = [f"pa.jit({getattr(self.fun, '__name__', '?')}): {len(self.programs)} "
                 f"signature(s), {len(self.segment_programs)} segment program(s)"]
        for (sig, target, *_), trace in self.programs.items():
            kind = f"NumPy on the host (its program needs more than {self.max_kernels} new " \
                "kernels)" if trace.host == "kernels" else \
                "NumPy on the host (its graph breaks needed more than " \
                f"{self.max_break_programs} programs in a call)" if trace.host else \
                "graph breaks" if trace.breaking else "one program"
            lines.append(f"  {target}: {kind}")
        if self.last_breaks:
            lines.append(f"  last call: {len(self.last_breaks)} graph break(s)")
            for line, count in _counts(self.last_breaks):
                lines.append(f"    {count:6d} x {line}")
        return "\n".join(lines)


class _Trace:
    """What one signature compiled to: the program (returned arrays, then
    the written arguments' new values), the structure of the result, the
    leaves written back, which leaf each leaf aliases, and whether the
    function breaks (then it is traced again at every call)."""
    __slots__ = ("program", "shape", "written", "aliases", "breaking", "host")

    def __init__(self, program, shape, written, aliases, breaking=False, host=False):
        self.program, self.shape, self.written, self.aliases = \
            program, shape, written, aliases
        self.breaking, self.host = breaking, host


def _host_copy(value) -> np.ndarray:
    """A NumPy copy of a device argument (a CudaView, pycuda or pyopencl array)."""
    if hasattr(value, "get"):
        return np.array(value.get())
    return np.array(value)          # CudaView.__array__ copies to the host


def _to_callers(result, leaves):
    """NumPy results of a host run, as the caller's arrays came in (the
    first device argument's library), in the same structure."""
    device = next((v for _, v, _ in leaves if not isinstance(v, (np.ndarray, np.generic))),
                  None)
    if device is None:
        return result
    from polyarray.targets.foreign import CudaView
    owner = device.owner if isinstance(device, CudaView) else device
    library = _driver_library(owner) or type(owner).__module__.split(".")[0]

    def up(x):
        if isinstance(x, (list, tuple)):
            return type(x)(up(v) for v in x)
        if isinstance(x, dict):
            return {k: up(v) for k, v in x.items()}
        if not isinstance(x, np.ndarray) or any(x is v for _, v, _ in leaves):
            return x
        x = np.require(x, requirements="C")  # (a view of an argument's copy: x[::-1])
        if library == "cupy":
            import cupy
            return cupy.asarray(x)
        if library == "torch":
            import torch
            return torch.as_tensor(x, device=owner.device)
        if library == "pycuda":
            import pycuda.gpuarray as ga
            return ga.to_gpu(x)
        if library == "opencl":
            import pyopencl.array as cla
            return cla.to_device(owner.queue, x)
        return x
    return up(result)


def _is_bound(node, bindings) -> bool:
    return isinstance(node, N.Placeholder) and not node.shared and node.name in bindings


def _trace_constants(outputs):
    """Results that read no argument (every argument static, or unused) and
    host data alone are constants of the trace: computed now by the NumPy
    target, as the values of host data asked for inside a trace are
    (``reevaluation``), and the program returns them.  A loop over shrinking
    selections of such data (NPBench's mandelbrot2: 40 scatters of computed
    indices) would otherwise be a device program of a kernel per step."""
    _LOG.debug("pa.jit: results of no argument, computed by NumPy as constants")
    before = [a.node for a in outputs]      # (an array returned twice is rebound once)
    nodes = list(dict.fromkeys(before))
    values = _compile([Array(n) for n in nodes], target="numpy")()
    if len(nodes) == 1:
        values = [values]
    leaves = {id(n): _data_leaf(np.asarray(v).reshape(n.shape)) for n, v in zip(nodes, values)}
    constants = []
    for a, node in zip(outputs, before):
        if type(a) is Array or not hasattr(a, "_root"):
            a._node = leaves[id(node)]              # (the array keeps its marks)
        else:                                       # a view: its values, as data
            a = Array(leaves[id(node)])
        constants.append(a)
    return constants


def _session_results(session, nodes, options):
    """The final values of a call with graph breaks: the nodes computed by
    one program (cached), values already computed at a break taken as
    they are; NumPy arrays unless the call keeps device results."""
    todo = [n for n in dict.fromkeys(nodes) if not _is_bound(n, session.bindings)]
    session.options = options
    computed = dict(zip(map(id, todo), session.run(todo))) if todo else {}
    host = options.get("out") != "device"
    out = []
    for n in nodes:
        if _is_bound(n, session.bindings):
            v = session.bindings[n.name]
            if n in session.inputs:     # the caller's array: copied, since the arguments
                v = _copy(v)            # written back before this one is read may be it
        else:
            v = computed[id(n)]
        if host and not isinstance(v, np.ndarray):
            v = v.get() if hasattr(v, "get") else np.asarray(v)
        out.append(v)
    return out


def _copy(value):
    """A copy of an argument's array where it lives (NumPy, pyopencl and
    pycuda arrays have ``copy``)."""
    copy = getattr(value, "copy", None)
    return copy() if callable(copy) else value


def _counts(lines):
    counts = {}
    for line in lines:
        counts[line] = counts.get(line, 0) + 1
    return sorted(counts.items(), key=lambda kv: -kv[1])


def _log_breaks(fun, breaks):
    if _LOG.isEnabledFor(logging.INFO):
        where = "; ".join(f"{line} ({n}x)" for line, n in _counts(breaks)[:5])
        _LOG.info("pa.jit(%s): %d graph break(s): %s", getattr(fun, "__name__", "?"),
                  len(breaks), where)


# -- arguments: aliases, layouts, writes ----------------------------------------

def _memory(value):
    """(kind, address, extent in bytes, shape, strides, dtype) of an array
    argument, or None where its memory is not known."""
    try:
        if isinstance(value, np.ndarray):
            lo, hi = np.lib.array_utils.byte_bounds(value)
            return ("host", lo, hi, value.shape, value.strides, value.dtype.str)
        from polyarray.targets.foreign import CudaView
        if isinstance(value, CudaView):
            offset, extent = value.span()
            lo = value.ptr + offset
            return ("cuda", lo, lo + extent, value.shape, value.strides, value.dtype.str)
        library = _driver_library(value)
        if library == "pycuda":
            lo = int(value.gpudata)
            return ("cuda", lo, lo + value.nbytes, value.shape, value.strides,
                    value.dtype.str)
        if library == "opencl":
            # a cl_mem is a handle, not an address: offsets compare within one buffer
            handle = value.base_data.int_ptr if value.base_data is not None else 0
            return (f"opencl {handle}", value.offset, value.offset + value.nbytes,
                    value.shape, value.strides, value.dtype.str)
    except Exception:          # noqa: BLE001  (an array whose memory we cannot read)
        return None
    return None


def _aliases(leaves) -> tuple:
    """For each leaf, the index of the first leaf that is the same array
    (same memory, shape, strides and dtype): one placeholder serves both."""
    seen, out = {}, []
    for k, (_, value, _) in enumerate(leaves):
        mem = _memory(value) if not isinstance(value, np.generic) else None
        key = mem if mem is not None and mem[2] > mem[1] else ("id", id(value))
        out.append(seen.setdefault(key, k))
    return tuple(out)


def _inputs(leaves, aliases) -> dict:
    """leaf index -> (its Array, the placeholder node), one per alias group,
    with NumPy's write rules: read-only arrays, 0-d arrays (not scalars),
    and the strides that decide which reshapes are views."""
    inputs = {}
    for k, (name, v, library) in enumerate(leaves):
        if aliases[k] != k:
            continue
        arr = Array(_placeholder(name, v.shape, np.dtype(v.dtype)))
        if isinstance(v, np.ndarray):
            if not v.flags.writeable:
                mark_read_only(arr)
            if v.ndim == 0:
                mark_array_0d(arr)
            set_strides(arr, v.strides)
        elif not isinstance(v, np.generic):
            if library in ("jax", "jaxlib"):
                mark_read_only(arr)       # JAX arrays are immutable
            if not v.shape:
                mark_array_0d(arr)
        inputs[k] = (arr, arr._node)
    return inputs


def _check_overlaps(leaves, aliases, written):
    """Arguments that share memory without being the same array may be
    read, as NumPy reads them; a write to one of them is refused."""
    if not written:
        return
    mems = [(_memory(v) if aliases[k] == k and not isinstance(v, np.generic) else None)
            for k, (_, v, _) in enumerate(leaves)]
    for k in written:
        a = mems[k]
        if a is None:
            continue
        for j, b in enumerate(mems):
            if j != k and b is not None and a[0] == b[0] and a[1] < b[2] and b[1] < a[2]:
                raise ValueError(
                    f"pa.jit: arguments {leaves[k][0]!r} and {leaves[j][0]!r} share memory "
                    f"(overlapping views of one array) and the function writes to "
                    f"{leaves[k][0]!r}; polyarray cannot order such writes as NumPy "
                    f"does: pass a copy of one of them")


def _write_back(arg, value):
    """Put ``value`` (a result of the program) into the caller's array
    ``arg``, where it lives: NumPy arrays on the host, device arrays on
    their device (no host round trip)."""
    if isinstance(arg, np.ndarray):
        if not isinstance(value, np.ndarray):
            value = value.get() if hasattr(value, "get") else np.asarray(value)
        np.copyto(arg, value.reshape(arg.shape), casting="unsafe")
        return
    from polyarray.targets.foreign import CudaView
    owner = arg.owner if isinstance(arg, CudaView) else arg
    mod = _driver_library(owner) or type(owner).__module__.split(".")[0]
    if mod == "cupy":
        import cupy
        owner[...] = cupy.asarray(value)
    elif mod == "torch":
        import torch
        owner.copy_(torch.as_tensor(value, device=owner.device))
    elif mod in ("pycuda", "opencl") and isinstance(value, np.ndarray):     # a host result
        if not owner.flags.c_contiguous:
            raise NotImplementedError(f"pa.jit: writing back into a non-contiguous "
                                      f"{'pycuda GPUArray' if mod == 'pycuda' else 'pyopencl array'}"
                                      " is not supported; pass a contiguous one")
        owner.set(np.require(value.reshape(owner.shape), owner.dtype, "C"))  # (0-d kept)
    elif mod == "pycuda":
        import pycuda.driver as drv
        if not (owner.flags.c_contiguous and value.flags.c_contiguous):
            raise NotImplementedError("pa.jit: writing back into a non-contiguous pycuda "
                                      "GPUArray is not supported; pass a contiguous one")
        drv.memcpy_dtod(owner.gpudata, value.gpudata, owner.nbytes)
    elif mod == "opencl":
        import pyopencl as cl
        if not (owner.flags.c_contiguous and value.flags.c_contiguous):
            raise NotImplementedError("pa.jit: writing back into a non-contiguous pyopencl "
                                      "array is not supported; pass a contiguous one")
        if owner.nbytes:
            # the program ran on polyarray's queue: the copy on the caller's waits for it
            wait = [cl.enqueue_marker(value.queue)] if value.queue is not owner.queue else None
            cl.enqueue_copy(owner.queue, owner.base_data, value.base_data,
                            byte_count=owner.nbytes, dst_offset=owner.offset,
                            src_offset=value.offset, wait_for=wait)
    else:
        raise TypeError(f"pa.jit: the function writes to an argument of type "
                        f"{type(owner).__name__}, which polyarray cannot write back into")


# -- results ------------------------------------------------------------------------

def _outputs(result, returned):
    """(structure, list of Arrays) of what the traced function returned;
    an argument returned as it came is ("arg", leaf index)."""
    if result is None:
        return None, []
    if isinstance(result, (list, tuple)):
        parts = [_outputs(r, returned) for r in result]
        return ((type(result).__name__, tuple(p[0] for p in parts)),
                [a for p in parts for a in p[1]])
    if isinstance(result, dict):
        keys = sorted(result)
        parts = [_outputs(result[k], returned) for k in keys]
        return ("dict", tuple(zip(keys, (p[0] for p in parts)))), \
            [a for p in parts for a in p[1]]
    if isinstance(result, Array):
        k = returned.get(id(result))
        if k is not None:
            return ("arg", k), []
        return "array", [result]
    if isinstance(result, (np.ndarray, np.generic, int, float, bool)):
        from .api.creation import asarray
        return "array", [asarray(result)]
    raise TypeError(f"a pa.jit function must return arrays (or lists, tuples, dicts of "
                    f"them, or None), got {type(result).__name__}")


def _unflatten(shape, values, leaves):
    def build(s):
        if s is None:
            return None
        if s == "array":
            return next(values)
        tag, parts = s
        if tag == "arg":
            return leaves[parts][1] if not _is_view(leaves[parts][1]) else \
                leaves[parts][1].owner
        if tag == "dict":
            return {k: build(p) for k, p in parts}
        items = [build(p) for p in parts]
        return items if tag == "list" else tuple(items)
    return build(shape)


def _is_view(value):
    from polyarray.targets.foreign import CudaView
    return isinstance(value, CudaView)


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


def jit(fun=None, *, static_argnums=(), static_argnames=(), target=None, graph_breaks=True,
        max_break_programs=32, max_kernels=64, **compile_options):
    """``pa.jit(f)`` or ``@pa.jit(static_argnames=...)``: run a NumPy function
    through polyarray (see the module docstring).  ``target`` is chosen from
    the arguments when not given (CUDA arrays: "cuda"), else the default
    target; ``compile_options`` go to ``pa.compile`` (e.g. ``schedule=``).
    Where the function needs a traced value (``if x.sum() > 0:``), the work
    traced so far runs and Python gets the value (a graph break, logged at
    INFO; ``Jitted.report()`` counts them); ``graph_breaks=False`` raises
    ``pa.LazyValueError`` there instead.  A call whose breaks need more than
    ``max_break_programs`` new programs, or more than a quarter of them at
    one line (code that branches on every element, or whose breaks bake
    values into what follows), runs with NumPy on the host instead, for that
    signature from then on (a WARNING says so, and ``report()``); None: no
    limit.  So does a function whose program needs more than ``max_kernels``
    new kernels (each step of a loop over shrinking slices is a kernel of
    its own; generating them all would cost more than NumPy's run)."""
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums,
                                 static_argnames=static_argnames, target=target,
                                 graph_breaks=graph_breaks,
                                 max_break_programs=max_break_programs,
                                 max_kernels=max_kernels, **compile_options)
    return Jitted(fun, static_argnums, static_argnames, target, graph_breaks,
                  max_break_programs, max_kernels, **compile_options)
