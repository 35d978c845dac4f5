"""Large CUDA math helpers compiled once per source instead of at every call.

nvcc inlines a ``static inline`` helper at each call.  For most helpers that
is what we want, but some carry a slow path whose code is large (``sinf``'s
range reduction for huge arguments, ``powf``'s extended-precision log): a
chain of 2000 fused ops with 500 ``sin`` calls took nvcc 24.5 s, nearly all
in that inlined code, and 1.2 s with ``sin`` compiled once.  A
helper of ``NOINLINE_OPS`` (``thresholds.py``) called at least ``NOINLINE_MIN_CALLS``
times in one source is declared ``__noinline__``: the numbers are the same
(the same function runs; only its call is not expanded), the source shows it,
and smaller programs keep today's inlined code byte for byte.

An outlined region (``outline.py``: ``__forceinline__``) called more than
once in a source -- a kernel of several elements per work-item calls it for
each -- is compiled once too: the 2000-op chain over 65536 elements (four
calls) took NVRTC 21.6 s on the H100's host inlined, nvcc 1.4 s here once.
On OpenCL (clang's spelling, ``__attribute__((noinline))``) only the
outlined regions of many results (``OPENCL_NOINLINE_REGION_RESULTS``:
a recurrence unrolled into each work-item) and the helpers of
``OPENCL_NOINLINE_OPS``: PoCL compiles a kernel for its
work-group size when it is first launched, and for inlined float64 ``tanh``
and ``log2`` that took time growing with the square of the calls (400 calls:
17.6 s and 26.5 s, against 0.4 s and 0.2 s once); NPBench's go_fast sums
2000 of them.  Other helpers stay inlined there: PoCL vectorizes them across
work-items (a float32 chain of 16 ``tanh`` over 2^20 elements ran 8x slower
as calls, float64 ``exp`` 4x).
"""
from __future__ import annotations

import re

_DEFINITION = re.compile(r"^__device__ static inline (\w+) (pa_(\w+)_(float32|float64))\(",
                         re.M)
_OPENCL_DEFINITION = re.compile(r"^static inline (\w+) (pa_(\w+)_(float32|float64))\(", re.M)
_REGION = re.compile(r"^__device__ static __forceinline__ (\w+) (pa_r_[0-9a-f]+)\(", re.M)
_OPENCL_REGION = re.compile(
    r"^static inline __attribute__\(\(always_inline\)\) (\w+) (pa_r_[0-9a-f]+)\(([^)]*)\)", re.M)


def noinline_large_helpers(source: str, t) -> str:
    """``source`` (CUDA C) with the helpers of ``t.NOINLINE_OPS`` called at
    least ``t.NOINLINE_MIN_CALLS`` times, and the outlined regions called
    more than once, compiled once (``t``: the thresholds)."""
    changes = []
    for m in _REGION.finditer(source):
        if source.count(m.group(2) + "(") - 1 > 1:
            changes.append((m.start(), m.end(),
                            f"__device__ static __noinline__ {m.group(1)} {m.group(2)}("))
    for m in _DEFINITION.finditer(source):
        name, op, dtype = m.group(2), m.group(3), m.group(4)
        if op not in t.NOINLINE_OPS.get(dtype, ()):
            continue
        calls = source.count(name + "(") - 1            # less its definition
        if calls >= t.NOINLINE_MIN_CALLS:
            changes.append((m.start(), m.end(),
                            f"__device__ static __noinline__ {m.group(1)} {name}("))
    for start, end, text in sorted(changes, reverse=True):
        source = source[:start] + text + source[end:]
    return source


def noinline_opencl_helpers(source: str, t) -> str:
    """``source`` (OpenCL C) with the helpers of ``t.OPENCL_NOINLINE_OPS``
    called at least ``t.NOINLINE_MIN_CALLS`` times, and the outlined regions
    of at least ``t.OPENCL_NOINLINE_REGION_RESULTS`` results, compiled once
    (``t``: the thresholds)."""
    changes = []
    for m in _OPENCL_REGION.finditer(source):
        results = sum("*" in param for param in m.group(3).split(","))
        if results >= t.OPENCL_NOINLINE_REGION_RESULTS:
            changes.append((m.start(), m.end(), f"static __attribute__((noinline)) "
                            f"{m.group(1)} {m.group(2)}({m.group(3)})"))
    for m in _OPENCL_DEFINITION.finditer(source):
        name, op, dtype = m.group(2), m.group(3), m.group(4)
        if op in t.OPENCL_NOINLINE_OPS.get(dtype, ()) \
                and source.count(name + "(") - 1 >= t.NOINLINE_MIN_CALLS:
            changes.append((m.start(), m.end(),
                            f"static __attribute__((noinline)) {m.group(1)} {name}("))
    for start, end, text in sorted(changes, reverse=True):
        source = source[:start] + text + source[end:]
    return source
