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
# seconds in them, and bytes of blocks in and results out (host <-> device)
STATS = {"compiles": 0, "tasks": 0, "seconds": 0.0, "bytes_in": 0, "bytes_out": 0}


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


def _program(stage, blocks):
    shapes = tuple(np.shape(b) for b in blocks)
    key = (stage.key, shapes, stage.target)
    hit = _PROGRAMS.get(key)
    if hit is None:
        sizes = _sizes(stage, blocks)
        made = build(stage, sizes)
        reduced = None
        if stage.kind == "reduce":      # the partials, and the block's reduced shape
            outs, reduced = _partials(stage, made)
        else:
            outs = [made[i] for i in stage.outputs]
        prog = compile_program([Array(n) for n in outs], target=stage.target)
        STATS["compiles"] += 1
        if len(_PROGRAMS) >= _MAX_PROGRAMS:
            del _PROGRAMS[next(iter(_PROGRAMS))]
        hit = _PROGRAMS[key] = (prog, reduced)
    return hit


def checked_chunk(chunk, placeholder, block_info=None):
    """A chunk of the dask array bound to ``placeholder``, checked against
    what the array declares (its chunk's shape, its dtype): a producer that
    breaks them would otherwise be bound as another shape, or refused
    naming an internal placeholder."""
    info, declared = block_info[0], block_info[None]
    where = tuple(info["chunk-location"])
    got_shape, got_dtype = np.shape(chunk), getattr(chunk, "dtype", None)
    want_shape, want_dtype = tuple(declared["chunk-shape"]), np.dtype(declared["dtype"])
    if got_shape != want_shape:
        what = f"shape {got_shape}; the dask array declares {want_shape} for it"
    elif got_dtype is None or native_dtype(np.dtype(got_dtype)) != native_dtype(want_dtype):
        what = (f"dtype {getattr(got_dtype, 'name', type(chunk).__name__)}; the dask "
                f"array declares {want_dtype.name}")
    else:
        return chunk
    raise ValueError(f"pa.dask.evaluate: chunk {where} of the dask array bound to placeholder "
                     f"{placeholder!r} has {what} (its producer must make the chunks and "
                     "dtype the array declares)")


def run_block(stage, *blocks):
    """One blockwise task: the stage's program on these blocks (host NumPy
    arrays in, host NumPy arrays out; intermediates stay on the device)."""
    blocks = [np.asarray(b) for b in blocks]
    with _LOCK:
        start = time.perf_counter()
        prog, reduced = _program(stage, blocks)
        bindings = {name: blocks[int(name[2:])] for name in prog.placeholders}
        results = prog(**bindings)
        STATS["tasks"] += 1
        STATS["seconds"] += time.perf_counter() - start
        STATS["bytes_in"] += sum(v.nbytes for v in bindings.values())
        STATS["bytes_out"] += sum(r.nbytes for r in results)
    if stage.kind == "map":
        return results[0]
    if stage.kind == "einsum":
        r = results[0]
        return r.reshape(r.shape + (1,) * len(stage.extra))
    shape, count = reduced      # one record per block: the members' partials
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
    ``names`` as a record of the fields ``rename``."""
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


def combine(x, axis=None, keepdims=True, op="sum", dtype=None):
    """Partials of one reduction combined on the host (small arrays)."""
    if op in ("argmax", "argmin"):
        return _best_pairs(x, axis, op)
    if op in ("sum", "prod"):
        return _COMBINE[op](x, axis=axis, keepdims=keepdims, dtype=dtype)
    return _COMBINE[op](x, axis=axis, keepdims=keepdims)


def aggregate(x, axis=None, keepdims=False, op="sum", dtype=None):
    """The last combine, as the reduction's dtype (argmax/argmin: the index)."""
    out = combine(x, axis=axis, keepdims=True, op=op, dtype=dtype)
    if op in ("argmax", "argmin"):
        out = out["i"]
    if not keepdims:
        out = np.squeeze(out, axis=axis)
    return np.asarray(out, dtype=dtype)
