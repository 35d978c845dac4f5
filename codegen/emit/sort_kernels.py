"""Radix sort (``sort``, ``argsort`` of one row) on CUDA: least significant
digit first, 8 bits a pass, each pass stable, as CUB's ``DeviceRadixSort``.

Keys are the values' bits mapped to unsigned integers in NumPy's order
(floats: the sign bit flipped, negatives' other bits too; NaN last; signed
integers: the sign bit flipped); ``descending`` complements them.  A pass
over digit ``shift``:

1. ``hist``: each tile of ``TILE`` keys counts its digits, into
   ``counts[digit * tiles + tile]``;
2. the single-pass scan (``scan_kernels.py``) of ``counts``: where each
   tile's keys of each digit start in the output;
3. ``scatter``: each tile ranks its keys within their digits in index
   order (each warp its own keys, finding a round's lanes of each digit by
   or-ing bits in shared memory, with a running count per digit; then the
   warps' counts), places them in shared memory by digit,
   then writes each digit's run to its place: writes in runs, not one by
   one.

The first pass reads the input values and encodes them as it reads; the
last one writes the sorted values decoded (``sort``) or the positions as
int64 (``argsort``).  Between passes the keys are unsigned integers and
the positions ``uint32`` (so rows of fewer than 2^31 values).

``argsort``'s keys make ``-0.0`` and ``0.0`` one key and every NaN one
key, so equal values keep their index order, as NumPy's stable argsort.
``sort`` keeps each value's bits: ``-0.0`` comes before ``0.0`` (NumPy's
default sort is not stable either), and a NaN's sign bit is cleared (a
NaN with it set would otherwise sort first).
"""
from __future__ import annotations

import numpy as np

from polyarray.ir import nodes as N
from .scan_kernels import parse_params, scan_nodes

PREFIX = "pa_radix_"            # the kernels' names (pa_: no user's raw kernel has it)

THREADS = 256                   # work-items per tile: one per digit (8 bits)

# dtype -> (value C type, key C type)
_TYPES = {"bool": ("unsigned char", "unsigned char"), "int8": ("signed char", "unsigned char"),
          "uint8": ("unsigned char", "unsigned char"), "int16": ("short", "unsigned short"),
          "uint16": ("unsigned short", "unsigned short"), "int32": ("int", "unsigned int"),
          "uint32": ("unsigned int", "unsigned int"), "int64": ("long long", "unsigned long long"),
          "uint64": ("unsigned long long", "unsigned long long"),
          "float32": ("float", "unsigned int"), "float64": ("double", "unsigned long long")}


def items(dtype, with_index) -> int:
    """Keys per work-item: a tile's keys and positions in at most 24 KiB of
    shared memory (the counts take 18 KiB more; 48 KiB in all)."""
    per = np.dtype(dtype).itemsize + (4 if with_index else 0)
    return 16 if per <= 4 else 8


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
# appends each kernel's once); PA_NS names their namespace
_HELPERS = r"""
namespace PA_NS {
ENCODE
__device__ __forceinline__ KT pa_key(VT v) { return DESCENDING ? (KT) ~pa_encode(v) : pa_encode(v); }
__device__ __forceinline__ VT pa_value(KT k) { return pa_decode(DESCENDING ? (KT) ~k : k); }
}
#define PA_DIGIT(k) ((unsigned int) ((k) >> shift) & 255u)
"""

_HIST = r"""
/* counts[digit * tiles + tile]: how many of the tile's keys have each digit */
extern "C" __global__ void __launch_bounds__(THREADS) NAME(
    const VT *x, const KT *keys, unsigned int *counts, long long n, int shift, int first,
    long long tiles)
{
    using namespace PA_NS;
    __shared__ unsigned int h[256];
    const int t = threadIdx.x;
    h[t] = 0u;
    __syncthreads();
    const long long base = (long long) blockIdx.x * (ITEMS * THREADS);
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        long long j = base + i * THREADS + t;
        if (j < n)
            atomicAdd(&h[PA_DIGIT(first ? pa_key(x[j]) : keys[j])], 1u);
    }
    __syncthreads();
    counts[(long long) t * tiles + blockIdx.x] = h[t];
}
"""

_SCATTER = r"""
/* the tile's keys (and positions) moved to their places by digit ``shift``;
   incl: the inclusive scan of counts.  Warp w holds the tile's keys
   [w * 32 * ITEMS, (w + 1) * 32 * ITEMS), key i * 32 + lane of them in
   register i: it ranks them within their digits in index order by itself
   (a round of 32 at a time, a running count per digit), then the warps' counts
   give each key its place in the tile, sorted by digit */
extern "C" __global__ void __launch_bounds__(THREADS) NAME(
    const VT *x, const KT *keys, const unsigned int *idx, const unsigned int *counts,
    const unsigned int *incl, KT *keys_out, unsigned int *idx_out, long long *pos_out,
    long long n, int shift, int first, int last, long long tiles)
{
    using namespace PA_NS;
    __shared__ KT skeys[ITEMS * THREADS];
#if ARGSORT
    __shared__ unsigned int sidx[ITEMS * THREADS];
#endif
    __shared__ long long where[256];            /* a digit's place in the output, less
                                                   its place in the tile */
    __shared__ unsigned int warp_count[THREADS / 32][256];   /* then: the warp's first place */
    __shared__ unsigned int warp_peers[THREADS / 32][256];   /* a round's lanes of a digit */
    __shared__ unsigned int warp_total[THREADS / 32];
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const long long tile = blockIdx.x, base = tile * (ITEMS * THREADS);
    const long long mine = base + (long long) warp * (32 * ITEMS) + lane;
    for (int w = 0; w < THREADS / 32; ++w) {
        warp_count[w][t] = 0u;
        warp_peers[w][t] = 0u;
    }
    KT k[ITEMS];
    unsigned int rank[ITEMS];
#if ARGSORT
    unsigned int id[ITEMS];
#endif
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        const long long j = mine + 32 * i;
        k[i] = 0;
#if ARGSORT
        id[i] = 0u;
#endif
        if (j < n) {
            k[i] = first ? pa_key(x[j]) : keys[j];
#if ARGSORT
            id[i] = first ? (unsigned int) j : idx[j];
#endif
        }
    }
    __syncthreads();
    const unsigned int below = (1u << lane) - 1u;
    unsigned int *seen = warp_count[warp], *lanes = warp_peers[warp];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        /* the lanes with this lane's digit: bits or-ed in shared memory (CUB's
           WARP_MATCH_ATOMIC_OR; match_any takes longer the more digits differ) */
        const int valid = mine + 32 * i < n;
        const unsigned int d = valid ? PA_DIGIT(k[i]) : 0u;
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
    /* the tile's count of each digit (work-item t: digit t) and each warp's first
       place for it: after the tile's earlier digits and the earlier warps' keys */
    const unsigned int c = counts[(long long) t * tiles + tile];
    unsigned int s = c;
    for (int d = 1; d < 32; d <<= 1) {
        unsigned int o = __shfl_up_sync(0xffffffffu, s, d);
        if (lane >= d)
            s += o;
    }
    if (lane == 31)
        warp_total[warp] = s;
    __syncthreads();
    for (int w = 0; w < warp; ++w)
        s += warp_total[w];
    unsigned int place = s - c;                 /* the digit's first place in the tile */
    where[t] = (long long) (incl[(long long) t * tiles + tile] - c) - (long long) place;
    for (int w = 0; w < THREADS / 32; ++w) {
        const unsigned int here = warp_count[w][t];
        warp_count[w][t] = place;
        place += here;
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        if (mine + 32 * i < n) {
            const unsigned int p = seen[PA_DIGIT(k[i])] + rank[i];
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
        const long long to = where[PA_DIGIT(key)] + p;
#if ARGSORT
        if (last)
            pos_out[to] = (long long) sidx[p];
        else {
            keys_out[to] = key;
            idx_out[to] = sidx[p];
        }
#else
        if (last)
            ((VT *) keys_out)[to] = pa_value(key);
        else
            keys_out[to] = key;
#endif
    }
}
"""


def kernel_name(dtype, with_index, descending) -> str:
    """``<name>_hist`` and ``<name>_scatter`` are the kernels."""
    return (f"{PREFIX}{'arg' if with_index else ''}sort{'_desc' if descending else ''}_"
            f"{np.dtype(dtype).name}")


def sort_source(dtype, with_index, descending, kernel) -> str:
    """The CUDA source of kernel ``kernel`` ("hist" or "scatter")."""
    dtype = np.dtype(dtype)
    vt, kt = _TYPES[dtype.name]
    name = f"{kernel_name(dtype, with_index, descending)}_{kernel}"
    defs = {"VT": vt, "KT": kt, "ITEMS": items(dtype, with_index), "THREADS": THREADS,
            "ARGSORT": int(with_index), "DESCENDING": int(descending),
            "PA_NS": name + "_helpers"}
    head = "".join(f"#define {k} {v}\n" for k, v in defs.items())
    tail = "".join(f"#undef {k}\n" for k in defs) + "#undef PA_DIGIT\n"
    body = _HELPERS.replace("ENCODE", _encode(dtype, with_index)) + \
        {"hist": _HIST, "scatter": _SCATTER}[kernel].replace("NAME", name)
    return head + body + tail


def _spec(name, source, params):
    return N.RawKernelSpec("cuda", name, source, parse_params(params, "cuda", name))


def sort_nodes(x, with_index, descending) -> N.Node:
    """``sort`` (or ``argsort``, int64 positions) of the 1-row node ``x``
    along its last axis, ascending or ``descending``, as the passes'
    raw-kernel nodes."""
    n = x.size
    dtype = x.dtype
    vt, kt = _TYPES[dtype.name]
    name = kernel_name(dtype, with_index, descending)
    tile = items(dtype, with_index) * THREADS
    tiles = -(-n // tile)
    hist = _spec(name + "_hist", sort_source(dtype, with_index, descending, "hist"),
                 f"const {vt} *x, const {kt} *keys, unsigned int *counts, long long n, "
                 "int shift, int first, long long tiles")
    scatter = _spec(name + "_scatter", sort_source(dtype, with_index, descending, "scatter"),
                    f"const {vt} *x, const {kt} *keys, const unsigned int *idx, "
                    "const unsigned int *counts, const unsigned int *incl, "
                    f"{kt} *keys_out, unsigned int *idx_out, long long *pos_out, long long n, "
                    "int shift, int first, int last, long long tiles")
    u32 = np.dtype(np.uint32)
    key_dt = np.dtype(np.uint8 if dtype == np.bool_ else f"u{dtype.itemsize}")
    passes = dtype.itemsize
    keys = idx = x                  # the first pass reads x alone
    flat = (n,)
    for k in range(passes):
        first, last = int(k == 0), int(k == passes - 1)
        scalars = (("n", n), ("shift", 8 * k), ("first", first), ("tiles", tiles))
        counts = N.RawKernelOutput.make((256 * tiles,), u32, hist, (x, keys), scalars,
                                        (((256 * tiles,), u32.str),), (tiles,), (THREADS,), 0)
        incl = scan_nodes("cumsum", counts)
        out_keys = (flat, (dtype if with_index is False and last else key_dt).str)
        out_idx = (flat if with_index and not last else (1,), u32.str)
        out_pos = (flat if with_index and last else (1,), np.dtype(np.int64).str)
        if with_index and last:
            out_keys = ((1,), key_dt.str)
        outs = (out_keys, out_idx, out_pos)
        launch = (x, keys, idx, counts, incl)
        scalars = (("n", n), ("shift", 8 * k), ("first", first), ("last", last),
                   ("tiles", tiles))

        def output(i):
            shape, dt = outs[i]
            return N.RawKernelOutput.make(shape, np.dtype(dt), scatter, launch, scalars, outs,
                                          (tiles,), (THREADS,), i)
        if last:
            result = output(2) if with_index else output(0)
            return N.Reshape.make(x.shape, result.dtype, result) if x.shape != flat \
                else result
        keys = output(0)
        idx = output(1) if with_index else x
    raise AssertionError("no pass")
