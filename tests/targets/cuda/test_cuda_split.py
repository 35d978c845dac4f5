"""One large outlined region built as several units at once
(targets/cuda/split.py, ``cuda_build.split_units``): the text keeps every
statement in order, the units compile as relocatable code and link without a
GPU (NVRTC and nvJitLink through cuda-bindings, or nvcc and nvlink), and on a GPU the split build gives the same bits as
the whole build."""
import re

import numpy as np
import pytest

import polyarray as pa
from polyarray import targets
from polyarray.targets.cuda import build as cuda_build
from polyarray.targets.cuda import compiler as cuda_compiler
from polyarray.targets.cuda import split as cuda_split
from test_quiet import NVCC

needs_toolchain = pytest.mark.skipif(
    (cuda_compiler._nvrtc() is None and NVCC is None) or cuda_compiler.linker() is None,
    reason="no CUDA compiler and linker here (cuda-bindings with NVRTC and nvJitLink, or nvcc "
           "and nvlink)")
_DECL = re.compile(r"^  (?!struct )[\w ]+? (\w+) = (.*);$", re.M)


def _chain(x, n, ns=pa):
    """Products by 0.3 and 0.7 are rounded (not by 0.5 or 0.25): nvcc fuses
    them with a later add unless a cut separates them."""
    vals = [x, ns.sin(x), ns.cos(x)]
    for k in range(n):
        a, b = vals[-1], vals[-3]
        vals.append(ns.sin(a) * 0.3 + b if k % 2 == 0 else ns.exp(-a * a) - b * 0.7)
    return vals[-1]


def _two_results(x, n, ns=pa):
    """Two outputs of one region, and an integer power (a checked helper:
    the region takes the error buffer)."""
    a, b = x, x * 3
    for k in range(n):
        a, b = b % 7 + a * 3, ((a % 5) ** (b % 3) + b) % 1000 if k % 3 == 0 else b - a
    return a, b


def _region_decls(text):
    return [m.group(0) for m in _DECL.finditer(text)]


@pytest.mark.parametrize("build", [lambda: _chain(pa.placeholder("x", (4096,), np.float32), 300),
                                   lambda: _two_results(pa.placeholder("x", (4096,), np.int64),
                                                        120)],
                         ids=["chain", "two-results-checked"])
def test_a_split_keeps_every_statement_once_in_order(build):
    src = pa.compile(build(), target="cuda").source
    [(statements, region)] = cuda_split.regions(src)
    assert statements >= 200, statements
    units = cuda_split.split(src, 4, 40)
    assert len(units) == 5, len(units)
    main = units[0]
    kernels = src[src.index('extern "C" __global__'):]
    assert main.endswith(kernels)               # the kernels are untouched
    original = _region_decls(src[region.start:region.end])
    segments = re.findall(r'^extern "C" __device__ (?:struct )?\w+ (\w+)\(',
                          "\n".join(units[1:]), re.M)
    assert segments == [f"{region.name}_s{k}" for k in range(4)]
    functions = [re.search(r'^extern "C" __device__ [^\n]*?\((.*)\)\n\{\n(.*?)\n\}',
                           unit, re.M | re.S).groups() for unit in units[1:]]
    assert _region_decls("\n".join(b for _, b in functions)) == original   # same lines, order
    for k, (sig, body) in enumerate(functions):
        # every name a segment reads is its own, a parameter, or passed in
        passed = set(re.findall(r"(\w+)(?:,|$)", sig))
        own = {m.group(1) for m in _DECL.finditer(body)}
        for m in _DECL.finditer(body):
            for w in re.findall(r"\bv\d+\b|\ba\d+\b", m.group(2)):
                assert w in own or w in passed, (k, w)
    # the region in the main unit only calls the segments
    body = main[main.index(region.head):]
    body = body[:body.index("\n}\n")].split("\n")[2:]
    assert all(re.fullmatch(r"  (return )?\w+_s\d\(.*\);|  struct \w+ o\d = \w+_s\d\(.*\);"
                            r"|  [\w ]+ (?P<v>\w+) = o\d\.(?P=v);", line) for line in body), body


def test_no_product_is_cut_from_the_add_that_uses_it():
    """nvcc fuses ``v = a * 0.3f; w = v + b`` into one fma (rounded once) in
    one unit, but not across units: the cuts go where no product is live,
    so the split build gives the whole build's bits."""
    src = pa.compile(_chain(pa.placeholder("x", (4096,), np.float32), 400),
                     target="cuda").source
    [(_, region)] = cuda_split.regions(src)
    exprs = {name: e for _, name, e in region.decls}
    products = [name for name, e in exprs.items() if cuda_split.is_product(e)]
    assert len(products) > 50
    units = cuda_split.split(src, 8, 40)
    outs = re.findall(r"struct \w+_out \{ (.*?) \};", "\n".join(units[1:]))
    assert len(outs) == 7
    for fields in outs:
        names = re.findall(r"(\w+);", fields)
        assert names and not [n for n in names if cuda_split.is_product(exprs[n])], fields
    # a chain with one value live at every point: the cut moves off the product
    lines = [f"  float v{k} = v{k - 1} {'* 0.3f' if k == 50 else '+ 1.0f'};"
             for k in range(1, 101)]
    text = ("/* polyarray outlined region: 100 temporaries */\n"
            "__device__ static __forceinline__ float pa_r_0123456789abcdef(float v0)\n{\n"
            + "\n".join(lines) + "\n  return v100;\n}\n")
    [(_, chain)] = cuda_split.regions(text)
    [cut] = cuda_split._cuts(chain, 2)
    assert cut in (49, 51), cut         # not 50: v50 = v49 * 0.3f live across it
    assert cuda_split.is_product("pa_sin_float32(v13) * 0.30000001192092896f")
    assert cuda_split.is_product("-1.0f * v21") and cuda_split.is_product("(float) (a * b)")
    assert not cuda_split.is_product("v1 * v2 + v3")
    assert not cuda_split.is_product("a - b * c") and not cuda_split.is_product("pa_f(a * b)")


def test_small_regions_and_the_users_c_are_built_whole(monkeypatch):
    src = pa.compile(_chain(pa.placeholder("x", (4096,), np.float32), 40),
                     target="cuda").source
    assert cuda_split.split(src, 8, 500) == [src]
    assert cuda_split.split(src, 1, 10) == [src]
    monkeypatch.setattr(cuda_build, "SPLIT_MIN_STATEMENTS", 5)
    monkeypatch.setattr(cuda_compiler, "linker", lambda: object())
    assert len(cuda_build.split_units(src)) > 1
    # a custom kernel's preamble (the user's definitions) would be in every unit
    pre = "__device__ float twice(float v) { return v * 2.0f; }\n"
    k = pa.elementwise_kernel("float32 x", "float32 y", "y = twice(x) + 1.0f", "mytwice",
                              preamble=pre)
    x = pa.placeholder("x", (4096,), np.float32)
    w = x
    for i in range(40):
        w = k(pa.sin(w) * 0.5 + w) if i % 5 == 0 else pa.cos(w) + w * 0.25
    user = pa.compile(w, target="cuda").source
    assert cuda_build.split_units(user) == [user]


def test_segments_of_a_kernel_of_large_work_groups_fit_its_registers():
    """``__launch_bounds__(1024)`` caps the kernel at 64 registers; a segment
    it calls from another unit must fit under the cap or nvlink refuses."""
    assert cuda_build.segment_options("__launch_bounds__(256) k", ["-rdc=true"]) == \
        ["-rdc=true"]
    assert cuda_build.segment_options("__launch_bounds__(1024) k", []) == ["-maxrregcount=64"]
    assert cuda_build.segment_options("__launch_bounds__(768) k", []) == ["-maxrregcount=80"]


@needs_toolchain
def test_split_units_compile_as_relocatable_code_and_link(monkeypatch, tmp_path):
    monkeypatch.setenv("POLYARRAY_CACHE_DIR", str(tmp_path))
    from polyarray.targets.cache import clear_memory_layers
    clear_memory_layers()
    monkeypatch.setattr(cuda_build, "SPLIT_MAX_SEGMENTS", 3)
    monkeypatch.setattr(cuda_build, "SPLIT_MIN_STATEMENTS", 40)
    wide = pa.placeholder("w", (1 << 20,), np.float64)
    for out, schedule in ((_chain(pa.placeholder("x", (4096,), np.float32), 150), None),
                          (_two_results(pa.placeholder("x", (4096,), np.int64), 60), None),
                          (_chain(wide, 150), {"k0_*": (pa.schedules.WorkGroup(1024),)})):
        src = pa.compile(out, target="cuda", schedule=schedule).source
        assert len(cuda_build.split_units(src)) == 4
        [((), binary)] = cuda_build.build_cubins(src, "sm_90")
        assert binary[:4] == b"\x7fELF"
        names = [n for n in re.findall(rb"k\d+_\w+", binary)]
        assert b"k0_elementwise" in names


@pytest.mark.skipif(not targets.availability("cuda")[0],
                    reason=f"cuda: {targets.availability('cuda')[1]}")
def test_a_split_build_gives_the_same_bits(monkeypatch, caplog):
    """The same elements computed by a whole build and by a split one (of a
    program of a few more elements, so neither build is a cached one) are
    the same bits, and match NumPy."""
    import logging
    from polyarray.targets import cuda
    monkeypatch.setitem(cuda._STATE, "modules", {})
    monkeypatch.setattr(cuda_build, "SPLIT_MAX_SEGMENTS", 4)
    n = 4099

    def run(extra, split):
        monkeypatch.setattr(cuda_build, "SPLIT_MIN_STATEMENTS", 40 if split else 10 ** 9)
        x = pa.placeholder("x", (n + extra,), np.float32)
        y = pa.placeholder("y", (n + extra,), np.int64)
        # the same values in the first n elements of both programs
        xv = np.linspace(-2, 2, n + 2).astype(np.float32)[:n + extra]
        yv = np.arange(n + extra, dtype=np.int64) % 97 - 40
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="polyarray.cuda"):
            got = (pa.compile(_chain(x, 300), target="cuda")(x=xv),
                   *pa.compile(list(_two_results(y, 120)), target="cuda")(y=yv))
        units = re.findall(r"as (\d+) units", caplog.text)
        assert units == (["5", "5"] if split else []), caplog.text
        return [g[:n] for g in got], xv[:n], yv[:n]

    whole, xv, yv = run(0, False)
    split, _, _ = run(2, True)
    for w, s in zip(whole, split):
        np.testing.assert_array_equal(s, w)            # bit for bit
    # 300 steps amplify rounding about 100-fold: NumPy's own float32 chain is
    # 1.8e-5 from its float64 one, and fused products (fma) differ from it too
    np.testing.assert_allclose(whole[0], _chain(xv.astype(np.float64), 300, np), rtol=0, atol=2e-4)
    ra, rb = _two_results(yv, 120, np)
    np.testing.assert_array_equal(whole[1], ra)
    np.testing.assert_array_equal(whole[2], rb)


def test_a_failed_split_build_falls_back_to_the_whole_build(monkeypatch, caplog):
    """A unit the compiler refuses (here every relocatable build) costs
    speed, not the program: the source is built whole, with a warning."""
    import logging
    monkeypatch.setattr(cuda_build, "split_units", lambda source: [source, source])
    calls = []

    def fake_cubin(source, arch, options=()):
        calls.append(tuple(options))
        if "-rdc=true" in options:
            raise cuda_compiler.CudaCompileError("nvrtc", "refused")
        return b"\x7fELF whole"

    monkeypatch.setattr(cuda_compiler, "cubin", fake_cubin)
    with caplog.at_level(logging.WARNING, logger="polyarray.cuda"):
        assert cuda_build.build_cubins("src", "sm_90") == [((), b"\x7fELF whole")]
    assert "building it whole" in caplog.text
    assert calls[-1] == tuple(cuda_build.NVCC_OPTIONS)


_SPLITTING = []


def _splitting_case(k, limit=200):
    """The source of the ``k``-th fuzzer case (seeds from 0) whose program,
    every kernel outlined and every region of two statements or more split,
    makes more than two units: which seeds those are is the generator's
    business, so they are found, not listed."""
    from fuzz.generate import make_case
    from polyarray.codegen import policy
    saved = cuda_build.SPLIT_MIN_STATEMENTS
    cuda_build.SPLIT_MIN_STATEMENTS = 1
    try:
        seed = _SPLITTING[-1][0] + 1 if _SPLITTING else 0
        while len(_SPLITTING) <= k and seed < limit:
            with policy.using_thresholds(OUTLINE_MIN=0):
                src = pa.compile(make_case(seed).arrays, target="cuda").source
            if len(cuda_build.split_units(src)) > 2:
                _SPLITTING.append((seed, src))
            seed += 1
    finally:
        cuda_build.SPLIT_MIN_STATEMENTS = saved
    assert len(_SPLITTING) > k, f"fewer than {k + 1} of the first {limit} cases split"
    return _SPLITTING[k][1]


@needs_toolchain
@pytest.mark.parametrize("k", range(4))
def test_random_dags_split_into_units_that_compile_and_link(k, monkeypatch, tmp_path, caplog):
    """Random DAGs (the fuzzer's cases), every kernel outlined and every
    region of two statements or more split: each unit compiles as
    relocatable code and the units link, with no fallback to the whole
    build (no GPU needed)."""
    import logging
    from polyarray.targets.cache import clear_memory_layers
    monkeypatch.setenv("POLYARRAY_CACHE_DIR", str(tmp_path))
    clear_memory_layers()
    src = _splitting_case(k)
    monkeypatch.setattr(cuda_build, "SPLIT_MIN_STATEMENTS", 1)
    units = cuda_build.split_units(src)
    assert len(units) > 2
    rdc = [*cuda_build.NVCC_OPTIONS, "-rdc=true"]
    parts = [cuda_compiler.cubin(u, "sm_90", cuda_build.segment_options(units[0], rdc)
                                 if k else rdc) for k, u in enumerate(units)]
    assert cuda_compiler.linked(parts, "sm_90")[:4] == b"\x7fELF"
    if len(cuda_build.split_kernels(src)) == 1:       # one kernel: the build splits it too
        with caplog.at_level(logging.INFO, logger="polyarray.cuda"):
            cuda_build.build_cubins(src, "sm_90")
        assert "units at once" in caplog.text and "building it whole" not in caplog.text
