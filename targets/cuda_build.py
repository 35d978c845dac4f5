"""Building a program's CUDA source into modules with nvcc (through pycuda).

A program of several generated kernels is built as several modules by
concurrent nvcc processes (issue 18: a program's kernels do not depend on
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
from concurrent.futures import ThreadPoolExecutor

from polyarray.codegen.user_functions import RAW_MARK

log = logging.getLogger("polyarray.cuda")

# loopy declares a loop of one iteration as a constant (``int const j_outer
# = 0;``) that the body may not read (177: declared but never referenced),
# and the value half of an argmax pair goes to a register nobody reads (550:
# set but never used).  Both are loopy's codegen and cost nothing; nvcc
# prints nothing else for our kernels (tests/test_cuda_codegen.py checks it).
NVCC_OPTIONS = ("-diag-suppress=177,550",)
# kernels from which a program is built by concurrent nvcc processes
PARALLEL_BUILD_MIN_KERNELS = 2
MAX_BUILD_THREADS = min(8, os.cpu_count() or 1)

_KERNEL = re.compile(r'^extern "C" __global__ ', re.M)
_NAME = re.compile(r"__global__ void (?:__launch_bounds__\(\d+\) )?(\w+)\(")
_RAW_MARK = RAW_MARK.split("{language}")[1]     # how codegen/raw.py marks a raw kernel


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
    for k in sorted(range(len(kernels)), key=lambda k: -len(kernels[k][1])):
        min(bins, key=lambda b: sum(len(kernels[j][1]) for j in b)).append(k)
    prelude = source[:starts[0]]
    return [(tuple(kernels[k][0] for k in sorted(b)),
             prelude + "".join(kernels[k][1] for k in sorted(b))) for b in bins]


class Modules:
    """Several pycuda modules behind ``get_function(name)``, as one module."""

    def __init__(self, by_kernel):
        self.by_kernel = by_kernel

    def get_function(self, name):
        return self.by_kernel[name].get_function(name)


def build_module(source, arch, fast_math=False):
    """A module (or ``Modules``) of ``source``, quietly: what nvcc prints is
    logged (pycuda would turn it into a UserWarning), and a failed build
    raises ``BuildError`` with nvcc's output."""
    from pycuda.driver import CompileError
    from polyarray.codegen.logs import log_duration, routed_warnings
    options = [*NVCC_OPTIONS] + (["--use_fast_math"] if fast_math else [])
    pieces = split_kernels(source)
    t0 = time.perf_counter()
    try:
        # warning filters are process-wide: nvcc's words from the build
        # threads are routed too
        with routed_warnings(log, "nvcc", everything=True):
            if len(pieces) == 1:
                from pycuda.compiler import SourceModule
                module = SourceModule(source, no_extern_c=True, options=options, arch=arch)
            else:
                module = _build_concurrently(pieces, options, arch)
    except CompileError as e:
        raise _build_error(source, e) from e
    what = "" if len(pieces) == 1 else f" ({len(pieces)} nvcc runs at once)"
    log_duration(log, f"built the CUDA module for {arch}{what}", time.perf_counter() - t0)
    return module


def _build_concurrently(pieces, options, arch):
    from pycuda.compiler import compile as nvcc_compile
    from pycuda.driver import module_from_buffer

    def cubin(piece):
        return nvcc_compile(piece[1], options=list(options), no_extern_c=True, arch=arch)

    with ThreadPoolExecutor(len(pieces)) as pool:
        cubins = list(pool.map(cubin, pieces))      # the first failure raises here
    # modules are loaded in this thread: the current CUDA context is per thread
    by_kernel = {}
    for (names, _), c in zip(pieces, cubins):
        module = module_from_buffer(c)
        by_kernel.update(dict.fromkeys(names, module))
    return Modules(by_kernel)


def _build_error(source, e):
    from polyarray.codegen.user_functions import build_error_note
    from .base import BuildError
    said = "\n".join(s.strip() for s in (getattr(e, "stderr", None),
                                          getattr(e, "stdout", None)) if s and s.strip())
    command = " ".join(getattr(e, "command_line", None) or ())
    note = build_error_note(source, said or str(e))
    return BuildError((note + "\n" if note else "")
                      + "nvcc could not compile the generated CUDA source (prog.source)"
                      + (f"; command: {command}" if command else "")
                      + f":\n{said or e}")
