"""Schedules: explicit, replayable loop transformations of one kernel.

A schedule is a tuple of frozen ``Step`` values.  Each step is a pure
``loopy kernel -> loopy kernel`` function (``Step.apply``) that checks its
own arguments against the kernel first and raises ``ScheduleError`` naming
the step and the kernel -- an invalid step is never silently accepted.
``repr(step)`` is valid Python, so ``parse_schedule(format_schedule(s)) ==
s``.

Two steps act before the kernel is built, because they change how codegen
constructs it rather than how its loops are arranged (``Step.build``):
``Layout`` (elementwise: one flat index, or one index per output axis) and
``ElementsPerItem`` (elementwise: several coalesced elements per work-item,
loads before stores).  They must come first.

Every kernel has a default schedule (``KernelInfo.schedule``); a user's
schedule for a kernel replaces it entirely.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass

_TAG = re.compile(r"^(g\.[0-2]|l\.[0-2]|unr|unr_hint(\.[1-9][0-9]*)?|ilp|for)$")


class ScheduleError(ValueError):
    """A schedule step that does not apply to a kernel."""


class Step:
    """Base class: ``apply(knl, ctx)`` returns the transformed kernel."""
    build = False            # consumed by codegen before the kernel exists

    def apply(self, knl, ctx):      # pragma: no cover - abstract
        raise NotImplementedError

    def fail(self, ctx, why):
        raise ScheduleError(f"{self!r} does not apply to kernel {ctx.name}: {why}")


@dataclass(frozen=True)
class KernelContext:
    """What steps may check against: the kernel's name and kind."""
    name: str
    kind: str


def _inames(knl):
    return set(knl.default_entrypoint.all_inames())


def _need_iname(step, knl, ctx, iname):
    have = _inames(knl)
    if iname not in have:
        step.fail(ctx, f"no loop named {iname!r}; its loops are {sorted(have)}")


def _need_positive(step, ctx, **values):
    for name, v in values.items():
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            step.fail(ctx, f"{name} must be a positive integer, got {v!r}")


def _need_tag(step, ctx, tag):
    if tag is not None and not _TAG.match(tag):
        step.fail(ctx, f"unknown tag {tag!r} (use g.0-2, l.0-2, unr, unr_hint[.N], ilp or for)")


def _split(step, knl, ctx, iname, factor, outer_tag=None, inner_tag=None):
    import loopy as lp
    _need_iname(step, knl, ctx, iname)
    _need_positive(step, ctx, factor=factor)
    _need_tag(step, ctx, outer_tag)
    _need_tag(step, ctx, inner_tag)
    taken = _inames(knl) & {f"{iname}_outer", f"{iname}_inner"}
    if taken:
        step.fail(ctx, f"splitting {iname!r} would create {sorted(taken)[0]!r}, which "
                       "already exists")
    if _tag_of(knl, iname):
        step.fail(ctx, f"{iname!r} is already mapped to {_tag_of(knl, iname)}")
    return lp.split_iname(knl, iname, factor, outer_tag=outer_tag, inner_tag=inner_tag)


def _tag_of(knl, iname):
    kern = knl.default_entrypoint
    tags = kern.inames[iname].tags if iname in kern.inames else ()
    return ", ".join(str(t) for t in tags)


def _set_tag(step, knl, ctx, iname, tag):
    import loopy as lp
    _need_iname(step, knl, ctx, iname)
    _need_tag(step, ctx, tag)
    old = _tag_of(knl, iname)
    if old:
        step.fail(ctx, f"{iname!r} is already mapped to {old}")
    return lp.tag_inames(knl, {iname: tag})


@dataclass(frozen=True)
class Split(Step):
    """``iname`` -> ``iname_outer`` x ``iname_inner`` (extent ``factor``),
    each optionally mapped to a hardware axis or unrolled."""
    iname: str
    factor: int
    outer_tag: str | None = None
    inner_tag: str | None = None

    def apply(self, knl, ctx):
        return _split(self, knl, ctx, self.iname, self.factor, self.outer_tag, self.inner_tag)


@dataclass(frozen=True)
class Tile(Step):
    """2-D work-groups: ``i`` in blocks of ``fi`` (``l.1``/``g.1``) and
    ``j`` in blocks of ``fj`` (``l.0``/``g.0``; ``j`` should be the
    contiguous axis)."""
    i: str
    j: str
    fi: int
    fj: int

    def apply(self, knl, ctx):
        if self.i == self.j:
            self.fail(ctx, "the two tiled loops must differ")
        knl = _split(self, knl, ctx, self.i, self.fi, "g.1", "l.1")
        return _split(self, knl, ctx, self.j, self.fj, "g.0", "l.0")


@dataclass(frozen=True)
class WorkGroup(Step):
    """Run ``iname`` (default: the kernel's flat index ``i``) as work-groups
    of ``size`` work-items: ``g.0`` x ``l.0``."""
    size: int
    iname: str = "i"

    def apply(self, knl, ctx):
        return _split(self, knl, ctx, self.iname, self.size, "g.0", "l.0")


@dataclass(frozen=True)
class Coalesce(Step):
    """Map ``iname`` to the fastest-varying work-item index (``l.0``, in
    groups of ``size``); its neighbours in memory then go to neighbouring
    work-items.  Use it on the axis with unit stride in the output."""
    iname: str
    size: int = 256

    def apply(self, knl, ctx):
        return _split(self, knl, ctx, self.iname, self.size, "g.0", "l.0")


@dataclass(frozen=True)
class Unroll(Step):
    """Unroll ``iname`` fully (``factor=None``; its extent must be a
    constant <= 64), or split it and unroll the inner ``factor``."""
    iname: str
    factor: int | None = None

    def apply(self, knl, ctx):
        if self.factor is not None:
            return _split(self, knl, ctx, self.iname, self.factor, None, "unr")
        _need_iname(self, knl, ctx, self.iname)
        size = _extent(knl, self.iname)
        if size is None or size > MAX_UNROLL:
            self.fail(ctx, f"{self.iname!r} has extent {size if size else 'unknown'}; "
                           f"full unrolling needs a constant <= {MAX_UNROLL} (give a factor)")
        return _set_tag(self, knl, ctx, self.iname, "unr")


@dataclass(frozen=True)
class Tag(Step):
    """Map ``iname`` to ``tag``: a hardware axis (``g.0``-``g.2`` groups,
    ``l.0``-``l.2`` work-items), ``unr`` or ``ilp``."""
    iname: str
    tag: str

    def apply(self, knl, ctx):
        return _set_tag(self, knl, ctx, self.iname, self.tag)


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


@dataclass(frozen=True)
class GroupReduce(Step):
    """Reduce ``iname`` with a work-group of ``size`` work-items: a strided
    loop per work-item, then a tree in local memory; the kernel's output
    loop ``over`` runs one output per work-group (``g.0``); ``over=""``
    leaves the loops as they are (a row kernel's second reduction)."""
    iname: str
    size: int
    over: str = "i"

    def apply(self, knl, ctx):
        import loopy as lp
        _need_iname(self, knl, ctx, self.iname)
        _need_positive(self, ctx, size=self.size)
        if self.size & (self.size - 1):
            self.fail(ctx, f"size must be a power of two, got {self.size}")
        if self.iname not in _reduction_inames(knl):
            self.fail(ctx, f"{self.iname!r} is not a reduction loop")
        knl = _split(self, knl, ctx, self.iname, self.size)
        knl = lp.split_reduction_outward(knl, f"{self.iname}_inner")
        knl = _set_tag(self, knl, ctx, f"{self.iname}_inner", "l.0")
        return _set_tag(self, knl, ctx, self.over, "g.0") if self.over else knl


@dataclass(frozen=True)
class RegisterTile(Step):
    """Register-tiled matrix product over loops ``i``, ``j`` (outputs) and
    ``k`` (contracted) reading arrays ``a`` and ``b``: ``block`` x ``block``
    outputs per work-group of ``threads`` x ``threads`` work-items, each
    accumulating (block/threads)^2 outputs in registers, over ``depth``-deep
    tiles of both operands in local memory.

    ``block_j`` (default: ``block``) makes the tiles rectangular.

    ``vector=1``: a work-item's rows (columns) are ``threads`` apart.
    ``vector=v``: they come in groups of ``v`` consecutive ones, A's tile is
    stored k-major (padded by ``v``) and both tiles are 16-byte aligned, so
    each k step reads its operands with v-wide shared loads and no bank
    conflicts; the k loop carries an unroll hint for the device compiler.
    Shorthand for the ``Split``, ``Prefetch`` and ``Tag`` steps it lists in
    its errors."""
    a: str
    b: str
    block: int = 64
    threads: int = 16
    depth: int = 16
    vector: int = 1
    block_j: int = 0        # columns per work-group when not ``block`` (rectangular tiles)

    def _axis(self, x, tag):
        """Splits of loop ``x`` and the register/work-item loops they leave."""
        block = self.block_j if (x == "j" and self.block_j) else self.block
        if self.vector == 1:
            return ([Split(x, block, outer_tag=f"g.{tag}"),
                     Split(f"{x}_inner", self.threads, outer_tag="ilp", inner_tag=f"l.{tag}")],
                    (f"{x}_inner_outer", f"{x}_inner_inner"))
        groups = block // self.threads // self.vector
        steps, inner, sweep = [Split(x, block, outer_tag=f"g.{tag}")], f"{x}_inner", []
        if groups > 1:
            steps.append(Split(inner, block // groups, outer_tag="ilp"))
            sweep.append(f"{inner}_outer")
            inner = f"{inner}_inner"
        steps.append(Split(inner, self.vector, outer_tag=f"l.{tag}", inner_tag="ilp"))
        return steps, tuple(sweep) + (f"{inner}_outer", f"{inner}_inner")

    def steps(self, a_transposed=False, b_transposed=False):
        """The steps this stands for; an operand read transposed (``a[k, i]``,
        ``b[j, k]``) is copied in the other order, so the local tiles are
        laid out the same either way."""
        si, rows = self._axis("i", 1)
        sj, cols = self._axis("j", 0)
        if self.vector == 1:
            return (*si, *sj, Split("k", self.depth),
                    Prefetch(self.a, rows + ("k_inner",)),
                    Prefetch(self.b, ("k_inner",) + cols))
        return (*si, *sj, Split("k", self.depth),
                Prefetch(self.a, rows + ("k_inner",), pad=self.vector,
                         order="C" if a_transposed else "F", align=16),
                Prefetch(self.b, ("k_inner",) + cols, order="F" if b_transposed else "C",
                         align=16),
                Tag("k_inner", "unr_hint"))

    def apply(self, knl, ctx):
        _need_positive(self, ctx, block=self.block, threads=self.threads, depth=self.depth,
                       vector=self.vector)
        if self.block_j < 0:
            self.fail(ctx, f"block_j must be 0 (same as block) or positive, got {self.block_j}")
        for name, blk in (("block", self.block), ("block_j", self.block_j)):
            if blk % (self.threads * self.vector):
                self.fail(ctx, f"{name} {blk} is not a multiple of threads x vector "
                               f"{self.threads} x {self.vector}")
        flipped = [_reads_transposed(knl, self.a, 1), _reads_transposed(knl, self.b, 0)]
        for s in self.steps(*flipped):
            try:
                knl = s.apply(knl, ctx)
            except ScheduleError as e:
                raise ScheduleError(f"{self!r} does not apply to kernel {ctx.name}: "
                                    f"its step {e}") from e
        return knl


def read_indices(instructions, buf):
    """The set of index tuples at which the instructions read ``buf``."""
    from loopy.symbolic import WalkMapper        # knows loopy's TypeCast, Reduction
    found = set()

    class Walk(WalkMapper):
        def map_subscript(self, expr, *args):
            if getattr(expr.aggregate, "name", None) == buf:
                found.add(tuple(expr.index_tuple))
            super().map_subscript(expr, *args)
    for insn in instructions:
        Walk()(insn.expression)
    return found


def _reads_transposed(knl, name, k_axis):
    """True if the kernel reads 2-D ``name`` with the contracted loop ``k``
    elsewhere than in index ``k_axis`` (``a[k, i]`` or ``b[j, k]``: a
    transposed operand)."""
    from loopy.symbolic import get_dependencies
    return any(len(idx) == 2 and "k" in get_dependencies(idx[1 - k_axis])
               for idx in read_indices(knl.default_entrypoint.instructions, name))


@dataclass(frozen=True)
class StoreThroughLocal(Step):
    """After ``Layout("axes")`` and ``Coalesce("i0", W)`` (a work-item per
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
            self.fail(ctx, "it needs Layout('axes') and Coalesce('i0', ...) first")
        if _tag_of(knl, "i0_inner") != "l.0" or _tag_of(knl, "i0_outer") != "g.0":
            self.fail(ctx, "i0 must be split onto g.0 x l.0 (Coalesce('i0', ...))")
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


@dataclass(frozen=True)
class Layout(Step):
    """Elementwise kernels only, first step: ``"flat"`` (one index ``i``
    over all elements, the default) or ``"axes"`` (one index per output axis:
    ``i0``, ``i1``, ... -- for schedules that treat axes differently)."""
    kind: str
    build = True

    def apply(self, knl, ctx):
        return knl


@dataclass(frozen=True)
class ElementsPerItem(Step):
    """Elementwise kernels only, first step: each work-item of a ``size``
    group takes ``n`` coalesced elements, loading all its inputs before it
    stores (the GPU default for large kernels, n=4)."""
    n: int
    size: int = 256
    build = True

    def apply(self, knl, ctx):
        return knl


@dataclass(frozen=True)
class Transform(Step):
    """Any ``loopy kernel -> kernel`` function (``prog.transform``).  Not
    replayable from text, and programs using it skip the disk cache."""
    fn: object

    def __repr__(self):
        return f"Transform({getattr(self.fn, '__qualname__', repr(self.fn))})"

    def apply(self, knl, ctx):
        try:
            out = self.fn(knl)
        except ScheduleError:
            raise
        except Exception as e:      # noqa: BLE001  (user code: report, naming the kernel)
            raise ScheduleError(f"{self!r} failed on kernel {ctx.name}: "
                                f"{type(e).__name__}: {e}") from e
        if out is None or not hasattr(out, "default_entrypoint"):
            self.fail(ctx, f"the function returned {type(out).__name__}, not a loopy kernel")
        return out


STEPS = {c.__name__: c for c in (Split, Tile, WorkGroup, Coalesce, Unroll, Tag, Prefetch,
                                 GroupReduce, RegisterTile, StoreThroughLocal, Layout,
                                 ElementsPerItem)}


def _extent(knl, iname):
    try:
        size = knl.default_entrypoint.get_iname_bounds(iname, constants_only=True).size
        (_, aff), = size.get_pieces()
        return int(aff.get_constant_val().to_python())
    except Exception:      # noqa: BLE001  (non-constant bounds)
        return None


def _reduction_inames(knl):
    found = set()
    for insn in knl.default_entrypoint.instructions:
        found |= set(insn.reduction_inames())
    return found


def short_repr(value, limit=80):
    """``repr(value)``, cut to ``limit`` characters for error messages."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def normalize(steps, name="?"):
    """A tuple of steps; build steps first; ScheduleError otherwise."""
    if isinstance(steps, Step):
        steps = (steps,)
    try:
        if isinstance(steps, (str, bytes, dict)):
            raise TypeError
        steps = tuple(steps)
    except TypeError:
        raise ScheduleError(f"schedule for kernel {name}: expected a step or a list of steps "
                            f"({', '.join(sorted(STEPS))}), got {type(steps).__name__} "
                            f"{short_repr(steps)}"
                            + (" (parse_schedule reads text)" if isinstance(steps, str) else "")
                            ) from None
    seen_other = False
    for s in steps:
        if not isinstance(s, Step):
            raise ScheduleError(f"schedule for kernel {name}: {s!r} is not a schedule step "
                                f"(steps: {', '.join(sorted(STEPS))})")
        if s.build and seen_other:
            raise ScheduleError(f"{s!r} must come before the other steps (kernel {name})")
        seen_other |= not s.build
    return steps


def apply_steps(knl, steps, ctx):
    """Apply ``steps`` in order; loopy's own errors become ScheduleError."""
    for s in steps:
        if s.build:
            continue
        try:
            knl = s.apply(knl, ctx)
        except ScheduleError:
            raise
        except Exception as e:      # noqa: BLE001  (loopy refused the step)
            raise ScheduleError(f"{s!r} does not apply to kernel {ctx.name}: "
                                f"{type(e).__name__}: {str(e).splitlines()[0]}") from e
        check_unrolling(knl, s, ctx)        # before codegen, which huge unrolls stall
    return knl


def build_options(steps, kind, ctx_name):
    """``(layout, elements per item, work-group size)`` from build steps."""
    layout, ilp, wg = "flat", None, None
    for s in steps:
        if not s.build:
            continue
        if kind != "elementwise":
            raise ScheduleError(f"{s!r} does not apply to kernel {ctx_name}: only "
                                f"elementwise kernels take it (this one is {kind})")
        if isinstance(s, Layout):
            if s.kind not in ("flat", "axes"):
                raise ScheduleError(f"{s!r} does not apply to kernel {ctx_name}: kind must "
                                    "be 'flat' or 'axes'")
            layout = s.kind
        else:
            _need_positive(s, KernelContext(ctx_name, kind), n=s.n, size=s.size)
            if s.n > MAX_UNROLL:        # its element loops are unrolled
                s.fail(KernelContext(ctx_name, kind), f"n={s.n} unrolls each work-item's "
                       f"loops {s.n} times; at most {MAX_UNROLL} (MAX_UNROLL)")
            ilp, wg = s.n, s.size
    if ilp is not None and layout != "flat":
        raise ScheduleError(f"ElementsPerItem needs Layout('flat') (kernel {ctx_name})")
    return layout, ilp, wg


def format_schedule(steps) -> str:
    return "[" + ", ".join(repr(s) for s in steps) + "]"


def parse_schedule(text):
    """Steps from ``format_schedule`` text (only step constructors with
    literal arguments are accepted)."""
    tree = ast.parse(text.strip(), mode="eval").body
    if not isinstance(tree, (ast.List, ast.Tuple)):
        raise ScheduleError(f"not a list of steps: {text!r}")
    steps = []
    for node in tree.elts:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in STEPS):
            raise ScheduleError(f"not a schedule step: {ast.unparse(node)!r}")
        args = [ast.literal_eval(a) for a in node.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
        steps.append(STEPS[node.func.id](*args, **kwargs))
    return tuple(steps)


def schedule_key(schedules) -> str | None:
    """Deterministic text for cache keys; None when a step is not replayable."""
    if not schedules:
        return ""
    parts = []
    for pattern in sorted(schedules):
        steps = normalize(schedules[pattern], pattern)
        if any(isinstance(s, Transform) for s in steps):
            return None
        parts.append(f"{pattern}={format_schedule(steps)}")
    return ";".join(parts)


from .vectorize import Vectorize  # noqa: E402  (it builds on the helpers above)

STEPS[Vectorize.__name__] = Vectorize

from .schedule_checks import MAX_UNROLL, check_unrolling  # noqa: E402,F401  (uses the above)


def rename_arrays(step, names):
    """``step`` with the array names in ``names`` replaced: placeholder names
    (``Prefetch("x")``) by their device-code names (``p1_x``,
    ``codegen.c_name``) before a step applies, and back for display."""
    import dataclasses
    fields = {"array"} if isinstance(step, Prefetch) else \
        {"a", "b"} if isinstance(step, RegisterTile) else set()
    changes = {f: names[getattr(step, f)] for f in fields if getattr(step, f) in names}
    return dataclasses.replace(step, **changes) if changes else step


def user_names(message, users):
    """``message`` with quoted device-code names (``'p1_x'``) replaced by the
    placeholder names they stand for."""
    for c, u in users.items():
        message = message.replace(repr(c), repr(u))
    return message
