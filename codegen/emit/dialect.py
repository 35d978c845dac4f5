"""The C dialects the device source is written in: OpenCL C and CUDA C.

Loopy prints most of a kernel for its target; what polyarray writes itself
(helpers, outlined regions, checked calls, raw kernels, the helpers
compiled once) asks a few questions of the dialect, and each is an
attribute here: a function's qualifiers, a pointer's address space,
float32 math names, the spelling of 64-bit integers and of inf/NaN, inline
PTX.  ``dialect_of`` picks the object once from the loopy target; nothing
else in codegen tests the target's class or compares target names (the
targets keep their own backend objects).
"""
from __future__ import annotations

import functools


class Dialect:
    """What the generated C says differently per backend."""
    name: str                   # "opencl" | "cuda": a raw kernel's language
    helper_qualifier: str       # a typed helper (cfuncs, checks, pairs, user functions)
    region_qualifier: str       # an outlined region: inlined at each call
    global_space: str           # a global pointer parameter's address space, spaced
    float32_suffix: str         # float32 math functions: expf (CUDA) or exp (overloaded)
    special_float_bits: bool    # inf and NaN as bit casts (loopy's CUDA target has no
    #                             INFINITY or NAN)
    unsigned_64: str            # the unsigned 64-bit type
    suffix_64: str              # a 64-bit integer literal's suffix
    inline_ptx: bool            # inline PTX (predicated stores of the run-time checks)
    fp64_mma: bool              # float64 products on the FP64 tensor cores (PTX mma)
    vendor_solvers: bool        # library calls in cuSOLVER (CUDA, targets/cuda/solvers.py)
    vendor_fft: str             # the transforms' library: "cufft" (CUDA, targets/cuda/fourier.py)
                                # or "vkfft" (OpenCL GPUs, targets/opencl/fourier.py)
    vendor_blas: str | None     # the matrix products' library: "cublas" (CUDA, where
                                # nvmath-python is installed: targets/cuda/blas.py), or None
    single_pass_scan: bool      # scans as one kernel with decoupled look-back (CUDA:
                                # emit/scan_kernels.py; its tile states are inline PTX)
    radix_sort: bool            # sorts of a row as a radix sort (CUDA: emit/sort_kernels.py,
                                # onesweep passes)
    flash_attention: bool       # softmax(Q K^T) V as one kernel (CUDA: emit/attention_kernels.py,
                                # warp shuffles; plan/attention.py finds the chain)
    row_argmax: bool            # argmax/argmin of rows by warp shuffles (CUDA: emit/arg_kernels.py)
    loopy_macros: tuple         # macros loopy defines that a raw kernel must not see
    extern_c: bool              # raw kernels in ``extern "C"`` (as PyCUDA's SourceModule)
    float_as_bits: str          # a float's bits as a 32-bit unsigned integer, and back
    bits_as_float: str
    double_to_float_rz: str     # a double rounded toward zero to float (round to odd)

    def noinline(self, source: str, thresholds) -> str:
        """``source`` with its large helpers and regions compiled once
        (``noinline.py``), under ``thresholds``."""
        raise NotImplementedError

    def __repr__(self):
        return f"<{self.name} dialect>"


class OpenCLDialect(Dialect):
    name = "opencl"
    helper_qualifier = "static inline"
    region_qualifier = "static inline __attribute__((always_inline))"
    global_space = "__global "
    float32_suffix = ""
    special_float_bits = False
    unsigned_64 = "ulong"
    suffix_64 = "L"
    inline_ptx = False
    fp64_mma = False
    vendor_solvers = False
    vendor_fft = "vkfft"
    vendor_blas = None          # CLBlast (pyclblast) is not installable here
    single_pass_scan = False    # OpenCL 1.2 promises no forward progress between groups
    radix_sort = False          # (its scans are single-pass ones)
    flash_attention = False     # the chain stays the generated kernels
    row_argmax = False          # the generated reductions' trees
    loopy_macros = ("lid", "gid")
    extern_c = False
    float_as_bits, bits_as_float = "as_uint", "as_float"
    double_to_float_rz = "convert_float_rtz"

    def noinline(self, source, thresholds):
        from .noinline import noinline_opencl_helpers
        return noinline_opencl_helpers(source, thresholds)


class CudaDialect(Dialect):
    name = "cuda"
    helper_qualifier = "__device__ static inline"
    region_qualifier = "__device__ static __forceinline__"
    global_space = ""
    float32_suffix = "f"
    special_float_bits = True
    unsigned_64 = "unsigned long long"
    suffix_64 = "LL"
    inline_ptx = True
    # the helper falls back to warp shuffles below sm_80, so any CUDA device
    # may take the form; OpenCL, even on an NVIDIA GPU, has no inline PTX
    fp64_mma = True
    vendor_solvers = True
    vendor_fft = "cufft"
    single_pass_scan = True
    radix_sort = True
    flash_attention = True
    row_argmax = True
    loopy_macros = ("bIdx", "tIdx")
    extern_c = True
    float_as_bits, bits_as_float = "__float_as_uint", "__uint_as_float"
    double_to_float_rz = "__double2float_rz"

    def noinline(self, source, thresholds):
        from .noinline import noinline_large_helpers
        return noinline_large_helpers(source, thresholds)

    @property
    def vendor_blas(self):
        """"cublas" where nvmath-python is installed, else None: a product
        then stays a generated kernel (never a host call)."""
        return "cublas" if _installed("nvmath") else None


@functools.lru_cache(maxsize=None)
def _installed(package) -> bool:
    import importlib.util
    return importlib.util.find_spec(package) is not None


OPENCL = OpenCLDialect()
CUDA = CudaDialect()


def dialect_of(target) -> Dialect:
    """The dialect a loopy target prints: CUDA C for loopy's CUDA target,
    else OpenCL C (PyOpenCL's target and loopy's OpenCL one)."""
    from loopy.target.cuda import CudaTarget
    return CUDA if isinstance(target, CudaTarget) else OPENCL


__all__ = ["CUDA", "CudaDialect", "Dialect", "OPENCL", "OpenCLDialect", "dialect_of"]
