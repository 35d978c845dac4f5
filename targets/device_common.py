"""What the OpenCL and CUDA targets share: lowering with a two-level cache.

The cache holds the target-independent result of codegen (``Lowered``:
source, launch sizes, buffer table) plus the device binary, keyed by the
program's structure, the target, the device and the options.  A hit skips
loopy and the device compiler entirely.
"""
from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass

log = logging.getLogger("polyarray.compile")
_MEMORY = {}


@dataclass
class CompiledProgram:
    lowered: object          # codegen.Lowered
    handle: object           # cl.Program / pycuda module (None: no kernels)
    origin: str              # "memory" | "disk" | "built"
    seconds: float           # time spent producing it in this process


def _strip(lowered):
    """A picklable copy without the loopy objects."""
    kernels = [dataclasses.replace(k, loopy_kernel=None) for k in lowered.kernels]
    return dataclasses.replace(lowered, kernels=kernels, translation_unit=None)


def lower_or_load(cache, key, outputs, lp_target, build, cpu=False) -> CompiledProgram:
    """``build(source, binary_or_None) -> (handle, binary)``."""
    t0 = time.perf_counter()
    hit = _MEMORY.get(key)
    if hit is not None:
        hit.origin = "memory"
        return hit
    entry = cache.get(key)
    if entry is not None:
        lowered = entry["lowered"]
        handle, binary = (build(lowered.source, entry["binary"]) if lowered.kernels
                          else (None, None))
        if binary != entry["binary"]:
            cache.put(key, {"lowered": lowered, "binary": binary})
        origin = "disk"
    else:
        from codegen import lower_program
        lowered = lower_program(outputs, lp_target, cpu=cpu)
        handle, binary = build(lowered.source, None) if lowered.kernels else (None, None)
        cache.put(key, {"lowered": _strip(lowered), "binary": binary})
        origin = "built"
    compiled = CompiledProgram(lowered, handle, origin, time.perf_counter() - t0)
    if origin == "built":
        log.debug("compiled %d kernels in %.3f s", len(lowered.kernels), compiled.seconds)
    _MEMORY[key] = compiled
    return compiled


def clear_memory_cache():
    _MEMORY.clear()
