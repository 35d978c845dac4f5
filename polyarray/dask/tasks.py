"""The worker side of ``pa.dask.evaluate``: one task runs one compiled
polyarray program on its chunks, and the small host functions that combine
partial reductions.

A ``Stage`` is plain picklable data (no interned nodes cross processes: a
node's hash is only valid in the process that made it).  The worker rebuilds
the stage's nodes at the chunk shapes it is given and compiles them once per
distinct chunk shape per process (``_PROGRAMS``); the compile itself also
hits polyarray's disk cache, which all workers of a machine share
(``$POLYARRAY_CACHE_DIR`` or the user cache dir).
"""
from __future__ import annotations

import atexit
import sys
import threading
import time
from dataclasses import dataclass

import numpy as np

from ..array import Array
from ..ir import nodes as N
from ..ops.inputs import native_dtype
from ..program import compile as compile_program
from . import moments

# (stage key, block shapes, target) -> (Program, the reduced block shape); the
# oldest entry goes past _MAX_PROGRAMS (polyarray's own caches keep the kernels)
_PROGRAMS: dict = {}
_MAX_PROGRAMS = 512
# a kernel's arguments are set before each launch (clSetKernelArg is not
# thread-safe): the tasks of one process take turns on its device
_LOCK = threading.RLock()
# this process's counters (tests, benchmarks): programs compiled, tasks run,
# seconds in them, bytes of blocks in and results out, and the bytes that
# crossed between host and device memory (uploads of host blocks to a device
# program, downloads of its results or of device chunks to the host)
STATS = {"compiles": 0, "tasks": 0, "seconds": 0.0, "bytes_in": 0, "bytes_out": 0,
         "host_to_device": 0, "device_to_host": 0}
_ZERO = dict(STATS)


@dataclass(frozen=True)
class Stage:
    """One task's work, the same for every block of one blockwise call.

    ``entries``: nodes in topological order, each ``(kind, letters, full
    shape, dtype, *fields)``; children are entry positions.  Kinds: ``in``
    (input ``k``), ``il`` (an elementwise IndexLambda: expr, op, bindings),
    ``reduce`` (op, child, axes), ``einsum`` (subscripts, children, precision),
    ``moments`` (child, axes: ``moments.chunk_outputs``).  ``letters`` name
    the axes (the blockwise indices), so an entry's chunk shape is the block
    size of each letter (1 where the full size is 1: a broadcast axis).
    ``kind``: ``map`` (the outputs as they are), ``reduce`` (a record per
    block, kept with length-1 reduced axes: ``fields`` name each
    reduction's partials; argmax/argmin give the value beside the index,
    ``moments`` count, sum and M2), ``einsum`` (length-1 axes for the
    contracted letters ``extra``)."""
    key: str
    kind: str
    entries: tuple
    outputs: tuple
    out_letters: str
    target: str | None
    extra: str = ""
    fields: tuple = ()      # reduce: (record field, entry, part) per partial
    out: str = "auto"       # "device": results stay on the device even for host blocks


def _sizes(stage, blocks) -> dict:
    """Letter -> block size, from the inputs (their non-broadcast axes)."""
    sizes = {}
    for kind, letters, shape, _dtype, *fields in stage.entries:
        if kind == "in":
            block = blocks[fields[0]]
            for letter, full, n in zip(letters, shape, np.shape(block)):
                if full != 1:
                    sizes[letter] = n
    return sizes


def chunk_shape(letters, full_shape, sizes) -> tuple:
    return tuple(1 if full == 1 else sizes.get(letter, 1)
                 for letter, full in zip(letters, full_shape))


def build(stage, sizes) -> list:
    """The stage's nodes at the chunk shapes ``sizes`` gives."""
    made = []
    for kind, letters, full, dtype, *fields in stage.entries:
        shape = chunk_shape(letters, full, sizes)
        if kind == "in":
            node = N.Placeholder.make(shape, dtype, f"in{fields[0]}")
        elif kind == "il":
            expr, op, bindings = fields
            node = N.IndexLambda.make(shape, dtype, expr,
                                      tuple((k, made[i]) for k, i in bindings), op)
        elif kind == "reduce":
            op, child, axes = fields
            node = N.Reduce.make(shape, dtype, op, made[child], axes)
        elif kind == "moments":         # made by _program (moments.chunk_outputs)
            node = None
        else:
            subscripts, children, precision = fields
            node = N.Einsum.make(shape, dtype, subscripts, tuple(made[i] for i in children),
                                 precision)
        made.append(node)
    return made


def _program(stage, blocks, target, out):
    shapes = tuple(np.shape(b) for b in blocks)
    key = (stage.key, shapes, target, out)
    hit = _PROGRAMS.get(key)
    if hit is None:
        sizes = _sizes(stage, blocks)
        made = build(stage, sizes)
        reduced = None
        if stage.kind == "reduce":      # the partials, and the block's reduced shape
            outs, reduced = _partials(stage, made)
        else:
            outs = [made[i] for i in stage.outputs]
        options = {"out": "device"} if out == "device" else {}
        prog = compile_program([Array(n) for n in outs], target=target, **options)
        STATS["compiles"] += 1
        if len(_PROGRAMS) >= _MAX_PROGRAMS:
            del _PROGRAMS[next(iter(_PROGRAMS))]
        hit = _PROGRAMS[key] = (prog, reduced)
    return hit


# -- chunks: host NumPy arrays, or device arrays ------------------------------

def chunk_kind(value):
    """``"host"`` (a NumPy array or scalar), ``"cupy"`` (a CuPy array),
    ``"cuda"`` (a pycuda GPUArray, polyarray's CUDA results, another
    library's ``__cuda_array_interface__``/DLPack CUDA array), ``"opencl"``
    (a pyopencl Array, polyarray's OpenCL results), or None (not an array)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return "host"
    module = type(value).__module__.split(".")[0]
    if module == "cupy":
        return "cupy"
    from polyarray.targets.foreign import driver_library, is_foreign_cuda
    library = driver_library(value)
    if library is not None:
        return "cuda" if library == "pycuda" else library
    return "cuda" if is_foreign_cuda(value) else None


DEVICE_KINDS = {"cupy": "cuda", "cuda": "cuda", "opencl": "opencl"}


def _device_target(target, kinds):
    """The target that runs a task on device chunks: the chunks' own (CUDA
    arrays: cuda; pyopencl arrays: opencl) where ``target`` is None."""
    if target is not None:
        return target
    for k in kinds:
        if k in DEVICE_KINDS:
            return DEVICE_KINDS[k]
    from ..program import get_default_target
    return get_default_target()


def _c_order(value, dtype=None):
    """A C-contiguous host array of ``value``'s shape (0-d stays 0-d:
    ``np.ascontiguousarray`` would make it 1-d)."""
    host = np.asarray(value, dtype=dtype)
    return host if host.flags.c_contiguous else np.ascontiguousarray(host).reshape(host.shape)


def _nbytes(value) -> int:
    return int(np.prod(np.shape(value))) * np.dtype(value.dtype).itemsize


def to_host(chunk):
    """A chunk as a host NumPy array (a device chunk downloaded and counted
    in ``device_to_host``)."""
    kind = chunk_kind(chunk)
    if kind == "host" or kind is None:
        return chunk
    if kind == "cuda" and hasattr(chunk, "gpudata"):
        from polyarray.targets.cuda.driver import driver
        driver()            # pycuda copies need the context current in this thread
    if kind == "opencl" and not chunk.flags.c_contiguous:
        host = _strided_download(chunk)
    elif hasattr(chunk, "get"):         # pycuda, pyopencl, CuPy
        host = chunk.get()
    else:
        from polyarray.targets.foreign import cuda_view
        from polyarray.targets.foreign import to_host as view_to_host
        host = view_to_host(cuda_view(chunk))
    STATS["device_to_host"] += host.nbytes
    return np.asarray(host)


def _strided_download(chunk):
    """A strided pyopencl Array (a view: transposed, stepped, reversed) as a
    host array: the bytes it spans copied down, viewed with its strides
    (pyopencl's ``get`` refuses arrays that are not contiguous)."""
    import pyopencl as cl
    if chunk.size == 0:
        return np.empty(chunk.shape, chunk.dtype)
    low, high = _span(chunk)
    span = np.empty(high - low, np.uint8)
    cl.enqueue_copy(chunk.queue, span, chunk.base_data, src_offset=low)
    view = np.ndarray(chunk.shape, chunk.dtype, buffer=span, offset=chunk.offset - low,
                      strides=chunk.strides)
    return np.ascontiguousarray(view)


def upload(chunk, target=None):
    """A host chunk as a device array of ``target`` (default: this process's
    default target): a pycuda GPUArray from polyarray's CUDA memory pool, or
    a pyopencl Array on the OpenCL target's queue; device chunks unchanged."""
    kind = chunk_kind(chunk)
    if kind in DEVICE_KINDS:
        return chunk
    host = _c_order(chunk)
    name = _device_target(target, ())
    with _LOCK:
        _drain()
        if name == "cuda":
            from polyarray.targets.cuda.driver import driver
            driver()
            import pycuda.gpuarray as ga
            out = _owned(ga.to_gpu(host, allocator=_allocate))
            _picklable(type(out))
        elif name == "opencl":
            import pyopencl.array as cla
            from polyarray.targets import get_target
            queue = get_target("opencl")._device(None)[3]
            out = cla.to_device(queue, host)
            _picklable(type(out))
        else:
            raise ValueError(f"pa.dask.to_device: the {name!r} target keeps its arrays on the "
                             "host; give target='cuda' or 'opencl' (or set the workers' "
                             "POLYARRAY_TARGET)")
        STATS["host_to_device"] += host.nbytes
    return out


def _contiguous(block, kind):
    """pyopencl Arrays must be C-contiguous to be bound (a dask view of
    one, as ``x.T``, is not): such a block is gathered on the device
    (``_gathered``), or where its strides are no whole elements, copied
    through the host, counted both ways.  CUDA arrays are
    copied on the device by the target."""
    if kind == "opencl" and not block.flags.c_contiguous:
        gathered = _gathered(block)
        if gathered is not None:
            return gathered
        host = _c_order(to_host(block))
        STATS["host_to_device"] += host.nbytes
        import pyopencl.array as cla
        return cla.to_device(block.queue, host)
    return block


# the programs of the device-side steps (views gathered, partials folded,
# chunks joined, device records combined: ``device_records``), one per key and
# target; dropped at exit with the stages' programs
_STEPS: dict = {}


def step_program(key, make, target):
    """The program ``make()`` builds (its results left on the device),
    compiled for ``target`` once per ``key``."""
    prog = _STEPS.get((key, target))
    if prog is None:
        prog = _STEPS[(key, target)] = compile_program(make(), target=target, out="device")
        STATS["compiles"] += 1
    return prog


def _span(chunk):
    """The first and the end byte of the buffer that a strided device
    array (a view: transposed, stepped, reversed) reads."""
    shape, strides = tuple(chunk.shape), tuple(chunk.strides)
    low = chunk.offset + sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    high = chunk.offset + sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    return low, high + chunk.dtype.itemsize


def _gathered(block):
    """A C-order copy of a strided pyopencl Array made on its device: the
    buffer it spans (``_span``), read from its first element at
    ``sum(i_d * stride_d)`` by a polyarray program (one per shape and
    strides, whatever the offset); None where a stride is no whole element."""
    itemsize = block.dtype.itemsize
    if block.size == 0 or any(s % itemsize for s in block.strides):
        return None
    shape, steps = tuple(block.shape), tuple(s // itemsize for s in block.strides)
    low, high = _span(block)
    first, extent = (block.offset - low) // itemsize, (high - low) // itemsize
    dtype = np.dtype(block.dtype)
    import pyopencl.array as cla
    flat = cla.Array(block.queue, (extent,), dtype, data=block.base_data, offset=low)

    def make():
        from ..api.creation import arange, placeholder
        index = first
        for d, (n, s) in enumerate(zip(shape, steps)):
            along = (1,) * d + (n,) + (1,) * (len(shape) - d - 1)
            index = index + arange(n, dtype=np.int64).reshape(along) * s
        return placeholder("flat", (extent,), dtype)[index]
    with _LOCK:
        return step_program(("gather", shape, steps, dtype.str), make, "opencl")(flat=flat)


def _like(result, kinds):
    """A device result as the chunks' library gives them: CuPy where a
    chunk was CuPy (zero-copy), else polyarray's own device array (made
    picklable: ``_picklable``)."""
    if "cupy" in kinds:
        import cupy
        return cupy.asarray(result)
    _picklable(type(result))
    return result


def _picklable(cls):
    """Pickling for polyarray's device chunks (pycuda and pyopencl arrays
    have none): Dask sends a chunk that one worker made to another worker
    (a reduction's partials, a contraction's blocks) through the host: the
    chunk's bytes are downloaded by the sender and uploaded to the
    receiver's device (both counted in ``STATS``)."""
    import copyreg
    if cls in copyreg.dispatch_table:
        return
    for c in cls.__mro__:       # and the library's own class (views, reshapes)
        if c is cls or c.__module__.split(".")[0] in ("pycuda", "pyopencl"):
            if c is not object and c not in copyreg.dispatch_table:
                copyreg.pickle(c, _reduce_chunk)


def _reduce_chunk(chunk):
    target = "opencl" if chunk_kind(chunk) == "opencl" else "cuda"
    return upload, (_c_order(to_host(chunk)), target)


# Dask handles device chunks in threads of its own (a worker's event loop, the
# client's, its pool threads, the garbage collector's), where polyarray's CUDA
# context may not be current.  pycuda frees a pooled block only with the
# context current in the freeing thread: elsewhere it warned
# ("pooled_device_allocation in out-of-thread context could not be cleaned
# up") or, in a thread with no context at all, aborted the worker process
# ("explicit_context_dependent failed: invalid device context").  So a CUDA
# chunk made here holds its block through a ``_Block`` (an int: the device
# pointer, as pycuda and the kernels read it), which, when the chunk dies in
# any thread, hands the block to ``_GRAVE`` and frees it there with the
# context pushed (``_drain``).  Dask's copies of a chunk (``copy()``) come
# from ``_allocate``: the same kind of block, the context made current first.
_GRAVE: list = []
_EXIT_HOOK: list = []
_CONTEXT: list = []


class _Block(int):
    """A pooled device block, as its device pointer, freed with the context
    pushed in whichever thread drops it."""

    def __new__(cls, allocation):
        block = int.__new__(cls, int(allocation))
        block.allocation = allocation
        return block

    def __del__(self):
        allocation = self.__dict__.pop("allocation", None)
        if allocation is None:
            return
        _GRAVE.append(allocation)
        del allocation
        _drain()


def _context():
    """polyarray's CUDA context, held here: at exit pycuda's
    ``autoprimaryctx`` drops its own reference before the last chunks die."""
    if not _CONTEXT:
        import pycuda.autoprimaryctx as primary
        _CONTEXT.append(primary.context)
    return _CONTEXT[0]


def _drain():
    """Free the blocks in ``_GRAVE`` that nothing else holds, with
    polyarray's CUDA context pushed on this thread (any thread)."""
    if not _GRAVE:
        return
    try:
        context = _context()
        context.push()
    except Exception:       # noqa: BLE001  (no context left: kept until exit)
        return
    try:
        keep = []
        while _GRAVE:
            try:
                a = _GRAVE.pop()
            except IndexError:
                break
            if sys.getrefcount(a) > 2:      # still in use elsewhere: later
                keep.append(a)
            del a
        _GRAVE.extend(keep)
    finally:
        context.pop()


def _allocate(nbytes):
    from polyarray.targets.cuda.driver import driver, pool
    driver()                # the context current in this thread
    return _Block(pool().allocate(nbytes))


def _owned(arr):
    """A CUDA chunk made here: its block freed in any thread, its copies
    from the pool (``_Block``)."""
    ga = sys.modules.get("pycuda.gpuarray")
    if ga is not None and isinstance(arr, ga.GPUArray):
        if arr.gpudata is not None and not isinstance(arr.gpudata, int):
            arr.gpudata = _Block(arr.gpudata)
        arr.allocator = _allocate
        _exit_hook()
    return arr


def _exit_hook():
    if not _EXIT_HOOK:          # registered after the driver's: runs before it
        _EXIT_HOOK.append(True)
        _context()
        atexit.register(_at_exit)


def _at_exit():
    """At exit, before the CUDA driver's own handler: the programs this
    process compiled and the blocks nothing holds are freed with the context
    pushed on the exiting thread (pycuda warned once per block where the
    process's tasks ran in other threads), then the context is popped again:
    pycuda aborts a process whose thread ends with it still pushed.  Chunks
    that live on into teardown are ``_Block`` s, freed by ``_drain``."""
    if "pycuda.autoprimaryctx" not in sys.modules:
        return
    try:
        context = _context()
        context.push()
    except Exception:   # noqa: BLE001  (no context left: nothing can be freed)
        return
    try:
        _PROGRAMS.clear()
        _STEPS.clear()
        import gc
        gc.collect()
        _drain()
    finally:
        context.pop()


def checked_chunk(chunk, placeholder, block_info=None):
    """A chunk of the dask array bound to ``placeholder``, checked against
    what the array declares (its chunk's shape, its dtype): a producer that
    breaks them would otherwise be bound as another shape, or refused
    naming an internal placeholder.  Host and device chunks pass as they are."""
    info, declared = block_info[0], block_info[None]
    where = tuple(info["chunk-location"])
    want_shape, want_dtype = tuple(declared["chunk-shape"]), np.dtype(declared["dtype"])
    what = bad_chunk(chunk, want_shape, want_dtype)
    if what is None:
        return chunk
    raise ValueError(f"pa.dask.evaluate: chunk {where} of the dask array bound to placeholder "
                     f"{placeholder!r} has {what} (its producer must make the chunks and "
                     "dtype the array declares)")


def bad_chunk(chunk, want_shape, want_dtype):
    """What is wrong with a chunk (None: nothing)."""
    if chunk_kind(chunk) is None:
        return (f"type {type(chunk).__module__}.{type(chunk).__qualname__}, which is no "
                "array (chunks must be NumPy arrays, or device arrays: CuPy, pycuda, "
                "pyopencl, polyarray's device results; np.asarray makes a list one)")
    got_shape, got_dtype = tuple(np.shape(chunk)), getattr(chunk, "dtype", None)
    if got_shape != want_shape:
        return f"shape {got_shape}; the dask array declares {want_shape} for it"
    if got_dtype is None or native_dtype(np.dtype(got_dtype)) != native_dtype(want_dtype):
        return (f"dtype {getattr(got_dtype, 'name', type(chunk).__name__)}; the dask "
                f"array declares {want_dtype.name}")
    return None


def run_block(stage, *blocks):
    """One blockwise task: the stage's program on these blocks.  Host
    blocks in, host results out (intermediates stay on the device); where a
    block is a device array (or the stage's ``out`` is "device"), the
    program binds the device blocks where they are and its results stay on
    the device."""
    kinds = [chunk_kind(b) for b in blocks]
    device = stage.out == "device" or any(k in DEVICE_KINDS for k in kinds)
    if not device:
        blocks = [np.asarray(b) for b in blocks]
    target = _device_target(stage.target, kinds) if device else stage.target
    blocks = [_contiguous(b, k) for b, k in zip(blocks, kinds)]
    with _LOCK:
        start = time.perf_counter()
        if device:
            _drain()
        prog, reduced = _program(stage, blocks, target, "device" if device else "numpy")
        bindings = {name: blocks[int(name[2:])] for name in prog.placeholders}
        results = prog(**bindings)
        STATS["tasks"] += 1
        STATS["seconds"] += time.perf_counter() - start
        sent = sum(_nbytes(v) for v in bindings.values() if chunk_kind(v) == "host")
        got = sum(_nbytes(r) for r in results)
        STATS["bytes_in"] += sum(_nbytes(v) for v in bindings.values())
        STATS["bytes_out"] += got
        if prog.target_name == "cuda":
            _exit_hook()
        if prog.target_name != "numpy":
            STATS["host_to_device"] += sent
            if not device:
                STATS["device_to_host"] += got
    if device:
        results = [_like(_owned(r), kinds) for r in results]
    if stage.kind == "map":
        return results[0]
    if stage.kind == "einsum":
        r = results[0]
        return r.reshape(r.shape + (1,) * len(stage.extra))
    shape, count = reduced      # one record per block: the members' partials
    if device:                  # device partials stay apart: {field: partial}
        values = iter(results)
        return {name: count if part == "count" else next(values).reshape(shape)
                for name, _, part in stage.fields}
    dtypes = iter(r.dtype for r in results)
    record = np.dtype([(name, np.int64 if part == "count" else next(dtypes))
                       for name, _, part in stage.fields])
    out = np.empty(shape, record)
    values = iter(results)
    for name, _, part in stage.fields:
        out[name] = count if part == "count" else next(values).reshape(shape)
    return out


def _partials(stage, made):
    """The program outputs of a reduce stage's fields (a ``moments`` entry
    gives its sum and M2), and (the reduced block shape, its count)."""
    outs, sums = [], {}
    for _name, pos, part in stage.fields:
        kind, *_, child, axes = stage.entries[pos]
        if kind == "moments" and part != "count":
            if pos not in sums:
                sums[pos] = moments.chunk_outputs(made[child], axes)[0]
            outs.append(sums[pos][0 if part == "sum" else 1])
        elif part != "count":
            outs.append(made[pos])
    shape = made[child].shape
    reduced = tuple(1 if d in axes else n for d, n in enumerate(shape))
    return outs, (reduced, int(np.prod([shape[d] for d in axes])))


def pick(record, names=(), rename=None):
    """One member's partials from a block's record: a field, or the fields
    ``names`` as a record of the fields ``rename``.  Device partials (a dict
    of device arrays) stay on the device: a field, or a dict of the fields
    ``rename`` (``device_records``)."""
    if isinstance(record, dict):        # device partials: a device record (device_records)
        if rename is None:
            return record[names[0]]
        return {r: record[n] for n, r in zip(names, rename)}
    if rename is None:
        return np.ascontiguousarray(record[names[0]])
    out = np.empty(record.shape, np.dtype([(r, record.dtype[n]) for n, r in zip(names, rename)]))
    for n, r in zip(names, rename):
        out[r] = record[n]
    return out


def pair_dtype(dtype):
    return np.dtype([("v", dtype), ("i", np.int64)])


def add_offsets(pairs, axes, block_chunks, full, block_id=None):
    """Block-local flat indices within the reduced ``axes`` made global:
    unravelled in the block's shape, moved by the block's offsets, ravelled
    in the whole array's (``full``: the reduced axes' lengths)."""
    local_shape = tuple(block_chunks[a][block_id[a]] for a in axes)
    offsets = tuple(sum(block_chunks[a][:block_id[a]]) for a in axes)
    out = pairs.copy()
    coords = np.unravel_index(pairs["i"], local_shape)
    out["i"] = np.ravel_multi_index(tuple(c + o for c, o in zip(coords, offsets)), full)
    return out


def identity(x, axis=None, keepdims=True):
    """``da.reduction``'s chunk step (the partials are made already).  Dask
    asks it for the metadata with an array of 0 in every axis, which no real
    partial has (its reduced axes are 1): value/index pairs then answer
    with the index dtype that dask was told."""
    if isinstance(x, dict):             # a device record
        return x
    if x.dtype.names and all(n == 0 for n in x.shape):
        return np.empty(x.shape, np.int64)
    return x


def _best_pairs(x, axis, op):
    """NumPy's argmax/argmin over value/index pairs: the first NaN, else the
    first extreme value (the smallest index among ties)."""
    axis = tuple(sorted(axis if isinstance(axis, tuple) else (axis,)))
    kept = [d for d in range(x.ndim) if d not in axis]
    flat = np.transpose(x, kept + list(axis)).reshape(
        tuple(x.shape[d] for d in kept) + (-1,))
    v, i = flat["v"], flat["i"]
    best = (np.max if op == "argmax" else np.min)(v, axis=-1)
    if v.dtype.kind in "fc":
        nan = np.isnan(v)
        any_nan = nan.any(axis=-1)
        pick = np.where(any_nan[..., None], nan, v == best[..., None])
    else:
        pick = v == best[..., None]
    index = np.where(pick, i, np.iinfo(np.int64).max).min(axis=-1)
    out_shape = tuple(1 if d in axis else n for d, n in enumerate(x.shape))
    out = np.empty(out_shape, x.dtype)
    out["v"] = best.reshape(out_shape)
    out["i"] = index.reshape(out_shape)
    return out


_COMBINE = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min,
            "any": np.any, "all": np.all}
REDUCTIONS = tuple(_COMBINE) + ("argmax", "argmin")


def _flat(x):
    """The blocks of a nested list (``da.reduction`` with concatenate=False)."""
    if isinstance(x, list):
        return [b for part in x for b in _flat(part)]
    return [x]


def _host(x, axis):
    """Nested blocks concatenated on the host along the reduced ``axis``."""
    if not isinstance(x, list):
        return x
    from dask.array.core import _concatenate2
    return _concatenate2(x, axes=sorted(axis if isinstance(axis, tuple) else (axis,)))


# at most this many partials per combining program (kernel arguments)
FOLD_WIDTH = 16


def _fold_program(op, shape, dtype, k, target):
    def make():
        from ..api import elementwise as E
        from ..api.creation import placeholder
        parts = [placeholder(f"p{i}", shape, dtype) for i in range(k)]
        step = {"sum": lambda a, b: a + b, "prod": lambda a, b: a * b,
                "max": E.maximum, "min": E.minimum, "any": E.logical_or,
                "all": E.logical_and}[op]
        acc = parts[0]
        for b in parts[1:]:
            acc = step(acc, b)
        return acc.astype(dtype) if acc.dtype != np.dtype(dtype) else acc
    return step_program(("fold", op, shape, np.dtype(dtype).str, k), make, target)


def fold(blocks, op, dtype=None, target=None):
    """Partials of one shape combined elementwise on the device by
    polyarray programs (``FOLD_WIDTH`` at a time); the result is a device
    array like the partials."""
    kinds = [chunk_kind(b) for b in blocks]
    target = _device_target(target, kinds)
    dtype = np.dtype(dtype or blocks[0].dtype)
    with _LOCK:
        _drain()
        start = time.perf_counter()
        blocks = list(blocks)
        for i, b in enumerate(blocks):
            if chunk_kind(b) == "host":         # a host partial among device ones
                STATS["host_to_device"] += _nbytes(b)
                blocks[i] = _c_order(b, dtype)
        while len(blocks) > 1 or np.dtype(blocks[0].dtype) != dtype:
            head, blocks = blocks[:FOLD_WIDTH], blocks[FOLD_WIDTH:]
            shape = tuple(np.shape(head[0]))
            prog = _fold_program(op, shape, dtype, len(head), target)
            blocks.insert(0, _owned(prog(**{f"p{i}": b for i, b in enumerate(head)})))
            STATS["tasks"] += 1
        STATS["seconds"] += time.perf_counter() - start
    return _like(blocks[0], kinds)


def squeezed(array, axes):
    """``array`` (a device array) without the reduced ``axes``, each of length 1."""
    return array.reshape(tuple(n for d, n in enumerate(array.shape) if d not in axes))


def _on_device(blocks) -> bool:
    return any(chunk_kind(b) in DEVICE_KINDS for b in blocks)


def combine(x, axis=None, keepdims=True, op="sum", dtype=None, target=None):
    """Partials of one reduction combined: on the device where they are
    device arrays (elementwise: they differ only in their position along
    the reduced axes, each of length 1), else on the host."""
    blocks = _flat(x)
    if op in ("argmax", "argmin"):      # (device records: device_records.combine_args)
        return _best_pairs(_host(x, axis), axis, op)
    if _on_device(blocks):
        return fold(blocks, op, dtype, target)
    x = _host(x, axis)
    if op in ("sum", "prod"):
        return _COMBINE[op](x, axis=axis, keepdims=keepdims, dtype=dtype)
    return _COMBINE[op](x, axis=axis, keepdims=keepdims)


def aggregate(x, axis=None, keepdims=False, op="sum", dtype=None, target=None):
    """The last combine, as the reduction's dtype (argmax/argmin: the index)."""
    blocks = _flat(x)
    axes = axis if isinstance(axis, tuple) else (axis,)
    if op not in ("argmax", "argmin") and _on_device(blocks):
        out = fold(blocks, op, dtype, target)
        return out if keepdims else squeezed(out, axes)
    out = combine(_host(x, axis), axis=axis, keepdims=True, op=op, dtype=dtype)
    if op in ("argmax", "argmin"):
        out = out["i"]
    if not keepdims:
        out = np.squeeze(out, axis=axis)
    return np.asarray(out, dtype=dtype)


def to_output(chunk, out="host", target=None):
    """A result chunk as ``evaluate``'s ``out`` asks: host (downloaded where
    it is a device array) or device (uploaded where it is a host one)."""
    return to_host(chunk) if out == "host" else upload(chunk, target)


def concatenate(arrays, axis=0):
    """Device chunks joined along ``axis`` on their device (a polyarray
    program; dask's ``concatenate`` for them: ``compute()``, rechunking)."""
    arrays = list(arrays)
    if len(arrays) == 1:
        return arrays[0]
    kinds = [chunk_kind(a) for a in arrays]
    target = _device_target(None, kinds)
    shapes = tuple(tuple(np.shape(a)) for a in arrays)
    dtype = np.result_type(*[np.dtype(a.dtype) for a in arrays])
    axis = axis % len(shapes[0])

    def make():
        from ..api.creation import placeholder
        from ..api.shapes import concatenate as join
        return join([placeholder(f"p{i}", s, dtype) for i, s in enumerate(shapes)], axis=axis)
    with _LOCK:
        _drain()
        prog = step_program(("concatenate", shapes, dtype.str, axis), make, target)
        for a in arrays:
            if chunk_kind(a) == "host":
                STATS["host_to_device"] += _nbytes(a)
        result = _owned(prog(**{f"p{i}": a for i, a in enumerate(arrays)}))
    return _like(result, kinds)


def register_sizeof():
    """Register dask's ``sizeof`` for pycuda's and pyopencl's arrays: their
    bytes on the device (dask took them for Python objects of 56 bytes, so
    its memory limits and its workers' transfer logs missed them).  Called
    by dask the first time it sizes one, in any process that imports this
    module (a worker unpickling a task)."""
    from dask.sizeof import sizeof
    for module, name in (("pycuda.gpuarray", "GPUArray"), ("pyopencl.array", "Array")):
        mod = sys.modules.get(module)
        if mod is not None:
            sizeof.register(getattr(mod, name), lambda a: int(a.nbytes))


def register_concatenate():
    """Register ``concatenate`` with dask for pycuda's and pyopencl's arrays
    (called by dask the first time it concatenates one)."""
    from dask.array.dispatch import concatenate_lookup
    for module, name in (("pycuda.gpuarray", "GPUArray"), ("pyopencl.array", "Array")):
        mod = sys.modules.get(module)
        if mod is not None:
            concatenate_lookup.register(getattr(mod, name), concatenate)


def _sizeof_lazily():
    try:
        from dask.sizeof import sizeof
    except ImportError:         # (dask is an extra: nothing sizes chunks then)
        return
    sizeof.register_lazy("pycuda", register_sizeof)
    sizeof.register_lazy("pyopencl", register_sizeof)


_sizeof_lazily()
