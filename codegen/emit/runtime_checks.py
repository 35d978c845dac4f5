"""Run-time checks on the device: out-of-bounds gathers and negative integer
powers raise NumPy's errors instead of reading outside a buffer or
returning 0.

A kernel cannot raise, so each check has a slot in one int64 buffer,
``pa_err`` (``ERROR_BUFFER``), per program: a failing work-item stores the
offending value there (never 0: index 0 is in bounds of any non-empty axis,
gathers from an empty axis are refused when built, and a refused exponent
is negative), then carries on with a safe value (index 0), so nothing
outside a buffer is ever read and the device context stays healthy.  The host reads the flags
once the call's results are read and raises the error of the first failed
check (``raise_failed_check``), naming the index as the user passed it, the
axis and its size.  Checks exist only where the expression can fail (lazy
gathers, signed integer ``**``), so every other program is unchanged.

The helpers are loopy scalar callables (``PaChecked``) whose emitted call
gets ``pa_err`` appended as a last argument: loopy sees a pure function of
its value arguments, the C code sees the pointer.
"""
from __future__ import annotations

import re
from functools import lru_cache

import numpy as np
import pymbolic.primitives as p
from loopy.types import NumpyType

from .cfuncs import PaFunction, narrow, storage_dtype, unsigned_wide
from .dialect import dialect_of
from .complex_helpers import PaComplexFunction, is_complex_helper

ERROR_BUFFER = "pa_err"
I64 = np.dtype(np.int64)
I32 = np.dtype(np.int32)


def checked_name(op, dtype) -> str:
    return f"pa_chk_{op}_{np.dtype(dtype).name}"


def is_checked(name: str) -> bool:
    return name.startswith("pa_chk_")


@lru_cache(maxsize=None)
def _signature(name):
    """``pa_chk_<op>_<dtype>`` -> (op, value dtype, argument dtypes, result)."""
    op, dtname = name[len("pa_chk_"):].rsplit("_", 1)
    dt = np.dtype(dtname)
    if op == "index":       # (raw index, axis size, check number) -> index
        return op, dt, (dt, I64, I32), I64
    if op == "power":       # (base, exponent, check number) -> base ** exponent
        return op, dt, (dt, dt, I32), dt
    raise NotImplementedError(name)


def _store_if(cond, ptr, value, d):
    """``if (cond) *ptr = value`` as straight-line code.  nvcc turns the C
    form into a branch per element, and the gathers after it then wait for
    each other (2x slower on the H100); a predicated PTX store does not
    (where dialect ``d`` has inline PTX)."""
    if d.inline_ptx:
        return (f'asm volatile("{{ .reg .pred p; setp.ne.s32 p, %0, 0; '
                f'@p st.s64 [%1], %2; }}" :: "r"({cond}), "l"({ptr}), "l"({value}));')
    return f"if ({cond}) *({ptr}) = {value};"


def _body(op, dt, T, d):
    W = unsigned_wide(dt, d)
    if op == "index":
        # branch-free but for one predicated store (see _store_if)
        neg = "a < 0 ? a + n : a" if dt.kind == "i" else "a"
        return (f"long j = (long) ({neg});\n"
                f"  int bad = ({W}) j >= ({W}) n;\n"
                f"  {_store_if('bad', 'err + c', '(long) a', d)}\n"
                f"  return bad ? 0 : j;")
    if op == "power":       # NumPy raises on any negative exponent of a signed int
        return (f"if (b < 0) {{ err[c] = (long) b; return 0; }}\n"
                f"  {W} r = 1, x = ({W}) a;\n"
                f"  while (b > 0) {{ if (b & 1) r *= x; x *= x; b >>= 1; }}\n"
                f"  return {narrow('r', dt, T, d)};")
    raise NotImplementedError(op)


class PaChecked(PaFunction):
    """A helper that may record a failed check in ``pa_err``."""

    def with_types(self, arg_id_to_dtype, clbl_inf_ctx):
        from constantdict import constantdict
        op, dt, args, out = _signature(self.name)
        types = {k: NumpyType(storage_dtype(a)) for k, a in enumerate(args)}
        types[len(args)] = NumpyType(I64)       # pa_err[0] (see checked_call)
        types[-1] = NumpyType(out)
        return self.copy(arg_id_to_dtype=constantdict(types), name_in_target=self.name), \
            clbl_inf_ctx

    def emit_call(self, expression_to_code_mapper, expression, target):
        """``name(values..., pa_err)``: the values converted to the helper's
        argument types (as loopy's own ``emit_call``), then the pointer."""
        from loopy.expression import dtype_to_type_context
        _, _, args, _ = _signature(self.name)
        ecm = expression_to_code_mapper
        values = [ecm.rec(par, dtype_to_type_context(target, NumpyType(storage_dtype(d))),
                          NumpyType(storage_dtype(d)))
                  for par, d in zip(expression.parameters, args)]
        return p.Call(p.Variable(self.name_in_target),
                      tuple(values) + (p.Variable(ERROR_BUFFER),))

    def generate_preambles(self, target):
        op, dt, args, out = _signature(self.name)
        d = dialect_of(target)
        name = lambda d: target.dtype_to_typename(NumpyType(storage_dtype(d)))  # noqa: E731
        params = ", ".join(f"{name(d)} {v}" for d, v in zip(args, ("a", "n" if op == "index"
                                                                     else "b", "c")))
        ptr = f"{d.global_space}long *err"
        body = _body(op, dt, name(dt), d)
        yield (f"50_{self.name}", f"{d.helper_qualifier} {name(out)} {self.name}({params}, "
                                  f"{ptr})\n{{\n  {body}\n}}\n")


def callable_for(name):
    if is_complex_helper(name):
        return PaComplexFunction(name)
    return PaChecked(name) if is_checked(name) else PaFunction(name)


def checked_call(op, dtype, args, what, checks, functions):
    """The checked helper call for ``op``; ``what`` describes the check for
    the host's error (``("index", axis, size)`` or ``("power",)``)."""
    checks.append(what)
    name = checked_name(op, dtype)
    functions.add(name)
    # ``pa_err[0]`` is a parameter so that loopy passes the buffer to the
    # kernel (emit_call passes the pointer; see writable_error_buffer)
    return p.Call(p.Variable(name), tuple(args) + (np.int32(len(checks) - 1),
                                                   p.Variable(ERROR_BUFFER)[0]))


_CONST_FLAGS = re.compile(r"long const \*__restrict__ " + ERROR_BUFFER + r"\b")


def writable_error_buffer(source: str) -> str:
    """Declare ``pa_err`` writable in the kernels' signatures.  No loopy
    instruction writes it (the helpers do), so loopy declares it ``const``,
    and a compiler may drop stores through a ``const restrict`` argument."""
    return _CONST_FLAGS.sub("long *__restrict__ " + ERROR_BUFFER, source)


def raise_failed_check(flags, checks):
    """Raise NumPy's error for the first check flagged in ``flags`` (the
    host copy of ``pa_err``); return quietly when none failed."""
    flags = np.asarray(flags)
    failed = np.flatnonzero(flags)
    if not failed.size:
        return
    c = int(failed[0])
    what, value = checks[c], int(flags[c])
    if what[0] == "index":
        _, axis, size = what
        raise IndexError(f"index {value} is out of bounds for axis {axis} with size {size}")
    raise ValueError("Integers to negative integer powers are not allowed.")


__all__ = ["ERROR_BUFFER", "PaChecked", "callable_for", "checked_call", "is_checked",
           "raise_failed_check"]
