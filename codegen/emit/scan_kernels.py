"""Single-pass scans (``cumsum``, ``cumprod``) on CUDA: one kernel reads
each value once and writes each result once, with decoupled look-back
(Merrill and Garland, "Single-pass Parallel Prefix Scan with Decoupled
Look-back", 2016), as CUB's ``DeviceScan`` does.

The rows to scan (the last axis) are cut into tiles of ``THREADS x ITEMS``
values.  A tile takes the next tile id from a counter (so every tile
before it has started: a tile waits only for running tiles), scans its
values in registers and shared memory, publishes its aggregate, then
looks back over its predecessors (a warp reads 32 at a time) until one
has published its inclusive prefix, and publishes its own.  Row starts
publish at once.  A second, tiny kernel zeroes the flags and the counter
first: the scan's launch is two kernels and a temporary of a word per
tile.

Values are combined as NumPy combines them: the first value of a row is
the value itself (no identity added: ``-0.0`` stays ``-0.0``), integers
wrap (sums and products in the unsigned type of their width), NaN and inf
propagate.  Floats are added in another order than NumPy's sequential
loop (within the tolerances, as the blocked form).

Scans along another axis than the last are three kernels without look-back
(``column_scan_nodes``: the tiles' column totals, their scan per column, the
rows again from their offsets).

The kernels are raw-kernel nodes (``ir.nodes.RawKernelOutput``, built
here), which ``plan/kernel_calls.py`` puts where the policy chooses
``Form.SCAN`` (``Form.COLUMN_SCAN``) and ``forms/raw.py`` launches; their source is in the
program's, marked, as a user's raw kernel's is.
"""
from __future__ import annotations

import numpy as np

from polyarray.ir import nodes as N
from polyarray.ir.raw_params import parse_params

PREFIX = "pa_scan_"             # the kernels' names (pa_: no user's raw kernel has it)

THREADS = 256                   # work-items per tile
ITEMS = {4: 16, 8: 16}          # values per work-item, by itemsize

_TYPES = {   # dtype -> (C type, the unsigned type its arithmetic wraps in, or None)
    "float32": ("float", None), "float64": ("double", None),
    "int32": ("int", "unsigned int"), "uint32": ("unsigned int", None),
    "int64": ("long long", "unsigned long long"), "uint64": ("unsigned long long", None),
}
SCAN_DTYPES = frozenset(_TYPES)
_OPS = {"cumsum": "+", "cumprod": "*"}

# the tile states zeroed; x (unread) makes each scan's launch, and so its
# states, its own node
_INIT = r"""
extern "C" __global__ void NAME(const T *x, unsigned int *words, long long count)
{
    long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count)
        words[i] = 0u;
}
"""

# T: the value type; COMBINE(a, b): a (earlier) then b; ITEMS, THREADS, NAME.
# PACKED: the itemsize (4 or 8).  A tile's state is one word of the flag and the
# value's bits (8 or 16 bytes), written and read whole: no fence between a flag
# and its value.
_SCAN = r"""
#define PA_PAD(j) ((j) + ((j) >> 5))
namespace PA_NS {      /* this kernel's helpers (another dtype's have other types) */
#if PACKED == 4
typedef unsigned long long pa_state;        /* the flag above the value's bits */
typedef unsigned int pa_bits;
#define PA_FLAG(s) ((unsigned int) ((s) >> 32))
#define PA_BITS(s) ((pa_bits) (s))
#define PA_STATE(f, b) (((unsigned long long) (f) << 32) | (b))
#else
typedef ulonglong2 pa_state;                /* x: the flag, y: the value's bits */
typedef unsigned long long pa_bits;
#define PA_FLAG(s) ((unsigned int) (s).x)
#define PA_BITS(s) ((s).y)
#define PA_STATE(f, b) make_ulonglong2((f), (b))
#endif
__device__ __forceinline__ T pa_value(pa_state s)
{
    pa_bits b = PA_BITS(s);
    T v;
    memcpy(&v, &b, sizeof(T));
    return v;
}
/* publish tile ``id``'s value with flag f (1: its aggregate, 2: its inclusive
   prefix): one aligned store of the whole word, as CUB's tile states */
__device__ __forceinline__ void pa_publish(pa_state *state, long long id, unsigned int f, T value)
{
    pa_bits b;
    memcpy(&b, &value, sizeof(T));
#if PACKED == 4
    atomicExch(state + id, PA_STATE(f, b));
#else
    asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};"
                 :: "l"(state + id), "l"((unsigned long long) f), "l"(b) : "memory");
#endif
}
/* tile ``j``'s state once it has one */
__device__ __forceinline__ pa_state pa_wait(const pa_state *state, long long j)
{
    pa_state s;
    do {
#if PACKED == 4
        s = ((volatile pa_state *) state)[j];
#else
        asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];"
                     : "=l"(s.x), "=l"(s.y) : "l"(state + j) : "memory");
#endif
    } while (PA_FLAG(s) == 0u);
    return s;
}
}   /* namespace PA_NS */
extern "C" __global__ void __launch_bounds__(THREADS) NAME(
    const T *x, const unsigned int *state_in, T *y,
    long long n, long long tiles, long long total)
{
    /* the tiles' states: zeroed by NAME_init, read and written here (the
       DAG sees an input); state[total] holds the tile counter.  Flag 0:
       nothing published yet */
    using namespace PA_NS;
    pa_state *state = (pa_state *) state_in;
    __shared__ T tile[PA_PAD(ITEMS * THREADS)];
    __shared__ T warp_total[THREADS / 32];
    __shared__ T s_prefix;
    __shared__ int s_have;
    __shared__ long long s_id;
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    if (t == 0)
        s_id = (long long) atomicAdd((unsigned long long *) &state[total], 1ull);
    __syncthreads();
    const long long id = s_id;
    const long long row = id / tiles, k = id - row * tiles;
    const long long start = k * (ITEMS * THREADS);
    const long long base = row * n + start;
    const long long count = min((long long) (ITEMS * THREADS), n - start);
    for (int i = 0; i < ITEMS; ++i) {
        int j = i * THREADS + t;
        tile[PA_PAD(j)] = j < count ? x[base + j] : (T) 0;
    }
    __syncthreads();
    /* a work-item's ITEMS consecutive values, scanned in order */
    T v[ITEMS];
    v[0] = tile[PA_PAD(t * ITEMS)];
    for (int i = 1; i < ITEMS; ++i)
        v[i] = COMBINE(v[i - 1], tile[PA_PAD(t * ITEMS + i)]);
    /* the warp's inclusive scan of the work-items' totals */
    T mine = v[ITEMS - 1];
    for (int d = 1; d < 32; d <<= 1) {
        T o = __shfl_up_sync(0xffffffffu, mine, d);
        if (lane >= d)
            mine = COMBINE(o, mine);
    }
    T before = __shfl_up_sync(0xffffffffu, mine, 1);     /* lanes before: lane > 0 */
    if (lane == 31)
        warp_total[warp] = mine;
    __syncthreads();
    /* the warps before this one */
    int have = lane > 0;
    if (warp > 0) {
        T w = warp_total[0];
        for (int i = 1; i < warp; ++i)
            w = COMBINE(w, warp_total[i]);
        before = have ? COMBINE(w, before) : w;
        have = 1;
    }
    if (warp == 0) {
        /* the tile's total, published; then the tiles before it */
        T total_here = warp_total[0];
        for (int i = 1; i < THREADS / 32; ++i)
            total_here = COMBINE(total_here, warp_total[i]);
        if (k == 0) {
            if (lane == 0) {
                pa_publish(state, id, 2u, total_here);
                s_have = 0;
            }
        } else {
            if (lane == 0)
                pa_publish(state, id, 1u, total_here);
            const long long first = row * tiles;       /* the row's first tile */
            T prefix = (T) 0;
            int got = 0;
            long long j = id - 1 - lane;
            for (;;) {
                unsigned int f = 2u;
                T w = (T) 0;
                const int valid = j >= first;
                if (valid) {
                    pa_state s = pa_wait(state, j);
                    f = PA_FLAG(s);
                    w = pa_value(s);
                }
                /* the nearest predecessor with its inclusive prefix ends the window */
                unsigned int done = __ballot_sync(0xffffffffu, valid && f == 2u);
                int last = done ? __ffs(done) - 1 : 31;
                int in = valid && lane <= last;
                /* the window's values, farther tiles (higher lanes) first */
                for (int d = 1; d < 32; d <<= 1) {
                    T o = __shfl_down_sync(0xffffffffu, w, d);
                    int oin = __shfl_down_sync(0xffffffffu, in, d);
                    if (lane + d < 32 && oin) {
                        w = in ? COMBINE(o, w) : o;
                        in = 1;
                    }
                }
                w = __shfl_sync(0xffffffffu, w, 0);
                prefix = got ? COMBINE(w, prefix) : w;
                got = 1;
                if (done)
                    break;
                j -= 32;
            }
            if (lane == 0) {
                pa_publish(state, id, 2u, COMBINE(prefix, total_here));
                s_prefix = prefix;
                s_have = 1;
            }
        }
    }
    __syncthreads();
    if (s_have) {
        before = have ? COMBINE(s_prefix, before) : s_prefix;
        have = 1;
    }
    for (int i = 0; i < ITEMS; ++i)
        tile[PA_PAD(t * ITEMS + i)] = have ? COMBINE(before, v[i]) : v[i];
    __syncthreads();
    for (int i = 0; i < ITEMS; ++i) {
        int j = i * THREADS + t;
        if (j < count)
            y[base + j] = tile[PA_PAD(j)];
    }
}
#undef PA_PAD
#undef PA_FLAG
#undef PA_BITS
#undef PA_STATE
"""


def defines(defs, body, more=()) -> str:
    """``body`` between the ``#define``s of ``defs`` (name -> value; None: left
    out; a name may be a macro's ``NAME(args)``) and their ``#undef``s, and
    those of the macros ``more`` that ``body`` defines: our kernels' sources
    (``sort_kernels.py`` too) leave no macro behind."""
    defs = {k: v for k, v in defs.items() if v is not None}
    head = "".join(f"#define {k} {v}\n" for k, v in defs.items())
    tail = "".join(f"#undef {k.split('(')[0]}\n" for k in (*defs, *more))
    return head + body + tail


def kernel_name(op, dtype) -> str:
    return f"{PREFIX}{op}_{np.dtype(dtype).name}"


def scan_source(op, dtype) -> str:
    """The CUDA source of the scan kernel ``kernel_name(op, dtype)``."""
    dtype = np.dtype(dtype)
    ctype, wrap = _TYPES[dtype.name]
    sign = _OPS[op]
    name = kernel_name(op, dtype)
    combine = f"((T) ((W) (a) {sign} (W) (b)))" if wrap else f"((a) {sign} (b))"
    defs = {"T": ctype, "W": wrap, "COMBINE(a, b)": combine, "ITEMS": ITEMS[dtype.itemsize],
            "THREADS": THREADS, "NAME": name, "PA_NS": name + "_helpers",
            "PACKED": dtype.itemsize}
    return defines(defs, _SCAN)


def tiles_per_row(n, dtype) -> int:
    return -(-n // (THREADS * ITEMS[np.dtype(dtype).itemsize]))


def scan_nodes(op, x) -> N.Node:
    """The scan of ``x`` (a node, C order) along its last axis as the two
    raw-kernel launches: the state zeroed, then the single-pass scan."""
    n = x.shape[-1]
    rows = x.size // n
    tiles = tiles_per_row(n, x.dtype)
    total = rows * tiles
    name = kernel_name(op, x.dtype)
    ctype = _TYPES[x.dtype.name][0]
    init = N.RawKernelSpec("cuda", name + "_init",
                           _INIT.replace("NAME", name + "_init").replace("const T", "const "
                                                                          + ctype),
                           parse_params(f"const {ctype} *x, unsigned int *words, long long "
                                        "count", "cuda", name + "_init"))
    # the tiles' states and the counter: a flag and a value each, in 32-bit words
    words = (total + 1) * 2 * x.dtype.itemsize // 4
    state = N.RawKernelOutput.make((words,), np.dtype(np.uint32), init, (x,),
                                   (("count", words),), (((words,), "<u4"),),
                                   (-(-words // THREADS),), (THREADS,), 0)
    params = parse_params(f"const {ctype} *x, const unsigned int *state_in, {ctype} *y, "
                          "long long n, long long tiles, long long total", "cuda", name)
    spec = N.RawKernelSpec("cuda", name, scan_source(op, x.dtype), params)
    return N.RawKernelOutput.make(
        x.shape, x.dtype, spec, (x, state), (("n", n), ("tiles", tiles), ("total", total)),
        ((x.shape, x.dtype.str),), (total,), (THREADS,), 0)


# Scans along an axis that is not the last (columns of ``post`` values, ``pre``
# such blocks): three kernels, no look-back.  A work-item per column of a tile
# of COLUMN_ROWS rows (consecutive work-items read consecutive columns: coalesced):
# ``NAME_totals`` combines its tile's rows; ``NAME_offsets`` scans the totals of
# each column, a work-item per column; ``NAME_rows`` scans its tile's rows again
# from the offset before it.  The values are read twice and written once.
COLUMN_ROWS = 64
_COLUMNS = r"""
/* the tile t of block p, column c of work-item (blockIdx.x, threadIdx.x) */
#define PA_TILE \
    const long long b = blockIdx.x, ct = (post + THREADS - 1) / THREADS; \
    const long long c = (b % ct) * THREADS + threadIdx.x, pt = b / ct; \
    const long long t = pt % tiles, p = pt / tiles; \
    const long long r0 = t * ROWS, rows = min((long long) ROWS, n - r0); \
    if (c >= post) return; \
    const T *in = x + (p * n + r0) * post + c;
extern "C" __global__ void __launch_bounds__(THREADS) NAME_totals(
    const T *x, T *totals, long long n, long long post, long long tiles)
{
    PA_TILE
    T acc = in[0];
#pragma unroll 8
    for (long long r = 1; r < rows; ++r)
        acc = COMBINE(acc, in[r * post]);
    totals[(p * tiles + t) * post + c] = acc;
}
/* offsets[p, t, c]: the tiles before t combined (t >= 1) */
extern "C" __global__ void __launch_bounds__(THREADS) NAME_offsets(
    const T *totals, T *offsets, long long post, long long tiles, long long columns)
{
    const long long i = (long long) blockIdx.x * THREADS + threadIdx.x;
    if (i >= columns)
        return;
    const long long p = i / post, c = i - p * post;
    const T *tot = totals + p * tiles * post + c;
    T *off = offsets + p * tiles * post + c;
    T acc = tot[0];
    for (long long t = 1; t < tiles; ++t) {
        off[t * post] = acc;
        acc = COMBINE(acc, tot[t * post]);
    }
}
extern "C" __global__ void __launch_bounds__(THREADS) NAME_rows(
    const T *x, const T *offsets, T *y, long long n, long long post, long long tiles)
{
    PA_TILE
    T *out = y + (p * n + r0) * post + c;
    T acc = t == 0 ? in[0] : COMBINE(offsets[(p * tiles + t) * post + c], in[0]);
    out[0] = acc;
#pragma unroll 8
    for (long long r = 1; r < rows; ++r) {
        acc = COMBINE(acc, in[r * post]);
        out[r * post] = acc;
    }
}
#undef PA_TILE
"""


def column_scan_nodes(op, x, axis) -> N.Node:
    """The scan of ``x`` (a node, C order) along ``axis`` (not its last) as
    the three column kernels' raw-kernel nodes."""
    dtype = np.dtype(x.dtype)
    ctype, wrap = _TYPES[dtype.name]
    sign = _OPS[op]
    pre, n = int(np.prod(x.shape[:axis])), x.shape[axis]
    post = int(np.prod(x.shape[axis + 1:]))
    tiles = -(-n // COLUMN_ROWS)
    name = f"{PREFIX}columns_{op}_{dtype.name}"
    combine = f"((T) ((W) (a) {sign} (W) (b)))" if wrap else f"((a) {sign} (b))"
    defs = {"T": ctype, "W": wrap, "COMBINE(a, b)": combine, "THREADS": THREADS,
            "ROWS": COLUMN_ROWS}
    body = _COLUMNS.replace("NAME", name)
    # one source per kernel (a program appends each kernel's once): the
    # source is split at the kernels, the tile macro kept with the two that use it
    parts = body.split('extern "C"')
    macro, kernels = parts[0], ['extern "C"' + k for k in parts[1:]]
    kernels[-1] = kernels[-1].replace("#undef PA_TILE\n", "")

    def spec(which, k, params, with_macro):
        src = defines(defs, (macro if with_macro else "") + kernels[k],
                      ("PA_TILE",) if with_macro else ())
        return N.RawKernelSpec("cuda", f"{name}_{which}", src,
                               parse_params(params.replace("T ", ctype + " "), "cuda",
                                            f"{name}_{which}"))
    dt = dtype.str
    blocks = -(-post // THREADS) * tiles * pre
    tot_shape = (pre * tiles * post,)
    totals = N.RawKernelOutput.make(
        tot_shape, dtype, spec("totals", 0, "const T *x, T *totals, long long n, "
                               "long long post, long long tiles", True),
        (x,), (("n", n), ("post", post), ("tiles", tiles)), ((tot_shape, dt),),
        (blocks,), (THREADS,), 0)
    offsets = N.RawKernelOutput.make(
        tot_shape, dtype, spec("offsets", 1, "const T *totals, T *offsets, long long post, "
                               "long long tiles, long long columns", False),
        (totals,), (("post", post), ("tiles", tiles), ("columns", pre * post)),
        ((tot_shape, dt),), (-(-(pre * post) // THREADS),), (THREADS,), 0)
    return N.RawKernelOutput.make(
        x.shape, dtype, spec("rows", 2, "const T *x, const T *offsets, T *y, long long n, "
                             "long long post, long long tiles", True),
        (x, offsets), (("n", n), ("post", post), ("tiles", tiles)), ((x.shape, dt),),
        (blocks,), (THREADS,), 0)
