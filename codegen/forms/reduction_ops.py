"""Loopy reduction operations with NumPy semantics: NaN-propagating max/min
with -inf/+inf neutral elements, integer sums and products that wrap (C's
signed overflow is undefined), argmax/argmin over (value, index) pairs, and
``reduction_expr``, which picks one for a reduction op and dtype."""
from __future__ import annotations

import numpy as np
from loopy.library.reduction import (MaxReductionOperation, MinReductionOperation,
                                    ProductReductionOperation, ReductionOperation,
                                    SumReductionOperation)
from loopy.symbolic import Reduction, ResolvedFunction, TypeCast

from ..emit.cfuncs import BOOL, PaFunction, as_bool, helper_name
from ..emit.pair_helpers import PaArgCombine, arg_combine_name
from ..emit.user_callables import user_reduction
from .complex_reductions import complex_reduction
from ..user_functions import is_user_reduce

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


def _resolved(name, callable_, dtypes, callables_table):
    """``name`` typed for ``dtypes`` and added to the callables table."""
    from loopy.translation_unit import add_callable_to_table
    clbl, callables_table = callable_.with_types(dtypes, callables_table)
    fid, callables_table = add_callable_to_table(callables_table, name, clbl)
    return ResolvedFunction(fid), callables_table


class PaArgExtremum(ReductionOperation):
    """argmax/argmin in one pass: a reduction of (value, index) pairs whose
    combine (``pair_helpers.PaArgCombine``) keeps NumPy's answer, the first index
    of the extremum (of the first NaN, if any).  The neutral pair, (-inf
    or +inf, the index type's maximum), loses to every element."""

    def __init__(self, which):
        self.which = which          # "max" or "min"

    @property
    def arg_count(self):
        return 2

    def result_dtypes(self, *dtypes):
        return dtypes

    def neutral_element(self, *dtypes, callables_table, target):
        from loopy.library.function import MakeTupleCallable
        value_dt, index_dt = (d.numpy_dtype for d in dtypes)
        if value_dt.kind == "c":    # below (above) every complex value, a constant
            extreme = value_dt.type(complex(*[-np.inf if self.which == "max" else np.inf] * 2))
        else:
            name = helper_name("neginf" if self.which == "max" else "posinf", value_dt)
            extreme, callables_table = _resolved(name, PaFunction(name), {}, callables_table)
            extreme = extreme()
        make_tuple, callables_table = _resolved(
            "make_tuple", MakeTupleCallable(name="make_tuple"), dict(enumerate(dtypes)),
            callables_table)
        return make_tuple(extreme, index_dt.type(np.iinfo(index_dt).max)), callables_table

    def __call__(self, dtypes, operand1, operand2, callables_table, target):
        value_dt, index_dt = (d.numpy_dtype for d in dtypes)
        name = arg_combine_name(self.which, value_dt, index_dt)
        fn, callables_table = _resolved(name, PaArgCombine(name), dict(enumerate(dtypes * 2)),
                                        callables_table)
        return fn(*operand1, *operand2), callables_table

    def __hash__(self):
        return hash((type(self), self.which))

    def __eq__(self, other):
        return type(self) is type(other) and self.which == other.which

    def __str__(self):
        return "pa_arg" + self.which

    def update_persistent_hash(self, key_hash, key_builder):
        key_builder.rec(key_hash, (type(self).__name__, self.which))


def index_dtype(R):
    """The index type of an argmax/argmin over ``R`` values: int32 where
    its maximum (the neutral index) exceeds every index."""
    return I32 if R < np.iinfo(I32).max else I64


def _widen(expr, dt):
    """Compute small ints and bools in int32 for max/min reductions."""
    if dt == BOOL or (dt.kind in "iu" and dt.itemsize < 4):
        return TypeCast(I32, expr), I32
    return expr, dt


def reduction_expr(op, inames, value, index=None):
    """``(loopy reduction expression, accumulator dtype)`` for ``op``;
    argmax/argmin (``index``: the flat index into the reduced range and
    the range's length) reduce (value, index) pairs, their accumulator
    dtype a pair too."""
    expr, dt = value
    if is_user_reduce(op):      # pa.reduction_kernel: the user's combine and identity
        return Reduction(user_reduction(op), inames, expr), dt
    if dt.kind == "c" and op not in ("argmax", "argmin"):   # helpers (complex_reductions)
        return complex_reduction(op, inames, expr, dt)
    if op in ("argmax", "argmin"):
        e, d = _widen(expr, dt)
        j, R = index
        idx_dt = index_dtype(R)
        return Reduction(PaArgExtremum(op[3:]), inames, (e, TypeCast(idx_dt, j))), (d, idx_dt)
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


def result_buffers(name, acc_dt):
    """``[(buffer name, dtype)]`` holding the results of a reduction into
    ``name``: one of the accumulator's dtype, or a (value, index) pair's
    two, the value in ``<name>_value``."""
    if isinstance(acc_dt, tuple):
        return [(name + "_value", acc_dt[0]), (name, acc_dt[1])]
    return [(name, acc_dt)]


def hoist_nested_pairs(knl):
    """Loopy realizes a reduction nested in another with one result only,
    so a (value, index) reduction nested in one (``GroupReduce``'s strided
    loop under its tree, the chunks of two stages under their work-group)
    gets an instruction of its own, into two registers the outer one
    reduces.  Other kernels are returned as they are."""
    import loopy as lp
    import pymbolic.primitives as p
    from loopy.kernel.instruction import make_assignment
    kern = knl.default_entrypoint
    temps = dict(kern.temporary_variables)
    name_gen, id_gen = kern.get_var_name_generator(), kern.get_instruction_id_generator()

    def split(insn):
        outer = getattr(insn, "expression", None)
        if not (isinstance(outer, Reduction) and isinstance(outer.operation, PaArgExtremum)
                and isinstance(outer.expr, Reduction)):
            return [insn]
        pair = tuple(p.Variable(name_gen(f"{insn.id}_{part}")) for part in ("value", "index"))
        for v in pair:
            temps[v.name] = lp.TemporaryVariable(v.name, shape=(),
                                                 address_space=lp.AddressSpace.PRIVATE)
        inner = make_assignment(pair, outer.expr, id=id_gen(insn.id + "_inner"),
                                within_inames=insn.within_inames | frozenset(outer.inames),
                                depends_on=insn.depends_on, predicates=insn.predicates)
        return split(inner) + [insn.copy(expression=Reduction(outer.operation, outer.inames,
                                                               pair),
                                         depends_on=insn.depends_on | {inner.id})]
    insns = [new for insn in kern.instructions for new in split(insn)]
    if len(insns) == len(kern.instructions):
        return knl
    return knl.with_kernel(kern.copy(instructions=insns, temporary_variables=temps))
