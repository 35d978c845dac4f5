"""Attention on CUDA: ``softmax(scale(Q @ K^T)) @ V`` in one kernel that
never writes the score matrix (Dao et al., "FlashAttention", 2022: the
softmax computed online, a running maximum and sum per row).

A work-group owns ``BM`` rows of Q (all of their ``D`` columns in shared
memory) and a range of keys.  For each tile of ``BN`` keys it loads K's and
V's rows into shared memory, computes the ``BM x BN`` scores in registers
(a work-item ``TM x TN`` of them), scales them as the program does (``s *
scale`` or ``s / scale``), takes each row's maximum (the 16 work-items of a
row are half a warp: shuffles), rescales the row's sum and output by
``exp(m_old - m_new)``, adds ``exp(s - m_new)`` to the sum, stores those
values into shared memory (over K's tile) and adds their product with V's
tile to its ``TM x DV/16`` outputs.  Keys past the end score ``-inf``
(``exp`` of them is 0).

Too few row tiles to fill the device: the keys are cut into ``SPLITS``
ranges side by side, each work-group writing its unnormalized output, its
rows' maximum and sum; a second kernel (``NAME_combine``) rescales the
ranges to the overall maximum, adds them and divides by the overall sum.

The scores and the softmax are NumPy's up to the order of the sums (and
``exp``'s last bits): the maximum is subtracted before ``exp``, and the
output is divided by the same sum; NaN and inf propagate as in NumPy's
chain (a row with an inf score is NaN).

``plan/attention.py`` puts these kernels' raw-kernel nodes
(``ir.nodes.RawKernelOutput``) where the policy chooses
``Form.FLASH_ATTENTION``; ``forms/raw.py`` launches them.
"""
from __future__ import annotations

import numpy as np

from polyarray.ir import nodes as N
from .scan_kernels import parse_params

PREFIX = "pa_attn_"             # the kernels' names (pa_: no user's raw kernel has it)
TX = 16                         # work-items along a row of the score tile
SHARED_BYTES = 48 * 1024        # static shared memory of one kernel

_TYPES = {"float32": "float", "float64": "double"}
ATTENTION_DTYPES = frozenset(_TYPES)

# T, D, DP (D rounded up to 4), DV, DVP (DV rounded up to TX), BM, BN, TM, TN, TY, OC (= DVP / TX),
# KP (the shared tile holding K's columns, then the softmax values), KT (K given as
# its transpose, D x M), SCALE(x), EXP(x), SPLITS, NAME
_MAIN = r"""
namespace NAME_helpers {   /* this kernel's helpers (another dtype's have other types) */
/* four consecutive values of shared memory, 16-byte aligned */
__device__ __forceinline__ void pa_ld4(const float *p, float *r)
{
    const float4 x = *(const float4 *) p;
    r[0] = x.x; r[1] = x.y; r[2] = x.z; r[3] = x.w;
}
__device__ __forceinline__ void pa_ld4(const double *p, double *r)
{
    const double2 x = ((const double2 *) p)[0], y = ((const double2 *) p)[1];
    r[0] = x.x; r[1] = x.y; r[2] = y.x; r[3] = y.y;
}
}   /* namespace NAME_helpers */
/* K's row j, column c in shared memory: groups of 4 columns permuted by the
   row (conflict-free reads of the 16 rows of a half-warp) where DP % 32 == 0 */
#if DP % 32 == 0
#define PA_SWZ(j, c) ((c) ^ (((j) & 7) << 2))
#else
#define PA_SWZ(j, c) (c)
#endif
extern "C" __global__ void __launch_bounds__(TX * TY) NAME(
    const T *q, const T *k, const T *v, T *out, long long n, long long m,
    long long chunk, T scale)
{
    using namespace NAME_helpers;
    __shared__ __align__(16) T qs[BM * DP];         /* qs[i * DP + c] */
    __shared__ __align__(16) T kp[KP];              /* ks[j * DP + PA_SWZ(j, c)], then
                                                       the values ps[i * BN + j] */
    __shared__ __align__(16) T vs[BN * DVP];        /* vs[j * DVP + c] */
    const int t = threadIdx.x, tx = t % TX, ty = t / TX;
    const long long b = blockIdx.y;
    const long long split = blockIdx.x % SPLITS, row0 = (long long) (blockIdx.x / SPLITS) * BM;
    const long long j_begin = split * chunk;
    const long long j_end = min(m, j_begin + chunk);
    q += b * n * D;
    k += b * m * D;
    v += b * m * DV;
    for (int e = t; e < BM * DP; e += TX * TY) {
        const int i = e / DP, c = e - i * DP;
        qs[e] = row0 + i < n && c < D ? q[(row0 + i) * D + c] : (T) 0;
    }
    /* this work-item's rows ty * TM + i; its keys tx + TX * jj of each tile, its
       output columns tx * OC + c */
    T o[TM][OC], mx[TM], sm[TM];
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        mx[i] = -PA_INF;
        sm[i] = (T) 0;
#pragma unroll
        for (int c = 0; c < OC; ++c)
            o[i][c] = (T) 0;
    }
    for (long long j0 = j_begin; j0 < j_end; j0 += BN) {
        __syncthreads();            /* the tile before is read */
        for (int e = t; e < BN * DP; e += TX * TY) {
#if KT
            const int c = e / BN, j = e - c * BN;
            kp[j * DP + PA_SWZ(j, c)] = j0 + j < j_end && c < D ? k[c * m + j0 + j] : (T) 0;
#else
            const int j = e / DP, c = e - j * DP;
            kp[j * DP + PA_SWZ(j, c)] = j0 + j < j_end && c < D ? k[(j0 + j) * D + c] : (T) 0;
#endif
        }
        for (int e = t; e < BN * DVP; e += TX * TY) {
            const int j = e / DVP, c = e - j * DVP;
            vs[e] = j0 + j < j_end && c < DV ? v[(j0 + j) * DV + c] : (T) 0;
        }
        __syncthreads();
        T s[TM][TN];
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int jj = 0; jj < TN; ++jj)
                s[i][jj] = (T) 0;
#pragma unroll 2
        for (int c = 0; c < DP; c += 4) {
            T a[TM][4], bb[TN][4];
#pragma unroll
            for (int i = 0; i < TM; ++i)
                pa_ld4(&qs[(ty * TM + i) * DP + c], a[i]);
#pragma unroll
            for (int jj = 0; jj < TN; ++jj) {
                const int j = tx + TX * jj;
                pa_ld4(&kp[j * DP + PA_SWZ(j, c)], bb[jj]);
            }
#pragma unroll
            for (int u = 0; u < 4; ++u)
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int jj = 0; jj < TN; ++jj)
                        s[i][jj] += a[i][u] * bb[jj][u];
        }
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            T top = -PA_INF;
#pragma unroll
            for (int jj = 0; jj < TN; ++jj) {
                s[i][jj] = j0 + tx + TX * jj < j_end ? SCALE(s[i][jj]) : -PA_INF;
                top = PA_MAX(top, s[i][jj]);
            }
#pragma unroll
            for (int d = TX / 2; d > 0; d >>= 1)
                top = PA_MAX(top, __shfl_xor_sync(0xffffffffu, top, d));
            const T now = PA_MAX(mx[i], top);
            /* scores of -inf so far: exp(-inf - 0) = 0, not exp(-inf + inf) */
            const T base = now == -PA_INF ? (T) 0 : now;
            const T back = EXP(mx[i] - base);       /* 0 on the first tile */
            T add = (T) 0;
#pragma unroll
            for (int jj = 0; jj < TN; ++jj) {
                s[i][jj] = EXP(s[i][jj] - base);
                add += s[i][jj];
            }
#pragma unroll
            for (int d = TX / 2; d > 0; d >>= 1)
                add += __shfl_xor_sync(0xffffffffu, add, d);
            sm[i] = sm[i] * back + add;
            mx[i] = now;
#pragma unroll
            for (int c = 0; c < OC; ++c)
                o[i][c] *= back;
        }
        __syncthreads();            /* K's tile is read: the values go over it */
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int jj = 0; jj < TN; ++jj)
                kp[(ty * TM + i) * BN + tx + TX * jj] = s[i][jj];
        __syncthreads();
#pragma unroll 2
        for (int j = 0; j < BN; j += 4) {
            T a[TM][4];
#pragma unroll
            for (int i = 0; i < TM; ++i)
                pa_ld4(&kp[(ty * TM + i) * BN + j], a[i]);
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                T bb[OC];
#if OC % 4 == 0
#pragma unroll
                for (int c = 0; c < OC; c += 4)
                    pa_ld4(&vs[(j + u) * DVP + tx * OC + c], bb + c);
#else
#pragma unroll
                for (int c = 0; c < OC; ++c)
                    bb[c] = vs[(j + u) * DVP + tx * OC + c];
#endif
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int c = 0; c < OC; ++c)
                        o[i][c] += a[i][u] * bb[c];
            }
        }
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const long long r = row0 + ty * TM + i;
        if (r >= n)
            continue;
#if SPLITS == 1
        T *dst = out + (b * n + r) * DV;
#pragma unroll
        for (int c = 0; c < OC; ++c)
            if (tx * OC + c < DV)
                dst[tx * OC + c] = o[i][c] / sm[i];
#else
        /* this range's outputs, then its maximum and sum, per row */
        T *dst = out + ((b * SPLITS + split) * n + r) * (DV + 2);
#pragma unroll
        for (int c = 0; c < OC; ++c)
            if (tx * OC + c < DV)
                dst[tx * OC + c] = o[i][c];
        if (tx == 0) {
            dst[DV] = mx[i];
            dst[DV + 1] = sm[i];
        }
#endif
    }
}
#undef PA_SWZ
"""

# a work-item per output element: the ranges' outputs rescaled to the
# overall maximum, added, divided by the overall sum
_COMBINE = r"""
extern "C" __global__ void __launch_bounds__(256) NAME_combine(
    const T *part, T *out, long long n, long long count)
{
    const long long e = (long long) blockIdx.x * 256 + threadIdx.x;
    if (e >= count)
        return;
    const long long row = e / DV, c = e - row * DV;     /* row: b * n + r */
    const long long b = row / n, r = row - b * n;
    const T *p = part + (b * SPLITS * n + r) * (DV + 2);
    T top = p[DV];
    for (int s = 1; s < SPLITS; ++s)
        top = PA_MAX(top, p[s * n * (DV + 2) + DV]);
    T sum = (T) 0, acc = (T) 0;
    for (int s = 0; s < SPLITS; ++s) {
        const T *ps = p + s * n * (DV + 2);
        const T w = EXP(ps[DV] - top);
        sum += ps[DV + 1] * w;
        acc += ps[c] * w;
    }
    out[e] = acc / sum;
}
"""

# the configurations (TY, TM, TN) tried in order: the first whose tiles fit
# the shared memory (BM = TY * TM rows, BN = TX * TN keys)
CONFIGS = ((16, 4, 4), (8, 4, 4), (8, 4, 2), (4, 4, 2), (4, 4, 1))


def _round_up(x, k):
    return -(-x // k) * k


def shared_bytes(itemsize, d, dv, config) -> int:
    ty, tm, tn = config
    bm, bn = ty * tm, TX * tn
    dp = _round_up(d, 4)
    return itemsize * (bm * dp + max(bn * dp, bm * bn) + bn * _round_up(dv, TX))


def config_for(itemsize, d, dv):
    """The first of ``CONFIGS`` whose tiles fit ``SHARED_BYTES``, or None."""
    return next((c for c in CONFIGS if shared_bytes(itemsize, d, dv, c) <= SHARED_BYTES), None)


def _defs(dtype, d, dv, config, splits, kt, scale_op, name):
    ty, tm, tn = config
    ctype = _TYPES[np.dtype(dtype).name]
    single = ctype == "float"
    dvp = _round_up(dv, TX)
    bm, bn = ty * tm, TX * tn
    scale = {"multiply": "((x) * scale)", "divide": "((x) / scale)", None: "(x)"}[scale_op]
    dp = _round_up(d, 4)
    return {"T": ctype, "D": d, "DP": dp, "DV": dv, "DVP": dvp, "BM": bm, "BN": bn, "TM": tm,
            "TN": tn, "TY": ty, "TX": TX, "OC": dvp // TX, "KP": max(bn * dp, bm * bn),
            "KT": int(kt),
            "SPLITS": splits, "SCALE(x)": scale,
            "EXP(x)": "expf(x)" if single else "exp(x)",
            "PA_MAX(a, b)": "fmaxf(a, b)" if single else "fmax(a, b)",
            "PA_INF": "__int_as_float(0x7f800000)" if single
            else "__longlong_as_double(0x7ff0000000000000LL)",
            "NAME": name}


def _wrap(defs, body):
    head = "".join(f"#define {k} {v}\n" for k, v in defs.items() if k != "NAME")
    tail = "".join(f"#undef {k.split('(')[0]}\n" for k in defs if k != "NAME")
    return head + body.replace("NAME", defs["NAME"]) + tail


def kernel_name(dtype, d, dv, config, splits, kt, scale_op) -> str:
    ty, tm, tn = config
    return (f"{PREFIX}{np.dtype(dtype).name}_d{d}_v{dv}_{ty}x{tm}x{tn}_s{splits}"
            f"{'_kt' if kt else ''}_{scale_op or 'none'}")


def attention_nodes(q, k, v, *, kt, scale_op, scale, config, splits, shape) -> N.Node:
    """The node of ``softmax(scale(q @ K^T)) @ v`` (``shape``: batch + (n,
    dv)) as the raw-kernel launches: ``q`` (batch, n, d), ``k`` (batch, m,
    d), or with ``kt`` its transpose (batch, d, m), ``v`` (batch, m, dv), all
    C-order nodes of one dtype; ``scale_op`` "multiply", "divide" or None
    with the constant ``scale``; ``config`` (TY, TM, TN) of ``CONFIGS``;
    ``splits`` key ranges side by side."""
    dtype = np.dtype(q.dtype)
    ctype = _TYPES[dtype.name]
    n, d = q.shape[-2:]
    m, dv = v.shape[-2:]
    batch = q.size // (n * d)
    ty, tm, tn = config
    bm, bn = ty * tm, TX * tn
    chunk = _round_up(-(-m // splits), bn)
    splits = -(-m // chunk)              # no range empty
    name = kernel_name(dtype, d, dv, config, splits, kt, scale_op)
    defs = _defs(dtype, d, dv, config, splits, kt, scale_op, name)
    params = parse_params(f"const {ctype} *q, const {ctype} *k, const {ctype} *v, {ctype} *out, "
                          f"long long n, long long m, long long chunk, {ctype} scale", "cuda", name)
    spec = N.RawKernelSpec("cuda", name, _wrap(defs, _MAIN), params)
    grid = (-(-n // bm) * splits, batch)
    scalars = (("n", n), ("m", m), ("chunk", chunk), ("scale", dtype.type(scale)))
    if splits == 1:
        return N.RawKernelOutput.make(shape, dtype, spec, (q, k, v), scalars,
                                      ((shape, dtype.str),), grid, (TX * ty,), 0)
    part_shape = (batch * splits * n * (dv + 2),)
    part = N.RawKernelOutput.make(part_shape, dtype, spec, (q, k, v), scalars,
                                  ((part_shape, dtype.str),), grid, (TX * ty,), 0)
    cname = name + "_combine"
    cparams = parse_params(f"const {ctype} *part, {ctype} *out, long long n, long long count",
                           "cuda", cname)
    cspec = N.RawKernelSpec("cuda", cname, _wrap(defs, _COMBINE), cparams)
    count = batch * n * dv
    return N.RawKernelOutput.make(shape, dtype, cspec, (part,), (("n", n), ("count", count)),
                                  ((shape, dtype.str),), (-(-count // 256),), (256,), 0)
