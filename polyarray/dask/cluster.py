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


def visible_gpus() -> list:
    """The GPUs this process may use, as ``CUDA_VISIBLE_DEVICES`` entries:
    that variable's list where it is set, else one per device the CUDA
    driver counts (none without pycuda or a GPU)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [v.strip() for v in visible.split(",") if v.strip() and v.strip() != "-1"]
    try:
        import pycuda.driver as drv
        drv.init()
        return [str(i) for i in range(drv.Device.count())]
    except Exception:       # noqa: BLE001  (no pycuda, no driver, no GPU)
        return []


def cuda_worker_specs(n_gpus=None, memory_limit="auto") -> dict:
    """``SpecCluster`` worker specs: one single-threaded worker process per
    GPU (the first ``n_gpus`` visible ones), each seeing only its own
    (``CUDA_VISIBLE_DEVICES``) and running polyarray's CUDA target."""
    from distributed import Nanny
    gpus = visible_gpus()
    if n_gpus is not None:
        if n_gpus > len(gpus):
            raise ValueError(f"local_cuda_cluster: {n_gpus} GPU(s) asked for, {len(gpus)} "
                             f"visible ({', '.join(gpus) or 'none'})")
        gpus = gpus[:n_gpus]
    if not gpus:
        raise RuntimeError("local_cuda_cluster: no CUDA GPU is visible to this process")
    specs = {}
    for gpu in gpus:
        env = dict(worker_env("cuda"), CUDA_VISIBLE_DEVICES=gpu)
        specs[f"gpu{gpu}"] = {"cls": Nanny, "options": {
            "nthreads": 1, "env": env, "memory_limit": memory_limit,
            "silence_logs": 40}}
    return specs


def local_cuda_cluster(n_gpus=None, memory_limit=None, keep_freed_memory=True,
                       use_dask_cuda=True, **cluster_options):
    """A local ``distributed`` cluster of one worker process per visible GPU
    (``n_gpus``: the first ones; default: all), each pinned to its GPU with
    ``CUDA_VISIBLE_DEVICES`` and polyarray's CUDA target; dask-cuda's
    ``LocalCUDACluster`` where it is installed (``use_dask_cuda=False``:
    ours).  ``memory_limit``: per worker (default: the machine's memory
    shared by the workers).  Use it as ``with local_cuda_cluster() as c,
    distributed.Client(c) as client: ...``."""
    import dask
    from distributed import Scheduler, SpecCluster
    from distributed.system import MEMORY_LIMIT
    gpus = visible_gpus()
    count = len(gpus) if n_gpus is None else n_gpus
    if memory_limit is None:
        memory_limit = MEMORY_LIMIT // max(1, count)
    with dask.config.set(spawn_config(keep_freed_memory)):
        if use_dask_cuda:
            try:
                from dask_cuda import LocalCUDACluster
            except ImportError:
                pass
            else:
                if count > len(gpus):
                    raise ValueError(f"local_cuda_cluster: {count} GPU(s) asked for, "
                                     f"{len(gpus)} visible")
                return LocalCUDACluster(CUDA_VISIBLE_DEVICES=",".join(gpus[:count]),
                                        threads_per_worker=1, memory_limit=memory_limit,
                                        env=worker_env("cuda"),
                                        **dict({"dashboard_address": None}, **cluster_options))
        specs = cuda_worker_specs(count, memory_limit)
        return SpecCluster(workers=specs, scheduler={
            "cls": Scheduler, "options": {"dashboard_address": None}},
            **dict({"silence_logs": 40}, **cluster_options))
