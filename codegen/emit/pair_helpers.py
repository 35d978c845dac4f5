"""The C helper that combines (value, index) pairs: argmax and argmin as
one reduction (``forms/reduction_ops.PaArgExtremum``).  Its source is part
of the helpers' digest (``cfuncs.HELPERS_PREAMBLE``)."""
from __future__ import annotations

import numpy as np
from loopy.kernel.function_interface import ScalarCallable
from loopy.types import NumpyType

from .complex_helpers import complex_arg_combine_body
from .dialect import dialect_of
from ..complex_types import typedefs


def arg_combine_name(which, dtype, index_dtype) -> str:
    return f"pa_arg{which}_{np.dtype(dtype).name}_{np.dtype(index_dtype).name}"


def _arg_combine_body(which, dt):
    """Keep (a, ia) or take (b, ib), as NumPy's argmax/argmin: the extremum,
    NaN above every value, the smaller index among equals.  A total order
    on pairs, so the combine is associative and commutative: any tree of
    partials gives the first index of the extremum."""
    if dt.kind == "c":      # NumPy's lexicographic order, a NaN in either part wins
        return complex_arg_combine_body(which)
    beats = f"b {'>' if which == 'max' else '<'} a || (b == a && ib < ia)"
    if dt.kind == "f":      # a NaN wins; among NaNs, the first
        return f"(b != b) ? (a == a || ib < ia) : (a == a && ({beats}))"
    return beats


class PaArgCombine(ScalarCallable):
    """``pa_arg<max|min>_<dtype>_<index dtype>(a, ia, b, ib, &i_out)``:
    the combine of a (value, index) reduction, returning the value kept
    and storing its index (loopy passes the second result by pointer)."""

    def with_types(self, arg_id_to_dtype, clbl_inf_ctx):
        _, which, dtname, idxname = self.name.split("_")
        T, I = NumpyType(np.dtype(dtname)), NumpyType(np.dtype(idxname))
        from constantdict import constantdict
        return self.copy(arg_id_to_dtype=constantdict({0: T, 1: I, 2: T, 3: I, -1: T, -2: I}),
                         name_in_target=self.name), clbl_inf_ctx

    def generate_preambles(self, target):
        _, which, dtname, idxname = self.name.split("_")
        dt = np.dtype(dtname)
        T = target.dtype_to_typename(NumpyType(dt))
        I = target.dtype_to_typename(NumpyType(np.dtype(idxname)))
        yield from typedefs([dt], dialect_of(target).name == "cuda")
        yield (f"50_{self.name}",
               f"{dialect_of(target).helper_qualifier} {T} {self.name}({T} a, {I} ia, {T} b, {I} ib, {I} *i_out)\n{{\n"
               f"  int take = {_arg_combine_body(which[3:], dt)};\n"
               f"  *i_out = take ? ib : ia;\n  return take ? b : a;\n}}\n")
