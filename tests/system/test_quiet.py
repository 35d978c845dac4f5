"""Quiet, logged compiles: a successful compile prints nothing on
any target, even under ``warnings.simplefilter("error")``; what loopy and
the device compilers say goes to the ``polyarray`` logger; a failed device
build says what the compiler said; ``python -m polyarray`` describes the
environment."""
import logging
import os
import re
import shutil
import subprocess
import sys
import types
import uuid
import warnings

import numpy as np
import pytest

import polyarray as pa
import polyarray.targets.device_common as dc
from helpers import assert_same, subprocess_env
from polyarray import targets
from polyarray.codegen import logs

OPENCL_OK, OPENCL_WHY = targets.availability("opencl")
needs_opencl = pytest.mark.skipif(not OPENCL_OK, reason=f"opencl: {OPENCL_WHY}")
NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc (the CUDA compiler) is not on PATH")


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """An empty compile cache: the test lowers and builds for real."""
    monkeypatch.setenv("POLYARRAY_CACHE_DIR", str(tmp_path))
    dc.clear_memory_cache()
    yield tmp_path
    dc.clear_memory_cache()


def _programs():
    """One program of the usual kinds: elementwise, row and column sums,
    argmax, a matrix product, a concatenation (one compile)."""
    rng = np.random.default_rng(16)
    x = pa.placeholder("x", (40, 33), np.float32)
    y = pa.placeholder("y", (33, 7), np.float32)
    xv = rng.standard_normal((40, 33)).astype(np.float32)
    yv = rng.standard_normal((33, 7)).astype(np.float32)
    outs = {"ew": pa.exp(x) * 2.0, "rows": x.sum(axis=1), "cols": x.max(axis=0),
            "argmax": pa.argmax(x, axis=1), "mm": x @ y, "cat": pa.concatenate([x, x * 2.0])}
    want = {"ew": np.exp(xv) * np.float32(2), "rows": xv.sum(axis=1), "cols": xv.max(axis=0),
            "argmax": np.argmax(xv, axis=1), "mm": xv @ yv,
            "cat": np.concatenate([xv, xv * np.float32(2)])}
    return outs, {"x": xv, "y": yv}, want


def test_compiling_and_running_prints_nothing(target, fresh_cache, monkeypatch, capsys, caplog):
    outs, binds, want = _programs()
    monkeypatch.setattr(logs, "SLOW_COMPILE_S", 0.0)    # every compile is "slow": INFO
    with caplog.at_level(logging.INFO, logger="polyarray"), warnings.catch_warnings():
        warnings.simplefilter("error")
        got = pa.compile(outs, target=target)(**binds)
    assert capsys.readouterr() == ("", "")
    for k in want:
        assert_same(got[k], want[k], k)
    if target != "numpy":       # the compile's stages (at DEBUG below SLOW_COMPILE_S)
        assert any(r.name == "polyarray.compile" and r.levelno == logging.INFO
                   and "compiled" in r.getMessage() and "codegen" in r.getMessage()
                   for r in caplog.records), caplog.text


def test_cuda_codegen_prints_nothing(fresh_cache, capsys):
    pytest.importorskip("loopy")
    outs, _, _ = _programs()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        source = pa.compile(outs, target="cuda").source
    assert "__global__" in source and capsys.readouterr() == ("", "")


def test_dependency_warnings_are_logged_ours_stay_warnings(capsys, caplog):
    log = logging.getLogger("polyarray.test")
    elsewhere = os.path.join(os.sep, "site-packages", "loopy", "x.py")
    with caplog.at_level(logging.DEBUG, logger="polyarray"), warnings.catch_warnings():
        warnings.simplefilter("error")
        with logs.routed_warnings(log, "lowering"):
            for _ in range(3):
                warnings.warn_explicit("a loopy remark", UserWarning, elsewhere, 1)
    assert [r.getMessage() for r in caplog.records] == [
        "lowering: UserWarning (3 times): a loopy remark"]
    with pytest.warns(DeprecationWarning, match="our own"):
        with logs.routed_warnings(log, "lowering"):
            warnings.warn_explicit("our own", DeprecationWarning, logs.__file__, 1)
    # warnings outside the block keep the user's filters
    with pytest.warns(UserWarning, match="outside"):
        warnings.warn("outside")
    assert capsys.readouterr() == ("", "")


@needs_opencl
def test_opencl_compiler_output_is_logged_not_warned(capsys, caplog):
    import pyopencl as cl
    from polyarray.targets.opencl import OpenCLTarget, select_device
    ctx, dev, _ = select_device()
    tag = f"polyarray-test-{uuid.uuid4().hex}"      # a new source: no binary cache hit
    src = f"#warning {tag}\n__kernel void f(__global float *a) {{ a[0] = 1.0f; }}\n"
    with caplog.at_level(logging.DEBUG, logger="polyarray"), warnings.catch_warnings():
        warnings.simplefilter("error")
        prg = OpenCLTarget._build(ctx, src)
    assert capsys.readouterr() == ("", "")
    if tag in prg.get_build_info(dev, cl.program_build_info.LOG):     # the driver said it
        assert tag in caplog.text


def _fake_pycuda(monkeypatch, tmp_path):
    """pycuda's module loader without a GPU (the cubin comes from the real
    compiler: nvcc here, NVRTC where its library is), and a cache directory
    of the test's own, so that every build compiles."""
    class Module:       # a loaded cubin: its kernels' names, as the driver reads them
        def __init__(self, cubin):
            self.cubin = cubin

        def get_function(self, name):
            assert name.encode() in self.cubin, name
            return ("function", name)

    pkg = types.ModuleType("pycuda")
    driver = types.SimpleNamespace(module_from_buffer=Module)
    monkeypatch.setitem(sys.modules, "pycuda", pkg)
    monkeypatch.setitem(sys.modules, "pycuda.driver", driver)
    monkeypatch.setenv("POLYARRAY_CACHE_DIR", str(tmp_path))
    from polyarray.targets.cache import clear_memory_layers
    clear_memory_layers()


@needs_nvcc
def test_nvcc_output_is_logged_and_a_failed_build_says_why(monkeypatch, capsys, caplog,
                                                           tmp_path):
    from polyarray.targets.cuda import build_module
    _fake_pycuda(monkeypatch, tmp_path)
    unused = ("extern \"C\" __global__ void f(float *a)\n"
              "{\n  {\n    int const j_outer = 0;\n\n    a[0] = 1.0f;\n  }\n}\n")
    with caplog.at_level(logging.DEBUG, logger="polyarray"), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert build_module(unused, "sm_90").get_function("f") == ("function", "f")
        said = [r.getMessage() for r in caplog.records
                if re.match("(nvcc|nvrtc):", r.getMessage())]
        assert not said         # the flags in force silence loopy's two harmless remarks
        assert build_module("#warning polyarray-test\n" + unused, "sm_90").get_function("f")
    assert capsys.readouterr() == ("", "")
    said = [r.getMessage() for r in caplog.records if re.match("(nvcc|nvrtc):", r.getMessage())]
    assert len(said) == 1 and "polyarray-test" in said[0]
    with pytest.raises(targets.BuildError,
                       match=r"(?s)(nvcc|nvrtc) could not compile.*undefined"):
        build_module(unused.replace("1.0f", "undefined_name"), "sm_90")


@needs_nvcc
def test_a_program_of_several_kernels_is_built_by_concurrent_nvcc_runs(monkeypatch, caplog,
                                                                        tmp_path):
    """Each generated kernel is its own nvcc run (the prelude plus the
    kernel), in threads; a raw kernel's program is built whole, and a
    failure in any piece is the same BuildError."""
    from polyarray.targets.cuda.build import build_module, split_kernels
    _fake_pycuda(monkeypatch, tmp_path)
    x = pa.placeholder("x", (100, 30), np.float32)
    prog = pa.compile([pa.exp(x) / pa.exp(x).sum(axis=1, keepdims=True), (x * 2).sum()],
                      target="cuda")
    names = list(prog.kernels)
    pieces = split_kernels(prog.source, pieces=8)
    assert sorted(n for ns, _ in pieces for n in ns) == sorted(names) and len(names) >= 2
    for ns, text in pieces:         # each piece holds its kernels and no other
        assert [k for k in names if f" {k}(" in text] == list(ns)
    assert len(split_kernels(prog.source, pieces=1)) == 1
    two = split_kernels(prog.source, pieces=2)      # no more pieces than threads
    assert len(two) == 2 and sorted(n for ns, _ in two for n in ns) == sorted(names)
    with caplog.at_level(logging.INFO, logger="polyarray"), warnings.catch_warnings():
        warnings.simplefilter("error")
        mod = build_module(prog.source, "sm_90")     # in MAX_BUILD_THREADS pieces
    assert [mod.get_function(n) for n in names] == [("function", n) for n in names]
    bad = prog.source.replace(f" {names[-1]}(", f" {names[-1]}(undefined_t q, ")
    with pytest.raises(targets.BuildError,
                       match=r"(?s)(nvcc|nvrtc) could not compile.*undefined_t"):
        build_module(bad, "sm_90")
    raw = pa.raw_kernel('extern "C" __global__ void twice(float *y, const float *x, int n)'
                        '{ int i = threadIdx.x; if (i < n) y[i] = 2 * x[i]; }', "twice",
                        outputs=[((30,), np.float32)], grid=(1,), block=(32,))
    both = pa.compile([raw(x[0], np.int32(30))[0], *prog.outputs], target="cuda")
    assert len(both.kernels) > len(names) and len(split_kernels(both.source)) == 1


def test_python_m_polyarray_prints_the_environment():
    r = subprocess.run([sys.executable, "-m", "polyarray"], capture_output=True, text=True,
                       env=subprocess_env(), timeout=300)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    for line in ("polyarray:", "python:", "numpy:", "loopy:", "targets (best first):",
                 "  numpy   available", "default target:", "cache directory:"):
        assert line in r.stdout, r.stdout
    for name in targets.REGISTRY:
        ok, reason = targets.availability(name)
        assert f"  {name:<8}{'available' if ok else 'unavailable: ' + reason}" in r.stdout
    assert "OpenCL platforms" in r.stdout or "OpenCL:" in r.stdout
    from polyarray.inspect import environment
    assert environment.environment_info().splitlines()[0] == r.stdout.splitlines()[0]
