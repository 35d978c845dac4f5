"""Value operations with NumPy semantics, as target C.

Simple arithmetic lowers to pymbolic operators that loopy prints natively.
Everything whose C meaning differs from NumPy's (floor division, remainder,
integer power, NaN-propagating maximum, sign, isinf...) becomes a call to a
small typed helper, ``pa_<op>_<dtype>``, whose definition loopy emits as a
preamble (see ``PaFunction``).  Helpers take their arguments once, so shared
operands are never duplicated in the source.

Booleans are stored and computed as ``uint8`` (0/1): OpenCL forbids ``bool``
kernel arguments, and NumPy's bool is one byte.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import pymbolic.primitives as p
from loopy.kernel.function_interface import ScalarCallable
from loopy.symbolic import TypeCast
from loopy.types import NumpyType

from .dialect import dialect_of
from .complex_helpers import involves_complex, lower_complex_call

BOOL = np.dtype(np.bool_)
U8 = np.dtype(np.uint8)
U16 = np.dtype(np.uint16)
F32 = np.dtype(np.float32)


def storage_dtype(dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    return U8 if dtype == BOOL else dtype


_MATH = {"exp": "exp", "expm1": "expm1", "log": "log", "log1p": "log1p", "log2": "log2",
         "log10": "log10", "sqrt": "sqrt", "sin": "sin", "cos": "cos", "tan": "tan",
         "arcsin": "asin", "arccos": "acos", "arctan": "atan", "sinh": "sinh",
         "cosh": "cosh", "tanh": "tanh", "arcsinh": "asinh", "arccosh": "acosh",
         "arctanh": "atanh", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
         "rint": "rint", "cbrt": "cbrt", "exp2": "exp2"}


def _math(fn, dtype, d):
    """A math function name for ``dtype`` in dialect ``d`` (CUDA wants
    ``expf`` for float)."""
    return fn + d.float32_suffix if dtype == np.float32 else fn


def _body(op, dt, T, d):
    """C body of ``pa_<op>_<dt>`` in dialect ``d``; arguments are ``a`` (and ``b``)."""
    f = dt.kind == "f"
    signed = dt.kind == "i"
    M = lambda fn: _math(fn, dt, d)     # noqa: E731
    if op in _SPECIAL and dt.kind in "iub":     # integer extremes
        if op == "nan":
            raise NotImplementedError("no integer NaN")
        if dt.kind == "i":
            top = f"{np.iinfo(dt).max}LL"
            return f"return ({T}) {top};" if op == "posinf" else f"return ({T}) (-{top} - 1);"
        return f"return ({T}) -1;" if op == "posinf" else "return 0;"
    if op in _SPECIAL:
        if not d.special_float_bits:
            return f"return ({T}) ({_SPECIAL[op]});"
        bits = _CUDA_SPECIAL_BITS[op][dt.itemsize]
        cast = "__int_as_float" if dt.itemsize == 4 else "__longlong_as_double"
        return f"return {cast}({bits});"
    if op in _WRAPPING:
        return _wrapping_body(op, dt, T, d)
    if op in _BITWISE:
        return f"return ({T}) (a {_BITWISE[op]} b);"
    if op == "invert":
        return f"return ({T}) (~a);"
    if op in _HALF:
        return _half_body(op, dt, d)
    if op in _MATH:
        return f"return {M(_MATH[op])}(a);"
    if op == "arctan2":
        return f"return {M('atan2')}(a, b);"
    if op == "copysign":        # C's: reads the sign bit, of a NaN too (as NumPy)
        return f"return {M('copysign')}(a, b);"
    if op == "signbit":
        return "return signbit(a) ? 1 : 0;"
    if op == "square":          # integers wrap as NumPy's (signed overflow is UB in C)
        return _wrapping_body("multiply", dt, T, d).replace("b;", "a;") \
            if dt.kind in "iu" else f"return ({T})(a * a);"
    if op == "absolute":
        if f:
            return f"return {M('fabs')}(a);"
        if signed:      # abs(MIN) wraps to MIN, as in NumPy
            return _wrapping_body("negative", dt, T, d).replace(
                "return ", "return a >= 0 ? a : ", 1)
        return "return a;"
    if op == "sign":
        if f:
            # NumPy: +0 for either zero, NaN for NaN
            return f"return a > 0 ? ({T})1 : (a < 0 ? ({T})-1 : (a == 0 ? ({T})0 : a));"
        return f"return ({T})((a > 0) - (a < 0));" if signed else f"return ({T})(a > 0);"
    if op in ("maximum", "minimum"):
        cmp = ">" if op == "maximum" else "<"
        nan = "a != a || " if f else ""
        return f"return ({nan}a {cmp} b) ? a : b;"
    if op == "logical_xor":
        return "return (a != 0) != (b != 0);"
    if op == "isnan":
        return "return a != a;" if f else "return 0;"
    if op == "isinf":
        return "return a == a && (a - a) != (a - a);" if f else "return 0;"
    if op == "isfinite":
        return "return (a - a) == (a - a);" if f else "return 1;"
    if op == "floor_divide":
        if f:
            return (f"if (b == 0) return a / b;\n"
                    f"  {T} mod = {M('fmod')}(a, b);\n"
                    f"  {T} div = (a - mod) / b;\n"
                    f"  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;\n"
                    f"  if (div == 0) return {M('copysign')}(({T})0, a / b);\n"
                    f"  {T} fl = {M('floor')}(div);\n"
                    f"  if (div - fl > ({T})0.5) fl += 1;\n"
                    f"  return fl;")
        if signed:
            W = unsigned_wide(dt, d)
            return (f"if (b == 0) return 0;\n"
                    f"  if (b == -1) {{ {W} r = ({W}) 0 - ({W}) a; "
                    f"return {narrow('r', dt, T, d)}; }}\n"
                    f"  {T} q = a / b;\n"
                    f"  if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;\n"
                    f"  return q;")
        return "return b == 0 ? 0 : a / b;"
    if op == "remainder":
        if f:
            return (f"if (b == 0) return {M('fmod')}(a, b);\n"
                    f"  {T} mod = {M('fmod')}(a, b);\n"
                    f"  if (mod != 0) {{ if ((b < 0) != (mod < 0)) mod += b; }}\n"
                    f"  else mod = {M('copysign')}(({T})0, b);\n"
                    f"  return mod;")
        if signed:
            return (f"if (b == 0 || b == -1) return 0;\n"
                    f"  {T} r = a % b;\n"
                    f"  if (r != 0 && ((r < 0) != (b < 0))) r += b;\n"
                    f"  return r;")
        return "return b == 0 ? 0 : a % b;"
    if op == "clip_index":      # an index kept within [b, c]: a concatenation's piece
        return "return a < b ? b : (a > c ? c : a);"
    if op == "power":
        if f:
            return f"return {M('pow')}(a, b);"
        # signed integers go to codegen.runtime_checks (NumPy raises on b < 0)
        return (f"{T} r = 1;\n"
                f"  while (b > 0) {{ if (b & 1) r *= a; a *= a; b >>= 1; }}\n"
                f"  return r;")
    raise NotImplementedError(f"no C helper for {op} on {dt}")


def unsigned_wide(dt, d):
    """The unsigned C type (of dialect ``d``) of at least 32 bits that
    ``dt``'s arithmetic wraps in."""
    return d.unsigned_64 if dt.itemsize == 8 else "unsigned int"


def narrow(r, dt, T, d):
    """C expression converting ``r`` (of ``unsigned_wide(dt)``) to ``dt``
    modulo 2^bits.  A value out of range of a signed type converts in an
    implementation-defined way, and nvcc + ptxas on the H100 got int16 wrong
    both that way (``-(-32768)`` gave 32768) and with masks and a select
    (they became 16-bit ``neg``/``setp`` that gave 0); a sign extension by
    32-bit shifts was right there (tests/targets/test_no_silent_wrong.py checks
    every narrow type on every device).  32/64-bit values take only
    in-range conversions."""
    if dt.kind != "i":
        return f"({T}) ({r})"
    bits = 8 * dt.itemsize
    if bits < 32:       # sign-extend with 32-bit shifts (as the H100 run required)
        return f"({T}) (((int) (({r}) << {32 - bits})) >> {32 - bits})"
    suffix = d.suffix_64 if bits == 64 else ""
    low = f"{(1 << (bits - 1)) - 1}{suffix}"
    sign = f"(({unsigned_wide(dt, d)}) 1 << {bits - 1})"
    tmin = f"(-{low} - 1)"
    return (f"(({r}) & {sign}) ? ({T}) (({T}) (({r}) & {low}) + {tmin}) "
            f": ({T}) (({r}) & {low})")


def _wrapping_body(op, dt, T, d):
    """Integer +, -, * and negation that wrap exactly as NumPy's do.

    C promotes 8- and 16-bit operands to ``int`` (so ``uchar * uchar`` is
    never wrapped unless something converts it back, and loopy drops a cast
    it thinks is redundant), and signed overflow is undefined behaviour that
    compilers exploit.  So the helper computes in the unsigned type of at
    least 32 bits, where C defines wrapping, and ``narrow`` forms the
    NumPy-typed two's-complement result."""
    W = unsigned_wide(dt, d)
    if op == "negative":
        expr = f"({W}) 0 - ({W}) a"
    else:
        sym = {"add": "+", "subtract": "-", "multiply": "*"}[op]
        expr = f"({W}) a {sym} ({W}) b"
    return f"{W} r = {expr};\n  return {narrow('r', dt, T, d)};"


_WRAPPING = {"add", "subtract", "multiply", "negative"}
_BITWISE = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}


# special float constants, as zero-argument helpers (loopy's CUDA target
# knows no INFINITY/NAN names)
_SPECIAL = {"posinf": "INFINITY", "neginf": "-INFINITY", "nan": "NAN"}
_CUDA_SPECIAL_BITS = {"posinf": {4: "0x7f800000", 8: "0x7ff0000000000000LL"},
                      "neginf": {4: "0xff800000", 8: "(long long) 0xfff0000000000000ULL"},
                      "nan": {4: "0x7fffffff", 8: "0x7fffffffffffffffLL"}}

# float16 on the devices (``plan/half.py``): a half is stored as its 16 bits and
# computed as a float32 holding a half's value; these convert and round.
# ``round_half`` of a float64 rounds to odd in float32 first (toward zero, the
# last bit set where inexact), so rounding that to half is the single rounding
# NumPy's double -> half conversion does (24 bits >= 11 + 2)
_HALF = {"half_bits": U16, "from_half_bits": F32, "round_half": F32}


def _half_body(op, dt, d):
    if op == "half_bits":
        return "return pa_float_to_half_(a);"
    if op == "from_half_bits":
        return "return pa_half_to_float_(a);"
    if dt == np.float64:
        return (f"float t = {d.double_to_float_rz}(a);\n"
                f"  if (t == t && (double) t != a)\n"
                f"    t = {d.bits_as_float}({d.float_as_bits}(t) | 1u);\n"
                "  return pa_half_to_float_(pa_float_to_half_(t));")
    return "return pa_half_to_float_(pa_float_to_half_(a));"


def half_conversions(d) -> str:
    """C of float -> half bits (IEEE round to nearest even; NaN payloads kept
    as NumPy keeps them) and half bits -> float (exact), in dialect ``d``."""
    q = d.helper_qualifier
    return f"""{q} unsigned short pa_float_to_half_(float a)
{{
  unsigned int f = {d.float_as_bits}(a);
  unsigned int sign = (f >> 16) & 0x8000u, fexp = f & 0x7f800000u, fsig = f & 0x007fffffu;
  if (fexp >= 0x47800000u) {{          /* 65536 and above, inf, NaN */
    if (fexp == 0x7f800000u && fsig != 0u) {{
      unsigned int h = 0x7c00u + (fsig >> 13);
      return (unsigned short) (sign + (h == 0x7c00u ? h + 1u : h));
    }}
    return (unsigned short) (sign + 0x7c00u);
  }}
  if (fexp <= 0x38000000u) {{          /* below 2^-14: a subnormal half, or zero */
    if (fexp < 0x33000000u)
      return (unsigned short) sign;
    unsigned int shift = 126u - (fexp >> 23), m = 0x00800000u + fsig;
    unsigned int h = m >> shift, rem = m & ((1u << shift) - 1u), mid = 1u << (shift - 1u);
    if (rem > mid || (rem == mid && (h & 1u)))
      h += 1u;
    return (unsigned short) (sign + h);
  }}
  unsigned int h = ((fexp - 0x38000000u) >> 13) + (fsig >> 13), rem = fsig & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
    h += 1u;                           /* (a carry into the exponent is right, up to inf) */
  return (unsigned short) (sign + h);
}}

{q} float pa_half_to_float_(unsigned short a)
{{
  unsigned int h = a, sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0u) {{
    float v = (float) m * 5.9604644775390625e-8f;     /* m * 2^-24, exact */
    return sign ? -v : v;
  }}
  if (e == 31u)
    return {d.bits_as_float}(sign | 0x7f800000u | (m << 13));
  return {d.bits_as_float}(sign | ((e + 112u) << 23) | (m << 13));
}}
"""


# ops producing bool regardless of input dtype
_BOOL_RESULT = {"isnan", "isinf", "isfinite", "logical_xor", "signbit"}
HELPER_OPS = (set(_MATH) | set(_SPECIAL) | {"arctan2", "copysign", "square", "absolute", "sign", "maximum", "minimum",
                            "floor_divide", "remainder", "power"} | _BOOL_RESULT)
_TWO_ARGS = {"arctan2", "copysign", "maximum", "minimum", "floor_divide", "remainder", "power",
             "logical_xor", "add", "subtract", "multiply"} | set(_BITWISE)


@lru_cache(maxsize=None)
def _signature(name):
    """``pa_<op>_<dtype>`` -> (op, dtype, nargs, result dtype)."""
    _, rest = name.split("_", 1)
    op, dtname = rest.rsplit("_", 1)
    dt = np.dtype(dtname)
    nargs = 3 if op == "clip_index" else 2 if op in _TWO_ARGS else (0 if op in _SPECIAL else 1)
    out = U8 if op in _BOOL_RESULT else _HALF.get(op) or storage_dtype(dt)
    return op, dt, nargs, out


def _helpers_version():
    """Digest of the helpers' C source generators (this module,
    ``runtime_checks``, ``pair_helpers``, the ``dialect`` spellings they use
    and the complex ones).  Loopy caches generated code by kernel structure, which does
    not cover preamble text; a kernel that names this digest in a preamble
    is regenerated whenever a helper's body changes."""
    import hashlib
    import os
    h = hashlib.sha256()
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("cfuncs.py", "runtime_checks.py", "pair_helpers.py", "dialect.py",
                 "complex_helpers.py", "../complex_types.py"):
        with open(os.path.join(here, name), "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


HELPERS_PREAMBLE = ("00_polyarray_helpers", f"/* polyarray helpers {_helpers_version()} */")


def helper_name(op, dtype) -> str:
    return f"pa_{op}_{np.dtype(dtype).name}"


class PaFunction(ScalarCallable):
    """A typed polyarray helper; its C definition is emitted as a preamble."""

    def with_types(self, arg_id_to_dtype, clbl_inf_ctx):
        op, dt, nargs, out = _signature(self.name)
        types = {k: NumpyType(storage_dtype(dt)) for k in range(nargs)}
        types[-1] = NumpyType(out)
        from constantdict import constantdict   # loopy wants it hashable
        return self.copy(arg_id_to_dtype=constantdict(types), name_in_target=self.name), \
            clbl_inf_ctx

    def generate_preambles(self, target):
        op, dt, nargs, out = _signature(self.name)
        d = dialect_of(target)
        T = target.dtype_to_typename(NumpyType(storage_dtype(dt)))
        R = target.dtype_to_typename(NumpyType(out))
        params = ", ".join(f"{T} {v}" for v in "abc"[:nargs]) or "void"
        body = _body(op, dt, T, d)
        if op in _HALF:
            yield "45_pa_half_conversions", half_conversions(d)
        yield (f"50_{self.name}",
               f"{d.helper_qualifier} {R} {self.name}({params})\n{{\n  {body}\n}}\n")


# -- lowering of frontend value calls ------------------------------------

def special_constant(value, dtype, functions):
    """inf / -inf / nan of ``dtype`` as a helper call."""
    op = "nan" if np.isnan(value) else ("posinf" if value > 0 else "neginf")
    name = helper_name(op, dtype)
    functions.add(name)
    return p.Call(p.Variable(name), ())


def clip_index(expr, lo, hi, functions):
    """``expr`` kept within ``[lo, hi]`` by a helper that evaluates it once
    (a conditional names it twice, so clamps of clamps would double the
    text at each level)."""
    return _helper_call("clip_index", np.int64, (expr, np.int64(lo), np.int64(hi)), functions)


def wraps_in_helper(dtype) -> bool:
    """Integer types, whose C arithmetic differs from NumPy's: signed
    overflow is undefined in C, 8/16-bit operands are promoted to ``int``,
    and loopy prints ``a - b`` as ``a + -1 * b``, which C computes in a
    wider (even floating) type for unsigned ``b``.  Their +, -, * and
    negation go through ``_wrapping_body``, typed as NumPy's result."""
    dtype = np.dtype(dtype)
    return dtype.kind in "iu"


def _helper_call(op, dtype, args, functions):
    fname = helper_name(op, dtype)
    functions.add(fname)
    return p.Call(p.Variable(fname), tuple(args))


def _arith(op, node, dtype, args, functions):
    """``node`` (plain C arithmetic) where C wraps like NumPy, else a helper."""
    if wraps_in_helper(dtype):
        return _helper_call(op, dtype, args, functions)
    return node


def as_bool(expr, dtype):
    """A C truth value of ``expr`` (0/1 as uint8)."""
    if np.dtype(dtype) == BOOL:
        return expr
    return TypeCast(U8, p.Comparison(expr, "!=", 0))


def cast(expr, from_dt, to_dt):
    from_dt, to_dt = np.dtype(from_dt), np.dtype(to_dt)
    if from_dt == to_dt:
        return expr
    if to_dt == BOOL:
        return as_bool(expr, from_dt)
    return TypeCast(to_dt, expr)


_CMP = {"less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">=",
        "equal": "==", "not_equal": "!="}


_NEGATIVE_IS_SMALLER = {"less": True, "less_equal": True, "not_equal": True,
                        "greater": False, "greater_equal": False, "equal": False}


def _comparison(name, ex, dts):
    """``a op b``.  NumPy compares int64 with uint64 by value (its ``qQ``
    loops); C would convert the signed side to unsigned, so a negative one
    compares as huge.  A negative signed side decides the result at once."""
    (a, b), (da, db) = ex, dts
    if {da.kind, db.kind} != {"i", "u"}:
        return p.Comparison(a, _CMP[name], b)
    signed_left = da.kind == "i"
    neg, other = (a, b) if signed_left else (b, a)
    smaller = _NEGATIVE_IS_SMALLER[name] if signed_left else \
        _NEGATIVE_IS_SMALLER[_SWAPPED[name]]
    wide = TypeCast(np.dtype(np.uint64), neg)
    cmp = p.Comparison(wide, _CMP[name], other) if signed_left else \
        p.Comparison(other, _CMP[name], wide)
    return p.If(p.Comparison(neg, "<", 0), int(smaller), cmp)


_SWAPPED = {"less": "greater", "less_equal": "greater_equal", "greater": "less",
            "greater_equal": "less_equal", "equal": "equal", "not_equal": "not_equal"}


@lru_cache(maxsize=None)
def ufunc_out_dtype(name, in_dtypes):
    ufunc = getattr(np, name)
    return np.dtype(ufunc.resolve_dtypes(tuple(in_dtypes) + (None,))[ufunc.nin])


class Unsupported(TypeError):
    pass


def lower_call(name, args, functions):
    """Lower ``name(*args)``; ``args`` are ``(expr, dtype)``; returns the same.

    ``functions`` collects the helper names the kernel must register.
    """
    if involves_complex(name, args):        # a struct in C: helpers only
        return lower_complex_call(name, args, functions, lower_call)
    if name in _HALF:                       # float16 as float32 values (plan/half.py)
        (e, dt), = args
        if name == "round_half" and dt not in (F32, np.dtype(np.float64)):
            e, dt = cast(e, dt, F32), F32   # integers: exact in float32 up to half's range
        fname = helper_name(name, dt)
        functions.add(fname)
        return p.Call(p.Variable(fname), (e,)), _HALF[name]
    if name.startswith("cast_"):
        (e, dt), = args
        to = np.dtype(name[5:])
        return cast(e, dt, to), to
    if name == "where":
        (c, cdt), (a, adt), (b, _) = args
        return p.If(p.Comparison(c, "!=", 0), a, b), adt
    dts = tuple(dt for _, dt in args)
    out = ufunc_out_dtype(name, dts)
    ex = [e for e, _ in args]
    dt = dts[0]
    if dt == np.float16 or out == np.float16:
        raise Unsupported("float16 is not supported on device targets yet; "
                          "use astype(np.float32)")
    if name in ("floor", "ceil", "trunc", "rint") and dt.kind in "biu":
        return ex[0], out                   # NumPy 2: identity on integers
    if name in HELPER_OPS:
        fname = helper_name(name, dt)
        functions.add(fname)
        return p.Call(p.Variable(fname), tuple(ex)), out
    if name in _CMP:
        return TypeCast(U8, _comparison(name, ex, dts)), out
    if name == "add":
        return (as_bool(p.LogicalOr(tuple(ex)), out) if out == BOOL
                else _arith("add", p.Sum(tuple(ex)), out, ex, functions)), out
    if name == "multiply":
        return (as_bool(p.LogicalAnd(tuple(ex)), out) if out == BOOL
                else _arith("multiply", p.Product(tuple(ex)), out, ex, functions)), out
    if name == "subtract":
        if isinstance(ex[1], np.floating):      # exact in IEEE, and no ``(-1)*2.0``
            return p.Sum((ex[0], -ex[1])), out  # that equals an index's ``(-1)*2``
        return _arith("subtract", p.Sum((ex[0], p.Product((-1, ex[1])))), out, ex,
                      functions), out
    if name == "divide":
        return p.Quotient(ex[0], ex[1]), out
    if name == "negative":
        return _arith("negative", p.Product((-1, ex[0])), out, ex, functions), out
    if name == "positive":
        return ex[0], out
    if name == "logical_and":
        return TypeCast(U8, p.LogicalAnd(tuple(ex))), out
    if name == "logical_or":
        return TypeCast(U8, p.LogicalOr(tuple(ex))), out
    if name == "logical_not":
        return TypeCast(U8, p.Comparison(ex[0], "==", 0)), out
    if name in _BITWISE:
        # a helper, never a bare operator: C's ``&``, ``^``, ``|`` bind more
        # loosely than comparisons, and pymbolic prints them by Python's rules
        return _helper_call(name, out, ex, functions), out
    if name == "invert":
        if out == BOOL:
            return TypeCast(U8, p.Comparison(ex[0], "==", 0)), out
        return _helper_call("invert", out, ex, functions), out
    raise Unsupported(f"{name} is not supported on device targets yet")
