"""CUDA without a GPU: for every parity case, generate the CUDA source and
compile it with ``nvcc -cubin -arch=sm_90`` and the target's flags
(``targets.cuda.NVCC_OPTIONS``).  A compile error, or anything nvcc prints
(a warning would reach the user's log), fails the test, naming the case and
showing its source.

Generating the sources (loopy) costs more than compiling them.  The cases run
in batches, one test each: one nvcc run per batch (each program in its own C++
namespace, kernels renamed), and a batch that fails is compiled case by case
to name the culprits.  The batches run in parallel: under pytest-xdist each
worker takes its own; otherwise worker processes, one per CPU, work through
them all from the first batch's test on.  A batch that compiled is remembered
by the hash of its source in pytest's cache, so a second run skips nvcc."""
import concurrent.futures
import hashlib
import multiprocessing
import os
import re
import shutil
import subprocess
import tempfile
import traceback

import numpy as np
import pytest

import polyarray as pa
from helpers import CORE_DTYPES
from parity_cases import CASES
from polyarray.targets.cuda import NVCC_OPTIONS

NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc (the CUDA compiler) is not on PATH")
BATCH = 12          # cases per nvcc run: large enough to share nvcc's start-up


@pytest.fixture
def generated_products(monkeypatch):
    """Code generation as where nvmath-python is not installed: the big
    products stay generated kernels (where it is, cuBLAS takes them and the
    source has no tiles to check)."""
    from polyarray.codegen.emit import dialect
    installed = dialect._installed
    monkeypatch.setattr(dialect, "_installed",
                        lambda package: package != "nvmath" and installed(package))


def case_program(c):
    """The device-target program run_case would build for ``c``, as nodes."""
    rng = np.random.default_rng(0)
    outs = []
    dts = c.dtypes if len(c.dtypes) == 1 else [d for d in c.dtypes if d in CORE_DTYPES]
    for d in dts:
        inputs = c.make_inputs(rng, d)
        args = [pa.placeholder(f"a{k}_{np.dtype(d).name}", v.shape, v.dtype)
                for k, v in enumerate(inputs)]
        try:
            with np.errstate(all="ignore"):
                c.fn(np, *inputs)
            e = c.fn(pa, *args)
        except Exception:        # noqa: BLE001  (NumPy refuses it: nothing to compile)
            continue
        if e.dtype != np.float16:
            outs.append(e.node)
    return outs


def cuda_source(c):
    import loopy as lp
    from polyarray.codegen import lower_program
    nodes = case_program(c)
    return lower_program(nodes, lp.CudaTarget()).source if nodes else ""


def _nvcc(source, workdir, name):
    path = os.path.join(workdir, name + ".cu")
    with open(path, "w") as f:
        f.write(source)
    return subprocess.run([NVCC, "-cubin", "-arch=sm_90", *NVCC_OPTIONS, "-o", path + ".cubin",
                           path], capture_output=True, text=True)


def _trouble(r):
    """What is wrong with an nvcc run: it failed, or it printed something
    (with the target's flags, nvcc says nothing about our kernels)."""
    said = (r.stdout + r.stderr).strip()
    return f"nvcc failed:\n{said}" if r.returncode else (f"nvcc printed:\n{said}" if said
                                                         else None)


def _namespaced(k, source):
    body = re.sub(r"\bk(\d+)_", rf"c{k}_k\1_", source)
    return f"namespace case{k} {{\n{body}\n}}\n"


def _compile_batch(names, cache_dir):
    """In a worker: {case name: None (compiled, or nothing to compile) or
    the failure with its source}, for one batch of cases."""
    by_name = {c.name: c for c in CASES}
    results, sources = {}, []
    for name in names:
        try:
            source = cuda_source(by_name[name])
        except Exception:       # noqa: BLE001  (reported as this case's failure)
            results[name] = f"generating the CUDA source failed:\n{traceback.format_exc()}"
            continue
        results[name] = None
        if source:
            sources.append((name, source))
    combined = "".join(_namespaced(k, s) for k, (_, s) in enumerate(sources))
    stamp = cache_dir and os.path.join(cache_dir, hashlib.sha256(
        (NVCC + " ".join(NVCC_OPTIONS) + combined).encode()).hexdigest())
    if not sources or (stamp and os.path.exists(stamp)):
        return results
    with tempfile.TemporaryDirectory() as d:
        r = _nvcc(combined, d, "batch")
        if _trouble(r) is None:
            if stamp:
                open(stamp, "w").close()
            return results
        culprits = 0
        for name, source in sources:          # find and show the culprit
            trouble = _trouble(_nvcc(source, d, "one"))
            if trouble:
                culprits += 1
                results[name] = f"{trouble}\n--- source ---\n{source}"
        if not culprits:
            for name, _ in sources:
                results[name] = (f"on the combined batch {[n for n, _ in sources]} only: "
                                 f"{_trouble(r)[:3000]}")
    return results


def _batches():
    names = [c.name for c in CASES]
    return [names[i:i + BATCH] for i in range(0, len(names), BATCH)]


@pytest.fixture(scope="module")
def compile_batch(request):
    """batch -> {case name: failure or None}.  Under pytest-xdist the batch
    is compiled in this worker; otherwise every selected batch is handed at
    once to a pool of processes (spawned: the parent may hold OpenCL driver threads)."""
    cache = getattr(request.config, "cache", None)
    cache_dir = str(cache.mkdir("nvcc-compiled")) if cache is not None else None
    workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else os.cpu_count() or 1
    if os.environ.get("PYTEST_XDIST_WORKER") or workers == 1:
        yield lambda batch: _compile_batch(batch, cache_dir)
        return
    with concurrent.futures.ProcessPoolExecutor(
            workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        selected = [item.callspec.params["batch"] for item in request.session.items
                    if item.originalname == "test_every_parity_case_compiles_with_nvcc"]
        futures = {tuple(b): pool.submit(_compile_batch, b, cache_dir) for b in selected}
        yield lambda batch: futures[tuple(batch)].result()
        for future in futures.values():
            future.cancel()


@needs_nvcc
@pytest.mark.parametrize("batch", _batches(), ids=lambda b: f"{b[0]}..{b[-1]}")
def test_every_parity_case_compiles_with_nvcc(batch, compile_batch):
    failures = {name: why for name, why in compile_batch(batch).items() if why}
    assert not failures, "\n\n".join(f"case {name}: {why}" for name, why in failures.items())


@needs_nvcc
def test_nvcc_prints_nothing_for_the_usual_forms(generated_products):
    """The kernel forms at sizes where the GPU policy picks its big forms
    (elementwise with elements per work-item, a transposed tile, group,
    two-stage and split-column reductions, fused rows, register-tiled,
    split-K and float64 tensor-core matmuls, an epilogue, argmax,
    concatenation, integer reductions): nvcc, with the target's flags,
    prints nothing, so a build on a GPU logs nothing and warns nothing."""
    import loopy as lp
    from polyarray.codegen import lower_program
    f32 = np.float32
    x, y = pa.placeholder("x", (300, 5000), f32), pa.placeholder("y", (5000, 700), f32)
    v, c = pa.placeholder("v", (1 << 20,), f32), pa.placeholder("c", (4096, 64), f32)
    d, g = pa.placeholder("d", (2048, 256), np.float64), pa.placeholder("g", (2048, 2048), f32)
    i = pa.placeholder("i", (1000, 33), np.int32)
    e = pa.exp(x - x.max(axis=1, keepdims=True))
    programs = [[pa.exp(v) * 2.0 + 1.0, pa.where(v > 0, v, 0.0)], [c.T + 1.0],
                [x.sum(axis=1), x.sum(axis=0), v.sum(), v.max(), g.sum(axis=1)],
                [e / e.sum(axis=1, keepdims=True)], [x @ y], [c[:20, :30] @ c[:30, :20]],
                [d @ d.T], [pa.tanh(x @ y + 1.0)],
                [pa.argmax(x, axis=1), pa.argmin(v), pa.argmax(i, axis=0)],
                [pa.concatenate([c, c * 2.0], axis=1), pa.concatenate([v, v])],
                [i.sum(axis=0), (i * i).sum(axis=1), pa.any(i > 3, axis=1)]]
    lowered = [lower_program([o.node for o in outs], lp.CudaTarget()) for outs in programs]
    forms = {k.form for low in lowered for k in low.kernels}
    assert forms >= {"elementwise", "thread", "group", "two-stage 1", "combine (group)",
                     "split-columns 1", "combine (thread)", "rows (group)", "tiled matmul",
                     "mma matmul"}, forms
    combined = "".join(_namespaced(k, low.source) for k, low in enumerate(lowered))
    with tempfile.TemporaryDirectory() as tmp:
        r = _nvcc(combined, tmp, "forms")
    assert _trouble(r) is None, _trouble(r)


def test_cuda_codegen_needs_no_gpu():
    x = pa.placeholder("x", (100,), np.float32)
    prog = pa.compile(pa.exp(x) * 2.0 + x.sum(), target="cuda")
    assert "__global__" in prog.source and 'extern "C"' in prog.source
    from polyarray import targets
    ok, reason = targets.availability("cuda")
    if ok:
        np.testing.assert_allclose(prog(x=np.ones(100, np.float32)),
                                   np.exp(np.ones(100)) * 2 + 100, rtol=1e-5)
    else:
        with pytest.raises(targets.TargetUnavailableError, match="CUDA is unavailable"):
            prog(x=np.ones(100, np.float32))
        with pytest.raises(targets.TargetUnavailableError, match="CUDA is unavailable"):
            x.evaluate("cuda", x=np.ones(100, np.float32))


@needs_nvcc
@pytest.mark.parametrize("form", ["a @ b", "a.T @ b", "a @ b.T", "a.T @ b.T"])
def test_default_big_matmul_reads_local_tiles_with_16_byte_loads(form, generated_products):
    """The default 128 x 128 register tiles (vector=4) are meant to read
    both operand tiles with 16-byte shared loads and no scalar ones: the
    difference between 0.66 and 0.87 of cuBLAS on the H100.  Transposed
    operands are read in place, copied into the same tile layout."""
    import loopy as lp
    from polyarray.codegen import lower_program
    a = pa.placeholder("a", (256, 2048) if "a.T" in form else (2048, 256), np.float32)
    b = pa.placeholder("b", (2048, 256) if "b.T" in form else (256, 2048), np.float32)
    low = lower_program([eval(form).node], lp.CudaTarget())
    # no transposed copies (placeholder names are prefixed: codegen.c_name)
    assert sorted(low.buffers) == ["out0", "p1_a", "p1_b"], low.buffers
    # both tiles k-major (A's rows padded by 4), whichever way the operands are read
    for tile, row in (("p1_a_fetch", 132), ("p1_b_fetch", 128)):
        reads = re.findall(rf"{tile}\[([^\]]*)\] \*|\* {tile}\[([^\]]*)\];", low.source)
        assert reads and all(f"{row} * k_inner" in "".join(r) for r in reads), (tile, reads[:4])
    info, = low.kernels
    assert info.schedule[0].vector == 4 and info.schedule[0].block == 128, info.schedule
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "mm.cu")
        with open(path, "w") as f:
            f.write(low.source)
        r = subprocess.run([NVCC, "-ptx", "-arch=sm_90", "-o", path + ".ptx", path],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        ptx = open(path + ".ptx").read()
    wide = len(re.findall(r"ld\.shared\.v4\.f32", ptx))
    narrow = len(re.findall(r"ld\.shared\.f32", ptx))
    # 16 k steps x (2 groups of A + 2 groups of B), unrolled by the hint
    assert wide == 64 and narrow == 0, (wide, narrow)


@needs_nvcc
@pytest.mark.parametrize("dtype,width", [(np.float32, 4), (np.float64, 2), (np.int32, 4),
                                         (np.uint32, 2), (np.int64, 2)])
def test_vectorized_kernels_compile_with_nvcc(dtype, width):
    """Vectorize emits vector loads/stores and scalar lane arithmetic, which
    CUDA C accepts (loopy's own vec arithmetic on float4 it would not)."""
    import loopy as lp
    from polyarray.codegen import lower_program
    from polyarray.schedules import Vectorize, WorkGroup
    x, y = (pa.placeholder(n, (64, 16), dtype) for n in "xy")
    out = pa.sqrt(x * x + y) if np.dtype(dtype).kind == "f" else x * y - x
    low = lower_program([out.node], lp.CudaTarget(), schedules={
        "k0_elementwise": [Vectorize("i", width), WorkGroup(64, "i_outer")]})
    assert f"{width} const *__restrict__ p1_x" in low.source, low.source
    with tempfile.TemporaryDirectory() as d:
        r = _nvcc(low.source, d, "vec")
    assert r.returncode == 0, r.stderr


@needs_nvcc
def test_fused_row_kernels_compile_with_nvcc():
    """Every fused row case as CUDA: long rows get a work-group each, whose
    reduction results are shared through local memory behind a barrier."""
    import loopy as lp
    from polyarray.codegen import lower_program
    from test_row_fusion import FUSED, _case
    sources = []
    for fn, shape, dtype, nred in FUSED:
        expr, _, _ = _case(fn, shape, dtype)
        low = lower_program([expr.node], lp.CudaTarget())
        info, = low.kernels
        if shape[-1] >= 64:
            assert info.form == "rows (group)", (fn.__name__, shape, info)
            assert low.source.count("Barrier inserted due to l_barrier") == nred, low.source
        else:       # a row per work-item: its results stay private (no sharing, no race)
            assert info.form == "rows (thread)", (fn.__name__, shape, info)
            assert "__shared__" not in low.source and "__syncthreads" not in low.source, \
                low.source
        sources.append(low.source)
    combined = "".join(_namespaced(k, s) for k, s in enumerate(sources))
    with tempfile.TemporaryDirectory() as d:
        r = _nvcc(combined, d, "rows")
    assert r.returncode == 0, r.stderr
