"""The register-tiled matrix product: one step that stands for the splits,
local-memory copies and tags of a tiled matmul, choosing the copies' layout
from how the kernel reads its operands (plain or transposed)."""
from __future__ import annotations

from dataclasses import dataclass

from .base import ScheduleError, Step, _need_positive
from .loops import Split, Tag
from .memory import Prefetch


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
    its errors, and the nesting of its register loops (``register_loops``)."""
    a: str
    b: str
    block: int = 64
    threads: int = 16
    depth: int = 16
    vector: int = 1
    block_j: int = 0        # columns per work-group when not ``block`` (rectangular tiles)
    arrays = ("a", "b")

    def _axis(self, x, tag):
        """Splits of loop ``x``, the register/work-item loops they leave, and
        the register (ilp) loops among them."""
        block = self.block_j if (x == "j" and self.block_j) else self.block
        if self.vector == 1:
            return ([Split(x, block, outer_tag=f"g.{tag}"),
                     Split(f"{x}_inner", self.threads, outer_tag="ilp", inner_tag=f"l.{tag}")],
                    (f"{x}_inner_outer", f"{x}_inner_inner"), (f"{x}_inner_outer",))
        groups = block // self.threads // self.vector
        steps, inner, sweep = [Split(x, block, outer_tag=f"g.{tag}")], f"{x}_inner", []
        if groups > 1:
            steps.append(Split(inner, block // groups, outer_tag="ilp"))
            sweep.append(f"{inner}_outer")
            inner = f"{inner}_inner"
        steps.append(Split(inner, self.vector, outer_tag=f"l.{tag}", inner_tag="ilp"))
        return (steps, tuple(sweep) + (f"{inner}_outer", f"{inner}_inner"),
                (f"{inner}_inner",) + tuple(sweep))

    def register_loops(self):
        """The register (ilp) loops in the order they nest, which is also
        the order of the accumulator's axes: the more deeply split first
        (the vector lanes'), then j's before i's.  Loopy would take both
        orders from a set of names (ilp_order.py); this rule gives the order
        it took with PYTHONHASHSEED=0."""
        names = self._axis("j", 0)[2] + self._axis("i", 1)[2]
        return tuple(sorted(names, key=lambda n: (n.count("_"), n), reverse=True))

    def steps(self, a_transposed=False, b_transposed=False):
        """The steps this stands for; an operand read transposed (``a[k, i]``,
        ``b[j, k]``) is copied in the other order, so the local tiles are
        laid out the same either way."""
        si, rows, _ = self._axis("i", 1)
        sj, cols, _ = self._axis("j", 0)
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
        import loopy as lp
        _need_positive(self, ctx, block=self.block, threads=self.threads, depth=self.depth,
                       vector=self.vector)
        if self.block_j < 0:
            self.fail(ctx, f"block_j must be 0 (same as block) or positive, got {self.block_j}")
        for name, blk in (("block", self.block), ("block_j", self.block_j)):
            if blk % (self.threads * self.vector):
                self.fail(ctx, f"{name} {blk} is not a multiple of threads x vector "
                               f"{self.threads} x {self.vector}")
        if "transposed" not in ctx.facts:
            self.fail(ctx, "it is a tiled matmul schedule, and this kernel is no tiled matmul")
        flipped = [self.a in ctx.facts["transposed"], self.b in ctx.facts["transposed"]]
        for s in self.steps(*flipped):
            try:
                knl = s.apply(knl, ctx)
            except ScheduleError as e:
                raise ScheduleError(f"{self!r} does not apply to kernel {ctx.name}: "
                                    f"its step {e}") from e
        return lp.prioritize_loops(knl, self.register_loops())
