"""pa.raw_kernel: hand-written CUDA / OpenCL kernels as DAG nodes, launched in
order with the fused kernels around them (docs/design/user-kernels.md, "Raw kernels")."""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import polyarray as pa
from polyarray import targets
from helpers import assert_same, subprocess_env

SAXPY = {
    "opencl": """
__kernel void saxpy(__global const float *x, __global const float *y,
                    __global float *out, const float a, const int n)
{
    int i = get_global_id(0);
    if (i < n) out[i] = a * x[i] + y[i];
}
""",
    "cuda": """
__global__ void saxpy(const float *x, const float *y, float *out, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
"""}

# several outputs (one bool), scalars of three types, a 2-D launch
STATS = {
    "opencl": """
#define AT(r, c) ((r) * cols + (c))
__kernel void stats(__global const double *m, __global const long *shift,
                    __global double *twice, __global long *moved, __global uchar *positive,
                    const long rows, const int cols, const double scale)
{
    size_t r = get_global_id(1), c = get_global_id(0);
    if (r < rows && c < cols) {
        twice[AT(r, c)] = scale * m[AT(r, c)];
        moved[AT(r, c)] = shift[c] + (long)r;
        positive[AT(r, c)] = m[AT(r, c)] > 0;
    }
}
""",
    "cuda": """
#define AT(r, c) ((r) * cols + (c))
__device__ double times(double a, double b) { return a * b; }
__global__ void stats(const double *m, const long *shift, double *twice, long *moved,
                      unsigned char *positive, long rows, int cols, double scale)
{
    long r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows && c < cols) {
        twice[AT(r, c)] = times(scale, m[AT(r, c)]);
        moved[AT(r, c)] = shift[c] + r;
        positive[AT(r, c)] = m[AT(r, c)] > 0;
    }
}
"""}


def _language(target):
    """The kernel language a target runs (numpy: OpenCL source and its reference)."""
    return target if target in ("cuda", "opencl") else "opencl"


def saxpy(language, **kw):
    return pa.raw_kernel(SAXPY[language], "saxpy", language=language,
                         outputs=lambda x, y, a, n: [(x.shape, x.dtype)],
                         grid=lambda x, y, a, n: (n + 63) // 64, block=64,
                         reference=lambda x, y, a, n: a * x + y, **kw)


def stats(language):
    def reference(m, shift, rows, cols, scale):
        return scale * m, shift[None, :] + np.arange(rows)[:, None], m > 0
    return pa.raw_kernel(
        STATS[language], "stats", language=language,
        outputs=lambda m, shift, rows, cols, scale: [
            (m.shape, np.float64), (m.shape, np.int64), (m.shape, np.bool_)],
        grid=lambda m, shift, rows, cols, scale: ((cols + 7) // 8, (rows + 3) // 4),
        block=(8, 4), reference=reference)


def test_a_raw_kernel_runs_in_order_between_fused_kernels(target):
    """pa.sin(k(pa.exp(x), y)[0]) * 2: [elementwise, raw, elementwise], the
    raw kernel reading a buffer the first kernel computed, the last reading
    the raw kernel's output; 100 elements, 2 groups of 64 (bounds checked)."""
    rng = np.random.default_rng(0)
    xv, yv = rng.random(100, np.float32), rng.random(100, np.float32)
    x, y = pa.placeholder("x", (100,), np.float32), pa.placeholder("y", (100,), np.float32)
    k = saxpy(_language(target))
    r = k(pa.exp(x), y, 2.5, n=100)
    assert isinstance(r, tuple) and len(r) == 1 and r[0].shape == (100,)
    prog = pa.compile([pa.sin(r[0]) * 2, r[0]], target=target)
    got = prog(x=xv, y=yv)
    assert_same(got[0], np.sin(2.5 * np.exp(xv) + yv) * 2)
    assert_same(got[1], 2.5 * np.exp(xv) + yv)
    if target != "numpy":
        infos = list(prog.kernels.values())
        assert [k.form for k in infos] == ["elementwise", "raw", "elementwise"]
        assert [k.name for k in infos][1] == "k1_saxpy" and infos[1].entry == "saxpy"
        assert infos[1].gsize == (2,) and infos[1].lsize == (64,)
        assert infos[1].rule == "raw: the user's kernel"
        assert prog.source.count("void saxpy(") == 1


def test_outputs_scalars_and_a_2d_launch(target):
    """Three outputs (float64, int64, bool) of one launch, long/int/double
    scalars, a 2-D grid; inputs a transposed view and a broadcast (copied
    into C-order buffers first); only two outputs read: the third is still
    written (a temporary).  Both launches of one kernel share its source."""
    rng = np.random.default_rng(1)
    rows, cols = 13, 21
    mv = rng.standard_normal((cols, rows))
    m = pa.placeholder("m", (cols, rows), np.float64)
    shift = pa.arange(cols, dtype=np.int64) * 3
    k = stats(_language(target))
    twice, moved, positive = k(m.T, shift, rows, cols, scale=0.5)
    assert (twice.dtype, moved.dtype, positive.dtype) == (np.float64, np.int64, np.bool_)
    again = k(m.T + 1, shift, rows=rows, cols=cols, scale=2.0)[1]     # output 1 only
    prog = pa.compile({"a": twice.sum(axis=0), "b": moved, "c": positive, "d": again - moved},
                      target=target)
    got = prog(m=mv)
    ref_moved = np.arange(cols)[None, :] * 3 + np.arange(rows)[:, None]
    assert_same(got["a"], (0.5 * mv.T).sum(axis=0))
    assert_same(got["b"], ref_moved)
    assert_same(got["c"], mv.T > 0)
    assert_same(got["d"], np.zeros((rows, cols), np.int64))
    if target != "numpy":
        raw = [k for k in prog.kernels.values() if k.form == "raw"]
        assert len(raw) == 2 and raw[0].gsize == (3, 4) and raw[0].lsize == (8, 4)
        assert prog.source.count("void stats(") == 1


def test_raw_kernel_as_output_of_placeholders_and_device_results():
    """The raw kernel's output is the program's output; inputs are the
    placeholders' own buffers; device results feed back as bindings."""
    x, y = pa.placeholder("x", (5,), np.float32), pa.placeholder("y", (5,), np.float32)
    out, = saxpy("opencl")(x, y, -1.0, 5)
    prog = pa.compile(out, target="opencl", out="device")
    xv, yv = np.arange(5, dtype=np.float32), np.ones(5, np.float32)
    first = prog(x=xv, y=yv)
    assert_same(first.get(), 1 - xv)
    assert_same(prog(x=first, y=yv).get(), xv)
    assert [k.form for k in prog.kernels.values()] == ["raw"]
    assert prog.source.startswith("/* polyarray buffers:")
    from polyarray.targets.device_common import clear_memory_cache
    clear_memory_cache()                # from the disk cache: scalars and entry kept
    again = pa.compile(out, target="opencl")
    assert again._exe.compiled.origin == "disk"
    assert_same(again(x=xv, y=yv), 1 - xv)


def test_reference_runs_once_per_launch_and_is_checked():
    calls = []

    def ref(x, y, a, n):
        calls.append(n)
        return (x + y).astype(np.float64)           # cast within its kind to float32
    k = pa.raw_kernel(SAXPY["opencl"], "saxpy", language="opencl",
                      outputs=[((3,), np.float32)], grid=1, block=4, reference=ref)
    x = pa.placeholder("x", (3,), np.float32)
    r, = k(x, x, 1.0, 3)
    got = pa.compile([r, r * 2], target="numpy")(x=np.ones(3, np.float32))
    assert_same(got[0], np.full(3, 2, np.float32))
    assert_same(got[1], np.full(3, 4, np.float32))
    assert calls == [3]
    bad = pa.raw_kernel(SAXPY["opencl"], "saxpy", language="opencl",
                        outputs=[((4,), np.float32)], grid=1, block=4, reference=ref)
    with pytest.raises(ValueError, match=r"reference of raw kernel 'saxpy' returned "
                                         r"float64\[3\] for output 0, declared float32\[4\]"):
        pa.compile(bad(x, x, 1.0, 3)[0], target="numpy")(x=np.ones(3, np.float32))


def test_wrong_target_and_numpy_without_reference():
    x = pa.placeholder("x", (8,), np.float32)
    cu, = saxpy("cuda")(x, x, 1.0, 8)
    with pytest.raises(ValueError, match=r"raw kernel 'saxpy' is written in CUDA; the "
                                         r"opencl target cannot run it"):
        pa.compile(cu + 1, target="opencl")
    cl, = saxpy("opencl")(x, x, 1.0, 8)
    with pytest.raises(ValueError, match=r"raw kernel 'saxpy' is written in OpenCL; the "
                                         r"cuda target cannot run it"):
        pa.compile(cl, target="cuda")
    plain = pa.raw_kernel(SAXPY["opencl"], "saxpy", language="opencl",
                          outputs=[((8,), np.float32)], grid=1, block=8)
    with pytest.raises(ValueError, match=r"raw kernel 'saxpy' is written in OpenCL; the "
                                         r"numpy target cannot run it without reference="):
        pa.compile(plain(x, x, 1.0, 8)[0], target="numpy")


def test_invalid_source_fails_with_the_compiler_and_the_name():
    bad = SAXPY["opencl"].replace("a * x[i]", "a * x[i] + undefined_thing")
    k = pa.raw_kernel(bad, "saxpy", language="opencl", outputs=[((8,), np.float32)],
                      grid=1, block=8)
    x = pa.placeholder("x", (8,), np.float32)
    with pytest.raises(targets.BuildError) as e:
        pa.compile(pa.exp(k(x, x, 1.0, 8)[0]), target="opencl")
    assert "raw kernel 'saxpy' (OpenCL, lines" in str(e.value)
    assert "undefined_thing" in str(e.value)


def test_declaration_errors():
    x = pa.placeholder("x", (8,), np.float32)
    src = SAXPY["opencl"]

    def make(**kw):
        return pa.raw_kernel(src, kw.pop("name", "saxpy"), language="opencl",
                             **{"outputs": [((8,), np.float32)], "grid": 1, "block": 8, **kw})
    with pytest.raises(ValueError, match=r"outputs declares 2 output\(s\), but the kernel has "
                                         r"1 output parameter\(s\) \(out"):
        make(outputs=[((8,), np.float32)] * 2)(x, x, 1.0, 8)
    with pytest.raises(TypeError, match=r"output 'out' is declared float64, but its "
                                        r"parameter is float \* \(float32\)"):
        make(outputs=((8,), np.float64))(x, x, 1.0, 8)
    with pytest.raises(TypeError, match=r"input 'y' is float \* \(float32\), but the array "
                                        r"is float64"):
        make()(x, x.astype(np.float64), 1.0, 8)
    with pytest.raises(TypeError, match=r"missing scalar argument 'n'"):
        make()(x, x, 1.0)
    with pytest.raises(TypeError, match=r"no scalar parameter 'm'"):
        make()(x, x, 1.0, n=8, m=2)
    with pytest.raises(OverflowError, match=r"scalar 'n' = 4294967296 does not fit int32"):
        make()(x, x, 1.0, 2**32)
    with pytest.raises(ValueError, match=r"defines no '__kernel void saxpz\(...\)'"):
        pa.raw_kernel(src + "#define saxpz saxpy\n", "saxpz", language="opencl",
                      outputs=[], grid=1, block=1)
    with pytest.raises(ValueError, match=r"raw kernel 'saxpy' is not defined in its source"):
        pa.raw_kernel("__kernel void f(__global float *o) {}", "saxpy", language="opencl",
                      outputs=[], grid=1, block=1)
    with pytest.raises(ValueError, match=r"must be a C identifier that does not start"):
        pa.raw_kernel("__kernel void k0_x(__global float *o) {}", "k0_x",
                      language="opencl", outputs=[], grid=1, block=1)
    with pytest.raises(TypeError, match=r"parameter 'h' has type 'half'"):
        pa.raw_kernel("__kernel void f(__global half *h) {}", "f", language="opencl",
                      outputs=[], grid=1, block=1)
    with pytest.raises(ValueError, match=r"block \(8, 0\) must be positive"):
        make(block=(8, 0))(x, x, 1.0, 8)
    with pytest.raises(ValueError, match=r"grid \(0,\) launches nothing, but its outputs"):
        make(grid=0)(x, x, 1.0, 8)
    empty = pa.placeholder("e", (0,), np.float32)
    assert_same(pa.compile(make(outputs=((0,), np.float32), grid=0)(empty, empty, 1.0, 0)[0] + 1,
                           target="opencl")(e=np.zeros(0, np.float32)), np.zeros(0, np.float32))
    with pytest.raises(ValueError, match=r"block \(2048,\) exceeds the device's work-group"):
        pa.compile(pa.raw_kernel(SAXPY["cuda"], "saxpy", outputs=[((8,), np.float32)], grid=1,
                                 block=2048)(x, x, 1.0, 8)[0], target="cuda")
    with pytest.raises(ValueError, match=r"language must be 'cuda' or 'opencl'"):
        pa.raw_kernel(src, "saxpy", language="metal", outputs=[], grid=1, block=1)
    # two different kernels of one name in one program
    other = pa.raw_kernel(src.replace("a * x[i]", "x[i]"), "saxpy", language="opencl",
                          outputs=[((8,), np.float32)], grid=1, block=8)
    with pytest.raises(ValueError, match=r"two different raw kernels are named 'saxpy'"):
        pa.compile([make()(x, x, 1.0, 8)[0], other(x, x, 1.0, 8)[0]], target="opencl")


@pytest.mark.parametrize("args,kwargs,problem", [
    ((0, 0, 2.0), {}, r"got x, y, a: missing scalar argument 'n'$"),
    ((0,), {}, r"got x: missing input array 'y'; missing scalar arguments 'a', 'n'$"),
    ((), {"a": 2.0, "n": 8}, r"got a, n: missing input arrays 'x', 'y'$"),
    ((0, 0), {"n": 8, "m": 1}, r"got x, y, n: missing scalar argument 'a'; it has no "
                               r"scalar parameter 'm'$"),
], ids=["without_n", "one_input", "keywords_only", "unknown_m"])
def test_wrong_arguments_name_the_parameters_before_the_users_functions(args, kwargs,
                                                                         problem):
    """The outputs/grid functions take the kernel's arguments: a call with too
    few is refused naming the kernel's parameters and what was given, not
    with the lambda's own TypeError."""
    x = pa.placeholder("x", (8,), np.float32)
    args = tuple(x if a == 0 else a for a in args)
    with pytest.raises(TypeError, match=r"raw kernel 'saxpy' is called as saxpy\(x, y, a, n\) "
                                        r"\(input arrays: x, y; scalars: a, n, also by "
                                        r"keyword\); " + problem):
        saxpy("opencl")(*args, **kwargs)


def test_explicit_params_and_schedules():
    """params= for a signature the source writes through a macro; a schedule
    addressed to the raw kernel is refused."""
    src = """
#define KERNEL(name) __kernel void name
KERNEL(twice)(__global const int *x, __global int *y)
{ y[get_global_id(0)] = 2 * x[get_global_id(0)]; }
"""
    k = pa.raw_kernel(src, "twice", language="opencl", params="const int *x, int *y",
                      outputs=lambda x: [(x.shape, x.dtype)], grid=lambda x: x.size // 4,
                      block=4)
    assert [p[0] for p in k.params] == ["in", "out"]
    x = pa.placeholder("x", (12,), np.int32)
    y, = k(x + 1)
    xv = np.arange(12, dtype=np.int32)
    assert_same(pa.compile(y, target="opencl")(x=xv), 2 * (xv + 1))
    prog = pa.compile(y, target="opencl")
    assert prog.schedule["k1_twice"] == ()
    assert pa.compile(y, target="opencl", schedule=prog.schedule).source == prog.source
    with pytest.raises(pa.ScheduleError, match=r"kernel k1_twice is the raw kernel 'twice'"):
        pa.compile(y, target="opencl", schedule={"k1_twice": [pa.schedules.WorkGroup(4)]})


def test_the_source_is_in_the_digest_and_digests_are_stable():
    from polyarray.codegen import program_key
    x = pa.placeholder("x", (8,), np.float32)
    k = saxpy("opencl")
    a, b = k(x, x, 1.0, 8)[0], k(x, x, a=1.0, n=8)[0]
    assert a.node is b.node             # one kernel, equal arguments: one node
    assert saxpy("opencl")(x, x, 1.0, 8)[0].node is not a.node      # another reference
    assert saxpy("opencl")(x, x, 1.0, 8)[0].node.digest == a.node.digest
    c = pa.raw_kernel(SAXPY["opencl"] + "\n// another source", "saxpy", language="opencl",
                      outputs=[((8,), np.float32)], grid=1, block=64)(x, x, 1.0, 8)[0]
    d = saxpy("opencl")(x, x, 1.0, 7)[0]
    keys = {program_key([n.node]) for n in (a, c, d)}
    assert len(keys) == 3
    script = ("import numpy as np, polyarray as pa, sys; sys.path.insert(0, {tests!r}); "
              "from test_raw_kernel import saxpy; x = pa.placeholder('x', (8,), np.float32); "
              "print(saxpy('opencl')(x, x, 1.0, 8)[0].node.digest)").format(
                  tests=os.path.dirname(__file__))
    for seed in ("1", "7"):
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             env=subprocess_env(PYTHONHASHSEED=seed), timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == a.node.digest


def test_show_names_the_kernel():
    x = pa.placeholder("x", (8,), np.float32)
    text = pa.format_dag(saxpy("opencl")(pa.exp(x), x, 2.0, n=8)[0])
    assert "raw_kernel 'saxpy'(%1, %0, a=2.0, n=8)" in text


def _cuda_program():
    x = pa.placeholder("x", (1000,), np.float32)
    m = pa.placeholder("m", (30, 20), np.float64)
    y, = saxpy("cuda")(pa.exp(x), x, 2.0, 1000)
    twice, moved, positive = stats("cuda")(m, pa.arange(20, dtype=np.int64), 30, 20, 3.0)
    return {"y": pa.sin(y) * 2, "t": twice.sum(), "mv": moved, "p": positive}


def test_cuda_source_holds_the_kernels_in_extern_c():
    prog = pa.compile(_cuda_program(), target="cuda")
    src = prog.source
    assert src.count('extern "C" {\n\n__global__ void saxpy(') == 1
    assert "__device__ double times(" in src and "#undef tIdx" in src
    raw = {k.entry: k for k in prog.kernels.values() if k.form == "raw"}
    assert raw["saxpy"].gsize == (16,) and raw["stats"].gsize == (3, 8)
    assert raw["stats"].lsize == (8, 4)
    lowered = prog._exe.lowered
    from polyarray.targets.device_common import arg_format
    assert arg_format(raw["stats"].args, lowered.scalars) == "PPPPPlid"
    assert arg_format(raw["saxpy"].args, lowered.scalars) == "PPPfi"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (the CUDA compiler) is not on PATH")
def test_nvcc_compiles_a_program_with_raw_kernels():
    from polyarray.targets.cuda import NVCC_OPTIONS
    src = pa.compile(_cuda_program(), target="cuda").source
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "raw.cu")
        with open(path, "w") as f:
            f.write(src)
        r = subprocess.run(["nvcc", "-cubin", "-arch=sm_90", *NVCC_OPTIONS, path, "-o",
                            os.path.join(d, "raw.cubin")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr + r.stdout
        r = subprocess.run(["cuobjdump", "-symbols", os.path.join(d, "raw.cubin")],
                           capture_output=True, text=True) if shutil.which("cuobjdump") \
            else None
        if r is not None and r.returncode == 0:
            assert "saxpy" in r.stdout and "stats" in r.stdout     # unmangled (extern "C")


def test_cuda_runs_raw_kernels():
    ok, reason = targets.availability("cuda")
    if not ok:
        pytest.skip(f"no CUDA device: {reason}")
    rng = np.random.default_rng(2)
    xv, mv = rng.random(1000, np.float32), rng.standard_normal((30, 20))
    got = pa.compile(_cuda_program(), target="cuda")(x=xv, m=mv)
    assert_same(got["y"], np.sin(2 * np.exp(xv) + xv) * 2)
    assert_same(got["t"], (3.0 * mv).sum())
    assert_same(got["mv"], np.arange(20)[None, :] + np.arange(30)[:, None])
    assert_same(got["p"], mv > 0)


@pytest.mark.skipif(not targets.availability("opencl")[0], reason="no OpenCL device")
def test_opencl_builtin_name_is_explained():
    """PoCL takes ``mix`` as its built-in, and pyopencl's
    bare INVALID_KERNEL_NAME named neither the kernel nor the cause.  Other
    OpenCL compilers may refuse the source, or accept it: then the result
    must be right."""
    src = ("__kernel void mix(__global const float *x, __global float *y, int n)\n"
           "{ int i = get_global_id(0); if (i < n) y[i] = 2 * x[i]; }")
    k = pa.raw_kernel(src, "mix", language="opencl", outputs=lambda x, n: [(x.shape, x.dtype)],
                      grid=lambda x, n: 1, block=lambda x, n: 64)
    x = pa.placeholder("x", (10,), np.float32)
    try:
        got = pa.compile(k(x, n=10)[0], target="opencl")(x=np.ones(10, np.float32))
    except ValueError as e:                   # the kernel is not found: say why
        assert "raw kernel 'mix'" in str(e) and "built-in functions" in str(e), e
    except targets.BuildError as e:           # the compiler refused it: say whose
        assert "mix" in str(e), e
    else:
        np.testing.assert_array_equal(got, np.full(10, 2, np.float32))
