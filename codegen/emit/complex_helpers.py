"""Complex values with NumPy's semantics, as typed C helpers.

A complex value is a struct (``complex_types``), so every operation on one
is a call: ``pa_cx_<op>_<dtype>(a, b)`` (``pa_cx_multiply_complex64``),
``pa_cx_cast_<from>_<to>`` for conversions.  The algorithms are NumPy's:

* ``*``: ``(ac - bd, ad + bc)`` with one fused multiply-add per part, as
  NumPy's SIMD loop; ``/``: Smith's method with NumPy's branch
  for a zero divisor (no overflow where the quotient is finite, as NumPy's
  loop); ``reciprocal``, ``square``: NumPy's loops;
* ``**``: NumPy's ``npy_cpow`` (0 and 1 exponents, small integer exponents
  by repeated multiplication, else ``exp(b log a)``);
* ``exp``, ``log``, ``sqrt``, ``sinh``, ``cosh``, ``tanh`` (``sin``,
  ``cos``, ``tan`` through them): the C99 Annex G special values and the
  overflow-avoiding forms of FreeBSD's msun, which NumPy's and glibc's
  follow; ``expm1``, ``log1p``: NumPy's formulas;
* the inverse functions: Kahan's formulas, Annex G's special values;
* comparisons order lexicographically, NaN as NumPy's ``CLT``/``CGE``;
  ``maximum``/``minimum`` propagate the first NaN; ``sign`` is NumPy 2's
  ``z / |z|``; ``absolute`` is ``hypot``.

An operation not here is refused when the kernel is built (``Unsupported``,
a TypeError naming it); the frontend refuses what NumPy has no complex loop
for before that.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import pymbolic.primitives as p
from loopy.kernel.function_interface import ScalarCallable
from loopy.types import NumpyType

from ..complex_types import REAL, is_complex, qualifier, real_literal, type_name, typedefs

PREFIX = "pa_cx_"
COMPLEX = {np.dtype(np.float32): np.dtype(np.complex64),
           np.dtype(np.float64): np.dtype(np.complex128)}
BOOL = np.dtype(np.bool_)
U8 = np.dtype(np.uint8)

# op -> (arguments, result): "c" the complex dtype, "r" its real part, "b" bool
_UNARY_C = ("negative", "conjugate", "square", "reciprocal", "sign", "rint", "exp",
            "expm1", "exp2", "log", "log1p", "log2", "log10", "sqrt", "sin", "cos",
            "tan", "sinh", "cosh", "tanh", "arcsin", "arccos", "arctan", "arcsinh",
            "arccosh", "arctanh")
_BINARY_C = ("add", "subtract", "multiply", "divide", "power", "maximum", "minimum",
             "multiply_c99")
_COMPARE = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")
OPS = {**{op: ("c", "c") for op in _UNARY_C},
       **{op: ("cc", "c") for op in _BINARY_C},
       **{op: ("cc", "b") for op in _COMPARE},
       **{op: ("c", "r") for op in ("absolute", "real", "imag")},
       **{op: ("c", "b") for op in ("isnan", "isinf", "isfinite", "nonzero")},
       "make": ("rr", "c"),
       "cis": ("r", "c")}      # cos a + i sin a: both from one sincos
# helpers a helper's body calls (defined before it: preamble tags sort)
_USES = {"power": ("multiply", "multiply_c99", "divide", "exp", "log"), "sin": ("sinh",),
         "cos": ("cosh",), "tan": ("tanh",), "log2": ("log",), "log10": ("log",),
         "exp2": ("exp",), "arcsinh": ("sqrt",), "arccos": ("sqrt",), "arccosh": ("sqrt",),
         "arcsin": ("arcsinh",), "arctan": ("arctanh",)}
# each helper's preamble comes after those it calls: ranked by depth
_RANK = {"arcsin": 60}
_LOGICAL = ("logical_and", "logical_or", "logical_xor", "logical_not")


class Unsupported(TypeError):
    pass


def helper_name(op, dtype) -> str:
    return f"{PREFIX}{op}_{np.dtype(dtype).name}"


def cast_name(from_dt, to_dt) -> str:
    return f"{PREFIX}cast_{np.dtype(from_dt).name}_{np.dtype(to_dt).name}"


def is_complex_helper(name: str) -> bool:
    return name.startswith(PREFIX)


def storage(dtype):
    dtype = np.dtype(dtype)
    return U8 if dtype == BOOL else dtype


@lru_cache(maxsize=None)
def signature(name):
    """``(op, complex dtype, argument dtypes, result dtype)`` of a helper
    name (a cast: op ``cast``, its source and target dtypes)."""
    rest = name[len(PREFIX):]
    if rest.startswith("cast_"):
        src, dst = (np.dtype(t) for t in rest[5:].split("_"))
        return "cast", (src if is_complex(src) else dst), (storage(src),), storage(dst)
    op, dtname = rest.rsplit("_", 1)
    cdt = np.dtype(dtname)
    args, out = OPS[op]
    kinds = {"c": cdt, "r": REAL[cdt], "b": U8}
    return op, cdt, tuple(kinds[k] for k in args), kinds[out]


class PaComplexFunction(ScalarCallable):
    """A complex helper; its C definition (and those it calls, and the
    types it names) are emitted as preambles."""

    def with_types(self, arg_id_to_dtype, clbl_inf_ctx):
        from constantdict import constantdict
        _, _, args, out = signature(self.name)
        types = {k: NumpyType(d) for k, d in enumerate(args)}
        types[-1] = NumpyType(out)
        return self.copy(arg_id_to_dtype=constantdict(types), name_in_target=self.name), \
            clbl_inf_ctx

    def generate_preambles(self, target):
        from loopy.target.cuda import CudaTarget
        cuda = isinstance(target, CudaTarget)
        op, cdt, args, out = signature(self.name)
        yield from typedefs(set(args) | {out, cdt}, cuda)
        yield from definitions(self.name, target, cuda)


def definitions(name, target, cuda):
    """``(tag, C)`` of helper ``name`` and of the helpers it calls."""
    op, cdt, args, out = signature(name)
    for used in _USES.get(op, ()):
        yield from definitions(helper_name(used, cdt), target, cuda)
    C = lambda d: (type_name(d) if is_complex(d)                   # noqa: E731
                   else target.dtype_to_typename(NumpyType(d)))
    params = ", ".join(f"{C(d)} {v}" for d, v in zip(args, "ab"))
    body = cast_body(args[0], out, C) if op == "cast" else _Body(op, cdt, cuda).text()
    rank = _RANK.get(op, 55 if op in _USES else 50)
    yield (f"{rank}_{name}", f"{qualifier(cuda)} {C(out)} {name}({params})\n{{\n{body}\n}}\n")


def cast_body(src, dst, C):
    """A conversion's body; ``C(dtype)``: the target's type name."""
    src, dst = np.dtype(src), np.dtype(dst)
    if is_complex(src) and is_complex(dst):
        return f"  return {type_name(dst)}_make(a.re, a.im);"
    if is_complex(dst):
        return f"  return {type_name(dst)}_make(a, 0);"
    if dst == U8:
        return "  return (a.re != 0 || a.im != 0) ? 1 : 0;"
    # complex -> real: the real part (NumPy drops the imaginary one, with a
    # ComplexWarning the frontend gives)
    return f"  return ({C(dst)}) a.re;"


class _Body:
    """The C body of one complex helper (arguments ``a``, ``b``)."""

    # per real type: (largest finite, smallest normal, mantissa digits,
    # exp's argument past which it overflows, cosh/sinh's "large",
    # tanh's "huge")
    LIMITS = {4: ("3.4028234663852886e+38f", "1.1754943508222875e-38f", 24, "88.0f",
                  "9.0f", "11.0f"),
              8: ("1.7976931348623157e+308", "2.2250738585072014e-308", 53, "709.0",
                  "22.0", "22.0")}

    def __init__(self, op, cdt, cuda):
        self.op, self.cuda = op, cuda
        self.Z = type_name(cdt)
        self.rdt = REAL[cdt]
        self.T = "float" if self.rdt == np.float32 else "double"
        (self.MAX, self.MIN, self.MANT, self.EXP_BIG, self.BIG,
         self.HUGE) = self.LIMITS[self.rdt.itemsize]

    # -- spelling ----------------------------------------------------------
    def f(self, name):
        """A math function for the real type (CUDA: ``expf`` for float)."""
        return name + "f" if self.cuda and self.rdt == np.float32 else name

    def k(self, value):
        """A literal of the real type."""
        return real_literal(value, self.rdt, self.cuda)

    def mul(self, x, y):
        """``x * y``, rounded: never fused into a multiply-add by the compiler."""
        if not self.cuda:
            return f"{x} * {y}"
        return f"{'__fmul_rn' if self.rdt == np.float32 else '__dmul_rn'}({x}, {y})"

    def product(self, ar, ai, br, bi):
        """The parts of ``(ar + ai j) * (br + bi j)`` as NumPy's SIMD loop
        computes them (``npyv_muladdsub``: one fused multiply-add per part,
        ``fma(ar, br, -(ai * bi))`` and ``fma(ar, bi, ai * br)``), so the
        overflows come out as NumPy's: ``(1e30 + 1e30j) ** 2`` in complex64
        is ``-inf + inf j`` there, where rounding both products gives a NaN
        real part and a compiler's own contraction either."""
        fma = self.f("fma")
        return (f"{fma}({ar}, {br}, -{self.mul(ai, bi)})",
                f"{fma}({ar}, {bi}, {self.mul(ai, br)})")

    def mk(self, re, im):
        return f"{self.Z}_make({re}, {im})"

    def call(self, op, *args):
        return f"{helper_name(op, self._cdt())}({', '.join(args)})"

    def _cdt(self):
        return np.dtype(np.complex64) if self.rdt == np.float32 else np.dtype(np.complex128)

    @staticmethod
    def nan(x):
        return f"({x} != {x})"

    @staticmethod
    def finite(x):
        return f"(({x} - {x}) == ({x} - {x}))"

    def inf(self, x):
        return f"({x} == {x} && !{self.finite(x)})"

    def text(self):
        return "  " + getattr(self, "_" + self.op)().strip().replace("\n", "\n  ")

    # -- arithmetic --------------------------------------------------------
    def _make(self):
        return f"return {self.mk('a', 'b')};"

    def _cis(self):
        T = self.T
        if self.cuda:
            return f"{T} s, c;\n{self.f('sincos')}(a, &s, &c);\nreturn {self.mk('c', 's')};"
        return f"{T} c;\n{T} s = sincos(a, &c);\nreturn {self.mk('c', 's')};"

    def _add(self):
        return f"return {self.mk('a.re + b.re', 'a.im + b.im')};"

    def _subtract(self):
        return f"return {self.mk('a.re - b.re', 'a.im - b.im')};"

    def _multiply(self):
        return f"return {self.mk(*self.product('a.re', 'a.im', 'b.re', 'b.im'))};"

    def _divide(self):         # Smith's method, NumPy's branches
        T, one = self.T, self.k(1)
        return f"""
{T} abr = {self.f('fabs')}(b.re), abi = {self.f('fabs')}(b.im);
if (abr >= abi) {{
  if (abr == 0 && abi == 0)
    return {self.mk('a.re / abr', 'a.im / abi')};
  {T} rat = b.im / b.re;
  {T} scl = {one} / (b.re + b.im * rat);
  return {self.mk('(a.re + a.im * rat) * scl', '(a.im - a.re * rat) * scl')};
}}
{T} rat = b.re / b.im;
{T} scl = {one} / (b.im + b.re * rat);
return {self.mk('(a.re * rat + a.im) * scl', '(a.im * rat - a.re) * scl')};"""

    def _negative(self):
        return f"return {self.mk('-a.re', '-a.im')};"

    def _conjugate(self):
        return f"return {self.mk('a.re', '-a.im')};"

    def _square(self):
        return f"return {self.mk(*self.product('a.re', 'a.im', 'a.re', 'a.im'))};"

    def _reciprocal(self):      # NumPy's loop
        T, one = self.T, self.k(1)
        return f"""
if ({self.f('fabs')}(a.im) <= {self.f('fabs')}(a.re)) {{
  {T} r = a.im / a.re;
  {T} d = a.re + a.im * r;
  return {self.mk(f'{one} / d', '-r / d')};
}}
{T} r = a.re / a.im;
{T} d = a.re * r + a.im;
return {self.mk('r / d', f'-{one} / d')};"""

    def _power(self):           # NumPy's npy_cpow
        T, Z, one, zero = self.T, self.Z, self.k(1), self.k(0)
        mul = lambda x, y: self.call("multiply", x, y)        # noqa: E731
        return f"""
if (b.re == 0 && b.im == 0)
  return {self.mk(one, zero)};
if (a.re == 0 && a.im == 0) {{
  if (b.re > 0)
    return {self.mk(zero, zero)};
  return {self.mk(self.k(np.nan), self.k(np.nan))};
}}
if (b.im == 0 && b.re > -100 && b.re < 100 && ({T}) (int) b.re == b.re) {{
  int n = (int) b.re;
  if (n == 1)
    return a;
  if (n == 2)
    return {mul('a', 'a')};
  if (n == 3)
    return {mul('a', mul('a', 'a'))};
  int m = n < 0 ? -n : n;
  int mask = 1;
  {Z} acc = {self.mk(one, zero)};
  {Z} q = a;
  while (1) {{
    if (m & mask)
      acc = {mul('acc', 'q')};
    mask <<= 1;
    if (m < mask || mask <= 0)
      break;
    q = {mul('q', 'q')};
  }}
  if (n < 0)
    acc = {self.call('divide', self.mk(one, zero), 'acc')};
  return acc;
}}
{Z} l = {self.call('log', 'a')};
return {self.call('exp', self.call('multiply_c99', 'b', 'l'))};"""

    def _multiply_c99(self):
        """C99's complex ``*`` (Annex G: a NaN result of infinite operands is
        an infinity again), as C's ``cpow(a, b) = cexp(b * clog(a))`` that
        NumPy calls multiplies."""
        T, f, one, zero, inf = self.T, self.f, self.k(1), self.k(0), self.k(np.inf)
        box = lambda v: f"{v} = {f('copysign')}({self.inf(v)} ? {one} : {zero}, {v});"  # noqa: E731
        zero_nan = lambda v: f"if ({self.nan(v)}) {v} = {f('copysign')}({zero}, {v});"  # noqa: E731
        return f"""
{T} ar = a.re, ai = a.im, br = b.re, bi = b.im;
{T} ac = ar * br, bd = ai * bi, ad = ar * bi, bc = ai * br;
{T} x = ac - bd, y = ad + bc;
if ({self.nan('x')} && {self.nan('y')}) {{
  int again = 0;
  if ({self.inf('ar')} || {self.inf('ai')}) {{
    {box('ar')} {box('ai')}
    {zero_nan('br')} {zero_nan('bi')}
    again = 1;
  }}
  if ({self.inf('br')} || {self.inf('bi')}) {{
    {box('br')} {box('bi')}
    {zero_nan('ar')} {zero_nan('ai')}
    again = 1;
  }}
  if (!again && ({self.inf('ac')} || {self.inf('bd')} || {self.inf('ad')} || {self.inf('bc')})) {{
    {zero_nan('ar')} {zero_nan('ai')} {zero_nan('br')} {zero_nan('bi')}
    again = 1;
  }}
  if (again) {{
    x = {inf} * (ar * br - ai * bi);
    y = {inf} * (ar * bi + ai * br);
  }}
}}
return {self.mk('x', 'y')};"""

    # -- parts, tests, comparisons ------------------------------------------
    def _absolute(self):
        return f"return {self.f('hypot')}(a.re, a.im);"

    def _real(self):
        return "return a.re;"

    def _imag(self):
        return "return a.im;"

    def _isnan(self):
        return f"return ({self.nan('a.re')} || {self.nan('a.im')}) ? 1 : 0;"

    def _isinf(self):
        return f"return ({self.inf('a.re')} || {self.inf('a.im')}) ? 1 : 0;"

    def _isfinite(self):
        return f"return ({self.finite('a.re')} && {self.finite('a.im')}) ? 1 : 0;"

    def _nonzero(self):
        return "return (a.re != 0 || a.im != 0) ? 1 : 0;"

    def _equal(self):
        return "return (a.re == b.re && a.im == b.im) ? 1 : 0;"

    def _not_equal(self):
        return "return (a.re != b.re || a.im != b.im) ? 1 : 0;"

    def _ordered(self, cmp, x="a", y="b"):
        """NumPy's lexicographic order: real parts first (neither imaginary
        part NaN), then imaginary parts."""
        return (f"(({x}.re {cmp[0]} {y}.re && !{self.nan(x + '.im')} && "
                f"!{self.nan(y + '.im')}) || ({x}.re == {y}.re && {x}.im {cmp} {y}.im))")

    def _less(self):
        return f"return {self._ordered('<')} ? 1 : 0;"

    def _less_equal(self):
        return f"return {self._ordered('<=')} ? 1 : 0;"

    def _greater(self):
        return f"return {self._ordered('>')} ? 1 : 0;"

    def _greater_equal(self):
        return f"return {self._ordered('>=')} ? 1 : 0;"

    def _maximum(self):         # the first NaN, else the larger (a on ties)
        return (f"return ({self.nan('a.re')} || {self.nan('a.im')} || "
                f"{self._ordered('>=')}) ? a : b;")

    def _minimum(self):
        return (f"return ({self.nan('a.re')} || {self.nan('a.im')} || "
                f"{self._ordered('<=')}) ? a : b;")

    def _sign(self):            # NumPy 2: z / |z|; infinities first, as C's hypot
        T, one, zero, nan = self.T, self.k(1), self.k(0), self.k(np.nan)
        return f"""
if ({self.inf('a.re')})
  return {self.inf('a.im')} ? {self.mk(nan, nan)} : {self.mk(f'a.re > 0 ? {one} : -{one}', zero)};
if ({self.inf('a.im')})
  return {self.mk(zero, f'a.im > 0 ? {one} : -{one}')};
if ({self.nan('a.re')} || {self.nan('a.im')})
  return {self.mk(nan, nan)};
{T} h = {self.f('hypot')}(a.re, a.im);
if (h == 0)
  return {self.mk(zero, zero)};
return {self.mk('a.re / h', 'a.im / h')};"""

    def _rint(self):
        return f"return {self.mk(self.f('rint') + '(a.re)', self.f('rint') + '(a.im)')};"

    # -- exponentials and logarithms ------------------------------------------
    def _exp(self):
        T, f, nan, zero = self.T, self.f, self.k(np.nan), self.k(0)
        return f"""
{T} r = a.re, i = a.im;
if ({self.finite('r')}) {{
  if (i == 0)
    return {self.mk(f"{f('exp')}(r)", 'i')};
  if (!{self.finite('i')})
    return {self.mk(nan, nan)};
  {T} c = {f('cos')}(i), s = {f('sin')}(i);
  if (r > {self.EXP_BIG}) {{
    {T} h = {f('exp')}(r * {self.k(0.5)});
    return {self.mk('h * c * h', 'h * s * h')};
  }}
  {T} x = {f('exp')}(r);
  return {self.mk('x * c', 'x * s')};
}}
if ({self.nan('r')})
  return i == 0 ? a : {self.mk('r', nan)};
if (r > 0) {{
  if (i == 0)
    return a;
  if ({self.finite('i')})
    return {self.mk(f"r * {f('cos')}(i)", f"r * {f('sin')}(i)")};
  return {self.mk('r', nan)};
}}
if ({self.finite('i')})
  return {self.mk(f"{zero} * {f('cos')}(i)", f"{zero} * {f('sin')}(i)")};
return {self.mk(zero, zero)};"""

    def _log(self):
        T, f = self.T, self.f
        ln2 = self.k(np.log(2.0))
        return f"""
{T} ax = {f('fabs')}(a.re), ay = {f('fabs')}(a.im), rr;
{T} ri = {f('atan2')}(a.im, a.re);
if ({self.inf('ax')} || {self.inf('ay')})
  return {self.mk(self.k(np.inf), 'ri')};
if ({self.nan('ax')} || {self.nan('ay')})
  return {self.mk(self.k(np.nan), self.k(np.nan))};
if (ax > {self.MAX} / 4 || ay > {self.MAX} / 4) {{
  rr = {f('log')}({f('hypot')}(ax * {self.k(0.5)}, ay * {self.k(0.5)})) + {ln2};
}} else if (ax < {self.MIN} && ay < {self.MIN}) {{
  if (ax == 0 && ay == 0)
    return {self.mk(self.k(-np.inf), 'ri')};
  rr = {f('log')}({f('hypot')}({f('ldexp')}(ax, {self.MANT}), {f('ldexp')}(ay, {self.MANT})))
       - {self.MANT} * {ln2};
}} else {{
  {T} h = {f('hypot')}(ax, ay);
  if ({self.k(0.71)} <= h && h <= {self.k(1.73)}) {{
    {T} am = ax > ay ? ax : ay, an = ax > ay ? ay : ax;
    rr = {f('log1p')}((am - 1) * (am + 1) + an * an) * {self.k(0.5)};
  }} else {{
    rr = {f('log')}(h);
  }}
}}
return {self.mk('rr', 'ri')};"""

    def _scaled_log(self, factor):
        w = self.call("log", "a")
        k = self.k(factor)
        return f"{self.Z} w = {w};\nreturn {self.mk(f'w.re * {k}', f'w.im * {k}')};"

    def _log2(self):
        return self._scaled_log(1 / np.log(2.0))

    def _log10(self):
        return self._scaled_log(1 / np.log(10.0))

    def _exp2(self):
        k = self.k(np.log(2.0))
        return f"return {self.call('exp', self.mk(f'a.re * {k}', f'a.im * {k}'))};"

    def _expm1(self):           # NumPy's nc_expm1
        f = self.f
        re = f"{f('expm1')}(a.re) * {f('cos')}(a.im) - 2 * h * h"
        im = f"{f('exp')}(a.re) * {f('sin')}(a.im)"
        return f"{self.T} h = {f('sin')}(a.im * {self.k(0.5)});\nreturn {self.mk(re, im)};"

    def _log1p(self):           # NumPy's nc_log1p
        f = self.f
        re, im = f"{f('log')}(l)", f"{f('atan2')}(a.im, a.re + 1)"
        return f"{self.T} l = {f('hypot')}(a.re + 1, a.im);\nreturn {self.mk(re, im)};"

    def _sqrt(self):
        T, f, inf = self.T, self.f, self.k(np.inf)
        thresh = self.k(float(np.finfo(self.rdt).max) / (1 + np.sqrt(2.0)))
        return f"""
{T} x = a.re, y = a.im, t;
if (x == 0 && y == 0)
  return {self.mk(self.k(0), 'y')};
if ({self.inf('y')})
  return {self.mk(inf, 'y')};
if ({self.nan('x')})
  return {self.mk('x', self.k(np.nan))};
if ({self.inf('x')}) {{
  if (signbit(x))
    return {self.mk(f"{f('fabs')}(y - y)", f"{f('copysign')}(x, y)")};
  return {self.mk('x', f"{f('copysign')}(y - y, y)")};
}}
int scale = 0;
if ({f('fabs')}(x) >= {thresh} || {f('fabs')}(y) >= {thresh}) {{
  x *= {self.k(0.25)};
  y *= {self.k(0.25)};
  scale = 1;
}}
{self.Z} r;
if (x >= 0) {{
  t = {f('sqrt')}((x + {f('hypot')}(x, y)) * {self.k(0.5)});
  r = {self.mk('t', 'y / (2 * t)')};
}} else {{
  t = {f('sqrt')}((-x + {f('hypot')}(x, y)) * {self.k(0.5)});
  r = {self.mk(f"{f('fabs')}(y) / (2 * t)", f"{f('copysign')}(t, y)")};
}}
if (scale) {{
  r.re *= 2;
  r.im *= 2;
}}
return r;"""

    # -- hyperbolic and circular ----------------------------------------------
    def _cosh(self):
        T, f, half = self.T, self.f, self.k(0.5)
        return f"""
{T} x = a.re, y = a.im;
int xf = {self.finite('x')}, yf = {self.finite('y')};
if (xf && yf) {{
  if (y == 0)
    return {self.mk(f"{f('cosh')}(x)", 'x * y')};
  {T} ax = {f('fabs')}(x);
  if (ax < {self.BIG})
    return {self.mk(f"{f('cosh')}(x) * {f('cos')}(y)", f"{f('sinh')}(x) * {f('sin')}(y)")};
  if (ax < {self.EXP_BIG}) {{
    {T} h = {f('exp')}(ax) * {half};
    return {self.mk(f"h * {f('cos')}(y)", f"{f('copysign')}(h, x) * {f('sin')}(y)")};
  }}
  {T} h = {f('exp')}(ax * {half});
  return {self.mk(f"h * {half} * {f('cos')}(y) * h",
                  f"{f('copysign')}({self.k(1)}, x) * (h * {half} * {f('sin')}(y) * h)")};
}}
if (x == 0 && !yf)
  return {self.mk('y - y', f"{f('copysign')}({self.k(0)}, x * (y - y))")};
if (y == 0 && !xf)
  return {self.mk('x * x', f"{f('copysign')}({self.k(0)}, x) * y")};
if (xf && !yf)
  return {self.mk('y - y', 'x * (y - y)')};
if ({self.inf('x')}) {{
  if (!yf)
    return {self.mk('x * x', 'x * (y - y)')};
  return {self.mk(f"(x * x) * {f('cos')}(y)", f"x * {f('sin')}(y)")};
}}
return {self.mk('(x * x) * (y - y)', '(x + x) * (y - y)')};"""

    def _sinh(self):
        T, f, half = self.T, self.f, self.k(0.5)
        return f"""
{T} x = a.re, y = a.im;
int xf = {self.finite('x')}, yf = {self.finite('y')};
if (xf && yf) {{
  if (y == 0)
    return {self.mk(f"{f('sinh')}(x)", 'y')};
  {T} ax = {f('fabs')}(x);
  if (ax < {self.BIG})
    return {self.mk(f"{f('sinh')}(x) * {f('cos')}(y)", f"{f('cosh')}(x) * {f('sin')}(y)")};
  if (ax < {self.EXP_BIG}) {{
    {T} h = {f('exp')}(ax) * {half};
    return {self.mk(f"{f('copysign')}(h, x) * {f('cos')}(y)", f"h * {f('sin')}(y)")};
  }}
  {T} h = {f('exp')}(ax * {half});
  return {self.mk(f"{f('copysign')}({self.k(1)}, x) * (h * {half} * {f('cos')}(y) * h)",
                  f"h * {half} * {f('sin')}(y) * h")};
}}
if (x == 0 && !yf)
  return {self.mk(f"{f('copysign')}({self.k(0)}, x * (y - y))", 'y - y')};
if (y == 0 && !xf) {{
  if ({self.nan('x')})
    return a;
  return {self.mk('x', f"{f('copysign')}({self.k(0)}, y)")};
}}
if (xf && !yf)
  return {self.mk('y - y', 'x * (y - y)')};
if (!xf && !{self.nan('x')}) {{
  if (!yf)
    return {self.mk('x * x', 'x * (y - y)')};
  return {self.mk(f"x * {f('cos')}(y)", f"{self.k(np.inf)} * {f('sin')}(y)")};
}}
return {self.mk('(x * x) * (y - y)', '(x + x) * (y - y)')};"""

    def _tanh(self):            # Kahan's algorithm, as msun's
        T, f, one, zero = self.T, self.f, self.k(1), self.k(0)
        return f"""
{T} x = a.re, y = a.im;
if (!{self.finite('x')}) {{
  if ({self.nan('x')})
    return {self.mk('x', 'y == 0 ? y : x * y')};
  return {self.mk(f"{f('copysign')}({one}, x)",
                  f"{f('copysign')}({zero}, {self.inf('y')} ? y : {f('sin')}(y) * {f('cos')}(y))")};
}}
if (!{self.finite('y')})
  return {self.mk('x == 0 ? x : y - y', 'y - y')};
if ({f('fabs')}(x) >= {self.HUGE}) {{
  {T} e = {f('exp')}(-{f('fabs')}(x));
  return {self.mk(f"{f('copysign')}({one}, x)", f"4 * {f('sin')}(y) * {f('cos')}(y) * e * e")};
}}
{T} t = {f('tan')}(y);
{T} beta = 1 + t * t;
{T} s = {f('sinh')}(x);
{T} rho = {f('sqrt')}(1 + s * s);
{T} den = 1 + beta * s * s;
return {self.mk('(beta * rho * s) / den', 't / den')};"""

    # -- inverse functions: Kahan's formulas ("Branch cuts for complex
    # elementary functions", 1987) on finite values, whose square roots of
    # 1 - z and 1 + z carry the signs of zeros to the right side of each cut;
    # C99 Annex G's special values (as glibc, NumPy's reference) on the rest
    def _special_inverse(self, table):
        """``if`` statements returning the special values of ``table``:
        (condition, real, imaginary), in order."""
        return "\n".join(f"if ({c})\n  return {self.mk(r, i)};" for c, r, i in table)

    def _arcsinh(self):
        T, f, nan, inf = self.T, self.f, self.k(np.nan), self.k(np.inf)
        x, y = "a.re", "a.im"
        cs = lambda v, s: f"{f('copysign')}({v}, {s})"       # noqa: E731
        table = [(f"{self.nan(x)} && {self.inf(y)}", inf, nan),
                 (f"{self.nan(x)} && {y} == 0", x, y),
                 (f"{self.nan(x)} || {self.nan(y)}", f"{self.inf(x)} ? {x} : {nan}", nan),
                 (f"{self.inf(x)} && {self.inf(y)}", x, cs(self.k(np.pi / 4), y)),
                 (self.inf(x), x, cs(self.k(0), y)),
                 (self.inf(y), cs(inf, x), cs(self.k(np.pi / 2), y))]
        # asinh(z) = -i asin(iz), asin by Kahan's formula at w = iz = (-y, x)
        return (self._special_inverse(table) + f"""
{self.Z} s1 = {self.call('sqrt', self.mk(f'1 + {y}', f'-{x}'))};
{self.Z} s2 = {self.call('sqrt', self.mk(f'1 - {y}', x))};
{T} re = {f('asinh')}(s1.re * s2.im - s1.im * s2.re);
{T} im = {f('atan2')}({y}, s1.re * s2.re - s1.im * s2.im);
return {self.mk('re', 'im')};""")

    def _arcsin(self):          # asin(z) = -i asinh(iz); glibc's NaN + inf i at inf + NaN i
        return (f"if ({self.inf('a.re')} && {self.nan('a.im')})\n"
                f"  return {self.mk(self.k(np.nan), self.k(np.inf))};\n"
                + self._rotated("arcsinh", self.mk("w.im", "-w.re")))

    def _arccos(self):
        T, f, nan, inf = self.T, self.f, self.k(np.nan), self.k(np.inf)
        x, y = "a.re", "a.im"
        pi = self.k(np.pi)
        ninf = f"-{f('copysign')}({inf}, {y})"
        table = [(f"{self.nan(x)} && {self.inf(y)}", nan, f"-{y}"),
                 (f"{self.nan(y)} && {self.inf(x)}", nan, f"-{inf}"),
                 (f"{self.nan(y)} && {x} == 0", self.k(np.pi / 2), nan),
                 (f"{self.nan(x)} || {self.nan(y)}", nan, nan),
                 (f"{self.inf(x)} && {self.inf(y)}",
                  f"{x} > 0 ? {self.k(np.pi / 4)} : {self.k(3 * np.pi / 4)}", ninf),
                 (self.inf(x), f"{x} > 0 ? {self.k(0)} : {pi}", ninf),
                 (self.inf(y), self.k(np.pi / 2), ninf)]
        return (self._special_inverse(table) + f"""
{self.Z} s1 = {self.call('sqrt', self.mk(f'1 - {x}', f'-{y}'))};
{self.Z} s2 = {self.call('sqrt', self.mk(f'1 + {x}', y))};
{T} re = 2 * {f('atan2')}(s1.re, s2.re);
{T} im = {f('asinh')}(s2.re * s1.im - s2.im * s1.re);
return {self.mk('re', 'im')};""")

    def _arccosh(self):
        T, f, nan, inf = self.T, self.f, self.k(np.nan), self.k(np.inf)
        x, y = "a.re", "a.im"
        cs = lambda v: f"{f('copysign')}({v}, {y})"          # noqa: E731
        table = [(f"{self.nan(x)} && {self.inf(y)}", inf, nan),
                 (f"{self.nan(y)} && {self.inf(x)}", inf, nan),
                 (f"{self.nan(y)} && {x} == 0", nan, self.k(np.pi / 2)),
                 (f"{self.nan(x)} || {self.nan(y)}", nan, nan),
                 (f"{self.inf(x)} && {self.inf(y)}", inf,
                  cs(f"{x} > 0 ? {self.k(np.pi / 4)} : {self.k(3 * np.pi / 4)}")),
                 (self.inf(x), inf, cs(f"{x} > 0 ? {self.k(0)} : {self.k(np.pi)}")),
                 (self.inf(y), inf, cs(self.k(np.pi / 2)))]
        return (self._special_inverse(table) + f"""
{self.Z} s1 = {self.call('sqrt', self.mk(f'{x} - 1', y))};
{self.Z} s2 = {self.call('sqrt', self.mk(f'{x} + 1', y))};
{T} re = {f('asinh')}(s1.re * s2.re + s1.im * s2.im);
{T} im = 2 * {f('atan2')}(s1.im, s2.re);
return {self.mk('re', 'im')};""")

    def _arctanh(self):
        T, f, nan, inf = self.T, self.f, self.k(np.nan), self.k(np.inf)
        x, y = "a.re", "a.im"
        cs = lambda v, s: f"{f('copysign')}({v}, {s})"       # noqa: E731
        half_pi = self.k(np.pi / 2)
        table = [(f"{self.nan(x)} && {self.inf(y)}", self.k(0), cs(half_pi, y)),
                 (f"{self.nan(y)} && ({self.inf(x)} || {x} == 0)", cs(self.k(0), x), nan),
                 (f"{self.nan(x)} || {self.nan(y)}", nan, nan),
                 (f"{self.inf(x)} || {self.inf(y)}", cs(self.k(0), x), cs(half_pi, y)),
                 (f"{f('fabs')}({x}) == 1 && {y} == 0", cs(inf, x), y)]
        theta = self.k(np.sqrt(float(np.finfo(self.rdt).max)) / 4)
        return (self._special_inverse(table) + f"""
{T} b = {cs(self.k(1), x)};
{T} ax = b * {x}, by = b * {y}, re, im;
if (ax > {theta} || {f('fabs')}(by) > {theta}) {{
  if (ax >= {f('fabs')}(by)) {{
    {T} r = by / ax;
    re = 1 / (ax + by * r);
  }} else {{
    {T} r = ax / by;
    re = r / (ax * r + by);
  }}
  im = {cs(half_pi, 'by')};
}} else if (ax == 1) {{          /* y != 0: the special values took 1 + 0i */
  {T} t = {f('fabs')}(by);
  re = {f('log')}({f('sqrt')}({f('sqrt')}(4 + by * by)) / {f('sqrt')}(t));
  im = {cs(f'{half_pi} + {f("atan")}(t * {self.k(0.5)})', 'by')} * {self.k(0.5)};
}} else {{
  {T} t = {f('fabs')}(by);
  {T} d = 1 - ax;
  re = {f('log1p')}(4 * ax / (d * d + t * t)) * {self.k(0.25)};
  im = {f('atan2')}(2 * by, d * (1 + ax) - t * t) * {self.k(0.5)};
}}
return {self.mk('b * re', 'b * im')};""")

    def _arctan(self):          # atan(z) = -i atanh(iz)
        return self._rotated("arctanh", self.mk("w.im", "-w.re"))

    def _rotated(self, op, back):
        """``op`` of ``i z``, rotated back: sin, cos and tan through sinh,
        cosh and tanh (C99's identities, as NumPy's)."""
        w = self.call(op, self.mk("-a.im", "a.re"))
        return f"{self.Z} w = {w};\nreturn {back};"

    def _sin(self):
        # a real part infinite or NaN with an infinite imaginary part: NaN + inf i,
        # glibc's csin (NumPy's reference), where the rotation gives -inf for some
        inf = self.k(np.inf)
        return (f"if (!{self.finite('a.re')} && {self.inf('a.im')})\n"
                f"  return {self.mk(self.k(np.nan), inf)};\n"
                + self._rotated("sinh", self.mk("w.im", "-w.re")))

    def _cos(self):
        return self._rotated("cosh", "w")

    def _tan(self):
        return self._rotated("tanh", self.mk("w.im", "-w.re"))


# -- lowering ------------------------------------------------------------------

def involves_complex(name, args) -> bool:
    """Whether ``name(*args)`` (``args``: ``(expr, dtype)``) computes on
    complex values or makes one."""
    return any(dt.kind == "c" for _, dt in args) or name.startswith("cast_complex") \
        or name == "complex"


def _call(name, args, functions):
    functions.add(name)
    return p.Call(p.Variable(name), tuple(args))


def lower_complex_call(name, args, functions, lower_real):
    """``name(*args)`` where a value is complex: ``(expr, dtype)``.
    ``lower_real`` lowers what is real again (a logical op of truth
    values)."""
    if name.startswith("cast_"):
        (e, dt), = args
        to = np.dtype(name[5:])
        if dt == to:
            return e, to
        return _call(cast_name(dt, to), [e], functions), to
    if name == "where":
        (c, _), (a, adt), (b, _) = args
        return p.If(p.Comparison(c, "!=", 0), a, b), adt
    if name == "complex":       # parts joined (a write to .real or .imag)
        cdt = COMPLEX[args[0][1]]
        return _call(helper_name("make", cdt), [e for e, _ in args], functions), cdt
    cdt = next(dt for _, dt in args if dt.kind == "c")
    if name == "positive":
        return args[0]
    if name in _LOGICAL:        # truth values first, as NumPy's loops
        truths = [(_call(helper_name("nonzero", dt), [e], functions), BOOL)
                  if dt.kind == "c" else (e, dt) for e, dt in args]
        return lower_real(name, truths, functions)
    if name not in OPS or OPS[name][0] != "c" * len(args):
        raise Unsupported(f"{name} of {cdt.name} is not supported on device targets yet "
                          "(the numpy target computes it)")
    _, _, _, out = signature(helper_name(name, cdt))
    return _call(helper_name(name, cdt), [e for e, _ in args], functions), \
        (BOOL if out == U8 else out)


def complex_arg_combine_body(which):
    """The ``take`` test of argmax/argmin's (value, index) combine on complex
    values (``pair_helpers``): NumPy's order (real parts, then imaginary
    parts), a value with a NaN part above every other, the smaller index
    among equals (and among NaNs): a total order, so any tree of partials
    gives NumPy's first index."""
    cmp = ">" if which == "max" else "<"
    na, nb = "(a.re != a.re || a.im != a.im)", "(b.re != b.re || b.im != b.im)"
    beats = f"(b.re {cmp} a.re || (b.re == a.re && b.im {cmp} a.im))"
    same = "(b.re == a.re && b.im == a.im && ib < ia)"
    return f"{nb} ? (!{na} || ib < ia) : (!{na} && ({beats} || {same}))"
