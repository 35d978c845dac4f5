"""Building a case from a seed: the op table and ``make_case``/``random_dag``.

The table of op generators and their weights is here, in one place, next to
the loop that draws from it.  Its order matters: ``make_case`` draws an index
into ``OPS``, so reordering or reweighting it changes every seed's DAG.
"""
from __future__ import annotations

import numpy as np

from fuzz.builder import _Builder
from fuzz.case import Case
from fuzz.ops_complex import op_complex
from fuzz.ops_functions import (op_composed, op_convolve, op_count, op_fft, op_order_stat,
                                op_rearrange)
from fuzz.ops_leaves import op_constant, op_data, op_pair, op_random
from fuzz.ops_shapes import (op_argreduce, op_attention, op_broadcast, op_concat, op_gather,
                             op_layout, op_matmul, op_nested_reduce, op_reduce, op_reshape,
                             op_rows, op_scan, op_setitem, op_sibling_products)
from fuzz.ops_values import (op_arith, op_astype, op_bitcmp, op_bitwise, op_compare,
                             op_deep, op_divide, op_divmod, op_float, op_invert, op_logical,
                             op_maxmin, op_narrow_chain, op_power, op_shared, op_shift, op_unary_int,
                             op_where)


OPS = [(op_arith, 10), (op_narrow_chain, 7), (op_bitwise, 5), (op_invert, 1),
       (op_bitcmp, 6), (op_compare, 5), (op_logical, 3), (op_astype, 6), (op_where, 3),
       (op_reduce, 9), (op_argreduce, 3), (op_divmod, 3), (op_power, 2), (op_unary_int, 3),
       (op_float, 3), (op_maxmin, 2), (op_divide, 1), (op_gather, 4), (op_layout, 5),
       (op_reshape, 2), (op_broadcast, 1), (op_concat, 2), (op_matmul, 3), (op_shared, 2),
       (op_sibling_products, 1), (op_constant, 1), (op_data, 1), (op_pair, 2), (op_rows, 3),
       (op_deep, 1), (op_nested_reduce, 2), (op_shift, 2), (op_setitem, 3), (op_random, 1),
       (op_rearrange, 2), (op_order_stat, 1), (op_count, 1), (op_composed, 2),
       (op_convolve, 1), (op_complex, 5), (op_fft, 2), (op_scan, 2), (op_attention, 1)]


def make_case(seed, max_ops=None, sizes=None) -> Case:
    """The random case of ``seed``: placeholders, operations, 1 to 3 outputs.

    ``max_ops`` fixes the number of operations, ``sizes`` ("small", "medium",
    "large") the size class; both are drawn from the seed by default."""
    b = _Builder(seed, max_ops, sizes)
    rng = b.rng
    for _ in range(int(rng.integers(1, 4))):
        b.add_placeholder()
    funcs, weights = zip(*OPS)
    weights = np.array(weights, float) / sum(weights)
    attempts = 0
    while len(b.ops) < b.max_ops and attempts < 6 * b.max_ops + 20:
        attempts += 1
        if b.coin(0.08):
            b.add_placeholder()
            continue
        funcs[rng.choice(len(funcs), p=weights)](b)
    computed = [e for e in b.entries if e.name is None] or b.entries
    outs = [computed[-1]]
    r = rng.random()
    if len(computed) > 1 and r < 0.45:
        outs += [computed[k] for k in rng.choice(len(computed) - 1,
                                                  min(len(computed) - 1, int(rng.integers(1, 3))),
                                                  replace=False)]
    elif r < 0.5:
        outs.append(b.choice(b.entries))        # an input or an earlier value as an output
    elif r < 0.53:
        outs.append(outs[0])                    # the same array twice
    desc = _describe(b, outs)
    case = Case(seed, b.entries, outs, b.bindings, b.build_errors, desc, b.bindings)
    used = {e.name for e in case.ancestors(outs) if e.name is not None}
    case.bindings = {k: v for k, v in b.bindings.items() if k in used}
    if rng.random() < 0.2:      # the same values as non-contiguous, read-only or scalar inputs
        case.bindings = {k: _odd_layout(v, rng) for k, v in case.bindings.items()}
    return case


def _odd_layout(v, rng):
    """``v``'s values in another memory layout: a strided view, Fortran order,
    read-only, or a NumPy scalar for 0-d."""
    r = rng.random()
    if v.ndim == 0:
        return v[()] if r < 0.5 else v
    if r < 0.4 and v.size > 1:
        return np.repeat(v, 2, axis=-1)[..., ::2]
    if r < 0.7 and v.ndim >= 2:
        return np.asfortranarray(v)
    if r < 0.85:
        w = v.copy()
        w.flags.writeable = False
        return w
    return v


def _describe(b, outs):
    names = [e.name for e in b.entries if e.name is not None]
    dts = sorted({e.dtype.name for e in b.entries if e.name is not None})
    return (f"{b.size_class} {b.A}x{b.B}, {len(b.ops)} ops, {len(outs)} outputs, "
            f"inputs {names} ({', '.join(dts)})")


def random_dag(seed, max_ops=None, sizes=None):
    """(outputs, bindings) of the random case of ``seed`` (see ``make_case``)."""
    case = make_case(seed, max_ops, sizes)
    return case.arrays, dict(case.bindings)
