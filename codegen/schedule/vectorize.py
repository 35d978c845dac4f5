"""The ``Vectorize`` step: vector-typed loads and stores (``float4``).

Loopy's own ``vec`` tag turns arithmetic into vector arithmetic, which
OpenCL C has and CUDA C does not (``2.0f * float4`` does not compile).  So
this step vectorizes memory only: each array the loop reads becomes a
vector type and is copied whole into a private vector, the computation runs
unrolled on its components, and each output is assembled in a private vector
and stored whole.  The same source compiles for OpenCL and CUDA.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Step, _extent, _inames, _need_iname, _need_positive, _tag_of

# element types with a CUDA and an OpenCL vector type of 2 and 4 lanes
_LANE_TYPES = {np.dtype(t) for t in (np.float32, np.float64, np.int32, np.uint32,
                                     np.int64, np.uint64)}


def _subscripts(expr):
    """Every ``array[index]`` in a loopy expression."""
    from loopy.symbolic import WalkMapper
    found = []

    class Walk(WalkMapper):
        def post_visit(self, e, *args, **kwargs):
            import pymbolic.primitives as p
            if isinstance(e, p.Subscript):
                found.append(e)

    Walk()(expr)
    return found


@dataclass(frozen=True)
class Vectorize(Step):
    """Load and store ``width`` consecutive elements of loop ``iname`` as
    one vector (``float4``/``double2``...).  Every array the loop touches
    must be indexed by ``iname`` alone on its last axis; the loop's extent
    must be a multiple of ``width``; the element types must have vector
    types of ``width`` lanes of at most 16 bytes.  Apply it before splitting
    the remaining ``{iname}_outer`` loop over work-items."""
    iname: str
    width: int = 4

    def apply(self, knl, ctx):
        import loopy as lp
        _need_iname(self, knl, ctx, self.iname)
        _need_positive(self, ctx, width=self.width)
        w, i = self.width, self.iname
        if w not in (2, 4):
            self.fail(ctx, f"width must be 2 or 4, got {w}")
        if _tag_of(knl, i):
            self.fail(ctx, f"{i!r} is already mapped to {_tag_of(knl, i)}")
        size = _extent(knl, i)
        if size is None or size % w:
            self.fail(ctx, f"{i!r} has extent {size if size else 'unknown'}, "
                           f"not a multiple of {w}")
        kern = knl.default_entrypoint
        args = {a.name: a for a in kern.args}
        reads, writes, outside = set(), set(), {}
        for insn in kern.instructions:
            subs = {"r": _subscripts(insn.expression), "w": _subscripts(insn.assignee)}
            if i not in insn.within_inames:
                outside[insn.id] = {sub.aggregate.name for sub in subs["r"] + subs["w"]}
                continue
            for kind, found in (("r", reads), ("w", writes)):
                for sub in subs[kind]:
                    if sub.aggregate.name in args:      # temporaries stay as they are
                        self._check_access(ctx, sub, i)
                        found.add(sub.aggregate.name)
        if reads & writes:
            self.fail(ctx, f"arrays {sorted(reads & writes)} are both read and written")
        for name in sorted(reads | writes):
            dt = np.dtype(args[name].dtype.numpy_dtype)
            if dt not in _LANE_TYPES or dt.itemsize * w > 16:
                self.fail(ctx, f"array {name!r} has type {dt}, which has no {w}-lane vector "
                               "type of at most 16 bytes")
        for insn_id, names in outside.items():
            if names & (reads | writes):
                self.fail(ctx, f"instruction {insn_id} reads {sorted(names & (reads | writes))} "
                               f"outside loop {i!r}")
        if {f"{i}_outer", f"{i}_inner"} & _inames(knl):
            self.fail(ctx, f"the loop names {i}_outer/{i}_inner are taken")

        knl = lp.split_iname(knl, i, w, inner_tag="unr")
        lane = f"{i}_inner"
        for name in sorted(reads | writes):
            arg = knl.default_entrypoint.arg_dict[name]
            knl = lp.split_array_axis(knl, name, len(arg.shape) - 1, w)
            knl = lp.tag_array_axes(knl, name, ",".join(["c"] * len(arg.shape) + ["vec"]))
        for name in sorted(reads):
            knl = lp.add_prefetch(knl, name, [lane], temporary_address_space=lp.AddressSpace.PRIVATE,
                                  default_tag="vec", temporary_name=f"{name}_vec")
            knl = lp.tag_array_axes(knl, f"{name}_vec", "vec")
        for name in sorted(writes):
            knl = _store_through_vector(knl, name, lane, w)
        return knl

    def _check_access(self, ctx, sub, i):
        import pymbolic.primitives as p
        from pymbolic.mapper.dependency import DependencyMapper
        name = sub.aggregate.name
        idx = sub.index_tuple
        uses = [DependencyMapper(composite_leaves=False)(e) for e in idx]
        if idx[-1] != p.Variable(i) or any(p.Variable(i) in u for u in uses[:-1]):
            self.fail(ctx, f"array {name!r} is indexed {sub.index_tuple}; vectorizing {i!r} "
                           f"needs {i!r} alone as its last index")


def _store_through_vector(knl, name, lane, w):
    """Write ``name``'s lanes into a private vector, then store it whole."""
    import loopy as lp
    import pymbolic.primitives as p
    from loopy.kernel.instruction import make_assignment
    kern = knl.default_entrypoint
    dtype = kern.arg_dict[name].dtype
    vec = f"{name}_vec"
    temps = dict(kern.temporary_variables)
    temps[vec] = lp.TemporaryVariable(vec, dtype=dtype, shape=(w,), dim_tags="vec",
                                      address_space=lp.AddressSpace.PRIVATE)
    insns, stores = [], []
    for insn in kern.instructions:
        if name not in insn.assignee_var_names():
            insns.append(insn)
            continue
        outer = insn.assignee.index_tuple[:-1]
        insns.append(insn.copy(assignee=p.Subscript(p.Variable(vec), (p.Variable(lane),))))
        store_id = f"{insn.id}_store"
        stores.append(store_id)
        insns.append(make_assignment(
            (p.Subscript(p.Variable(name), outer + (p.Variable(lane),)),),
            p.Subscript(p.Variable(vec), (p.Variable(lane),)),
            id=store_id, depends_on=frozenset([insn.id]),
            within_inames=insn.within_inames))
    knl = knl.with_kernel(kern.copy(instructions=insns, temporary_variables=temps))
    store_lane = f"{name}_lane"
    knl = lp.duplicate_inames(knl, lane, within=" or ".join(f"id:{s}" for s in stores),
                              new_inames=[store_lane])
    return lp.tag_inames(knl, {store_lane: "vec"})
