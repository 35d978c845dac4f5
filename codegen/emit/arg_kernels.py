"""argmax/argmin along the last axis on CUDA: a work-group per row, the
(value, index) pairs combined by warp shuffles.

The generated group form combines a row's pairs in a tree of local-memory
steps, a barrier each, in two arrays: argmax over axis 1 of 4096^2 float32
took 38 us on an H200, where the max of the same rows took 22 us.  Here each
of ``THREADS`` work-items keeps the best pair of its strided values (loads
issued four at a time), a warp's 32 pairs are combined by ``__shfl_down_sync``
(no barrier), the warps' winners meet in shared memory, and the first warp
combines them the same way.

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
THREADS = 256                   # work-items per row

_TYPES = {"float32": "float", "float64": "double", "int32": "int", "int64": "long long"}
ARG_DTYPES = frozenset(np.dtype(t).str for t in _TYPES)

_SOURCE = r"""
/* (v, i) replaces (bv, bi) in NumPy's order; bi < 0: nothing kept yet */
#define NAME_NAN(a) NANTEST
#define NAME_WINS(v, i, bv, bi) ((bi) < 0 || ((i) >= 0 && (NAME_NAN(v) ? \
    (!NAME_NAN(bv) || (i) < (bi)) : \
    (!NAME_NAN(bv) && ((v) CMP (bv) || ((v) == (bv) && (i) < (bi)))))))
/* within a work-item: a later index, so only a strictly better value */
#define NAME_STEP(a, j) \
    if (i < 0 || (NAME_NAN(a) ? !NAME_NAN(v) : (!NAME_NAN(v) && (a) CMP v))) { v = (a); i = (j); }
extern "C" __global__ void __launch_bounds__(THREADS) NAME(
    const T *__restrict__ x, long long *__restrict__ out, long long n)
{
    __shared__ T warp_v[THREADS / 32];
    __shared__ long long warp_i[THREADS / 32];
    const T *row = x + (long long) blockIdx.x * n;
    T v = 0;
    long long i = -1;
    long long j = threadIdx.x;
    for (; j + 3 * THREADS < n; j += 4 * THREADS) {
        const T a = row[j], b = row[j + THREADS], c = row[j + 2 * THREADS],
                d = row[j + 3 * THREADS];
        NAME_STEP(a, j)
        NAME_STEP(b, j + THREADS)
        NAME_STEP(c, j + 2 * THREADS)
        NAME_STEP(d, j + 3 * THREADS)
    }
    for (; j < n; j += THREADS) {
        const T a = row[j];
        NAME_STEP(a, j)
    }
    for (int off = 16; off > 0; off >>= 1) {
        const T ov = __shfl_down_sync(0xffffffffu, v, off);
        const long long oi = __shfl_down_sync(0xffffffffu, i, off);
        if (NAME_WINS(ov, oi, v, i)) { v = ov; i = oi; }
    }
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) {
        warp_v[warp] = v;
        warp_i[warp] = i;
    }
    __syncthreads();
    if (warp != 0)
        return;
    v = lane < THREADS / 32 ? warp_v[lane] : (T) 0;
    i = lane < THREADS / 32 ? warp_i[lane] : -1;
    for (int off = 16; off > 0; off >>= 1) {
        const T ov = __shfl_down_sync(0xffffffffu, v, off);
        const long long oi = __shfl_down_sync(0xffffffffu, i, off);
        if (NAME_WINS(ov, oi, v, i)) { v = ov; i = oi; }
    }
    if (lane == 0)
        out[blockIdx.x] = i;
}
#undef NAME_NAN
#undef NAME_WINS
#undef NAME_STEP
"""


def kernel_name(op, dtype) -> str:
    return f"{PREFIX}{op}_{np.dtype(dtype).name}"


def arg_source(op, dtype) -> str:
    """The kernel's CUDA source for ``op`` ("argmax" | "argmin") over rows
    of ``dtype``."""
    dtype = np.dtype(dtype)
    return (_SOURCE.replace("NAME", kernel_name(op, dtype))
            .replace("THREADS", str(THREADS))
            .replace("NANTEST", "isnan(a)" if dtype.kind == "f" else "false")
            .replace("CMP", ">" if op == "argmax" else "<")
            .replace("const T", "const " + _TYPES[dtype.name])
            .replace("T v", _TYPES[dtype.name] + " v")
            .replace("T warp_v", _TYPES[dtype.name] + " warp_v")
            .replace("(T) 0", f"({_TYPES[dtype.name]}) 0"))


def arg_rows_node(op, x, shape) -> N.Node:
    """``op`` of ``x`` (a node, C order) along its last axis, one launch:
    the indices, of ``shape`` (``x``'s without its last axis), as int64."""
    n = x.shape[-1]
    rows = x.size // n
    name = kernel_name(op, x.dtype)
    ctype = _TYPES[x.dtype.name]
    params = parse_params(f"const {ctype} *x, long long *out, long long n", "cuda", name)
    spec = N.RawKernelSpec("cuda", name, arg_source(op, x.dtype), params)
    return N.RawKernelOutput.make(shape, np.dtype(np.int64), spec, (x,), (("n", n),),
                                  ((shape, np.dtype(np.int64).str),), (rows,), (THREADS,), 0)
