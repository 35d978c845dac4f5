"""pa.dask with device-resident chunks: chunks that are device arrays
(``pa.dask.to_device``, CuPy) are bound where they are and what is made
from them stays on the device (``pa.dask.stats`` counts every byte that
crosses between host and device), chunks that are no arrays are refused
before anything runs, device memory is freed without pycuda's warnings,
and the one-worker-per-GPU cluster pins its workers."""
import gc
import os
import warnings

import numpy as np
import pytest

import polyarray as pa
from helpers import assert_same

da = pytest.importorskip("dask.array", reason="dask is in the dask extra (pip install "
                         "'polyarray[dask]')")

rng = np.random.default_rng(23)
X = rng.standard_normal((7, 6)).astype(np.float32)
W = rng.standard_normal((6, 5)).astype(np.float32)
V = rng.standard_normal(40 * 3).astype(np.float32)
x = pa.placeholder("x", X.shape, np.float32)
w = pa.placeholder("w", W.shape, np.float32)
v = pa.placeholder("v", V.shape, np.float32)
# elementwise, reductions over each axis and all (40 blocks of v: the device
# combine runs in several programs), a contraction over two blocks
OUTS = (pa.exp(x) * 2.0 - x / 3.0, pa.sum(x * x, axis=0), pa.max(x, axis=1), pa.sum(v),
        pa.min(v * 2.0), x @ w, pa.mean(x, axis=0))


def host_inputs():
    return {"x": da.from_array(X, chunks=(4, 3)), "w": da.from_array(W, chunks=(3, 5)),
            "v": da.from_array(V, chunks=3)}


def on_device(target):
    """The inputs as device chunks, made and kept now (their upload counted
    before the test's counters start)."""
    return {k: pa.dask.to_device(a, target=target).persist(scheduler="sync")
            for k, a in host_inputs().items()}


def as_host(chunk):
    return np.asarray(chunk.get() if hasattr(chunk, "get") else chunk)


def reference(outs=OUTS):
    prog = pa.compile(outs, target="numpy")
    return prog(**{k: a for k, a in dict(x=X, w=W, v=V).items() if k in prog.placeholders})


def is_device(chunk):
    from polyarray.dask.tasks import DEVICE_KINDS, chunk_kind
    return chunk_kind(chunk) in DEVICE_KINDS


def test_device_chunks_stay_on_the_device(device_target):
    """Device chunks in, out="device": not one byte crosses to or from the
    host, every result is a device array, and the values are NumPy's."""
    inputs = on_device(device_target)
    assert is_device(inputs["v"].blocks[5].compute(scheduler="sync"))
    pa.dask.stats(reset=True)
    outs = pa.dask.evaluate(OUTS, target=device_target, out="device", **inputs)
    kept = [o.persist(scheduler="sync") for o in outs]
    got = da.compute(*kept, scheduler="sync")       # joined on the device
    crossed = pa.dask.stats(reset=True)
    assert crossed["tasks"] > 0
    assert crossed["host_to_device"] == 0 and crossed["device_to_host"] == 0, crossed
    for k, block in enumerate(kept):
        first = block.blocks[(0,) * block.ndim] if block.ndim else block
        assert is_device(first.compute(scheduler="sync")), k
    for k, (g, r) in enumerate(zip(got, reference())):
        assert is_device(g), k
        assert_same(as_host(g), r, f"output {k}")


def test_device_chunks_give_host_results_by_default(device_target):
    """out="host" (the default): the results are downloaded once, and that
    is all that crosses (the inputs are not uploaded again)."""
    inputs = on_device(device_target)
    pa.dask.stats(reset=True)
    got = da.compute(*pa.dask.evaluate(OUTS, target=device_target, **inputs),
                     scheduler="sync")
    crossed = pa.dask.stats(reset=True)
    assert crossed["host_to_device"] == 0, crossed
    assert crossed["device_to_host"] == sum(np.asarray(g).nbytes for g in got), crossed
    for k, (g, r) in enumerate(zip(got, reference())):
        assert isinstance(g, np.ndarray), k
        assert_same(g, r, f"output {k}")


def test_host_chunks_with_device_results(device_target):
    """Host chunks, out="device": each input chunk is uploaded once by the
    task that reads it (v by two stages: twice), nothing comes back."""
    pa.dask.stats(reset=True)
    got = da.compute(*pa.dask.evaluate(OUTS, target=device_target, out="device",
                                       **host_inputs()), scheduler="sync")
    crossed = pa.dask.stats(reset=True)
    assert crossed["device_to_host"] == 0, crossed
    # x is read by five stages (elementwise, sum, max, mean, the product),
    # w by the product of each of x's two row blocks, v by two reductions
    assert crossed["host_to_device"] == 5 * X.nbytes + 2 * W.nbytes + 2 * V.nbytes, crossed
    for k, (g, r) in enumerate(zip(got, reference())):
        assert is_device(g), k
        assert_same(as_host(g), r, f"output {k}")


def test_argmax_and_variance_of_device_chunks(device_target):
    """argmax's (value, index) and variance's (count, sum, M2) partials stay
    on the device as records of device arrays, combined there by programs:
    nothing comes back, and only each argmax block's index offset (8 bytes,
    a kernel's input) goes out.  Over 40 blocks of v the combine takes
    several programs; x's blocks have two reduced axes for the flat argmax."""
    inputs = on_device(device_target)
    outs = (pa.argmax(x, axis=0), pa.argmin(v), pa.var(x, axis=1), pa.std(v),
            pa.argmax(x), pa.var(x, axis=0, ddof=1), pa.argmin(x, axis=1))
    pa.dask.stats(reset=True)
    got = da.compute(*pa.dask.evaluate(outs, target=device_target, out="device",
                                       x=inputs["x"], v=inputs["v"]), scheduler="sync")
    crossed = pa.dask.stats(reset=True)
    assert crossed["device_to_host"] == 0, crossed
    # offsets: x's 2 x 2 blocks for three argmax/argmin, v's 40 blocks
    assert crossed["host_to_device"] == 8 * (3 * 4 + 40), crossed
    for k, (g, r) in enumerate(zip(got, reference(outs))):
        assert is_device(g), k
        assert_same(as_host(g), r, f"output {k}")


def test_argmax_of_device_chunks_orders_as_numpy(device_target):
    """Ties go to the first index and a NaN wins, across blocks as within
    one: NumPy's argmax/argmin over values that tie and hold NaNs."""
    values = np.array([[1, 5, 5, 0], [5, 2, np.nan, 5], [0, 5, 1, np.nan],
                       [3, 3, 3, 3], [-1, -1, 7, 7], [2, np.nan, 2, np.nan]], np.float32)
    t = pa.placeholder("t", values.shape, np.float32)
    chunks = pa.dask.to_device(da.from_array(values, chunks=(2, 2)), target=device_target)
    outs = (pa.argmax(t, axis=0), pa.argmin(t, axis=0), pa.argmax(t, axis=1),
            pa.argmin(t, axis=1), pa.argmax(t), pa.argmin(t * 0.0 + 3.0))
    got = da.compute(*pa.dask.evaluate(outs, target=device_target, out="device", t=chunks),
                     scheduler="sync")
    ref = pa.compile(outs, target="numpy")(t=values)
    ints = np.nan_to_num(values, nan=9).astype(np.int32)
    n = pa.placeholder("n", ints.shape, np.int32)
    int_outs = (pa.argmax(n, axis=0), pa.argmin(n, axis=1), pa.argmax(n))
    got += da.compute(*pa.dask.evaluate(int_outs, target=device_target, out="device",
                                        n=pa.dask.to_device(da.from_array(ints, chunks=(4, 3)),
                                                            target=device_target)),
                      scheduler="sync")
    ref = tuple(ref) + tuple(pa.compile(int_outs, target="numpy")(n=ints))
    for k, (g, r) in enumerate(zip(got, ref)):
        assert_same(as_host(g), r, f"output {k}")


def test_views_of_device_chunks_stay_on_the_device(device_target):
    """Dask views of device chunks (a transpose, a strided slice) are bound
    without a trip through the host (OpenCL gathers them on the device,
    CUDA binds them as views); on OpenCL a reversed view is gathered on the
    device too (pyopencl's ``get`` refused it)."""
    inputs = on_device(device_target)
    xs = inputs["x"]
    views = {"t": (xs.T, X.T), "s": (xs[1:6:2, ::2], X[1:6:2, ::2])}
    pa.dask.stats(reset=True)
    for name, (view, want) in views.items():
        p = pa.placeholder(name, want.shape, np.float32)
        outs = pa.dask.evaluate((p * 2.0 + 1.0, pa.sum(p, axis=0)), target=device_target,
                                out="device", **{name: view})
        got = da.compute(*outs, scheduler="sync")
        assert_same(as_host(got[0]), want * np.float32(2.0) + np.float32(1.0), name)
        assert_same(as_host(got[1]), want.sum(axis=0), name)
    crossed = pa.dask.stats(reset=True)
    assert crossed["host_to_device"] == 0 and crossed["device_to_host"] == 0, crossed
    if device_target != "opencl":
        return
    r = pa.placeholder("r", X.shape, np.float32)
    got, = da.compute(*pa.dask.evaluate((r - 1.0,), target=device_target, out="device",
                                        r=xs[::-1, ::-1]), scheduler="sync")
    crossed = pa.dask.stats(reset=True)
    assert crossed["host_to_device"] == 0 and crossed["device_to_host"] == 0, crossed
    assert_same(as_host(got), X[::-1, ::-1] - np.float32(1.0))


def test_cupy_chunks_are_read_in_place():
    """dask.array with CuPy chunks (the usual GPU dask array): bound in
    place, results CuPy arrays, nothing through the host."""
    cupy = pytest.importorskip("cupy", reason="CuPy (a CUDA GPU's library) is not installed")
    ok, why = pa.targets.availability("cuda")
    if not ok:
        pytest.skip(f"cuda: {why}")
    inputs = {k: a.map_blocks(cupy.asarray, dtype=a.dtype,
                              meta=cupy.empty((0,) * a.ndim, a.dtype)).persist(scheduler="sync")
              for k, a in host_inputs().items()}
    pa.dask.stats(reset=True)
    got = da.compute(*pa.dask.evaluate(OUTS, target="cuda", out="device", **inputs),
                     scheduler="sync")
    crossed = pa.dask.stats(reset=True)
    assert crossed["host_to_device"] == 0 and crossed["device_to_host"] == 0, crossed
    for k, (g, r) in enumerate(zip(got, reference())):
        assert isinstance(g, cupy.ndarray), (k, type(g))
        assert_same(cupy.asnumpy(g), r, f"output {k}")


def test_cuda_chunks_are_copied_and_freed_in_any_thread():
    """Device chunks made in dask's pool threads, copied by dask in this
    thread and dropped in another one (neither had polyarray's CUDA context
    current): no "invalid device context", no pycuda "out-of-thread
    context" warning, and their memory goes back to the pool."""
    ok, why = pa.targets.availability("cuda")
    if not ok:
        pytest.skip(f"cuda: {why}")
    import threading
    from polyarray.targets.cuda.driver import pool
    big = rng.standard_normal(1 << 22).astype(np.float32)
    p = pa.placeholder("p", big.shape, np.float32)
    active, got = [], []
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for _ in range(3):
            chunks = pa.dask.to_device(da.from_array(big, chunks=1 << 19), target="cuda")
            out = pa.dask.evaluate(pa.exp(p) * 2.0, target="cuda", out="device", p=chunks)
            kept = out.persist(scheduler="threads")     # made in dask's pool threads

            def copy_and_drop():     # dask copies a kept chunk it returns (chunk.copy())
                nonlocal kept, chunks, out
                try:
                    got.append(as_host(kept.blocks[0].compute(scheduler="sync")))
                except Exception as e:      # noqa: BLE001  (asserted below)
                    got.append(e)
                kept = chunks = out = None
                gc.collect()
            t = threading.Thread(target=copy_and_drop)
            t.start()
            t.join()
            active.append(pool().active_blocks)
    for g in got:
        assert isinstance(g, np.ndarray), g
        assert_same(g, np.exp(big[:1 << 19]) * np.float32(2.0))
    assert active[-1] <= active[0], active        # the chunks went back to the pool
    texts = [str(s.message) for s in seen]
    assert not [t for t in texts if "out-of-thread" in t or "context" in t], texts[:3]


def test_chunks_that_are_no_arrays_are_refused_before_anything_runs():
    """A chunk written into the graph (not made by a task) that is a list,
    or of another dtype or shape, is refused by evaluate, naming the chunk,
    what is wrong and what to do; one made by a task when it is made."""
    good = np.zeros(3, np.float32)
    p = pa.placeholder("p", (6,), np.float32)
    for bad, what in (([1.0, 2.0, 3.0], r"type builtins.list, which is no array .*"
                       r"np.asarray makes a list one"),
                      (np.zeros(3, np.float64), "dtype float64; the dask array declares "
                       "float32"),
                      (np.zeros(2, np.float32), r"shape \(2,\); the dask array declares "
                       r"\(3,\)")):
        arr = da.Array({("lit", 0): good, ("lit", 1): bad}, "lit", chunks=((3, 3),),
                       dtype=np.float32, meta=np.empty((0,), np.float32))
        with pytest.raises(ValueError, match=r"chunk \(1,\) of the dask array bound to "
                                             r"placeholder 'p' has " + what):
            pa.dask.evaluate(p * 2.0, target="numpy", p=arr)
    made = da.from_array(np.zeros(6, np.float32), chunks=3).map_blocks(
        lambda b: b.tolist(), dtype=np.float32, meta=np.empty((0,), np.float32))
    with pytest.raises(ValueError, match=r"chunk \(\d,\) .* placeholder 'p' has type "
                                         r"builtins.list, which is no array"):
        pa.dask.evaluate(p * 2.0, target="numpy", p=made).compute(scheduler="sync")


def test_out_is_checked():
    with pytest.raises(ValueError, match="out must be 'host' or 'device'"):
        pa.dask.evaluate(x * 2.0, out="gpu", x=host_inputs()["x"])
    with pytest.raises(ValueError, match="needs a device target"):
        pa.dask.evaluate(x * 2.0, target="numpy", out="device", x=host_inputs()["x"])


def test_cuda_workers_are_pinned_one_per_gpu(monkeypatch):
    """The worker specs: one single-threaded worker per visible GPU, each
    seeing only its own; more GPUs than visible, or none, is an error."""
    pytest.importorskip("distributed", reason="distributed is in the dask extra")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    specs = pa.dask.cluster.cuda_worker_specs()
    assert sorted(specs) == ["gpu3", "gpu5"]
    for gpu, spec in (("3", specs["gpu3"]), ("5", specs["gpu5"])):
        assert spec["options"]["env"] == {"POLYARRAY_TARGET": "cuda",
                                          "CUDA_VISIBLE_DEVICES": gpu}
        assert spec["options"]["nthreads"] == 1
    assert list(pa.dask.cluster.cuda_worker_specs(1)) == ["gpu3"]
    with pytest.raises(ValueError, match="3 GPU"):
        pa.dask.cluster.cuda_worker_specs(3)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(RuntimeError, match="no CUDA GPU is visible"):
        pa.dask.cluster.cuda_worker_specs()


def test_local_cuda_cluster_runs_device_chunks():
    """On the GPUs there are: one worker per GPU, each with its own
    CUDA_VISIBLE_DEVICES; device-resident chunks evaluated there, the
    partials combined on the device, only the result downloaded."""
    distributed = pytest.importorskip("distributed", reason="distributed is in the dask "
                                      "extra")
    ok, why = pa.targets.availability("cuda")
    if not ok:
        pytest.skip(f"cuda: {why}")
    gpus = pa.dask.cluster.visible_gpus()
    with pa.dask.cluster.local_cuda_cluster() as cluster, distributed.Client(cluster) as c:
        seen = c.run(lambda: os.environ.get("CUDA_VISIBLE_DEVICES"))
        assert sorted(seen.values()) == sorted(gpus)
        chunks = c.persist(pa.dask.to_device(da.from_array(V, chunks=3)))
        distributed.wait(chunks)
        c.run(pa.dask.stats, reset=True)
        s, e = pa.dask.evaluate((pa.sum(v * v), pa.exp(v)), v=chunks)
        got_s, got_e = c.compute([s, e], sync=True)
        crossed = c.run(pa.dask.stats)
    assert_same(np.asarray(got_s), np.sum(V * V))
    assert_same(got_e, np.exp(V))
    assert sum(w["host_to_device"] for w in crossed.values()) == 0, crossed
    assert sum(w["device_to_host"] for w in crossed.values()) == V.nbytes + 4, crossed


def test_moves_between_workers_are_listed_with_their_bytes(device_target):
    """x's blocks kept on one worker and w's on another: the product needs
    some of each on the other, and ``pa.dask.moves`` lists those copies,
    each with its chunk's bytes on the device (dask's ``sizeof`` of a
    device chunk); ``reset=True`` empties the workers' logs."""
    distributed = pytest.importorskip("distributed", reason="distributed is in the dask "
                                      "extra (pip install 'polyarray[dask]')")
    from dask.sizeof import sizeof
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None, silence_logs=50) as cluster, \
            distributed.Client(cluster) as client:
        first, second = sorted(client.scheduler_info()["workers"])
        xs = client.persist(pa.dask.to_device(da.from_array(X, chunks=(4, 6)),
                                              target=device_target), workers=[first])
        ws = client.persist(pa.dask.to_device(da.from_array(W, chunks=(6, 5)),
                                              target=device_target), workers=[second])
        distributed.wait([xs, ws])
        block = client.compute(xs.blocks[0, 0], workers=[first]).result()
        assert sizeof(block) == 4 * 6 * 4          # the device chunk's bytes, not a handle's
        pa.dask.moves(reset=True)
        out, = pa.dask.evaluate((x @ w,), target=device_target, x=xs, w=ws)
        got = out.compute()
        moved = pa.dask.moves(client)
        assert_same(np.asarray(got), reference((x @ w,))[0])
        assert moved and moved.total_bytes == sum(m.nbytes for m in moved), str(moved)
        sizes = {4 * 6 * 4, 3 * 6 * 4, 6 * 5 * 4, 4 * 5 * 4, 3 * 5 * 4}    # x, w, out blocks
        for m in moved:
            assert m.source != m.destination and {m.source, m.destination} == {first, second}
            assert m.nbytes in sizes, str(moved)
        assert any(m.nbytes == 6 * 5 * 4 and m.source == second for m in moved) or \
            any(m.nbytes in (4 * 6 * 4, 3 * 6 * 4) and m.source == first for m in moved), str(moved)
        text = str(moved)
        assert f"{first} -> {second}" in text or f"{second} -> {first}" in text, text
        assert len(pa.dask.moves(reset=True)) == len(moved)
        assert len(pa.dask.moves()) == 0
        assert str(pa.dask.moves()) == "no chunk moved between workers"


def test_a_worker_killed_mid_computation_over_device_chunks(tmp_path):
    """Device chunks on a distributed cluster of two worker processes
    (OpenCL on the CPU): one worker dies while it makes its chunks, Dask
    reruns what it held on the other, and the result is still right;
    partials made on one worker and combined on the other travel through
    the host (pickled: downloaded, then uploaded)."""
    distributed = pytest.importorskip("distributed", reason="distributed is in the dask "
                                      "extra")
    ok, why = pa.targets.availability("opencl")
    if not ok:
        pytest.skip(f"opencl: {why}")
    flag = str(tmp_path / "killed")

    def die_once(block, block_info=None):
        if block_info[0]["chunk-location"] == (2,) and not os.path.exists(flag):
            open(flag, "w").close()
            os._exit(1)
        return block

    values = np.arange(60, dtype=np.float32)
    p = pa.placeholder("p", (60,), np.float32)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=50) as cluster, \
            distributed.Client(cluster) as client:
        chunks = pa.dask.to_device(da.from_array(values, chunks=10).map_blocks(
            die_once, dtype=np.float32), target="opencl")
        s, e = pa.dask.evaluate((pa.sum(p * 2.0), pa.exp(p / 60.0)), target="opencl", p=chunks)
        got_s, got_e = client.compute([s, e], sync=True)
    assert os.path.exists(flag)
    assert_same(np.asarray(got_s), np.sum(values * np.float32(2.0)))
    assert_same(got_e, np.exp(values / np.float32(60.0)))


def test_no_cuda_cleanup_warnings_when_a_dask_process_exits():
    """CUDA first used in dask's pool threads (as on a worker), then the
    process exits from its main thread: the memory pool's blocks, the
    programs' buffers and the chunks are freed without pycuda's
    "out-of-thread context" warnings (they came once per pooled block)."""
    ok, why = pa.targets.availability("cuda")
    if not ok:
        pytest.skip(f"cuda: {why}")
    import subprocess
    import sys
    from helpers import subprocess_env
    code = ("import numpy as np, dask, dask.array as da, polyarray as pa\n"
            "p = pa.placeholder('p', (1 << 20,), np.float32)\n"
            "x = da.from_array(np.ones(1 << 20, np.float32), chunks=1 << 16)\n"
            "for out in ('host', 'device'):\n"
            "    r = pa.dask.evaluate((pa.exp(p) * 2.0, pa.sum(p)), target='cuda', out=out,"
            " p=x)\n"
            "    kept = dask.persist(*r, scheduler='threads')\n"
            "    print(out, float(np.asarray(kept[1].compute(scheduler='sync').get()"
            " if out == 'device' else kept[1].compute())))\n")
    run = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True,
                         text=True, env=subprocess_env(), timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert run.stdout.split() == ["host", "1048576.0", "device", "1048576.0"], run.stdout
    assert "out-of-thread" not in run.stderr, run.stderr[-3000:]
