"""Loopy reduction operations over complex values: sums and products that
combine through the complex helpers (C has no ``+`` on the struct), and
NumPy's ``max``/``min`` (lexicographic, the first NaN propagated), with
neutral elements that are complex constants (``complex_types`` prints
them)."""
from __future__ import annotations

import numpy as np
from loopy.library.reduction import (MaxReductionOperation, MinReductionOperation,
                                    ProductReductionOperation, SumReductionOperation)
from loopy.symbolic import Reduction, ResolvedFunction

from ..emit.complex_helpers import PaComplexFunction, Unsupported, helper_name


class _ComplexCombine:
    helper = None
    neutral = None

    def neutral_element(self, *dtypes, callables_table, target):
        dtype, = dtypes
        return dtype.numpy_dtype.type(self.neutral), callables_table

    def __call__(self, dtypes, operand1, operand2, callables_table, target):
        from loopy.translation_unit import add_callable_to_table
        dtype, = dtypes
        name = helper_name(self.helper, dtype.numpy_dtype)
        clbl, callables_table = PaComplexFunction(name).with_types({0: dtype, 1: dtype},
                                                                  callables_table)
        fid, callables_table = add_callable_to_table(callables_table, name, clbl)
        return ResolvedFunction(fid)(operand1, operand2), callables_table


class PaComplexSum(_ComplexCombine, SumReductionOperation):
    helper, neutral = "add", 0


class PaComplexProd(_ComplexCombine, ProductReductionOperation):
    # NumPy's product reduction starts from 1 + 0j too (np.prod([inf + 0j])
    # is inf + nan j): the neutral element is multiplied, as there
    helper, neutral = "multiply", 1


class PaComplexMax(_ComplexCombine, MaxReductionOperation):
    # (-inf, -inf) is below every value in NumPy's order; a NaN wins
    helper, neutral = "maximum", complex(-np.inf, -np.inf)


class PaComplexMin(_ComplexCombine, MinReductionOperation):
    helper, neutral = "minimum", complex(np.inf, np.inf)


_OPS = {"sum": PaComplexSum, "prod": PaComplexProd, "max": PaComplexMax,
        "min": PaComplexMin}


def complex_reduction(op, inames, expr, dtype):
    """``(loopy reduction, accumulator dtype)`` of ``op`` over complex
    ``expr``; any/all reduce truth values (``reduction_ops``)."""
    if op not in _OPS:
        raise Unsupported(f"{op} over {np.dtype(dtype).name} values is not supported on "
                          "device targets yet (the numpy target computes it)")
    return Reduction(_OPS[op](), inames, expr), np.dtype(dtype)
