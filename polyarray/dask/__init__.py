"""``pa.dask.evaluate``: a polyarray DAG over Dask arrays, chunk by chunk.

Dask schedules (threads, processes or a ``distributed`` cluster: one device
per worker); each task runs one compiled polyarray program on its blocks:
host NumPy blocks, or device arrays (``to_device``, CuPy) bound where they
are, whose results stay on the device.  ``docs/design/dask.md`` says how the DAG is cut.  Dask is
imported only when called, so polyarray imports without it.
"""
from __future__ import annotations

import numpy as np

from . import cluster       # worker settings (imports nothing of Dask's)

__all__ = ["evaluate", "to_device", "stats", "moves", "cluster"]


def stats(reset=False) -> dict:
    """This process's counters of chunk tasks: programs compiled, tasks run,
    seconds in them, bytes of blocks in and results out, and the bytes that
    crossed between host and device memory (``host_to_device``: host blocks
    bound to a device program, uploads; ``device_to_host``: a device
    program's host results, downloads of device chunks).  ``reset=True``
    sets them to 0 after reading.  On a cluster: ``client.run(pa.dask.stats)``
    gives each worker's."""
    from .tasks import _ZERO, STATS
    out = dict(STATS)
    if reset:
        STATS.update(_ZERO)
    return out


def moves(client=None, reset=False):
    """The chunks that a ``distributed`` cluster's workers copied from one
    another, and their bytes: a ``transfers.Moves`` table (``print`` it); see
    ``polyarray/dask/transfers.py``."""
    from .transfers import moves as gather
    return gather(client, reset=reset)


def to_device(x, target=None):
    """A dask array whose chunks are device arrays: each host chunk copied
    once to the device of the process that makes it (``target``: "cuda" or
    "opencl"; default: that process's default target), as
    ``x.map_blocks(cupy.asarray)`` does for CuPy.  The chunks are
    polyarray's own device arrays (pycuda GPUArrays on CUDA, pyopencl
    Arrays on OpenCL; no CuPy needed); ``evaluate`` binds them, and CuPy
    chunks, where they are.  ``persist()`` keeps them there; ``compute()``
    gathers them in this process (``concatenate`` on the device)."""
    da = _import_dask()
    if target is not None:
        from polyarray import targets
        targets.target_class(target)
    if not _is_dask(x):
        x = da.from_array(np.asarray(x))
    from . import tasks
    _register_concatenate()
    return x.map_blocks(tasks.upload, target=target, dtype=x.dtype,
                        meta=np.empty((0,) * x.ndim, x.dtype))


def _register_concatenate():
    """Dask's ``concatenate`` (``compute()`` of a dask array, rechunking) for
    polyarray's device chunks: on the device, by a polyarray program (their
    ``sizeof``: ``tasks.register_sizeof``)."""
    from dask.array.dispatch import concatenate_lookup
    from . import tasks
    concatenate_lookup.register_lazy("pycuda", tasks.register_concatenate)
    concatenate_lookup.register_lazy("pyopencl", tasks.register_concatenate)


class _HostChecks:
    """What ``Program.check_bindings`` reads of a target, for arrays that
    stay where they are (dask arrays are checked by shape and dtype; nothing
    is computed or copied)."""

    def import_binding(self, value):
        return value

    def binding_info(self, value):
        if isinstance(value, (np.ndarray, np.generic)) or _is_dask(value):
            return tuple(value.shape), value.dtype
        return None

    def prepare_binding(self, value):
        return value


def _is_dask(value) -> bool:
    import sys
    da = sys.modules.get("dask.array")
    return da is not None and isinstance(value, da.Array)


class _Checker:
    """Placeholders of the outputs, checked by the one binding check."""
    target_name = "dask"

    def __init__(self, placeholders):
        self.placeholders = placeholders
        self._sorted_placeholders = sorted(placeholders.items())
        self._target = _HostChecks()

    from ..program import Program as _Program
    check_bindings = _Program.check_bindings


def _import_dask():
    try:
        import dask.array as da
    except ImportError as e:
        raise ImportError("pa.dask needs dask: pip install 'polyarray[dask]' (dask[array], "
                          "distributed)") from e
    return da


def _check_chunks(name, value):
    """What can be seen of a dask array's chunks before anything runs: its
    meta's type, and the chunks written into its graph as values (not made
    by tasks): each must be an array of the declared shape and dtype."""
    from . import tasks
    meta = getattr(value, "_meta", None)
    if meta is not None and tasks.chunk_kind(meta) is None:
        raise TypeError(
            f"pa.dask.evaluate: the dask array bound to placeholder {name!r} says its chunks "
            f"are {type(meta).__module__}.{type(meta).__qualname__} (its meta), which is no "
            "array: chunks must be NumPy arrays or device arrays (CuPy, pycuda, pyopencl)")
    from dask.core import flatten
    from dask.highlevelgraph import MaterializedLayer
    layer = value.dask.layers.get(value.name)
    if not isinstance(layer, MaterializedLayer):
        return
    for key in flatten(value.__dask_keys__()):
        chunk = layer.mapping.get(key)
        chunk = getattr(chunk, "value", chunk)      # a DataNode's value
        if not _is_data(chunk):     # a task, a key, a Future: checked when it is made
            continue
        index = tuple(key[1:])
        want = tuple(c[i] for c, i in zip(value.chunks, index))
        what = tasks.bad_chunk(chunk, want, value.dtype)
        if what is not None:
            raise ValueError(
                f"pa.dask.evaluate: chunk {index} of the dask array bound to placeholder "
                f"{name!r} has {what} (make the chunks NumPy or device arrays of the "
                "shape and dtype the array declares)")


def _is_data(value) -> bool:
    """A chunk written into the graph as a value: an array, a scalar, or a
    (nested) list of numbers (the mistake ``bad_chunk`` names)."""
    from . import tasks
    if isinstance(value, (np.ndarray, np.generic)) or tasks.chunk_kind(value) is not None:
        return True
    if isinstance(value, list):
        stack = list(value)
        while stack:
            e = stack.pop()
            if isinstance(e, list):
                stack.extend(e)
            elif not isinstance(e, (bool, int, float, complex, np.generic)):
                return False
        return True
    return False


def evaluate(outputs, /, target=None, split_every=None, out="host", **bindings):
    """The outputs (an array, a list/tuple or a dict of arrays) as dask
    arrays, in the same structure, computed block by block.

    Placeholders are bound to dask arrays (their chunks are the chunks) or
    NumPy arrays (wrapped with dask's automatic chunks).  Bindings are
    checked here, before anything is submitted, as ``Program.__call__``
    checks them.  Each task runs one polyarray program on ``target``
    (default: the default target of the process that runs it): a fused
    elementwise region, or one with the per-block partial of a reduction
    or contraction; ``split_every`` is the fan-in of the tree reductions.
    Operations whose blocks need other blocks' data at computed positions
    (gathers, sort, positions as values) raise NotImplementedError.

    Device chunks (``to_device``, CuPy) are bound where they are, and what
    is made from them stays on the device: elementwise results, reductions'
    partials (combined on the device, but for argmax/argmin and variance,
    whose small per-block records are combined on the host), contractions'
    block products and their sums.  ``out``: "host" (NumPy chunks, the
    default: device results are downloaded) or "device" (device chunks;
    host inputs are uploaded once, by the tasks that read them)."""
    da = _import_dask()
    if out not in ("host", "device"):
        raise ValueError(f"pa.dask.evaluate: out must be 'host' or 'device', got {out!r}")
    if out == "device" and target == "numpy":
        raise ValueError("pa.dask.evaluate: out='device' needs a device target (cuda, "
                         "opencl); the numpy target keeps its results on the host")
    from ..ir import nodes as N
    from ..program import _flatten
    if target is not None:
        from polyarray import targets
        targets.target_class(target)            # unknown names are refused now
    kind, keys, nodes = _flatten(outputs)
    placeholders = N.placeholders(nodes)
    prepared = _Checker(placeholders).check_bindings(bindings)
    arrays = {}
    for name, ph in placeholders.items():
        value = prepared[name]
        if not isinstance(value, da.Array):
            value = da.from_array(np.asarray(value))
        else:       # each chunk checked where it is made (fused into the task reading it)
            _check_chunks(name, value)
            from .tasks import checked_chunk
            value = value.map_blocks(checked_chunk, placeholder=name, dtype=value.dtype,
                                     meta=value._meta)
        arrays[ph] = value
    from . import tasks
    from .graph import Translator
    translate = Translator(nodes, arrays, target=target, split_every=split_every, out=out)
    if out == "device":
        _register_concatenate()
    results = [translate.materialize(translate.eff(n)) for n in nodes]
    results = [r.map_blocks(tasks.to_output, out=out, target=target, dtype=r.dtype,
                            meta=translate.empty(r.ndim, r.dtype) if out == "device"
                            else np.empty((0,) * r.ndim, r.dtype)) for r in results]
    if kind == "single":
        return results[0]
    if kind == "dict":
        return dict(zip(keys, results))
    return tuple(results) if kind == "tuple" else list(results)
