"""Experiment (CUDA GPU): which access pattern reaches copy bandwidth?

``python -m benchmarks.probe_bandwidth`` times hand-written CUDA variants of
the 10-op chain (1 read + 1 write of 2^26 float32) and of the full / axis-0
sums of 8192^2 float32 with CUDA events, next to cudaMemcpy device to
device.  Its table decides the access patterns codegen's defaults use.
"""
import numpy as np
import pycuda.autoprimaryctx  # noqa: F401
import pycuda.driver as drv
import pycuda.gpuarray as ga
from pycuda.compiler import SourceModule

SRC = r"""
#define HORNER(v) (((((v * 1.5f + 0.5f) * v - 0.25f) * v + 1.0f) * v - 2.0f) * v + 3.0f)
extern "C" {
__global__ void e_scalar(float *out, const float *__restrict__ x, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) { float v = x[i]; out[i] = HORNER(v); } }

__global__ void e_vec4(float4 *out, const float4 *__restrict__ x, int n4)
{ int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) { float4 v = x[i], r; r.x = HORNER(v.x); r.y = HORNER(v.y); r.z = HORNER(v.z);
                r.w = HORNER(v.w); out[i] = r; } }

__global__ void e_vec4x2(float4 *out, const float4 *__restrict__ x, int n4)
{ int i = blockIdx.x * blockDim.x * 2 + threadIdx.x;
  float4 a = x[i], b = x[i + blockDim.x], r, s;
  r.x = HORNER(a.x); r.y = HORNER(a.y); r.z = HORNER(a.z); r.w = HORNER(a.w);
  s.x = HORNER(b.x); s.y = HORNER(b.y); s.z = HORNER(b.z); s.w = HORNER(b.w);
  out[i] = r; out[i + blockDim.x] = s; }

__global__ void e_ilp4(float *out, const float *__restrict__ x, int n)
{ int i = blockIdx.x * blockDim.x * 4 + threadIdx.x; float v[4];
  #pragma unroll
  for (int k = 0; k < 4; ++k) v[k] = x[i + k * blockDim.x];
  #pragma unroll
  for (int k = 0; k < 4; ++k) out[i + k * blockDim.x] = HORNER(v[k]); }

__global__ void e_gridstride4(float4 *out, const float4 *__restrict__ x, int n4)
{ for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x) {
    float4 v = x[i], r; r.x = HORNER(v.x); r.y = HORNER(v.y); r.z = HORNER(v.z);
    r.w = HORNER(v.w); out[i] = r; } }

__device__ float block_sum(float acc)
{ __shared__ float s[32];
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffff, acc, o);
  if ((threadIdx.x & 31) == 0) s[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x < 32) {
    acc = threadIdx.x < (blockDim.x >> 5) ? s[threadIdx.x] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffff, acc, o); }
  return acc; }

// one partial per block; grid-stride, scalar loads
__global__ void r_block_scalar(float *part, const float *__restrict__ x, int n)
{ float acc = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    acc += x[i];
  acc = block_sum(acc); if (threadIdx.x == 0) part[blockIdx.x] = acc; }

// one partial per block; grid-stride, float4 loads, 2 accumulators
__global__ void r_block_vec4(float *part, const float4 *__restrict__ x, int n4)
{ float a0 = 0.0f, a1 = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x)
  { float4 v = x[i]; a0 += v.x + v.y; a1 += v.z + v.w; }
  float acc = block_sum(a0 + a1); if (threadIdx.x == 0) part[blockIdx.x] = acc; }

// columns: thread per column, C chunks of rows (grid.y), K rows each
__global__ void c_cols(float *part, const float *__restrict__ x, int ncol, int K)
{ int j = blockIdx.x * blockDim.x + threadIdx.x; const float *p = x + (size_t)blockIdx.y * K * ncol + j;
  float acc = 0.0f; for (int k = 0; k < K; ++k) acc += p[(size_t)k * ncol];
  part[blockIdx.y * ncol + j] = acc; }

__global__ void c_cols4(float *part, const float *__restrict__ x, int ncol, int K)
{ int j = blockIdx.x * blockDim.x + threadIdx.x; const float *p = x + (size_t)blockIdx.y * K * ncol + j;
  float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
  for (int k = 0; k < K; k += 4) { a0 += p[(size_t)k * ncol]; a1 += p[(size_t)(k + 1) * ncol];
    a2 += p[(size_t)(k + 2) * ncol]; a3 += p[(size_t)(k + 3) * ncol]; }
  part[blockIdx.y * ncol + j] = (a0 + a1) + (a2 + a3); }

__global__ void c_cols_vec4(float4 *part, const float4 *__restrict__ x, int ncol4, int K)
{ int j = blockIdx.x * blockDim.x + threadIdx.x; const float4 *p = x + (size_t)blockIdx.y * K * ncol4 + j;
  float4 acc = make_float4(0, 0, 0, 0);
  for (int k = 0; k < K; ++k) { float4 v = p[(size_t)k * ncol4]; acc.x += v.x; acc.y += v.y;
    acc.z += v.z; acc.w += v.w; }
  part[blockIdx.y * ncol4 + j] = acc; }
}
"""


def timeit(fn, reps=30):
    start, end = drv.Event(), drv.Event()
    fn()
    fn()
    times = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(end.time_since(start) * 1e-3)
    return float(np.median(times))


def main():
    mod = SourceModule(SRC, no_extern_c=True, arch="sm_90", options=["-lineinfo"])
    f = {name: mod.get_function(name) for name in (
        "e_scalar", "e_vec4", "e_vec4x2", "e_ilp4", "e_gridstride4", "r_block_scalar",
        "r_block_vec4", "c_cols", "c_cols4", "c_cols_vec4")}
    dev = drv.Context.get_device()
    sms = dev.get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT)
    n = 1 << 26
    rng = np.random.default_rng(0)
    xh = rng.uniform(-1, 1, n).astype(np.float32)
    x, out = ga.to_gpu(xh), ga.empty(n, np.float32)
    want = (((((xh * 1.5 + 0.5) * xh - 0.25) * xh + 1.0) * xh - 2.0) * xh + 3.0)
    i32 = np.int32
    t_copy = timeit(lambda: drv.memcpy_dtod(out.gpudata, x.gpudata, 4 * n))
    bw = 8 * n / t_copy
    rows = [("cudaMemcpy DtoD", t_copy, 1.0)]

    def elt(name, launch):
        out.fill(np.float32(np.nan))
        launch()
        assert np.allclose(out.get(), want, rtol=1e-4, atol=1e-4), name
        t = timeit(launch)
        rows.append((name, t, 8 * n / t / bw))
    for wg in (128, 256, 512, 1024):
        elt(f"elt scalar wg{wg}", lambda wg=wg: f["e_scalar"](
            out, x, i32(n), block=(wg, 1, 1), grid=(n // wg, 1)))
    for wg in (128, 256):
        elt(f"elt float4 wg{wg}", lambda wg=wg: f["e_vec4"](
            out, x, i32(n // 4), block=(wg, 1, 1), grid=(n // 4 // wg, 1)))
    elt("elt 2xfloat4 wg256", lambda: f["e_vec4x2"](
        out, x, i32(n // 4), block=(256, 1, 1), grid=(n // 8 // 256, 1)))
    elt("elt scalar ILP4 wg256", lambda: f["e_ilp4"](
        out, x, i32(n), block=(256, 1, 1), grid=(n // 1024, 1)))
    for mult in (4, 8, 16):
        elt(f"elt float4 grid-stride {mult}x{sms} groups", lambda m=mult: f["e_gridstride4"](
            out, x, i32(n // 4), block=(256, 1, 1), grid=(m * sms, 1)))

    total = float(xh.astype(np.float64).sum())
    for name, groups in (("scalar", 1024), ("scalar", 4096), ("vec4", 1024), ("vec4", 4096),
                         ("vec4", 8 * sms)):
        part = ga.empty(groups, np.float32)
        nn = n if name == "scalar" else n // 4

        def launch(part=part, groups=groups, name=name, nn=nn):
            f[f"r_block_{name}"](part, x, i32(nn), block=(256, 1, 1), grid=(groups, 1))
        launch()
        assert abs(float(part.get().astype(np.float64).sum()) - total) < 1e-2 * max(1, abs(total))
        t = timeit(launch)
        rows.append((f"sum all, {name} loads, {groups} groups", t, 4 * n / t / bw))

    ncol = 8192
    colsum = xh.reshape(-1, ncol).astype(np.float64).sum(0)
    for name, C, wg in (("cols", 16, 256), ("cols", 64, 256), ("cols4", 16, 256),
                        ("cols4", 64, 256), ("cols_vec4", 16, 256), ("cols_vec4", 64, 128)):
        part = ga.empty(C * ncol, np.float32)
        K = ncol // C
        nc = ncol // 4 if name.endswith("vec4") else ncol

        def launch(part=part, C=C, name=name, nc=nc, wg=wg, K=K):
            f[f"c_{name}"](part, x, i32(nc), i32(K), block=(wg, 1, 1), grid=(nc // wg, C))
        launch()
        got = part.get().reshape(C, ncol).astype(np.float64).sum(0)
        assert np.allclose(got, colsum, rtol=1e-3, atol=1e-2), name
        t = timeit(launch)
        rows.append((f"sum axis 0, {name}, C={C}, wg {wg}", t, 4 * n / t / bw))

    print(f"{dev.name()}: {sms} SMs, copy {bw / 1e9:.0f} GB/s (read+write)")
    for name, t, frac in rows:
        print(f"{name:45s} {t * 1e6:8.1f} us  {frac:.3f} of copy")


if __name__ == "__main__":
    main()
