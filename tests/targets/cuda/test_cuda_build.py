"""The CUDA build (targets/cuda/compiler.py, targets/cuda/build.py): cubins
from NVRTC or nvcc, cached on disk by us, and large math helpers compiled
once per source (codegen/emit/noinline.py).  Without a GPU the cubins come from
nvcc and only the module loader is faked; on a GPU the programs run."""
import os

import numpy as np
import pytest

import polyarray as pa
from helpers import assert_same
from polyarray import targets
from polyarray.targets.cuda import compiler as cuda_compiler
from test_quiet import NVCC, _fake_pycuda, needs_nvcc

SOURCE = ('extern "C" __global__ void twice(float *y, const float *x, int n)\n'
          "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2 * x[i]; }\n")


def _any_compiler():
    return cuda_compiler._nvrtc() is not None or NVCC is not None


needs_compiler = pytest.mark.skipif(not _any_compiler(),
                                    reason="no CUDA compiler (neither NVRTC nor nvcc)")


@needs_compiler
def test_a_cubin_is_compiled_once_and_then_read_from_disk(monkeypatch, tmp_path, caplog):
    from polyarray.targets.cache import clear_memory_layers
    from polyarray.targets.cuda.build import build_module
    _fake_pycuda(monkeypatch, tmp_path)
    built = []
    comp = cuda_compiler.compiler_for(SOURCE)
    real = comp.compile
    monkeypatch.setattr(comp, "compile", lambda *a: built.append(a[1]) or real(*a))
    assert build_module(SOURCE, "sm_90").get_function("twice") == ("function", "twice")
    assert build_module(SOURCE, "sm_80").get_function("twice")
    assert built == ["sm_90", "sm_80"]
    entries = sorted(f for f in os.listdir(tmp_path) if f.startswith("cubin-"))
    assert len(entries) == 2
    clear_memory_layers()           # a new process: only the disk is left
    assert build_module(SOURCE, "sm_90").get_function("twice")
    assert built == ["sm_90", "sm_80"]
    with open(tmp_path / entries[0], "r+b") as f:       # a torn entry is rebuilt
        f.truncate(100)
    clear_memory_layers()
    with caplog.at_level("WARNING", logger="polyarray"):
        assert build_module(SOURCE, "sm_90").get_function("twice")
        assert build_module(SOURCE, "sm_80").get_function("twice")
    assert len(built) == 3 and "corrupted entry" in caplog.text
    assert build_module(SOURCE, "sm_90", fast_math=True).get_function("twice")
    assert len(built) == 4          # the options are part of the key


def test_the_compiler_is_chosen_by_name_and_a_missing_one_is_said(monkeypatch):
    monkeypatch.setenv("POLYARRAY_CUDA_COMPILER", "clang")
    with pytest.raises(ValueError, match="POLYARRAY_CUDA_COMPILER='clang'"):
        cuda_compiler.compiler_for(SOURCE)
    monkeypatch.setenv("POLYARRAY_CUDA_COMPILER", "nvrtc")
    if cuda_compiler._nvrtc() is None:
        with pytest.raises(cuda_compiler.CudaCompileError, match="libnvrtc.so"):
            cuda_compiler.compiler_for(SOURCE)
    else:
        assert cuda_compiler.compiler_for(SOURCE).name == "nvrtc"
        monkeypatch.delenv("POLYARRAY_CUDA_COMPILER")
        assert cuda_compiler.compiler_for(SOURCE).name == "nvrtc"
        if NVCC is not None:        # a header: nvcc, which knows the toolkit's paths
            assert cuda_compiler.compiler_for("#include <cstdio>\n" + SOURCE).name == "nvcc"
    monkeypatch.setenv("POLYARRAY_CUDA_COMPILER", "nvcc")
    if NVCC is not None:
        assert cuda_compiler.compiler_for(SOURCE).name == "nvcc"
        monkeypatch.delenv("POLYARRAY_CUDA_COMPILER")     # the user's C: as PyCUDA built it
        from polyarray.codegen.user_functions import MARKER, RAW_MARK
        for mark in (RAW_MARK.format(name="twice", language="CUDA"), MARKER + "k (map) */"):
            assert cuda_compiler.compiler_for(mark + "\n" + SOURCE).name == "nvcc"


def _chain(x, op, n, binary=False):
    """``n`` calls of ``op``, each value used twice (the compile benchmark's chain)."""
    vals = [x * 0.5, x * 0.25, x]
    for _ in range(n):
        a, b = vals[-1], vals[-3]
        vals.append((op(a, b * 0.5 + 1) if binary else op(a * 0.5)) * 0.5 + b * 0.25)
    return vals[-1]


@pytest.mark.parametrize("dtype, op", [(np.float32, pa.sin), (np.float32, pa.power),
                                       (np.float64, pa.exp), (np.float64, pa.arctan2)])
def test_large_math_helpers_called_often_are_compiled_once(target, dtype, op):
    """The numbers are the same (the same function runs); nvcc compiles it
    once instead of at each of its calls, and smaller programs keep their
    inlined helpers."""
    from polyarray.codegen import policy
    x = pa.placeholder("x", (1000,), dtype)
    name = f"pa_{op.__name__}_{np.dtype(dtype).name}"
    binary = op in (pa.power, pa.arctan2)
    if target == "cuda" or not targets.availability("cuda")[0]:
        calls = policy.current_thresholds().NOINLINE_MIN_CALLS
        many = pa.compile(_chain(x, op, calls, binary), target="cuda").source
        few = pa.compile(_chain(x, op, calls - 1, binary),
                         target="cuda").source
        assert f"__device__ static __noinline__ {'float' if dtype == np.float32 else 'double'}" \
               f" {name}(" in many
        assert "__noinline__" not in few and f" {name}(" in few
    xv = np.linspace(0.1, 1.5, 1000).astype(dtype)
    want = _chain(xv, getattr(np, op.__name__), 20, binary)
    prog = pa.compile(_chain(x, op, 20, binary), target=target)
    assert_same(prog(x=xv), want)


@needs_nvcc
def test_a_source_with_large_helpers_compiles_with_nvcc(monkeypatch, tmp_path):
    from polyarray.targets.cuda.build import build_module
    _fake_pycuda(monkeypatch, tmp_path)
    monkeypatch.setenv("POLYARRAY_CUDA_COMPILER", "nvcc")
    x = pa.placeholder("x", (1000,), np.float32)
    prog = pa.compile([_chain(x, pa.sin, 40), _chain(x, pa.power, 20, True)], target="cuda")
    assert prog.source.count("__noinline__") == 2
    mod = build_module(prog.source, "sm_90")
    for name in prog.kernels:
        assert mod.get_function(name)


def test_an_outlined_region_called_for_several_elements_is_compiled_once(target):
    """A kernel of several elements per work-item calls its outlined region
    for each: compiled once (``__noinline__``), not expanded at each call."""
    from polyarray.codegen import policy
    x = pa.placeholder("x", (1 << 16,), np.float32)
    ops = policy.current_thresholds().OUTLINE_MIN
    out = _chain(x, pa.sin, ops)
    if target == "cuda" or not targets.availability("cuda")[0]:
        src = pa.compile(out, target="cuda").source
        region = [ln for ln in src.splitlines() if " pa_r_" in ln and "{" not in ln
                  and ln.startswith("__device__")]
        assert len(region) == 1 and "__noinline__" in region[0], region
        calls = src.count(region[0].split()[4].split("(")[0] + "(") - 1
        assert calls > 1
        y = pa.placeholder("y", (1000,), np.float32)      # one element per work-item
        one = pa.compile(_chain(y, pa.sin, ops), target="cuda").source
        assert "__forceinline__ float pa_r_" in one
    xv = np.linspace(-2, 2, 1 << 16).astype(np.float32)
    assert_same(pa.compile(out, target=target)(x=xv), _chain(xv, np.sin, ops))


def test_a_changed_noinline_threshold_is_a_new_program():
    """The threshold is part of the cache key (``cache.code_version``): a
    sweep that sets it gets code made under it, not a cached program."""
    from polyarray.codegen import policy
    x = pa.placeholder("x", (1000,), np.float32)
    out = _chain(x, pa.sin, 4)
    assert "__noinline__" not in pa.compile(out, target="cuda").source
    with policy.using_thresholds(NOINLINE_MIN_CALLS=2):
        assert "__noinline__ float pa_sin_float32(" in pa.compile(out, target="cuda").source
