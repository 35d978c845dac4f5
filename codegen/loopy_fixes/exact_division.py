"""Integer division in subscripts that C computes as written.

Loopy 2025.2 prints a subscript in two steps: it types each ``//`` and
``%`` (plain C ``/`` and ``%`` where it proves the numerator non-negative
over the loop domain, else its ``loopy_floor_div`` helpers), then it
simplifies the whole subscript again with isl (``simplify_using_aff``) and
prints every ``//`` that simplification returns as C's ``/``.  isl writes a
floor with a numerator that may be negative: in an unrolled loop, lane 8 of
``(16*k + l) // 14`` became ``1 + (-3 + k) / 7``, which C truncates (a
transposed full sum on the CPU lanes form read the wrong elements: fuzzer
seed 2261382048).  ``install`` keeps a simplification only when every
division it returns has a numerator provably non-negative on the domain
(``is_nonnegative``, loopy's own test); otherwise the subscript is printed
as it was before, whose divisions were already typed safely.
"""
from __future__ import annotations

_STATE = {}


def _divisions(expr, found):
    """The numerators of the floor divisions and remainders in ``expr``."""
    import pymbolic.primitives as p
    if isinstance(expr, (p.FloorDiv, p.Remainder)):
        found.append(expr.numerator)
        _divisions(expr.numerator, found)
        _divisions(expr.denominator, found)
    elif isinstance(expr, p.ExpressionNode):
        for child in getattr(expr, "children", None) or ():
            _divisions(child, found)
        for attr in ("parameters", "index_tuple"):
            for child in getattr(expr, attr, None) or ():
                _divisions(child, found)
    return found


def safe_simplify_using_aff(kernel, expr):
    """loopy's ``simplify_using_aff``, unless its result divides a possibly
    negative numerator (then ``expr`` unchanged).  A subscript holding a
    type cast (a gather at an index computed from values, read in a
    reduction's body: a binary search's probe) is left as it is: loopy's
    guard around the conversion to isl misses pymbolic's error for it."""
    from pymbolic.mapper import UnsupportedExpressionError
    try:
        result = _STATE["original"](kernel, expr)
    except UnsupportedExpressionError:
        return expr
    if result is expr:
        return result
    numerators = _divisions(result, [])
    if not numerators:
        return result
    import islpy as isl
    from loopy.isl_helpers import is_nonnegative
    from loopy.symbolic import get_dependencies
    for num in numerators:
        if isinstance(num, int) and num >= 0:
            continue
        inames = get_dependencies(num) & kernel.all_inames()
        if get_dependencies(num) - inames:
            return expr                 # a parameter: leave the subscript as it was
        domain = kernel.get_inames_domain(inames).project_out_except(
            inames, [isl.dim_type.set])
        if not is_nonnegative(num, domain):
            return expr
    return result


def install():
    """Route loopy's subscript simplification through the safe version
    (idempotent; loopy imports it from ``loopy.symbolic`` at each call)."""
    import loopy.symbolic as S
    if "original" not in _STATE:
        _STATE["original"] = S.simplify_using_aff
        S.simplify_using_aff = safe_simplify_using_aff
