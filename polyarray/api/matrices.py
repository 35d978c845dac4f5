"""``pa.*`` products and matrix functions (:mod:`polyarray.ops.linalg`,
:mod:`polyarray.ops.matrices`): ``einsum``, ``matmul``, ``dot``, ``tensordot``,
``vdot``, ``inner``, ``outer``, ``kron``, ``cross``, ``vecdot``, ``diag``,
``diagonal``, ``trace``, ``tril``, ``triu``, ``tril_indices``, ``triu_indices``."""
from __future__ import annotations

from ..array import Array, node_of
from ..ops import linalg as L, arrange as AR, matrices as M
from ..ops.axes import no_out


# -- linear algebra ----------------------------------------------------------

def einsum(subscripts, /, *operands, out=None, dtype=None, order="K", casting="safe",
           optimize=False, precision=None) -> Array:
    """Einstein summation over ``operands`` (``np.einsum``), lazily.

    Subscript strings (``...`` broadcasting included) and NumPy's
    operand-list form; ``dtype`` and ``casting`` as NumPy's.  ``optimize``
    is accepted and ignored (polyarray schedules contractions itself);
    ``out=`` must be None; ``precision`` as ``matmul``'s."""
    no_out(out, "einsum")
    return Array(L.einsum(node_of(subscripts), *map(node_of, operands), dtype=dtype,
                          casting=casting, precision=L.check_precision(precision, "einsum")))


def tensordot(a, b, axes=2, *, precision=None) -> Array:
    """Sum of products over the given ``axes`` of ``a`` and ``b``
    (``np.tensordot``), as one lazy contraction; ``precision`` as ``matmul``'s."""
    return Array(L.tensordot(node_of(a), node_of(b), axes,
                             L.check_precision(precision, "tensordot")))


def dot(a, b, out=None, *, precision=None) -> Array:
    """Dot product of ``a`` and ``b`` (``np.dot``: matrix product for 2-D,
    sum over the last axis of ``a`` and the second-to-last of ``b`` for N-D),
    lazily.  ``out=`` must be None; ``precision`` as ``matmul``'s."""
    no_out(out, "dot")
    return Array(L.dot(node_of(a), node_of(b), L.check_precision(precision, "dot")))


def matmul(x1, x2, /, out=None, *, precision=None) -> Array:
    """Matrix product with broadcast batches, ``x1 @ x2`` (``np.matmul``), lazily.

    Integer products wrap as NumPy's; float sums run in another order than
    NumPy's BLAS, so the last bits may differ.  ``out=`` must be None.
    ``precision`` (JAX's manner): "highest" (NumPy's float32 products),
    "tf32" or "bf16" (a float32 product's inputs rounded to TF32 or bfloat16
    on tensor cores, summed in float32: faster, about 3 or 2 decimal digits;
    where a target has a library for it, cuBLAS on CUDA; elsewhere
    "highest"); None: the default in force (``matmul_precision``,
    ``set_matmul_precision``; "highest" unless changed)."""
    no_out(out, "matmul")
    return Array(L.matmul(node_of(x1), node_of(x2), L.check_precision(precision)))


def set_matmul_precision(precision) -> str:
    """Set the process's default precision of matrix products built from
    now on (``matmul``'s ``precision``); returns the previous default."""
    return L.set_process_precision(precision)


def matmul_precision(precision):
    """Products built inside take ``precision`` where they name none (as
    JAX's ``default_matmul_precision``): ``with pa.matmul_precision("tf32"):
    y = x @ w``.  Per thread and context."""
    return L.precision_block(precision)


def vdot(a, b) -> Array:
    """Dot product of ``a`` and ``b`` flattened (``np.vdot``), as a lazy 0-d array."""
    return Array(L.vdot(node_of(a), node_of(b)))


def inner(a, b, *, precision=None) -> Array:
    """Sum of products over the last axes of ``a`` and ``b`` (``np.inner``),
    lazily; ``precision`` as ``matmul``'s."""
    return Array(L.inner(node_of(a), node_of(b), L.check_precision(precision, "inner")))


def outer(a, b, out=None) -> Array:
    """Outer product of ``a`` and ``b`` flattened (``np.outer``), lazily;
    ``out=`` must be None."""
    no_out(out, "outer")
    return Array(L.outer(node_of(a), node_of(b)))


def kron(a, b) -> Array:
    """Kronecker product of ``a`` and ``b`` (``np.kron``), lazily."""
    return Array(AR.kron(node_of(a), node_of(b)))


# -- matrices ----------------------------------------------------------------

def diag(v, k=0) -> Array:
    """A 1-D ``v`` as a square matrix with ``v`` on diagonal ``k``, or
    diagonal ``k`` of a 2-D ``v`` (``np.diag``), lazily."""
    return Array(M.diag(node_of(v), k))


def diagonal(a, offset=0, axis1=0, axis2=1) -> Array:
    """Diagonal ``offset`` of the ``axis1``/``axis2`` planes, as the last axis
    (``np.diagonal``): a read-only view, as NumPy's."""
    if isinstance(a, Array):
        return a.diagonal(offset, axis1, axis2)
    return Array(M.diagonal(node_of(a), offset, axis1, axis2))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None) -> Array:
    """Sum along diagonal ``offset`` of the ``axis1``/``axis2`` planes
    (``np.trace``), lazily; ``out=`` must be None."""
    no_out(out, "trace")
    return Array(M.trace(node_of(a), offset, axis1, axis2, dtype))


def tril(m, k=0) -> Array:
    """``m`` with the elements above diagonal ``k`` zeroed (``np.tril``), lazily."""
    return Array(M.tril(node_of(m), k))


def triu(m, k=0) -> Array:
    """``m`` with the elements below diagonal ``k`` zeroed (``np.triu``), lazily."""
    return Array(M.triu(node_of(m), k))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None) -> Array:
    """Cross product of (arrays of) 3-vectors (``np.cross``), lazily.

    2-vectors, deprecated by NumPy 2.0 and refused by NumPy 2.5, are refused
    with NumPy 2.5's ValueError whatever NumPy is installed."""
    return Array(M.cross(node_of(a), node_of(b), axisa, axisb, axisc, axis))


def vecdot(x1, x2, /, out=None, *, axis=-1) -> Array:
    """Dot product of vectors along ``axis``, the other axes broadcast
    (``np.vecdot``), lazily; ``out=`` must be None."""
    no_out(out, "vecdot")
    return Array(M.vecdot(node_of(x1), node_of(x2), axis))


def tril_indices(n, k=0, m=None) -> tuple:
    """Row and column indices of the lower triangle (at and below diagonal
    ``k``) of an ``(n, m)`` matrix (``np.tril_indices``): two int64 data arrays."""
    return tuple(Array(x) for x in M.triangle_indices("tril", n, k, m))


def triu_indices(n, k=0, m=None) -> tuple:
    """Row and column indices of the upper triangle (at and above diagonal
    ``k``) of an ``(n, m)`` matrix (``np.triu_indices``): two int64 data arrays."""
    return tuple(Array(x) for x in M.triangle_indices("triu", n, k, m))
