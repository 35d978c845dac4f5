"""Loopy-level expressions -> target C text, with exactly loopy's meaning.

An outlined region (``outline.py``) is C code that loopy never sees, so its
expressions must print as loopy would print them: the same literal for
each constant in its type context (``0.5f`` in float code, ``-1l`` for an
int64), the same casts where loopy inserts them (``If`` branches, call
arguments, ``TypeCast``, the assigned value), the same types inferred
(``loopy.type_inference``: its ``combine``, small-integer rule and bool
``If`` conditions).  Stage one (``CLowering``) mirrors loopy's
``ExpressionToCExpressionMapper`` for the nodes that ``builder.KernelBuilder``
produces, giving a C-level pymbolic expression; stage two is loopy's own
``CExpressionToCodeMapper`` (precedence and parentheses).  Any other node
raises ``Refused``, and the caller keeps loopy's instructions.

Reads of arrays and index arithmetic of loop indices are not printed: they
are the region function's parameters (``params``), evaluated by loopy; a
gather at an index computed in the region is printed, through a pointer
parameter (``params.pointer``).
"""
from __future__ import annotations

import numpy as np
import pymbolic.primitives as p
from pymbolic.mapper import Mapper
from pymbolic.mapper.stringifier import PREC_NONE
from loopy.expression import dtype_to_type_context
from loopy.symbolic import Literal
from loopy.types import NumpyType
from loopy.typing import is_integer

from .cfuncs import _signature as helper_signature, storage_dtype
from .complex_helpers import is_complex_helper
from .runtime_checks import ERROR_BUFFER, _signature as checked_signature, is_checked
from ..user_functions import is_user_function, lookup

BOOL = np.dtype(np.bool_)


class Refused(Exception):
    """A node this printer does not know: the region is not outlined."""


def call_types(name):
    """``(argument dtypes, result dtype, checked)`` of a callable that
    lowering emits, as its loopy ``with_types`` declares them."""
    if is_checked(name):
        _, _, args, out = checked_signature(name)
        return tuple(storage_dtype(a) for a in args), storage_dtype(out), True
    if is_user_function(name):
        fn = lookup(name)
        return tuple(storage_dtype(d) for _, d in fn.params), storage_dtype(fn.result), False
    if is_complex_helper(name):
        raise Refused("a complex value")
    if name.startswith("pa_") and not name.startswith(("pa_u_", "pa_r_")):
        try:
            _, dt, nargs, out = helper_signature(name)
        except (ValueError, TypeError):
            raise Refused(f"unknown function {name}") from None
        return (storage_dtype(dt),) * nargs, np.dtype(out), False
    raise Refused(f"unknown function {name}")


_COMBINED: dict = {}     # tuple of dtypes -> combine's result


def combine(dtypes):
    """loopy's ``TypeInferenceMapper.combine`` of numpy dtypes (once per
    tuple of dtypes: a region asks it for every node)."""
    key = tuple(dtypes)
    hit = _COMBINED.get(key)
    if hit is None:
        from loopy.type_inference import TypeInferenceMapper
        res = TypeInferenceMapper.combine(None, [[NumpyType(d)] for d in key])
        hit = _COMBINED[key] = res[0].numpy_dtype
    return hit


_METHODS: dict = {}      # expression type -> its mapper_method (or None)


class _Known(Mapper):
    """A mapper of the nodes lowering emits: anything else is refused (the
    kernel then keeps loopy's instructions)."""

    def dispatch(self, expr, *args):
        """pymbolic's ``Mapper.__call__``, with the method name looked up once
        per expression type (the common case: the method exists)."""
        t = type(expr)
        name = _METHODS.get(t, False)
        if name is False:
            name = _METHODS[t] = getattr(t, "mapper_method", None) \
                if issubclass(t, p.ExpressionNode) else None
        if name is not None:
            method = getattr(self, name, None)
            if method is not None:
                return method(expr, *args)
        return Mapper.__call__(self, expr, *args)

    def map_foreign(self, e, *args):
        if isinstance(e, (int, float, complex, np.generic)):
            return self.map_constant(e, *args)
        raise Refused(f"{type(e).__name__}")

    def handle_unsupported_expression(self, e, *args):
        raise Refused(f"{type(e).__name__}")


class Types(_Known):
    """loopy's type inference for the nodes lowering emits; ``names``:
    variable name -> dtype (region temporaries); ``param.dtype_of(expr)``:
    the dtype of an expression that is a parameter, else None (asking
    allocates nothing: ``a - b`` is typed, never printed)."""

    def __init__(self, names, index_dtype, inames=(), param=None):
        self.names, self.index_dtype = names, np.dtype(index_dtype)
        self.inames, self.param = set(inames), param
        self._memo = {}

    def rec(self, expr):
        """The dtype of ``expr``; a parameter's is its own (memoized by
        identity, the expression kept alive with it)."""
        hit = self._memo.get(id(expr))
        if hit is not None and hit[0] is expr:
            return hit[1]
        dt = self.param.dtype_of(expr) if self.param is not None else None
        if dt is None:
            try:
                dt = self.dispatch(expr)
            except NotImplementedError:     # pymbolic's default for a node type
                raise Refused(f"the type of a {type(expr).__name__}") from None
        self._memo[id(expr)] = (expr, dt)
        return dt

    __call__ = rec

    def map_constant(self, c):
        if isinstance(c, np.generic):
            return np.dtype(type(c))
        if isinstance(c, bool):
            raise Refused("a Python bool")
        if is_integer(c):
            return np.dtype(np.int32) if -2**31 <= c < 2**31 else np.dtype(np.int64)
        if isinstance(c, float):
            return np.dtype(np.float32) if np.float32(c) == np.float64(c) \
                else np.dtype(np.float64)
        raise Refused(f"constant {c!r}")

    def map_variable(self, v):
        if v.name in self.names:
            return self.names[v.name]
        if v.name in self.inames:
            return self.index_dtype
        raise Refused(f"variable {v.name}")

    def map_subscript(self, s):
        """A gather at an index computed in the region: the buffer's type
        (``param.gather_dtype``), its index typed as any other value."""
        dt = self.param.gather_dtype(s) if self.param is not None else None
        if dt is None:
            raise Refused("an array read that is no parameter")
        self.rec(s.index_tuple[0])
        return dt

    def map_sum(self, e):
        kept, small = [], []
        for ch in e.children:
            is_small = False
            if is_integer(ch):
                if isinstance(ch, np.integer):
                    with np.errstate(over="ignore"):    # abs(int8(-128)) is -128: small,
                        is_small = abs(ch) < 1024       # as in loopy
                else:
                    is_small = abs(ch) < 1024
            (small if is_small else kept).append(self.rec(ch))
        if all(d.kind in "iu" for d in kept):         # loopy's ``is_integral``
            kept += small
        return combine(kept)

    map_product = map_sum

    def map_quotient(self, e):
        n, d = self.rec(e.numerator), self.rec(e.denominator)
        if n.kind in "iu" and d.kind in "iu":
            return np.dtype(np.float64)
        return combine([n, d])

    def map_floor_div(self, e):
        return combine([self.rec(e.numerator), self.rec(e.denominator)])

    map_remainder = map_floor_div

    def map_min(self, e):
        return combine([self.rec(c) for c in e.children])

    map_max = map_min

    def map_comparison(self, e):
        self.rec(e.left), self.rec(e.right)
        return BOOL

    def map_logical_and(self, e):
        for c in e.children:
            self.rec(c)
        return BOOL

    map_logical_or = map_logical_and

    def map_logical_not(self, e):
        self.rec(e.child)
        return BOOL

    def map_if(self, e):
        return combine([self.rec(e.condition), self.rec(e.then), self.rec(e.else_)])

    def map_type_cast(self, e):
        self.rec(e.child)
        return np.dtype(e.type.numpy_dtype)

    def map_call(self, e):
        return call_types(e.function.name)[1]


class CLowering(_Known):
    """Stage one: a loopy expression -> the C-level expression loopy's
    codegen would make of it (literals, casts, error pointers)."""

    def __init__(self, target, types, param):
        self.target, self.types = target, types
        self.param = param      # (expr, context) -> parameter Variable, or None
        self.called = set()     # the functions the printed code calls

    def ctype(self, dt):
        return self.target.get_dtype_registry().dtype_to_ctype(NumpyType(np.dtype(dt)))

    def context(self, dt):
        return dtype_to_type_context(self.target, NumpyType(np.dtype(dt)))

    def rec(self, expr, ctx=None, needed=None):     # noqa: D401
        """As loopy's ``rec``: a cast to ``needed`` where the type differs."""
        var = self.param(expr, ctx)
        result = var if var is not None else self.dispatch(expr, ctx)
        if needed is not None and self.types(expr) != np.dtype(needed):
            if var is not None and self.param.declared[var.name] == np.dtype(needed):
                return result       # index arithmetic of a float context: its argument's cast
            return p.Variable(f"({self.ctype(needed)}) ")(result)
        return result

    def map_constant(self, c, ctx):
        """Literals as ``ExpressionToCExpressionMapper.map_constant``."""
        if isinstance(c, (complex, np.complexfloating, bool)):
            raise Refused(f"constant {c!r}")
        if isinstance(c, np.generic):
            if isinstance(c, np.floating) and not np.isfinite(c):
                raise Refused("a bare non-finite constant")
            if isinstance(c, np.float32):
                return Literal(repr(float(c)) + "f")
            if isinstance(c, np.float64):
                return Literal(repr(float(c)))
            if isinstance(c, np.integer):
                info = np.iinfo(c)
                suffix = ("u" if info.min == 0 else "") + ("l" if info.max > 2**31 - 1 else "")
                return Literal(repr(int(c)) + suffix)
            if isinstance(c, np.bool_):
                return Literal("true" if c else "false")
            raise Refused(f"constant {c!r}")
        if not np.isfinite(c):
            raise Refused("a bare non-finite constant")
        if ctx == "f":
            return Literal(repr(float(c)) + "f")
        if ctx == "d":
            return Literal(repr(float(c)))
        if ctx in ("i", "b") or is_integer(c):
            return int(c)
        raise Refused(f"constant {c!r} in context {ctx}")

    def map_variable(self, v, ctx):
        self.types(v)           # refuses names that are neither temporaries nor parameters
        return v

    def map_subscript(self, s, ctx):
        """A gather at an index computed in the region reads the buffer
        through a pointer parameter (``param.pointer``), its index in
        loopy's ``"i"`` context and uncast (as loopy's ``map_subscript`` of
        a flat array); a buffer the region stores is refused."""
        ptr = self.param.pointer(s)
        if ptr is None:
            raise Refused("an array read inside the region (an index computed in it, "
                          "or a buffer it stores)")
        return p.Subscript(ptr, self.rec(s.index_tuple[0], "i"))

    def map_sum(self, e, ctx):
        return type(e)(tuple(self.rec(c, ctx) for c in e.children))

    map_product = map_sum
    map_logical_and = map_sum
    map_logical_or = map_sum

    def map_logical_not(self, e, ctx):
        return p.LogicalNot(self.rec(e.child, ctx))

    def map_quotient(self, e, ctx):
        """Float division.  An integer over an integer is refused: loopy types
        it float64 and casts both sides to its context's float type."""
        nd, dd = self.types(e.numerator), self.types(e.denominator)
        num, den = self.rec(e.numerator, ctx), self.rec(e.denominator, ctx)
        if nd.kind not in "fc" and dd.kind not in "fc":
            raise Refused("an integer quotient")
        return p.Quotient(num, den)

    def map_comparison(self, e, ctx):
        inner = self.context(self.types(e.left - e.right))
        return p.Comparison(self.rec(e.left, inner), e.operator, self.rec(e.right, inner))

    def map_if(self, e, ctx):
        dt = self.types(e)
        return p.If(self.rec(e.condition, ctx, BOOL), self.rec(e.then, ctx, dt),
                    self.rec(e.else_, ctx, dt))

    def map_type_cast(self, e, ctx):
        return self.rec(e.child, ctx, e.type.numpy_dtype)

    def map_call(self, e, ctx):
        """Arguments converted to the parameter types (``emit_call``); a
        checked helper's last argument is the error buffer itself."""
        name = e.function.name
        args, _, checked = call_types(name)
        self.called.add(name)
        params = e.parameters
        if checked:
            if len(params) != len(args) + 1 or params[-1] != p.Variable(ERROR_BUFFER)[0]:
                raise Refused(f"a call of {name} with unexpected arguments")
            params = params[:-1]
        elif len(params) != len(args):
            raise Refused(f"{name} takes {len(args)} arguments")
        out = [self.rec(a, self.context(d), d) for a, d in zip(params, args)]
        if checked:
            out.append(p.Variable(ERROR_BUFFER))
        return p.Variable(name)(*out)

    def _refuse(self, e, *args):
        """Integer ``//`` and ``%`` of values: loopy picks its own helpers by
        an isl sign analysis; powers, min/max and bit operators: lowering
        emits helpers instead (index arithmetic is a parameter)."""
        raise Refused(f"{type(e).__name__} of values")

    map_floor_div = map_remainder = map_power = map_min = map_max = _refuse
    map_bitwise_and = map_bitwise_or = map_bitwise_xor = map_bitwise_not = _refuse
    map_left_shift = map_right_shift = _refuse


class Printer:
    """Prints values of a region: ``names`` maps temporaries to dtypes;
    ``param(expr)`` gives the parameter Variable standing for ``expr`` (an
    array read or index arithmetic) or None, and ``param.dtype_of(expr)``
    its dtype."""

    def __init__(self, target, names, index_dtype, param, inames):
        self.types = Types(names, index_dtype, inames, param)
        self.lowering = CLowering(target, self.types, param)
        self.code = target.get_device_ast_builder().get_c_expression_to_code_mapper()

    def value(self, expr, dtype):
        """C text of ``expr`` assigned to a ``dtype`` variable (the
        assignment's type context and cast, as loopy's ``emit_assignment``)."""
        dtype = np.dtype(dtype)
        c = self.lowering.rec(expr, self.lowering.context(dtype), dtype)
        return self.code(c, PREC_NONE)

    def ctype(self, dtype):
        return self.lowering.ctype(dtype)


__all__ = ["Printer", "Refused", "Types", "call_types", "combine"]
