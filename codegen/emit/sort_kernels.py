"""Radix sort (``sort``, ``argsort`` of one row) on CUDA: least significant
digit first, 8 bits a pass, each pass stable, as CUB's onesweep
``DeviceRadixSort`` (Adinets and Merrill, "Onesweep: A Faster Least
Significant Digit Radix Sort for GPUs", 2022).

Keys are the values' bits mapped to unsigned integers in NumPy's order
(floats: the sign bit flipped, negatives' other bits too; NaN last; signed
integers: the sign bit flipped); ``descending`` complements them.  The
kernels:

1. ``init`` zeroes the histograms and the passes' tile counters (the head
   of one buffer of 32-bit words; it also declares the passes' key and
   position buffers, two of each, used in turn);
2. ``hist`` counts the digits of every pass in one read of the values
   (each block in shared memory, then added to the global counts) and
   zeroes the first pass's tile states;
3. a ``pass`` kernel per digit: a tile of ``ITEMS x THREADS`` keys takes
   the next tile id from its pass's counter (so every tile before it has
   started), ranks its keys within their digits in index order (each warp
   its own keys, finding a round's lanes of each digit by or-ing bits in
   shared memory, with a running count per digit; then the warps'
   counts), publishes its count of each digit, and looks back over the
   tiles before it (work-item ``d`` for digit ``d``) until one has
   published its inclusive count (decoupled look-back: Merrill and
   Garland, 2016; flag and count in one word); the digit's place in the
   output is then the pass's histogram scanned (the keys of lower digits)
   plus the keys of the digit in earlier tiles.  It places the keys in
   shared memory by digit, then writes each digit's run to its place:
   writes in runs, not one by one.  It also zeroes the tile states the
   next pass uses (two sets, used in turn).

The first pass reads the input values and encodes them as it reads; the
last one writes the sorted values decoded (``sort``) or the positions as
int64 (``argsort``).  Between passes the keys are unsigned integers and
the positions ``uint32`` (so rows of fewer than 2^31 values).  A tile
state is 32 bits (two flag bits, a count below 2^30) for rows of fewer
than ``RADIX_WIDE_STATES`` values (``thresholds.py``), else 64.

``argsort``'s keys make ``-0.0`` and ``0.0`` one key and every NaN one
key, so equal values keep their index order, as NumPy's stable argsort.
``sort`` keeps each value's bits: ``-0.0`` comes before ``0.0`` (NumPy's
default sort is not stable either), and a NaN's sign bit is cleared (a
NaN with it set would otherwise sort first).
"""
from __future__ import annotations

import numpy as np

from polyarray.ir import nodes as N
from polyarray.ir.raw_params import parse_params
from .scan_kernels import defines

PREFIX = "pa_radix_"            # the kernels' names (pa_: no user's raw kernel has it)

THREADS = 256                   # work-items per tile: one per digit (8 bits)
HIST_BLOCKS = 1024              # at most this many blocks count the digits

# dtype -> (value C type, key C type)
_TYPES = {"bool": ("unsigned char", "unsigned char"), "int8": ("signed char", "unsigned char"),
          "uint8": ("unsigned char", "unsigned char"), "int16": ("short", "unsigned short"),
          "uint16": ("unsigned short", "unsigned short"), "int32": ("int", "unsigned int"),
          "uint32": ("unsigned int", "unsigned int"), "int64": ("long long", "unsigned long long"),
          "uint64": ("unsigned long long", "unsigned long long"),
          "float32": ("float", "unsigned int"), "float64": ("double", "unsigned long long")}


# keys per work-item of a pass, by the bytes of a key and its position: a tile's
# keys and positions in at most 32 KiB of shared memory (10 KiB more for the
# ranks' counts and the digits' places; 48 KiB in all)
ITEMS = ((4, 16), (8, 16), (12, 8))
HIST_ITEMS = 4                  # keys a work-item of ``hist`` reads at once


def items(dtype, with_index) -> int:
    """Keys per work-item of a pass."""
    per = np.dtype(dtype).itemsize + (4 if with_index else 0)
    return next(k for most, k in ITEMS if per <= most)


def parts(passes) -> int:
    """Copies of the digit counts in a block of ``hist`` (32 KiB, at most 8)."""
    return min(8, 8192 // (256 * passes))


def _encode(dtype, with_index) -> str:
    """C: ``KT pa_encode(VT v)``, the key of a value, and ``VT pa_decode(KT k)``."""
    dtype = np.dtype(dtype)
    bits = dtype.itemsize * 8
    top = f"((KT) 1 << {bits - 1})"
    if dtype.kind == "f":
        canon = ("if (v != v) u = ~(KT) 0 >> 1;       /* every NaN one key, last */\n"
                 "    else if (v == (VT) 0) u = 0;       /* -0.0 and 0.0 one key */\n"
                 if with_index else
                 "if (v != v) u &= ~" + top + ";       /* a NaN's sign cleared: last */\n")
        return (f"__device__ __forceinline__ KT pa_encode(VT v)\n{{\n    KT u;\n"
                f"    memcpy(&u, &v, sizeof(u));\n    {canon}"
                f"    return (u & {top}) ? (KT) ~u : (KT) (u | {top});\n}}\n"
                f"__device__ __forceinline__ VT pa_decode(KT k)\n{{\n"
                f"    KT u = (k & {top}) ? (KT) (k & ~{top}) : (KT) ~k;\n    VT v;\n"
                f"    memcpy(&v, &u, sizeof(v));\n    return v;\n}}\n")
    flip = f" ^ {top}" if dtype.kind == "i" else ""
    return (f"__device__ __forceinline__ KT pa_encode(VT v) {{ return (KT) ((KT) v{flip}); }}\n"
            f"__device__ __forceinline__ VT pa_decode(KT k) {{ return (VT) ((KT) (k{flip})); }}\n")


# each kernel's source has its own helpers (one source per kernel: a program
# appends each kernel's once); PA_NS names their namespace.  The words'
# buffer: PASSES x 256 digit counts, a tile counter per pass (HEAD words in
# all), then two sets of tiles x 256 tile states
_HELPERS = r"""
namespace PA_NS {
ENCODE
__device__ __forceinline__ KT pa_key(VT v) { return DESCENDING ? (KT) ~pa_encode(v) : pa_encode(v); }
__device__ __forceinline__ VT pa_value(KT k) { return pa_decode(DESCENDING ? (KT) ~k : k); }
#if WIDE
typedef unsigned long long pa_state;        /* two flag bits above the count */
#else
typedef unsigned int pa_state;
#endif
#define PA_FLAG_SHIFT (8 * sizeof(pa_state) - 2)
#define PA_AGGREGATE ((pa_state) 1 << PA_FLAG_SHIFT)    /* the tile's count */
#define PA_PREFIX ((pa_state) 2 << PA_FLAG_SHIFT)       /* ... and the tiles' before it */
#define PA_COUNT(s) ((unsigned int) ((s) & (PA_AGGREGATE - 1)))
}
"""

_INIT = r"""
/* the digit counts and the tile counters zeroed; the key and position
   buffers are declared here, written by the passes */
extern "C" __global__ void NAME(const VT *x, unsigned int *words, KT *keys_a, KT *keys_b,
                                unsigned int *idx_a, unsigned int *idx_b, long long count)
{
    const long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count)
        words[i] = 0u;
}
"""

_HIST = r"""
/* words[pass * 256 + digit] += how many keys have the digit in the pass
   (each block counts in PARTS copies, lane % PARTS its copy: fewer lanes
   add to one word at once); the first pass's tile states zeroed */
extern "C" __global__ void __launch_bounds__(THREADS) NAME(
    const VT *x, const unsigned int *words_in, unsigned int *done, long long n,
    long long states)
{
    using namespace PA_NS;
    unsigned int *words = (unsigned int *) words_in;
    __shared__ unsigned int h[PASSES][256][PARTS];
    const int t = threadIdx.x, part = t % PARTS;
    for (int i = t; i < PASSES * 256 * PARTS; i += THREADS)
        (&h[0][0][0])[i] = 0u;
    pa_state *state = (pa_state *) (words + HEAD);
    for (long long j = (long long) blockIdx.x * THREADS + t; j < states;
         j += (long long) gridDim.x * THREADS)
        state[j] = 0;
    __syncthreads();
    const long long stride = (long long) gridDim.x * THREADS;
    for (long long j0 = (long long) blockIdx.x * THREADS + t; j0 < n; j0 += HIST_ITEMS * stride) {
        VT v[HIST_ITEMS];                       /* the loads first */
#pragma unroll
        for (int i = 0; i < HIST_ITEMS; ++i)
            v[i] = j0 + i * stride < n ? x[j0 + i * stride] : (VT) 0;
#pragma unroll
        for (int i = 0; i < HIST_ITEMS; ++i)
            if (j0 + i * stride < n) {
                const KT k = pa_key(v[i]);
#pragma unroll
                for (int p = 0; p < PASSES; ++p)
                    atomicAdd(&h[p][(unsigned int) (k >> (8 * p)) & 255u][part], 1u);
            }
    }
    __syncthreads();
    for (int p = 0; p < PASSES; ++p) {
        unsigned int c = 0u;
#pragma unroll
        for (int q = 0; q < PARTS; ++q)
            c += h[p][t][q];
        if (c)
            atomicAdd(&words[p * 256 + t], c);
    }
}
"""

_PASS = r"""
/* one pass over digit ``shift`` (pass shift / 8): keys (and positions) from
   ``keys`` (``idx``; the first pass: ``x``) to ``keys_to`` (``idx_to``; the
   last: ``out``, the values or positions).  Warp w holds the tile's keys
   [w * 32 * ITEMS, (w + 1) * 32 * ITEMS), key i * 32 + lane of them in
   register i: it ranks them within their digits in index order by itself
   (a round of 32 at a time, a running count per digit), then the warps'
   counts give each key its place in the tile, sorted by digit */
extern "C" __global__ void __launch_bounds__(THREADS) NAME(
    const VT *x, const KT *keys, const unsigned int *idx, const unsigned int *words_in,
    const KT *keys_to_in, const unsigned int *idx_to_in, const unsigned int *ready,
    OT *out, long long n, int shift, int first, int last, long long tiles)
{
    using namespace PA_NS;
    unsigned int *words = (unsigned int *) words_in;
    KT *keys_to = (KT *) keys_to_in;
    unsigned int *idx_to = (unsigned int *) idx_to_in;
    const int pass = shift >> 3;
    pa_state *state = (pa_state *) (words + HEAD) + (long long) (pass & 1) * tiles * 256;
    pa_state *next = (pa_state *) (words + HEAD) + (long long) (~pass & 1) * tiles * 256;
    /* the round's lanes of each digit while ranking, then the tile's keys by digit */
    __shared__ union {
        unsigned int peers[THREADS / 32][256];
        struct {
            KT keys[ITEMS * THREADS];
#if ARGSORT
            unsigned int idx[ITEMS * THREADS];
#endif
        } tile;
    } sm;
    KT *skeys = sm.tile.keys;
#if ARGSORT
    unsigned int *sidx = sm.tile.idx;
#endif
    __shared__ long long where[256];            /* a digit's place in the output, less
                                                   its place in the tile */
    __shared__ unsigned int warp_count[THREADS / 32][256];   /* then: the warp's first place */
    __shared__ unsigned int warp_total[2][THREADS / 32];
    __shared__ long long s_tile;
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    if (t == 0)
        s_tile = (long long) atomicAdd(&words[PASSES * 256 + pass], 1u);
    for (int w = 0; w < THREADS / 32; ++w) {
        warp_count[w][t] = 0u;
        sm.peers[w][t] = 0u;
    }
    __syncthreads();
    const long long tile = s_tile, base = tile * (ITEMS * THREADS);
    if (!last)
        next[tile * 256 + t] = 0;               /* the next pass's state of this tile */
    const long long mine = base + (long long) warp * (32 * ITEMS) + lane;
    KT k[ITEMS];
    unsigned int rank[ITEMS];
#if ARGSORT
    unsigned int id[ITEMS];
#endif
    /* the loads first, all of them, then the work on them: a load used at once
       would wait for memory before the next is issued.  A key past n is never
       ranked nor placed */
    const int full = base + ITEMS * THREADS <= n;
    if (first) {                                /* the values, encoded */
        VT v[ITEMS];
#pragma unroll
        for (int i = 0; i < ITEMS; ++i)
            v[i] = full || mine + 32 * i < n ? x[mine + 32 * i] : (VT) 0;
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) {
            k[i] = pa_key(v[i]);
#if ARGSORT
            id[i] = (unsigned int) (mine + 32 * i);
#endif
        }
    } else {
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) {
            const long long j = mine + 32 * i;
            k[i] = full || j < n ? keys[j] : (KT) 0;
#if ARGSORT
            id[i] = full || j < n ? idx[j] : 0u;
#endif
        }
    }
    const unsigned int below = (1u << lane) - 1u;
    unsigned int *seen = warp_count[warp], *lanes = sm.peers[warp];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        /* the lanes with this lane's digit: bits or-ed in shared memory (CUB's
           WARP_MATCH_ATOMIC_OR; match_any takes longer the more digits differ) */
        const int valid = mine + 32 * i < n;
        const unsigned int d = valid ? (unsigned int) (k[i] >> shift) & 255u : 0u;
        if (valid)
            atomicOr(&lanes[d], 1u << lane);
        __syncwarp();
        const unsigned int peers = valid ? lanes[d] : 0u;
        const unsigned int before = peers & below;
        rank[i] = seen[d] + __popc(before);
        __syncwarp();
        if (valid && before == 0u) {
            seen[d] += __popc(peers);
            lanes[d] = 0u;
        }
        __syncwarp();
    }
    __syncthreads();
    /* the tile's count of digit t, published; the tiles' before it */
    unsigned int c = 0u;
    for (int w = 0; w < THREADS / 32; ++w)
        c += warp_count[w][t];
    pa_state *mystate = state + tile * 256 + t;
    unsigned int earlier = 0u;                  /* keys of digit t in earlier tiles */
    if (tile == 0)
        *(volatile pa_state *) mystate = PA_PREFIX | (pa_state) c;
    else {
        *(volatile pa_state *) mystate = PA_AGGREGATE | (pa_state) c;
        for (long long j = tile - 1; ; --j) {
            pa_state s;
            do
                s = *(volatile pa_state *) (state + j * 256 + t);
            while ((s >> PA_FLAG_SHIFT) == 0);
            earlier += PA_COUNT(s);
            if (s & PA_PREFIX)
                break;
        }
        *(volatile pa_state *) mystate = PA_PREFIX | (pa_state) (earlier + c);
    }
    /* the keys of lower digits (the pass's histogram scanned) and the tile's
       keys of lower digits: two scans over the block, a digit per work-item */
    unsigned int s = c, b = words[pass * 256 + t];
    for (int d = 1; d < 32; d <<= 1) {
        const unsigned int o = __shfl_up_sync(0xffffffffu, s, d);
        const unsigned int ob = __shfl_up_sync(0xffffffffu, b, d);
        if (lane >= d) {
            s += o;
            b += ob;
        }
    }
    if (lane == 31) {
        warp_total[0][warp] = s;
        warp_total[1][warp] = b;
    }
    __syncthreads();
    for (int w = 0; w < warp; ++w) {
        s += warp_total[0][w];
        b += warp_total[1][w];
    }
    unsigned int place = s - c;                 /* the digit's first place in the tile */
    const unsigned int lower = b - words[pass * 256 + t];
    where[t] = (long long) lower + (long long) earlier - (long long) place;
    for (int w = 0; w < THREADS / 32; ++w) {
        const unsigned int here = warp_count[w][t];
        warp_count[w][t] = place;
        place += here;
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        if (mine + 32 * i < n) {
            const unsigned int p = seen[(unsigned int) (k[i] >> shift) & 255u] + rank[i];
            skeys[p] = k[i];
#if ARGSORT
            sidx[p] = id[i];
#endif
        }
    }
    __syncthreads();
    /* each digit's run, written in order */
    const long long count = min((long long) (ITEMS * THREADS), n - base);
    for (int p = t; p < count; p += THREADS) {
        const KT key = skeys[p];
        const long long to = where[(unsigned int) (key >> shift) & 255u] + p;
#if ARGSORT
        if (last)
            out[to] = (long long) sidx[p];
        else {
            keys_to[to] = key;
            idx_to[to] = sidx[p];
        }
#else
        if (last)
            out[to] = pa_value(key);
        else
            keys_to[to] = key;
#endif
    }
}
"""

_KERNELS = {"init": _INIT, "hist": _HIST, "pass": _PASS}


def kernel_name(dtype, with_index, descending) -> str:
    """``<name>_init``, ``<name>_hist`` and ``<name>_pass`` (``_wide``) are the kernels."""
    return (f"{PREFIX}{'arg' if with_index else ''}sort{'_desc' if descending else ''}_"
            f"{np.dtype(dtype).name}")


def _head(passes) -> int:
    """The words before the tile states: the counts, a counter per pass (even:
    64-bit states aligned)."""
    return passes * 256 + 32


def sort_source(dtype, with_index, descending, kernel, wide=False) -> str:
    """The CUDA source of kernel ``kernel`` ("init", "hist" or "pass")."""
    dtype = np.dtype(dtype)
    vt, kt = _TYPES[dtype.name]
    name = f"{kernel_name(dtype, with_index, descending)}_{kernel}" + ("_wide" if wide else "")
    defs = {"VT": vt, "KT": kt, "OT": "long long" if with_index else vt,
            "ITEMS": items(dtype, with_index), "THREADS": THREADS, "PASSES": dtype.itemsize,
            "PARTS": parts(dtype.itemsize), "HIST_ITEMS": HIST_ITEMS,
            "HEAD": _head(dtype.itemsize), "WIDE": int(wide), "ARGSORT": int(with_index),
            "DESCENDING": int(descending), "PA_NS": name + "_helpers"}
    body = (_HELPERS.replace("ENCODE", _encode(dtype, with_index)) if kernel != "init" else "") \
        + _KERNELS[kernel].replace("NAME", name)
    macros = ("PA_FLAG_SHIFT", "PA_AGGREGATE", "PA_PREFIX", "PA_COUNT") if kernel != "init" \
        else ()
    return defines(defs, body, macros)


def _spec(name, source, params):
    return N.RawKernelSpec("cuda", name, source, parse_params(params, "cuda", name))


def sort_nodes(x, with_index, descending, wide=False) -> N.Node:
    """``sort`` (or ``argsort``, int64 positions) of the 1-row node ``x``
    along its last axis, ascending or ``descending``, as the raw-kernel
    nodes of the digits' counts and the passes; ``wide``: 64-bit tile states."""
    n = x.size
    dtype = x.dtype
    vt, kt = _TYPES[dtype.name]
    ot = "long long" if with_index else vt
    out_dt = np.dtype(np.int64) if with_index else np.dtype(dtype)
    name = kernel_name(dtype, with_index, descending)
    passes = dtype.itemsize
    tiles = -(-n // (items(dtype, with_index) * THREADS))
    states = tiles * 256                        # per pass
    head = _head(passes)
    words = head + 2 * states * (2 if wide else 1)
    u32 = np.dtype(np.uint32).str
    key_dt = np.dtype(np.uint8 if dtype == np.bool_ else f"u{dtype.itemsize}").str
    src = {k: sort_source(dtype, with_index, descending, k, wide and k != "init")
           for k in _KERNELS}
    suffix = "_wide" if wide else ""
    # the words, then two buffers of keys and two of positions (those a pass uses)
    flat, one = (n,), (1,)
    outs = (((words,), u32), (flat if passes > 1 else one, key_dt),
            (flat if passes > 2 else one, key_dt),
            (flat if with_index and passes > 1 else one, u32),
            (flat if with_index and passes > 2 else one, u32))
    init = _spec(name + "_init", src["init"],
                 f"const {vt} *x, unsigned int *words, {kt} *keys_a, {kt} *keys_b, "
                 "unsigned int *idx_a, unsigned int *idx_b, long long count")
    w, keys_a, keys_b, idx_a, idx_b = (
        N.RawKernelOutput.make(outs[i][0], np.dtype(outs[i][1]), init, (x,), (("count", head),),
                               outs, (-(-head // THREADS),), (THREADS,), i) for i in range(5))
    hist = _spec(name + "_hist" + suffix, src["hist"],
                 f"const {vt} *x, const unsigned int *words_in, unsigned int *done, "
                 "long long n, long long states")
    ready = N.RawKernelOutput.make(one, np.dtype(u32), hist, (x, w),
                                   (("n", n), ("states", states)), ((one, u32),),
                                   (max(1, min(HIST_BLOCKS, tiles)),), (THREADS,), 0)
    sweep = _spec(name + "_pass" + suffix, src["pass"],
                  f"const {vt} *x, const {kt} *keys, const unsigned int *idx, "
                  f"const unsigned int *words_in, const {kt} *keys_to_in, "
                  f"const unsigned int *idx_to_in, const unsigned int *ready, {ot} *out, "
                  "long long n, int shift, int first, int last, long long tiles")
    keys = idx = x                  # the first pass reads x alone
    for k in range(passes):
        first, last = int(k == 0), int(k == passes - 1)
        keys_to, idx_to = ((x, x) if last else
                           (keys_a, idx_a if with_index else x) if k % 2 == 0 else
                           (keys_b, idx_b if with_index else x))
        shape = flat if last else one
        ready = N.RawKernelOutput.make(
            shape, out_dt, sweep, (x, keys, idx, w, keys_to, idx_to, ready),
            (("n", n), ("shift", 8 * k), ("first", first), ("last", last), ("tiles", tiles)),
            ((shape, out_dt.str),), (tiles,), (THREADS,), 0)
        keys, idx = keys_to, idx_to
    return N.Reshape.make(x.shape, ready.dtype, ready) if x.shape != flat else ready
