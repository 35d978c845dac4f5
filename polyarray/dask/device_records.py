"""Partials of several fields kept on the device: argmax/argmin's (value,
index) pairs and variance's (count, sum, M2) moments.

On the host such a partial is a NumPy record array (``tasks.pick``).  Where
the blocks are device arrays, a partial is instead a dict of device arrays
of one shape (``{"v", "i"}``, ``{"n", "s", "m2"}``; the count ``n`` a
Python int: the same for every element of a block), and every step that the
host does with records is a small polyarray program on the device:

* a block's indices, local to its reduced axes, made global (``add_offsets``;
  the block's offset is a 0-d input, 8 bytes counted in ``host_to_device``,
  so one program serves every block of a shape);
* ``k`` pairs combined elementwise as NumPy's argmax/argmin decide (the
  first NaN, else the extreme value, ties to the smaller index);
* ``k`` moments merged by Chan et al.'s formula in float64
  (``moments.combine``'s), stored in the partials' dtype.

Complex pairs, and a combine that meets host records among the dicts, go
through the host as before (their bytes counted)."""
from __future__ import annotations

import math

import numpy as np

from . import moments, tasks
from .tasks import STATS

PAIR = ("v", "i")                  # argmax/argmin's fields
MOMENTS = ("n", "s", "m2")          # variance's


def is_record(x) -> bool:
    return isinstance(x, dict)


def on_device(blocks) -> bool:
    """Whether every block is a device record (else the host combines)."""
    return bool(blocks) and all(is_record(b) for b in blocks)


def to_host(record, names):
    """A device record as the host's record array (downloads counted)."""
    parts = {n: record[n] for n in names}
    shape = next(np.shape(v) for v in parts.values() if not isinstance(v, int))
    host = {n: v if isinstance(v, int) else tasks.to_host(v) for n, v in parts.items()}
    out = np.empty(shape, np.dtype([(n, np.int64 if isinstance(host[n], int) else host[n].dtype)
                                    for n in names]))
    for n in names:
        out[n] = host[n]
    return out


def host_blocks(x, names):
    """``x``'s nested blocks with every device record brought to the host."""
    if isinstance(x, list):
        return [host_blocks(b, names) for b in x]
    return to_host(x, names) if is_record(x) else x


def _array(record):
    return next(v for v in record.values() if not isinstance(v, int))


def _run(key, make, blocks, inputs):
    """The program ``make()`` builds (kept under ``key``) on ``inputs``, on
    the blocks' device; its results as the blocks' library gives them."""
    kinds = [tasks.chunk_kind(_array(b)) for b in blocks]
    target = tasks._device_target(None, kinds)
    with tasks._LOCK:
        tasks._drain()
        got = tasks.step_program(key, make, target)(**inputs)
        STATS["tasks"] += 1
    got = got if isinstance(got, (list, tuple)) else [got]
    return [tasks._like(tasks._owned(g), kinds) for g in got]


def _placeholder(name, shape, dtype):
    from ..api.creation import placeholder
    return placeholder(name, shape, dtype)


def _device_offsets(pairs, axes, block_chunks, full, block_id):
    """``tasks.add_offsets`` on the device: ``i`` unravelled in the block's
    reduced shape, ravelled in the whole array's, plus the block's offset."""
    local = tuple(block_chunks[a][block_id[a]] for a in axes)
    starts = tuple(sum(block_chunks[a][:block_id[a]]) for a in axes)
    strides = [math.prod(full[k + 1:]) for k in range(len(full))]
    offset = sum(s * st for s, st in zip(starts, strides))
    index = pairs["i"]
    shape = tuple(np.shape(index))

    def make():
        i = _placeholder("i", shape, np.int64)
        off = _placeholder("off", (), np.int64)
        if len(local) == 1:
            return i + off
        out = off
        for k in range(len(local)):
            out = out + (i // math.prod(local[k + 1:])) % local[k] * strides[k]
        return out
    STATS["host_to_device"] += 8
    got, = _run(("offsets", shape, local, tuple(full)), make, [pairs],
                {"i": index, "off": np.asarray(offset, np.int64)})
    return dict(pairs, i=got)


def _better(op, v, i, best_v, best_i):
    """Where pair (v, i) wins over (best_v, best_i), as NumPy's argmax or
    argmin orders them: a NaN first (the smaller index among NaNs), then the
    extreme value, ties to the smaller index."""
    from ..api import elementwise as E
    first = i < best_i
    wins = (v > best_v) if op == "argmax" else (v < best_v)
    plain = wins | ((v == best_v) & first)
    if np.dtype(v.dtype).kind != "f":
        return plain
    nan, best_nan = E.isnan(v), E.isnan(best_v)
    return (nan & (~best_nan | first)) | (~nan & ~best_nan & plain)


def _fold_pairs(blocks, op):
    """``k`` device pairs of one shape combined: one pair (FOLD_WIDTH at a
    time per program)."""
    from ..api import elementwise as E
    blocks = list(blocks)
    while len(blocks) > 1:
        head, blocks = blocks[:tasks.FOLD_WIDTH], blocks[tasks.FOLD_WIDTH:]
        shape = tuple(np.shape(head[0]["v"]))
        vdtype = np.dtype(head[0]["v"].dtype)

        def make(k=len(head)):
            vs = [_placeholder(f"v{j}", shape, vdtype) for j in range(k)]
            idx = [_placeholder(f"i{j}", shape, np.int64) for j in range(k)]
            best_v, best_i = vs[0], idx[0]
            for v, i in zip(vs[1:], idx[1:]):
                take = _better(op, v, i, best_v, best_i)
                best_v, best_i = E.where(take, v, best_v), E.where(take, i, best_i)
            return [best_v, best_i]
        inputs = {f"v{j}": b["v"] for j, b in enumerate(head)}
        inputs.update({f"i{j}": b["i"] for j, b in enumerate(head)})
        v, i = _run(("pairs", op, shape, vdtype.str, len(head)), make, head, inputs)
        blocks.insert(0, {"v": v, "i": i})
    return blocks[0]


def _fold_moments(blocks):
    """``k`` device moments of one shape merged (``moments.combine``'s
    formula, in float64), FOLD_WIDTH at a time per program."""
    blocks = list(blocks)
    while len(blocks) > 1:
        head, blocks = blocks[:tasks.FOLD_WIDTH], blocks[tasks.FOLD_WIDTH:]
        shape = tuple(np.shape(head[0]["s"]))
        dtype = np.dtype(head[0]["s"].dtype)
        counts = tuple(int(b["n"]) for b in head)

        def make(counts=counts):
            f64 = np.float64
            s = [_placeholder(f"s{j}", shape, dtype).astype(f64) for j in range(len(counts))]
            m2 = [_placeholder(f"m{j}", shape, dtype).astype(f64) for j in range(len(counts))]
            total = sum(counts)
            total_s = s[0]
            for x in s[1:]:
                total_s = total_s + x
            mean = total_s / float(total) if total else total_s * 0.0
            out = m2[0]
            for x in m2[1:]:
                out = out + x
            for n, x in zip(counts, s):
                if n:
                    d = x / float(n) - mean
                    out = out + float(n) * (d * d)
            return [total_s.astype(dtype), out.astype(dtype)]
        inputs = {f"s{j}": b["s"] for j, b in enumerate(head)}
        inputs.update({f"m{j}": b["m2"] for j, b in enumerate(head)})
        s, m2 = _run(("moments", shape, dtype.str, counts), make, head, inputs)
        blocks.insert(0, {"n": sum(counts), "s": s, "m2": m2})
    return blocks[0]


# -- the reduction's steps (``graph.py`` gives them to ``da.reduction``): device
# records on the device, host records (or a mix) through the host

def add_offsets(pairs, axes, block_chunks, full, block_id=None):
    """A block's (value, index) pairs with global indices."""
    if is_record(pairs):
        return _device_offsets(pairs, axes, block_chunks, full, block_id)
    return tasks.add_offsets(pairs, axes, block_chunks, full, block_id=block_id)


def _pairs_on_device(blocks) -> bool:
    """Device pairs of values the device orders as NumPy does (complex
    values are ordered on the host)."""
    return on_device(blocks) and np.dtype(blocks[0]["v"].dtype).kind != "c"


def combine_args(x, axis=None, keepdims=True, op="argmax", dtype=None, target=None):
    """argmax/argmin's pairs combined."""
    blocks = tasks._flat(x)
    if _pairs_on_device(blocks):
        return _fold_pairs(blocks, op)
    return tasks.combine(host_blocks(x, PAIR), axis=axis, keepdims=keepdims, op=op,
                         dtype=dtype, target=target)


def aggregate_args(x, axis=None, keepdims=False, op="argmax", dtype=None, target=None):
    """The last combine of argmax/argmin's pairs: the indices."""
    blocks = tasks._flat(x)
    if _pairs_on_device(blocks) and np.dtype(dtype or np.int64) == np.int64:
        out = _fold_pairs(blocks, op)["i"]
        return out if keepdims else tasks.squeezed(out, _axes(axis))
    return tasks.aggregate(host_blocks(x, PAIR), axis=axis, keepdims=keepdims, op=op,
                           dtype=dtype, target=target)


def combine_moments(x, axis=None, keepdims=True):
    """Variance's partials merged (``moments.combine`` on the host)."""
    blocks = tasks._flat(x)
    if on_device(blocks):
        return _fold_moments(blocks)
    return moments.combine(tasks._host(host_blocks(x, MOMENTS), axis), axis=axis,
                           keepdims=keepdims)


def aggregate_moments(x, axis=None, keepdims=False, dtype=None):
    """The last merge of variance's partials: the sum of squared deviations."""
    blocks = tasks._flat(x)
    if on_device(blocks) and (dtype is None or np.dtype(dtype) == blocks[0]["s"].dtype):
        out = _fold_moments(blocks)["m2"]
        return out if keepdims else tasks.squeezed(out, _axes(axis))
    return moments.aggregate(tasks._host(host_blocks(x, MOMENTS), axis), axis=axis,
                             keepdims=keepdims, dtype=dtype)


def _axes(axis) -> tuple:
    return axis if isinstance(axis, tuple) else (axis,)
