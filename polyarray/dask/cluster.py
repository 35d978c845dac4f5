"""Settings for ``distributed`` worker processes that run polyarray tasks.

A task's result is a fresh host array, which Dask keeps until it is no
longer needed.  ``distributed`` starts its workers with
``MALLOC_TRIM_THRESHOLD_=65536`` (its ``pre-spawn-environ``), and glibc
serves every block over 128 KiB with its own ``mmap``: each freed chunk goes
back to the kernel, and each new one is faulted in again page by page.  In a
VM that has handed the pages back to its host this costs 35-45 ms per
16 MiB chunk (measured on the CI's 2-core VM), against 0.8 ms for the
polyarray task that fills it.  ``KEEP_FREED_MEMORY`` makes a worker keep
freed blocks in its heap (one arena, no trimming, no per-block mmap) and
reuse them; the price is that a worker's resident memory stays at its peak
(Dask counts it as unmanaged memory against its pause and spill thresholds,
so leave it off where a worker's peak is near its memory limit).
These variables must be in the worker's environment when it starts:
``spawn_config`` gives the Dask config that puts them there (a Nanny's
``env=`` is applied only after the process has started).
"""
from __future__ import annotations

import os

KEEP_FREED_MEMORY = {
    "MALLOC_TRIM_THRESHOLD_": str(1 << 40),     # never give the heap's top back
    "MALLOC_MMAP_THRESHOLD_": str(1 << 30),     # blocks under 1 GiB come from the heap
    "MALLOC_ARENA_MAX": "1",                    # task threads share the main heap
}


def spawn_config(keep_freed_memory=True) -> dict:
    """Dask config (``with dask.config.set(pa.dask.cluster.spawn_config()):``
    around the cluster's creation) whose ``pre-spawn-environ`` holds
    ``KEEP_FREED_MEMORY`` on top of ``distributed``'s own settings."""
    import dask
    import distributed  # noqa: F401  (its config defaults, which this extends)
    env = dict(dask.config.get("distributed.nanny.pre-spawn-environ"))
    if keep_freed_memory:
        env.update(KEEP_FREED_MEMORY)
    return {"distributed.nanny.pre-spawn-environ": env}


def worker_env(target=None, workers=1, cpu_device=False, cores=None) -> dict:
    """A worker's environment (a Nanny's ``env=``): its polyarray target,
    and on a CPU OpenCL device (PoCL) its share of the cores, so the
    workers' PoCL thread pools do not oversubscribe them."""
    env = {"POLYARRAY_TARGET": target} if target else {}
    if cpu_device:
        threads = str(max(1, (cores or os.cpu_count() or 1) // max(1, workers)))
        env["POCL_CPU_MAX_CU_COUNT"] = env["POCL_MAX_PTHREAD_COUNT"] = threads
    return env
