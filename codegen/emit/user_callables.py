"""The loopy side of user C functions (``user_functions``): the callable
that types and emits a custom kernel's function, and the reduction that
combines with the user's ``reduce_expr``.  Apart, so that building a
custom kernel (the frontend, the NumPy target) imports no loopy."""
from __future__ import annotations

import hashlib

from loopy.kernel.function_interface import ScalarCallable
from loopy.library.reduction import ScalarReductionOperation
from loopy.symbolic import ResolvedFunction
from loopy.types import NumpyType

from .cfuncs import storage_dtype
from .dialect import dialect_of
from ..user_functions import MARKER, lookup


class UserCallable(ScalarCallable):
    """A user function for loopy: typed from its ``UserFunction``; its
    definition (and the user's preamble) are emitted as preambles."""

    def with_types(self, arg_id_to_dtype, clbl_inf_ctx):
        from constantdict import constantdict
        fn = lookup(self.name)
        types = {k: NumpyType(storage_dtype(d)) for k, (_, d) in enumerate(fn.params)}
        types[-1] = NumpyType(storage_dtype(fn.result))
        return self.copy(arg_id_to_dtype=constantdict(types), name_in_target=self.name), \
            clbl_inf_ctx

    def generate_preambles(self, target):
        fn = lookup(self.name)
        if fn.preamble:
            digest = hashlib.sha256(fn.preamble.encode()).hexdigest()[:16]
            yield (f"40_pa_user_preamble_{digest}",
                   f"{MARKER}{fn.kernel} (preamble) */\n{fn.preamble}\n")
        yield (f"45_{self.name}", fn.c_source(
            lambda d: target.dtype_to_typename(NumpyType(storage_dtype(d))),
            dialect_of(target).helper_qualifier))


def _resolved(name, callables_table, arg_types):
    from loopy.translation_unit import add_callable_to_table
    clbl, callables_table = UserCallable(name).with_types(arg_types, callables_table)
    fid, callables_table = add_callable_to_table(callables_table, name, clbl)
    return ResolvedFunction(fid), callables_table


class UserReduction(ScalarReductionOperation):
    """A reduction combining with the user's ``reduce_expr`` (a function of
    ``a`` and ``b``) from the user's identity: loopy gets both as calls,
    so every reduction form (thread, group, two stages, lanes, rows,
    split columns, their combine kernels) takes it as it takes a sum."""

    def __init__(self, combine, identity):
        self.combine, self.identity = combine, identity     # C function names

    def result_dtypes(self, arg_dtype):
        return (NumpyType(storage_dtype(lookup(self.combine).result)),)

    def neutral_element(self, *dtypes, callables_table, target):
        fn, callables_table = _resolved(self.identity, callables_table, {})
        return fn(), callables_table

    def __call__(self, dtypes, operand1, operand2, callables_table, target):
        fn, callables_table = _resolved(self.combine, callables_table, {})
        return fn(operand1, operand2), callables_table

    def __hash__(self):
        return hash((type(self), self.combine))

    def __eq__(self, other):
        return type(self) is type(other) and self.combine == other.combine

    def __str__(self):
        return self.combine

    def update_persistent_hash(self, key_hash, key_builder):
        key_builder.rec(key_hash, (type(self).__name__, self.combine, self.identity))


def user_reduction(op) -> UserReduction:
    return UserReduction(op, lookup(op).partner)


__all__ = ["UserCallable", "UserReduction", "user_reduction"]
