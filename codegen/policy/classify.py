"""Shape classes: what the policy (``rules.py``) needs to know of a
kernel group, as plain data.  The assembler classifies each group; the
policy maps (shape class, device) to a kernel form."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from typing import Callable

from ..emit.cfuncs import BOOL


@dataclass(frozen=True)
class Elementwise:
    """Same-sized outputs computed at one flat index."""
    size: int
    shape: tuple                # of the first output
    requested: tuple | None = None  # the user's build options (layout, per item, work-group)
    probe: Callable | None = field(default=None, compare=False, repr=False)
    stacked: int = 0            # bytes per row of a recurrence stacked along the last axis
    buffers: int = 0            # distinct buffers the group reads (pieces of a stack...)
    shared_run: int = 1         # neighbours sharing work (random blocks: 4)

    @cached_property
    def transposed_reads(self) -> tuple:
        """2-D buffers read only at the transposed index (``x[i1, i0]``);
        found by building the body once, on demand."""
        return tuple(self.probe()) if self.probe is not None else ()


def stacked_columns(group) -> int:
    """The bytes per row (columns x item size) where a group's one output is a
    stacked recurrence (``stacked_recurrence``), else 0."""
    if len(group.units) != 1:
        return 0
    return stacked_recurrence(group.units[0].node)


def stacked_recurrence(n) -> int:
    """The bytes per row (columns x item size) where node ``n`` is a 2-D
    concatenation along its last axis of pieces that build on each other (a
    recurrence: ``H[k+1] = 2 x H[k] - 2 k H[k-1]``), else 0: the last
    piece's DAG holds most other pieces' cores (a piece, or the array it
    transforms through at most two one-input steps: ``(H[k] / sqrt(k!))[:, None]``).  Computed at a flat index, each
    element would redo the recurrence up to its column."""
    from polyarray.ir import nodes as N
    if not isinstance(n, N.Concatenate) or len(n.shape) != 2 or n.axis != 1 \
            or len(n.arrays) < 4 or n.shape[1] > 64:
        return 0

    def core(a):         # through a reshape, then a normalization (as written)
        for _ in range(2):
            if isinstance(a, N.IndexLambda) and len(a.bindings) == 1:
                (_, a), = a.bindings
                if isinstance(a, N.IndexLambda) and a.op == N.WRITTEN:
                    (_, a), = a.bindings
        return a
    ancestry = {id(m) for m in N.topological_order([core(n.arrays[-1])])}
    found = {id(core(a)) for a in n.arrays[:-1]} & ancestry
    row_bytes = n.shape[1] * n.dtype.itemsize
    return row_bytes if len(found) >= max(3, (len(n.arrays) - 1) // 2) else 0


@dataclass(frozen=True)
class Reduction:
    """M outputs, each a reduction of R values; ``inner``: the reduced axes
    include the contiguous one; ``run``: else, the outputs side by side
    along it (the extent of the last kept axis; 0 when it is reduced);
    ``terms``: unrolled terms per value (more than 1 when small reductions
    are inlined into it); ``broadcast``: the reduced values outnumber the
    buffer elements they are computed from (all-pairs terms: computed, not
    loaded)."""
    M: int
    R: int
    inner: bool
    op: str
    run: int = 0
    terms: int = 1
    broadcast: bool = False
    ordered: bool = False       # NumPy's order is part of the value (complex products)
    shared_run: int = 1         # neighbouring values sharing work (random blocks: 4)


@dataclass(frozen=True)
class Contraction:
    """An einsum.  ``matmul``: a matrix product, batched or not (``batch``
    outputs of M x N, one contracted axis of K; not bool); ``one_buffer``:
    both operands read the same buffer (``a @ a``, ``x @ x.T``);
    ``itemsize`` and ``kind``: of the dtype; ``scheduled``: the user gave
    its kernel a schedule; ``reduction``: the same contraction seen as a
    reduction."""
    M: int
    N: int
    K: int
    matmul: bool
    one_buffer: bool
    reduction: Reduction
    batch: int = 1
    itemsize: int = 4
    kind: str = "f"
    scheduled: bool = False
    precision: str = "highest"  # the user's: "tf32" / "bf16" where tensor cores may serve


@dataclass(frozen=True)
class Rows:
    """Row reductions fused with their elementwise readers: M rows of R;
    ``scheduled``: the user's steps name its loops (``j0``, ``c``...)."""
    M: int
    R: int
    scheduled: bool = False


@dataclass(frozen=True)
class Steps:
    """Rows computed in order (a ``Recurrence``): ``rows`` rows of ``size``
    elements; each element's rows depend on that element's alone."""
    size: int
    rows: int


@dataclass(frozen=True)
class Raw:
    """A hand-written kernel (``pa.raw_kernel``): its code and launch sizes
    are the user's, so there is nothing to choose."""
    name: str
    language: str


@dataclass(frozen=True)
class ArgRows:
    """argmax/argmin (``op``) along the last axis of a buffer of ``rows``
    rows of ``n`` values of ``dtype`` (a dtype str)."""
    op: str
    dtype: str
    rows: int
    n: int


@dataclass(frozen=True)
class Attention:
    """``softmax(scale(Q @ K^T)) @ V`` found on the DAG (``plan/attention.py``):
    ``batch`` products of ``n`` query rows by ``m`` keys of ``d`` values,
    ``dv`` output columns, in ``dtype`` (a dtype str)."""
    batch: int
    n: int
    m: int
    d: int
    dv: int
    dtype: str


@dataclass(frozen=True)
class Call:
    """A library routine (``pa.linalg``'s factorizations and solves,
    ``pa.fft``'s transforms):
    ``op`` on matrices of ``shape`` and ``dtype`` (its first input's, the
    dtype it computes in)."""
    op: str
    dtype: str
    shape: tuple
    axis: int | None = None     # a scan's


def reduction_class(spec, terms=1, read=None, shared_run=1) -> Reduction:
    """``read``: how many buffer elements the reduced values are computed
    from (None: as many as there are values); ``shared_run``: neighbouring
    values that share work (when they are contiguous: ``inner``)."""
    run = spec["kept_shape"][-1] if spec["kept_shape"] and not spec["inner"] else 0
    broadcast = read is not None and read < spec["M"] * spec["R"]
    # a complex product's infinities give NaN or not by the order of the
    # products ((inf+infj) * (3-1j) is (inf, nan)): NumPy multiplies in order
    ordered = spec["op"] == "prod" and getattr(spec["node"], "dtype", None) is not None \
        and spec["node"].dtype.kind == "c"
    return Reduction(spec["M"], spec["R"], spec["inner"], spec["op"], run, terms, broadcast,
                     ordered, shared_run if spec["inner"] else 1)


@dataclass(frozen=True)
class Subscripts:
    """An einsum's subscripts, parsed once: operand letters, output letters,
    the contracted letters (first-seen order), and for a matrix product its
    ``batch`` letters (the output's leading ones) and its ``i``, ``j``, ``k``."""
    ins: tuple
    out: str
    contracted: tuple
    batch: str = ""
    i: str = ""
    j: str = ""
    k: str = ""

    @property
    def matmul(self) -> bool:
        return bool(self.k)


@lru_cache(maxsize=1024)
def parse_subscripts(subscripts: str) -> Subscripts:
    """``"bik,bkj->bij"`` -> Subscripts.  A matrix product: two operands,
    one contracted letter k, the output ends in i (of the first operand
    only) and j (of the second only), each operand's last two letters are
    {i, k} / {k, j} in either order (an operand read transposed), and its
    other letters are all of the output's batch letters, in order, or none
    (broadcast); no letter repeats within an operand."""
    ins, out = subscripts.split("->")
    ins = tuple(ins.split(","))
    contracted = tuple(c for c in dict.fromkeys("".join(ins)) if c not in out)
    plain = Subscripts(ins, out, contracted)
    if len(ins) != 2 or len(out) < 2 or len(contracted) != 1:
        return plain
    (a, b), k = ins, contracted[0]
    i, j, batch = out[-2], out[-1], out[:-2]
    if (any(len(set(s)) != len(s) for s in ins) or set(a[-2:]) != {i, k}
            or set(b[-2:]) != {k, j} or a[:-2] not in ("", batch)
            or b[:-2] not in ("", batch) or i in b or j in a):
        return plain
    return Subscripts(ins, out, contracted, batch, i, j, k)


def stored_layout(sub, orders) -> tuple:
    """A matrix product's operands as stored, as a library call's params:
    ``transpose_a`` (A stored as ``[.., k, i]``), ``transpose_b`` (B as
    ``[.., j, k]``), ``batch_a``/``batch_b`` (the operand has the batch
    axes; else it is broadcast); ``orders``: each operand's letters in its
    buffer's order (reversed where it reads a buffer transposed)."""
    params = []
    for t, order in enumerate(orders):
        params += [(f"transpose_{'ab'[t]}", order[-1] != (sub.k if t == 0 else sub.j)),
                   (f"batch_{'ab'[t]}", len(order) > 2)]
    return tuple(sorted(params))


def letter_sizes(node) -> dict:
    """An Einsum's letters -> their sizes, from its operands' shapes."""
    sub = parse_subscripts(node.subscripts)
    return dict(zip("".join(sub.ins), (n for o in node.operands for n in o.shape)))


def product_class(node, reduction=None, one_buffer=False) -> Contraction:
    """The contraction facts of a matrix-product Einsum; a non-product is
    ``matmul=False``.  From the node alone (for passes that run before
    buffers exist) ``one_buffer`` is unknown and the reduction view
    approximate; ``contraction_class`` gives both."""
    sub = parse_subscripts(node.subscripts)
    red = reduction or Reduction(node.size, 0, True, "sum")
    if node.dtype == BOOL or not sub.matmul:
        return Contraction(0, 0, 0, False, False, red)
    size = letter_sizes(node)
    return Contraction(size[sub.i], size[sub.j], size[sub.k], True, one_buffer,
                       reduction or replace(red, R=size[sub.k]),
                       math.prod(size[c] for c in sub.batch), node.dtype.itemsize,
                       node.dtype.kind, precision=getattr(node, "precision", "highest"))


def contraction_class(node, spec, plan, buffers, scheduled=False) -> Contraction:
    """The contraction facts of Einsum ``node`` (``spec``: its reduction
    view; ``scheduled``: its kernel has the user's schedule)."""
    one_buffer = False
    if parse_subscripts(node.subscripts).matmul:    # two operands
        a, b = (read_buffer(o, plan, buffers) for o in node.operands)
        one_buffer = a is b
    return replace(product_class(node, reduction_class(spec), one_buffer), scheduled=scheduled)


def read_buffer(operand, plan, buffers):
    """The node whose buffer a contraction reads for ``operand``: itself, or
    the buffer it transposes (recorded by the materialization pass)."""
    if id(operand) in buffers:
        return operand
    return plan.transposed[id(operand)]


def rows_class(shape, scheduled=False) -> Rows:
    return Rows(math.prod(shape[:-1]), shape[-1], scheduled)


__all__ = ["Attention", "Contraction", "Subscripts", "letter_sizes", "stored_layout", "parse_subscripts", "product_class", "Elementwise", "Reduction", "Rows", "Steps", "contraction_class",
           "read_buffer", "reduction_class", "rows_class"]
