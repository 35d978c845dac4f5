"""Complex dtypes in loopy's OpenCL and CUDA targets, which have none
(loopy maps complex only for PyOpenCL's target, through pyopencl's header).

A complex value is a struct of two reals, the layout of NumPy's (and of
CUDA's ``cuFloatComplex``/``cuDoubleComplex``: 8- and 16-byte aligned), so
buffers are NumPy's arrays unchanged:

    typedef struct __attribute__((aligned(8))) { float re, im; } pa_cfloat;

C has no operator on it, so lowering never hands loopy a complex ``+``,
``*`` or cast: every operation is a helper call (``complex_helpers``).
What loopy prints on its own is made right here, installed once
(``install``, from ``loopy_fixes.install``):

* the type names ``pa_cfloat``/``pa_cdouble`` in the targets' registries;
* the typedefs and makers (``pa_cfloat_make(re, im)``) as a preamble of
  any kernel that sees a complex dtype;
* a complex constant (a neutral element, a padded read's zero) as
  ``pa_cfloat_make(re, im)``, infinities and NaN spelled per target;
* a conversion loopy inserts itself (an ``If`` whose branches differ) as a
  call, never a C cast of a struct.

Kernels without complex values print exactly as before.
"""
from __future__ import annotations

import numpy as np

C64 = np.dtype(np.complex64)
C128 = np.dtype(np.complex128)
TYPE_NAMES = {C64: "pa_cfloat", C128: "pa_cdouble"}
REAL = {C64: np.dtype(np.float32), C128: np.dtype(np.float64)}
_CUDA_BITS = {"inf": {4: "__int_as_float(0x7f800000)",
                      8: "__longlong_as_double(0x7ff0000000000000LL)"},
              "-inf": {4: "__int_as_float(0xff800000)",
                       8: "__longlong_as_double((long long) 0xfff0000000000000ULL)"},
              "nan": {4: "__int_as_float(0x7fffffff)",
                      8: "__longlong_as_double(0x7fffffffffffffffLL)"}}


def is_complex(dtype) -> bool:
    return np.dtype(dtype).kind == "c"


def type_name(dtype) -> str:
    return TYPE_NAMES[np.dtype(dtype)]


def real_literal(value, real_dtype, cuda) -> str:
    """A C literal of ``value`` in ``real_dtype`` (float32: ``1.5f``);
    infinities and NaN as each target can spell them (NVRTC has no
    ``INFINITY``)."""
    value = float(value)
    real_dtype = np.dtype(real_dtype)
    if np.isfinite(value):
        return repr(value) + ("f" if real_dtype == np.float32 else "")
    which = "nan" if np.isnan(value) else ("inf" if value > 0 else "-inf")
    if cuda:
        return _CUDA_BITS[which][real_dtype.itemsize]
    text = {"nan": "NAN", "inf": "INFINITY", "-inf": "(-INFINITY)"}[which]
    return text if real_dtype == np.float32 else f"((double) {text})"


def _ours(target) -> bool:
    """The plain OpenCL and CUDA targets (PyOpenCL's maps complex itself)."""
    from loopy.target.cuda import CudaTarget
    from loopy.target.opencl import OpenCLTarget
    from loopy.target.pyopencl import PyOpenCLTarget
    return isinstance(target, (OpenCLTarget, CudaTarget)) and \
        not isinstance(target, PyOpenCLTarget)


def _cuda(target) -> bool:
    from loopy.target.cuda import CudaTarget
    return isinstance(target, CudaTarget)


def qualifier(cuda) -> str:
    return "__device__ static inline" if cuda else "static inline"


def typedefs(dtypes, cuda) -> list:
    """``(tag, C)`` preambles declaring the complex types of ``dtypes``:
    the struct and its maker, a macro (an unused function would make nvcc
    warn), whose arguments are converted explicitly (C++'s braces refuse
    an implicit narrowing)."""
    out = []
    for dt in sorted({np.dtype(d) for d in dtypes if is_complex(d)}, key=lambda d: d.itemsize):
        Z, T, n = type_name(dt), "float" if dt == C64 else "double", dt.itemsize
        align = f"__align__({n})" if cuda else f"__attribute__((aligned({n})))"
        literal = f"{Z}{{(({T}) (re)), (({T}) (im))}}" if cuda else \
            f"({Z}) {{(({T}) (re)), (({T}) (im))}}"
        out.append((f"05_pa_complex_{dt.name}",
                    f"typedef struct {align} {{ {T} re, im; }} {Z};\n"
                    f"#define {Z}_make(re, im) ({literal})\n"))
    return out


def _preamble_generator(preamble_info):
    target = preamble_info.kernel.target
    if not _ours(target):
        return
    seen = [t.numpy_dtype for t in preamble_info.seen_dtypes
            if getattr(t, "numpy_dtype", None) is not None and t.is_complex()]
    if seen:
        yield from typedefs(seen, _cuda(target))


def _registry(original):
    def get_dtype_registry(self):
        registry = original(self)
        inner = registry
        while hasattr(inner, "wrapped_registry"):
            inner = inner.wrapped_registry
        for dt, name in TYPE_NAMES.items():
            if dt not in inner.dtype_to_name:
                inner.get_or_register_dtype([name], dt)
        return registry
    get_dtype_registry.complex_types = True
    return get_dtype_registry


def _generators(original):
    def preamble_generators(self):
        return [*original(self), _preamble_generator]
    preamble_generators.complex_types = True
    return preamble_generators


def _constant(original):
    def map_constant(self, expr, type_context):
        if isinstance(expr, (complex, np.complexfloating)) and _ours(self.kernel.target):
            import pymbolic.primitives as p
            from loopy.symbolic import Literal
            dt = np.dtype(type(expr)) if isinstance(expr, np.generic) else C128
            cuda = _cuda(self.kernel.target)
            return p.Variable(type_name(dt) + "_make")(
                Literal(real_literal(expr.real, REAL[dt], cuda)),
                Literal(real_literal(expr.imag, REAL[dt], cuda)))
        return original(self, expr, type_context)
    map_constant.complex_types = True
    return map_constant


def _typecast(original):
    def wrap_in_typecast(self, actual_type, needed_type, s):
        actual = getattr(actual_type, "numpy_dtype", None)
        needed = getattr(needed_type, "numpy_dtype", None)
        if actual != needed and actual is not None and needed is not None \
                and (is_complex(actual) or is_complex(needed)) \
                and _ours(self.kernel.target):
            return convert(s, actual, needed)
        return original(self, actual_type, needed_type, s)
    wrap_in_typecast.complex_types = True
    return wrap_in_typecast


def convert(s, actual, needed):
    """C-level ``s`` (of ``actual``) as ``needed``, where one is complex:
    between complex types part by part (``s`` is named twice: lowering
    converts through its helpers, this is loopy's own conversion), a real
    into the real part.  Complex to real is lowering's (NumPy warns and
    drops the imaginary part: ``complex_helpers``), never loopy's."""
    import pymbolic.primitives as p
    from loopy.symbolic import Literal
    actual, needed = np.dtype(actual), np.dtype(needed)
    make = p.Variable(type_name(needed) + "_make") if is_complex(needed) else None
    if is_complex(actual) and is_complex(needed):
        return make(p.Lookup(s, "re"), p.Lookup(s, "im"))
    if is_complex(needed):
        return make(s, Literal("0"))
    from loopy.diagnostic import LoopyError
    raise LoopyError(f"internal error: loopy converts {actual} to {needed}; complex "
                     "values reach real ones through lowering's helpers only")


def install():
    """Idempotent; PyOpenCL's target and the C target are left as they are."""
    from loopy.target.c.codegen.expression import ExpressionToCExpressionMapper as E
    from loopy.target.cuda import CudaTarget, CUDACASTBuilder
    from loopy.target.opencl import OpenCLTarget, OpenCLCASTBuilder
    for target in (OpenCLTarget, CudaTarget):
        # the targets memoize their registry: the types are added to that one
        method = target.__dict__["get_dtype_registry"]
        if not getattr(method, "complex_types", False):
            target.get_dtype_registry = _registry(method)
    for builder in (OpenCLCASTBuilder, CUDACASTBuilder):
        method = builder.__dict__["preamble_generators"]
        if not getattr(method, "complex_types", False):
            builder.preamble_generators = _generators(method)
    if not getattr(E.map_constant, "complex_types", False):
        E.map_constant = _constant(E.map_constant)
    if not getattr(E.wrap_in_typecast, "complex_types", False):
        E.wrap_in_typecast = _typecast(E.wrap_in_typecast)
