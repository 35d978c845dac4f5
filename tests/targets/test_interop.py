"""Zero-copy interop: other libraries' CUDA arrays in and out of
the CUDA target, pointer-checked, and DLPack's machinery on the host.

The GPU tests skip where there is no CUDA device, and per library where it
does not import (the skip says which and why)."""
from __future__ import annotations

import gc
import importlib
import logging
import os
import sys

import numpy as np
import pytest

import polyarray as pa
from polyarray.targets import foreign
from helpers import assert_same

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")   # JAX shares the GPU


def _cuda_ok():
    ok, why = pa.targets.availability("cuda")
    return ok, why


def _lib(name):
    ok, why = _cuda_ok()
    if not ok:
        pytest.skip(f"no CUDA device: {why}")
    try:
        return importlib.import_module(name)
    except Exception as e:      # noqa: BLE001  (numba-cuda fails on NumPy 2.5)
        pytest.skip(f"{name} does not import here: {type(e).__name__}: {e}")


# -- host side: DLPack read through cuda-core --------------------------------

class _Exporter:
    """A host array exported through DLPack (CPU device), by NumPy."""

    def __init__(self, arr):
        self.arr = arr

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        return self.arr.__dlpack__(stream=stream, max_version=max_version,
                                   dl_device=dl_device, copy=copy)

    def __dlpack_device__(self):
        return (foreign.CPU, 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint64, np.bool_])
def test_dlpack_producers_are_read_in_place_and_released(dtype):
    """A DLPack producer read as a ``CudaView`` (cuda-core's
    ``StridedMemoryView`` reads the capsule; a host producer stands for a
    device one here): the same pointer, shape, dtype and byte strides, and
    the producer's deleter runs when the view is gone."""
    pytest.importorskip("cuda.core", reason="cuda-core (DLPack capsules) is not installed")
    a = (np.arange(24).reshape(4, 6) % 3).astype(dtype)
    for src in (a, a[:, ::2], a.T, a[1:, 2:]):
        held = sys.getrefcount(src)
        view = foreign.dlpack_view(src, "numpy")
        assert (view.ptr, view.shape, view.dtype, view.strides) == \
            (src.ctypes.data, src.shape, src.dtype, src.strides)
        assert view.c_contiguous == src.flags.c_contiguous and view.library == "numpy"
        assert sys.getrefcount(src) > held                  # the capsule holds it
        del view                                            # (no cycle: no collection needed)
        assert sys.getrefcount(src) == held                 # released
    c = np.arange(3, dtype=np.complex64) * (1 + 2j)     # complex: NumPy's layout, read too
    view = foreign.dlpack_view(c, "numpy")
    assert (view.ptr, view.shape, view.dtype) == (c.ctypes.data, c.shape, c.dtype)


def test_without_cuda_core_a_dlpack_array_is_refused_naming_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "cuda.core.utils", None)
    with pytest.raises(ImportError, match=r"needs NVIDIA's cuda-core .*pip install cuda-core"):
        foreign.dlpack_view(np.arange(3.0), "numpy")
    monkeypatch.setitem(sys.modules, "cuda.bindings.driver", None)
    with pytest.raises(ImportError, match=r"need NVIDIA's cuda-bindings .*pip install "
                                          "cuda-bindings"):
        foreign.wait_for_stream(7)


class _FakeCuda:
    """Looks like another library's CUDA array (no memory behind it)."""
    __module__ = "fakelib"
    shape, dtype = (3,), np.dtype(np.float32)

    @property
    def __cuda_array_interface__(self):
        return {"shape": (3,), "typestr": "<f4", "data": (0xdead000, False), "version": 3}


@pytest.mark.parametrize("name", ["opencl"])
def test_hosts_targets_refuse_cuda_arrays_clearly(name):
    ok, why = pa.targets.availability(name)
    if not ok:
        pytest.skip(f"{name}: {why}")
    x = pa.placeholder("x", (3,), np.float32)
    with pytest.raises(TypeError, match="fakelib CUDA array cannot be bound on the opencl"):
        pa.compile(x + 1, target=name)(x=_FakeCuda())


@pytest.mark.parametrize("copy", [None, False, True])
def test_from_dlpack_of_host_data_as_numpys(target, copy):
    """copy=None and False reuse the memory, as NumPy's view does: each call
    reads it as it is then (strided too); copy=True reads it once."""
    src = np.arange(12.0).reshape(3, 4)
    for x, producer in ((src, src), (src[:, ::2], _Exporter(src[:, ::2]))):
        with pa.target(target):
            y = pa.from_dlpack(producer, copy=copy)
            want = np.from_dlpack(x, copy=copy)
            prog = pa.compile(y * 2, target=target)
            assert_same(prog(), want * 2)
            x[0, 0] += 100
            assert_same(prog(), want * 2)
            assert_same((y + 0).evaluate(), want)
            src[0, 0] = 0.0


def test_from_dlpack_device_as_numpys(target):
    """None, "cpu" and the default target's device are accepted; another
    device, or one that is not a device, is a ValueError (NumPy refuses
    anything but "cpu")."""
    x = np.arange(4.0)
    other = "numpy" if target != "numpy" else "opencl"
    with pa.target(target):
        for device in (None, "cpu", pa.Device(target), target,
                       pa.__array_namespace_info__().default_device()):
            for copy in (None, False, True):
                assert_same(pa.from_dlpack(x, device=device, copy=copy).evaluate(), x)
        with pytest.raises(ValueError, match=f"pa.from_dlpack: a lazy array is computed "
                                             f"on the target it is evaluated on "
                                             f"\\('{target}' here\\); to compute on '{other}'"):
            pa.from_dlpack(x, device=pa.Device(other))
        for bad in ("gpu", 1, (foreign.CPU, 0)):
            with pytest.raises(ValueError, match=f"pa.from_dlpack: device {bad!r} is not "
                                                 "understood".replace("(", "\\(")
                                                 .replace(")", "\\)")):
                pa.from_dlpack(x, device=bad)
        with pytest.raises(ValueError, match="copy must be None, True or False"):
            pa.from_dlpack(x, copy="yes")


def test_from_dlpack_of_a_cuda_array_to_the_host_needs_a_copy():
    with pytest.raises(BufferError, match="device='cpu' needs a copy, which copy=False "
                                          "forbids"):
        pa.from_dlpack(_FakeCuda(), device="cpu", copy=False)


def test_positional_and_python_bindings(target):
    x, s = pa.placeholder("x", (3,), np.float32), pa.placeholder("s", (), np.int32)
    prog = pa.compile(x * s, target=target)
    assert list(prog.placeholders) == ["x", "s"]
    assert_same(prog([1, 2, 3], 2), np.float32([1, 2, 3]) * np.int32(2))
    assert_same(prog(np.float32([1, 2, 3]), s=3), np.float32([1, 2, 3]) * np.int32(3))
    with pytest.raises(TypeError, match="'s' has the wrong dtype: expected int32, got float64"):
        prog([1, 2, 3], 2.5)                    # not an integer: refused, as before
    with pytest.raises(TypeError, match="expected float32, got float64"):
        prog([0.1, 2, 3], 1)                    # 0.1 is not a float32
    with pytest.raises(TypeError, match="bound twice"):
        prog([1, 2, 3], x=[1, 2, 3])
    with pytest.raises(TypeError, match="takes 2 positional"):
        prog([1, 2, 3], 1, 2)


# -- the GPU: each library in and out, pointer-checked ----------------------

def _make(lib, host):
    if lib == "torch":
        import torch
        return torch.as_tensor(host, device="cuda")
    if lib == "cupy":
        import cupy
        return cupy.asarray(host)
    if lib == "jax":
        import jax
        import jax.numpy as jnp
        return jax.device_put(jnp.asarray(host), jax.devices("gpu")[0])
    if lib == "pycuda":
        import pycuda.gpuarray as ga
        return ga.to_gpu(host)
    if lib == "numba":
        from numba import cuda
        return cuda.to_device(host)


def _pointer(lib, arr):
    if lib == "torch":
        return arr.data_ptr()
    if lib == "jax":
        return arr.unsafe_buffer_pointer()
    if lib == "pycuda":
        return int(arr.gpudata)
    return arr.__cuda_array_interface__["data"][0]


def _to_host(lib, arr):
    if lib == "torch":
        return arr.cpu().numpy()
    if lib == "pycuda":
        return arr.get()
    if lib == "numba":
        return arr.copy_to_host()
    return np.asarray(arr) if lib == "jax" else arr.get()


IMPORT = {"torch": "torch", "cupy": "cupy", "jax": "jax", "pycuda": "pycuda.gpuarray",
          "numba": "numba.cuda"}


@pytest.mark.parametrize("lib", sorted(IMPORT))
def test_cuda_arrays_bind_in_place_and_results_export_in_place(lib):
    _lib(IMPORT[lib])
    rng = np.random.default_rng(0)
    host = rng.standard_normal((64, 33)).astype(np.float32)
    dev = _make(lib, host)
    x = pa.placeholder("x", (64, 33), np.float32)
    prog = pa.compile(pa.exp(x) * 2.0, target="cuda", out="device")
    view = prog._target.import_binding(dev)
    bound = view if isinstance(view, foreign.CudaView) else None
    if lib != "pycuda":
        assert bound is not None and bound.ptr == _pointer(lib, dev)     # read in place
    out = prog(x=dev)
    assert_same(out.get(), np.exp(host) * np.float32(2))
    ptr = int(out.gpudata)
    # out: every library present takes the result without a copy
    exports = {}
    if importlib.util.find_spec("torch"):
        import torch
        exports["torch"] = (torch.from_dlpack(out), lambda t: t.data_ptr())
    if importlib.util.find_spec("cupy"):
        import cupy
        exports["cupy"] = (cupy.from_dlpack(out), lambda a: a.data.ptr)
        exports["cupy.asarray"] = (cupy.asarray(out), lambda a: a.data.ptr)
    if importlib.util.find_spec("jax"):
        import jax.dlpack
        exports["jax"] = (jax.dlpack.from_dlpack(out), lambda a: a.unsafe_buffer_pointer())
    try:
        from numba import cuda as numba_cuda
        exports["numba"] = (numba_cuda.as_cuda_array(out),
                            lambda a: a.__cuda_array_interface__["data"][0])
    except Exception:       # noqa: BLE001  (numba-cuda does not import everywhere)
        pass
    host_of = {"torch": lambda t: t.cpu().numpy(), "numba": lambda a: a.copy_to_host(),
               "cupy": lambda a: a.get(), "cupy.asarray": lambda a: a.get(),
               "jax": np.asarray}
    for name, (arr, pointer) in exports.items():
        assert pointer(arr) == ptr, name
        np.testing.assert_array_equal(host_of[name](arr), out.get(), err_msg=name)


def test_a_dlpack_export_keeps_the_result_alive_until_the_consumer_lets_it_go():
    """The capsule (cuda-core's, over a Buffer that owns the result) keeps
    the device result alive: after ``del out`` the consumer still reads
    it; when the consumer, or a capsule never consumed, is gone, so is the
    result.  Old (unversioned) and DLPack 1.x (versioned) capsules both."""
    import weakref
    torch = _lib("torch")
    x = pa.placeholder("x", (1000,), np.float32)
    prog = pa.compile(x * 2.0, target="cuda", out="device")
    xv = np.arange(1000, dtype=np.float32)
    for consume in (torch.from_dlpack, lambda r: r.__dlpack__(),
                    lambda r: r.__dlpack__(max_version=(1, 0))):
        out = prog(x=xv)
        gone = weakref.ref(out)
        held = consume(out)
        del out
        gc.collect()
        assert gone() is not None
        if isinstance(held, torch.Tensor):
            np.testing.assert_array_equal(held.cpu().numpy(), xv * 2)
        del held
        gc.collect()
        assert gone() is None


@pytest.mark.parametrize("lib", ["torch", "cupy"])
def test_strided_cuda_inputs_are_copied_once_and_logged(lib, caplog):
    _lib(lib)
    host = np.arange(12 * 7, dtype=np.float32).reshape(12, 7)
    dev = _make(lib, host)
    x = pa.placeholder("x", (7, 12), np.float32)
    prog = pa.compile(x + 1.0, target="cuda")
    with caplog.at_level(logging.INFO, logger="polyarray.bindings"):
        assert_same(prog(x=dev.T), host.T + 1)
    assert "copied once" in caplog.text
    y = pa.placeholder("y", (3, 7), np.float32)
    assert_same(pa.compile(y * 2.0, target="cuda")(y=dev[::4]), host[::4] * 2)
    if lib == "cupy":                               # negative strides (torch has none)
        z = pa.placeholder("z", (4, 4), np.float32)
        assert_same(pa.compile(z - 1.0, target="cuda")(z=dev[::-3, 5:1:-1]),
                    host[::-3, 5:1:-1] - 1)
        b = pa.placeholder("b", (6, 7), np.bool_)
        mask = dev > 20
        assert_same(pa.compile(~b, target="cuda")(b=mask[::2]), ~(host > 20)[::2])


def test_cuda_bindings_are_checked_as_strictly_as_numpy():
    torch = _lib("torch")
    x = pa.placeholder("x", (4,), np.float32)
    prog = pa.compile(x + 1.0, target="cuda")
    with pytest.raises(TypeError, match="'x' has the wrong dtype: expected float32, got float64"):
        prog(x=torch.zeros(4, dtype=torch.float64, device="cuda"))
    with pytest.raises(ValueError, match=r"expected \(4,\), got \(5,\)"):
        prog(x=torch.zeros(5, device="cuda"))


def test_asarray_of_a_cuda_array_is_a_device_leaf():
    torch = _lib("torch")
    t = torch.arange(6, dtype=torch.float32, device="cuda")
    leaf = pa.asarray(t)
    prog = pa.compile(leaf * 2.0, target="cuda")
    assert_same(prog(), np.arange(6, dtype=np.float32) * 2)
    t += 1                                          # a view: in-place changes are seen
    assert_same(prog(), (np.arange(6, dtype=np.float32) + 1) * 2)
    assert_same(pa.compile(leaf * 2.0, target="numpy")(), (np.arange(6, dtype=np.float32) + 1) * 2)


def test_jit_with_torch_weights_runs_with_no_host_transfer(monkeypatch):
    torch = _lib("torch")
    import pycuda.driver as drv

    def step(X, y, w):
        p = 1.0 / (1.0 + np.exp(-(X @ w)))
        return w - 0.1 * (X.T @ (p - y)) / X.shape[0]
    rng = np.random.default_rng(1)
    Xh = rng.standard_normal((400, 784)).astype(np.float32)
    yh = (rng.random(400) < 0.5).astype(np.float32)
    X, y = torch.from_numpy(Xh).cuda(), torch.from_numpy(yh).cuda()
    w = torch.zeros(784, device="cuda")
    f = pa.jit(step)
    w = f(X, y, w)                                  # traces and builds
    assert isinstance(w, torch.Tensor) and w.is_cuda
    wh = step(Xh, yh, np.zeros(784, np.float32))

    def no_transfer(*a, **k):
        raise AssertionError("a host transfer in the loop")
    for name in ("memcpy_htod", "memcpy_dtoh", "memcpy_htod_async", "memcpy_dtoh_async"):
        monkeypatch.setattr(drv, name, no_transfer)
    for _ in range(5):
        w = f(X, y, w)
        wh = step(Xh, yh, wh)
    monkeypatch.undo()
    assert_same(w.cpu().numpy(), wh)
    assert len(f.programs) == 1


def test_dlpack_export_orders_a_consumer_stream_after_our_work():
    torch = _lib("torch")
    n = 1 << 24
    x = pa.placeholder("x", (n,), np.float32)
    prog = pa.compile(pa.sqrt(pa.exp(pa.sin(x) ** 2) + 1.0), target="cuda", out="device")
    xs = torch.rand(n, device="cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        for _ in range(3):
            out = prog(x=xs)
            t = torch.from_dlpack(out)              # side stream waits for our kernels
            total = t.sum()
    side.synchronize()
    expect = torch.sqrt(torch.exp(torch.sin(xs) ** 2) + 1.0).sum()
    assert abs(total.item() - expect.item()) <= 1e-4 * abs(expect.item())


_FIRST_IN_A_THREAD = """
import threading, numpy as np, polyarray as pa
x = pa.placeholder("x", (1000,), np.float32)
xv = np.arange(1000, dtype=np.float32)
got = []
def work():
    got.append(pa.compile(x * 2.0, target="cuda")(x=xv))
t = threading.Thread(target=work)       # CUDA's first use: a worker's task thread
t.start(); t.join()
got.append(pa.compile(x + 1.0, target="cuda")(x=xv))      # then the main thread
stop = threading.Event()
def stay():
    got.append(pa.compile(x - 1.0, target="cuda")(x=xv))
    stop.wait()
threading.Thread(target=stay, daemon=True).start()        # alive at exit
while len(got) < 3:
    pass
assert np.array_equal(got[0], xv * 2) and np.array_equal(got[1], xv + 1)
assert np.array_equal(got[2], xv - 1)
print("ok")
"""


def test_cuda_first_used_in_another_thread_leaves_a_clean_exit():
    """pycuda aborts the process when a thread ends with a context on its
    stack, and ``autoprimaryctx`` pushes the context on whichever thread
    imports it: a dask worker's task thread.  A benchmark's worker printed
    "PyCUDA ERROR: The context stack was not empty upon module cleanup" and
    aborted.  Here CUDA is first used in a thread that ends, then in the
    main thread, then in a daemon thread alive at exit: a clean exit."""
    import subprocess
    import sys
    from helpers import subprocess_env
    ok, why = _cuda_ok()
    if not ok:
        pytest.skip(f"no CUDA device: {why}")
    r = subprocess.run([sys.executable, "-c", _FIRST_IN_A_THREAD], capture_output=True,
                       text=True, env=subprocess_env(), timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]
    assert "PyCUDA ERROR" not in r.stderr and "Exception ignored" not in r.stderr, r.stderr


def test_a_cuda_program_runs_in_threads_other_than_its_first():
    """pycuda's contexts are per thread: a program compiled and first run in
    this thread, then called (general path and generated launcher) from new
    threads, one after another, as a dask worker's tasks are; a thread that
    never touched CUDA made the first allocation fail with "invalid device
    context".  (Concurrent calls from several threads are not supported:
    pycuda's memory pool is not thread-safe; pa.dask takes turns.)"""
    import threading
    ok, why = _cuda_ok()
    if not ok:
        pytest.skip(f"no CUDA device: {why}")
    x = pa.placeholder("x", (1000,), np.float32)
    xv = np.arange(1000, dtype=np.float32)
    host = pa.compile(x * 2.0 + 1.0, target="cuda")
    dev = pa.compile(x * 3.0, target="cuda", out="device")
    assert_same(host(x=xv), xv * 2 + 1)
    xd = dev(x=xv)                  # a device binding: the generated launcher's path
    got = {}

    def work(k):
        got[k] = (host(x=xv), dev(x=xd).get(), pa.compile(x - 1.0, target="cuda")(x=xv))

    for k in range(3):      # one at a time: a program is not for concurrent calls
        t = threading.Thread(target=work, args=(k,))
        t.start()
        t.join()
    assert sorted(got) == [0, 1, 2]
    for a, b, c in got.values():
        assert_same(a, xv * 2 + 1)
        assert_same(b, xv * 9)
        assert_same(c, xv - 1)


def test_pyopencl_arrays_on_polyarrays_queue_bind_in_place():
    """Arrays made on ``pa.opencl_queue()`` are read by OpenCL programs where
    they are (a later change on the device is seen), one of another context
    is refused naming the cause, and ``pa.asarray`` copies one to the host,
    as its docstring says."""
    from polyarray import targets
    ok, reason = targets.availability("opencl")
    if not ok:
        pytest.skip(f"opencl: {reason}")
    import pyopencl as cl
    import pyopencl.array as cla
    q = pa.opencl_queue()
    assert pa.opencl_context() == q.context
    d = cla.to_device(q, np.arange(6.0))
    x = pa.placeholder("x", (6,), np.float64)
    prog = pa.compile(x * 2, target="opencl")
    assert_same(np.asarray(prog(x=d)), np.arange(6.0) * 2)
    d.fill(1.5)                      # on the device: the next call reads it
    assert_same(np.asarray(prog(x=d)), np.full(6, 3.0))
    other = cla.to_device(cl.CommandQueue(cl.Context([q.device])), np.arange(6.0))
    with pytest.raises(TypeError, match="another OpenCL context"):
        prog(x=other)
    host = pa.asarray(d)
    d.fill(7.0)                      # a copy: the array made from it keeps 1.5
    assert_same(np.asarray(host), np.full(6, 1.5))


def test_the_users_own_opencl_queue_binds_its_arrays_in_place():
    """``pa.set_opencl_queue(q)``: programs compiled afterwards run on the
    user's own context, so its arrays bind in place (a later change on the
    device is seen) and device results live there; the same DAG compiled on
    polyarray's queue before keeps its own kernels (the memory cache is per
    context); ``None`` goes back; a wrong argument is refused, state kept."""
    from polyarray import targets
    ok, reason = targets.availability("opencl")
    if not ok:
        pytest.skip(f"opencl: {reason}")
    import pyopencl as cl
    import pyopencl.array as cla
    ours = pa.opencl_queue()
    x = pa.placeholder("x", (6,), np.float64)
    before = pa.compile(x * 3 + 1, target="opencl")
    mine = cl.CommandQueue(cl.Context([ours.device]))
    d = cla.to_device(mine, np.arange(6.0))
    with pytest.raises(TypeError, match="pa.set_opencl_queue"):
        before(x=d)
    with pytest.raises(TypeError, match="pyopencl.CommandQueue"):
        pa.set_opencl_queue(mine.context)
    assert pa.opencl_queue() is ours
    pa.set_opencl_queue(mine)
    try:
        assert pa.opencl_queue() is mine and pa.opencl_context() == mine.context
        prog = pa.compile(x * 3 + 1, target="opencl", out="device")
        r = prog(x=d)
        assert r.context == mine.context
        assert_same(r.get(), np.arange(6.0) * 3 + 1)
        d.fill(2.0)                  # on the device: the next call reads it
        assert_same(prog(x=d).get(), np.full(6, 7.0))
        assert_same(np.asarray(before(x=np.arange(6.0))), np.arange(6.0) * 3 + 1)
    finally:
        pa.set_opencl_queue(None)
    assert pa.opencl_queue() is ours
    again = pa.compile(x * 3 + 1, target="opencl", out="device")
    assert again(x=np.arange(6.0)).context == ours.context
