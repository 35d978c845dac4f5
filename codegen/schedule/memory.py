"""Steps that change where a kernel's data lives while it runs: copies of
an operand into local or private memory before it is read (``Prefetch``),
and outputs stored through a local-memory tile (``StoreThroughLocal``), so
that global memory is read and written in coalesced runs."""
from __future__ import annotations

import re
from dataclasses import dataclass

from .base import Step, _extent, _inames, _need_iname, _tag_of


@dataclass(frozen=True)
class Prefetch(Step):
    """Copy the part of ``array`` that the loops ``sweep`` touch into
    ``local`` (shared) or ``private`` memory before it is used.  ``order``
    "F" stores the copy with its first axis fastest (a k-major tile of a
    row-major operand); ``pad`` adds elements to each row of the fastest
    axis (bank conflicts); ``align`` (bytes) aligns the copy, so that the
    compiler may read it with wide loads."""
    array: str
    sweep: tuple
    into: str = "local"
    pad: int = 0            # extra elements per row of the copy (bank conflicts)
    order: str = "C"
    align: int = 0
    arrays = ("array",)

    def __post_init__(self):
        object.__setattr__(self, "sweep", tuple(self.sweep))

    def apply(self, knl, ctx):
        import loopy as lp
        kern = knl.default_entrypoint
        if self.array not in {a.name for a in kern.args}:
            self.fail(ctx, f"it reads no array {self.array!r}; its arrays are "
                           f"{sorted(a.name for a in kern.args)}")
        if self.into not in ("local", "private"):
            self.fail(ctx, f"into must be 'local' or 'private', got {self.into!r}")
        for s in self.sweep:
            _need_iname(self, knl, ctx, s)
        if not isinstance(self.pad, int) or self.pad < 0:
            self.fail(ctx, f"pad must be a non-negative integer, got {self.pad!r}")
        if self.order not in ("C", "F"):
            self.fail(ctx, f"order must be 'C' or 'F', got {self.order!r}")
        if not isinstance(self.align, int) or self.align < 0 or self.align & (self.align - 1):
            self.fail(ctx, f"align must be a power of two (bytes) or 0, got {self.align!r}")
        space = lp.AddressSpace.LOCAL if self.into == "local" else lp.AddressSpace.PRIVATE
        name = f"{self.array}_fetch"
        knl = lp.add_prefetch(knl, self.array, list(self.sweep), temporary_address_space=space,
                              default_tag="l.auto" if self.into == "local" else "unr",
                              temporary_name=name)
        kern = knl.default_entrypoint
        tv = kern.temporary_variables[name]
        changes = {}
        if self.pad or self.order == "F":
            if len(tv.shape) < 2:
                self.fail(ctx, "padding or reordering needs a copy of two or more dimensions")
            from loopy.kernel.array import FixedStrideArrayDimTag
            axes = list(range(len(tv.shape)))
            fast_to_slow = axes if self.order == "F" else axes[::-1]
            strides, acc, storage = {}, 1, []
            for n, ax in enumerate(fast_to_slow):
                strides[ax] = acc
                extent = tv.shape[ax] + (self.pad if n == 0 else 0)
                storage.append(extent)
                acc *= extent
            changes = dict(storage_shape=tuple(storage[::-1]),
                           dim_tags=tuple(FixedStrideArrayDimTag(strides[ax]) for ax in axes))
        if self.align:
            changes["alignment"] = self.align
        if changes:
            temps = dict(kern.temporary_variables, **{name: tv.copy(**changes)})
            knl = knl.with_kernel(kern.copy(temporary_variables=temps))
        return lp.add_inames_for_unused_hw_axes(knl)


def read_indices(instructions, buf=None):
    """The set of index tuples at which the instructions read ``buf``; or,
    without ``buf``, that set for every array read (one walk: a kernel
    reading 800 buffers was walked 800 times)."""
    from loopy.symbolic import WalkMapper        # knows loopy's TypeCast, Reduction
    found = {}

    class Walk(WalkMapper):
        def map_subscript(self, expr, *args):
            name = getattr(expr.aggregate, "name", None)
            if name is not None and (buf is None or name == buf):
                found.setdefault(name, set()).add(tuple(expr.index_tuple))
            super().map_subscript(expr, *args)
    for insn in instructions:
        Walk()(insn.expression)
    return found if buf is None else found.get(buf, set())


@dataclass(frozen=True)
class StoreThroughLocal(Step):
    """After ``Layout("axes")`` and ``WorkGroup(W, "i0")`` (a work-item per
    row, the other axes sequential): each work-group writes its W rows into
    a local-memory tile, then stores the tile with consecutive work-items on
    consecutive addresses.  Row-per-work-item compute with fully coalesced
    stores (what a transpose needs too)."""

    def apply(self, knl, ctx):
        import islpy as isl
        import loopy as lp
        import pymbolic.primitives as p
        from loopy.kernel.instruction import make_assignment
        kern = knl.default_entrypoint
        names = _inames(knl)
        if {"i0_outer", "i0_inner"} - names or "i0" in names:
            self.fail(ctx, "it needs Layout('axes') and WorkGroup(..., 'i0') first")
        if _tag_of(knl, "i0_inner") != "l.0" or _tag_of(knl, "i0_outer") != "g.0":
            self.fail(ctx, "i0 must be split onto g.0 x l.0 (WorkGroup(..., 'i0'))")
        W = _extent(knl, "i0_inner")
        rest = sorted((i for i in names if re.fullmatch(r"i[1-9]\d*", i)), key=lambda i: int(i[1:]))
        extents = [_extent(knl, i) for i in rest]
        if any(e is None for e in extents) or any(_tag_of(knl, i) not in ("", "unr")
                                                  for i in rest):
            self.fail(ctx, f"the other axes {rest} must be sequential loops of constant extent")
        if "c_outer" in names or "c_inner" in names:
            self.fail(ctx, "the loop names c_outer/c_inner are taken")
        R = 1
        for e in extents:
            R *= e
        lin = 0
        for i, e in zip(rest, extents):
            lin = lin * e + p.Variable(i)
        rows = _extent(knl, "i0_outer") * W
        outs = {a.name: a for a in kern.args if a.is_output}
        c = p.Sum((p.Product((p.Variable("c_outer"), W)), p.Variable("c_inner")))
        insns, temps = [], dict(kern.temporary_variables)
        for insn in kern.instructions:
            target = [n for n in insn.assignee_var_names() if n in outs]
            if not target:
                insns.append(insn)
                continue
            name, = target
            tile = f"{name}_tile"
            temps[tile] = lp.TemporaryVariable(tile, dtype=outs[name].dtype, shape=(W * R,),
                                               address_space=lp.AddressSpace.LOCAL)
            insns.append(insn.copy(assignee=p.Subscript(p.Variable(tile), (
                p.Sum((p.Product((p.Variable("i0_inner"), R)), lin)),))))
            total = int(outs[name].shape[0])
            flat = p.Sum((p.Product((p.Variable("i0_outer"), W * R)), c))
            preds = frozenset() if rows * R == total else frozenset(
                [p.Comparison(flat, "<", total)])
            insns.append(make_assignment(
                (p.Subscript(p.Variable(name), (flat,)),), p.Subscript(p.Variable(tile), (c,)),
                id=f"store_{tile}", within_inames=frozenset({"i0_outer", "c_outer", "c_inner"}),
                depends_on=frozenset({insn.id}), predicates=preds))
        dom = isl.BasicSet(f"{{[c_outer, c_inner]: 0 <= c_outer < {R} and 0 <= c_inner < {W}}}")
        kern = kern.copy(instructions=insns, domains=kern.domains + [dom],
                         temporary_variables=temps)
        return lp.tag_inames(knl.with_kernel(kern),
                             {"c_inner": "l.0", "c_outer": "unr" if R <= 64 else "for"})
