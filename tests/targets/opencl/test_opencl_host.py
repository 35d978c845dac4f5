"""Zero-copy host calls on OpenCL CPU devices (targets/opencl/host.py):
kernels read the host bindings and write the result arrays themselves.
The results must be what the copying path and NumPy give, for every kind of
binding and output the path treats apart."""
import numpy as np
import pytest

import polyarray as pa
from polyarray import targets
from helpers import assert_same

ok, why = targets.availability("opencl")
pytestmark = pytest.mark.skipif(not ok, reason=f"opencl: {why}")

N = 1 << 17         # 512 KiB of float32, 128 KiB of bool: over opencl_host.MIN_BYTES


def _program(**options):
    x = pa.placeholder("x", (N,), np.float32)
    s = pa.placeholder("s", (N,), np.float32)      # bound to a strided view
    k = pa.placeholder("k", (N,), np.int32)
    y = (x * 1.5 + 0.5) * x - s
    outputs = {"y": y, "again": y, "centred": y - pa.mean(y), "positive": x > 0,
               "x": x, "k3": k * 3 + 1, "total": pa.sum(k), "small": y[:8] * 2}
    return pa.compile(outputs, target="opencl", **options), outputs


def test_zero_copy_results_equal_copying_path_and_numpy(monkeypatch):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(N).astype(np.float32)
    s = rng.standard_normal(2 * N).astype(np.float32)[::2]     # not contiguous
    k = rng.integers(-1000, 1000, N).astype(np.int32)
    k.flags.writeable = False                                  # read-only binding
    bindings = dict(x=x, s=s, k=k)
    prog, outputs = _program()
    cpu = prog._exe._host is not None
    monkeypatch.setenv("POLYARRAY_OPENCL_ZERO_COPY", "0")
    copying, _ = _program()
    assert copying._exe._host is None
    ref = pa.compile(outputs, target="numpy")(**bindings)
    first = prog(**bindings)
    kept = {name: v.copy() for name, v in first.items()}
    second = prog(**bindings)           # a second call writes arrays of its own
    copied = copying(**bindings)
    for name in outputs:
        assert_same(first[name], ref[name], name)
        assert_same(copied[name], ref[name], name)
        np.testing.assert_array_equal(first[name], kept[name], err_msg=name)
        np.testing.assert_array_equal(second[name], first[name], err_msg=name)
        assert not np.shares_memory(first[name], second[name]), name
        for b in (x, s, k):
            assert not np.shares_memory(first[name], b), name
    assert first["y"] is not first["again"]
    assert first["positive"].dtype == np.bool_
    if cpu:         # a CPU device: the large results are the arrays the kernels wrote
        assert all(first[n].flags.c_contiguous and first[n].flags.writeable
                   for n in outputs)


def test_empty_and_device_outputs_unchanged():
    x = pa.placeholder("x", (N,), np.float32)
    dev = pa.compile(x * 2, target="opencl", out="device")
    host = np.arange(N, dtype=np.float32)
    np.testing.assert_array_equal(dev(x=host).get(), host * 2)
    e = pa.placeholder("e", (0, 4), np.float32)
    got = pa.compile(e + 1, target="opencl")(e=np.zeros((0, 4), np.float32))
    assert got.shape == (0, 4)
