"""Targets either give the right answer or a clear error: an
unusable cache directory, malformed cache entries, buffers too big for the
device, and device-array bindings at offsets OpenCL cannot sub-buffer."""
import gc
import hashlib
import logging
import os
import pickle

import numpy as np
import pytest

import polyarray as pa
from helpers import assert_same
from polyarray import targets
from polyarray.targets import cache as C
from polyarray.targets.device_common import clear_memory_cache


def _require(name):
    ok, reason = targets.availability(name)
    if not ok:
        pytest.skip(f"{name}: {reason}")


@pytest.fixture
def opencl():
    _require("opencl")
    return "opencl"


def _compile_three(target, run=True):
    """Three different programs, each compiled twice past the memory layers."""
    x = pa.placeholder("x", (5,), np.float32)
    xv = np.arange(5, dtype=np.float32)
    for k in range(3):
        for _ in range(2):
            clear_memory_cache()
            prog = pa.compile(x * (k + 2) - 1, target=target)
            if run:
                np.testing.assert_array_equal(prog(x=xv), xv * (k + 2) - 1)


def _dir_warnings(caplog):
    return [r for r in caplog.records
            if r.name == "polyarray.cache" and "directory" in r.getMessage()]


# --- an unusable cache directory: compile without a disk cache, warn once ---

@pytest.mark.parametrize("where", ["under_a_file", "is_a_file"])
@pytest.mark.parametrize("target", ["opencl", "cuda"])
def test_uncreatable_cache_dir_compiles_without_disk_cache(target, where, tmp_path,
                                                           monkeypatch, caplog):
    if target == "opencl":
        _require("opencl")            # cuda: code generation needs no GPU
    (tmp_path / "file").write_text("not a directory")
    bad = tmp_path / "file" / "sub" if where == "under_a_file" else tmp_path / "file"
    monkeypatch.setenv("POLYARRAY_CACHE_DIR", str(bad))
    with caplog.at_level(logging.WARNING, logger="polyarray.cache"):
        _compile_three(target, run=target == "opencl")
    warned = _dir_warnings(caplog)
    assert len(warned) == 1, [r.getMessage() for r in warned]
    assert "cannot create cache directory" in warned[0].getMessage()
    assert str(bad) in warned[0].getMessage()


def test_unwritable_cache_dir_warns_once(opencl, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("POLYARRAY_CACHE_DIR", str(tmp_path))

    def refuse(*args, **kw):          # root ignores chmod: refuse writes directly
        raise PermissionError(13, "Permission denied", str(tmp_path))
    monkeypatch.setattr(C.tempfile, "mkstemp", refuse)
    with caplog.at_level(logging.WARNING, logger="polyarray.cache"):
        _compile_three(opencl)
    warned = _dir_warnings(caplog)
    assert len(warned) == 1 and "cannot write to cache directory" in warned[0].getMessage()
    assert not list(tmp_path.iterdir())


# --- checksum-valid entries holding the wrong thing are corrupt ---

def _rewrite(path, value):
    """Replace the value stored in ``path``, keeping its key and a valid checksum."""
    blob = path.read_bytes()
    head = len(C.FORMAT)
    key, _ = pickle.loads(blob[head + 64:])
    payload = pickle.dumps((key, value))
    path.write_bytes(C.FORMAT + hashlib.sha256(payload).hexdigest().encode() + payload)


def _malformed_values():
    from polyarray.codegen import Lowered
    half = Lowered.__new__(Lowered)
    half.__dict__.update(source="__kernel void f() {}")        # missing attributes
    return {"int": 7, "tuple": ("lowered", None), "dict_of_int": {"lowered": 3},
            "half_lowered": {"lowered": half}}


@pytest.mark.parametrize("kind", sorted(_malformed_values()))
def test_malformed_lowered_entry_is_rebuilt(opencl, kind, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("POLYARRAY_CACHE_DIR", str(tmp_path))
    x = pa.placeholder("x", (6,), np.float32)
    xv = np.linspace(-1, 1, 6, dtype=np.float32)
    out = pa.exp(x) + x.sum()
    want = np.exp(xv) + xv.sum()

    def run():
        clear_memory_cache()
        prog = pa.compile(out, target=opencl)
        np.testing.assert_allclose(prog(x=xv), want, rtol=1e-6)
        return prog._exe.compiled.origin

    assert run() == "built"
    [entry] = tmp_path.glob("opencl-*.pkl")
    _rewrite(entry, _malformed_values()[kind])
    with caplog.at_level(logging.WARNING, logger="polyarray.cache"):
        assert run() == "built"                   # refused, rebuilt and stored again
    assert any("corrupted entry" in r.getMessage() for r in caplog.records)
    assert run() == "disk"


def test_lowered_entry_with_dangling_buffer_name_is_rebuilt(opencl, tmp_path, monkeypatch):
    """A well-typed Lowered whose kernels name a buffer it does not have."""
    import dataclasses
    monkeypatch.setenv("POLYARRAY_CACHE_DIR", str(tmp_path))
    x = pa.placeholder("x", (4,), np.float32)
    clear_memory_cache()
    pa.compile(x + 1, target=opencl)
    [entry] = tmp_path.glob("opencl-*.pkl")
    head = len(C.FORMAT)
    _, value = pickle.loads(entry.read_bytes()[head + 64:])
    L = value["lowered"]
    k0 = dataclasses.replace(L.kernels[0], args=L.kernels[0].args + ("nowhere",))
    _rewrite(entry, {"lowered": dataclasses.replace(L, kernels=[k0, *L.kernels[1:]])})
    clear_memory_cache()
    prog = pa.compile(x + 1, target=opencl)
    assert prog._exe.compiled.origin == "built"
    np.testing.assert_array_equal(prog(x=np.ones(4, np.float32)), 2)


@pytest.mark.parametrize("value", [7, {"schedule": 3, "report": {}},
                                   {"schedule": {"k0": "not a schedule("}, "report": {}},
                                   {"schedule": {}, "report": {"kernels": {"k0": 1}}},
                                   {"schedule": {}, "report": {}},       # no "kernels"
                                   {"schedule": {}, "report": {"kernels": {"k0": {
                                       "chosen": "", "default": "",
                                       "candidates": [("s", "fast", 3)]}}}}])
def test_malformed_tune_entry_is_corrupt(value, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("POLYARRAY_CACHE_DIR", str(tmp_path))
    key = "t" * 64
    C.DiskCache("tune").put(key, value)
    path = C.DiskCache("tune").path(key)
    with caplog.at_level(logging.WARNING, logger="polyarray.cache"):
        assert C.DiskCache("tune").get(key) is None
    assert "corrupted entry" in caplog.text
    assert not os.path.exists(path)
    good = {"schedule": {"k0": "[WorkGroup(64)]"}, "report": {"kernels": {}}}
    C.DiskCache("tune").put(key, good)
    assert C.DiskCache("tune").get(key) == good


def test_validator_that_raises_means_corrupt(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("POLYARRAY_CACHE_DIR", str(tmp_path))
    C.DiskCache("unit").put("v" * 64, 5)
    picky = C.DiskCache("unit", valid=lambda v: v["needs"] > 0)
    with caplog.at_level(logging.WARNING, logger="polyarray.cache"):
        assert picky.get("v" * 64) is None
    assert picky.corrupt == 1 and "corrupted" in caplog.text


# --- buffers too big for the device: MemoryError naming the bytes ---

def _huge_output(n):
    x = pa.placeholder("x", (1,), np.float32)
    return x, pa.zeros((n,), np.float32) + x


@pytest.mark.parametrize("target", ["opencl", "cuda"])
@pytest.mark.parametrize("out", ["numpy", "device"])
def test_output_too_big_is_memory_error(target, out):
    _require(target)
    x, y = _huge_output(2**40)                             # 4 TiB
    prog = pa.compile(y, target=target, out=out)
    gc.collect()        # arrays of earlier tests in reference cycles (tracebacks)
    before = pa.memory_stats(target)["active_blocks"]
    for _ in range(2):                                     # same error every time
        with pytest.raises(MemoryError, match=r"could not allocate 4398046511104 bytes "
                                              r"\(4096\.00 GiB\) on the device"):
            prog(x=np.ones(1, np.float32))
    assert pa.memory_stats(target)["active_blocks"] == before
    small = pa.compile(_huge_output(1000)[1] * 2, target=target)
    np.testing.assert_array_equal(small(x=np.full(1, 3, np.float32)), np.full(1000, 6))


def test_temporary_too_big_frees_the_output(opencl):
    """The output is allocated before a temporary larger than the device can
    allocate at once fails: it is freed."""
    from polyarray.targets.opencl import select_device
    n = max(2**31, select_device()[1].global_mem_size // 4 + 1024)     # more than it has
    x = pa.placeholder("x", (1,), np.float32)
    y = pa.zeros((n,), np.float32) + x
    prog = pa.compile(pa.dot(y, y), target=opencl)
    assert any(b.role == "temp" and b.size == n
               for b in prog._exe.lowered.buffers.values())
    gc.collect()        # earlier tests' garbage is neither counted nor freed in between
    before = pa.memory_stats(opencl)["active_blocks"]
    with pytest.raises(MemoryError, match=f"could not allocate {4 * n} bytes"):
        prog(x=np.ones(1, np.float32))
    stats = pa.memory_stats(opencl)
    assert stats["active_blocks"] == before and stats["held_blocks"] == 0
    ok = pa.compile(pa.dot(x, x), target=opencl)
    np.testing.assert_allclose(ok(x=np.full(1, 3, np.float32)), 9)


# --- device-array bindings at an offset ---

@pytest.fixture
def queue(opencl):
    import pyopencl as cl
    from polyarray.targets.opencl import select_device
    ctx = select_device()[0]
    return cl.CommandQueue(ctx)


@pytest.mark.parametrize("out", ["numpy", "device"])
@pytest.mark.parametrize("start", [1, 3, 32, 33])     # 32 floats: an aligned offset
def test_offset_device_binding_gives_numpy_result(queue, start, out):
    import pyopencl.array as cla
    big = np.arange(200, dtype=np.float32) * 0.5
    dev = cla.to_device(queue, big)
    x = pa.placeholder("x", (100,), np.float32)
    prog = pa.compile(pa.sqrt(x) + x[::-1], target="opencl", out=out)
    want = np.sqrt(big[start:start + 100]) + big[start:start + 100][::-1]
    base = pa.memory_stats("opencl")["active_blocks"]
    for _ in range(3):
        got = prog(x=dev[start:start + 100])
        got = got.get() if out == "device" else got
        np.testing.assert_allclose(got, want, rtol=1e-6)
        del got
    assert pa.memory_stats("opencl")["active_blocks"] == base     # copies released
    np.testing.assert_array_equal(dev.get(), big)                # the source is untouched


def test_offset_device_binding_fed_back(queue):
    """A device output sliced at a misaligned offset and bound again."""
    x = pa.placeholder("x", (10,), np.int32)
    dev = pa.compile(x * 3, target="opencl", out="device")
    y = dev(x=np.arange(10, dtype=np.int32))
    prog = pa.compile(pa.placeholder("y", (7,), np.int32).sum(), target="opencl")
    assert prog(y=y[1:8]) == np.arange(10)[1:8].sum() * 3


def test_empty_device_binding_at_offset(queue):
    import pyopencl.array as cla
    dev = cla.to_device(queue, np.arange(100, dtype=np.float32))
    e = pa.placeholder("e", (0,), np.float32)
    prog = pa.compile(e + 1, target="opencl")
    for start in (3, 32):
        assert prog(e=dev[start:start]).shape == (0,)
    assert pa.compile(e.sum(), target="opencl")(e=dev[5:5]) == 0


# --- programs pickle and deep-copy: compiled again where they are loaded ---

def _round_trip(obj, how):
    import copy
    return copy.deepcopy(obj) if how == "deepcopy" else pickle.loads(pickle.dumps(obj))


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_program_round_trip_runs(target, how):
    """Outputs in their structure, captured data, options and the schedule
    survive; the loaded program computes what NumPy does."""
    x = pa.placeholder("x", (6, 5), np.float32)
    i = pa.placeholder("i", (3,), np.int64)
    data = np.linspace(-1, 1, 5, dtype=np.float32)
    outs = {"s": (pa.exp(x) * data).sum(axis=1), "g": x[i] - 1, "n": pa.argmax(x, axis=0)}
    first = pa.compile(outs, target=target)
    prog = first if target == "numpy" else pa.compile(outs, target=target,
                                                      schedule=first.schedule)
    loaded = _round_trip(prog, how)
    xv, iv = np.random.default_rng(0).standard_normal((6, 5)).astype(np.float32), \
        np.array([5, 0, 2])
    want = {"s": (np.exp(xv) * data).sum(axis=1), "g": xv[iv] - 1, "n": xv.argmax(axis=0)}
    got = loaded(x=xv, i=iv)
    assert list(got) == ["s", "g", "n"]
    for k in want:
        assert_same(got[k], want[k])
    assert loaded.target_name == target and loaded.placeholders.keys() == {"x", "i"}
    assert loaded.schedule == prog.schedule and loaded.source == prog.source
    assert [a.node for a in loaded.outputs.values()] == [a.node for a in outs.values()]
    with pytest.raises(IndexError, match="index 9 is out of bounds"):
        loaded(x=xv, i=np.array([9, 0, 0]))
    for structure in (outs["s"], [outs["g"]], (outs["g"], outs["n"])):
        again = _round_trip(pa.compile(structure, target=target), how)
        assert type(again.outputs) is type(structure)


def test_device_program_round_trip_keeps_out(device_target):
    x = pa.placeholder("x", (4,), np.float64)
    loaded = _round_trip(pa.compile(x * 2, target=device_target, out="device"), "pickle")
    r = loaded(x=np.arange(4.0))
    assert not isinstance(r, np.ndarray)
    assert_same(r.get(), np.arange(4.0) * 2)


def test_pickled_program_runs_in_another_process(target, tmp_path, monkeypatch):
    """Loaded where the custom kernels' functions were never registered,
    their C and NumPy references come with the program."""
    import subprocess
    import sys
    (tmp_path / "pickled_refs.py").write_text(
        "import numpy as np\n"
        "def fma(x, y):\n    return x * y + 1\n"
        "def l2(x, axis, keepdims):\n"
        "    return np.sqrt((x * x).sum(axis=axis, keepdims=keepdims))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import pickled_refs
    fma = pa.elementwise_kernel("float32 x, float32 y", "float32 z", "z = x * y + 1",
                                "pickled_fma", reference=pickled_refs.fma)
    l2 = pa.reduction_kernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0",
                             "pickled_l2", reference=pickled_refs.l2)
    x = pa.placeholder("x", (3, 4), np.float32)
    prog = pa.compile([l2(fma(x, x), axis=1), x.T + np.float32(0.5)], target=target)
    xv = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    want = prog(x=xv)
    (tmp_path / "prog.pkl").write_bytes(pickle.dumps(prog))
    code = ("import pickle, sys, numpy as np\n"
            f"prog = pickle.loads(open({str(tmp_path / 'prog.pkl')!r}, 'rb').read())\n"
            f"np.save(sys.argv[1], np.concatenate([r.ravel() for r in prog(x=np.arange(12, "
            "dtype=np.float32).reshape(3, 4) / 10)]))\n")
    from helpers import subprocess_env
    env = subprocess_env()
    env["PYTHONPATH"] = str(tmp_path) + os.pathsep + env["PYTHONPATH"]
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "got.npy")],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert_same(np.load(tmp_path / "got.npy"), np.concatenate([w.ravel() for w in want]))
    assert_same(want[0], np.sqrt(((xv * xv + 1) ** 2).sum(axis=1)))


def test_deep_dag_pickles_without_recursion():
    """A DAG crosses as a flat table: a 20 000-deep chain pickles, and loads
    as the same interned nodes."""
    x = pa.placeholder("x", (3,), np.float64)
    y = x
    for k in range(20000):
        y = y * 1.0001 if k % 2 else y + 1
    loaded = pickle.loads(pickle.dumps(y))
    assert loaded.node is y.node
    assert pickle.loads(pickle.dumps(y.node)) is y.node


def test_device_leaf_refuses_pickling():
    from polyarray.targets.foreign import CudaView
    view = CudaView(0x1000, (4,), np.float32, None, owner=None, library="torch")
    with pytest.raises(TypeError, match="cannot pickle another library's torch device "
                                        r"array of shape \(4,\) read in place"):
        pickle.dumps(view)


def _many_launches(x, w, xp=pa, steps=70):
    """A loop of reductions: a kernel per step."""
    for k in range(steps):
        x = x * 0.5 + xp.roll(x, 1) * (x * w).sum() * 1e-3
    return x, x.max()


@pytest.mark.parametrize("out", ["numpy", "device"])
def test_a_program_of_many_launches_called_again_keeps_each_result(target, out):
    """On CUDA, calls replay a CUDA graph of the program's
    launches over buffers it holds (``cuda_graphs.Replay``): each call's
    inputs are its own, and a device result stays what its call computed
    after later calls reuse the held buffers."""
    x = pa.placeholder("x", (300,), np.float64)
    w = pa.placeholder("w", (300,), np.float64)
    options = {} if target == "numpy" else {"out": out}
    prog = pa.compile(list(_many_launches(x, w)), target=target, **options)
    rng = np.random.default_rng(8)
    inputs = [(rng.random(300), rng.random(300)) for _ in range(4)]
    got = [prog(x=a, w=b) for a, b in inputs]
    for (a, b), g in zip(inputs, got):
        for gi, want in zip(g, _many_launches(a, b, np)):
            assert_same(np.asarray(gi.get() if hasattr(gi, "get") else gi), want)
    if target == "cuda":
        exe = prog._exe
        assert len(exe._launches) >= 64 and exe._replay is not None
