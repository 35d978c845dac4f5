"""``make_plan``: the plan's passes run in order on a program's DAG (the
package docstring lists them)."""
from __future__ import annotations

from polyarray.ir import nodes as N
from ..thresholds import current_thresholds
from .data import Plan
from .epilogue import fuse_epilogues
from .fuse_rows import fuse_rows
from .group import group
from .materialize import materialize


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
