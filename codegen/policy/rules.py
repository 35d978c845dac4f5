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

Thresholds are ``thresholds.py``'s constants, re-exported here
(``benchmarks/sweep.py`` sets some of them on this module
and re-lowers): the rules read them when they run.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Callable

from .classify import Contraction, Elementwise, Raw, Reduction, Rows, Steps
from .device import Device
from ..lower import ceil_div, pow2_floor

from ..thresholds import *  # noqa: E402,F401,F403  (the measured numbers; see there)


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


def _stacked_rows(c):
    """Rows per work-group of a stacked recurrence: their tile must fit the
    local memory a kernel may declare statically."""
    return pow2_floor(min(STACKED_ROWS, STACKED_LOCAL_BYTES // c.stacked))


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
    # GPU: columns of a recurrence (each builds on the one before): a work-item per
    # row computes them in order (columns unrolled), stores through local memory
    Rule("gpu: stacked recurrence, a row per work-item", E,
         lambda c, d: c.stacked and STACKED_MIN_COLUMNS <= c.shape[-1] <= STACKED_MAX_COLUMNS
         and _stacked_rows(c) >= STACKED_MIN_ROWS, Form.ELEMENTWISE,
         lambda c, d: dict(layout="axes", rows=_stacked_rows(c))),
    # GPU: a 2-D output reading a 2-D buffer transposed: 32 x 32 tiles through local
    # memory, so reads and stores are both coalesced
    Rule("gpu: transposed tile", E, _is_transposed, Form.ELEMENTWISE,
         lambda c, d: dict(layout="transposed", tile=TRANSPOSE_TILE, rows=TRANSPOSE_ROWS,
                           swapped=c.transposed_reads)),
    Rule("gpu: elements per item", E, lambda c, d: ELEMENTWISE_ILP > 1
         and c.size >= _wg(c.size) * ELEMENTWISE_ILP * ILP_MIN_GROUPS
         and c.buffers <= ILP_MAX_BUFFERS, Form.ELEMENTWISE,
         lambda c, d: dict(layout="ilp", ilp=ELEMENTWISE_ILP, wg=_wg(c.size))),
    Rule("gpu: flat", E, lambda c, d: True, Form.ELEMENTWISE,
         lambda c, d: dict(layout="flat", wg=_wg(c.size))),

    # contractions: a 2-D matrix product with sizes multiples of TILE is tiled; every
    # other contraction is a reduction (the reduction rows below)
    Rule("no outputs: no kernel", C, lambda c, d: c.reduction.M == 0, None),
    # (m, 0) @ (0, n): nothing to sum, so zeros (the tiled forms' schedules refused the
    # empty loop domain: a crash on the GPU kinds)
    Rule("empty contraction: the neutral element", C, lambda c, d: c.reduction.R == 0,
         then=_as_reduction),
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
    # CPU: each reduction in CPU_LANES accumulators along the row (as the lanes
    # form): faster than one chain of dependent adds, and a float sum rounds like
    # R / CPU_LANES terms, not R.  A user's steps name the plain loops (j0, j1...)
    Rule("cpu: a work-item per row, lanes along it", W, lambda c, d: d.cpu
         and c.R >= CPU_LANES and not c.scheduled, Form.ROWS_THREAD,
         lambda c, d: dict(wg=_wg(c.M), lanes=CPU_LANES)),
    Rule("cpu: a work-item per row", W, lambda c, d: d.cpu, Form.ROWS_THREAD,
         lambda c, d: dict(wg=_wg(c.M))),
    Rule("short rows: a work-item per row", W, lambda c, d: c.R < GROUP_ROW, Form.ROWS_THREAD,
         lambda c, d: dict(wg=_wg(c.M))),
    Rule("a work-group per row", W, lambda c, d: True, Form.ROWS_GROUP, _row_group),

    # recurrences (a Python loop whose rows build on the rows before): a work-item per
    # element of a row runs the rows in order; the rows' elements are coalesced
    Rule("recurrence: a work-item per element, rows in order", Steps, lambda c, d: True,
         Form.RECURRENCE, lambda c, d: dict(wg=_wg(c.size))),

    # hand-written kernels (pa.raw_kernel): the user's code, grid and block
    Rule("raw: the user's kernel", Raw, lambda c, d: True, Form.RAW),
)
del E, R, C, W


def stores_through_epilogue(einsum, device) -> bool:
    """Whether a matrix product's elementwise reader can be computed in its
    store (``plan/epilogue.py``): where the product is a tiled matmul."""
    from .classify import product_class
    cls = product_class(einsum)
    if not cls.matmul:
        return False
    choice = choose(cls, device)        # split-K stores partials: no epilogue there
    return choice.form == Form.TILED_MATMUL and "split" not in choice.params


# reduction forms whose store can be an elementwise reader of the result
# (``plan/epilogue.py``): each output's value is in a register (or, across
# a work-group, in local memory) where it is stored.  Not ``lanes`` (CPU),
# ``neutral`` or the contractions' packed and mma forms.
EPILOGUE_FORMS = frozenset({Form.THREAD, Form.GROUP, Form.TWO_STAGE, Form.SPLIT_COLUMNS})


def reduction_stores_through_epilogue(cls, device) -> bool:
    """Whether a reduction (or a contraction computed as one) of class
    ``cls`` stores an elementwise reader of its result instead of it: mean's
    division, a logistic step's update (``plan/epilogue.py``)."""
    op = getattr(cls, "op", None) or getattr(getattr(cls, "reduction", None), "op", "sum")
    return op not in ("argmax", "argmin") and choose(cls, device).form in EPILOGUE_FORMS


def describe() -> str:
    """The table as text: one line per rule (for docs and ``print``)."""
    return "\n".join(f"{r.applies.__name__:12s} {r.name:50s} -> "
                     f"{r.form.value if r.form else ('as a reduction' if r.then else 'no kernel')}"
                     for r in RULES)


__all__ = ["Choice", "EPILOGUE_FORMS", "Form", "Rule", "RULES", "choose", "describe",
           "reduction_stores_through_epilogue", "stores_through_epilogue"]
