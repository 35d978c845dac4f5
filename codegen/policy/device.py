"""The device facts that the policy (``rules.py``) reads.

Two facts change defaults: whether the device is a CPU (contiguous work
per work-item, no local-memory tiles), and whether float64 products may
use the FP64 tensor cores' ``mma`` instruction (``Dialect.fp64_mma``:
CUDA C; the helper falls back to warp shuffles below sm_80, so it holds for
any CUDA device, and OpenCL, even on an NVIDIA GPU, has no inline PTX).
``max_work_group`` is the device's limit, checked after lowering
(``check_work_groups``)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Device:
    cpu: bool = False                   # CPU layouts: contiguous memory per work-item
    max_work_group: tuple | None = None     # (work-items per group, (per axis 0, 1, 2))
    fp64_mma: bool = False              # float64 products on warp-level DMMA (CUDA)
    vendor_solvers: bool = False        # library calls in cuSOLVER (CUDA)
    vendor_fft: str | None = None       # the transforms' library ("cufft", "vkfft"), if any
    vendor_blas: str | None = None      # the matrix products' library ("cublas"), if any
    single_pass_scan: bool = False      # scans as one decoupled look-back kernel (CUDA)
    radix_sort: bool = False            # sorts of a row as radix passes (CUDA)
    flash_attention: bool = False       # softmax(Q K^T) V as one kernel (CUDA)
    row_argmax: bool = False            # argmax/argmin of rows by warp shuffles (CUDA)
