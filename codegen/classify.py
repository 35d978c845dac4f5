"""Shape classes: what the policy (``policy.py``) needs to know of a
kernel group, as plain data.  The assembler classifies each group; the
policy maps (shape class, device) to a kernel form."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

from .cfuncs import BOOL


@dataclass(frozen=True)
class Elementwise:
    """Same-sized outputs computed at one flat index."""
    size: int
    shape: tuple                # of the first output
    requested: tuple | None = None  # the user's build options (layout, per item, work-group)
    probe: Callable | None = field(default=None, compare=False, repr=False)

    @cached_property
    def transposed_reads(self) -> tuple:
        """2-D buffers read only at the transposed index (``x[i1, i0]``);
        found by building the body once, on demand."""
        return tuple(self.probe()) if self.probe is not None else ()


@dataclass(frozen=True)
class Reduction:
    """M outputs, each a reduction of R values; ``inner``: the reduced axes
    include the contiguous one."""
    M: int
    R: int
    inner: bool
    op: str


@dataclass(frozen=True)
class Contraction:
    """An einsum.  ``matmul``: a 2-D ``ik,kj->ij`` product (not bool);
    ``one_buffer``: both operands read the same buffer (``a @ a``,
    ``x.T @ x``); ``reduction``: the same contraction seen as a reduction."""
    M: int
    N: int
    K: int
    matmul: bool
    one_buffer: bool
    reduction: Reduction


@dataclass(frozen=True)
class Rows:
    """Row reductions fused with their elementwise readers: M rows of R."""
    M: int
    R: int


def reduction_class(spec) -> Reduction:
    return Reduction(spec["M"], spec["R"], spec["inner"], spec["op"])


def contraction_class(node, spec, plan, buffers) -> Contraction:
    """The contraction facts of Einsum ``node`` (``spec``: its reduction view)."""
    red = reduction_class(spec)
    ins, out = node.subscripts.split("->")
    ins = ins.split(",")
    matmul = (node.dtype != BOOL and len(ins) == 2 and len(out) == 2
              and all(len(s) == 2 for s in ins) and ins[0][1] == ins[1][0]
              and out == ins[0][0] + ins[1][1] and len({ins[0][0], ins[0][1], ins[1][1]}) == 3)
    if not matmul:
        return Contraction(0, 0, 0, False, False, red)
    (M, K), (_, Nn) = node.operands[0].shape, node.operands[1].shape
    a, b = (read_buffer(o, plan, buffers) for o in node.operands)
    return Contraction(M, Nn, K, True, a is b, red)


def read_buffer(operand, plan, buffers):
    """The node whose buffer a contraction reads for ``operand``: itself, or
    the buffer it transposes (recorded by the materialization pass)."""
    if id(operand) in buffers:
        return operand
    return plan.transposed[id(operand)]


def rows_class(shape) -> Rows:
    return Rows(math.prod(shape[:-1]), shape[-1])


__all__ = ["Contraction", "Elementwise", "Reduction", "Rows", "contraction_class",
           "read_buffer", "reduction_class", "rows_class"]
