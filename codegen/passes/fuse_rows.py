"""Row fusion: reductions over the last axis of the rows of an elementwise
kernel's output, read only by that kernel (and by each other), join it as a
``rows`` group: softmax, log-softmax and layer norm become one kernel that
reads each row once from memory (``forms/rows.py`` builds it)."""
from __future__ import annotations

from polyarray.codegen.ir import nodes as N
from .. import policy
from .data import materialized_deps


def _row_reduction(node, shape, outputs):
    """A reduction over the last axis of an array of ``shape`` (the rows of
    an elementwise kernel), not itself a program output."""
    return (isinstance(node, N.Reduce) and node.op not in ("argmax", "argmin")
            and node.array.shape == shape and node.axes == (len(shape) - 1,)
            and not any(node is o for o in outputs))


def fuse_rows(groups, mat, outputs):
    """Move row reductions into the elementwise group that reads them.

    Group ``g`` (all outputs of one shape ``S``) absorbs each reduction over
    the last axis of an array of shape ``S`` that it reads (directly or
    through another absorbed reduction) provided that nothing outside ``g``
    and the absorbed reductions reads it.  The result is one ``rows``
    kernel: per row, the reductions, then the elementwise outputs.  Reading
    a reduction at another row than its own is caught at lowering, which
    then falls back to separate kernels."""
    readers, deps = {}, {}
    for g in groups:
        for u in g.units:
            deps[id(u.node)] = materialized_deps(u.node, mat)
            for d in deps[id(u.node)]:
                readers.setdefault(id(d), set()).add(id(u.node))
    absorbed = set()
    for g in groups:
        shape = g.units[0].node.shape if g.units else ()
        if g.kind != "elementwise" or not shape or not 1 < shape[-1] <= policy.ROW_FUSE_MAX \
                or any(u.node.shape != shape for u in g.units):
            continue
        fused, stack = {}, [d for u in g.units for d in deps[id(u.node)]]
        while stack:
            d = stack.pop()
            if id(d) not in fused and id(d) not in absorbed \
                    and _row_reduction(d, shape, outputs):
                fused[id(d)] = d
                stack.extend(deps[id(d)])
        inside = {id(u.node) for u in g.units}
        while True:         # drop those read from outside, until none is
            keep = set(fused) | inside
            bad = [k for k, r in fused.items() if not readers.get(k, set()) <= keep
                   or any(id(d) in inside for d in deps[k])]     # g's own outputs
            if not bad:
                break
            for k in bad:
                del fused[k]
        if not fused:
            continue
        units = [u for h in groups for u in h.units if id(u.node) in fused]
        g.units[:0] = units          # topological order: groups are in order
        g.kind = "rows"
        absorbed |= set(fused)
    return [g for g in groups if not (g.kind == "reduce" and id(g.units[0].node) in absorbed)]
