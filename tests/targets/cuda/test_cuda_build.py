"""The CUDA build (targets/cuda/compiler.py, targets/cuda/build.py): cubins
from NVRTC (through NVIDIA's cuda-bindings) or nvcc, cached on disk by us,
and large math helpers compiled once per source (codegen/emit/noinline.py).
Without a GPU the cubins come from the real compilers and only the module
loader is faked; on a GPU the programs run."""
import os
import re
import struct
import subprocess
import sys

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
        with pytest.raises(cuda_compiler.CudaCompileError, match="pip install cuda-bindings"):
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


def _without(monkeypatch, *modules):
    """A process where ``modules`` do not import (a missing pip package) and
    no library has been looked for yet."""
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setattr(cuda_compiler, "_CHOSEN", {})
    monkeypatch.setattr(cuda_compiler, "_MISSING", {})


def test_without_the_bindings_nvcc_compiles_and_the_error_names_the_packages(monkeypatch):
    """NVRTC and nvJitLink come from NVIDIA's cuda-bindings: without them
    nvcc and nvlink run as processes, and with no nvcc either the error says
    which pip packages to install."""
    _without(monkeypatch, "cuda.bindings.nvrtc", "cuda.bindings.nvjitlink")
    assert cuda_compiler._nvrtc() is None
    if NVCC is not None:
        assert cuda_compiler.compiler_for(SOURCE).name == "nvcc"
        assert cuda_compiler.linker().name == "nvlink"
    monkeypatch.setattr(cuda_compiler.shutil, "which", lambda name: None)
    monkeypatch.setattr(cuda_compiler, "_CHOSEN", {})
    with pytest.raises(cuda_compiler.CudaCompileError,
                       match=r"NVRTC is not usable here \(cuda.bindings.nvrtc is not installed "
                             r"\(pip install cuda-bindings nvidia-cuda-nvrtc\)\) and nvcc is "
                             "not on PATH"):
        cuda_compiler.compiler_for(SOURCE)
    assert cuda_compiler.linker() is None           # nothing is split
    monkeypatch.setenv("POLYARRAY_CUDA_COMPILER", "nvrtc")
    with pytest.raises(cuda_compiler.CudaCompileError,
                       match=r"pip install cuda-bindings nvidia-cuda-nvrtc\)\)$"):
        cuda_compiler.compiler_for(SOURCE)


def test_a_library_the_bindings_do_not_find_is_said_with_its_package(monkeypatch):
    """cuda-bindings installed, NVRTC's library not found (cuda-pathfinder
    raises a RuntimeError at the first call): the reason names the wheel."""
    class Lost:
        name = "nvrtc"

        def __init__(self):
            raise RuntimeError('Failure finding "libnvrtc.so": No such file\n  listdir(...)')

    _without(monkeypatch)
    monkeypatch.setattr(cuda_compiler, "Nvrtc", Lost)
    monkeypatch.setenv("POLYARRAY_CUDA_COMPILER", "nvrtc")
    with pytest.raises(cuda_compiler.CudaCompileError,
                       match=r"nvrtc's library was not found: Failure finding \"libnvrtc.so\": "
                             r"No such file \(pip install cuda-bindings nvidia-cuda-nvrtc\)"):
        cuda_compiler.compiler_for(SOURCE)


def _machine_code(cubin):
    """``{section: bytes}`` of a cubin's ``.text.*`` sections (its kernels'
    machine code), read from the ELF64 section headers."""
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    entsize, count, names_at = struct.unpack_from("<HHH", cubin, 0x3A)
    heads = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + k * entsize) for k in range(count)]
    names = cubin[heads[names_at][4]:heads[names_at][4] + heads[names_at][5]]
    code = {}
    for h in heads:
        name = names[h[0]:names.index(b"\0", h[0])].decode()
        if name.startswith(".text."):
            code[name] = cubin[h[4]:h[4] + h[5]]
    return code


@pytest.mark.skipif(cuda_compiler._nvrtc() is None or NVCC is None,
                    reason="needs both NVRTC (cuda-bindings and its library) and nvcc")
def test_nvrtc_and_nvcc_give_the_same_machine_code():
    """A generated source (rows, a sum, math helpers) built by NVRTC through
    the bindings and by nvcc, with the target's flags, is a cubin with the
    same kernels, and at least one of them (the row kernel) byte for byte
    the same machine code where both are one release (CI's pip may install
    a newer NVRTC than its nvcc: then names only).  A kernel with a reduction tree in shared memory
    (the sum) differs between the two front ends, so it is compared by name
    only; whether only its addressing differs has not been checked."""
    from polyarray.targets.cuda.build import NVCC_OPTIONS
    x = pa.placeholder("x", (100, 30), np.float32)
    src = pa.compile([pa.exp(x) / pa.exp(x).sum(axis=1, keepdims=True), (x * 2).sum(),
                      pa.arctan2(x, x + 1) ** 3], target="cuda").source
    by_nvrtc, said = cuda_compiler._nvrtc().compile(src, "sm_90", NVCC_OPTIONS)
    by_nvcc, _ = cuda_compiler._nvcc().compile(src, "sm_90", NVCC_OPTIONS)
    assert by_nvrtc[:4] == b"\x7fELF" and said == ""
    code, other = _machine_code(by_nvrtc), _machine_code(by_nvcc)
    assert len(code) >= 2 and all(code.values())
    assert code.keys() == other.keys()
    if _release_of_nvcc() != cuda_compiler._nvrtc().identity.split()[-1]:
        return    # different releases generate different code; the names were compared
    same = [k for k in code if code[k] == other[k]]
    assert same, sorted(code)


def _release_of_nvcc():
    """``"13.0"`` from ``nvcc --version``'s ``release 13.0, V13.0.88``."""
    said = subprocess.run([NVCC, "--version"], capture_output=True, text=True).stdout
    return re.search(r"release (\d+\.\d+)", said).group(1)


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


def test_the_bindings_load_only_for_a_cuda_build():
    """``import polyarray``, the NumPy target and CUDA code generation
    import neither cuda-bindings nor cuda-core: polyarray runs with NumPy
    alone, and a CUDA build imports them when it first needs them."""
    import subprocess
    from helpers import subprocess_env
    code = ("import sys, numpy as np, polyarray as pa\n"
            "x = pa.placeholder('x', (8,), np.float32)\n"
            "pa.compile(x * 2, target='numpy')(x=np.ones(8, np.float32))\n"
            "assert 'k0' in pa.compile(pa.exp(x).sum(), target='cuda').source\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'cuda'))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=subprocess_env(), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "[]"


def test_nvrtcs_identity_for_a_disk_hit_imports_no_bindings():
    """A cubin's cache key needs NVRTC's version; where the pip wheels are
    installed it is read from their metadata, so a disk hit neither imports
    the NVRTC binding nor loads its library, and it is the version the
    library itself reports."""
    import subprocess
    from importlib import metadata
    from helpers import subprocess_env
    try:
        metadata.version("cuda-bindings")
        metadata.version("nvidia-cuda-nvrtc")
    except metadata.PackageNotFoundError:
        pytest.skip("the cuda-bindings and nvidia-cuda-nvrtc wheels are not installed")
    code = ("import sys\n"
            "from polyarray.targets.cuda import compiler\n"
            "c = compiler._nvrtc()\n"
            "print(c.identity, 'cuda.bindings.nvrtc' in sys.modules)\n"
            "s, major, minor = c.api.nvrtcVersion()\n"
            "print(f'nvrtc {major}.{minor}')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=subprocess_env(), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    first, second = r.stdout.split("\n")[:2]
    assert first.endswith(" False"), first
    assert first.split(" False")[0] == second
