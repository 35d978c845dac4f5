"""The measured numbers the policy table (``policy/rules.py``) reads, and
the plan's fusion limits and the emitted source's (outlining, helpers
compiled once): work-group sizes, tile shapes, and every threshold between
kernel forms, each with a note of the measurement behind it.

They are one frozen value, ``Thresholds``, whose defaults are the
measurements.  Lowering is given a value (``lower_program(...,
thresholds=)``, else ``current_thresholds()``) and hands it on: the rules
(``policy.choose``), the plan (``make_plan``), outlining and the helpers
compiled once read that value, never a module global.  To lower under other
numbers (a sweep, a test)::

    with policy.using_thresholds(ELEMENTWISE_ILP=2):
        prog = pa.compile(out, target="opencl")

The compile caches key a program by the numbers it was made under
(``targets/cache.code_version``, ``kernels/reuse.context``), so other
numbers give new code, never a program cached under the measured ones.

This module imports nothing of codegen's (nor loopy): a disk-cache hit
reads the numbers in force for its key without importing the table.
"""
from __future__ import annotations

import contextvars
import os
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace

OUTLINE_DEFAULT = 48    # the measured OUTLINE_MIN (see below)


@dataclass(frozen=True)
class Thresholds:
    """Every number lowering reads, by name; the defaults are measured."""
    WG: int = 256                # default work-group size
    ELEMENTWISE_ILP: int = 4     # elements per work-item in large GPU elementwise kernels: one
    #                              per work-item reached 0.76 of copy on an H100, four 0.96
    #                              (benchmarks/probe_bandwidth.py)
    ILP_MIN_GROUPS: int = 64     # "large": at least this many work-groups of ELEMENTWISE_ILP elements
    ILP_MAX_BUFFERS: int = 64    # a kernel reading more buffers (a stack of hundreds of pieces, each
    #                              element selecting its own) is no stream: one element per item
    #                              keeps its source a quarter (deriche S on CUDA: the select over 800
    #                              row pieces, unrolled 4 times, 1.13 MB of source)
    MANY_OUTPUTS: int = 1024     # enough outputs to fill a device one per work-item
    FILL_THREADS: int = 1 << 16  # work-items needed to keep a large GPU busy
    # worth two stages when outputs are few.  H200, a sum of R float32 values of a buffer:
    # one work-group 6.3 us at 4096 (two stages 12.3 us), 9.8 us at 65536 (16.3 us), 16.2
    # us at 262144 (15.7 us); sums of costlier values (a square root and a division each)
    # are not measured, so the bound stays
    LONG_REDUCTION: int = 4096
    FEW_OUTPUTS: int = 64        # fewer outputs than this: a work-group each (GPU)
    GROUP_REDUCTION: int = 64    # contiguous reductions at least this long get a work-group (GPU)
    GROUP_ITEMS: int = 8         # ... of at most R / GROUP_ITEMS work-items: on an H100, A @ v for
    WARP: int = 32               # A 65536 x 784 took 145 us with 256 (0.48 of copy bandwidth)
    PAIR_GROUP_ITEMS: int = 64   # argmax/argmin: each tree step combines (value, index) pairs in
    #                              two arrays, so fewer work-items with more values each: argmax over
    #                              axis 1 of 4096^2 f32 on the H100, 64 work-items 40.7 us, 256 44.8 us
    LONG_COLUMNS: int = 256      # outer reductions at least this long are split into column chunks
    # First stage of a two-stage reduction on a GPU: at most TWO_STAGE_GROUPS work-groups,
    # each reducing a contiguous chunk in at least TWO_STAGE_STEPS coalesced steps.  On an
    # H100, a full sum of 2^26 float32 took 91.8 us in its first stage with 512 grid-strided
    # work-groups (48% of warps active) and 89.4 us as 8192 contiguous chunks (ncu).
    TWO_STAGE_GROUPS: int = 8192
    TWO_STAGE_STEPS: int = 16
    CPU_COLUMN_CHUNK: int = 64   # CPU split columns: short column chunks stay in cache across items
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
    CPU_LANES: int = 16
    CPU_KEPT_LANES: int = 4096
    CPU_ONE_GROUP: int = 1 << 18
    CPU_GROUPS: int = 8
    CPU_CHUNK_STEPS: int = 256
    GPU_COLUMN_CHUNK: int = 32   # GPU split columns: at least this many rows per chunk
    # GPU split columns over a broadcast (values computed from fewer buffer
    # elements) whose last kept axis is contiguous and this short or shorter (the
    # xyz of all-pairs forces, (d * w[:, :, None]).sum(axis=1)): a work-item
    # computes that axis's outputs together, in registers, so the loads they
    # share (w[j]) are made once; and chunks until BLOCKED_FILL work-items run
    # (its values are computed, not read: latency to hide).  Forces of 8192
    # bodies on the H100: 97 us -> 49 us (torch.compile 68 us).  Not for values
    # read from memory: a middle-axis sum of (4096, 4096, 4) went 0.45x torch
    KEPT_BLOCK: int = 4
    BLOCKED_FILL: int = FILL_THREADS * 8
    TRANSPOSE_TILE: int = 32     # tile edge of transposed elementwise kernels (GPU)
    # A recurrence stacked into columns (Hermite, 1.28M x 16 float32, H100): a
    # work-item per row, columns unrolled, stores through local memory 33.6 us,
    # 0.87 of copy; a work-item per element (each redoing the recurrence) 0.2.
    # At 4 columns the flat layout won (8.5 us, 1.01 of copy, against 10.2 us):
    # from 8 columns.  Up to 64 (the unrolled loop).
    # The rows' tile goes through local memory: at most 48 KB (CUDA's static
    # limit), so fewer rows per group for wide float64 rows (at least 32).
    STACKED_ROWS: int = 256
    STACKED_MIN_ROWS: int = 32
    STACKED_LOCAL_BYTES: int = 48 * 1024
    STACKED_MIN_COLUMNS: int = 8
    STACKED_MAX_COLUMNS: int = 64
    TRANSPOSE_ROWS: int = 4      # rows of that tile per work-item (work-groups of 32 x 8)
    TILE: int = 16               # matmul tile edge (and depth); sizes are padded to tiles
    # CUDA grids have at most 65535 work-groups along y and z (g.1, g.2): the
    # tiled matmul puts its row tiles on g.1 and its batch on g.2, a transposed
    # elementwise tile its row tiles on g.1; past that, other forms run
    MAX_GRID_YZ: int = 65535
    REG_TILES: tuple = (128, 64)   # work-group tiles of register-tiled matmuls (16 x 16 work-items)
    BIG_TILES: int = 256         # enough 128 x 128 tiles to fill an H100's 132 SMs (2048^2 outputs)
    # Below that, 128 x 64 tiles: on an H100 (python .gpu/variants15.py) 1000^3 and 1536^3
    # reached 0.76 and 0.75 of cuBLAS with them, 0.69 with 64 x 64; 4096 x 64 x 4096 (K too
    # short for 128 x 128 tiles' stores) 0.71, against 0.61 with 128 x 128.
    DEEP_K: int = 256
    FILL_GROUPS: int = 264       # work-groups that fill an H100 twice over (132 SMs): half of it or less
    SPLIT_K_CHUNK: int = 128     # and K >= 2 chunks of this: split-K, to FILL_GROUPS work-groups
    # Register-tiled matmuls: 8 x 8 outputs per work-item in groups of MATMUL_VECTOR (16-byte
    # shared loads) on 128 x 128 tiles, else 4 x 4 on 64 x 64.  At 4096^3 on an H100 these
    # reach 0.87 and 0.60 of cuBLAS; the strided register tiles of the first version reached
    # 0.66 and 0.56 (python -m benchmarks.matmul_sweep --vector).
    MATMUL_VECTOR: int = 4
    MATMUL_VECTOR_8: int = 2     # 8-byte types: 2 x 8 bytes per shared load
    # float64 products on CUDA (forms/mma_matmul.py): work-group tiles (rows, columns) of
    # warp tiles (rows, columns) on the FP64 tensor cores, K in steps of MMA_DEPTH; products
    # narrower than MMA_MIN keep the 16 x 16 tiles.  H100 sweep (ratio to cuBLAS
    # DGEMM at 1000^3 / 2048^3 / 4096^3): 64 x 64 of 8 warps of 32 x 16, depth 16: 0.46 /
    # 0.49 / 0.53 (the best worst case); of 4 warps of 32 x 32: 0.26 / 0.51 / 0.53; 128 x 64
    # and 128 x 128: 0.16-0.40 (registers: one work-group per SM); depth 32 past 48 KB of
    # shared memory for those.  FP64 FMAs in register tiles: 0.31 / 0.30 / 0.31.  512^3
    # keeps split-K with FMAs (0.82, the tensor-core form 0.57): that rule comes first
    MMA_BIG: tuple = (64, 64, 32, 16)
    MMA_SMALL: tuple = (64, 64, 32, 16)
    MMA_DEPTH: int = 16
    MMA_MIN: int = 64
    # Matrix products in the device's BLAS (cuBLAS on CUDA), where nothing is fused into them
    # and they do at least this much work (batch x M x N x K multiply-adds); smaller ones keep
    # the generated tiles: a call's host time (cuBLAS's own and the step's, ~16 us) is more
    # than a small product's kernel.  H200, calls back to back: 256^3, 64x4096x64 and
    # 8 x 128^3 (2^24) 15.0 / 11.5 / 12.7 us tiled, 20.3 / 17.4 / 18.9 in cuBLAS; 512^3 and
    # 512 x 64^3 (2^27) 18.7 / 20.9 tiled, 19.5 / 17.6 cuBLAS; 1000^3 75.8 and 51.0, float64
    # 512^3 25.9 and 15.7.  A huge value turns the row off.
    BLAS_MIN_WORK: int = 1 << 27
    # Scans (cumsum, cumprod) along rows at least this long are the single-pass kernel
    # (emit/scan_kernels.py) where the target has it; shorter rows the blocked scan of reductions.
    # H200, float32 cumsum, single-pass / blocked: 1 x 1024 12.0 / 28.6 us, 4096 x 1024
    # 26.4 / 43.0, 1024 x 4096 11.6 / 43.2, 64 x 65536 13.1 / 53.7
    SCAN_SINGLE_PASS: int = 1 << 10
    SCAN_COLUMNS: int = 64       # ... along another axis, columns this long (and a warp wide)
    #                              are the column scan's three kernels
    # Sorts of a row at least this long are radix passes (emit/sort_kernels.py) where the
    # target has them; shorter rows the merge sort (a kernel per level)
    RADIX_SORT_MIN: int = 1 << 10
    # ... whose rows at least this long have 64-bit tile states (a count and its flag
    # bits; 32 bits hold counts below 2^30)
    RADIX_WIDE_STATES: int = 1 << 30
    # Attention chains (softmax(scale(Q @ K^T)) @ V, plan/attention.py) are one kernel that keeps
    # the scores on chip (emit/attention_kernels.py) where the target has it and there are at
    # least ATTENTION_MIN_KEYS keys; the keys are cut into ranges side by side (and a kernel
    # adds them) until the work-groups reach FILL_GROUPS, no range shorter than
    # ATTENTION_MIN_RANGE keys.  H200, 4096 x 64 float32 (a variant of the kernel with
    # swizzled rows): 4 ranges of 1024 keys (256 work-groups) 212 us, 8 ranges of 512 215 us;
    # ATTENTION_MIN_KEYS is not measured
    ATTENTION_MIN_KEYS: int = 64
    ATTENTION_MIN_RANGE: int = 512
    # argmax/argmin along the last axis of a buffer are a kernel of work-items per row
    # combining by warp shuffles (emit/arg_kernels.py) where the target has it, for at
    # least ARG_ROWS_MIN_ROWS rows; a power of two of work-items per row, about
    # ARG_ROWS_VALUES values each, more while rows x work-items < ARG_ROWS_FILL.  H200,
    # argmax over axis 1, every width timed (torch in the same process): 4096^2 float32
    # 19.2 us at 128 (torch 28.3; 1 work-item 210 us, 1024 41.8 us), 1024 x 4096 17.5 us at
    # 256 (16.1), 100000 x 10 14.2 us at 1 (13.1; 11.4 at 16), 65536 x 64 11.0 us at 4
    # (31.9), 128 x 100000 11.3 us at 1024 (35.1); 16 x 2^20 49.8 us at 1024 (torch 28.6),
    # so fewer rows than ARG_ROWS_MIN_ROWS keep the generated forms
    ARG_ROWS_MIN_ROWS: int = 64
    ARG_ROWS_VALUES: int = 32
    ARG_ROWS_FILL: int = 1 << 18
    GROUP_ROW: int = 64          # rows at least this long get a work-group each (GPU)
    # Work-group size and unrolling, measured on an H100 for softmax over (4096, 1024)
    # float32 (read + write over copy bandwidth): 128 work-items with every pass
    # unrolled 0.94; 256 unrolled 0.75; 256 not unrolled 0.75; 1024: 0.23.
    # Smaller groups fit more rows per SM, unrolled passes keep 8 loads in flight.
    ROW_GROUP: int = 128
    ROW_UNROLL: int = 16         # unroll each pass when it has at most this many steps
    ROW_FUSE_MAX: int = 16384    # longest row a fused row kernel keeps in one work-group
    # CPU matmuls (packed operands, forms/cpu_matmul.py): a work-item accumulates a block of
    # CPU_MATMUL_ROWS rows x CPU_MATMUL_VECTORS vectors of CPU_VECTOR_BYTES (AVX2: float8,
    # double4).  On PoCL (AMD EPYC, AVX2), one thread, 512^3 and 1000^3 float32, 4 x 16 and
    # 6 x 16 blocks ran at 0.94-1.0 of NumPy's OpenBLAS on one thread; 8 x 8 at 0.72; 3 x 32
    # (15 live vectors) at 0.46; float64 4 x 8: 1.0.  Skinny products too (2 x 2048 x 2048:
    # 3.2 GFLOP/s against 0.6 as a reduction; 2048 x 2048 x 1: 2.1 against 1.5).  Below
    # CPU_MATMUL_WORK multiply-adds, both take tens of microseconds (three launches against
    # one) and the one reduction kernel compiles several times faster: a reduction.
    CPU_VECTOR_BYTES: int = 32
    CPU_MATMUL_ROWS: int = 4
    CPU_MATMUL_VECTORS: int = 2
    CPU_MATMUL_WORK: int = 1 << 15
    MAX_INLINE: int = 400        # a reduction body inlining more nodes than this is materialized
    MAX_INLINE_DEPTH: int = 40   # ... or one deeper than this (code blow-up guard)
    # A computing node whose expression its readers' kernels would hold more than this many
    # times (read at several index maps: x[i] and x[i ^ j]) gets a buffer
    # (plan/materialize.py).  Without it, a chain of such reads grows geometrically: 8
    # stages that each read the last one at two permuted places were 22 KB of OpenCL in one
    # kernel, 20 stages would be ~90 MB; with it, 20 stages are 10 kernels and 4.4 KB.  8 is
    # not measured: a value recomputed a few times from cached reads should cost less than a
    # store, a reload and a launch.  (A node that gathers is a buffer as soon as it is read
    # at two gathered places: the levels of pa.sort)
    MAX_INLINE_COPIES: int = 8
    # Fusion must not multiply work.  A node that a kernel would hold more times than it
    # holds any of its readers (they read it at several index maps: x[i-1], x[i], x[i+1]) is
    # recomputed at each only when its inlined expression has at most MAX_RECOMPUTED nodes
    # (``(a * b)[1:] - (a * b)[:-1]``: a product of two loads), and never at a second level
    # (copies of copies, MAX_COPY_LEVELS): a stencil loop's step would otherwise inline the
    # last step at every offset, 3^k copies for k steps (plan/materialize.py, _copy_level).
    # Measured with PoCL on the 2-core CPU, run time of NPBench's loops (jacobi_1d S 800
    # steps, jacobi_2d S, heat_3d S) and larger ones (1-D 2^20 x 100, 2-D 1024^2 x 50, 3-D
    # 128^3 x 20), a step per kernel against two steps per kernel (the inner one recomputed
    # at each offset): 39 / 7.9 / 16.5 ms and 1.24 / 0.99 / 0.84 s against 52 / 23 / 14 ms and
    # 1.54 / 1.14 / 1.88 s.
    MAX_COPY_LEVELS: int = 1
    MAX_RECOMPUTED: int = 8
    # ... and a computing node held by more than MAX_HOLDING_KERNELS kernels is recomputed by
    # each only when its inlined expression has at most MAX_RECOMPUTED nodes.  An elementwise
    # chain carried through a time loop (NPBench's nbody: ``vel += acc * dt / 2`` each step,
    # read by the step's position update and energy sum) would otherwise be inlined from its
    # first step into every later step's kernels: each kernel different, the work and the
    # source growing with the step (nbody, 100 particles, 30 steps: 221 kernels and 14 s of
    # lowering and builds on PoCL, the last energy sum 49 KB of OpenCL).
    MAX_HOLDING_KERNELS: int = 8
    # A node read through more nested index maps than this (a flip of a flip of ..., a roll
    # of a roll: each nests the index expression once more) gets a buffer: loopy and
    # pymbolic recurse on expressions, and 3000 nested flips passed Python's recursion limit
    MAX_INDEX_DEPTH: int = 32
    # ... or whose index expression would hold its kernel's index more than this many times
    # (a roll is ``x[i + 4 if i < 2 else i - 2]``: i three times; ten nested rolls were 2.2 MB
    # of OpenCL in 16 s of lowering, five 9.5 KB)
    MAX_INDEX_GROWTH: int = 64
    # A computing node whose elements its readers' kernels would each evaluate REPEAT_MIN
    # times or more (a broadcast: a scalar added to a matrix; a piece of a concatenation
    # that is computed at every element of it) is a buffer when its inlined expression has
    # more than MAX_REPEATED_INLINE nodes: NPBench's go_fast adds a 2000-op scalar chain to
    # a 2000^2 matrix, which inlined would redo the chain at every element.
    REPEAT_MIN: int = 2
    MAX_REPEATED_INLINE: int = 32
    # A reduction over at most this many values whose result only feeds other
    # reductions (through elementwise work of its own size) is not a kernel: its
    # terms are unrolled into the reading reduction's body, in registers, so
    # ``argmin(((x[:, None] - c[None]) ** 2).sum(axis=2), axis=1)`` is one kernel
    # that never stores the (points, centres) distances (plan/materialize.py)
    INLINE_REDUCTION_MAX: int = 16
    # ... and a reduction whose values each unroll this many terms or more (an
    # inlined reduction: distances to centres) runs a work-item per output when
    # there are enough outputs to fill the device: its elements are work, and a
    # work-group tree over them costs more than it shares (nearest centre, 10^6
    # points x 64 centres x 8 dimensions: 734 us as groups on the H100)
    HEAVY_TERMS: int = 4
    # An elementwise kernel (flat or ilp layout, no user schedule) with at least this many
    # scalar temporaries gets them as one generated C function (codegen/emit/outline.py): loopy
    # spent ~3.5 ms per instruction over its passes, so a chain of 2000 shared
    # values took 9 s of loopy.  48 is not measured as a crossover: below it loopy's cost is
    # small, and the suite's kernels (none that large) keep loopy's exact code.
    # POLYARRAY_OUTLINE_MIN=0 (read once, at import) outlines every kernel it can, even one
    # without temporaries (its stored values), so tests run the suite through the printer.
    OUTLINE_MIN: int = OUTLINE_DEFAULT

    # CUDA math helpers compiled once per source (``__noinline__``) instead of at each call
    # (codegen/emit/noinline.py): those whose inlined code is large because of a slow path (the
    # range reduction of sinf, powf's exact log).  nvcc -cubin -arch=sm_90 on this CPU, a
    # chain of 64 calls, inlined -> once: float32 sin 0.86 s 94 KB -> 0.24 s 11 KB, cos, tan,
    # power and arctan2 alike (56-96 KB); exp 13 KB, log 31 KB, sqrt 20 KB stay inlined.
    # float64: sin 60 KB, exp 41 KB, log 88 KB, power 84 KB, tanh 104 KB, arctan2 126 KB,
    # expm1 77 KB, arctan 57 KB (sqrt 31 KB); exp2, log2, log10, arcsin, arccos, sinh, cosh and
    # log1p were not measured (listed with their measured relatives).  The 2000-op chain of the compile benchmark: nvcc 24.5 s ->
    # 1.2 s; 200 ops 1.31 s -> 0.30 s.  Below NOINLINE_MIN_CALLS calls in a source a call
    # is not worth saving.
    NOINLINE_OPS: dict = field(hash=False, default_factory=lambda: {
        "float32": ("sin", "cos", "tan", "power", "arctan2"),
        "float64": ("sin", "cos", "tan", "exp", "exp2", "log", "log2", "log10", "power",
                    "arctan2", "arctan", "arcsin", "arccos", "tanh", "sinh", "cosh",
                    "expm1", "log1p"),
    })
    NOINLINE_MIN_CALLS: int = 16
    # OpenCL (PoCL, which compiles a kernel when it is first launched): inlined float64 tanh
    # and log2 took that compile time growing with the square of the calls, 400 calls 17.6 s
    # and 26.5 s (0.4 s and 0.2 s as calls); as calls, a chain of 16 over 2^20 elements ran
    # as fast (tanh) or 1.4x slower (log2).  Others grew linearly or ran much slower as calls
    # (float32 tanh 8x, float64 exp 4x: PoCL vectorizes them inlined), so they stay inlined.
    OPENCL_NOINLINE_OPS: dict = field(hash=False, default_factory=lambda: {"float64": ("tanh", "log2")})
    # An outlined region returning at least this many results through pointers (a
    # recurrence unrolled into one work-item: deriche's row sweeps, 400 and 800 results) is
    # compiled once, not inlined, on OpenCL: PoCL's first launch of deriche S's kernels took
    # 4.7 s and 23.7 s inlined, 1.5 s and 5.5 s as calls; such a region runs once per
    # work-item, where inlining buys little.
    OPENCL_NOINLINE_REGION_RESULTS: int = 64

    def changes(self) -> dict:
        """The numbers that differ from the measured ones, by name."""
        measured = Thresholds()
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) != getattr(measured, f.name)}

    @property
    def outline_forced(self) -> bool:
        """Outlining below its measured threshold (``POLYARRAY_OUTLINE_MIN=0``
        in tests): a printer error is raised, not hidden behind loopy's code."""
        return self.OUTLINE_MIN < OUTLINE_DEFAULT


# the numbers in force where nothing else is said: the measured ones, with
# POLYARRAY_OUTLINE_MIN read once, at import
DEFAULT = Thresholds(OUTLINE_MIN=int(os.environ.get("POLYARRAY_OUTLINE_MIN", OUTLINE_DEFAULT)))
_CURRENT = contextvars.ContextVar("polyarray_thresholds", default=DEFAULT)


def current_thresholds() -> Thresholds:
    """The thresholds lowering uses now: those of the innermost
    ``using_thresholds`` of this thread, else ``DEFAULT``."""
    return _CURRENT.get()


@contextmanager
def using_thresholds(thresholds: Thresholds | None = None, **changes):
    """Lowerings inside use ``thresholds`` (default: those in force) with
    ``changes`` (``ELEMENTWISE_ILP=2``); yields the value in force."""
    names = {f.name for f in fields(Thresholds)}
    unknown = sorted(set(changes) - names)
    if unknown:
        raise TypeError(f"no threshold named {unknown[0]!r}; the thresholds are: "
                        f"{', '.join(sorted(names))}")
    value = replace(current_thresholds() if thresholds is None else thresholds, **changes)
    token = _CURRENT.set(value)
    try:
        yield value
    finally:
        _CURRENT.reset(token)


__all__ = ["DEFAULT", "OUTLINE_DEFAULT", "Thresholds", "current_thresholds", "using_thresholds"]
