"""polyarray programs over Dask arrays: each task runs one compiled program on
its chunk (``pa.dask.evaluate``), and Dask schedules the tasks.

    python examples/dask_chunked.py                 # a LocalCluster of 2 workers
    python examples/dask_chunked.py --no-cluster    # Dask's default scheduler

With ``distributed`` installed it starts a ``LocalCluster`` of 2 worker
processes, one device each (on a CPU: 2 PoCL workers); without it, or with
``--no-cluster``, Dask's default (threaded) scheduler runs the tasks.
"""
import argparse

import numpy as np
import dask.array as da

import polyarray as pa

import sizing                      # examples/sizing.py: --quick, and small sizes on a CPU


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_003, help="elements (a ragged last chunk)")
    ap.add_argument("--chunk", type=int, default=250_000, help="elements per chunk")
    ap.add_argument("--target", default=None, help="numpy, opencl or cuda (default: the "
                    "workers' default target)")
    ap.add_argument("--no-cluster", action="store_true", help="Dask's default scheduler")
    args = sizing.parse_args(ap, {"n": 100_003, "chunk": 25_000})

    client = None
    if not args.no_cluster:
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            print("distributed is not installed: using Dask's default scheduler")
        else:
            import dask
            # workers that reuse freed chunks rather than fault each one in anew
            with dask.config.set(pa.dask.cluster.spawn_config()):
                cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
            client = Client(cluster)
            print(f"LocalCluster: {len(client.scheduler_info()['workers'])} workers")

    n, rng = args.n, np.random.default_rng(0)
    x_np = rng.standard_normal(n).astype(np.float32)
    w_np = rng.standard_normal((64, 16)).astype(np.float32)
    x = da.from_array(x_np, chunks=args.chunk)
    m = da.from_array(x_np[:n // 64 * 64].reshape(-1, 64), chunks=(args.chunk // 64, 64))

    # the lazy program: placeholders of the whole arrays' shapes
    px = pa.placeholder("x", (n,), np.float32)
    pm = pa.placeholder("m", m.shape, np.float32)
    pw = pa.placeholder("w", w_np.shape, np.float32)
    y = pa.tanh(px) * 2.0 + pa.exp(-px * px)              # fused: one program per chunk
    outputs = {"y": y, "mean": pa.mean(y), "std": pa.std(y), "argmax": pa.argmax(y),
               "h": pa.maximum(pm @ pw, 0.0).sum(axis=0)}  # blockwise matmul, then a sum
    results = pa.dask.evaluate(outputs, target=args.target, x=x, m=m, w=w_np)
    got = dict(zip(results, da.compute(*results.values())))

    ref = pa.compile(outputs, target="numpy")(x=x_np, m=np.asarray(m), w=w_np)
    for name in outputs:
        pa.testing.assert_allclose(np.asarray(got[name]), ref[name], err_msg=name)
    print(f"y[:3] = {got['y'][:3]}, mean = {got['mean']:.6f}, std = {got['std']:.6f}, "
          f"argmax = {got['argmax']}, h[:3] = {got['h'][:3]}")
    print(f"{n} elements in {x.npartitions} chunks on "
          f"{'a LocalCluster' if client else 'the default scheduler'}: OK: matches NumPy")
    if client is not None:
        for worker, stats in client.run(pa.dask.stats).items():
            print(f"worker {worker}: {stats['tasks']} tasks, {stats['compiles']} programs "
                  f"compiled, {stats['bytes_in'] + stats['bytes_out']} bytes to/from its device")
        moved = pa.dask.moves(client)           # chunks copied between workers, from their logs
        print(str(moved).splitlines()[0])
        for (src, dst), (chunks, nbytes) in sorted(moved.by_pair().items()):
            print(f"  {src} -> {dst}: {chunks} chunks, {nbytes} bytes")
        client.close()
        cluster.close()


if __name__ == "__main__":
    main()
