"""Lowering and the OpenCL target: fusion, materialization, multiple outputs,
device outputs, 64-bit indexing, caching and determinism."""
import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import polyarray as pa
from polyarray import targets
from conftest import TEST_TARGETS
from helpers import assert_same, subprocess_env

ok, reason = targets.availability("opencl")
needs_opencl = pytest.mark.skipif(not ok, reason=f"opencl: {reason}")


def lower(outputs):
    import loopy as lp
    from polyarray.codegen import lower_program
    outs = outputs if isinstance(outputs, list) else [outputs]
    return lower_program([o.node for o in outs], lp.OpenCLTarget())


def chain10(x):
    y = x
    for k in range(5):
        y = pa.sin(y * 1.5 + k) - 0.25
    return y


def test_ten_op_chain_is_one_kernel():
    x = pa.placeholder("x", (1000,), np.float32)
    L = lower(chain10(x))
    assert len(L.kernels) == 1
    assert [b for b, s in L.buffers.items() if s[4] == "temp"] == []   # no intermediates


def test_softmax_is_at_most_three_kernels():
    x = pa.placeholder("x", (64, 100), np.float32)
    e = pa.exp(x - x.max(axis=1, keepdims=True))
    L = lower(e / e.sum(axis=1, keepdims=True))
    assert len(L.kernels) <= 3


def test_elementwise_feeding_reduction_is_fused():
    x = pa.placeholder("x", (50, 40), np.float32)
    m = pa.placeholder("m", (50, 1), np.float32)
    L = lower(((x - m) ** 2).sum(axis=1))
    assert len(L.kernels) == 1 and "t0" not in L.buffers


def test_matmul_operands_are_materialized():
    a = pa.placeholder("a", (8, 6), np.float32)
    b = pa.placeholder("b", (6, 4), np.float32)
    L = lower(pa.exp(a) @ b)
    temps = [n for n, s in L.buffers.items() if s[4] == "temp"]
    assert len(temps) == 1 and len(L.kernels) == 2


def test_multiple_outputs_share_kernels_and_are_written_once():
    W = pa.placeholder("W", (32, 16), np.float32)
    g = pa.placeholder("g", (32, 16), np.float32)
    b = pa.placeholder("b", (16,), np.float32)
    gb = pa.placeholder("gb", (16,), np.float32)
    Wn = W - 0.1 * g
    L = lower([Wn, b - 0.1 * gb, Wn * 2.0])
    assert len(L.kernels) == 2          # one kernel per size: (32,16) and (16,)
    for name in L.outputs:
        writers = [k for k in L.kernels if name in k.args]
        assert len(writers) == 1
    assert L.source.count("out0[") >= 1


def test_shared_subexpression_computed_once_in_kernel():
    x = pa.placeholder("x", (100,), np.float32)
    e = x
    for _ in range(40):                 # each op uses its input twice
        e = pa.exp(-(e * e))
    L = lower(e)
    assert len(L.kernels) == 1
    assert len(L.source) < 20000        # linear, not exponential


def test_index_width_is_64_bit_only_for_huge_arrays():
    small = pa.placeholder("s", (1000,), np.float32)
    assert lower(small * 2.0).index_dtype == "int32"
    huge = pa.placeholder("h", (2**31 + 8,), np.uint8)
    L = lower(huge + np.uint8(1))
    assert L.index_dtype == "int64" and "long" in L.source


@needs_opencl
def test_device_outputs_feed_back_without_copies():
    import pyopencl.array as cla
    x = pa.placeholder("x", (1000,), np.float32)
    step = pa.compile(x * 0.5 + 1.0, target="opencl", out="device")
    xv = np.random.default_rng(0).random(1000, dtype=np.float32)
    d = step(x=xv)
    assert isinstance(d, cla.Array)
    for _ in range(3):
        d = step(x=d)
    ref = xv
    for _ in range(4):
        ref = ref * np.float32(0.5) + np.float32(1.0)
    assert_same(d.get(), ref)


@needs_opencl
def test_device_bool_output_roundtrip():
    x = pa.placeholder("x", (10,), np.float32)
    m = pa.compile(x > 0.5, target="opencl", out="device")(x=np.linspace(0, 1, 10, dtype=np.float32))
    assert m.dtype == np.bool_
    np.testing.assert_array_equal(m.get(), np.linspace(0, 1, 10) > 0.5)


@needs_opencl
def test_wrong_context_device_array_rejected():
    x = pa.placeholder("x", (4,), np.float32)
    prog = pa.compile(x + 1.0, target="opencl")
    with pytest.raises(TypeError, match="must be an array"):
        prog(x=object())


@needs_opencl
def test_device_choice_by_substring(monkeypatch):
    from polyarray.targets.opencl import select_device
    ctx, dev, desc = select_device()
    word = dev.name.split()[0]
    assert select_device(word)[2] == desc
    with pytest.raises(RuntimeError, match="no OpenCL device matches"):
        select_device("no-such-device-xyz")
    x = pa.placeholder("x", (4,), np.float32)
    out = pa.compile(x * 2.0, target="opencl", device=word)(x=np.ones(4, np.float32))
    np.testing.assert_array_equal(out, 2 * np.ones(4, np.float32))


_CACHE_SCRIPT = textwrap.dedent("""
    import json, logging, sys, time, numpy as np, polyarray as pa
    logging.basicConfig()       # polyarray's warnings (a corrupted entry) on stderr
    from polyarray import codegen
    calls = []
    real = codegen.lower_program
    codegen.lower_program = lambda *a, **k: (calls.append(1), real(*a, **k))[1]
    x = pa.placeholder("x", (257, 33), np.float32)
    e = pa.exp(x - x.max(axis=1, keepdims=True))
    t0 = time.perf_counter()
    prog = pa.compile(e / e.sum(axis=1, keepdims=True), target="opencl")
    t1 = time.perf_counter()
    out = prog(x=np.ones((257, 33), np.float32))
    print(json.dumps({"lowered": len(calls), "origin": prog._exe.compiled.origin,
                      "seconds": t1 - t0, "ok": bool(np.allclose(out, 1 / 33))}))
""")


def _run_cache_script(tmp_path, seed="0"):
    import json
    env = subprocess_env(POLYARRAY_CACHE_DIR=str(tmp_path), PYTHONHASHSEED=seed)
    r = subprocess.run([sys.executable, "-c", _CACHE_SCRIPT], env=env,
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


@needs_opencl
def test_second_process_compiles_nothing(tmp_path):
    first, _ = _run_cache_script(tmp_path)
    second, _ = _run_cache_script(tmp_path, seed="7")
    assert first["ok"] and second["ok"]
    assert first["lowered"] == 1 and first["origin"] == "built"
    assert second["lowered"] == 0 and second["origin"] == "disk"


@needs_opencl
def test_corrupted_cache_entry_is_rebuilt(tmp_path):
    first, _ = _run_cache_script(tmp_path)
    entries = [p for p in os.listdir(tmp_path) if p.startswith("opencl-")]
    assert len(entries) == 1
    path = tmp_path / entries[0]
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])          # truncated
    again, err = _run_cache_script(tmp_path)
    assert again["ok"] and again["lowered"] == 1
    assert "corrupted entry" in err
    path.write_bytes(b"garbage")                       # overwritten
    again, err = _run_cache_script(tmp_path)
    assert again["ok"] and again["lowered"] == 1 and "corrupted" in err
    final, _ = _run_cache_script(tmp_path)
    assert final["origin"] == "disk"


def test_cache_module_detects_corruption(tmp_path, monkeypatch, caplog):
    from polyarray.targets.cache import DiskCache
    monkeypatch.setenv("POLYARRAY_CACHE_DIR", str(tmp_path))
    c = DiskCache("unit")
    c.put("k" * 64, {"v": 1})
    assert DiskCache("unit").get("k" * 64) == {"v": 1}
    p = c.path("k" * 64)
    blob = bytearray(open(p, "rb").read())
    blob[-3] ^= 0xFF
    open(p, "wb").write(bytes(blob))
    with caplog.at_level(logging.WARNING):
        assert DiskCache("unit").get("k" * 64) is None
    assert "corrupted" in caplog.text
    assert not os.path.exists(p)


_DET_SCRIPT = textwrap.dedent("""
    import numpy as np, loopy as lp, polyarray as pa
    from polyarray.codegen import lower_program, program_key
    x = pa.placeholder("x", (40, 30), np.float32)
    w = pa.array(np.arange(30 * 5, dtype=np.float32).reshape(30, 5))
    e = pa.exp(x - x.max(axis=1, keepdims=True))
    outs = [pa.dot(e / e.sum(axis=1, keepdims=True), w), x[::2, [1, 3]].sum(), x.argmax(axis=0)]
    L = lower_program([o.node for o in outs], lp.OpenCLTarget())
    print(program_key([o.node for o in outs]))
    print([k.name for k in L.kernels])
    print(L.source)
""")


def test_generated_source_is_deterministic_across_hash_seeds():
    outs = []
    for seed in ("0", "123", "98765"):
        env = subprocess_env(PYTHONHASHSEED=seed)
        outs.append(subprocess.run([sys.executable, "-c", _DET_SCRIPT], env=env, check=True,
                                   capture_output=True, text=True).stdout)
    assert outs[0] == outs[1] == outs[2]
    assert "__kernel" in outs[0]


@pytest.mark.parametrize("shape,axis,strategies", [
    ((3000, 40), 1, {"thread"}),                         # many outputs, short inner
    ((300, 500), 1, {"group"}),                          # long contiguous reduction
    ((20000,), None, {"two-stage 1", "combine (group)"}),  # few outputs, long
    ((2000, 300), 0, {"split-columns 1", "combine (thread)"}),  # outer, few outputs
    ((0, 7), 0, {"neutral"}),                            # empty reduction
])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_every_reduction_strategy_matches_numpy(shape, axis, strategies, dtype):
    rng = np.random.default_rng(1)
    xv = (rng.random(shape) * 9).astype(dtype)
    x = pa.placeholder("x", shape, dtype)
    outs = {"sum": x.sum(axis=axis), "any": (x > 4).any(axis=axis),
            "all": (x > 0).all(axis=axis)}
    refs = {"sum": xv.sum(axis=axis), "any": (xv > 4).any(axis=axis),
            "all": (xv > 0).all(axis=axis)}
    if xv.size:
        outs.update(max=x.max(axis=axis), argmin=x.argmin(axis=axis))
        refs.update(max=xv.max(axis=axis), argmin=xv.argmin(axis=axis))
    L = lower(outs["sum"])
    assert {k.form for k in L.kernels} == strategies
    if ok:
        for kind in ("gpu", "cpu"):        # both layouts run on whatever device is here
            got = pa.compile(outs, target="opencl", device_kind=kind)(x=xv)
            for k in outs:
                assert_same(got[k], np.asarray(refs[k]),
                            f"{k} {shape} axis={axis} {xv.dtype} ({kind} layout)")


@needs_opencl
@pytest.mark.parametrize("kind", ["gpu", "cpu"])
def test_integer_contractions_combine_partials_by_sum(kind):
    """Regression: the second stage of an int32 contraction combined its
    partials with max (the rule for bool sums), so dot(x, x) of 20000 int32
    values returned 273 instead of 259987."""
    rng = np.random.default_rng(7)
    v = rng.integers(0, 7, 20000).astype(np.int32)
    m = rng.integers(0, 7, (2000, 300)).astype(np.int32)
    x = pa.placeholder("x", v.shape, np.int32)
    y = pa.placeholder("y", m.shape, np.int32)
    outs = {"dot": pa.dot(x, x), "cols": pa.einsum("ij,ij->j", y, y),
            "bool": pa.einsum("i,i->", x > 3, x > 2)}
    kinds = {k.form for k in lower(list(outs.values())).kernels}
    assert {"two-stage 1", "split-columns 1"} <= kinds
    got = pa.compile(outs, target="opencl", device_kind=kind)(x=v, y=m)
    assert_same(got["dot"], np.asarray(v @ v), "dot")
    assert_same(got["cols"], np.einsum("ij,ij->j", m, m), "cols")
    assert_same(got["bool"], np.einsum("i,i->", v > 3, v > 2), "bool")


@pytest.mark.parametrize("shape", [(256, 128), (100, 70), (33, 40)])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_transposes_go_through_a_local_tile_on_gpus(shape, dtype):
    rng = np.random.default_rng(8)
    xv = (rng.random(shape) * 9).astype(dtype)
    yv = (rng.random(shape[::-1]) * 9).astype(dtype)
    x = pa.placeholder("x", shape, dtype)
    y = pa.placeholder("y", shape[::-1], dtype)
    outs = {"t": x.T, "s": pa.logical_xor(x.T, y) if dtype == np.bool_ else x.T * 3 + y,
            "plain": y + y}                 # reads y untransposed: no tile for it
    refs = {"t": xv.T, "s": np.logical_xor(xv.T, yv) if dtype == np.bool_ else xv.T * 3 + yv,
            "plain": yv + yv}
    import loopy as lp
    from polyarray.codegen import lower_program
    L = lower_program([o.node for o in outs.values()], lp.CudaTarget())
    assert "__shared__" in L.source and "x_fetch[32 * 33]" in L.source, L.source
    assert "y_fetch" not in L.source
    if ok:
        got = pa.compile(outs, target="opencl", device_kind="gpu")(x=xv, y=yv)
        for k in outs:
            assert_same(got[k], refs[k], f"{k} {shape} {np.dtype(dtype).name}")


@needs_opencl
@pytest.mark.parametrize("n,nv,nh", [(96, 40, 24), (128, 64, 64)])
def test_gradient_in_gpu_layouts(n, nv, nh):
    """Regression (first H100 run of the tile default): a buffer read both
    as X and as X.T in one kernel mixed 1-D and 2-D subscripts, and its
    footprint has no convex hull; only buffers read purely transposed are
    tiled."""
    rng = np.random.default_rng(0)
    X, z = rng.random((n, nv), dtype=np.float32), rng.random((n, nv), dtype=np.float32)
    h, W = rng.random((n, nh), dtype=np.float32), rng.standard_normal((nv, nh)).astype(np.float32)
    Xp, zp, hp = (pa.placeholder(k, v.shape, np.float32) for k, v in [("X", X), ("z", z),
                                                                       ("h", h)])
    g = pa.dot(Xp.T, pa.dot(-(Xp - zp), pa.array(W)) * hp * (1.0 - hp))
    outs = {"g": g, "mixed": Xp.T * 2.0 + (Xp.T - zp.T)}
    got = pa.compile(outs, target="opencl", device_kind="gpu")(X=X, z=z, h=h)
    assert_same(got["g"], X.T @ ((-(X - z) @ W) * h * (1.0 - h)))
    assert_same(got["mixed"], X.T * np.float32(2) + (X.T - z.T))


@pytest.mark.parametrize("n", [1 << 17, (1 << 17) + 37])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_large_elementwise_loads_before_stores(n, dtype):
    """GPU layout of big elementwise kernels: several elements per work-item,
    inputs read at the kernel's own index fetched to registers before any
    store; a ragged last group clamps reads and predicates stores."""
    rng = np.random.default_rng(5)
    xv = (rng.random((n // 8 * 8 if n % 8 == 0 else n,)) * 5).astype(dtype)
    yv = (rng.random((8,)) * 5).astype(dtype)
    x = pa.placeholder("x", xv.shape, dtype)
    y = pa.placeholder("y", (8,), dtype)
    xs = x.reshape((-1, 8)) if n % 8 == 0 else x
    shared = xs * 3 + 1
    outs = {"a": shared * shared + y if n % 8 == 0 else shared * shared - 2,
            "b": shared > 7, "c": x + x}
    xsv = xv.reshape((-1, 8)) if n % 8 == 0 else xv
    sv = xsv * dtype(3) + dtype(1)
    refs = {"a": sv * sv + yv if n % 8 == 0 else sv * sv - dtype(2),
            "b": sv > 7, "c": xv + xv}
    L = lower(list(outs.values()))
    src = L.source
    assert "p1_x_r[4]" in src, src
    assert src.index("p1_x_r[3] = p1_x[") < src.index("out0["), "a store precedes a fetch"
    assert ("min(" in src) == (n % 1024 != 0)
    if ok:
        binds = {"x": xv, "y": yv} if n % 8 == 0 else {"x": xv}
        got = pa.compile(outs, target="opencl", device_kind="gpu")(**binds)
        for k in outs:
            assert_same(got[k], np.asarray(refs[k]), f"{k} n={n} {np.dtype(dtype).name}")


@pytest.mark.parametrize("shapes,tiled,rule", [
    (((64, 48), (48, 32)), True, "matmul: 16 x 16 tiles"),
    (((128, 32), (32, 64)), "registers", "matmul: 64 x 64 register tiles"),
    (((30, 20), (20, 10)), True, "matmul: 16 x 16 tiles"),
    (((2, 16, 32), (32, 16)), True, "matmul: 16 x 16 tiles"),
    (((100, 70), (70, 130)), "registers", "matmul: 64 x 64 register tiles"),
    (((3, 20), (20,)), False, "not a matrix product: a reduction > gpu: group")])
def test_matmul_default_tiling(shapes, tiled, rule):
    """The policy row each product matches (``codegen/policy/rules.py``), by name."""
    rng = np.random.default_rng(3)
    a = pa.placeholder("a", shapes[0], np.float32)
    b = pa.placeholder("b", shapes[1], np.float32)
    av, bv = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    L = lower(pa.tanh(a) @ b)
    product, = [k for k in L.kernels if "einsum" in k.name]
    assert product.rule == rule, product
    kinds = [k.form for k in L.kernels]
    assert ("tiled matmul" in kinds) == bool(tiled)
    if tiled:
        assert "__local" in L.source and "barrier" in L.source
        # register tiles: 4 x 4 accumulators per work-item
        assert ("acc_k_outer_k_inner[4 * 4]" in L.source) == (tiled == "registers"), L.source
    if ok:
        for kind in ("gpu", "cpu"):
            got = pa.compile(pa.tanh(a) @ b, target="opencl", device_kind=kind)(a=av, b=bv)
            assert_same(got, np.tanh(av) @ bv, f"matmul {shapes} ({kind} layout)")


def test_policy_table_names_the_row_of_a_1000_square_matmul():
    """The policy is data: what a shape gets is read without building kernels."""
    from polyarray.codegen.policy.classify import Contraction, Reduction
    from polyarray.codegen.policy.device import Device
    from polyarray.codegen.policy import Form, choose
    square = Contraction(1000, 1000, 1000, True, False, Reduction(10**6, 1000, True, "sum"))
    gpu = choose(square, Device(cpu=False))
    # 128 tiles of 128 x 64 fill less than one per SM: K is split in 3 (336 each)
    assert (gpu.form, gpu.rule) == (Form.TILED_MATMUL, "matmul: split-K (few tiles, long K)")
    assert (gpu.params["block"], gpu.params["block_j"]) == (128, 64)
    assert gpu.params["pad"][:2] == (1024, 1024)        # ragged edges: padded, guarded
    assert (gpu.params["split"], gpu.params["chunk"]) == (3, 336)
    mid = choose(Contraction(1536, 1536, 1536, True, False, Reduction(1536**2, 1536, True, "sum")),
                 Device(cpu=False))
    assert mid.rule == "matmul: 128 x 64 register tiles"
    big = choose(Contraction(4097, 4097, 4097, True, False, Reduction(4097**2, 4097, True, "sum")),
                 Device(cpu=False))
    assert (big.form, big.rule) == (Form.TILED_MATMUL, "matmul: 128 x 128 register tiles")
    assert big.params["pad"] == (4224, 4224, 4112)
    skinny = choose(Contraction(64, 64, 4096, True, False, Reduction(4096, 4096, True, "sum")),
                    Device(cpu=False))
    assert skinny.rule == "matmul: split-K (few tiles, long K)"
    assert skinny.params["split"] * skinny.params["chunk"] >= 4096
    cpu = choose(square, Device(cpu=True))
    assert (cpu.form, cpu.rule) == (Form.PACKED_MATMUL, "cpu: packed register tiles")
    assert cpu.params == dict(rows=4, vectors=2, lanes=8)      # float8 accumulators
    tiny = Contraction(3, 7, 5, True, False, Reduction(21, 5, True, "sum"))
    assert choose(tiny, Device(cpu=True)).rule == "cpu: contraction as a reduction > cpu: thread"


@needs_opencl
def test_kernels_inspectable_after_disk_cache_hit(tmp_path, monkeypatch):
    import polyarray.targets.device_common as dc
    monkeypatch.setenv("POLYARRAY_CACHE_DIR", str(tmp_path))
    x = pa.placeholder("x", (33, 7), np.float32)
    expr = pa.exp(x).sum(axis=1)
    first = pa.compile(expr, target="opencl")
    dc.clear_memory_cache()
    from polyarray.targets.opencl import _CACHE
    _CACHE.memory.clear()
    second = pa.compile(expr, target="opencl")
    assert second._exe.compiled.origin == "disk"
    k1, k2 = first.kernels, second.kernels
    assert list(k1) == list(k2)
    assert all(k.loopy_kernel is not None for k in k2.values())
    assert str(k2[list(k2)[0]].loopy_kernel.name) == list(k2)[0]


def test_compiling_many_kernels_logs_progress(caplog):
    x = pa.placeholder("x", (10, 8), np.float32)
    outs = [x.sum(axis=0), x.max(axis=1), x.min(axis=0), (x * 2).sum(), x.mean(axis=1), x + 1.0]
    with caplog.at_level(logging.INFO, logger="polyarray.codegen"):
        L = lower(outs)
    assert len(L.kernels) > 4
    assert "lowering" in caplog.text and "generating code for" in caplog.text


@pytest.mark.parametrize("target", [t for t in TEST_TARGETS if t != "numpy"])
@pytest.mark.parametrize("shape,axis", [((5, 300), 1), ((20000,), None), ((600, 9), 0),
                                        ((40, 30), 0)])
def test_nan_propagation_and_first_index_rules(shape, axis, target):
    available, why = targets.availability(target)
    if not available:
        pytest.skip(f"{target}: {why}")
    rng = np.random.default_rng(5)
    xv = rng.integers(0, 4, shape).astype(np.float32)     # many ties
    xv.reshape(-1)[[3, 7, 11]] = np.nan
    x = pa.placeholder("x", shape, np.float32)
    outs = {"max": x.max(axis=axis), "min": x.min(axis=axis), "argmax": x.argmax(axis=axis),
            "argmin": x.argmin(axis=axis), "fmaxlike": pa.maximum(x, 1.0).sum(axis=axis)}
    with np.errstate(invalid="ignore"):
        refs = {"max": xv.max(axis=axis), "min": xv.min(axis=axis),
                "argmax": xv.argmax(axis=axis), "argmin": xv.argmin(axis=axis),
                "fmaxlike": np.maximum(xv, 1.0).sum(axis=axis)}
    kinds = ("gpu", "cpu") if target == "opencl" else (None,)
    for kind in kinds:
        opts = {"device_kind": kind} if kind else {}
        got = pa.compile(outs, target=target, **opts)(x=xv)
        for k in outs:
            assert_same(got[k], np.asarray(refs[k]), f"{k} {shape} axis={axis} ({kind})")


@needs_opencl
def test_memory_stats_and_pool_reuse():
    x = pa.placeholder("x", (4096,), np.float32)
    prog = pa.compile(x * 3.0, target="opencl", out="device")
    out = prog(x=np.ones(4096, np.float32))
    stats = pa.memory_stats("opencl")
    assert stats["active_blocks"] >= 1 and "held_blocks" in stats
    del out
    prog.synchronize()
    after = pa.memory_stats("opencl")
    assert after["active_blocks"] <= stats["active_blocks"] - 1
    assert after["held_blocks"] >= 1               # kept by the pool for reuse
    assert pa.memory_stats("numpy") == {}


@needs_opencl
@pytest.mark.parametrize("shape,axis", [(((1 << 20) + 37,), None), ((3, 100003), 1),
                                        ((2048, 2048), None)])
@pytest.mark.parametrize("op", ["sum", "max", "argmin"])
def test_two_stage_reductions_in_gpu_layout(shape, axis, op):
    """GPU two-stage reductions: each work-group reduces a contiguous chunk
    (a ragged last one included), a second kernel the partials."""
    import loopy as lp
    from polyarray.codegen import lower_program
    rng = np.random.default_rng(3)
    xv = rng.standard_normal(shape).astype(np.float32)
    x = pa.placeholder("x", shape, np.float32)
    out = getattr(x, op)(axis=axis)
    kinds = [k.form for k in lower_program([out.node], lp.CudaTarget()).kernels]
    assert "two-stage 1" in kinds, kinds
    got = pa.compile(out, target="opencl", device_kind="gpu")(x=xv)
    want = getattr(xv.astype(np.float64) if op == "sum" else xv, op)(axis=axis)
    if op == "sum":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)
    else:
        assert_same(np.asarray(got), np.asarray(want))


# -- loops: stencils, broadcasts, long selects -----------------------------------

def jacobi_1d(steps, a, b):
    """NPBench's jacobi_1d on NumPy arrays (in place) or Arrays (``x[1:-1] =
    v`` rebinds the handle to a functional update)."""
    for _ in range(steps):
        b[1:-1] = 0.33333 * (a[:-2] + a[1:-1] + a[2:])
        a[1:-1] = 0.33333 * (b[:-2] + b[1:-1] + b[2:])
    return a, b


def jacobi_2d(steps, a, b):
    """NPBench's jacobi_2d, as ``jacobi_1d``."""
    for _ in range(steps):
        b[1:-1, 1:-1] = 0.2 * (a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[2:, 1:-1]
                               + a[:-2, 1:-1])
        a[1:-1, 1:-1] = 0.2 * (b[1:-1, 1:-1] + b[1:-1, :-2] + b[1:-1, 2:] + b[2:, 1:-1]
                               + b[:-2, 1:-1])
    return a, b


@pytest.mark.parametrize("loop, shape", [(jacobi_1d, (40,)), (jacobi_2d, (9, 11))],
                         ids=["jacobi_1d", "jacobi_2d"])
def test_stencil_loops_match_numpy(loop, shape, target):
    rng = np.random.default_rng(0)
    a0, b0 = rng.random(shape), rng.random(shape)
    a, b = (pa.placeholder(n, shape, np.float64) for n in "ab")
    got = pa.compile(list(loop(12, a, b)), target=target)(a=a0, b=b0)
    for g, w in zip(got, loop(12, a0.copy(), b0.copy())):
        assert_same(g, w)


@pytest.mark.parametrize("loop, shape", [(jacobi_1d, (40,)), (jacobi_2d, (9, 11))],
                         ids=["jacobi_1d", "jacobi_2d"])
def test_a_stencil_step_is_not_inlined_into_the_next(loop, shape):
    """Each update reads the last one at several offsets: inlined, every step
    would hold the last one once per offset (3^k copies for k steps of
    jacobi_1d: 1.1 MB of OpenCL at 3 steps).  So a kernel per update, which
    reads the buffers of the last two updates and the inputs alone: the
    value written by ``b[1:-1] = v`` and read back as ``b[1:-1]`` comes
    from ``b``'s buffer (``plan/data.Materialized.stored``), the edges
    that no step writes from the inputs, not from the whole chain again."""
    a, b = (pa.placeholder(n, shape, np.float64) for n in "ab")
    eight = lower(list(loop(8, a, b)))
    assert len(eight.kernels) == 16
    assert max(len(k.args) for k in eight.kernels) <= 5, [k.args for k in eight.kernels]
    a, b = (pa.placeholder(n, shape, np.float64) for n in "ab")
    assert len(lower(list(loop(40, a, b))).source) == len(eight.source)


def _lid_driven(u, v, steps):
    """A stencil whose boundary rows and columns are written after its
    interior each step (NPBench's cavity_flow): the writes cover the whole
    array, so nothing of the step before is read afterwards."""
    for _ in range(steps):
        un = u.copy()
        u[1:-1, 1:-1] = (un[1:-1, 1:-1] - 0.1 * (un[1:-1, 1:-1] - un[1:-1, 0:-2])
                         + 0.02 * (un[2:, 1:-1] - un[0:-2, 1:-1]) + 0.01 * v[1:-1, 1:-1])
        u[0, :] = 0
        u[:, 0] = 0
        u[:, -1] = 0
        u[-1, :] = 1
    return u


def test_a_step_whose_writes_cover_the_array_reads_nothing_older(target):
    """A read that spans a few pieces of an updated array (its edges and
    interior) is read piece by piece through the updates (``ops/assign``),
    so a dead branch of the last step's select does not keep the step
    before alive: the kernels of 8 and 32 steps are the same 9 forms
    (read piece by piece only through the whole array: 13 and 16)."""
    forms = {}
    for steps in (8, 32):
        u, v = (pa.placeholder(n, (21, 23), np.float64) for n in "uv")
        L = lower(_lid_driven(u * 1.0, v, steps))
        forms[steps] = (L.source.count("__kernel"), max(len(k.args) for k in L.kernels))
        assert len(L.kernels) >= steps
    assert forms[32] == forms[8] and forms[8][0] <= 10, forms
    rng = np.random.default_rng(9)
    u0, v0 = rng.random((21, 23)), rng.random((21, 23))
    u, v = (pa.placeholder(n, (21, 23), np.float64) for n in "uv")
    got = pa.compile(_lid_driven(u * 1.0, v, 12), target=target)(u=u0, v=v0)
    assert_same(got, _lid_driven(u0.copy(), v0, 12))


def test_cheap_values_read_at_two_offsets_stay_fused():
    """``(a * b)[1:] - (a * b)[:-1]``: the product is computed again at the
    second offset (``MAX_RECOMPUTED``), one kernel; a long expression
    read so gets a buffer instead of being computed twice."""
    a, b = (pa.placeholder(n, (1000,), np.float32) for n in "ab")
    assert len(lower((a * b)[1:] - (a * b)[:-1]).kernels) == 1
    e = a
    for k in range(10):
        e = pa.sin(e) * b + k
    assert len(lower(e[1:] - e[:-1]).kernels) == 2


def _carried_chain(v, a, steps):
    """A velocity carried through a time loop (NPBench's nbody): each step
    adds to it and sums its energy, which reads it."""
    energy = []
    for k in range(steps):
        v = v + a * (0.5 + k % 2)
        energy.append((v * v).sum())
    return v, energy


def test_a_chain_carried_through_a_loop_is_not_recomputed_by_every_step(target):
    """Inlined, each step's sum would recompute ``v`` from its first step:
    every kernel different and longer than the last.  Held by more than
    ``MAX_HOLDING_KERNELS`` kernels, the chain gets a buffer at
    intervals, so the sums repeat a few forms and the source stops growing
    with the steps."""
    from polyarray.codegen import policy
    holding = policy.current_thresholds().MAX_HOLDING_KERNELS
    v, a = (pa.placeholder(n, (300,), np.float64) for n in "va")
    short, long_ = (lower([out[0], *out[1]])
                    for s in (3 * holding, 6 * holding)
                    for out in [_carried_chain(v, a, s)])
    # twice the steps: twice the launches, the same distinct kernels (24 and 48
    # steps inlined were 25 and 40 kernels, 61 and 118 KB of OpenCL)
    assert len(long_.kernels) > len(short.kernels) > 3 * holding
    assert long_.source.count("__kernel") == short.source.count("__kernel") <= 12
    assert len(long_.source) < 1.1 * len(short.source)
    rng = np.random.default_rng(3)
    v0, a0 = rng.random(300), rng.random(300)
    out = _carried_chain(v, a, 40)
    got = pa.compile([out[0], *out[1]], target=target)(v=v0, a=a0)
    want = _carried_chain(v0, a0, 40)
    assert_same(got[0], want[0])
    assert_same(np.array(got[1:]), np.array(want[1]))


def test_a_scalar_chain_added_to_a_matrix_is_computed_once(target):
    """NPBench's go_fast: ``trace += tanh(a[i, i])``, then ``a + trace``.
    Inlined into the matrix's kernel, every element would redo the chain
    (``MAX_REPEATED_INLINE``): a one-element kernel computes it."""
    n = 200
    a = pa.placeholder("a", (n, n), np.float64)
    trace = 0.0
    for i in range(n):
        trace = trace + pa.tanh(a[i, i])
    L = lower(a + trace)
    assert len(L.kernels) == 2 and L.source.count("pa_tanh_float64(") == n + 1
    # PoCL compiles a kernel when first launched, in time growing with the square of
    # inlined float64 tanh calls: compiled once (noinline.noinline_opencl_helpers)
    assert "__attribute__((noinline)) double pa_tanh_float64(" in L.source
    a0 = np.random.default_rng(1).random((n, n))
    assert_same(pa.compile(a + trace, target=target)(a=a0), a0 + np.tanh(np.diag(a0)).sum())


def _row_recurrence(x, y):
    """``y[i] = x[i] + y[i-1] / 2 - y[i-2] / 4`` row by row, written into
    ``y`` (deriche's sweeps), then ``2 y``: polyarray's or NumPy's arrays."""
    y[0, :] = x[0, :]
    y[1, :] = x[1, :] + 0.5 * y[0, :]
    for i in range(2, x.shape[0]):
        y[i, :] = x[i, :] + 0.5 * y[i - 1, :] - 0.25 * y[i - 2, :]
    return y * 2


def test_a_region_of_many_results_is_compiled_once_on_opencl(target):
    """A row recurrence unrolled into each work-item (deriche's sweeps) is an
    outlined region returning a value per row through pointers; PoCL took
    time growing faster than its size to inline it at the first launch, so
    at ``OPENCL_NOINLINE_REGION_RESULTS`` results it is a call there
    (the same numbers); a region of few results stays inlined."""
    import re
    from polyarray.codegen import policy

    def regions(source):
        return [(m.group(1), sum("*" in q for q in m.group(2).split(",")))
                for m in re.finditer(r"^static (.*?) double pa_r_\w+\(([^)]*)\)", source, re.M)]

    def recurrence(rows):
        return _row_recurrence(pa.placeholder("x", (rows, 16), np.float64),
                               pa.zeros((rows, 16)))
    least = policy.current_thresholds().OPENCL_NOINLINE_REGION_RESULTS
    (qual, results), = regions(lower(recurrence(120)).source)
    assert results >= least and qual == "__attribute__((noinline))"
    (qual, results), = regions(lower(recurrence(60)).source)
    assert results < least and "always_inline" in qual
    x0 = np.random.default_rng(3).random((120, 16))
    assert_same(pa.compile(recurrence(120), target=target)(x=x0),
                _row_recurrence(x0, np.zeros((120, 16))))


def test_many_pieces_are_selected_by_a_balanced_tree(target):
    """300 computed columns stacked: the piece of a position is found by
    nested conditionals, balanced (nesting 300 deep passed the 256 brackets
    clang allows)."""
    x = pa.placeholder("x", (8,), np.float32)
    out = pa.stack([x * np.float32(k) + 1 for k in range(300)], axis=1)
    x0 = np.random.default_rng(2).random(8, dtype=np.float32)
    assert_same(pa.compile(out, target=target)(x=x0),
                np.stack([x0 * np.float32(k) + 1 for k in range(300)], axis=1))


def test_thresholds_are_a_value_given_to_the_lowering():
    """The policy reads the thresholds it is given: elements per work-item
    from ``ELEMENTWISE_ILP`` (given to ``lower_program``, or in force in
    ``using_thresholds``), never a module global; ``pa.compile`` under other
    thresholds gets code made under them, not a program cached under the
    measured ones (CUDA source, no device needed)."""
    import loopy as lp
    from polyarray.codegen import lower_program, policy
    x = pa.placeholder("x", (1 << 20,), np.float32)
    out = pa.sin(x) * 2 + 1

    def first(**kw):
        k = lower_program([out.node], lp.CudaTarget(), **kw).kernels[0]
        return k.rule, k.schedule
    rule, steps = first()
    assert rule == "gpu: elements per item" and steps[0].n == 4
    with policy.using_thresholds(ELEMENTWISE_ILP=2):
        assert first()[1][0].n == 2
        two = pa.compile(out, target="cuda").source
    assert first(thresholds=policy.Thresholds(ELEMENTWISE_ILP=1))[0] == "gpu: flat"
    assert first() == (rule, steps)
    assert pa.compile(out, target="cuda").source != two


def test_a_kernel_reading_many_buffers_is_one_element_per_work_item_on_gpus():
    """Elements per work-item are for streams; a kernel selecting among
    hundreds of row pieces (deriche's sweeps) would carry its select tree
    once per element in its source: past ``ILP_MAX_BUFFERS`` buffers
    it computes one element per work-item (CUDA source, no device needed)."""
    import loopy as lp
    from polyarray.codegen import lower_program, policy

    def last(rows):
        out = _row_recurrence(pa.placeholder("x", (rows, 2048), np.float32),
                              pa.zeros((rows, 2048), np.float32))
        kernels = lower_program([out.node], lp.CudaTarget()).kernels
        k = list(kernels.values() if isinstance(kernels, dict) else kernels)[-1]
        return k.rule, len(set(k.args))
    most = policy.current_thresholds().ILP_MAX_BUFFERS
    rule, args = last(40)
    assert rule == "gpu: elements per item" and args <= most
    rule, args = last(120)
    assert rule == "gpu: flat" and args > most


def test_the_policy_page_shows_the_table_as_describe_prints_it():
    """docs/design/policy.md holds ``print(policy.describe())``: a row added,
    renamed or moved in ``RULES`` shows on the page that maps them."""
    import os
    from polyarray.codegen import policy
    page = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "design", "policy.md")
    with open(page) as f:
        text = f.read()
    assert policy.describe() in text, "regenerate the table in docs/design/policy.md"
