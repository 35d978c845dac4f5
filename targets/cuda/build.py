"""Building a program's CUDA source into modules (``cuda.compiler``: NVRTC
or nvcc, and a cache of cubins).

A program of several generated kernels is built as several modules by
concurrent compiles (a program's kernels do not depend on
each other).  Each piece is the shared prelude (loopy's macros and our
helper functions) plus some of the kernels.  An nvcc run costs about 0.45 s
before its first kernel on the H100's host (a program of 40 small kernels:
1.26 s whole, 2.73 s as 40 pieces in 8 threads), so there are no more pieces
than threads, and the kernels are dealt out longest first to the piece with
the least text.  A source with a raw kernel (``pa.raw_kernel``: the user's C,
whose declarations we do not parse), or with one kernel, is built whole.
"""
from __future__ import annotations

import logging
import os
import re
import time

from polyarray.codegen.user_functions import RAW_MARK

log = logging.getLogger("polyarray.cuda")

# loopy declares a loop of one iteration as a constant (``int const j_outer
# = 0;``) that the body may not read (177: declared but never referenced),
# and the value half of an argmax pair goes to a register nobody reads (550:
# set but never used).  Both are loopy's codegen and cost nothing; nvcc
# prints nothing else for our kernels (tests/targets/cuda/test_cuda_codegen.py checks it).
NVCC_OPTIONS = ("-diag-suppress=177,550",)
# kernels from which a program is built by concurrent nvcc processes
PARALLEL_BUILD_MIN_KERNELS = 2
MAX_BUILD_THREADS = min(8, os.cpu_count() or 1)
# an outlined region of at least twice this many statements is built as
# segments of at least this many (at most SPLIT_MAX_SEGMENTS), in units compiled
# at once (``cuda.split``): nvcc takes about 0.3 s per 500 statements of the
# chain's region on one core.  Constants, not the machine's cores: the cuts
# decide the binary, which must not depend on the host.
SPLIT_MIN_STATEMENTS = max(1, int(os.environ.get("POLYARRAY_SPLIT_MIN_STATEMENTS", 700)))
SPLIT_MAX_SEGMENTS = 8

_KERNEL = re.compile(r'^extern "C" __global__ ', re.M)
_NAME = re.compile(r"__global__ void (?:__launch_bounds__\(\d+\) )?(\w+)\(")
_RAW_MARK = RAW_MARK.split("{language}")[1]     # how codegen/forms/raw.py marks a raw kernel
_REGION_MARK = "/* polyarray outlined region: "  # codegen/emit/outline.py's comment
_BOUNDS = re.compile(r"__launch_bounds__\((\d+)\)")


def split_kernels(source, pieces=None):
    """``[(kernel names, text), ...]``: the prelude plus some kernels of a
    generated CUDA source, in at most ``pieces`` (default: the build
    threads) pieces, or ``[((), source)]`` where it is built whole."""
    pieces = pieces or MAX_BUILD_THREADS
    starts = [m.start() for m in _KERNEL.finditer(source)]
    if len(starts) < PARALLEL_BUILD_MIN_KERNELS or pieces < 2 or _RAW_MARK in source:
        return [((), source)]
    kernels = []
    for a, b in zip(starts, starts[1:] + [len(source)]):
        names = _NAME.findall(source[a:b])
        if len(names) != 1:             # not the shape loopy emits: build it whole
            return [((), source)]
        kernels.append((names[0], source[a:b]))
    bins = [[] for _ in range(min(pieces, len(kernels)))]
    text = [0] * len(bins)          # each bin's kernel text so far
    for k in sorted(range(len(kernels)), key=lambda k: -len(kernels[k][1])):
        b = min(range(len(bins)), key=text.__getitem__)
        bins[b].append(k)
        text[b] += len(kernels[k][1])
    prelude = source[:starts[0]]
    return [(tuple(kernels[k][0] for k in sorted(b)),
             prelude + "".join(kernels[k][1] for k in sorted(b))) for b in bins]


class Modules:
    """Several CUDA modules behind ``get_function(name)``, as one module."""

    def __init__(self, by_kernel):
        self.by_kernel = by_kernel

    def get_function(self, name):
        return self.by_kernel[name].get_function(name)


def build_cubins(source, arch, fast_math=False):
    """``[(kernel names, cubin), ...]`` of ``source`` (one entry with no
    names where it is built whole): from the cache or compiled
    (``cuda.compiler``: NVRTC or nvcc), concurrently when there are several
    pieces.  Needs no GPU.  A failed build raises ``BuildError`` with the
    compiler's output."""
    from .compiler import CudaCompileError, cubin
    options = [*NVCC_OPTIONS] + (["--use_fast_math"] if fast_math else [])
    pieces = split_kernels(source)
    try:
        if len(pieces) == 1:
            return [((), _one_piece(source, arch, options))]
        with _pool(len(pieces)) as pool:     # the first failure raises
            return list(zip((names for names, _ in pieces),
                            pool.map(lambda piece: cubin(piece[1], arch, options), pieces)))
    except CudaCompileError as e:
        raise _build_error(source, e) from e


def split_units(source):
    """The translation units ``source`` is built from: ``[source]``, or
    its large outlined regions cut into segments (``cuda.split``) where a
    linker is found.  A source with the user's C (a raw kernel, a custom
    kernel's ``preamble=``: its definitions would be in every unit) is
    built whole."""
    from .compiler import USER_C, linker
    from .split import split
    if _REGION_MARK not in source or USER_C.search(source):     # USER_C: raw kernels too
        return [source]
    units = split(source, SPLIT_MAX_SEGMENTS, SPLIT_MIN_STATEMENTS)
    return units if len(units) > 1 and linker() is not None else [source]


def segment_options(main, options):
    """The options of the segment units: the kernel's ``__launch_bounds__(N)``
    caps its registers (64 for 1024 threads), and a function it calls from
    another unit must fit under that cap, or the link fails."""
    bounds = [int(n) for n in _BOUNDS.findall(main)]
    if not bounds or max(bounds) <= 256:            # 65536 / 256: no cap below 255
        return options
    return [*options, f"-maxrregcount={min(255, 65536 // max(bounds) // 8 * 8)}"]


def _one_piece(source, arch, options):
    """The cubin of one piece: compiled whole, or as ``split_units``
    compiled at once as relocatable code and linked; where that fails, for
    any reason, compiled whole (slower beats failed)."""
    from .compiler import cubin, linked
    try:
        units = split_units(source)
        if len(units) > 1:
            rdc = [*options, "-rdc=true"]
            unit_options = [rdc] + [segment_options(units[0], rdc)] * (len(units) - 1)
            with _pool(min(len(units), MAX_BUILD_THREADS)) as pool:
                parts = list(pool.map(lambda k: cubin(units[k], arch, unit_options[k]),
                                      range(len(units))))
            binary = linked(parts, arch)
            log.info("built one kernel source as %d units at once", len(units))
            return binary
    except Exception as e:       # noqa: BLE001
        said = str(e).splitlines()[0] if str(e) else type(e).__name__
        log.warning("building the source as several units failed (%s); building it whole",
                    said)
    return cubin(source, arch, options)


def build_module(source, arch, fast_math=False):
    """A module (or ``Modules``) of ``source``'s cubins (``build_cubins``),
    loaded in this thread (the current CUDA context is per thread)."""
    from pycuda.driver import module_from_buffer
    from polyarray.codegen.logs import log_duration
    t0 = time.perf_counter()
    built = build_cubins(source, arch, fast_math)
    if len(built) == 1:
        module = module_from_buffer(built[0][1])
    else:
        by_kernel = {}
        for names, c in built:
            by_kernel.update(dict.fromkeys(names, module_from_buffer(c)))
        module = Modules(by_kernel)
    what = "" if len(built) == 1 else f" ({len(built)} pieces at once)"
    log_duration(log, f"built the CUDA module for {arch}{what}", time.perf_counter() - t0)
    return module


def _build_error(source, e):
    from polyarray.codegen.user_functions import build_error_note
    from ..base import BuildError
    note = build_error_note(source, e.said)
    return BuildError((note + "\n" if note else "")
                      + f"{e.compiler} could not compile the generated CUDA source (prog.source)"
                      + (f"; command: {e.command}" if e.command else "")
                      + f":\n{e.said}")


def _pool(workers):
    """A thread pool for concurrent builds, imported where a program has
    several pieces: ``concurrent.futures`` costs a one-kernel program's cold
    compile 1-2 ms to import."""
    from concurrent.futures import ThreadPoolExecutor
    return ThreadPoolExecutor(workers)
