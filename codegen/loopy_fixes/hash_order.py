"""Two more of loopy's choices made in one order in every process.

Like ``ilp_order``: loopy 2025.2 takes them in the iteration order of Python
sets of names, which follows ``PYTHONHASHSEED``, so one DAG's source
differed between processes (a split-K matmul over 300 x 5000 x 700 and a
float64 tensor-core matmul, found by comparing sources of the suite run
twice):

* which dependency a barrier's comment names (``for a_tile ...`` or ``for
  b_tile ...``): the instructions a loop's first barrier guards are a set
  (``_insn_ids_reaching_end``); they are iterated sorted;
* the order of the terms of an affine expression loopy rebuilds from isl
  (``aff_to_expr``: a prefetch's bounds check, ``16 * k_outer + 640 *
  bIdx(z)`` or ``640 * bIdx(z) + 16 * k_outer``), whose dimensions come in
  the order of a set of inames; the terms are sorted by name.

Only the text changes: the same barriers, the same sums.
"""
from __future__ import annotations


def _insn_ids_reaching_end(original):
    def ordered(schedule, kind, reverse):
        return sorted(original(schedule, kind, reverse))
    ordered.ordered = True
    return ordered


def aff_to_expr(aff):
    """loopy.symbolic.aff_to_expr with the terms in the order of their names."""
    from islpy import dim_type
    from loopy.symbolic import flatten      # loopy's (it folds ``x // 1``)
    from pymbolic import var
    denom = aff.get_denominator_val().to_python()
    result = (aff.get_constant_val() * denom).to_python()
    terms = []
    for dt in (dim_type.in_, dim_type.param):
        for i in range(aff.dim(dt)):
            coeff = (aff.get_coefficient_val(dt, i) * denom).to_python()
            if coeff:
                terms.append((aff.get_dim_name(dt, i), coeff))
    for name, coeff in sorted(terms):
        result += coeff * var(name)
    for i in range(aff.dim(dim_type.div)):
        coeff = (aff.get_coefficient_val(dim_type.div, i) * denom).to_python()
        if coeff:
            result += coeff * aff_to_expr(aff.get_div(i))
    return flatten(result // denom)


def install():
    """Idempotent; loopy code of others in the process stays valid."""
    import loopy.schedule as schedule
    import loopy.symbolic as symbolic
    if not getattr(schedule._insn_ids_reaching_end, "ordered", False):
        schedule._insn_ids_reaching_end = _insn_ids_reaching_end(
            schedule._insn_ids_reaching_end)
    symbolic.aff_to_expr = aff_to_expr
