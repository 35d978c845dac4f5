"""Linear algebra nodes: everything that sums products is one ``Einsum`` node.

``dot``, ``matmul``, ``tensordot``, ``inner`` and ``vdot`` are rewritten as
einsum subscripts here, so later stages (lowering, schedules) only know one
contraction node.  ``outer`` has no reduction and stays elementwise.
"""
from __future__ import annotations

import contextlib
import contextvars
import operator
import string

import numpy as np

from ..ir import nodes as N
from .axes import axis_index, axis_list, normalize_axis_index
from .complex import conj
from .creation import as_node
from .dtypes import check_dtype
from .elementwise import apply_ufunc, astype, broadcast_shapes
from .shapes import broadcast_to, reshape, squeeze
from .memo import memoized

_LETTERS = string.ascii_letters

# matrix products' precision: "highest" computes float32 products as NumPy
# does; "tf32" and "bf16" let a library with tensor cores (cuBLAS) round the
# inputs to TF32 or bfloat16, summing in float32 (JAX's "default" and bf16 on
# GPUs).  Targets without such a library compute at "highest".
PRECISIONS = ("highest", "tf32", "bf16")
_BLOCK_PRECISION = contextvars.ContextVar("polyarray_matmul_precision", default=None)
_process_precision = "highest"


def check_precision(precision, what="matmul") -> str:
    """``precision`` checked, or the default in force where it is None."""
    if precision is None:
        return default_precision()
    if precision not in PRECISIONS:
        raise ValueError(f"{what}: precision={precision!r} is not one of "
                         f"{', '.join(map(repr, PRECISIONS))} (or None: the default, "
                         f"{default_precision()!r} now)")
    return precision


def default_precision() -> str:
    """The precision of products built now without one: the innermost
    ``pa.matmul_precision`` block's, else the process default."""
    return _BLOCK_PRECISION.get() or _process_precision


def set_process_precision(precision) -> str:
    """Set the process default (checked; None refused); the previous one."""
    global _process_precision
    if precision is None:
        raise ValueError(f"set_matmul_precision: give one of {', '.join(map(repr, PRECISIONS))}")
    previous, _process_precision = _process_precision, check_precision(
        precision, "set_matmul_precision")
    return previous


@contextlib.contextmanager
def precision_block(precision):
    """Products built inside take ``precision`` where they name none (None:
    the process default)."""
    token = _BLOCK_PRECISION.set(None if precision is None
                                 else check_precision(precision, "matmul_precision"))
    try:
        yield
    finally:
        _BLOCK_PRECISION.reset(token)


def _sublists(args):
    """NumPy's operand-list form ``einsum(op0, sublist0, op1, sublist1, ...,
    [sublistout])`` as a subscripts string and the operands."""
    def letters(sub):
        out = []
        for v in sub:
            if v is Ellipsis:
                out.append("...")
            elif 0 <= operator.index(v) < len(_LETTERS):
                out.append(_LETTERS[operator.index(v)])
            else:
                raise ValueError(f"einsum: subscript is not within the valid range [0, 52): {v}")
        return "".join(out)
    ops, subs = list(args[0::2]), list(args[1::2])
    out = None
    if len(args) % 2:
        out, ops = args[-1], ops[:-1]
    text = ",".join(letters(s) for s in subs)
    return (text if out is None else text + "->" + letters(out)), ops


def _parse(subscripts: str, nodes):
    """Input and output subscripts with every ``...`` replaced by letters no
    term uses (right-aligned: an operand's ellipsis covers its leading
    unnamed axes), as NumPy reads them."""
    subscripts = subscripts.replace(" ", "")
    if subscripts.count("->") > 1:
        raise ValueError("einsum: subscripts string contains more than one '->'")
    lhs, arrow, out = subscripts.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(nodes):
        raise ValueError(f"einsum: {len(ins)} operand subscripts for {len(nodes)} operands")
    for s in ins + [out]:
        for c in s.replace("...", "", 1):
            if c not in _LETTERS:
                raise ValueError(f"einsum: invalid subscript {c!r} in {subscripts!r}")
    spare = [c for c in _LETTERS if c not in subscripts]
    ell = []
    for s, n in zip(ins, nodes):
        k = n.ndim - (len(s) - 3) if "..." in s else 0
        if k < 0:
            raise ValueError(f"einsum: operand of shape {n.shape} has {n.ndim} dimensions "
                             f"but subscripts {s!r} name {len(s) - 3}")
        ell.append(k)
    nell = max(ell, default=0)
    if nell > len(spare):
        raise ValueError("einsum: too many dimensions under '...'")
    el = "".join(spare[:nell])
    ins = [s.replace("...", el[nell - k:]) for s, k in zip(ins, ell)]
    if arrow:
        if "..." in out:
            out = out.replace("...", el)
        elif nell:
            raise ValueError("einsum: output has more dimensions than subscripts given in "
                             "einstein sum, but no '...' ellipsis provided to broadcast the "
                             "extra dimensions.")
    else:
        counts = {}
        for c in "".join(ins):
            counts[c] = counts.get(c, 0) + 1
        out = el + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in el))
    if len(set(out)) != len(out):
        raise ValueError(f"einsum: output subscript {out!r} repeats an index")
    for c in out:
        if not any(c in s for s in ins):
            raise ValueError(f"einsum: output index {c!r} appears in no operand")
    return ins, out


def _broadcast(ins, nodes):
    """Each index's size, NumPy-broadcast (a size-1 axis meets any size);
    size-1 axes of an index that is longer elsewhere are squeezed out of
    their operand, so the Einsum node sees one size per index."""
    sizes = {}
    for s, n in zip(ins, nodes):
        if len(s) != n.ndim:
            raise ValueError(f"einsum: operand of shape {n.shape} has {n.ndim} "
                             f"dimensions but subscripts {s!r} name {len(s)}")
        for c, size in zip(s, n.shape):
            have = sizes.setdefault(c, size)
            if have == 1:
                sizes[c] = size
            elif size not in (1, have):
                raise ValueError(f"einsum: index {c!r} has size {have} in one operand and "
                                 f"{size} in another (shapes "
                                 + ", ".join(str(m.shape) for m in nodes) + ")")
    out_ins, out_nodes = [], []
    for s, n in zip(ins, nodes):
        drop = [d for d, (c, size) in enumerate(zip(s, n.shape)) if size != sizes[c]]
        if drop:
            n = squeeze(n, tuple(drop))
            s = "".join(c for d, c in enumerate(s) if d not in drop)
        out_ins.append(s)
        out_nodes.append(n)
    return out_ins, out_nodes, sizes


@memoized
def einsum(subscripts, *operands, dtype=None, casting="safe", precision="highest") -> N.Node:
    if not isinstance(subscripts, str):
        subscripts, operands = _sublists((subscripts,) + operands)
    nodes = [as_node(o) for o in operands]
    ins, out = _parse(subscripts, nodes)
    ins, nodes, sizes = _broadcast(ins, nodes)
    if dtype is None:
        dtype = np.result_type(*(n.dtype for n in nodes))
    else:
        for n in nodes:
            if not np.can_cast(n.dtype, dtype, casting):
                raise TypeError(f"einsum: cannot cast an operand of dtype {n.dtype} to "
                                f"{np.dtype(dtype)} according to the rule {casting!r}")
    dtype = check_dtype(dtype, "einsum")
    nodes = [astype(n, dtype) for n in nodes]
    shape = tuple(sizes[c] for c in out)
    # one spelling per computation (the program key): letters renamed in order
    # of first appearance, so pa.dot(x, y) and x @ y are one program
    rename = {}
    for c in "".join(ins) + out:
        rename.setdefault(c, _LETTERS[len(rename)])
    sub = ",".join("".join(rename[c] for c in s) for s in ins) + "->" + \
        "".join(rename[c] for c in out)
    return N.Einsum.make(shape, dtype, sub, tuple(nodes), precision)


def _letters(n, skip=""):
    return [c for c in _LETTERS if c not in skip][:n]


def tensordot(a, b, axes=2, precision="highest") -> N.Node:
    na, nb = as_node(a), as_node(b)
    if np.ndim(axes) == 0:          # an int (or 0-d array): the last/first ``axes`` axes
        axes = axis_index(axes)
        if axes < 0 or axes > min(na.ndim, nb.ndim):
            raise ValueError(f"tensordot: axes={axes} is invalid for shapes "
                             f"{na.shape} and {nb.shape}")
        ax_a = list(range(na.ndim - axes, na.ndim))
        ax_b = list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a, ax_b = axis_list(ax_a), axis_list(ax_b)
        if len(ax_a) != len(ax_b):
            raise ValueError("tensordot: shape-mismatch for sum")
        ax_a = [normalize_axis_index(x, na.ndim) for x in ax_a]
        ax_b = [normalize_axis_index(x, nb.ndim) for x in ax_b]
    for x, y in zip(ax_a, ax_b):
        if na.shape[x] != nb.shape[y]:
            raise ValueError(f"tensordot: shape-mismatch for sum: shapes "
                             f"{na.shape} (axis {x}) and {nb.shape} (axis {y})")
    letters = iter(_LETTERS)
    sa = [next(letters) for _ in range(na.ndim)]
    sb = [None] * nb.ndim
    for x, y in zip(ax_a, ax_b):
        sb[y] = sa[x]
    for k in range(nb.ndim):
        if sb[k] is None:
            sb[k] = next(letters)
    out = [sa[k] for k in range(na.ndim) if k not in ax_a] + \
          [sb[k] for k in range(nb.ndim) if k not in ax_b]
    return einsum("".join(sa) + "," + "".join(sb) + "->" + "".join(out), na, nb,
                  precision=precision)


@memoized
def dot(a, b, precision="highest") -> N.Node:
    na, nb = as_node(a), as_node(b)
    if na.ndim == 0 or nb.ndim == 0:
        return apply_ufunc("multiply", na, nb)
    if nb.ndim == 1:
        if na.shape[-1] != nb.shape[0]:
            raise ValueError(f"shapes {na.shape} and {nb.shape} not aligned: "
                             f"{na.shape[-1]} (dim {na.ndim - 1}) != {nb.shape[0]} (dim 0)")
        return tensordot(na, nb, ([na.ndim - 1], [0]), precision)
    if na.shape[-1] != nb.shape[-2]:
        raise ValueError(f"shapes {na.shape} and {nb.shape} not aligned: "
                         f"{na.shape[-1]} (dim {na.ndim - 1}) != "
                         f"{nb.shape[-2]} (dim {nb.ndim - 2})")
    return tensordot(na, nb, ([na.ndim - 1], [nb.ndim - 2]), precision)


# matrices of fewer rows than this, batched against one matrix, are stacked into
# one product when they have at least this many rows together (then a tile's rows
# are work; a reshape copy of the operand and of the result is the price)
FOLD_ROWS_BELOW = 16


@memoized
def matmul(a, b, precision="highest") -> N.Node:
    """One einsum, whatever the ranks: ``A @ v`` is ``ik,k->i`` (no reshape
    copies), and a batch axis missing from one operand is left out of its
    letters (broadcast by the contraction, not copied); a batch that is
    partly broadcast is copied to the full batch first."""
    na, nb = as_node(a), as_node(b)
    for k, n in enumerate((na, nb)):
        if n.ndim == 0:
            raise ValueError(f"matmul: Input operand {k} does not have enough "
                             "dimensions (has 0, gufunc core with signature "
                             "(n?,k),(k,m?)->(n?,m?) requires 1)")
    a1, b1 = na.ndim == 1, nb.ndim == 1
    ka = na.shape[-1]
    kb = nb.shape[0] if b1 else nb.shape[-2]
    if ka != kb:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core "
                         f"dimension 0, with gufunc signature (n?,k),(k,m?)->(n?,m?) "
                         f"(size {kb} is different from {ka}); "
                         f"shapes {na.shape} and {nb.shape}")
    batch_a = () if a1 else na.shape[:-2]
    batch_b = () if b1 else nb.shape[:-2]
    batch = broadcast_shapes(batch_a, batch_b, what="matmul: batch dimensions")
    if batch_a and not batch_b and not b1 and na.shape[-2] < FOLD_ROWS_BELOW \
            and 0 not in na.shape and na.size // ka >= FOLD_ROWS_BELOW:
        # rows of few-row matrices times one matrix: one product of all the rows
        # (doitgen's (220, 250, 1, 512) @ (512, 512) is a (55000, 512) @ (512, 512)
        # product, not 55000 of one row each); each element sums the same terms
        rows = reshape(na, (-1, ka))
        return reshape(einsum("ik,kj->ij", rows, nb, precision=precision),
                       batch_a + (na.shape[-2], nb.shape[-1]))
    bl = "".join(_letters(len(batch), "ijk"))
    ops, subs = [], []
    for n, own, core in ((na, batch_a, "k" if a1 else "ik"), (nb, batch_b, "k" if b1 else "kj")):
        letters = bl if own else ""
        if own and own != batch:        # partly broadcast: copied to the full batch
            n = broadcast_to(n, batch + n.shape[len(own):])
        ops.append(n)
        subs.append(letters + core)
    out = bl + ("" if a1 else "i") + ("" if b1 else "j")
    return einsum(f"{subs[0]},{subs[1]}->{out}", *ops, precision=precision)


def vdot(a, b) -> N.Node:
    na, nb = as_node(a), as_node(b)
    if na.size != nb.size:
        raise ValueError(f"vdot: vectors have different sizes: shapes "
                         f"{na.shape} and {nb.shape}")
    if na.dtype.kind == "c":        # NumPy's vdot conjugates its first argument
        na = conj(na)
    return einsum("i,i->", reshape(na, (-1,)), reshape(nb, (-1,)))


def inner(a, b, precision="highest") -> N.Node:
    na, nb = as_node(a), as_node(b)
    if na.ndim == 0 or nb.ndim == 0:
        return apply_ufunc("multiply", na, nb)
    if na.shape[-1] != nb.shape[-1]:
        raise ValueError(f"inner: shapes {na.shape} and {nb.shape} not aligned "
                         "along their last axes")
    return tensordot(na, nb, ([na.ndim - 1], [nb.ndim - 1]), precision)


def outer(a, b) -> N.Node:
    A = reshape(as_node(a), (-1, 1))
    B = reshape(as_node(b), (1, -1))
    return apply_ufunc("multiply", A, B)
