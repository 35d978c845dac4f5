"""argmax/argmin along the last axis on CUDA: ``threads`` work-items per
row (a power of two, 1 to 1024), their (value, index) pairs combined by
warp shuffles.

The generated group form combines a row's pairs in a tree of local-memory
steps, a barrier each, in two arrays: argmax over axis 1 of 4096^2 float32
took 38 us on an H200, where the max of the same rows took 22 us.  Here each
work-item keeps the best pair of its strided values, read as 16-byte vectors
(``float4``, ``double2``, ...) where the rows allow, four in flight; indices
within a row are 32-bit.  A group's pairs are combined by
``__shfl_down_sync`` (no barrier); a row of more than a warp puts its warps'
winners in shared memory, and its first warp combines them the same way.
A row shorter than a warp shares its warp with other rows.  Its policy row
chooses ``threads`` (about 32 values each, more work-items where few rows
would leave the device idle); on an H200 it reads 4096^2 float32 at 3.4 TB/s.

NumPy's order: the first NaN wins (a float row with a NaN gives its first
NaN's index), else the greatest (argmax) or least (argmin) value, ties to
the smaller index.  A work-item's values come in increasing index order, so
within it a later value replaces the kept one only when strictly better.

The kernel is a raw-kernel node (``ir.nodes.RawKernelOutput``, built here),
which ``plan/kernel_calls.py`` puts where the policy chooses
``Form.ROW_ARGMAX``; ``forms/raw.py`` launches it.
"""
from __future__ import annotations

import numpy as np

from polyarray.ir import nodes as N
from polyarray.ir.raw_params import parse_params

PREFIX = "pa_argrow_"           # the kernels' names (pa_: no user's raw kernel has it)
MIN_BLOCK = 256                 # work-items per block: rows of fewer share one
MAX_THREADS = 1024              # work-items per row at most (a block)
# values per row at most: a work-item's 32-bit index steps 4 * MAX_THREADS past its last
# value before the loop test stops it, and must not pass 2^31 - 1
MAX_LENGTH = (1 << 31) - 1 - 4 * MAX_THREADS

_TYPES = {"float32": "float", "float64": "double", "int32": "int", "int64": "long long"}
_VECTORS = {"float32": ("float4", 4), "float64": ("double2", 2), "int32": ("int4", 4),
            "int64": ("longlong2", 2)}
ARG_DTYPES = frozenset(np.dtype(t).str for t in _TYPES)

_SOURCE = r"""
#define NAME_NAN(a) NANTEST
/* within a work-item: a later index, so only a strictly better value */
#define NAME_STEP(a, j) if ((a) CMP v || (NAME_NAN(a) && !NAME_NAN(v))) { v = (a); i = (j); }
/* (ov, oi) of another work-item replaces (v, i) in NumPy's order */
#define NAME_WINS(ov, oi) (NAME_NAN(ov) ? (!NAME_NAN(v) || (oi) < i) : \
    (!NAME_NAN(v) && ((ov) CMP v || ((ov) == v && (oi) < i))))
#define NAME_MEET(width) \
    for (int off = (width) / 2; off > 0; off >>= 1) { \
        const TYPE ov = __shfl_down_sync(0xffffffffu, v, off); \
        const int oi = __shfl_down_sync(0xffffffffu, i, off); \
        if (NAME_WINS(ov, oi)) { v = ov; i = oi; } \
    }
extern "C" __global__ void __launch_bounds__(BLOCK) NAME(
    const TYPE *__restrict__ x, long long *__restrict__ out, long long n, long long rows)
{
    /* TPR work-items per row, BLOCK / TPR rows per block; a row has at most
       2^31 - 1 - 4 * 1024 values (MAX_LENGTH: the indices below stay ints) */
    const int t = threadIdx.x % TPR, nn = (int) n;
    const long long r = (long long) blockIdx.x * (BLOCK / TPR) + threadIdx.x / TPR;
    const TYPE *row = x + (r < rows ? r : 0) * n;
    /* a pair of the row to start from (a work-item past its end takes the first) */
    TYPE v = row[t < nn ? t : 0];
    int i = t < nn ? t : 0;
    if ((((unsigned long long) row) % sizeof(VTYPE)) == 0 && nn % VW == 0) {
        const VTYPE *rv = (const VTYPE *) row;
        const int nv = nn / VW;
        int j = t;
        for (; j + 3 * TPR < nv; j += 4 * TPR) {
            VTYPE q[4];
            #pragma unroll
            for (int u = 0; u < 4; ++u)
                q[u] = rv[j + u * TPR];
            #pragma unroll
            for (int u = 0; u < 4; ++u) {
                const int b = (j + u * TPR) * VW;
                VSTEPS(q[u], b)
            }
        }
        for (; j < nv; j += TPR) {
            const VTYPE q = rv[j];
            const int b = j * VW;
            VSTEPS(q, b)
        }
    } else {
        int j = t;
        for (; j + 3 * TPR < nn; j += 4 * TPR) {
            const TYPE a = row[j], b = row[j + TPR], c = row[j + 2 * TPR], d = row[j + 3 * TPR];
            NAME_STEP(a, j) NAME_STEP(b, j + TPR) NAME_STEP(c, j + 2 * TPR)
            NAME_STEP(d, j + 3 * TPR)
        }
        for (; j < nn; j += TPR) {
            const TYPE a = row[j];
            NAME_STEP(a, j)
        }
    }
    NAME_MEET(TPR < 32 ? TPR : 32)
#if TPR > 32
    __shared__ TYPE warp_v[BLOCK / 32];
    __shared__ int warp_i[BLOCK / 32];
    const int lane = threadIdx.x % 32;
    if (lane == 0) {
        warp_v[threadIdx.x / 32] = v;
        warp_i[threadIdx.x / 32] = i;
    }
    __syncthreads();
    if (t >= 32)
        return;
    const int first = (threadIdx.x / TPR) * (TPR / 32) + (lane < TPR / 32 ? lane : 0);
    v = warp_v[first];
    i = warp_i[first];
    NAME_MEET(TPR / 32)
#endif
    if (t == 0 && r < rows)
        out[r] = i;
}
#undef NAME_NAN
#undef NAME_STEP
#undef NAME_WINS
#undef NAME_MEET
"""


def kernel_name(op, dtype, threads) -> str:
    return f"{PREFIX}{op}_{np.dtype(dtype).name}_{threads}"


def arg_source(op, dtype, threads) -> str:
    """The kernel's CUDA source for ``op`` ("argmax" | "argmin") over rows
    of ``dtype``, ``threads`` work-items per row."""
    dtype = np.dtype(dtype)
    if threads & (threads - 1) or not 1 <= threads <= MAX_THREADS:
        raise ValueError(f"threads per row must be a power of two in [1, {MAX_THREADS}], "
                         f"not {threads}")
    name = kernel_name(op, dtype, threads)
    vtype, width = _VECTORS[dtype.name]
    steps = " ".join(f"{name}_STEP(q.{c}, b + {k})" for k, c in enumerate("xyzw"[:width]))
    return (_SOURCE.replace("VSTEPS(q[u], b)", steps.replace("q.", "q[u]."))
            .replace("VSTEPS(q, b)", steps)
            .replace("NAME", name)
            .replace("BLOCK", str(max(MIN_BLOCK, threads)))
            .replace("TPR", str(threads))
            .replace("NANTEST", "isnan(a)" if dtype.kind == "f" else "false")
            .replace("CMP", ">" if op == "argmax" else "<")
            .replace("VTYPE", vtype)
            .replace("VW", str(width))
            .replace("TYPE", _TYPES[dtype.name]))


def arg_rows_node(op, x, shape, threads) -> N.Node:
    """``op`` of ``x`` (a node, C order) along its last axis, one launch of
    ``threads`` work-items per row: the indices, of ``shape`` (``x``'s
    without its last axis), as int64."""
    n = x.shape[-1]
    rows = x.size // n
    block = max(MIN_BLOCK, threads)
    name = kernel_name(op, x.dtype, threads)
    ctype = _TYPES[x.dtype.name]
    params = parse_params(f"const {ctype} *x, long long *out, long long n, long long rows",
                          "cuda", name)
    spec = N.RawKernelSpec("cuda", name, arg_source(op, x.dtype, threads), params)
    per_block = block // threads
    return N.RawKernelOutput.make(shape, np.dtype(np.int64), spec, (x,),
                                  (("n", n), ("rows", rows)),
                                  ((shape, np.dtype(np.int64).str),),
                                  (-(-rows // per_block),), (block,), 0)
