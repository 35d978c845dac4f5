"""pa.dask.evaluate: chunked evaluation equals NumPy (ragged last chunks
included), bad bindings fail before anything is submitted, unsupported
operations say so, and a worker killed mid-computation is retried."""
import os
import subprocess
import sys

import numpy as np
import pytest

import polyarray as pa
from helpers import assert_same, subprocess_env

da = pytest.importorskip("dask.array", reason="dask is in the dask extra (pip install "
                         "'polyarray[dask]')")

rng = np.random.default_rng(19)
X = rng.standard_normal((7, 6)).astype(np.float32)
Y = rng.standard_normal((6,)).astype(np.float32)
x = pa.placeholder("x", X.shape, np.float32)
y = pa.placeholder("y", Y.shape, np.float32)


def dask_x():
    return da.from_array(X, chunks=(4, 3))      # blocks (4, 3) and (3, 3): ragged rows


def dask_y():
    return da.from_array(Y, chunks=4)           # (4,) and (2,)


def check(outputs, target, split_every=None, **bindings):
    """Each output computed by dask (the synchronous scheduler) equals the
    NumPy reference program's."""
    got = da.compute(*pa.dask.evaluate(outputs, target=target, split_every=split_every,
                                       **bindings), scheduler="sync")
    host = {k: np.asarray(v) for k, v in bindings.items()}
    ref = pa.compile(outputs, target="numpy")(**host)
    for i, (g, r) in enumerate(zip(got, ref)):
        assert_same(np.asarray(g), r, f"output {i}")


def test_elementwise_chains_broadcasts_and_slices(target):
    outs = (pa.exp(x) * 2.0 + pa.sin(y) - x / 3.0,      # one fused program per block
            x[1:6:2, ::-1] + 1.0, x.T * y[:, None],
            pa.broadcast_to(y, (3, 6)) * 2.0, pa.diff(y), x[2] - y)
    check(outs, target, x=dask_x(), y=dask_y())


REDUCTIONS = {"sum": pa.sum, "prod": pa.prod, "max": pa.max, "min": pa.min,
              "mean": pa.mean, "var": pa.var, "std": pa.std, "argmax": pa.argmax,
              "argmin": pa.argmin}


@pytest.mark.parametrize("kind", list(REDUCTIONS))
def test_every_reduction_over_every_axis(target, kind):
    """Axis 0, 1 and all on a 2-d block grid; the NumPy target also checks a
    tuple of axes (device targets: fewer programs to compile)."""
    fn = REDUCTIONS[kind]
    axes = [0, 1, None] + ([(0, 1)] if target == "numpy" and "arg" not in kind else [])
    outs = tuple(fn(x * 1.5 - 0.25, axis=a) for a in axes)
    check(outs, target, x=dask_x())
    if target == "numpy":       # partials combined by a tree of pairs, not in one task
        check(outs, target, split_every=2, x=da.from_array(X, chunks=(2, 2)))


def test_reductions_of_one_source_read_it_once():
    """var/std as one pass of (count, sum, M2) partials (moments.py), exact
    far from 0, and every reduction of one source over the same axes in
    one task per block; a where= mask keeps var's two-pass composition."""
    from polyarray.dask import tasks
    big = (X * 5 + 1000).astype(np.float32)
    y = pa.sqrt(x) * 2.0
    outs = (pa.var(y), pa.std(y, ddof=1), pa.mean(y), pa.argmax(y), pa.max(y),
            pa.var(x, axis=1, keepdims=True), pa.std(x, axis=1), pa.argmin(x, axis=1))
    before = dict(tasks.STATS)
    got = da.compute(*pa.dask.evaluate(outs, target="numpy", x=da.from_array(big, (4, 3))),
                     scheduler="sync")
    # two sources (y over all axes, x over axis 1): 4 blocks each
    assert tasks.STATS["tasks"] - before["tasks"] == 8 + 7     # + 7 for 5 small map stages
    assert tasks.STATS["bytes_in"] - before["bytes_in"] < 2 * big.nbytes + 400
    for g, r in zip(got, pa.compile(outs, target="numpy")(x=big)):
        assert_same(np.asarray(g), r)
    check(pa.var(x, axis=0, where=x > 0), "numpy", x=dask_x())


def test_integer_and_bool_reductions_are_exact(target):
    a = np.arange(35, dtype=np.int32).reshape(7, 5) % 11 - 5
    xa = pa.placeholder("a", a.shape, np.int32)
    outs = (pa.sum(xa, axis=0), pa.prod(xa % 3 + 1, axis=1), pa.any(xa > 4, axis=0),
            pa.all(xa > -5, axis=None), pa.max(xa))
    check(outs, target, a=da.from_array(a, chunks=(3, 2)))


def test_argmax_argmin_take_the_first_nan_and_the_first_tie(target):
    v = np.array([1, 5, 2, 5, 0, 5, np.nan, 3, np.nan, 0], np.float32)
    w = np.array([1, 5, 2, 5, 0, 5, 4, 3, -1, 0], np.float32)
    pv = pa.placeholder("v", v.shape, np.float32)
    pw = pa.placeholder("w", w.shape, np.float32)
    outs = (pa.argmax(pv), pa.argmin(pv), pa.argmax(pw), pa.argmin(pw), pa.max(pv))
    for split in (None, 2):
        check(outs, target, split, v=da.from_array(v, chunks=3), w=da.from_array(w, chunks=3))


def test_matmul_and_einsum_over_chunked_contractions(target):
    b = rng.standard_normal((6, 5)).astype(np.float32)
    pb = pa.placeholder("b", b.shape, np.float32)
    outs = (pa.exp(x) @ pb, pa.einsum("ij,j->i", x, y), x @ x.T)
    check(outs, target, x=dask_x(), y=dask_y(), b=da.from_array(b, chunks=(4, 2)))


def test_programs_compile_once_per_chunk_shape_and_bytes_are_counted():
    from polyarray.dask import tasks
    xs = da.from_array(np.arange(10, dtype=np.float32), chunks=4)    # 4, 4, 2
    p = pa.placeholder("p", (10,), np.float32)
    before = dict(tasks.STATS)
    out = pa.dask.evaluate(pa.exp(p) * 3.0 + 1.0, target="numpy", p=xs)
    out.compute(scheduler="sync")
    assert tasks.STATS["compiles"] - before["compiles"] == 2      # (4,) and (2,)
    # the whole chain is one task per block: each block in once, its result out once
    assert tasks.STATS["tasks"] - before["tasks"] == 3
    assert tasks.STATS["bytes_in"] - before["bytes_in"] == 40
    assert tasks.STATS["bytes_out"] - before["bytes_out"] == 40
    pa.dask.evaluate(pa.exp(p) * 3.0 + 1.0, target="numpy", p=xs).compute(scheduler="sync")
    assert tasks.STATS["compiles"] - before["compiles"] == 2


def test_bad_bindings_fail_in_evaluate_with_the_programs_messages():
    prog = pa.compile(x + y, target="numpy")
    cases = [dict(x=dask_x()),                                   # missing y
             dict(x=dask_x(), y=dask_y(), z=dask_y()),            # unknown z
             dict(x=dask_x().T, y=dask_y()),                      # wrong shape
             dict(x=dask_x().astype(np.float64), y=dask_y()),     # wrong dtype
             dict(x=dask_x(), y="no")]                            # not an array
    for bad in cases:
        host = {k: np.asarray(v) if hasattr(v, "compute") else v for k, v in bad.items()}
        with pytest.raises((TypeError, ValueError)) as expected:
            prog(**host)
        with pytest.raises(type(expected.value)) as got:
            pa.dask.evaluate(x + y, **bad)
        message = str(expected.value).replace("numpy target", "dask target")
        assert str(got.value) == message


@pytest.mark.parametrize("bad", ["dtype", "shape", "short"])
def test_a_bad_chunk_names_the_placeholder_and_the_chunk(target, bad):
    """A chunk unlike what its dask array declares (a producer's mistake) is
    refused naming the user's placeholder and the chunk, not an internal
    placeholder: before, a chunk of another shape was bound as it came
    (a result of another shape, silently)."""
    def produce(block, block_info=None):
        if block_info[0]["chunk-location"] != (1, 0):
            return block
        return {"dtype": block.astype(np.float64), "shape": block[:, :2],
                "short": block[:1]}[bad]
    xs = dask_x().map_blocks(produce, dtype=np.float32)
    what = {"dtype": "dtype float64; the dask array declares float32",
            "shape": r"shape \(3, 2\); the dask array declares \(3, 3\) for it",
            "short": r"shape \(1, 3\); the dask array declares \(3, 3\) for it"}[bad]
    for out in (x * 2 + y, (x * y).sum(axis=0), x[::2, 1:] - 1, x @ y):
        ys = {"y": dask_y()} if "y" in pa.compile(out, target="numpy").placeholders else {}
        with pytest.raises(ValueError, match=r"pa.dask.evaluate: chunk \(1, 0\) of the dask "
                                             r"array bound to placeholder 'x' has " + what):
            da.compute(pa.dask.evaluate(out, target=target, x=xs, **ys), scheduler="sync")
    good = dask_x().map_blocks(lambda b: b, dtype=np.float32)
    check([x * 2 + y, (x * y).sum(axis=0)], target, x=good, y=dask_y())


def test_unsupported_operations_raise_naming_the_op():
    with pytest.raises(NotImplementedError, match="gather"):
        pa.dask.evaluate(x[:, [1, 2]], x=dask_x())
    with pytest.raises(NotImplementedError, match="positions as values"):
        pa.dask.evaluate(pa.tril(x), x=dask_x())
    for op, expr in (("sort", pa.sort(y)), ("cumsum", pa.cumsum(y)),
                     ("roll", pa.roll(y, 2))):
        with pytest.raises(NotImplementedError, match=op):
            pa.dask.evaluate(expr, y=dask_y())


def test_polyarray_imports_without_dask():
    code = ("import sys; sys.modules['dask'] = None\n"
            "import polyarray as pa, numpy as np\n"
            "x = pa.placeholder('x', (3,), np.float32)\n"
            "try:\n    pa.dask.evaluate(x + 1, x=np.ones(3, np.float32))\n"
            "except ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=subprocess_env(), timeout=120)
    assert "pip install 'polyarray[dask]'" in out.stdout, out.stdout + out.stderr


def test_numpy_bindings_and_constants_are_wrapped():
    """A NumPy binding, a captured array and arange (made on the client),
    and fills (made in the programs, also as a whole output)."""
    c = pa.asarray(np.linspace(0, 1, 6, dtype=np.float32))
    outs = (x * c + pa.arange(6, dtype=np.float32) - pa.ones_like(x), pa.full((5, 3), 2.5))
    got, fill = pa.dask.evaluate(outs, target="numpy", x=X)
    assert_same(got.compute(scheduler="sync"), X * np.linspace(0, 1, 6, dtype=np.float32)
                + np.arange(6, dtype=np.float32) - np.float32(1))
    assert_same(fill.compute(scheduler="sync"), np.full((5, 3), 2.5))


@pytest.fixture(scope="module")
def cluster_client():
    distributed = pytest.importorskip("distributed", reason="distributed is in the dask extra")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=50) as cluster:
        with distributed.Client(cluster) as client:
            yield client


def test_a_worker_killed_mid_computation_is_retried(cluster_client, tmp_path):
    """The first run of one block's task ends its worker process; dask
    reruns the lost tasks on a live worker and the result is still right."""
    flag = str(tmp_path / "killed")

    def die_once(block, block_info=None):
        if block_info[0]["chunk-location"] == (2,) and not os.path.exists(flag):
            open(flag, "w").close()
            os._exit(1)
        return block

    v = np.arange(60, dtype=np.float32)
    xs = da.from_array(v, chunks=10).map_blocks(die_once, dtype=np.float32)
    p = pa.placeholder("p", (60,), np.float32)
    s, e = pa.dask.evaluate((pa.sum(p * 2.0), pa.exp(p / 60.0)), target="numpy", p=xs)
    got_s, got_e = cluster_client.compute([s, e], sync=True)
    assert os.path.exists(flag)
    assert_same(np.asarray(got_s), np.sum(v * np.float32(2.0)))
    assert_same(got_e, np.exp(v / np.float32(60.0)))


def test_the_example_runs_on_a_local_cluster():
    """examples/dask_chunked.py as the README shows it (2 PoCL workers where
    OpenCL is there; smaller, and chunks without a ragged end: fewer compiles)."""
    pytest.importorskip("distributed", reason="distributed is in the dask extra")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "examples/dask_chunked.py", "--n", "64000",
                          "--chunk", "16000"], cwd=root, capture_output=True, text=True,
                         env=subprocess_env(), timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "LocalCluster: 2 workers" in out.stdout and "OK: matches NumPy" in out.stdout
    assert "programs compiled" in out.stdout and " 0 tasks" not in out.stdout, out.stdout
    assert "moved between workers" in out.stdout, out.stdout     # pa.dask.moves' table


def test_cluster_settings():
    """pa.dask.cluster: the allocator settings ride on distributed's own
    pre-spawn environment; PoCL workers split the cores."""
    pytest.importorskip("distributed", reason="distributed is in the dask extra")
    import dask
    env = pa.dask.cluster.spawn_config()["distributed.nanny.pre-spawn-environ"]
    own = dask.config.get("distributed.nanny.pre-spawn-environ")
    assert env == dict(own, **pa.dask.cluster.KEEP_FREED_MEMORY)
    assert pa.dask.cluster.spawn_config(False)["distributed.nanny.pre-spawn-environ"] == own
    assert pa.dask.cluster.worker_env("opencl", 2, cpu_device=True, cores=4) == {
        "POLYARRAY_TARGET": "opencl", "POCL_CPU_MAX_CU_COUNT": "2",
        "POCL_MAX_PTHREAD_COUNT": "2"}
    assert pa.dask.cluster.worker_env(None, 3, cpu_device=True, cores=2)[
        "POCL_MAX_PTHREAD_COUNT"] == "1"
    assert pa.dask.cluster.worker_env("cuda", 2) == {"POLYARRAY_TARGET": "cuda"}
