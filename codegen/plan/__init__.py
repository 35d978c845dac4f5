"""The plan: which nodes get buffers and which kernel computes each, decided
on the DAG before any kernel is built.

Before it, on a program's DAG: ``half`` (float16 computed as rounded
float32, stored as its bits; ``dtype_checks`` names nodes for it), and
the two rewrites ``pa.compile`` runs for device targets, ``reroll`` (sums
written as loops) and ``recurrence`` (rows built on rows before).  Then the passes from output nodes to a ``Plan`` (``data``), one
module each, run in order by ``make_plan``:

1. ``materialize``: which nodes get a buffer; which einsum operands are
   read in place as a transposed buffer (decided here, once);
2. ``group``: which kernel computes each materialized node;
3. ``fuse_rows``: row reductions join the elementwise kernel that reads them;
4. ``epilogue``: an elementwise kernel that only transforms a reduction's
   or a matrix product's result is computed in its store (given a device).

See docs/design/fusion.md."""
from __future__ import annotations

from polyarray.ir import nodes as N
from ..thresholds import current_thresholds
from .data import Group, Materialized, Plan, Unit, is_input, materialized_deps
from .epilogue import fuse_epilogues
from .fuse_rows import fuse_rows
from .group import group
from .materialize import inlined_shared_run, inlined_terms, materialize, transposed_buffer


def make_plan(outputs, device=None, fusable=None, thresholds=None) -> Plan:
    """``fusable(node, materialized, transposed)``: whether reduction or
    contraction ``node`` stores an elementwise reader of its result (the
    epilogue pass runs when it is given, or a ``device``: then for tiled
    matmuls alone); ``thresholds``: the fusion limits (default:
    ``current_thresholds()``)."""
    t = current_thresholds() if thresholds is None else thresholds
    order = N.topological_order(outputs)
    mat, transposed = materialize(outputs, order, t)
    groups = fuse_rows(group(order, mat), mat, outputs, t)
    if fusable is None and device is not None:
        from ..policy import stores_through_epilogue
        fusable = lambda e, mat, transposed: stores_through_epilogue(e, device, t)  # noqa: E731
    if fusable is not None:
        groups = fuse_epilogues(groups, mat, outputs, lambda e: fusable(e, mat, transposed),
                                order)
    group_of = {id(u.node): gi for gi, g in enumerate(groups) for u in g.units}
    return Plan(order, mat, groups, list(outputs), transposed=transposed, group_of=group_of)


__all__ = ["Group", "Materialized", "Plan", "Unit", "inlined_shared_run", "inlined_terms",
           "is_input", "make_plan", "materialized_deps", "transposed_buffer"]
