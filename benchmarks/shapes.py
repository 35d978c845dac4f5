"""The shape sweep: ``python -m benchmarks --device cuda --only shapes``
(``--device opencl`` on a CPU).

Contractions of every shape the issue names (square f32 including ragged
sizes, rectangular and split-K, Gram matrices of one buffer, batched, f64,
a fused MLP layer, an attention head), matrix-vector products in both orientations, reductions
of every aspect ratio, argmax, and reductions over broadcasts.  Each row is
checked against NumPy first and then timed beside its peers on the same
rotating inputs (cuBLAS through CuPy and torch with TF32 off for GEMMs,
torch eager / torch.compile / CuPy / JAX for the rest, NumPy on a CPU).  A
row's note names the kernel forms and the policy rules that ran.  The
headline of each family is its WORST row (``shapes_peers.print_summary``).

On a CPU device, or with ``--quick``, every size is 8-16x smaller per axis.
``BENCH_SHAPES=square,f64`` runs only the families named (a GPU run of all
of them takes several minutes).
"""
from __future__ import annotations

import math
import os

import numpy as np

import polyarray as pa
from .common import input_sets
from .peers import Ns
from .shapes_peers import FAMILIES, argext, measure, tanh

# (GPU size, CPU / --quick size)
SQUARE = [(128, 8), (256, 16), (500, 31), (512, 32), (1000, 62), (1024, 64), (1536, 96),
          (2000, 125), (2048, 128), (3000, 187), (4096, 256), (4097, 257), (8192, 512)]
RECTANGULAR = [((4096, 64, 4096), (512, 8, 512)), ((64, 4096, 64), (8, 512, 8)),
               ((8192, 1024, 256), (1024, 128, 32)), ((256, 65536, 256), (32, 8192, 32))]
# x @ x.T of a 65536 x 256 x is a 16 GiB result: NumPy's reference, the check
# and three peers' copies do not fit; 16384 x 256 is the same form (1 GiB)
GRAM = [("x @ x.T", ((4096, 64), (256, 4))), ("x.T @ x", ((4096, 64), (256, 4))),
        ("x @ x.T", ((16384, 256), (2048, 16))), ("x.T @ x", ((65536, 256), (4096, 16)))]
BATCHED = [((64, 256, 256), (8, 32, 32)), ((512, 64, 64), (64, 8, 8))]
F64 = [(2048, 256), (4096, 512)]
LAYER = ((4096, 1024, 4096), (512, 128, 512))          # x: M x K, W1: K x H, W2: H x K
GEMV = [((16384, 16384), (2048, 2048)), ((65536, 784), (8192, 98))]
SUMS = [(((1000000, 7), 0), ((125000, 7), 0)), (((7, 1000000), 1), ((7, 125000), 1)),
        (((3000, 3000), 0), ((375, 375), 0)), (((3000, 3000), 1), ((375, 375), 1)),
        (((64, 1024, 64), 1), ((8, 128, 8), 1))]
ARGMAX = ((4096, 4096), (512, 512))
# (shape, axis, dtype): one long row, rows, columns
SCANS = [(((1 << 26,), 0, "float32"), ((1 << 20,), 0, "float32")),
         (((1 << 24,), 0, "float64"), ((1 << 18,), 0, "float64")),
         (((4096, 4096), 1, "float32"), ((512, 512), 1, "float32")),
         (((4096, 4096), 0, "float32"), ((512, 512), 0, "float32"))]
BODIES = (8192, 512)
POINTS = ((1000000, 64, 8), (62500, 64, 8))           # points, centres, dimensions
ATTENTION = [((4096, 64), (512, 64))]                   # (n, d): Q, K, V all n x d
PA, NP = Ns("polyarray", pa), Ns("numpy", np)


def pick(b, sizes):
    """The GPU size of a ``(GPU, small)`` pair (each pair's, for a list), or
    the small one on a CPU device or with --quick."""
    small = b.quick or not b.gpu
    return [s[1] if small else s[0] for s in sizes] if isinstance(sizes, list) \
        else (sizes[1] if small else sizes[0])


def normal(b, shape, dtype=np.float32, scale=1.0):
    return (b.rng.standard_normal(shape) * scale).astype(dtype)


def _shape(shape):
    return "x".join(map(str, shape))


def _matmul(b, family, label, ashape, bshape, dtype=np.float32, rtol=1e-3, note="",
            extra=None):
    """``A @ B`` (batched when the shapes are 3-D) beside cuBLAS."""
    A = pa.placeholder("A", ashape, dtype)
    B = pa.placeholder("B", bshape, dtype)
    size = np.dtype(dtype).itemsize
    sets = input_sets(b, lambda: (normal(b, ashape, dtype), normal(b, bshape, dtype)),
                      size * (math.prod(ashape) + math.prod(bshape)))
    batch, (m, k), n = math.prod(ashape[:-2]), ashape[-2:], bshape[-1]
    measure(b, family, label, lambda: A @ B, ["A", "B"], lambda ns, a, c: a @ c, sets,
            sets[0][0] @ sets[0][1], flops=2 * batch * m * k * n, rtol=rtol, note=note,
            extra=extra)


def square(b):
    for n in pick(b, SQUARE):
        _matmul(b, "square", f"square {n}^3 f32", (n, n), (n, n), extra={"n": n})


def rectangular(b):
    for m, k, n in pick(b, RECTANGULAR):
        _matmul(b, "rectangular", f"rect {m}x{k}x{n} (MxKxN) f32", (m, k), (k, n))


def gram(b):
    """Both operands are one buffer, one of them read transposed."""
    for form, sizes in GRAM:
        shape = pick(b, sizes)
        x = pa.placeholder("x", shape, np.float32)
        left = form == "x @ x.T"
        sets = input_sets(b, lambda: (normal(b, shape),), 4 * math.prod(shape))
        xv = sets[0][0]
        m, k = shape if left else shape[::-1]
        measure(b, "gram", f"gram {form}, x {_shape(shape)} f32",
                lambda: x @ x.T if left else x.T @ x, ["x"],
                (lambda ns, v: v @ v.T) if left else (lambda ns, v: v.T @ v), sets,
                xv @ xv.T if left else xv.T @ xv, flops=2 * m * m * k, rtol=1e-3)


def batched(b):
    for shape in pick(b, BATCHED):
        _matmul(b, "batched", f"batched A @ B, A and B {_shape(shape)} f32", shape, shape)


def f64(b):
    for n in pick(b, F64):
        _matmul(b, "f64", f"f64 {n}^3", (n, n), (n, n), dtype=np.float64, rtol=1e-9,
                note="'of hw' is of the float32 FMA peak")


def fused(b):
    """``tanh(x @ W1) @ W2``: the epilogue belongs in the first GEMM's store."""
    m, k, h = pick(b, LAYER)
    names, shapes = ["x", "W1", "W2"], [(m, k), (k, h), (h, k)]
    ph = [pa.placeholder(nm, s, np.float32) for nm, s in zip(names, shapes)]
    scales = (1.0, 1 / math.sqrt(k), 1 / math.sqrt(h))     # tanh stays off its plateaus
    sets = input_sets(b, lambda: tuple(normal(b, s, scale=c) for s, c in zip(shapes, scales)),
                      4 * sum(map(math.prod, shapes)))
    xv, w1, w2 = sets[0]
    measure(b, "fused", f"fused tanh(x @ W1) @ W2, {m}x{k}x{h}",
            lambda: pa.tanh(ph[0] @ ph[1]) @ ph[2], names,
            lambda ns, x, u, v: tanh(ns, x @ u) @ v, sets, np.tanh(xv @ w1) @ w2,
            peers="fused", flops=2 * 2 * m * k * h, rtol=1e-3)


def gemv(b):
    """``A @ v`` and ``v @ A``: one read of the matrix is the limit."""
    for m, n in pick(b, GEMV):
        for label, vlen in (("A @ v", n), ("v @ A", m)):
            A = pa.placeholder("A", (m, n), np.float32)
            v = pa.placeholder("v", (vlen,), np.float32)
            right = label == "A @ v"
            sets = input_sets(b, lambda: (normal(b, (m, n)), normal(b, (vlen,))),
                              4 * (m * n + vlen))
            av, vv = sets[0]
            measure(b, "gemv", f"gemv {label}, A {m}x{n} f32", lambda: A @ v if right else v @ A,
                    ["A", "v"], (lambda ns, a, u: a @ u) if right else (lambda ns, a, u: u @ a),
                    sets, av @ vv if right else vv @ av, peers="gemv",
                    nbytes=4 * (m * n + m + n), rtol=1e-3)


def sums(b):
    for shape, axis in pick(b, SUMS):
        x = pa.placeholder("x", shape, np.float32)
        sets = input_sets(b, lambda: (b.rng.uniform(-1, 1, shape).astype(np.float32),),
                          4 * math.prod(shape))
        want = sets[0][0].sum(axis=axis)
        measure(b, "sums", f"sum axis {axis} of {shape} f32", lambda: x.sum(axis=axis), ["x"],
                lambda ns, v, axis=axis: ns.sum(v, axis), sets, want, peers="sums",
                nbytes=4 * (math.prod(shape) + want.size), rtol=1e-3)


def argmax(b):
    shape = pick(b, ARGMAX)
    x = pa.placeholder("x", shape, np.float32)
    sets = input_sets(b, lambda: (normal(b, shape),), 4 * math.prod(shape))
    measure(b, "argmax", f"argmax axis 1 of {_shape(shape)} f32", lambda: pa.argmax(x, axis=1),
            ["x"], lambda ns, v: argext(ns, v, 1, "argmax"), sets, sets[0][0].argmax(axis=1),
            peers="argmax", nbytes=4 * math.prod(shape) + 8 * shape[0])


def cumsum_ns(ns, x, axis):
    return ns.mod.cumsum(x, dim=axis) if ns.name == "torch" else ns.mod.cumsum(x, axis=axis)


def scans(b):
    for shape, axis, dt in pick(b, SCANS):
        x = pa.placeholder("x", shape, dt)
        nbytes = 2 * math.prod(shape) * np.dtype(dt).itemsize
        sets = input_sets(b, lambda: (normal(b, shape, dt),), nbytes // 2)
        want = np.cumsum(sets[0][0], axis=axis)
        measure(b, "scans", f"cumsum axis {axis} of {_shape(shape)} {np.dtype(dt).name}",
                lambda: pa.cumsum(x, axis=axis), ["x"],
                lambda ns, v, axis=axis: cumsum_ns(ns, v, axis), sets, want, peers="scans",
                nbytes=nbytes, rtol=1e-3 if dt == "float32" else 1e-9)


SORTS = [((1 << 24, "float32", "sort"), (1 << 18, "float32", "sort")),
         ((1 << 24, "float32", "argsort"), (1 << 18, "float32", "argsort")),
         ((1 << 24, "int64", "sort"), (1 << 18, "int64", "sort")),
         ((1 << 20, "float32", "sort"), (1 << 14, "float32", "sort"))]


def sort_ns(ns, x, op):
    if ns.name == "torch":
        return ns.mod.sort(x).values if op == "sort" else ns.mod.sort(x, stable=True).indices
    return getattr(ns.mod, op)(x)


def sorts(b):
    for n, dt, op in pick(b, SORTS):
        x = pa.placeholder("x", (n,), dt)
        if dt == "int64":
            make = lambda: (b.rng.integers(-2**62, 2**62, n),)        # noqa: E731
        else:
            make = lambda: (normal(b, (n,), dt),)                       # noqa: E731
        sets = input_sets(b, make, n * np.dtype(dt).itemsize)
        v = sets[0][0]
        want = np.sort(v) if op == "sort" else np.argsort(v, kind="stable")
        measure(b, "sorts", f"{op} of {n} {dt}", lambda: getattr(pa, op)(x), ["x"],
                lambda ns, v, op=op: sort_ns(ns, v, op), sets, want, peers="sorts",
                nbytes=2 * n * np.dtype(dt).itemsize, rtol=0)


def forces_ns(ns, p, w):
    """All-pairs forces: broadcast ``(n, n, 3)``, reduce over the middle axis."""
    d = p[None, :, :] - p[:, None, :]
    return ns.sum(d * w[None, :, None], 1)


def nearest_ns(ns, x, c):
    """Index of the nearest centre: a reduction over a broadcast, then argmin."""
    return argext(ns, ns.sum((x[:, None, :] - c[None]) ** 2, 2), 1, "argmin")


def grid(b, shape, lim, step):
    """Multiples of ``step`` in [-lim, lim): squared distances of such
    points are exact in float32, so every peer's argmin agrees with NumPy's
    whatever order it sums in (ties go to the first index everywhere)."""
    k = int(lim / step)
    return (b.rng.integers(-k, k, shape) * step).astype(np.float32)


def broadcast_reductions(b):
    n = pick(b, BODIES)
    p, w = pa.placeholder("p", (n, 3), np.float32), pa.placeholder("w", (n,), np.float32)
    sets = input_sets(b, lambda: (normal(b, (n, 3)), normal(b, (n,))), 16 * n)
    pv, wv = sets[0]
    measure(b, "broadcast-reductions", f"forces, {n} bodies (n x n x 3 broadcast)",
            lambda: forces_ns(PA, p, w), ["p", "w"], forces_ns, sets, forces_ns(NP, pv, wv),
            peers="broadcast", flops=9 * n * n, rtol=1e-3,
            note="9 flops a pair: a subtract, a multiply and an add per axis")
    npts, nc, dim = pick(b, POINTS)
    x = pa.placeholder("x", (npts, dim), np.float32)
    c = pa.placeholder("c", (nc, dim), np.float32)
    sets = input_sets(b, lambda: (grid(b, (npts, dim), 2, 1 / 256),
                                  grid(b, (nc, dim), 2, 1 / 256)), 4 * (npts + nc) * dim)
    xv, cv = sets[0]
    measure(b, "broadcast-reductions", f"nearest of {nc} centres, {npts}x{dim} points",
            lambda: nearest_ns(PA, x, c), ["x", "c"], nearest_ns, sets, nearest_ns(NP, xv, cv),
            peers="broadcast", nbytes=4 * (npts + nc) * dim + 8 * npts)


def attention_ns(ns, q, k, v):
    """``softmax(q @ k.T / 8) @ v`` as NumPy code writes it."""
    s = (q @ k.T) / 8.0
    e = ns.exp(s - ns.max(s, 1, keepdims=True))
    return e / ns.sum(e, 1, keepdims=True) @ v


def attention(b):
    """The chain of an attention head: two products with a row softmax
    between them (the n x n scores are what a chain of kernels writes and
    reads again)."""
    for n, d in pick(b, ATTENTION):
        names = ["q", "k", "v"]
        ph = [pa.placeholder(nm, (n, d), np.float32) for nm in names]
        sets = input_sets(b, lambda: tuple(normal(b, (n, d)) for _ in names), 12 * n * d)
        want = attention_ns(NP, *sets[0])
        measure(b, "attention", f"softmax(q @ k.T / 8) @ v, q k v {n}x{d} f32",
                lambda: attention_ns(PA, *ph), names, attention_ns, sets, want,
                peers="attention", flops=4 * n * n * d, rtol=1e-4,
                note="'of hw': the two products' FMAs over the float32 FMA peak")


WORKLOADS = dict(zip(FAMILIES, [square, rectangular, gram, batched, f64, fused, gemv, sums,
                                argmax, broadcast_reductions, scans, sorts, attention]))


def selected():
    """The families to run: all, or those named in ``BENCH_SHAPES``."""
    names = [s.strip() for s in os.environ.get("BENCH_SHAPES", "").split(",") if s.strip()]
    unknown = set(names) - set(WORKLOADS)
    if unknown:
        raise SystemExit(f"BENCH_SHAPES: unknown families {sorted(unknown)}; "
                         f"known: {', '.join(WORKLOADS)}")
    return [WORKLOADS[k] for k in (names or WORKLOADS)]
