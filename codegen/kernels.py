"""Kernel construction: one loopy kernel per plan group, with default schedules.

Elementwise groups run over a flat 1-D domain, split into work-groups
(``g.0``/``l.0``), so stores are coalesced whatever the rank.

Reductions (``Reduce`` and ``Einsum``) flatten the kept axes to ``i`` (M
outputs) and the reduced axes to ``j`` (length R), then pick a strategy:

* ``thread``: one work-item per output, sequential loop over ``j``; used
  when outputs are many and the reduced axis is not the contiguous one (the
  reads are then coalesced across work-items).
* ``group``: one work-group per output, a tree reduction in local memory
  over ``j`` (``split_reduction_outward``); used when the reduced axis is
  contiguous and long.
* ``two-stage``: few outputs and a long reduction: T work-items each reduce
  a grid-strided slice into partials (coalesced), then a ``group`` kernel
  reduces the partials.
"""
from __future__ import annotations

from dataclasses import dataclass

import math

import numpy as np
import pymbolic.primitives as p

import loopy as lp
from loopy.library.reduction import (MaxReductionOperation, MinReductionOperation,
                                    ProductReductionOperation, SumReductionOperation)
from loopy.symbolic import Reduction, ResolvedFunction, TypeCast

from polyarray.codegen.ir import nodes as N
from .cfuncs import (BOOL, HELPERS_PREAMBLE, U8, PaFunction, as_bool, helper_name,
                     lower_call, storage_dtype)
from .checks import ERROR_BUFFER, callable_for
from .lower import KernelBuilder, ceil_div, decompose, linearize, pow2_floor
from .plan import _materialized_deps
from .schedule import (ElementsPerItem, GroupReduce, KernelContext, Layout, Prefetch,
                       RegisterTile, ScheduleError, Split, Tag, Tile, WorkGroup, apply_steps,
                       build_options, read_indices, rename_arrays, user_names)

WG = 256                # default work-group size
ELEMENTWISE_ILP = 4     # elements per work-item in large GPU elementwise kernels
MANY_OUTPUTS = 1024     # enough outputs to fill a device one per work-item
FILL_THREADS = 1 << 16  # work-items needed to keep a large GPU busy
LONG_REDUCTION = 4096   # worth two stages when outputs are few
# First stage of a two-stage reduction on a GPU: at most TWO_STAGE_GROUPS work-groups,
# each reducing a contiguous chunk in at least TWO_STAGE_STEPS coalesced steps.  On an
# H100, a full sum of 2^26 float32 took 91.8 us in its first stage with 512 grid-strided
# work-groups (48% of warps active) and 89.4 us as 8192 contiguous chunks (ncu).
TWO_STAGE_GROUPS = 8192
TWO_STAGE_STEPS = 16
TRANSPOSE_TILE = 32     # tile edge of transposed elementwise kernels (GPU)
TRANSPOSE_ROWS = 4      # rows of that tile per work-item (work-groups of 32 x 8)
I32 = np.dtype(np.int32)
I64 = np.dtype(np.int64)

# -- reduction operations with NumPy semantics ------------------------------

class _HelperCombine:
    """max/min reduction that combines with our NaN-propagating helper, with
    -inf/+inf neutral elements that every target can spell."""
    helper = None

    def neutral_element(self, *dtypes, callables_table, target):
        from loopy.translation_unit import add_callable_to_table
        dtype, = dtypes
        name = helper_name("neginf" if self.helper == "maximum" else "posinf",
                           dtype.numpy_dtype)
        clbl, callables_table = PaFunction(name).with_types({}, callables_table)
        fid, callables_table = add_callable_to_table(callables_table, name, clbl)
        return ResolvedFunction(fid)(), callables_table

    def __call__(self, dtypes, operand1, operand2, callables_table, target):
        from loopy.translation_unit import add_callable_to_table
        dtype, = dtypes
        name = helper_name(self.helper, dtype.numpy_dtype)
        clbl, callables_table = PaFunction(name).with_types({0: dtype, 1: dtype},
                                                            callables_table)
        fid, callables_table = add_callable_to_table(callables_table, name, clbl)
        return ResolvedFunction(fid)(operand1, operand2), callables_table


class PaMax(_HelperCombine, MaxReductionOperation):
    helper = "maximum"


class PaMin(_HelperCombine, MinReductionOperation):
    helper = "minimum"


class _IntCombine(_HelperCombine):
    """Integer sum/product combining through the wrapping helper
    (``pa_add_int32``...): C's signed overflow is undefined, NumPy wraps."""

    def neutral_element(self, *dtypes, callables_table, target):
        dtype, = dtypes
        return dtype.numpy_dtype.type(0 if self.helper == "add" else 1), callables_table


class PaIntSum(_IntCombine, SumReductionOperation):
    helper = "add"


class PaIntProd(_IntCombine, ProductReductionOperation):
    helper = "multiply"


def _widen(expr, dt):
    """Compute small ints and bools in int32 for max/min reductions."""
    if dt == BOOL or (dt.kind in "iu" and dt.itemsize < 4):
        return TypeCast(I32, expr), I32
    return expr, dt


def reduction_expr(op, inames, value):
    """``(loopy reduction expression, accumulator dtype)`` for ``op``."""
    expr, dt = value
    if op in ("sum", "prod"):
        if dt == BOOL:          # bool einsum: OR of ANDs
            return Reduction(PaMax(), inames, TypeCast(I32, as_bool(expr, dt))), I32
        if dt.kind in "iu":
            return Reduction(PaIntSum() if op == "sum" else PaIntProd(), inames, expr), dt
        return Reduction("sum" if op == "sum" else "product", inames, expr), dt
    if op in ("max", "min"):
        e, d = _widen(expr, dt)
        return Reduction(PaMax() if op == "max" else PaMin(), inames, e), d
    if op in ("any", "all"):
        e = TypeCast(I32, as_bool(expr, dt))
        return Reduction(PaMax() if op == "any" else PaMin(), inames, e), I32
    raise NotImplementedError(op)


# -- kernel assembly -------------------------------------------------------

@dataclass
class KernelPlan:
    name: str
    tu: object
    written: tuple      # buffer names this kernel writes
    strategy: str = ""
    steps: tuple = ()   # the schedule in force


class Assembler:
    """Builds all kernels of a plan; collects extra (partial) buffers."""

    def __init__(self, plan, buffers, target, index_dtype, cpu=False, schedules=None,
                 arrays=None):
        self.arrays = arrays or {}        # placeholder name -> device-code name
        self.cpu = cpu                    # CPU devices want contiguous work-items
        self.schedules = schedules or {}  # kernel name or pattern -> steps (user's)
        self.matched = set()
        self.plan = plan
        self.buffers = buffers            # id(node) -> name
        self.target = target
        self.index_dtype = index_dtype
        self.buffer_specs = {}            # name -> (size, storage dtype)
        self.kernels = []

    def add_buffer(self, name, size, dtype):
        self.buffer_specs[name] = (int(size), storage_dtype(dtype))

    def user_steps(self, name):
        """The user's steps for kernel ``name`` (an exact name beats a
        pattern; among patterns the first in sorted order wins), or None."""
        import fnmatch
        hits = sorted(pat for pat in self.schedules if fnmatch.fnmatchcase(name, pat))
        if not hits:
            return None
        self.matched.update(hits)
        return tuple(rename_arrays(s, self._to_device_names())
                     for s in self.schedules[name if name in hits else hits[0]])

    def _to_device_names(self):
        """Placeholder name -> device name, for the placeholders whose name
        no generated buffer has (``data0`` means the generated buffer, and
        the placeholder ``data0`` is ``p5_data0``): so the mapping is
        reversible and ``prog.schedule`` replays exactly."""
        return {u: c for u, c in self.arrays.items() if u not in self.buffer_specs}

    def finish(self, name, kb, domains, written, steps, strategy="elementwise",
               shapes=None, construct=None, scheduled=None):
        """Make the loopy kernel and apply its schedule: the user's steps for
        this kernel if any, else ``steps`` (the default).  ``construct`` tags
        loops that the construction itself fixes; ``scheduled`` adjusts the
        kernel to the schedule applied.  Buffers are flat unless
        ``shapes`` gives a multi-dimensional view (needed by ``add_prefetch``)."""
        used = set()
        from loopy.symbolic import get_dependencies
        for insn in kb.instructions:
            used |= set(get_dependencies(insn.expression)) | set(insn.assignee_var_names())
        shapes = shapes or {}
        args = [lp.GlobalArg(b, self.buffer_specs[b][1],
                             shape=shapes.get(b, (max(self.buffer_specs[b][0], 1),)),
                             is_input=b not in written, is_output=b in written)
                for b in sorted(used & set(self.buffer_specs))]
        if ERROR_BUFFER in used:        # read as pa_err[0] by checked helpers, which write it
            args.append(lp.GlobalArg(ERROR_BUFFER, np.int64, shape=(1,), is_input=False,
                                     is_output=True))
        knl = lp.make_kernel(domains, kb.instructions, args + list(kb.temporaries.values()),
                             name=name, target=self.target, lang_version=(2018, 2),
                             index_dtype=self.index_dtype,
                             preambles=[HELPERS_PREAMBLE])
        for f in sorted(kb.functions):
            knl = lp.register_callable(knl, f, callable_for(f))
        knl = lp.set_options(knl, enforce_array_accesses_within_bounds="no_check")
        if construct is not None:
            knl = construct(knl)
        user = self.user_steps(name)
        if user is not None and strategy != "elementwise":
            build_options(user, strategy, name)         # refuses build steps here
        steps = tuple(user) if user is not None else tuple(steps)
        ctx = KernelContext(name, strategy)
        users = {c: u for u, c in self._to_device_names().items()}
        try:
            knl = apply_steps(knl, steps, ctx)
        except ScheduleError as e:          # name arrays as the user did
            raise ScheduleError(user_names(str(e), users)) from e.__cause__
        if scheduled is not None:
            knl = scheduled(knl)
        # a work-group reduction's result is stored by every work-item (same value)
        # ('ilp' loops, as in register tiles, need loopy's older scheduler)
        kern = knl.default_entrypoint
        knl = knl.with_kernel(kern.copy(silenced_warnings=frozenset(
            kern.silenced_warnings) | {"write_race(*)", "v1_scheduler_fallback"}))
        if user is not None:        # refuse now, naming the kernel, what codegen would refuse
            try:
                lp.generate_code_v2(knl)
            except Exception as e:      # noqa: BLE001
                raise ScheduleError(user_names(f"the schedule {list(steps)} of kernel {name} does not "
                                    f"generate code: {type(e).__name__}: "
                                    f"{str(e).splitlines()[0] if str(e) else ''}", users)) from e
        self.kernels.append(KernelPlan(name, knl, tuple(sorted(written)), strategy,
                                       tuple(rename_arrays(s, users) for s in steps)))

    # -- elementwise ------------------------------------------------------
    def elementwise(self, name, group):
        """One kernel for a group of same-sized outputs, over a flat index.

        Large GPU kernels take ``ELEMENTWISE_ILP`` coalesced elements per
        work-item, with every direct input read fetched into registers before
        any store (``_elementwise_ilp``): one element per work-item leaves too
        few loads in flight to reach copy bandwidth (0.76 vs 0.96 of copy on
        an H100, ``benchmarks/probe_bandwidth.py``).  A user schedule may pick
        ``Layout("axes")`` (one loop per output axis) or ``ElementsPerItem``."""
        wg = min(WG, group.size)
        user = self.user_steps(name)
        if user is not None:
            layout, ilp, uwg = build_options(user, "elementwise", name)
            wg = uwg or wg
        else:
            layout, ilp = "flat", ELEMENTWISE_ILP
            if self.cpu or ilp <= 1 or group.size < wg * ilp * 64:
                ilp = None
        if user is None and not self.cpu and self._transposed_default(name, group):
            return
        if ilp is not None:
            return self._elementwise_ilp(name, group, wg, ilp)
        if layout == "axes":
            kb, domain, written = self._elementwise_axes(name, group)
            self.finish(name, kb, [domain], written, (), shapes=kb.read_shapes)
            return
        kb = KernelBuilder(self.plan, self.buffers, ["i"])
        written = self._elementwise_body(kb, group, p.Variable("i"), ["i"])
        self.finish(name, kb, [f"{{[i]: 0 <= i < {group.size}}}"], written, (WorkGroup(wg),))

    def _elementwise_axes(self, name, group):
        """The kernel over one loop per output axis (``i0``, ``i1``, ...),
        with multi-dimensional reads; returns (builder, domain, written)."""
        shape = group.units[0].node.shape
        if not shape:
            raise ScheduleError(f"Layout('axes') does not apply to kernel {name}: its "
                                "output is 0-d")
        names = [f"i{d}" for d in range(len(shape))]
        kb = KernelBuilder(self.plan, self.buffers, names)
        kb.multidim = True
        axes = tuple(p.Variable(v) for v in names)
        written = self._elementwise_body(kb, group, linearize(axes, shape), names,
                                         axes=(shape, axes))
        domain = "{[" + ", ".join(names) + "]: " + " and ".join(
            f"0 <= {v} < {n}" for v, n in zip(names, shape)) + "}"
        return kb, domain, written

    def _transposed_default(self, name, group):
        """GPU default for a 2-D output that reads a 2-D buffer transposed
        (``x[i1, i0]``): 32 x 32 tiles on 32 x 8 work-items (4 rows each),
        the buffer's tile fetched into padded local memory by rows, so both
        the reads and the stores are coalesced.  Returns False (nothing
        built) when there is no such read."""
        shape = group.units[0].node.shape
        if len(shape) != 2 or min(shape) < TRANSPOSE_TILE:
            return False
        kb, domain, written = self._elementwise_axes(name, group)
        i0, i1 = p.Variable("i0"), p.Variable("i1")
        swapped = sorted(b for b in kb.read_shapes
                         if read_indices(kb.instructions, b) == {(i1, i0)})
        if not swapped:
            return False
        T, R = TRANSPOSE_TILE, TRANSPOSE_ROWS
        steps = (Layout("axes"), Split("i0", T, outer_tag="g.1"),
                 Split("i0_inner", T // R, outer_tag="unr", inner_tag="l.1"),
                 Split("i1", T, outer_tag="g.0", inner_tag="l.0")) + tuple(
            Prefetch(b, ("i0_inner_outer", "i0_inner_inner", "i1_inner"), pad=1)
            for b in swapped)
        self.finish(name, kb, [domain], written, steps, shapes=kb.read_shapes)
        return True

    def _elementwise_body(self, kb, group, i, within, store_index=None, predicates=(),
                          axes=None):
        """Instructions writing every unit of ``group`` at flat index ``i``
        (``axes``: (shape, multi-index) of the same point); returns the
        buffers written."""
        kb.analyze([u.node for u in group.units])
        later_deps = set()
        for u in group.units[1:]:
            later_deps |= {id(d) for d in _materialized_deps(u.node, self.plan.materialized)}
        for u in group.units:
            kb.flat[u.node.shape] = (i, decompose(i, u.node.shape))
        if axes is not None:
            kb.flat[axes[0]] = (i, axes[1])
        kb.prewarm({shape: v[1] for shape, v in kb.flat.items()}, within)
        written = set()
        for u in group.units:
            n = u.node
            expr, dt = kb.define(n, kb.flat[n.shape][1], within)
            if id(n) in later_deps:
                expr = kb.temp(expr, dt, within)
                kb.local[id(n)] = (expr, kb.flat[n.shape][1])
            buf = self.buffers[id(n)]
            kb.assign(p.Subscript(p.Variable(buf), (store_index if store_index is not None
                                                    else i,)),
                      expr, within, predicates=frozenset(predicates))
            written.add(buf)
        return written

    def _elementwise_ilp(self, name, group, wg, ilp):
        """Work-item ``t`` of group ``g`` handles flat indices
        ``g*wg*ilp + u*wg + t`` for ``u < ilp`` (coalesced for each ``u``).
        Inputs read at the kernel's own index are loaded for all ``u`` first
        (loop ``uf``); a ragged last group clamps its reads to the last element
        and predicates its stores."""
        size = group.size
        G = ceil_div(size, wg * ilp)
        g, u, t, uf = (p.Variable(v) for v in ("g", "u", "t", "uf"))
        raw = p.Sum((p.Product((wg * ilp, g)), p.Product((wg, u)), t))
        ragged = size % (wg * ilp) != 0
        i = p.Min((raw, size - 1)) if ragged else raw
        kb = KernelBuilder(self.plan, self.buffers, ["g", "u", "t"])
        own = {self.buffers[id(x.node)] for x in group.units}
        fetched = {}

        def fetch(buf):
            if buf in own:
                return None
            if buf not in fetched:
                tmp = f"{buf}_r"
                kb.temporaries[tmp] = lp.TemporaryVariable(
                    tmp, dtype=self.buffer_specs[buf][1], shape=(ilp,),
                    address_space=lp.AddressSpace.PRIVATE)
                at = p.Sum((p.Product((wg * ilp, g)), p.Product((wg, uf)), t))
                if ragged:
                    at = p.Min((at, size - 1))
                kb.assign(p.Subscript(p.Variable(tmp), (uf,)),
                          p.Subscript(p.Variable(buf), (at,)), ["g", "uf", "t"])
                kb._tmp_writer[tmp] = kb.instructions[-1].id
                fetched[buf] = p.Subscript(p.Variable(tmp), (u,))
            return fetched[buf]
        kb.fetch_direct = fetch
        preds = [p.Comparison(raw, "<", size)] if ragged else []
        written = self._elementwise_body(kb, group, i, ["g", "u", "t"], raw, preds)

        tags = {"g": "g.0", "t": "l.0", "u": "unr"}
        loops = ["g", "u", "t"]
        if fetched:
            tags["uf"] = "unr"
            loops.append("uf")
        domain = "{[" + ", ".join(loops) + f"]: 0 <= g < {G} and 0 <= u < {ilp} and " \
            f"0 <= t < {wg}" + (f" and 0 <= uf < {ilp}}}" if fetched else "}")
        self.finish(name, kb, [domain], written, (ElementsPerItem(ilp, wg),),
                    construct=lambda knl: lp.tag_inames(knl, tags))

    def rows(self, name, group):
        """A ``rows`` group: row reductions and their elementwise readers."""
        from .rows import row_kernel
        row_kernel(self, name, group)

    # -- reductions ---------------------------------------------------------
    def reduction(self, name, node):
        """A Reduce or Einsum node -> one to four kernels.

        argmax/argmin are two standard reductions: the extremum, then the
        first flat index whose value equals it (NaN-aware), so they get the
        same parallel strategies as every other reduction.
        """
        spec = _reduction_spec(node)
        spec.update(out=self.buffers[id(node)], out_dtype=node.dtype)
        if spec["M"] == 0:
            return
        if _tileable_matmul(node, self.cpu):
            return self._tiled_matmul(name, node)
        if spec["op"] not in ("argmax", "argmin"):
            return self._reduce(name, spec)
        ext = spec["out"] + "_ext"
        vdt = node.array.dtype
        self.add_buffer(ext, spec["M"], vdt)
        self._reduce(name + "_ext", dict(spec, op=spec["op"][3:], out=ext, out_dtype=vdt))
        value_of, R = spec["body"], spec["R"]

        def first_index(kb, kept, red, jflat):
            v, dt = value_of(kb, kept, red, jflat)
            mv = p.Subscript(p.Variable(ext), (linearize(kept, spec["kept_shape"]),))
            hit = p.Comparison(v, "==", mv)
            if dt.kind == "f":
                hit = p.LogicalOr((hit, p.LogicalAnd((p.Comparison(mv, "!=", mv),
                                                      p.Comparison(v, "!=", v)))))
            return p.If(hit, TypeCast(I64, jflat), I64.type(R)), I64
        self._reduce(name, dict(spec, op="min", body=first_index, out_dtype=I64))

    def _tiled_matmul(self, name, node):
        """``A @ B`` over loops i, j, k; an operand that transposes a buffer
        (``x.T``) is read in place as ``x[k, i]`` (``plan.transposed_buffer``)."""
        from .plan import transposed_buffer
        (M, K), (_, Nn) = node.operands[0].shape, node.operands[1].shape
        i, j, k = p.Variable("i"), p.Variable("j"), p.Variable("k")
        reads, shapes = [], {}
        for o, idx in zip(node.operands, ((i, k), (k, j))):
            src = transposed_buffer(o, self.plan.materialized) if id(o) not in self.buffers \
                else None
            buf = self.buffers[id(src if src is not None else o)]
            reads.append(p.Subscript(p.Variable(buf), idx[::-1] if src is not None else idx))
            shapes[buf] = src.shape if src is not None else o.shape
        A, B = (r.aggregate.name for r in reads)
        out = self.buffers[id(node)]
        kb = KernelBuilder(self.plan, self.buffers, ["i", "j"])
        kb.assign(p.Subscript(p.Variable(out), (i, j)),
                  reduction_expr("sum", ("k",), (_product(kb, reads, node.dtype), node.dtype))[0],
                  ["i", "j"])
        if A == B:          # a @ a, x.T @ x: one buffer, the general reduction
            return self._reduce(name, dict(_reduction_spec(node), out=out,
                                           out_dtype=node.dtype))
        domain = f"{{[i, j, k]: 0 <= i < {M} and 0 <= j < {Nn} and 0 <= k < {K}}}"
        if K % TILE == 0 and any(M % bt == 0 and Nn % bt == 0 for bt in REG_TILES):
            steps = register_tiled_matmul(A, B, M, Nn)
        else:
            steps = (Tile("i", "j", TILE, TILE), Split("k", TILE),
                     Prefetch(A, ("i_inner", "k_inner")), Prefetch(B, ("k_inner", "j_inner")))
        self.finish(name, kb, [domain], {out}, steps, "tiled matmul",
                    shapes=dict(shapes, **{out: (M, Nn)}))

    def _reduce(self, name, spec):
        M, R = spec["M"], spec["R"]
        if R == 0:      # empty reduction: the neutral element (NumPy's identity)
            return self._neutral(name, spec)
        if self.cpu:
            # each work-item walks contiguous memory; work-groups spread on cores
            if spec["inner"] and M < 64 and R >= LONG_REDUCTION:
                return self._two_stage(name, spec)
            if not spec["inner"] and R >= 256:
                return self._split_columns(name, spec)
            return self._single(name, spec, "thread")
        if M < MANY_OUTPUTS and R >= LONG_REDUCTION:
            return self._two_stage(name, spec)
        if not spec["inner"] and M < FILL_THREADS and R >= 256:
            return self._split_columns(name, spec)
        strategy = "group" if (spec["inner"] and R >= 64) or M < 64 else "thread"
        self._single(name, spec, strategy)

    def _neutral(self, name, spec):
        value = {"sum": 0, "prod": 1, "any": 0, "all": 1}[spec["op"]]
        kb = KernelBuilder(self.plan, self.buffers, ["i"])
        i = p.Variable("i")
        kb.assign(p.Subscript(p.Variable(spec["out"]), (i,)),
                  storage_dtype(spec["out_dtype"]).type(value), ["i"])
        M = spec["M"]
        lw = min(WG, M)
        self.finish(name, kb, [f"{{[i]: 0 <= i < {M}}}"], {spec["out"]}, (WorkGroup(lw),),
                    "neutral")

    @staticmethod
    def _body(kb, spec, i_expr, j_expr):
        """Value of the reduction body at output ``i_expr``, flat index ``j_expr``."""
        kept = decompose(i_expr, spec["kept_shape"])
        red = decompose(j_expr, spec["red_shape"])
        return spec["body"](kb, kept, red, j_expr)

    @staticmethod
    def _write(kb, spec, lhs_index, red_expr, acc_dt, within):
        out_dt = np.dtype(spec["out_dtype"])
        res = red_expr
        if out_dt == BOOL:
            res = TypeCast(U8, red_expr)
        elif acc_dt != out_dt:
            res = TypeCast(storage_dtype(out_dt), red_expr)
        kb.assign(p.Subscript(p.Variable(spec["out"]), (lhs_index,)), res, within)

    def _single(self, name, spec, strategy):
        kb = KernelBuilder(self.plan, self.buffers, ["i"])
        kb.analyze([spec["node"]])
        i, j = p.Variable("i"), p.Variable("j")
        red, acc_dt = reduction_expr(spec["op"], ("j",), self._body(kb, spec, i, j))
        self._write(kb, spec, i, red, acc_dt, ["i"])
        M, R = spec["M"], spec["R"]
        domain = f"{{[i, j]: 0 <= i < {M} and 0 <= j < {R}}}"

        if strategy == "group" and R > 1:
            steps = (GroupReduce("j", min(WG, pow2_floor(R))),)
        else:
            steps = (WorkGroup(min(WG, M)),)
            strategy = "thread"
        self.finish(name, kb, [domain], {spec["out"]}, steps, strategy)

    def _two_stage(self, name, spec):
        """Few outputs, long reductions.  GPU: G work-groups per output, each
        reduces a contiguous chunk (coalesced steps; a sequential loop per
        work-item, then a local-memory tree) to one partial; a second kernel
        reduces the G partials.  One partial per work-group keeps the second
        stage tiny (one partial per work-item made it 17 us of 110 on an
        H100).  CPU: a contiguous chunk per work-item."""
        M, R, op = spec["M"], spec["R"], spec["op"]
        kb = KernelBuilder(self.plan, self.buffers, ["m", "g"])
        kb.analyze([spec["node"]])
        m, g, t, k = (p.Variable(v) for v in ("m", "g", "t", "k"))
        part = spec["out"] + "_part"
        if self.cpu:
            T = WG * max(1, min(4, R // (WG * 16)))
            K = ceil_div(R, T)
            T = ceil_div(R, K)          # every work-item owns at least one element
            G = ceil_div(T, WG)
            jflat = p.Sum((p.Product((K, p.Sum((p.Product((WG, g)), t)))), k))
            bound = f"{K} * ({WG} * g + t) + k < {R}"
            red, acc_dt = reduction_expr(op, ("k",), self._body(kb, spec, m, jflat))
            lin = p.Sum((p.Product((T, m)), p.Product((WG, g)), t))
            n_part, inames = T, ["m", "g", "t"]
            self.add_buffer(part, M * T, acc_dt)
        else:
            # work-group g reduces the contiguous chunk [g*K*WG, (g+1)*K*WG), each
            # of its K steps one coalesced WG-wide read
            K = max(TWO_STAGE_STEPS, ceil_div(R, WG * TWO_STAGE_GROUPS))
            G = ceil_div(R, WG * K)
            jflat = p.Sum((p.Product((WG, p.Sum((p.Product((K, g)), k)))), t))
            bound = f"{WG} * ({K} * g + k) + t < {R}"
            inner, acc_dt = reduction_expr(op, ("k",), self._body(kb, spec, m, jflat))
            red = Reduction(inner.operation, ("t",), inner)
            lin = p.Sum((p.Product((G, m)), g))
            n_part, inames = G, ["m", "g"]
            self.add_buffer(part, M * G, acc_dt)
        kb.assign(p.Subscript(p.Variable(part), (lin,)), red, inames)
        domain = (f"{{[m, g, t, k]: 0 <= m < {M} and 0 <= g < {G} and 0 <= t < {WG} "
                  f"and 0 <= k < {K} and {bound}}}")

        self.finish(name + "_s1", kb, [domain], {part},
                    (Tag("g", "g.0"), Tag("t", "l.0"), Tag("m", "g.1")), "two-stage 1")
        self._combine(name + "_s2", spec, part, red.operation, acc_dt, n_part,
                      lambda i, j: p.Sum((p.Product((n_part, i)), j)), "group")

    def _split_columns(self, name, spec):
        """Few outputs along the contiguous axes, long outer reduction: C
        chunks of the reduced range per output, work-items across outputs
        (coalesced), then a second kernel adds the C partials per output."""
        M, R, op = spec["M"], spec["R"], spec["op"]
        if self.cpu:    # short column chunks stay in cache across work-items
            C = max(2, ceil_div(R, 64))
        else:           # enough chunks to fill the device
            C = max(2, min(ceil_div(R, 32), FILL_THREADS * 2 // M))
        K = ceil_div(R, C)
        kb = KernelBuilder(self.plan, self.buffers, ["c", "i"])
        kb.analyze([spec["node"]])
        c, i, k = p.Variable("c"), p.Variable("i"), p.Variable("k")
        red, acc_dt = reduction_expr(op, ("k",),
                                     self._body(kb, spec, i, p.Sum((p.Product((K, c)), k))))
        part = spec["out"] + "_part"
        self.add_buffer(part, C * M, acc_dt)
        kb.assign(p.Subscript(p.Variable(part), (p.Sum((p.Product((M, c)), i)),)), red,
                  ["c", "i"])
        domain = (f"{{[c, i, k]: 0 <= c < {C} and 0 <= i < {M} and 0 <= k < {K} "
                  f"and {K} * c + k < {R}}}")
        lw = min(WG, M)

        self.finish(name + "_c1", kb, [domain], {part}, (WorkGroup(lw), Tag("c", "g.1")),
                    "split-columns 1")
        self._combine(name + "_c2", spec, part, red.operation, acc_dt, C,
                      lambda i, j: p.Sum((p.Product((M, j)), i)), "thread")

    def _combine(self, name, spec, part, operation, acc_dt, n, index, strategy):
        """Reduce ``n`` partials per output with the first stage's
        ``operation``; ``index(i, j)`` locates one."""
        M = spec["M"]
        kb = KernelBuilder(self.plan, self.buffers, ["i"])
        i, j = p.Variable("i"), p.Variable("j")
        red = Reduction(operation, ("j",), p.Subscript(p.Variable(part), (index(i, j),)))
        self._write(kb, spec, i, red, acc_dt, ["i"])
        steps = (GroupReduce("j", WG),) if strategy == "group" else (WorkGroup(min(WG, M)),)
        self.finish(name, kb, [f"{{[i, j]: 0 <= i < {M} and 0 <= j < {n}}}"],
                    {spec["out"]}, steps, f"combine ({strategy})")


TILE = 16
REG_TILES = (128, 64)   # work-group tiles of register-tiled matmuls (16 x 16 work-items)
BIG_TILE_OUTPUTS = 2048 * 2048      # enough 128 x 128 tiles (256) to fill an H100's 132 SMs


def register_tiled_matmul(A, B, M, Nn):
    """The default schedule of a register-tiled ``A @ B`` (M x Nn outputs):
    8 x 8 outputs per work-item in groups of 4 (16-byte shared loads) on
    128 x 128 tiles when there are enough of them, else 4 x 4 on 64 x 64.
    At 4096^3 on an H100 these reach 0.87 and 0.60 of cuBLAS; the strided
    register tiles of the first version reached 0.66 and 0.56
    (``python -m benchmarks.matmul_sweep --vector``)."""
    if M % 128 == 0 and Nn % 128 == 0 and M * Nn >= BIG_TILE_OUTPUTS:
        return (RegisterTile(A, B, 128, TILE, TILE, vector=4),)
    return (RegisterTile(A, B, 64, TILE, TILE, vector=4),)


def _product(kb, factors, dtype):
    """``factors[0] * factors[1] * ...``; integers through the wrapping
    helper (``cfuncs.wraps_in_helper``: NumPy wraps, C's overflow is UB)."""
    if np.dtype(dtype).kind not in "iu":
        return p.Product(tuple(factors))
    prod = factors[0]
    for f in factors[1:]:
        prod = lower_call("multiply", [(prod, dtype), (f, dtype)], kb.functions)[0]
    return prod


def _tileable_matmul(node, cpu):
    """A 2-D ``ik,kj->ij`` contraction whose sizes are multiples of TILE."""
    if cpu or not isinstance(node, N.Einsum) or node.dtype == BOOL:
        return False
    ins, out = node.subscripts.split("->")
    a, b = (ins.split(",") + ["", ""])[:2]
    if len(ins.split(",")) != 2 or len(a) != 2 or len(b) != 2 or len(out) != 2:
        return False
    if not (a[1] == b[0] and out == a[0] + b[1] and len({a[0], a[1], b[1]}) == 3):
        return False
    (M, K), (_, Nn) = node.operands[0].shape, node.operands[1].shape
    return all(n % TILE == 0 and n > 0 for n in (M, K, Nn))


def _reduction_spec(node):
    """Flattened view of a Reduce/Einsum: sizes, shapes and a body builder."""
    if isinstance(node, N.Reduce):
        x = node.array
        axes = node.axes
        kept_shape = tuple(n for d, n in enumerate(x.shape) if d not in axes)
        red_shape = tuple(x.shape[d] for d in axes)
        inner = bool(x.ndim) and (x.ndim - 1) in axes

        def body(kb, kept, red, jflat):
            idx, ki, ri = [], iter(kept), iter(red)
            for d in range(x.ndim):
                idx.append(next(ri) if d in axes else next(ki))
            return kb.value(x, tuple(idx), kb.inames, reducing=True)
        op = node.op
    else:
        ins, out = node.subscripts.split("->")
        ins = ins.split(",")
        sizes = {}
        for s, o in zip(ins, node.operands):
            sizes.update(zip(s, o.shape))
        contracted = [c for c in dict.fromkeys("".join(ins)) if c not in out]
        kept_shape = tuple(sizes[c] for c in out)
        red_shape = tuple(sizes[c] for c in contracted)
        last = ins[0][-1] if ins[0] else None
        inner = last in contracted

        def body(kb, kept, red, jflat):
            env = dict(zip(out, kept))
            env.update(zip(contracted, red))
            factors = []
            for s, o in zip(ins, node.operands):
                e, _ = kb.value(o, tuple(env[c] for c in s), kb.inames, reducing=True)
                factors.append(e)
            if node.dtype == BOOL:
                return p.LogicalAnd(tuple(factors)), BOOL
            if len(factors) == 1:
                return factors[0], node.dtype
            return _product(kb, factors, node.dtype), node.dtype
        op = "sum"
    M = math.prod(kept_shape)
    R = math.prod(red_shape)
    return {"M": M, "R": R, "kept_shape": kept_shape, "red_shape": red_shape,
            "inner": inner, "body": body, "op": op, "node": node}


__all__ = ["Assembler", "KernelPlan", "linearize"]
