"""Row fusion: reductions over the last axis of the rows of an elementwise
kernel's output, read only by that kernel (and by each other), join it as a
``rows`` group: softmax, log-softmax and layer norm become one kernel that
reads each row once from memory (``forms/rows.py`` builds it)."""
from __future__ import annotations

import pymbolic.primitives as p

from polyarray.ir import nodes as N
from ..lowering.builder import KernelBuilder
from ..lowering.index import decompose, linearize
from .data import Plan, materialized_deps


def _row_reduction(node, shape, outputs):
    """A reduction over the last axis of an array of ``shape`` (the rows of
    an elementwise kernel), not itself a program output."""
    return (isinstance(node, N.Reduce) and node.op not in ("argmax", "argmin")
            and node.array.shape == shape and node.axes == (len(shape) - 1,)
            and not any(node is o for o in outputs))


def fuse_rows(groups, mat, outputs, t):
    """Move row reductions into the elementwise group that reads them.

    Group ``g`` (all outputs of one shape ``S``) absorbs each reduction over
    the last axis of an array of shape ``S`` that it reads (directly or
    through another absorbed reduction) provided that nothing outside ``g``
    and the absorbed reductions reads it.  The result is one ``rows``
    kernel: per row, the reductions, then the elementwise outputs.  If the
    kernel would read an absorbed reduction at another row than its own
    (``_RowReads``), the group is ``apart``: the reductions and the
    outputs are separate kernels.  Rows longer than ``t.ROW_FUSE_MAX``
    (the thresholds) stay apart."""
    readers, deps = {}, {}
    for g in groups:
        for u in g.units:
            deps[id(u.node)] = materialized_deps(u.node, mat)
            for d in deps[id(u.node)]:
                readers.setdefault(id(d), set()).add(id(u.node))
    absorbed = set()
    # what a kernel reads from memory: the materialized nodes and the inputs
    buffers = dict.fromkeys(mat | {id(d) for ds in deps.values() for d in ds}, "b")
    scratch = Plan([], mat, [], outputs)        # collects the probes' checks
    for g in groups:
        shape = g.units[0].node.shape if g.units else ()
        if g.kind != "elementwise" or not shape or not 1 < shape[-1] <= t.ROW_FUSE_MAX \
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
        g.apart = _RowReads(scratch, buffers, [u.node for u in units]).another_row(
            [u.node for u in g.units], shape)
        g.units[:0] = units          # topological order: groups are in order
        g.kind = "rows"
        absorbed |= set(fused)
    return [g for g in groups if not (g.kind == "reduce" and id(g.units[0].node) in absorbed)]


class _RowReads(KernelBuilder):
    """Lowers the reads of the ``rows`` kernel that would compute ``reds``
    (and then the outputs) as the rows builder would (``forms/rows._build``),
    noting any read of one of ``reds`` at another row than its own
    (``y / s[::-1]``): the kernel computes each once per row, in a temporary,
    so it cannot serve that read.  ``buffers``: every materialized or input
    node; ``plan``: a scratch plan (its checks are thrown away)."""

    def __init__(self, plan, buffers, reds):
        super().__init__(plan, buffers, ["row"])
        self.reds = reds
        self.kernel_local = frozenset(id(r) for r in reds)
        self.read_elsewhere = False

    def another_row(self, outs, shape):
        """Whether the kernel of ``reds`` and the outputs ``outs`` (of
        ``shape``) would read a reduction at another row than its own."""
        rows = shape[:-1]
        kept = decompose(p.Variable("row"), rows)
        if rows:
            self.flat[rows] = (p.Variable("row"), kept)
        for k, r in enumerate(self.reds):         # per row: the reductions in order
            self.analyze([r])
            self.value(r.array, kept + (p.Variable(f"j{k}"),), self.inames, reducing=True)
            self.local[id(r)] = (p.Variable(f"r{k}"), kept)
            if self.read_elsewhere:
                return True
        at = kept + (p.Variable("c"),)          # then the outputs
        self.analyze(outs)
        self.flat[shape] = (linearize(at, shape), at)
        self.prewarm({s: v[1] for s, v in self.flat.items()}, ["row", "c"])
        for n in outs:
            self.define(n, at, ["row", "c"])
        return self.read_elsewhere

    def value(self, node, idx, within, reducing=False):
        if id(node) in self.kernel_local and not (
                id(node) in self.local and tuple(self.local[id(node)][1]) == tuple(idx)):
            self.read_elsewhere = True
            return p.Variable("elsewhere"), node.dtype
        return super().value(node, idx, within, reducing)
