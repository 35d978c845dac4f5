"""The default policy, as one table: which kernel form, with which
parameters, every kernel group gets, and why.

``choose(shape_class, device, thresholds)`` walks ``RULES`` in order and
returns the first row that applies to the class and whose condition holds
(each condition and parameter function reads the class ``c``, the device
facts ``d`` and the thresholds ``t``), as a
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

The numbers are a ``Thresholds`` value (``thresholds.py``: the measured
ones, or those of ``using_thresholds``), given to ``choose``, never read
from module globals.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Callable

from polyarray.ir.nodes import FFT_OPS, SCAN_OPS, SORT_OPS
from .classify import ArgRows, Attention, Call, Contraction, Elementwise, Raw, Reduction, Rows, Steps
from .device import Device
from ..lowering.index import ceil_div, pow2_floor
from ..thresholds import Thresholds, current_thresholds

from ..emit.scan_kernels import PREFIX as SCAN_KERNEL_PREFIX
from ..emit.sort_kernels import PREFIX as SORT_KERNEL_PREFIX
from ..emit.attention_kernels import PREFIX as ATTENTION_KERNEL_PREFIX, config_for
from ..emit.arg_kernels import (ARG_DTYPES, MAX_LENGTH as ARG_MAX_LENGTH,
                                MAX_THREADS as ARG_MAX_THREADS, PREFIX as ARG_KERNEL_PREFIX)


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
    RAW = "raw"                         # the user's hand-written kernel (pa.raw_kernel)
    RECURRENCE = "recurrence"           # rows in order, a work-item per element of a row
    HOST_LAPACK = "host lapack"         # a library call run by NumPy's LAPACK on the host
    CUSOLVER = "cusolver"               # ... by cuSOLVER on the device (nvmath-python)
    HOST_FFT = "host fft"               # a transform run by NumPy's pocketfft on the host
    CUFFT = "cufft"                     # ... by cuFFT on the device (nvmath-python)
    CUBLAS = "cublas"                   # a matrix product by cuBLAS on the device (nvmath-python)
    VKFFT = "vkfft"                     # ... by VkFFT on an OpenCL GPU (pyvkfft)
    SCAN = "single-pass scan"           # cumsum/cumprod: one kernel, decoupled look-back
    COLUMN_SCAN = "column scan"         # ... along another axis: tiles' totals, offsets, rows
    BLOCKED_SCAN = "blocked scan"       # ... as reductions over blocks (ops/scans.py)
    RADIX_SORT = "radix sort"           # sort/argsort of a row: 8-bit passes
    MERGE_SORT = "merge sort"           # ... as merge levels of gathers (ops/ordering.py)
    FLASH_ATTENTION = "flash attention"     # softmax(Q K^T) V, the scores kept on chip
    ATTENTION_COMBINE = "attention ranges combined"     # ... its key ranges added
    ATTENTION_GENERATED = "attention as generated"      # ... the products and rows as any
    ROW_ARGMAX = "row argmax"           # argmax/argmin of rows: work-items each, warp shuffles
    ARG_REDUCTION = "argmax as a reduction"     # ... as the generated reductions

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
    when: Callable[[object, Device, Thresholds], bool]
    form: Form | None = None
    params: Callable[[object, Device, Thresholds], dict] = lambda c, d, t: {}
    then: Callable[[object], object] | None = None     # decide for this class instead


def choose(cls, device: Device, thresholds: Thresholds | None = None) -> Choice:
    """The first rule of ``RULES`` that matches ``cls`` on ``device`` under
    ``thresholds`` (default: ``current_thresholds()``)."""
    t = current_thresholds() if thresholds is None else thresholds
    for rule in RULES:
        if isinstance(cls, rule.applies) and rule.when(cls, device, t):
            params = rule.params(cls, device, t)
            if rule.then is not None:
                inner = choose(rule.then(cls), device, t)
                return replace(inner, params={**inner.params, **params},
                               rule=f"{rule.name} > {inner.rule}")
            return Choice(rule.form, params, rule.name)
    raise LookupError(f"no policy rule for {cls!r}")


# -- parameters -----------------------------------------------------------------

def _wg(t, n):
    return min(t.WG, n)


def _requested_flat(c, d, t):
    return dict(layout="flat", wg=c.requested[2] or _wg(t, c.size))


def _requested_ilp(c, d, t):
    return dict(layout="ilp", ilp=c.requested[1], wg=c.requested[2] or _wg(t, c.size),
                contiguous=c.requested[3])


def _runs(c, d, t):
    """Runs of ``c.shared_run`` neighbours per work-item, in work-groups of
    a size (at least a warp) that divides the runs where one does: no
    clamped index, which would hide the runs from the C compiler."""
    runs = ceil_div(c.size, c.shared_run)
    wg = _wg(t, runs)
    if c.size % c.shared_run == 0 and runs % wg:
        wg = next((d for d in range(wg, t.WARP - 1, -1) if runs % d == 0), wg)
    return dict(layout="ilp", ilp=c.shared_run, wg=wg, contiguous=True)


def _is_transposed(c, d, t):
    return len(c.shape) == 2 and min(c.shape) >= t.TRANSPOSE_TILE \
        and ceil_div(c.shape[0], t.TRANSPOSE_TILE) <= t.MAX_GRID_YZ and bool(c.transposed_reads)


def _two_stage(c, d, t):
    """Chunking of a two-stage reduction (GPU): G work-groups, work-group g
    reducing the contiguous chunk [g*K*WG, (g+1)*K*WG), each of its K steps
    one coalesced WG-wide read; where neighbouring values share work (random
    blocks), each step a run of ``run`` neighbours per work-item."""
    K = max(t.TWO_STAGE_STEPS, ceil_div(c.R, t.WG * t.TWO_STAGE_GROUPS))
    run = c.shared_run
    if run > 1:         # each step a run of neighbours sharing work (random blocks)
        K = max(1, ceil_div(K, run))
        return dict(K=K, G=ceil_div(c.R, t.WG * K * run), wg=t.WG, run=run)
    return dict(K=K, G=ceil_div(c.R, t.WG * K), wg=t.WG)


def _lanes(c, t, along, V, tasks, unroll):
    """``tasks`` of V lanes in one work-group, or in CPU_GROUPS with ranges
    cut in C chunks of K (a multiple of V along the reduced axis)."""
    R = c.R
    params = dict(along=along, V=V, unroll=unroll, wg=_wg(t, c.M))
    steps = R // V if along == "reduced" else R         # of a lane, unchunked
    if c.M * R < t.CPU_ONE_GROUP:
        return dict(params, G=1, P=tasks, C=1, K=R)
    C = max(1, min(ceil_div(t.CPU_GROUPS, tasks), steps), ceil_div(steps, t.CPU_CHUNK_STEPS))
    K = ceil_div(R, C)
    if along == "reduced":
        K = ceil_div(K, V) * V
    P = ceil_div(tasks, t.CPU_GROUPS)
    return dict(params, G=ceil_div(tasks, P), P=P, C=ceil_div(R, K), K=K)


def _lanes_reduced(c, d, t):
    """A task per output, CPU_LANES register lanes."""
    return _lanes(c, t, "reduced", t.CPU_LANES, c.M, True)


def _lanes_kept(c, d, t):
    """A task per block of outputs along the kept contiguous axis: the whole
    run, or equal blocks of at most CPU_KEPT_LANES."""
    blocks = ceil_div(c.run, t.CPU_KEPT_LANES)
    return _lanes(c, t, "kept", ceil_div(c.run, blocks), c.M // c.run * blocks, False)


def _split_columns(c, d, t):
    """C chunks of the reduced range per output, K rows each; on a GPU,
    fewer outputs than a work-group: ``rows`` rows side by side per step."""
    if d.cpu:
        C = max(2, ceil_div(c.R, t.CPU_COLUMN_CHUNK))
        return dict(C=C, K=ceil_div(c.R, C), wg=_wg(t, c.M))
    rows = max(1, t.WG // c.M)
    block = c.run if rows == 1 and c.broadcast and 1 < c.run <= t.KEPT_BLOCK else 1
    # enough chunks to fill the device
    fill = t.BLOCKED_FILL if block > 1 else t.FILL_THREADS * 2
    C = max(2, min(ceil_div(c.R, t.GPU_COLUMN_CHUNK * rows), fill * block // (c.M * rows)))
    return dict(C=C, K=ceil_div(c.R, C * rows), wg=_wg(t, c.M // block), rows=rows, block=block)


def _group_size(c, d, t):
    """A work-group per output, each work-item reducing GROUP_ITEMS values
    or more before the tree (a short row's tree would cost more than its
    loads), at least a warp."""
    items = t.PAIR_GROUP_ITEMS if c.op in ("argmax", "argmin") else t.GROUP_ITEMS
    return dict(size=min(t.WG, pow2_floor(c.R), max(t.WARP, pow2_floor(max(1, c.R // items)))))


def _row_group(c, d, t):
    w = min(t.ROW_GROUP, pow2_floor(c.R))
    return dict(w=w, unroll=ceil_div(c.R, w) <= t.ROW_UNROLL)


def _padded(c, block_i, block_j, depth):
    """The loop sizes of a tiled matmul: M, N, K rounded up to the tiles."""
    return (ceil_div(c.M, block_i) * block_i, ceil_div(c.N, block_j) * block_j,
            ceil_div(c.K, depth) * depth)


def _tiles(c, block, block_j=None):
    return c.batch * ceil_div(c.M, block) * ceil_div(c.N, block_j or block)


def _big_tiles(c, d, t):
    """Enough 128 x 128 tiles to fill the device, and a K deep enough to
    amortize their stores (4-byte types: 8-byte ones keep smaller tiles,
    for registers)."""
    return c.itemsize <= 4 and min(c.M, c.N) >= t.REG_TILES[0] \
        and _tiles(c, t.REG_TILES[0]) >= t.BIG_TILES and c.K >= t.DEEP_K


def _tile_of(c, t):
    """The register tile (rows, columns) of a contraction without split-K,
    or None (16 x 16 tiles): the rule below its split-K rule would pick."""
    if _big_tiles(c, None, t):
        return t.REG_TILES[0], t.REG_TILES[0]
    if c.itemsize <= 4 and min(c.M, c.N) >= t.REG_TILES[0]:
        return t.REG_TILES
    if min(c.M, c.N) >= t.REG_TILES[-1]:
        return t.REG_TILES[-1], t.REG_TILES[-1]
    return None


def _register_tiles(c, t, block, block_j=None):
    block_j = block_j or block
    vector = t.MATMUL_VECTOR if c.itemsize <= 4 else t.MATMUL_VECTOR_8
    return dict(schedule="registers", block=block, block_j=block_j, threads=t.TILE,
                depth=t.TILE, vector=vector, pad=_padded(c, block, block_j, t.TILE))


def _groups(c, t):
    tile = _tile_of(c, t)
    return _tiles(c, *tile) if tile else _tiles(c, t.TILE)


def _split_k(c, d, t):
    """Too few work-groups to fill the device and a long K: K is cut into
    chunks that run side by side, and a second kernel adds the partials."""
    return c.batch == 1 and _groups(c, t) * 2 <= t.FILL_GROUPS and c.K >= 2 * t.SPLIT_K_CHUNK


def _split_k_params(c, d, t):
    tile = _tile_of(c, t)
    params = _register_tiles(c, t, *tile) if tile else _small_tiles(c, d, t)
    split = max(2, min(ceil_div(t.FILL_GROUPS, _groups(c, t)), c.K // t.SPLIT_K_CHUNK))
    chunk = ceil_div(ceil_div(c.K, split), t.TILE) * t.TILE
    return dict(params, split=ceil_div(c.K, chunk), chunk=chunk)


def blas_sized(c, t) -> bool:
    """Whether a matrix product (of any dtype) is large enough for the BLAS
    (``BLAS_MIN_WORK`` multiply-adds) and within its 32-bit sizes."""
    return c.batch * c.M * c.N * c.K >= t.BLAS_MIN_WORK and max(c.M, c.N, c.K, c.batch) < 2 ** 31


def _vendor_matmul(c, d, t):
    """A float32/float64 product the device's BLAS computes (the generated
    tiles reach 0.68-0.87 of cuBLAS; a library call is a host step, so
    small products keep the tiles, unless the user asked for tensor cores:
    a float32 product of precision "tf32" or "bf16"); not where the user
    schedules it, and within BLAS's 32-bit sizes."""
    tensor_cores = c.precision != "highest" and c.itemsize == 4
    return d.vendor_blas == "cublas" and c.kind == "f" and c.itemsize in (4, 8) \
        and not c.scheduled and (blas_sized(c, t) or tensor_cores
                                 and max(c.M, c.N, c.K, c.batch) < 2 ** 31)


def _small_tiles(c, d, t):
    return dict(schedule="tiles", tile=t.TILE, pad=_padded(c, t.TILE, t.TILE, t.TILE))


def _fp64_mma(c, d, t):
    return d.fp64_mma and c.kind == "f" and c.itemsize == 8 and not c.scheduled \
        and min(c.M, c.N) >= t.MMA_MIN


def _mma_tiles(c, d, t):
    """The DMMA form's tiles: the large ones when they fill the device."""
    big = _tiles(c, t.MMA_BIG[0], t.MMA_BIG[1]) >= t.BIG_TILES and min(c.M, c.N) >= t.MMA_BIG[0]
    bm, bn, wm, wn = t.MMA_BIG if big else t.MMA_SMALL
    return dict(block_m=bm, block_n=bn, warp_m=wm, warp_n=wn, depth=t.MMA_DEPTH,
                pad=_padded(c, bm, bn, t.MMA_DEPTH))


def _cpu_blocks(c, d, t):
    """The register block of a CPU matmul: vectors of CPU_VECTOR_BYTES, at
    most 8 lanes (integers' lanes are a loop, not a vector: their wrapping
    helpers are scalar functions)."""
    return dict(rows=t.CPU_MATMUL_ROWS, vectors=t.CPU_MATMUL_VECTORS,
                lanes=min(8, t.CPU_VECTOR_BYTES // c.itemsize))


def _stacked_rows(c, t):
    """Rows per work-group of a stacked recurrence: their tile must fit the
    local memory a kernel may declare statically."""
    return pow2_floor(min(t.STACKED_ROWS, t.STACKED_LOCAL_BYTES // c.stacked))


def _attention_config(c):
    """(TY, TM, TN) of the attention kernel's tiles that fit its shared
    memory (``emit/attention_kernels.py``), or None."""
    itemsize = 8 if c.dtype == "<f8" else 4
    return config_for(itemsize, c.d, c.dv)


def _flash(c, d, t):
    return d.flash_attention and c.dtype in ("<f4", "<f8") and c.m >= t.ATTENTION_MIN_KEYS \
        and c.n >= 1 and 1 <= c.batch <= t.MAX_GRID_YZ and _attention_config(c) is not None


def _flash_params(c, d, t):
    """The tiles, and the key ranges side by side: enough for FILL_GROUPS
    work-groups, none shorter than ATTENTION_MIN_RANGE keys."""
    config = _attention_config(c)
    tiles = c.batch * ceil_div(c.n, config[0] * config[1])
    splits = max(1, min(t.FILL_GROUPS // tiles, c.m // t.ATTENTION_MIN_RANGE))
    return dict(config=config, splits=splits)


def _arg_rows_threads(c, d, t):
    """Work-items per row: a power of two giving each about ARG_ROWS_VALUES
    values, doubled (to the kernel's most) while the rows' work-items would
    not fill the device and each keeps at least ARG_ROWS_VALUES / 2."""
    threads = 1
    while threads < ARG_MAX_THREADS and c.n > t.ARG_ROWS_VALUES * threads:
        threads *= 2
    while threads < ARG_MAX_THREADS and c.rows * threads < t.ARG_ROWS_FILL \
            and c.n >= t.ARG_ROWS_VALUES * threads:
        threads *= 2
    return dict(threads=threads)


def _as_reduction(c):
    return c.reduction


# -- the table ------------------------------------------------------------------
# First match wins.  E: elementwise, R: reduction, C: contraction, W: rows.

# the library calls cuSOLVER runs (targets/cuda/solvers.py has each one's step)
CUSOLVER_OPS = frozenset({"cholesky", "solve", "inv", "det", "slogdet", "eigh", "eigvalsh"})
# the transforms (pa.fft's library calls; targets/cuda/fourier.py runs them in
# cuFFT) are the IR's FFT_OPS

E, R, C, W = Elementwise, Reduction, Contraction, Rows
RULES = (
    # elementwise: a schedule with build steps picks the layout
    Rule("user: ElementsPerItem", E, lambda c, d, t: c.requested is not None
         and c.requested[1] is not None, Form.ELEMENTWISE, _requested_ilp),
    Rule("user: Layout('axes')", E, lambda c, d, t: c.requested is not None
         and c.requested[0] == "axes", Form.ELEMENTWISE, lambda c, d, t: dict(layout="axes")),
    Rule("user: flat", E, lambda c, d, t: c.requested is not None, Form.ELEMENTWISE,
         _requested_flat),
    # CPU: contiguous work-items over a flat index
    Rule("cpu: flat", E, lambda c, d, t: d.cpu, Form.ELEMENTWISE,
         lambda c, d, t: dict(layout="flat", wg=_wg(t, c.size))),
    # GPU: columns of a recurrence (each builds on the one before): a work-item per
    # row computes them in order (columns unrolled), stores through local memory
    Rule("gpu: stacked recurrence, a row per work-item", E,
         lambda c, d, t: c.stacked and t.STACKED_MIN_COLUMNS <= c.shape[-1] <= t.STACKED_MAX_COLUMNS
         and _stacked_rows(c, t) >= t.STACKED_MIN_ROWS, Form.ELEMENTWISE,
         lambda c, d, t: dict(layout="axes", rows=_stacked_rows(c, t))),
    # GPU: a 2-D output reading a 2-D buffer transposed: 32 x 32 tiles through local
    # memory, so reads and stores are both coalesced
    Rule("gpu: transposed tile", E, _is_transposed, Form.ELEMENTWISE,
         lambda c, d, t: dict(layout="transposed", tile=t.TRANSPOSE_TILE, rows=t.TRANSPOSE_ROWS,
                           swapped=c.transposed_reads)),
    # GPU: neighbours that share work (the elements of a counter-based random
    # block): a run of them per work-item, which computes the shared part once
    Rule("gpu: runs of neighbours (shared random blocks)", E,
         lambda c, d, t: c.shared_run > 1 and c.size >= c.shared_run * t.WG,
         Form.ELEMENTWISE, _runs),
    Rule("gpu: elements per item", E, lambda c, d, t: t.ELEMENTWISE_ILP > 1
         and c.size >= _wg(t, c.size) * t.ELEMENTWISE_ILP * t.ILP_MIN_GROUPS
         and c.buffers <= t.ILP_MAX_BUFFERS, Form.ELEMENTWISE,
         lambda c, d, t: dict(layout="ilp", ilp=t.ELEMENTWISE_ILP, wg=_wg(t, c.size))),
    Rule("gpu: flat", E, lambda c, d, t: True, Form.ELEMENTWISE,
         lambda c, d, t: dict(layout="flat", wg=_wg(t, c.size))),

    # contractions: a 2-D matrix product with sizes multiples of TILE is tiled; every
    # other contraction is a reduction (the reduction rows below)
    Rule("no outputs: no kernel", C, lambda c, d, t: c.reduction.M == 0, None),
    # (m, 0) @ (0, n): nothing to sum, so zeros (the tiled forms' schedules refused the
    # empty loop domain: a crash on the GPU kinds)
    Rule("empty contraction: the neutral element", C, lambda c, d, t: c.reduction.R == 0,
         then=_as_reduction),
    # CPU: matrix products of any size, batch and layout pack both operands, then run
    # vector register blocks; tiny ones and other contractions are reductions
    Rule("cpu: packed register tiles", C, lambda c, d, t: d.cpu and c.matmul
         and c.batch * c.M * c.N * c.K >= t.CPU_MATMUL_WORK, Form.PACKED_MATMUL, _cpu_blocks),
    Rule("cpu: contraction as a reduction", C, lambda c, d, t: d.cpu, then=_as_reduction),
    Rule("not a matrix product: a reduction", C, lambda c, d, t: not c.matmul,
         then=_as_reduction),
    # a work-item per output: past the grid (rows of 16-row tiles, or the batch, beyond
    # MAX_GRID_YZ work-groups), or a batch of matrices smaller than one tile (4 x 4
    # matrices in 16 x 16 tiles idle 15/16 of the work-items)
    Rule("matmul: past the grid, or tiny matrices in a batch: a reduction", C,
         lambda c, d, t: c.batch > t.MAX_GRID_YZ or ceil_div(c.M, t.TILE) > t.MAX_GRID_YZ
         or (c.batch > 1 and max(c.M, c.N) < t.TILE), then=_as_reduction),
    # CUDA with nvmath-python: float32/float64 products that nothing is fused into (an
    # elementwise reader is then its own kernel), batched or not, in cuBLAS (TF32 off)
    Rule("matmul: cuBLAS", C, _vendor_matmul, Form.CUBLAS),
    # any size: loops padded to the tiles, guarded reads, a predicated store
    Rule("matmul: split-K (few tiles, long K)", C, _split_k, Form.TILED_MATMUL,
         _split_k_params),
    # CUDA float64: DMMA warp tiles (forms/mma_matmul.py), unless the user schedules it
    Rule("matmul: float64 tensor cores", C, _fp64_mma, Form.MMA_MATMUL, _mma_tiles),
    Rule("matmul: 128 x 128 register tiles", C, _big_tiles, Form.TILED_MATMUL,
         lambda c, d, t: _register_tiles(c, t, t.REG_TILES[0])),
    Rule("matmul: 128 x 64 register tiles", C, lambda c, d, t: c.itemsize <= 4
         and min(c.M, c.N) >= t.REG_TILES[0], Form.TILED_MATMUL,
         lambda c, d, t: _register_tiles(c, t, *t.REG_TILES)),
    Rule("matmul: 64 x 64 register tiles", C, lambda c, d, t: min(c.M, c.N) >= t.REG_TILES[-1],
         Form.TILED_MATMUL, lambda c, d, t: _register_tiles(c, t, t.REG_TILES[-1])),
    Rule("matmul: 16 x 16 tiles", C, lambda c, d, t: True, Form.TILED_MATMUL, _small_tiles),

    # reductions (M outputs of R values each; argmax/argmin too, as (value, index) pairs)
    Rule("no outputs: no kernel", R, lambda c, d, t: c.M == 0, None),
    Rule("empty reduction: the neutral element", R, lambda c, d, t: c.R == 0, Form.NEUTRAL,
         lambda c, d, t: dict(wg=_wg(t, c.M))),
    Rule("complex product: in NumPy's order, a work-item per output", R,
         lambda c, d, t: c.ordered, Form.THREAD, lambda c, d, t: dict(wg=_wg(t, c.M))),
    # CPU: lanes along the contiguous axis, reduced (registers) or kept (an array); too
    # few outputs along it (``run``): split columns; short rows: a work-item per output
    Rule("cpu: lanes along the reduced axis", R, lambda c, d, t: d.cpu and c.inner
         and c.R >= t.CPU_LANES, Form.LANES, _lanes_reduced),
    Rule("cpu: lanes along the kept axis", R, lambda c, d, t: d.cpu and not c.inner
         and c.run >= t.CPU_LANES, Form.LANES, _lanes_kept),
    Rule("cpu: split columns", R, lambda c, d, t: d.cpu and not c.inner
         and c.R >= t.LONG_COLUMNS, Form.SPLIT_COLUMNS, _split_columns),
    Rule("cpu: thread", R, lambda c, d, t: d.cpu, Form.THREAD, lambda c, d, t: dict(wg=_wg(t, c.M))),
    # GPU
    Rule("gpu: two stages", R, lambda c, d, t: c.inner and c.M < t.MANY_OUTPUTS
         and c.R >= t.LONG_REDUCTION,
         Form.TWO_STAGE, _two_stage),
    Rule("gpu: split columns", R, lambda c, d, t: not c.inner and c.M < t.FILL_THREADS
         and c.R >= t.LONG_COLUMNS, Form.SPLIT_COLUMNS, _split_columns),
    Rule("gpu: heavy values, a work-item per output", R, lambda c, d, t: c.terms >= t.HEAVY_TERMS
         and c.M >= t.FILL_THREADS, Form.THREAD, lambda c, d, t: dict(wg=_wg(t, c.M))),
    Rule("gpu: group", R, lambda c, d, t: ((c.inner and c.R >= t.GROUP_REDUCTION)
                                        or c.M < t.FEW_OUTPUTS) and c.R > 1,
         Form.GROUP, _group_size),
    Rule("gpu: thread", R, lambda c, d, t: True, Form.THREAD, lambda c, d, t: dict(wg=_wg(t, c.M))),

    # fused rows (softmax, layer norm)
    # CPU: each reduction in CPU_LANES accumulators along the row (as the lanes
    # form): faster than one chain of dependent adds, and a float sum rounds like
    # R / CPU_LANES terms, not R.  A user's steps name the plain loops (j0, j1...)
    Rule("cpu: a work-item per row, lanes along it", W, lambda c, d, t: d.cpu
         and c.R >= t.CPU_LANES and not c.scheduled, Form.ROWS_THREAD,
         lambda c, d, t: dict(wg=_wg(t, c.M), lanes=t.CPU_LANES)),
    Rule("cpu: a work-item per row", W, lambda c, d, t: d.cpu, Form.ROWS_THREAD,
         lambda c, d, t: dict(wg=_wg(t, c.M))),
    Rule("short rows: a work-item per row", W, lambda c, d, t: c.R < t.GROUP_ROW, Form.ROWS_THREAD,
         lambda c, d, t: dict(wg=_wg(t, c.M))),
    Rule("a work-group per row", W, lambda c, d, t: True, Form.ROWS_GROUP, _row_group),

    # recurrences (a Python loop whose rows build on the rows before): a work-item per
    # element of a row runs the rows in order; the rows' elements are coalesced
    Rule("recurrence: a work-item per element, rows in order", Steps, lambda c, d, t: True,
         Form.RECURRENCE, lambda c, d, t: dict(wg=_wg(t, c.size))),

    # hand-written kernels: ours (the single-pass scan's two, emit/scan_kernels.py), then
    # pa.raw_kernel's: the user's code, grid and block
    Rule("scan: columns in three kernels", Raw,
         lambda c, d, t: c.name.startswith(SCAN_KERNEL_PREFIX + "columns_"), Form.COLUMN_SCAN),
    Rule("scan: single pass (decoupled look-back)", Raw,
         lambda c, d, t: c.name.startswith(SCAN_KERNEL_PREFIX), Form.SCAN),
    Rule("sort: radix, counts then a onesweep pass a byte", Raw,
         lambda c, d, t: c.name.startswith(SORT_KERNEL_PREFIX), Form.RADIX_SORT),
    Rule("attention: key ranges combined", Raw,
         lambda c, d, t: c.name.startswith(ATTENTION_KERNEL_PREFIX)
         and c.name.endswith("_combine"), Form.ATTENTION_COMBINE),
    Rule("attention: one kernel, scores on chip (online softmax)", Raw,
         lambda c, d, t: c.name.startswith(ATTENTION_KERNEL_PREFIX), Form.FLASH_ATTENTION),
    Rule("argmax: work-items per row, warp shuffles", Raw,
         lambda c, d, t: c.name.startswith(ARG_KERNEL_PREFIX), Form.ROW_ARGMAX),
    Rule("raw: the user's kernel", Raw, lambda c, d, t: True, Form.RAW),

    # scans (cumsum, cumprod in the dtypes of emit/scan_kernels.py) where the target has
    # the kernels (CUDA): along the last axis, one kernel for long rows; along another,
    # three kernels for long enough, wide enough columns; else the blocked scan of
    # reductions, its nodes fused as any (plan/kernel_calls.py rewrites the calls)
    Rule("scan: single pass (decoupled look-back)", Call, lambda c, d, t: d.single_pass_scan
         and c.op in SCAN_OPS and c.axis == len(c.shape) - 1
         and c.shape[-1] >= t.SCAN_SINGLE_PASS, Form.SCAN),
    Rule("scan: columns in three kernels", Call, lambda c, d, t: d.single_pass_scan
         and c.op in SCAN_OPS and c.axis is not None and c.axis < len(c.shape) - 1
         and c.shape[c.axis] >= t.SCAN_COLUMNS and math.prod(c.shape[c.axis + 1:]) >= t.WARP,
         Form.COLUMN_SCAN),
    Rule("scan: blocked reductions", Call, lambda c, d, t: c.op in SCAN_OPS,
         Form.BLOCKED_SCAN),
    # sorts of one row (sort, argsort): the radix sort where the target has it (CUDA:
    # every pass's digits counted in one read, then a kernel per 8-bit pass whose tiles
    # find their places by decoupled look-back) and the row is long (below 2^31 values:
    # uint32 positions); else the merge sort
    Rule("sort: radix, counts then a onesweep pass a byte", Call,
         lambda c, d, t: d.radix_sort and c.op in SORT_OPS
         and t.RADIX_SORT_MIN <= c.shape[-1] < 1 << 31, Form.RADIX_SORT),
    Rule("sort: merge levels", Call, lambda c, d, t: c.op in SORT_OPS, Form.MERGE_SORT),

    # softmax(scale(Q @ K^T)) @ V (plan/attention.py finds it): one kernel that keeps the
    # scores on chip where the target has it (CUDA), float32/float64, heads that fit its
    # tiles; else the products and the softmax's rows as generated kernels, as written
    Rule("attention: one kernel, scores on chip (online softmax)", Attention, _flash,
         Form.FLASH_ATTENTION, _flash_params),
    Rule("attention: the products and rows as generated", Attention, lambda c, d, t: True,
         Form.ATTENTION_GENERATED),

    # argmax/argmin along the last axis of a buffer (plan/kernel_calls.py asks): 1 to 1024
    # work-items per row whose pairs meet by warp shuffles where the target has it (CUDA),
    # at least ARG_ROWS_MIN_ROWS rows of float32/float64/int32/int64; else the generated
    # reductions (a tree of local-memory steps) as for any reduction
    Rule("argmax: work-items per row, warp shuffles", ArgRows,
         lambda c, d, t: d.row_argmax and c.dtype in ARG_DTYPES
         and t.ARG_ROWS_MIN_ROWS <= c.rows < 1 << 31 and 1 <= c.n <= ARG_MAX_LENGTH,
         Form.ROW_ARGMAX, _arg_rows_threads),
    Rule("argmax: as a reduction", ArgRows, lambda c, d, t: True, Form.ARG_REDUCTION),

    # transforms (pa.fft): cuFFT on CUDA, VkFFT on an OpenCL GPU (without
    # nvmath-python or pyvkfft the target says so and runs the host's), else
    # NumPy's pocketfft on the host, the copies logged
    Rule("fft: cuFFT on the device", Call, lambda c, d, t: d.vendor_fft == "cufft"
         and c.op in FFT_OPS, Form.CUFFT),
    Rule("fft: VkFFT on an OpenCL GPU", Call, lambda c, d, t: d.vendor_fft == "vkfft"
         and not d.cpu and c.op in FFT_OPS, Form.VKFFT),
    Rule("fft: pocketfft on the host", Call, lambda c, d, t: c.op in FFT_OPS, Form.HOST_FFT),

    # library calls (pa.linalg's factorizations and solves): cuSOLVER on CUDA where
    # the routine is there (targets/cuda/solvers.py; without nvmath-python the
    # target says so and runs the host's), else NumPy's LAPACK on the host, the
    # inputs copied out and the results back (targets/library.py)
    Rule("linalg: cuSOLVER on the device", Call, lambda c, d, t: d.vendor_solvers
         and c.op in CUSOLVER_OPS and c.dtype in ("<f4", "<f8"), Form.CUSOLVER),
    # float16 products (plan/half.py made them calls where the target has cuBLAS):
    # HGEMM on the tensor cores; NumPy's float16 matmul on the host otherwise
    Rule("matmul: float16 in cuBLAS", Call, lambda c, d, t: d.vendor_blas == "cublas"
         and c.op == "matmul_half", Form.CUBLAS),
    Rule("linalg: LAPACK on the host", Call, lambda c, d, t: True, Form.HOST_LAPACK),
)
del E, R, C, W


def stores_through_epilogue(einsum, device, thresholds=None) -> bool:
    """Whether a matrix product's elementwise reader can be computed in its
    store (``plan/epilogue.py``): where the product is a tiled matmul."""
    from .classify import product_class
    cls = product_class(einsum)
    if not cls.matmul:
        return False
    choice = choose(cls, device, thresholds)       # split-K stores partials: no epilogue there
    return choice.form == Form.TILED_MATMUL and "split" not in choice.params


# reduction forms whose store can be an elementwise reader of the result
# (``plan/epilogue.py``): each output's value is in a register (or, across
# a work-group, in local memory) where it is stored.  Not ``lanes`` (CPU),
# ``neutral`` or the contractions' packed and mma forms.
EPILOGUE_FORMS = frozenset({Form.THREAD, Form.GROUP, Form.TWO_STAGE, Form.SPLIT_COLUMNS})


def reduction_stores_through_epilogue(cls, device, thresholds=None) -> bool:
    """Whether a reduction (or a contraction computed as one) of class
    ``cls`` stores an elementwise reader of its result instead of it: mean's
    division, a logistic step's update (``plan/epilogue.py``)."""
    op = getattr(cls, "op", None) or getattr(getattr(cls, "reduction", None), "op", "sum")
    return op not in ("argmax", "argmin") and choose(cls, device, thresholds).form in EPILOGUE_FORMS


def describe() -> str:
    """The table as text: one line per rule (for docs and ``print``)."""
    return "\n".join(f"{r.applies.__name__:12s} {r.name:50s} -> "
                     f"{r.form.value if r.form else ('as a reduction' if r.then else 'no kernel')}"
                     for r in RULES)


__all__ = ["Choice", "EPILOGUE_FORMS", "Form", "Rule", "RULES", "blas_sized", "choose", "describe",
           "reduction_stores_through_epilogue", "stores_through_epilogue"]
