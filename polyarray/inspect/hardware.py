"""What the device can do, measured: copy bandwidth and FMA peak.

Profiles (``prog.profile``) and the benchmarks compare achieved rates with
these two numbers: the **copy bandwidth** (bytes read + written per second
by the device's own device-to-device copy) bounds memory-bound kernels, and
the **FMA peak** (FLOP/s of independent multiply-add chains in registers,
2 FLOP each) bounds compute-bound ones.  Both are measured, not taken from a
data sheet, once per process and device (``measure``).  The FMA peak is
that of scalar FMA units: float64 products on the H100's tensor cores (the
CUDA target's ``mma`` form) can exceed it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..testing.timing import median_time


# a kernel measured this far above a limit says the limit is wrong (estimated
# bytes and flops are not exact, so a little above is not)
ABOVE_ROOF = 1.5


@dataclass(frozen=True)
class Hardware:
    """The measured limits of one device (``measure``), or given by hand."""
    device: str
    copy_bandwidth: float               # bytes read + written per second
    peak_flops: dict = field(default_factory=dict)   # dtype name -> FLOP/s; missing: unknown
    how: str = "measured"

    def peak(self, dtype):
        """FLOP/s of ``dtype`` (float32 where the dtype is not floating), or None."""
        dtype = np.dtype(dtype)
        return self.peak_flops.get(dtype.name if dtype.kind == "f" else "float32")

    def implausible(self, rows=()) -> list:
        """Why these limits cannot be the device's (empty where nothing says
        so): float32's FMA peak below float64's, or a profiled kernel (one of
        ``rows``, ``Profile.rows``) running above them by more than
        ``ABOVE_ROOF`` (a timing the device cut short, a clock that ramped
        up, another job on the device)."""
        why = []
        f32, f64 = self.peak_flops.get("float32"), self.peak_flops.get("float64")
        if f32 and f64 and f32 < f64:
            why.append(f"the float32 FMA peak ({f32 / 1e9:.1f} GFLOP/s) is below float64's "
                       f"({f64 / 1e9:.1f} GFLOP/s)")
        above = [r for r in rows if r.fraction is not None and r.fraction > ABOVE_ROOF]
        if above:
            why.append("above the " + ("FMA peak" if above[0].bound == "compute" else
                                       "copy bandwidth") +
                       ": " + ", ".join(f"{r.name} at {r.fraction:.1f}x" for r in above[:4]))
        return why

    def __str__(self):
        peaks = ", ".join(f"{k} {v / 1e9:.1f} GFLOP/s" for k, v in self.peak_flops.items())
        return (f"{self.device}: copy {self.copy_bandwidth / 1e9:.1f} GB/s (read + write)"
                f"; FMA peak {peaks or 'not measured'} ({self.how})")


_FMA = r"""
{ext}
{qual} void fma_peak({glob} {S} *out, {S} a, int iters)
{{
    {T} v[16];
    for (int k = 0; k < 16; ++k) v[k] = ({T}) ({tid} + k);
    for (int it = 0; it < iters; ++it) {{
        #pragma unroll
        for (int k = 0; k < 16; ++k) v[k] = v[k] * a + ({T}) 0.5;
    }}
    {T} s = v[0];
    for (int k = 1; k < 16; ++k) s += v[k];
    out[({gid}) % (1024 * 1024)] = s{lane};
}}
"""
_C_TYPE = {"float32": "float", "float64": "double"}


def _fma_source(lang, dtype, width=1):
    """16 independent FMA chains per work-item, of ``width``-wide vectors
    (OpenCL on a CPU: PoCL vectorizes explicit vectors, not this loop)."""
    S = _C_TYPE[dtype]
    T, lane = (f"{S}{width}", ".s0") if width > 1 else (S, "")
    if lang == "cuda":
        return _FMA.format(ext="", qual='extern "C" __global__', glob="", S=S, T=T, lane=lane,
                           tid="threadIdx.x", gid="blockIdx.x * blockDim.x + threadIdx.x")
    ext = "#pragma OPENCL EXTENSION cl_khr_fp64: enable" if dtype == "float64" else ""
    return _FMA.format(ext=ext, qual="__kernel", glob="__global", S=S, T=T, lane=lane,
                       tid="get_local_id(0)", gid="get_global_id(0)")


# -- CUDA ---------------------------------------------------------------------
def cuda_copy_bandwidth(n=1 << 26) -> float:
    """Device-to-device ``memcpy`` of ``n`` float32: bytes read + written per second."""
    import pycuda.autoprimaryctx  # noqa: F401
    import pycuda.driver as drv
    a, b = drv.mem_alloc(4 * n), drv.mem_alloc(4 * n)
    drv.memset_d32(a, 0x3F800000, n)
    t = median_time(lambda: drv.memcpy_dtod(b, a, 4 * n), drv.Context.synchronize, repeat=10)
    return 2 * 4 * n / t


def cuda_peak_flops(dtype="float32", iters=4096) -> float:
    """FMA throughput: 16 independent chains per thread, 8 blocks of 256 per SM."""
    from ..targets.cuda.build import build_module      # the target's build (NVRTC, cached)
    from ..targets.cuda.driver import driver
    drv, dev = driver()
    major, minor = dev.compute_capability()
    fn = build_module(_fma_source("cuda", dtype), f"sm_{major}{minor}").get_function("fma_peak")
    out = drv.mem_alloc(8 * 1024 * 1024)
    blocks = dev.get_attribute(
        drv.device_attribute.MULTIPROCESSOR_COUNT) * 8
    a = np.dtype(dtype).type(1.0001)

    def run():
        fn(out, a, np.int32(iters), block=(256, 1, 1), grid=(blocks, 1))
    return 2 * 16 * iters * 256 * blocks / median_time(run, drv.Context.synchronize, repeat=10)


# -- OpenCL -------------------------------------------------------------------
def opencl_copy_bandwidth(queue, n=None) -> float:
    """``enqueue_copy`` between two buffers of ``n`` float32 (2^26 on a GPU,
    2^24 on a CPU device: past its caches): bytes read + written per second."""
    import pyopencl as cl
    gpu = bool(queue.device.type & cl.device_type.GPU)
    n = n or (1 << 26 if gpu else 1 << 24)
    a = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 4 * n)
    b = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 4 * n)
    cl.enqueue_fill_buffer(queue, a, np.float32(1), 0, 4 * n)
    t = median_time(lambda: cl.enqueue_copy(queue, b, a), queue.finish, repeat=5,
                    min_time=0.05)
    return 2 * 4 * n / t


def opencl_peak_flops(queue, dtype="float32"):
    """FMA throughput as on CUDA (8 work-groups per compute unit); None where
    the device lacks ``dtype`` (float64 without cl_khr_fp64)."""
    import pyopencl as cl
    dev = queue.device
    if dtype == "float64" and not dev.double_fp_config:
        return None
    gpu = bool(dev.type & cl.device_type.GPU)
    width = 1 if gpu else (dev.native_vector_width_float if dtype == "float32"
                           else dev.native_vector_width_double)
    width = width if width in (2, 4, 8, 16) else 1
    iters = 4096 if gpu else 256
    wg = min(256 if gpu else 64, dev.max_work_group_size)
    groups = dev.max_compute_units * 8
    # built as the target builds its programs: the compiler's remarks go to the log
    # (NVIDIA's OpenCL says something about this kernel: a CompilerWarning otherwise)
    from polyarray.targets.opencl import OpenCLTarget
    knl = OpenCLTarget._build(queue.context, _fma_source("opencl", dtype, width)).fma_peak
    out = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 8 * 1024 * 1024)
    a = np.dtype(dtype).type(1.0001)

    def run():
        knl(queue, (groups * wg,), (wg,), out, a, np.int32(iters))
    t = median_time(run, queue.finish, repeat=5, min_time=0.05)
    return 2 * 16 * width * iters * wg * groups / t


# -- the host (the NumPy target) -----------------------------------------------
def host_copy_bandwidth(n=1 << 24) -> float:
    """``np.copyto`` of ``n`` float32: bytes read + written per second."""
    a, b = np.ones(n, np.float32), np.empty(n, np.float32)
    return 2 * 4 * n / median_time(lambda: np.copyto(b, a), repeat=5, min_time=0.05)


_MEASURED = {}


def measure(target=None, queue=None) -> Hardware:
    """The copy bandwidth and FMA peaks of ``target``'s device: "cuda" (the
    current device), "opencl" (``queue``'s device, else the one
    ``select_device`` picks), "numpy" (the host's copy bandwidth, no peak).
    Measured once per process and device (a second or two)."""
    if target is None:
        from polyarray.targets import best_available
        target = best_available()
    if target == "opencl" and queue is None:
        import pyopencl as cl
        from polyarray.targets.opencl import select_device
        ctx, dev, _ = select_device()
        queue = cl.CommandQueue(ctx, dev)
    key = (target, queue.device.int_ptr if queue is not None else None)
    if key not in _MEASURED:
        t0 = time.perf_counter()
        if target == "cuda":
            import pycuda.autoprimaryctx  # noqa: F401
            import pycuda.driver as drv
            hw = Hardware(f"CUDA {drv.Context.get_device().name()}", cuda_copy_bandwidth(),
                          {d: cuda_peak_flops(d) for d in ("float32", "float64")})
        elif target == "opencl":
            peaks = {d: opencl_peak_flops(queue, d) for d in ("float32", "float64")}
            hw = Hardware(f"OpenCL {queue.device.name.strip()}", opencl_copy_bandwidth(queue),
                          {d: v for d, v in peaks.items() if v})
        elif target == "numpy":
            hw = Hardware("the host (NumPy)", host_copy_bandwidth())
        else:
            raise ValueError(f"unknown target {target!r} (cuda, opencl, numpy)")
        import logging
        logging.getLogger("polyarray").debug("polyarray: measured %s in %.2f s", hw,
                                             time.perf_counter() - t0)
        _MEASURED[key] = hw
    return _MEASURED[key]


__all__ = ["ABOVE_ROOF", "Hardware", "cuda_copy_bandwidth", "cuda_peak_flops",
           "host_copy_bandwidth", "measure", "opencl_copy_bandwidth", "opencl_peak_flops"]
