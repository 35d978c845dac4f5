"""Run the benchmark kernels a few times each, for a profiler to measure.

``ncu --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
python -m benchmarks.kernel_profile`` gives each kernel's device time and
DRAM throughput, without host launch overhead in the numbers.
"""
import numpy as np

import polyarray as pa
from .workloads import chain10_pa


def main():
    import pycuda.autoprimaryctx  # noqa: F401
    import pycuda.gpuarray as ga
    rng = np.random.default_rng(0)
    n = 1 << 26
    xv = rng.uniform(-1, 1, n).astype(np.float32)
    x = pa.placeholder("x", (n,), np.float32)
    m = pa.placeholder("m", (8192, 8192), np.float32)
    s = pa.placeholder("s", (4096, 1024), np.float32)
    xd, md = ga.to_gpu(xv), ga.to_gpu(xv.reshape(8192, 8192))
    sd = ga.to_gpu(xv[:4096 * 1024].reshape(4096, 1024))
    e = pa.exp(s - s.max(axis=1, keepdims=True))
    for expr, binds in ((chain10_pa(x), {"x": xd}), (m.sum(), {"m": md}),
                        (m.sum(axis=0), {"m": md}), (m.sum(axis=1), {"m": md}),
                        (e / e.sum(axis=1, keepdims=True), {"s": sd})):
        prog = pa.compile(expr, target="cuda", out="device")
        for _ in range(3):
            prog(**binds)
        prog.synchronize()


if __name__ == "__main__":
    main()
