"""polyarray: NumPy-style maths as a lazy expression DAG, evaluated by NumPy
(the reference) or lowered to fused Loopy kernels for OpenCL and CUDA.

>>> import numpy as np, polyarray as pa
>>> x = pa.placeholder("x", shape=(3,), dtype=np.float32)
>>> y = pa.exp(-x) * 2.0
>>> y.shape, y.dtype
((3,), dtype('float32'))
"""
import logging as _logging
import os as _os

# polyarray logs through "polyarray" and its children (polyarray.codegen.logs
# says what and at which level), and adds no handler but this one: nothing
# is printed unless the application configures logging
_logging.getLogger("polyarray").addHandler(_logging.NullHandler())

# Installed, codegen/ and targets/ are the subpackages polyarray.codegen and
# polyarray.targets (setup.py's package_dir).  In a source tree that is not
# installed (PYTHONPATH=repo), they sit beside this folder: look there too.
_beside = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if (not _os.path.isdir(_os.path.join(__path__[0], "codegen"))
        and _os.path.isfile(_os.path.join(_beside, "codegen", "pipeline.py"))):
    __path__.append(_beside)

from numpy import (bool_, int8, int16, int32, int64, uint8, uint16, uint32,   # noqa: F401
                   uint64, float16, float32, float64, complex64, complex128, csingle,
                   cdouble, pi, e, inf, nan)

from .array import Array
from .ufunc import ufunc
from .api.creation import (array, asarray, placeholder, zeros, ones, full, empty, arange,
                           linspace, eye, identity, tri, zeros_like, ones_like, full_like,
                           empty_like)
from .api.elementwise import (exp, expm1, log, log1p, log2, log10, sqrt, square,
                              sin, cos, tan, arcsin, arccos, arctan, arctan2, sinh,
                              cosh, tanh, arcsinh, arccosh, arctanh, absolute, abs,
                              sign, floor, ceil, trunc, rint, round, around,
                              maximum, minimum, where, clip, power, isnan, isinf,
                              isfinite, logical_and, logical_or, logical_xor,
                              logical_not, astype, add, subtract, multiply, divide,
                              true_divide, floor_divide, remainder, negative,
                              positive, equal, not_equal, less, less_equal, greater,
                              greater_equal, bitwise_and, bitwise_or, bitwise_xor,
                              invert)
from .api.elementwise import (signbit, deg2rad, rad2deg, radians, degrees, reciprocal,
                              cbrt, exp2, hypot, copysign, logaddexp, fmax, fmin, heaviside,
                              float_power, left_shift, right_shift, bitwise_left_shift,
                              bitwise_right_shift, nan_to_num, isclose, allclose)
from .api.elementwise import (conj, conjugate, real, imag, angle, iscomplex, isreal,
                              iscomplexobj, isrealobj)
from .api.elementwise import (fabs, fmod, modf, frexp, ldexp, gcd, lcm, logaddexp2, sinc,
                              array_equal, array_equiv, select, piecewise)
from .api.reductions import (sum, prod, mean, max, min, amax, amin, any, all, var,
                             std, argmax, argmin)
from .api.reductions import (nansum, nanprod, nanmax, nanmin, nanmean, ptp, average,
                             count_nonzero, cov, corrcoef)
from .api.matrices import (dot, matmul, vdot, inner, outer, tensordot, einsum, kron,
                           diag, diagonal, trace, tril, triu, cross, vecdot, tril_indices,
                           triu_indices, matmul_precision, set_matmul_precision)
from .api.shapes import (reshape, transpose, permute_dims, matrix_transpose,
                         broadcast_to, broadcast_arrays, expand_dims, squeeze,
                         concatenate, concat, stack, flip, moveaxis, swapaxes, ravel)
from .api.arrange import (atleast_1d, atleast_2d, atleast_3d, hstack, vstack,
                          dstack, column_stack, unstack, meshgrid, tile, repeat,
                          roll, diff, pad)
from .api.arrange import (split, array_split, hsplit, vsplit, dsplit, append, insert,
                          delete, ediff1d, fliplr, flipud, rot90, indices)
from .api.indexing import take, take_along_axis, nonzero, argwhere, flatnonzero
from .api.ordering import (sort, argsort, searchsorted, isin, unique, unique_values,
                           unique_counts, unique_inverse, unique_all, partition,
                           argpartition, lexsort)
from .api.histograms import digitize, histogram, histogram2d, bincount
from .api.quantiles import (median, quantile, percentile, nanmedian, nanquantile,
                            nanpercentile)
from .api.scans import cumsum, cumprod, cumulative_sum, cumulative_prod
from .api.ranges import logspace, geomspace
from .api.polynomials import polyval, vander, convolve, correlate
from .api.calculus import gradient, trapezoid, interp, unwrap
from .api.dtypes import result_type, can_cast, finfo, iinfo, isdtype
from .api.custom import elementwise_kernel, reduction_kernel
from .api.raw import raw_kernel, RawKernel
from .ops.elementwise import broadcast_shapes
from .ops.indexing import NonConcreteBooleanIndexError
from .ops.eager import LazyValueError, ConcretizationError
from . import linalg                           # noqa: F401  (the public namespace)
from . import random                           # noqa: F401  (the public namespace)
from . import fft                              # noqa: F401  (the public namespace)
from .program import (Program, compile, set_default_target, get_default_target,
                      target)
from .inspect.show import show, format_dag
from .shared import shared, SharedVariable      # noqa: F401
from . import reevaluation as _reevaluation    # noqa: E402
_reevaluation.install()
from .protocols import (Device, get_array_module, array_namespace, from_dlpack,  # noqa: E402
                        array_namespace_info as __array_namespace_info__)
from .jit import jit, Jitted                    # noqa: E402
from .loops import fori_loop, while_loop        # noqa: E402
from . import numpy_names as _numpy_names        # noqa: E402
from .testing.checking import check, CheckReport        # noqa: E402  (also Program.check)
from .inspect.environment import print_environment_info

from polyarray.codegen.schedule import ScheduleError   # noqa: E402
from . import schedules, testing                # noqa: E402,F401
from . import dask          # noqa: E402,F401  (pa.dask.evaluate: imports dask when called)

newaxis = None
__version__ = "0.1.0"
__array_api_version__ = "2023.12"

# the array API's spellings beside NumPy's
acos, acosh, asin, asinh = arccos, arccosh, arcsin, arcsinh
atan, atan2, atanh = arctan, arctan2, arctanh
bitwise_invert = invert
pow = power     # noqa: A001


def memory_stats(target=None) -> dict:
    """Device memory pool counters of ``target`` (default: the default target):
    active/held blocks and, where the pool reports them, bytes."""
    from polyarray import targets
    return targets.get_target(target or get_default_target()).memory_stats()


def available_targets():
    """Targets that can run on this machine, best first."""
    from polyarray import targets
    return targets.available_targets()


def opencl_queue(device=None):
    """The PyOpenCL command queue polyarray's OpenCL target runs on (for
    ``device``, a platform/device substring as ``pa.compile(...,
    device=...)`` takes; default: ``POLYARRAY_OPENCL_DEVICE``, else the first
    GPU).  pyopencl arrays made on it (``pyopencl.array.to_device(
    pa.opencl_queue(), x)``) bind to OpenCL programs in place, without a
    copy; a program refuses one of another context (TypeError)."""
    from polyarray import targets
    return targets.get_target("opencl")._device(device)[3]


def opencl_context(device=None):
    """The PyOpenCL context of ``pa.opencl_queue(device)``."""
    return opencl_queue(device).context


def set_opencl_queue(queue):
    """Run OpenCL programs compiled from now on (without ``device=``) on
    ``queue``, a PyOpenCL command queue of the user's own context, so that
    pyopencl arrays of that context bind in place, without a copy; ``None``
    goes back to polyarray's own queue.  Programs compiled before keep
    theirs (an array of another context is refused with a TypeError)."""
    from polyarray import targets
    targets.get_target("opencl").use_queue(queue)


# last: ``bool`` is the array API's name for NumPy's bool dtype, and would
# shadow the builtin in anything above that this module ran
bool = bool_    # noqa: A001


ndarray = _numpy_names.ndarray     # NumPy's name: isinstance and np.ndarray(shape) work


# what ``from polyarray import *`` binds, and what ``dir(polyarray)`` lists: the
# functions, types and constants above and the public namespaces; the
# implementation's modules (api, ops, program...) stay importable, unlisted
__all__ = [
    "abs", "absolute", "acos", "acosh", "add", "all", "allclose", "amax", "amin", "angle",
    "any", "append", "arange", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2",
    "arctanh", "argmax", "argmin", "argpartition", "argsort", "argwhere", "around", "Array",
    "array", "array_equal", "array_equiv", "array_namespace", "array_split", "asarray", "asin",
    "asinh", "astype", "atan", "atan2", "atanh", "atleast_1d", "atleast_2d", "atleast_3d",
    "available_targets", "average", "bincount", "bitwise_and", "bitwise_invert",
    "bitwise_left_shift", "bitwise_or", "bitwise_right_shift", "bitwise_xor", "bool", "bool_",
    "broadcast_arrays", "broadcast_shapes", "broadcast_to", "can_cast", "cbrt", "cdouble",
    "ceil", "check", "CheckReport", "clip", "column_stack", "compile", "complex128",
    "complex64", "concat", "concatenate", "ConcretizationError", "conj", "conjugate",
    "convolve", "copysign", "corrcoef", "correlate", "cos", "cosh", "count_nonzero", "cov",
    "cross", "csingle", "cumprod", "cumsum", "cumulative_prod", "cumulative_sum", "dask",
    "deg2rad", "degrees", "delete", "Device", "diag", "diagonal", "diff", "digitize", "divide",
    "dot", "dsplit", "dstack", "e", "ediff1d", "einsum", "elementwise_kernel", "empty",
    "empty_like", "equal", "exp", "exp2", "expand_dims", "expm1", "eye", "fabs", "fft", "finfo",
    "flatnonzero", "flip", "fliplr", "flipud", "float16", "float32", "float64", "float_power",
    "floor", "floor_divide", "fmax", "fmin", "fmod", "fori_loop", "format_dag", "frexp",
    "from_dlpack", "full", "full_like", "gcd", "geomspace", "get_array_module",
    "get_default_target", "gradient", "greater", "greater_equal", "heaviside", "histogram",
    "histogram2d", "hsplit", "hstack", "hypot", "identity", "iinfo", "imag", "indices", "inf",
    "inner", "insert", "int16", "int32", "int64", "int8", "interp", "invert", "isclose",
    "iscomplex", "iscomplexobj", "isdtype", "isfinite", "isin", "isinf", "isnan", "isreal",
    "isrealobj", "jit", "Jitted", "kron", "LazyValueError", "lcm", "ldexp", "left_shift",
    "less", "less_equal", "lexsort", "linalg", "linspace", "log", "log10", "log1p", "log2",
    "logaddexp", "logaddexp2", "logical_and", "logical_not", "logical_or", "logical_xor",
    "logspace", "matmul", "matmul_precision", "matrix_transpose", "max", "maximum", "mean", "median",
    "memory_stats", "meshgrid", "min", "minimum", "modf", "moveaxis", "multiply", "nan",
    "nan_to_num", "nanmax", "nanmean", "nanmedian", "nanmin", "nanpercentile", "nanprod",
    "nanquantile", "nansum", "ndarray", "negative", "newaxis", "NonConcreteBooleanIndexError",
    "nonzero", "not_equal", "ones", "ones_like", "opencl_context", "opencl_queue", "outer",
    "pad", "partition", "percentile", "permute_dims", "pi", "piecewise", "placeholder",
    "polyval", "positive", "pow", "power", "print_environment_info", "prod", "Program", "ptp",
    "quantile", "rad2deg", "radians", "random", "ravel", "raw_kernel", "RawKernel", "real",
    "reciprocal", "reduction_kernel", "remainder", "repeat", "reshape", "result_type",
    "right_shift", "rint", "roll", "rot90", "round", "ScheduleError", "schedules",
    "searchsorted", "select", "set_default_target", "set_matmul_precision", "set_opencl_queue", "shared",
    "SharedVariable", "show", "sign", "signbit", "sin", "sinc", "sinh", "sort", "split", "sqrt",
    "square", "squeeze", "stack", "std", "subtract", "sum",
    "swapaxes", "take", "take_along_axis", "tan", "tanh", "target", "tensordot", "testing",
    "tile", "trace", "transpose", "trapezoid", "tri", "tril", "tril_indices", "triu",
    "triu_indices", "true_divide", "trunc", "ufunc", "uint16", "uint32", "uint64", "uint8",
    "unique", "unique_all", "unique_counts", "unique_inverse", "unique_values", "unstack",
    "unwrap", "vander", "var", "vdot", "vecdot", "vsplit", "vstack", "where", "while_loop",
    "zeros", "zeros_like"]


def __dir__():
    return list(__all__)


def __getattr__(name):
    """NumPy's names that polyarray does not define itself (dtypes such as
    ``intp``, constants, ``mgrid``, ``random``...), so ``import polyarray as
    np`` runs NumPy code: NumPy's own attribute.  Its functions still
    dispatch to polyarray when given polyarray arrays, and those polyarray
    lacks raise ``TypeError`` naming them."""
    if name.startswith("__"):
        raise AttributeError(f"module 'polyarray' has no attribute {name!r}")
    import numpy
    try:
        return getattr(numpy, name)
    except AttributeError:
        raise AttributeError(f"module 'polyarray' has no attribute {name!r} (NumPy has "
                             f"none either)") from None
