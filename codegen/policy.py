"""The default policy, as one table: which kernel form, with which
parameters, every kernel group gets, and why.

``choose(shape_class, device)`` walks ``RULES`` in order and returns the
first row that applies to the class and whose condition holds, as a
``Choice`` (form, parameters, rule name).  A row with ``then`` hands the
decision to the rows of another class (a contraction that is no tileable
matrix product is a reduction); the rule names are then joined with " > ".
argmax/argmin take the reduction rows as they are: every form reduces
(value, index) pairs in one pass (``forms/reduction_ops.PaArgExtremum``).
Builders (``forms/``) build what was chosen and decide nothing.
``candidates.tuning_candidates`` gives, per form, the schedules the tuner
times.

A 1000 x 1000 matmul, for example, matches "matmul: split-K (few tiles,
long K)": 128 x 64 outputs per work-group over loops padded to 1024 x 1024,
the reads past 1000 guarded, and K cut into 3 chunks of 336 (128 such
tiles would fill less than one work-group per SM of an H100), added by a
second kernel.

Thresholds are module constants (``benchmarks/sweep.py`` sets some of them
and re-lowers): the rules read them when they run.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Callable

from .classify import Contraction, Elementwise, Reduction, Rows
from .device import Device
from .lower import ceil_div, pow2_floor

# -- thresholds ---------------------------------------------------------------

WG = 256                # default work-group size
ELEMENTWISE_ILP = 4     # elements per work-item in large GPU elementwise kernels: one
#                         per work-item reached 0.76 of copy on an H100, four 0.96
#                         (benchmarks/probe_bandwidth.py)
ILP_MIN_GROUPS = 64     # "large": at least this many work-groups of ELEMENTWISE_ILP elements
MANY_OUTPUTS = 1024     # enough outputs to fill a device one per work-item
FILL_THREADS = 1 << 16  # work-items needed to keep a large GPU busy
LONG_REDUCTION = 4096   # worth two stages when outputs are few
FEW_OUTPUTS = 64        # fewer outputs than this: a work-group each (GPU)
GROUP_REDUCTION = 64    # contiguous reductions at least this long get a work-group (GPU)
GROUP_ITEMS = 8         # ... of at most R / GROUP_ITEMS work-items: on an H100, A @ v for
WARP = 32               # A 65536 x 784 took 145 us with 256 (0.48 of copy bandwidth)
PAIR_GROUP_ITEMS = 64   # argmax/argmin: each tree step combines (value, index) pairs in
#                         two arrays, so fewer work-items with more values each: argmax over
#                         axis 1 of 4096^2 f32 on the H100, 64 work-items 40.7 us, 256 44.8 us
LONG_COLUMNS = 256      # outer reductions at least this long are split into column chunks
# First stage of a two-stage reduction on a GPU: at most TWO_STAGE_GROUPS work-groups,
# each reducing a contiguous chunk in at least TWO_STAGE_STEPS coalesced steps.  On an
# H100, a full sum of 2^26 float32 took 91.8 us in its first stage with 512 grid-strided
# work-groups (48% of warps active) and 89.4 us as 8192 contiguous chunks (ncu).
TWO_STAGE_GROUPS = 8192
TWO_STAGE_STEPS = 16
CPU_COLUMN_CHUNK = 64   # CPU split columns: short column chunks stay in cache across items
# CPU reductions (forms/lanes.py; PoCL 3.1, AMD EPYC AVX2, 2 cores, against NumPy).  A
# reduced contiguous axis gets CPU_LANES register accumulators per work-item: the sum over
# axis 1 of (7, 125000) f32 took 469 us with one (``thread``: dependent adds), 73-82 us
# with 16, no less with 32.  A kept one gets a private array of up to CPU_KEPT_LANES
# outputs, each row read in one contiguous run: 3000^2 f32 over axis 0 took 2.9 ms, 4.5
# with 512 lanes, 3.9 as 16-lane strips.  Below CPU_ONE_GROUP elements, one work-group:
# PoCL's second thread wakes 20-50 us late (two 3 us work-groups took 31-56 us, one 5 us);
# (375, 375) over axis 0 took 44 us in one, 66 us in 8.  Above it CPU_GROUPS (2 to 16
# within noise), a task's range cut in chunks when there are fewer tasks, and in chunks
# of at most CPU_CHUNK_STEPS steps per lane for accuracy (a float accumulator's error
# grows with its additions: axis 0 of (20000, 257) f32 was 5.8e-4 off in 8 chunks, 2.6e-4
# in 20, 1.6e-4 in 79; NumPy's own 1.4e-3, and tests compare with NumPy).
CPU_LANES = 16
CPU_KEPT_LANES = 4096
CPU_ONE_GROUP = 1 << 18
CPU_GROUPS = 8
CPU_CHUNK_STEPS = 256
GPU_COLUMN_CHUNK = 32   # GPU split columns: at least this many rows per chunk
# GPU split columns over a broadcast (values computed from fewer buffer
# elements) whose last kept axis is contiguous and this short or shorter (the
# xyz of all-pairs forces, (d * w[:, :, None]).sum(axis=1)): a work-item
# computes that axis's outputs together, in registers, so the loads they
# share (w[j]) are made once; and chunks until BLOCKED_FILL work-items run
# (its values are computed, not read: latency to hide).  Forces of 8192
# bodies on the H100: 97 us -> 49 us (torch.compile 68 us).  Not for values
# read from memory: a middle-axis sum of (4096, 4096, 4) went 0.45x torch
KEPT_BLOCK = 4
BLOCKED_FILL = FILL_THREADS * 8
TRANSPOSE_TILE = 32     # tile edge of transposed elementwise kernels (GPU)
TRANSPOSE_ROWS = 4      # rows of that tile per work-item (work-groups of 32 x 8)
TILE = 16               # matmul tile edge (and depth); sizes are padded to tiles
# CUDA grids have at most 65535 work-groups along y and z (g.1, g.2): the
# tiled matmul puts its row tiles on g.1 and its batch on g.2, a transposed
# elementwise tile its row tiles on g.1; past that, other forms run
MAX_GRID_YZ = 65535
REG_TILES = (128, 64)   # work-group tiles of register-tiled matmuls (16 x 16 work-items)
BIG_TILES = 256         # enough 128 x 128 tiles to fill an H100's 132 SMs (2048^2 outputs)
# Below that, 128 x 64 tiles: on an H100 (python .gpu/variants15.py) 1000^3 and 1536^3
# reached 0.76 and 0.75 of cuBLAS with them, 0.69 with 64 x 64; 4096 x 64 x 4096 (K too
# short for 128 x 128 tiles' stores) 0.71, against 0.61 with 128 x 128.
DEEP_K = 256
FILL_GROUPS = 264       # work-groups that fill an H100 twice over (132 SMs): half of it or less
SPLIT_K_CHUNK = 128     # and K >= 2 chunks of this: split-K, to FILL_GROUPS work-groups
# Register-tiled matmuls: 8 x 8 outputs per work-item in groups of MATMUL_VECTOR (16-byte
# shared loads) on 128 x 128 tiles, else 4 x 4 on 64 x 64.  At 4096^3 on an H100 these
# reach 0.87 and 0.60 of cuBLAS; the strided register tiles of the first version reached
# 0.66 and 0.56 (python -m benchmarks.matmul_sweep --vector).
MATMUL_VECTOR = 4
MATMUL_VECTOR_8 = 2     # 8-byte types: 2 x 8 bytes per shared load
# float64 products on CUDA (forms/mma_matmul.py): work-group tiles (rows, columns) of
# warp tiles (rows, columns) on the FP64 tensor cores, K in steps of MMA_DEPTH; products
# narrower than MMA_MIN keep the 16 x 16 tiles.  H100 sweep (session 8, ratio to cuBLAS
# DGEMM at 1000^3 / 2048^3 / 4096^3): 64 x 64 of 8 warps of 32 x 16, depth 16: 0.46 /
# 0.49 / 0.53 (the best worst case); of 4 warps of 32 x 32: 0.26 / 0.51 / 0.53; 128 x 64
# and 128 x 128: 0.16-0.40 (registers: one work-group per SM); depth 32 past 48 KB of
# shared memory for those.  FP64 FMAs in register tiles: 0.31 / 0.30 / 0.31.  512^3
# keeps split-K with FMAs (0.82, the tensor-core form 0.57): that rule comes first
MMA_BIG = (64, 64, 32, 16)
MMA_SMALL = (64, 64, 32, 16)
MMA_DEPTH = 16
MMA_MIN = 64
GROUP_ROW = 64          # rows at least this long get a work-group each (GPU)
# Work-group size and unrolling, measured on an H100 for softmax over (4096, 1024)
# float32 (read + write over copy bandwidth): 128 work-items with every pass
# unrolled 0.94; 256 unrolled 0.75; 256 not unrolled 0.75; 1024: 0.23.
# Smaller groups fit more rows per SM, unrolled passes keep 8 loads in flight.
ROW_GROUP = 128
ROW_UNROLL = 16         # unroll each pass when it has at most this many steps
ROW_FUSE_MAX = 16384    # longest row a fused row kernel keeps in one work-group
# CPU matmuls (packed operands, forms/cpu_matmul.py): a work-item accumulates a block of
# CPU_MATMUL_ROWS rows x CPU_MATMUL_VECTORS vectors of CPU_VECTOR_BYTES (AVX2: float8,
# double4).  On PoCL (AMD EPYC, AVX2), one thread, 512^3 and 1000^3 float32, 4 x 16 and
# 6 x 16 blocks ran at 0.94-1.0 of NumPy's OpenBLAS on one thread; 8 x 8 at 0.72; 3 x 32
# (15 live vectors) at 0.46; float64 4 x 8: 1.0.  Skinny products too (2 x 2048 x 2048:
# 3.2 GFLOP/s against 0.6 as a reduction; 2048 x 2048 x 1: 2.1 against 1.5).  Below
# CPU_MATMUL_WORK multiply-adds, both take tens of microseconds (three launches against
# one) and the one reduction kernel compiles several times faster: a reduction.
CPU_VECTOR_BYTES = 32
CPU_MATMUL_ROWS = 4
CPU_MATMUL_VECTORS = 2
CPU_MATMUL_WORK = 1 << 15
MAX_INLINE = 400        # a reduction body inlining more nodes than this is materialized
MAX_INLINE_DEPTH = 40   # ... or one deeper than this (code blow-up guard)
# A reduction over at most this many values whose result only feeds other
# reductions (through elementwise work of its own size) is not a kernel: its
# terms are unrolled into the reading reduction's body, in registers, so
# ``argmin(((x[:, None] - c[None]) ** 2).sum(axis=2), axis=1)`` is one kernel
# that never stores the (points, centres) distances (passes/materialize.py)
INLINE_REDUCTION_MAX = 16
# ... and a reduction whose values each unroll this many terms or more (an
# inlined reduction: distances to centres) runs a work-item per output when
# there are enough outputs to fill the device: its elements are work, and a
# work-group tree over them costs more than it shares (nearest centre, 10^6
# points x 64 centres x 8 dimensions: 734 us as groups on the H100)
HEAVY_TERMS = 4


class Form(str, Enum):
    """The form of one kernel (what ``KernelInfo.form`` prints)."""
    ELEMENTWISE = "elementwise"         # flat, elements per item, axes or transposed tile
    THREAD = "thread"                   # a work-item per output, a loop over the reduction
    GROUP = "group"                     # a work-group per output, a tree in local memory
    NEUTRAL = "neutral"                 # an empty reduction: NumPy's identity
    TWO_STAGE = "two-stage 1"           # chunks into partials, then COMBINE_GROUP
    SPLIT_COLUMNS = "split-columns 1"   # column chunks into partials, then COMBINE_THREAD
    LANES = "lanes"                     # CPU: lanes of accumulators along the contiguous axis
    COMBINE_GROUP = "combine (group)"
    COMBINE_THREAD = "combine (thread)"
    TILED_MATMUL = "tiled matmul"
    PACKED_MATMUL = "packed matmul"     # CPU: packed operands, vector register blocks
    MMA_MATMUL = "mma matmul"           # CUDA float64: warp tiles on the FP64 tensor cores
    PACK = "pack"                       # ... copying one operand into its panels
    ROWS_THREAD = "rows (thread)"       # fused row reductions, a work-item per row
    ROWS_GROUP = "rows (group)"         # ... a work-group per row

    __str__ = str.__str__
    __format__ = str.__format__


@dataclass(frozen=True)
class Choice:
    form: Form | None       # None: no kernel
    params: dict = field(default_factory=dict)
    rule: str = ""


@dataclass(frozen=True)
class Rule:
    name: str
    applies: type                           # the shape class it reads
    when: Callable[[object, Device], bool]
    form: Form | None = None
    params: Callable[[object, Device], dict] = lambda c, d: {}
    then: Callable[[object], object] | None = None     # decide for this class instead


def choose(cls, device: Device) -> Choice:
    """The first rule of ``RULES`` that matches ``cls`` on ``device``."""
    for rule in RULES:
        if isinstance(cls, rule.applies) and rule.when(cls, device):
            params = rule.params(cls, device)
            if rule.then is not None:
                inner = choose(rule.then(cls), device)
                return replace(inner, params={**inner.params, **params},
                               rule=f"{rule.name} > {inner.rule}")
            return Choice(rule.form, params, rule.name)
    raise LookupError(f"no policy rule for {cls!r}")


# -- parameters -----------------------------------------------------------------

def _wg(n):
    return min(WG, n)


def _requested_flat(c, d):
    return dict(layout="flat", wg=c.requested[2] or _wg(c.size))


def _requested_ilp(c, d):
    return dict(layout="ilp", ilp=c.requested[1], wg=c.requested[2] or _wg(c.size))


def _is_transposed(c, d):
    return len(c.shape) == 2 and min(c.shape) >= TRANSPOSE_TILE \
        and ceil_div(c.shape[0], TRANSPOSE_TILE) <= MAX_GRID_YZ and bool(c.transposed_reads)


def _two_stage(c, d):
    """Chunking of a two-stage reduction (GPU): G work-groups, work-group g
    reducing the contiguous chunk [g*K*WG, (g+1)*K*WG), each of its K steps
    one coalesced WG-wide read."""
    K = max(TWO_STAGE_STEPS, ceil_div(c.R, WG * TWO_STAGE_GROUPS))
    return dict(K=K, G=ceil_div(c.R, WG * K), wg=WG)


def _lanes(c, along, V, tasks, unroll):
    """``tasks`` of V lanes in one work-group, or in CPU_GROUPS with ranges
    cut in C chunks of K (a multiple of V along the reduced axis)."""
    R = c.R
    params = dict(along=along, V=V, unroll=unroll, wg=_wg(c.M))
    steps = R // V if along == "reduced" else R         # of a lane, unchunked
    if c.M * R < CPU_ONE_GROUP:
        return dict(params, G=1, P=tasks, C=1, K=R)
    C = max(1, min(ceil_div(CPU_GROUPS, tasks), steps), ceil_div(steps, CPU_CHUNK_STEPS))
    K = ceil_div(R, C)
    if along == "reduced":
        K = ceil_div(K, V) * V
    P = ceil_div(tasks, CPU_GROUPS)
    return dict(params, G=ceil_div(tasks, P), P=P, C=ceil_div(R, K), K=K)


def _lanes_reduced(c, d):
    """A task per output, CPU_LANES register lanes."""
    return _lanes(c, "reduced", CPU_LANES, c.M, True)


def _lanes_kept(c, d):
    """A task per block of outputs along the kept contiguous axis: the whole
    run, or equal blocks of at most CPU_KEPT_LANES."""
    blocks = ceil_div(c.run, CPU_KEPT_LANES)
    return _lanes(c, "kept", ceil_div(c.run, blocks), c.M // c.run * blocks, False)


def _split_columns(c, d):
    """C chunks of the reduced range per output, K rows each; on a GPU,
    fewer outputs than a work-group: ``rows`` rows side by side per step."""
    if d.cpu:
        C = max(2, ceil_div(c.R, CPU_COLUMN_CHUNK))
        return dict(C=C, K=ceil_div(c.R, C), wg=_wg(c.M))
    rows = max(1, WG // c.M)
    block = c.run if rows == 1 and c.broadcast and 1 < c.run <= KEPT_BLOCK else 1
    # enough chunks to fill the device
    fill = BLOCKED_FILL if block > 1 else FILL_THREADS * 2
    C = max(2, min(ceil_div(c.R, GPU_COLUMN_CHUNK * rows), fill * block // (c.M * rows)))
    return dict(C=C, K=ceil_div(c.R, C * rows), wg=_wg(c.M // block), rows=rows, block=block)


def _group_size(c, d):
    """A work-group per output, each work-item reducing GROUP_ITEMS values
    or more before the tree (a short row's tree would cost more than its
    loads), at least a warp."""
    items = PAIR_GROUP_ITEMS if c.op in ("argmax", "argmin") else GROUP_ITEMS
    return dict(size=min(WG, pow2_floor(c.R), max(WARP, pow2_floor(max(1, c.R // items)))))


def _row_group(c, d):
    w = min(ROW_GROUP, pow2_floor(c.R))
    return dict(w=w, unroll=ceil_div(c.R, w) <= ROW_UNROLL)


def _padded(c, block_i, block_j, depth):
    """The loop sizes of a tiled matmul: M, N, K rounded up to the tiles."""
    return (ceil_div(c.M, block_i) * block_i, ceil_div(c.N, block_j) * block_j,
            ceil_div(c.K, depth) * depth)


def _tiles(c, block, block_j=None):
    return c.batch * ceil_div(c.M, block) * ceil_div(c.N, block_j or block)


def _big_tiles(c, d):
    """Enough 128 x 128 tiles to fill the device, and a K deep enough to
    amortize their stores (4-byte types: 8-byte ones keep smaller tiles,
    for registers)."""
    return c.itemsize <= 4 and min(c.M, c.N) >= REG_TILES[0] \
        and _tiles(c, REG_TILES[0]) >= BIG_TILES and c.K >= DEEP_K


def _tile_of(c):
    """The register tile (rows, columns) of a contraction without split-K,
    or None (16 x 16 tiles): the rule below its split-K rule would pick."""
    if _big_tiles(c, None):
        return REG_TILES[0], REG_TILES[0]
    if c.itemsize <= 4 and min(c.M, c.N) >= REG_TILES[0]:
        return REG_TILES
    if min(c.M, c.N) >= REG_TILES[-1]:
        return REG_TILES[-1], REG_TILES[-1]
    return None


def _register_tiles(block, block_j=None):
    block_j = block_j or block

    def params(c, d):
        vector = MATMUL_VECTOR if c.itemsize <= 4 else MATMUL_VECTOR_8
        return dict(schedule="registers", block=block, block_j=block_j, threads=TILE,
                    depth=TILE, vector=vector, pad=_padded(c, block, block_j, TILE))
    return params


def _groups(c):
    tile = _tile_of(c)
    return _tiles(c, *tile) if tile else _tiles(c, TILE)


def _split_k(c, d):
    """Too few work-groups to fill the device and a long K: K is cut into
    chunks that run side by side, and a second kernel adds the partials."""
    return c.batch == 1 and _groups(c) * 2 <= FILL_GROUPS and c.K >= 2 * SPLIT_K_CHUNK


def _split_k_params(c, d):
    tile = _tile_of(c)
    params = (_register_tiles(*tile) if tile else _small_tiles)(c, d)
    split = max(2, min(ceil_div(FILL_GROUPS, _groups(c)), c.K // SPLIT_K_CHUNK))
    chunk = ceil_div(ceil_div(c.K, split), TILE) * TILE
    return dict(params, split=ceil_div(c.K, chunk), chunk=chunk)


def _small_tiles(c, d):
    return dict(schedule="tiles", tile=TILE, pad=_padded(c, TILE, TILE, TILE))


def _fp64_mma(c, d):
    return d.fp64_mma and c.kind == "f" and c.itemsize == 8 and not c.scheduled \
        and min(c.M, c.N) >= MMA_MIN


def _mma_tiles(c, d):
    """The DMMA form's tiles: the large ones when they fill the device."""
    big = _tiles(c, MMA_BIG[0], MMA_BIG[1]) >= BIG_TILES and min(c.M, c.N) >= MMA_BIG[0]
    bm, bn, wm, wn = MMA_BIG if big else MMA_SMALL
    return dict(block_m=bm, block_n=bn, warp_m=wm, warp_n=wn, depth=MMA_DEPTH,
                pad=_padded(c, bm, bn, MMA_DEPTH))


def _cpu_blocks(c, d):
    """The register block of a CPU matmul: vectors of CPU_VECTOR_BYTES, at
    most 8 lanes (integers' lanes are a loop, not a vector: their wrapping
    helpers are scalar functions)."""
    return dict(rows=CPU_MATMUL_ROWS, vectors=CPU_MATMUL_VECTORS,
                lanes=min(8, CPU_VECTOR_BYTES // c.itemsize))


def _as_reduction(c):
    return c.reduction


# -- the table ------------------------------------------------------------------
# First match wins.  E: elementwise, R: reduction, C: contraction, W: rows.

E, R, C, W = Elementwise, Reduction, Contraction, Rows
RULES = (
    # elementwise: a schedule with build steps picks the layout
    Rule("user: ElementsPerItem", E, lambda c, d: c.requested is not None
         and c.requested[1] is not None, Form.ELEMENTWISE, _requested_ilp),
    Rule("user: Layout('axes')", E, lambda c, d: c.requested is not None
         and c.requested[0] == "axes", Form.ELEMENTWISE, lambda c, d: dict(layout="axes")),
    Rule("user: flat", E, lambda c, d: c.requested is not None, Form.ELEMENTWISE,
         _requested_flat),
    # CPU: contiguous work-items over a flat index
    Rule("cpu: flat", E, lambda c, d: d.cpu, Form.ELEMENTWISE,
         lambda c, d: dict(layout="flat", wg=_wg(c.size))),
    # GPU: a 2-D output reading a 2-D buffer transposed: 32 x 32 tiles through local
    # memory, so reads and stores are both coalesced
    Rule("gpu: transposed tile", E, _is_transposed, Form.ELEMENTWISE,
         lambda c, d: dict(layout="transposed", tile=TRANSPOSE_TILE, rows=TRANSPOSE_ROWS,
                           swapped=c.transposed_reads)),
    Rule("gpu: elements per item", E, lambda c, d: ELEMENTWISE_ILP > 1
         and c.size >= _wg(c.size) * ELEMENTWISE_ILP * ILP_MIN_GROUPS, Form.ELEMENTWISE,
         lambda c, d: dict(layout="ilp", ilp=ELEMENTWISE_ILP, wg=_wg(c.size))),
    Rule("gpu: flat", E, lambda c, d: True, Form.ELEMENTWISE,
         lambda c, d: dict(layout="flat", wg=_wg(c.size))),

    # contractions: a 2-D matrix product with sizes multiples of TILE is tiled; every
    # other contraction is a reduction (the reduction rows below)
    Rule("no outputs: no kernel", C, lambda c, d: c.reduction.M == 0, None),
    # CPU: matrix products of any size, batch and layout pack both operands, then run
    # vector register blocks; tiny ones and other contractions are reductions
    Rule("cpu: packed register tiles", C, lambda c, d: d.cpu and c.matmul
         and c.batch * c.M * c.N * c.K >= CPU_MATMUL_WORK, Form.PACKED_MATMUL, _cpu_blocks),
    Rule("cpu: contraction as a reduction", C, lambda c, d: d.cpu, then=_as_reduction),
    Rule("not a matrix product: a reduction", C, lambda c, d: not c.matmul,
         then=_as_reduction),
    # a work-item per output: past the grid (rows of 16-row tiles, or the batch, beyond
    # MAX_GRID_YZ work-groups), or a batch of matrices smaller than one tile (4 x 4
    # matrices in 16 x 16 tiles idle 15/16 of the work-items)
    Rule("matmul: past the grid, or tiny matrices in a batch: a reduction", C,
         lambda c, d: c.batch > MAX_GRID_YZ or ceil_div(c.M, TILE) > MAX_GRID_YZ
         or (c.batch > 1 and max(c.M, c.N) < TILE), then=_as_reduction),
    # any size: loops padded to the tiles, guarded reads, a predicated store
    Rule("matmul: split-K (few tiles, long K)", C, _split_k, Form.TILED_MATMUL,
         _split_k_params),
    # CUDA float64: DMMA warp tiles (forms/mma_matmul.py), unless the user schedules it
    Rule("matmul: float64 tensor cores", C, _fp64_mma, Form.MMA_MATMUL, _mma_tiles),
    Rule("matmul: 128 x 128 register tiles", C, _big_tiles, Form.TILED_MATMUL,
         _register_tiles(REG_TILES[0])),
    Rule("matmul: 128 x 64 register tiles", C, lambda c, d: c.itemsize <= 4
         and min(c.M, c.N) >= REG_TILES[0], Form.TILED_MATMUL, _register_tiles(*REG_TILES)),
    Rule("matmul: 64 x 64 register tiles", C, lambda c, d: min(c.M, c.N) >= REG_TILES[-1],
         Form.TILED_MATMUL, _register_tiles(REG_TILES[-1])),
    Rule("matmul: 16 x 16 tiles", C, lambda c, d: True, Form.TILED_MATMUL, _small_tiles),

    # reductions (M outputs of R values each; argmax/argmin too, as (value, index) pairs)
    Rule("no outputs: no kernel", R, lambda c, d: c.M == 0, None),
    Rule("empty reduction: the neutral element", R, lambda c, d: c.R == 0, Form.NEUTRAL,
         lambda c, d: dict(wg=_wg(c.M))),
    # CPU: lanes along the contiguous axis, reduced (registers) or kept (an array); too
    # few outputs along it (``run``): split columns; short rows: a work-item per output
    Rule("cpu: lanes along the reduced axis", R, lambda c, d: d.cpu and c.inner
         and c.R >= CPU_LANES, Form.LANES, _lanes_reduced),
    Rule("cpu: lanes along the kept axis", R, lambda c, d: d.cpu and not c.inner
         and c.run >= CPU_LANES, Form.LANES, _lanes_kept),
    Rule("cpu: split columns", R, lambda c, d: d.cpu and not c.inner
         and c.R >= LONG_COLUMNS, Form.SPLIT_COLUMNS, _split_columns),
    Rule("cpu: thread", R, lambda c, d: d.cpu, Form.THREAD, lambda c, d: dict(wg=_wg(c.M))),
    # GPU
    Rule("gpu: two stages", R, lambda c, d: c.inner and c.M < MANY_OUTPUTS
         and c.R >= LONG_REDUCTION,
         Form.TWO_STAGE, _two_stage),
    Rule("gpu: split columns", R, lambda c, d: not c.inner and c.M < FILL_THREADS
         and c.R >= LONG_COLUMNS, Form.SPLIT_COLUMNS, _split_columns),
    Rule("gpu: heavy values, a work-item per output", R, lambda c, d: c.terms >= HEAVY_TERMS
         and c.M >= FILL_THREADS, Form.THREAD, lambda c, d: dict(wg=_wg(c.M))),
    Rule("gpu: group", R, lambda c, d: ((c.inner and c.R >= GROUP_REDUCTION)
                                        or c.M < FEW_OUTPUTS) and c.R > 1,
         Form.GROUP, _group_size),
    Rule("gpu: thread", R, lambda c, d: True, Form.THREAD, lambda c, d: dict(wg=_wg(c.M))),

    # fused rows (softmax, layer norm)
    Rule("cpu: a work-item per row", W, lambda c, d: d.cpu, Form.ROWS_THREAD,
         lambda c, d: dict(wg=_wg(c.M))),
    Rule("short rows: a work-item per row", W, lambda c, d: c.R < GROUP_ROW, Form.ROWS_THREAD,
         lambda c, d: dict(wg=_wg(c.M))),
    Rule("a work-group per row", W, lambda c, d: True, Form.ROWS_GROUP, _row_group),
)
del E, R, C, W


def stores_through_epilogue(einsum, device) -> bool:
    """Whether a matrix product's elementwise reader can be computed in its
    store (``passes/epilogue.py``): where the product is a tiled matmul."""
    from .classify import product_class
    cls = product_class(einsum)
    if not cls.matmul:
        return False
    choice = choose(cls, device)        # split-K stores partials: no epilogue there
    return choice.form == Form.TILED_MATMUL and "split" not in choice.params


def describe() -> str:
    """The table as text: one line per rule (for docs and ``print``)."""
    return "\n".join(f"{r.applies.__name__:12s} {r.name:50s} -> "
                     f"{r.form.value if r.form else ('as a reduction' if r.then else 'no kernel')}"
                     for r in RULES)


__all__ = ["Choice", "Form", "Rule", "RULES", "choose", "describe", "stores_through_epilogue"]
