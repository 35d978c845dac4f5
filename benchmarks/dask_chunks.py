"""polyarray over Dask (``pa.dask.evaluate``), one device per worker.

    python -m benchmarks.dask_chunks --device opencl --workers 2          # the CPU goal
    python -m benchmarks.dask_chunks --device cuda --workers 1 --cases chain,sum \\
        --n-log 28 --chunk-log 25 --sum-side 32768                         # one H100
    python -m benchmarks.dask_chunks --device cuda --workers 1,2 --cases chain,sum,matmul \\
        --n-log 28 --chunk-log 25 --sum-side 32768 --matmul-side 16384 --no-peer-matmul
    python -m benchmarks.dask_chunks --device cuda --workers 1 --cases chain,sum \
        --n-log 28 --chunk-log 25 --sum-side 32768 --device-resident --no-sync
    python -m benchmarks --only dask                                       # the quick row

``--device-resident``: the inputs are device chunks on the workers
(``pa.dask.to_device``; the peer: ``dask.array`` with CuPy chunks, made by
``map_blocks(cupy.asarray)``) and the outputs stay device chunks
(``out="device"``), so nothing crosses between host and device while it is
timed (the row says what crossed, from ``pa.dask.stats``).  With several
worker counts (``--workers 1,2,4``) the scaling (the time on the fewest
workers over the time on N) is printed for ours and the peer.

Each case is timed three ways in one run: polyarray programs per chunk on
the cluster, the same computation as plain ``dask.array`` (NumPy chunks) on
the same cluster (the peer), and one polyarray program on the whole array
in this process (host arrays in and out, and device-resident).  Inputs are
made and persisted on the workers first; outputs stay there (``persist``),
so the times are the tasks', not a transfer to this process (inputs are
spread evenly over the workers first).  Workers are one process each with
one thread, keeping freed memory for reuse (``pa.dask.cluster``;
``--no-keep-memory``: distributed's trimming); on CUDA each sees one GPU
(``CUDA_VISIBLE_DEVICES``), through dask-cuda's ``LocalCUDACluster`` when it
is installed.  Results are checked against the peer before anything is
timed.  The goal: the single-device speed (one program on the whole
array, host in and out, timed on one worker's device: on a CPU, a PoCL
device of that worker's share of the cores) x min(workers, ``--cap``) over
ours, >= 0.8.  On a CPU the workers split the cores (``--pocl-threads``,
default cores / workers), so the worker count is the cap there.

On a CPU the row also gives the machine's floor: one device-resident
program on all its cores (PoCL's default threads), in this process.  Where
one core already streams at the memory bandwidth (the 2-core CI VM, the
chain: 15.7 ms on one core, 15.6 ms on two, medians, for 512 MiB moved),
two workers cannot be twice as fast as one: the goal's ideal lies below
that floor.
"""
from __future__ import annotations

import argparse
import time
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import polyarray as pa                                    # noqa: E402
from polyarray.testing import median_time                # noqa: E402
from benchmarks.workloads import chain10, chain10_pa     # noqa: E402


def make_cluster(n_workers, device, pocl_threads=None, keep_memory=True):
    """(cluster, client): ``n_workers`` single-threaded worker processes,
    each on its own device (GPUs: round robin over the visible ones).
    ``keep_memory``: the workers keep freed blocks for reuse
    (``pa.dask.cluster.KEEP_FREED_MEMORY``) instead of ``distributed``'s
    trimming, under which every result chunk is faulted in anew (the
    single-program reference runs on a worker: the same allocator)."""
    import dask
    with dask.config.set(pa.dask.cluster.spawn_config(keep_memory)):
        return _make_cluster(n_workers, device, pocl_threads)


def _make_cluster(n_workers, device, pocl_threads):
    from distributed import Client, Nanny, Scheduler, SpecCluster
    if device == "cuda":
        try:
            from dask_cuda import LocalCUDACluster
        except ImportError:
            pass
        else:
            cluster = LocalCUDACluster(n_workers=n_workers, threads_per_worker=1,
                                       dashboard_address=None, memory_limit=_memory_limit(n_workers))
            return cluster, Client(cluster)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    gpus = visible.split(",") if visible else [str(i) for i in range(_gpu_count())]
    workers = {}
    for i in range(n_workers):
        env = pa.dask.cluster.worker_env(device, n_workers, cpu_device=bool(pocl_threads),
                                         cores=pocl_threads and pocl_threads * n_workers)
        if device == "cuda":
            env["CUDA_VISIBLE_DEVICES"] = gpus[i % len(gpus)]
        workers[f"w{i}"] = {"cls": Nanny,
                            "options": {"nthreads": 1, "env": env, "silence_logs": 40,
                                        "memory_limit": _memory_limit(n_workers)}}
    cluster = SpecCluster(workers=workers, scheduler={
        "cls": Scheduler, "options": {"dashboard_address": None}}, silence_logs=40)
    return cluster, Client(cluster)


def _memory_limit(n_workers):
    """The machine's memory shared by the workers.  distributed's "auto" is
    the memory times threads / cores: 8 GiB for a one-thread worker on the
    H100's 16-core host, under which a 32768^2 float32 input (4 GiB) held
    twice paused the worker and then got it killed."""
    from distributed.system import MEMORY_LIMIT
    return MEMORY_LIMIT // max(1, n_workers)


def _gpu_count():
    try:
        import pycuda.driver as drv
        drv.init()
        return drv.Device.count()
    except Exception:   # noqa: BLE001
        return 1


def placed(client, array):
    """``array`` computed and kept on the workers, its chunks spread evenly
    over them (``rebalance``: the first worker up may have made most)."""
    from distributed import wait
    array = client.persist(array)
    wait(array)
    client.rebalance(array)
    return array


def same(block):
    """A chunk as it is (host or device)."""
    return block


def persist_once(client, make, inputs):
    """The cluster computes ``make(**inputs)`` and keeps it.  It reads fresh
    aliases of the inputs (a no-op task per chunk), so its keys are new:
    dask would not recompute keys it holds."""
    import uuid
    import dask.array as da
    from distributed import wait
    alias = {k: da.map_blocks(same, v, dtype=v.dtype, name=f"alias-{uuid.uuid4()}",
                              meta=v._meta)
             for k, v in inputs.items()}
    futures = client.persist(make(**alias))
    wait(futures)
    del futures


def persist_time(client, make, inputs, repeat):
    """Median seconds of ``persist_once``."""
    return median_time(lambda: persist_once(client, make, inputs), lambda: None,
                       repeat=repeat)


def crossed(client, make, inputs):
    """(bytes to the devices, bytes from them, tasks) of one run, all workers."""
    before = client.run(pa.dask.stats)
    persist_once(client, make, inputs)
    after = client.run(pa.dask.stats)
    return tuple(sum(after[w][k] - before[w][k] for w in after)
                 for k in ("host_to_device", "device_to_host", "tasks", "seconds"))


def resident(client, raw, args):
    """(ours, the peer's): ``raw``'s chunks on the workers as polyarray
    device chunks and as CuPy chunks where ``--device-resident``; else the
    host chunks for both."""
    if not args.device_resident:
        x = placed(client, raw)
        return x, x
    ours = placed(client, pa.dask.to_device(raw, target=args.device))
    if args.no_peer:        # host chunks: the values to check against
        return ours, placed(client, raw)
    import cupy
    peer = placed(client, raw.map_blocks(cupy.asarray, dtype=raw.dtype,
                                         meta=cupy.empty((0,) * raw.ndim, raw.dtype)))
    return ours, peer


def to_numpy(block):
    return block.get() if hasattr(block, "get") else np.asarray(block)


def check_close_resident(client, ours, peer, name, rtol=1e-4):
    """``check_close`` of device chunks (both brought to the host)."""
    import dask.array as da
    kw = dict(dtype=ours.dtype, meta=np.empty((0,) * ours.ndim, ours.dtype))
    check_close(client, da.map_blocks(to_numpy, ours, **kw),
                da.map_blocks(to_numpy, peer, **kw), name, rtol)


def check_close(client, ours, peer, name, rtol=1e-4):
    import dask.array as da
    err, scale = client.compute([da.max(abs(ours - peer)), da.max(abs(peer))], sync=True)
    if not err <= rtol * max(float(scale), 1e-30):
        raise AssertionError(f"{name}: differs from dask.array by {err} (scale {scale}); "
                             "not timing it")


def single_times(b, expr, host, repeat):
    """(host in/out, device-resident) seconds of one program on the whole array."""
    from benchmarks.common import to_device
    prog = pa.compile(expr, target=b.device)
    t_host = median_time(lambda: prog(**host), lambda: None, repeat=repeat)
    dev_prog = pa.compile(expr, target=b.device, out="device")
    dev = {k: to_device(b, v) for k, v in host.items()}
    t_dev = median_time(lambda: dev_prog(**dev), dev_prog.synchronize, repeat=repeat)
    return t_host, t_dev


def case_chain(b, client, args):
    import dask.array as da
    n, c = 1 << args.n_log, 1 << args.chunk_log
    raw = da.random.default_rng(0).random(n, dtype=np.float32, chunks=c) * 2 - 1
    x, xp = resident(client, raw, args)
    px = pa.placeholder("x", (n,), np.float32)
    out = "device" if args.device_resident else "host"
    ours = lambda x: pa.dask.evaluate(chain10_pa(px), x=x, target=b.device,   # noqa: E731
                                      out=out)
    peer = lambda x: chain10(da, x)                                            # noqa: E731
    (check_close_resident if args.device_resident else check_close)(
        client, ours(x), peer(xp), "chain")
    return (f"10-op chain 2^{args.n_log} f32, 2^{args.chunk_log} chunks", ours, peer,
            chain10_pa(px), {"x": x}, dict(nbytes=8 * n), {"x": raw}, {"x": xp})


def case_sum(b, client, args):
    import dask.array as da
    s = args.sum_side
    rows = max(1, (1 << args.chunk_log) // s)
    raw = da.random.default_rng(1).random((s, s), dtype=np.float32, chunks=(rows, s))
    x, xp = resident(client, raw, args)
    px = pa.placeholder("x", (s, s), np.float32)
    out = "device" if args.device_resident else "host"
    ours = lambda x: pa.dask.evaluate(pa.sum(px), x=x, target=b.device,    # noqa: E731
                                      out=out)
    peer = lambda x: x.sum()                                               # noqa: E731
    (check_close_resident if args.device_resident else check_close)(
        client, ours(x), peer(xp), "sum", rtol=1e-3)
    return (f"sum {s}^2 f32, {rows}-row chunks", ours, peer, pa.sum(px), {"x": x},
            dict(nbytes=4 * s * s), {"x": raw}, {"x": xp})


def case_matmul(b, client, args):
    import dask.array as da
    s, c = args.matmul_side, args.matmul_side // 2
    rng = da.random.default_rng(2)
    raw = [rng.random((s, s), dtype=np.float32, chunks=(c, c)) - 0.5 for _ in range(2)]
    (a, ap), (m, mp) = (resident(client, r, args) for r in raw)
    pa_, pm = pa.placeholder("a", (s, s), np.float32), pa.placeholder("m", (s, s), np.float32)
    out = "device" if args.device_resident else "host"
    ours = lambda a, m: pa.dask.evaluate(pa_ @ pm, a=a, m=m, target=b.device,  # noqa: E731
                                         out=out)
    peer = None if args.no_peer_matmul else (lambda a, m: a @ m)
    (check_close_resident if args.device_resident else check_close)(
        client, ours(a, m), ap @ mp, "matmul", rtol=1e-3)
    return (f"matmul {s}^2 f32, {c}^2 blocks", ours, peer, pa_ @ pm, {"a": a, "m": m},
            dict(flops=2 * s ** 3), dict(zip("am", raw)), {"a": ap, "m": mp})


CASES = {"chain": case_chain, "sum": case_sum, "matmul": case_matmul}


def one_program_on_this_worker(case, n_log, sum_side, matmul_side, repeat):
    """Seconds of one program on the whole array, host in and out, on the
    device of the worker that runs this (its default target): the
    single-device speed the goal multiplies by the worker count."""
    rng = np.random.default_rng(0)
    if case == "chain":
        x = pa.placeholder("x", (1 << n_log,), np.float32)
        expr, host = chain10_pa(x), {"x": rng.random(1 << n_log, dtype=np.float32)}
    elif case == "sum":
        x = pa.placeholder("x", (sum_side,) * 2, np.float32)
        expr, host = pa.sum(x), {"x": rng.random((sum_side,) * 2, dtype=np.float32)}
    else:
        a = pa.placeholder("a", (matmul_side,) * 2, np.float32)
        m = pa.placeholder("m", (matmul_side,) * 2, np.float32)
        expr, host = a @ m, {k: rng.random((matmul_side,) * 2, dtype=np.float32)
                             for k in "am"}
    prog = pa.compile(expr)
    return median_time(lambda: prog(**host), lambda: None, repeat=repeat)


def run(b, args, workers):
    """Rows for each case on a cluster of ``workers``; returns {case: our seconds}."""
    import dask.array as da
    threads = args.pocl_threads
    if threads is None and not b.gpu:     # the CPU's cores split between the PoCL workers
        threads = max(1, (os.cpu_count() or 1) // workers)
    cluster, client = make_cluster(workers, b.device, threads, not args.no_keep_memory)
    ours_s = {}
    t_start = time.perf_counter()

    def stage(what):        # progress, so a run cut short still says how far it got
        print(f"  [{time.perf_counter() - t_start:7.1f} s] {what}", file=sys.stderr, flush=True)
    try:
        for case in args.cases.split(","):
            name, ours, peer, expr, inputs, size, recipes, peer_inputs = CASES[case](
                b, client, args)
            stage(f"{case}: inputs placed and checked against dask.array")
            t_ours = persist_time(client, ours, inputs, args.repeat)
            stage(f"{case}: ours {t_ours * 1e3:.2f} ms")
            b_in, b_out, n_tasks, in_tasks = crossed(client, ours, inputs)
            stage(f"{case}: {n_tasks} tasks; {in_tasks * 1e3:.2f} ms inside our tasks' programs "
                  f"(uploads, kernels, downloads), all workers")
            peers = {}
            peer_name = "dask.array+cupy" if args.device_resident else "dask.array"
            if peer is not None and not args.no_peer:
                peers[peer_name] = persist_time(client, peer, peer_inputs, args.repeat)
                stage(f"{case}: {peer_name} {peers[peer_name] * 1e3:.2f} ms")
            # the same values made here (the same graph and seeds), not gathered
            # from the workers: a 4 GiB input concatenated on a worker killed it
            host = {k: v.compute(scheduler="threads") for k, v in recipes.items()}
            t_host, t_dev = single_times(b, expr, host, args.repeat)
            stage(f"{case}: one program {t_host * 1e3:.2f} ms host in/out, "
                  f"{t_dev * 1e3:.2f} ms device-resident")
            local = {k: da.from_array(v, chunks=inputs[k].chunks) for k, v in host.items()}
            if args.device_resident:
                local = {k: pa.dask.to_device(v, target=b.device).persist(scheduler="sync")
                         for k, v in local.items()}
            t_sync = float("nan") if args.no_sync else median_time(
                lambda local=local: ours(**local).persist(scheduler="sync"), lambda: None,
                repeat=args.repeat)
            del host, local
            stage(f"{case}: chunked in this process {t_sync * 1e3:.2f} ms")
            first = sorted(client.scheduler_info()["workers"])[0]
            t_worker = client.submit(one_program_on_this_worker, case, args.n_log,
                                     args.sum_side, args.matmul_side, args.repeat,
                                     workers=[first], pure=False).result()
            cap = args.cap or workers
            goal = t_worker / (min(workers, cap) * t_ours)     # our speed / the ideal
            devices = workers if b.gpu else 1
            nbytes = size.get("nbytes")
            r = b.row(f"dask {case}: {name}, {workers} worker(s)", t_ours, peers,
                      nbytes=nbytes / devices if nbytes else None,
                      flops=size["flops"] / devices if "flops" in size else None,
                      note=f"one program on the whole array: {t_host * 1e3:.2f} ms host in/out, "
                           f"{t_dev * 1e3:.2f} ms device-resident here, {t_worker * 1e3:.2f} "
                           f"ms host in/out on one worker's device; chunked in this "
                           f"process (dask's synchronous scheduler) {t_sync * 1e3:.2f} ms; "
                           f"goal (our speed / "
                           f"that speed x min(workers, {cap})): {goal:.2f} "
                           f"{'met' if goal >= 0.8 else 'NOT met'} (>= 0.8); {n_tasks} "
                           f"polyarray tasks moved {b_in / 2**20:.0f} MiB to and "
                           f"{b_out / 2**20:.0f} MiB from the devices"
                           + ("; inputs and outputs device-resident (ours: pa.dask.to_device "
                              "chunks, out='device'; the peer: CuPy chunks)"
                              if args.device_resident else "")
                           + ("" if b.gpu else f"; the machine's floor (device-resident on "
                              f"all cores) {t_dev * 1e3:.2f} ms: ours at "
                              f"{t_dev / t_ours:.2f} of it"))
            r.update(goal_ratio=goal, floor_ratio=None if b.gpu else t_dev / t_ours,
                     keep_memory=not args.no_keep_memory, one_program_host_s=t_host, one_program_device_s=t_dev,
                     one_program_on_a_worker_s=t_worker, chunked_in_process_sync_s=t_sync,
                     bytes_to_devices=b_in, bytes_from_devices=b_out, tasks=n_tasks)
            ours_s[case] = (t_ours, peers.get(peer_name))
            print(f"{r['workload']}: ours {t_ours * 1e3:.2f} ms; {r['note']}", flush=True)
    finally:
        client.close()
        cluster.close()
    return ours_s


def workload(b):
    """``python -m benchmarks --only dask``: the chain on 2 workers (quick: small)."""
    args = parse([] if not b.quick else ["--n-log", "22", "--chunk-log", "20"])
    args.device = b.device
    run(b, args, 2)


def parse(argv):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.dask_chunks", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="opencl", choices=["opencl", "cuda"])
    ap.add_argument("--workers", default="2", help="worker counts, e.g. 1,2 (scaling)")
    ap.add_argument("--cases", default="chain", help="chain, sum, matmul (comma-separated)")
    ap.add_argument("--n-log", type=int, default=26, help="chain: 2^N elements")
    ap.add_argument("--chunk-log", type=int, default=22, help="2^N elements per chunk")
    ap.add_argument("--sum-side", type=int, default=8192, help="sum: a side x side array")
    ap.add_argument("--matmul-side", type=int, default=2048, help="matmul: side x side")
    ap.add_argument("--no-peer-matmul", action="store_true",
                    help="skip dask.array's NumPy matmul (slow on big GPU sizes)")
    ap.add_argument("--cap", type=int, default=None,
                    help="the goal's cap on the speed-up (default: the workers)")
    ap.add_argument("--pocl-threads", type=int, default=None,
                    help="CPU threads per PoCL worker (default: the cores / the workers)")
    ap.add_argument("--no-peer", action="store_true",
                    help="skip dask.array with NumPy chunks (slow on GPU sizes)")
    ap.add_argument("--no-sync", action="store_true",
                    help="skip the chunked run in this process (dask's synchronous scheduler)")
    ap.add_argument("--no-keep-memory", action="store_true",
                    help="workers with distributed's memory trimming (every chunk faulted "
                         "in anew), not pa.dask.cluster.KEEP_FREED_MEMORY")
    ap.add_argument("--device-resident", action="store_true",
                    help="inputs and outputs as device chunks on the workers (ours: "
                         "pa.dask.to_device, out='device'; the peer: dask.array with CuPy "
                         "chunks)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default=None, help="write the rows here")
    return ap.parse_args(argv)


def main(argv=None):
    from benchmarks.bench import Bench
    args = parse(argv)
    b = Bench(args.device, False)
    counts = [int(w) for w in args.workers.split(",")]
    by_count = {w: run(b, args, w) for w in counts}
    b.print_table()
    if args.json:
        import json
        with open(args.json, "w") as f:
            json.dump({"device": b.desc, "copy_bw_bytes_per_s": b.copy_bw,
                       "command": " ".join(["python -m benchmarks.dask_chunks"]
                                           + list(argv or sys.argv[1:])),
                       "rows": b.rows}, f, indent=1)
    base = min(counts)
    for w in counts:
        for case, (t, t_peer) in by_count[w].items():
            b0, p0 = by_count[base][case]
            peer = (f"; the peer ({'dask.array+cupy' if args.device_resident else 'dask.array'})"
                    f" {p0 / t_peer:.2f}x" if t_peer and p0 else "")
            print(f"scaling {case}: time on {base} worker(s) / time on {w}: ours {b0 / t:.2f}x "
                  f"(efficiency {b0 * base / (t * w):.2f}){peer}")
    if counts == [1]:
        print("scaling: one worker only (one GPU): no scaling measured")


if __name__ == "__main__":
    main()
