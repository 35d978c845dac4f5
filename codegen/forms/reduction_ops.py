"""Loopy reduction operations with NumPy semantics: NaN-propagating max/min
with -inf/+inf neutral elements, integer sums and products that wrap (C's
signed overflow is undefined), and ``reduction_expr``, which picks one for a
reduction op and dtype."""
from __future__ import annotations

import numpy as np
from loopy.library.reduction import (MaxReductionOperation, MinReductionOperation,
                                    ProductReductionOperation, SumReductionOperation)
from loopy.symbolic import Reduction, ResolvedFunction, TypeCast

from ..cfuncs import BOOL, PaFunction, as_bool, helper_name

I32 = np.dtype(np.int32)
I64 = np.dtype(np.int64)


class _HelperCombine:
    """max/min reduction that combines with our NaN-propagating helper, with
    -inf/+inf neutral elements that every target can spell."""
    helper = None

    def neutral_element(self, *dtypes, callables_table, target):
        from loopy.translation_unit import add_callable_to_table
        dtype, = dtypes
        name = helper_name("neginf" if self.helper == "maximum" else "posinf",
                           dtype.numpy_dtype)
        clbl, callables_table = PaFunction(name).with_types({}, callables_table)
        fid, callables_table = add_callable_to_table(callables_table, name, clbl)
        return ResolvedFunction(fid)(), callables_table

    def __call__(self, dtypes, operand1, operand2, callables_table, target):
        from loopy.translation_unit import add_callable_to_table
        dtype, = dtypes
        name = helper_name(self.helper, dtype.numpy_dtype)
        clbl, callables_table = PaFunction(name).with_types({0: dtype, 1: dtype},
                                                            callables_table)
        fid, callables_table = add_callable_to_table(callables_table, name, clbl)
        return ResolvedFunction(fid)(operand1, operand2), callables_table


class PaMax(_HelperCombine, MaxReductionOperation):
    helper = "maximum"


class PaMin(_HelperCombine, MinReductionOperation):
    helper = "minimum"


class _IntCombine(_HelperCombine):
    """Integer sum/product combining through the wrapping helper
    (``pa_add_int32``...): C's signed overflow is undefined, NumPy wraps."""

    def neutral_element(self, *dtypes, callables_table, target):
        dtype, = dtypes
        return dtype.numpy_dtype.type(0 if self.helper == "add" else 1), callables_table


class PaIntSum(_IntCombine, SumReductionOperation):
    helper = "add"


class PaIntProd(_IntCombine, ProductReductionOperation):
    helper = "multiply"


def _widen(expr, dt):
    """Compute small ints and bools in int32 for max/min reductions."""
    if dt == BOOL or (dt.kind in "iu" and dt.itemsize < 4):
        return TypeCast(I32, expr), I32
    return expr, dt


def reduction_expr(op, inames, value):
    """``(loopy reduction expression, accumulator dtype)`` for ``op``."""
    expr, dt = value
    if op in ("sum", "prod"):
        if dt == BOOL:          # bool einsum: OR of ANDs
            return Reduction(PaMax(), inames, TypeCast(I32, as_bool(expr, dt))), I32
        if dt.kind in "iu":
            return Reduction(PaIntSum() if op == "sum" else PaIntProd(), inames, expr), dt
        return Reduction("sum" if op == "sum" else "product", inames, expr), dt
    if op in ("max", "min"):
        e, d = _widen(expr, dt)
        return Reduction(PaMax() if op == "max" else PaMin(), inames, e), d
    if op in ("any", "all"):
        e = TypeCast(I32, as_bool(expr, dt))
        return Reduction(PaMax() if op == "any" else PaMin(), inames, e), I32
    raise NotImplementedError(op)
