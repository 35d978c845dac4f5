"""``cumsum``, ``cumprod`` and the array API's ``cumulative_sum`` /
``cumulative_prod`` nodes.

A sum or product in a dtype of ``CALL_DTYPES`` is the library call
``cumsum``/``cumprod`` (``ir.nodes.SCAN_OPS``, param ``axis``): NumPy's own
loop on the numpy target; on a device target the policy chooses its
kernels (``codegen/plan/kernel_calls.py``): CUDA's scan kernels where
the target has them, else the blocked scan below, which every other scan
is at once.

Blocked scan: the scanned axis is cut into blocks of ``SCAN_BLOCK``; an in-block
inclusive scan is one ``Reduce`` over ``where(b <= c, x[block, b], identity)``
(NumPy's own sum/product per output, so NaN and inf stay where they are and
integers wrap exactly as NumPy's do: no ``0 * inf`` as in a triangular
matrix product); the blocks' totals are scanned the same way, recursively,
and one elementwise node adds each block's offset back.  A scan of ``n``
values is ``ceil(log_B n)`` reduction kernels and one elementwise kernel,
``B`` operations per value.  Integers are exact.  Floats are combined in
another order than NumPy's sequential loop: equal within the tolerances,
except that a product which overflows to inf in one order and meets a zero
in the other is NaN in one and 0 in the other.
"""
from __future__ import annotations

import numpy as np
import pymbolic.primitives as p

from ..ir import nodes as N
from ..ir.expr import binding_name, call, index_vars, read
from .axes import no_out, normalize_axis_index
from .creation import as_node, full
from .dtypes import check_dtype
from .elementwise import astype
from .shapes import ravel, reshape

# values per block (not tuned): each output reads its block (B loads from
# cache), and a scan of n values has ceil(log_B n) levels (2^16: 4 reductions)
SCAN_BLOCK = 16

# dtypes whose last-axis sums and products are library calls (the single-pass
# kernels' dtypes); bool, float16 and complex scans are blocked scans
CALL_DTYPES = frozenset({"float32", "float64", "int32", "int64", "uint32", "uint64"})
_IDENTITY = {"sum": 0, "prod": 1, "any": False, "all": True}
_COMBINE = {"sum": "add", "prod": "multiply", "any": "logical_or", "all": "logical_and"}
_X, _OFF = binding_name(0), binding_name(1)


def _scan(op, x, axis):
    """Inclusive scan of ``x`` along ``axis`` with reduction ``op``."""
    n = x.shape[axis]
    if n <= 1:
        return x
    if op in ("sum", "prod") and x.dtype.name in CALL_DTYPES and x.size > 0:
        return N.LibraryCallOutput.make(x.shape, x.dtype, "cum" + op, (("axis", axis),), (x,),
                                        ((x.shape, x.dtype.str),), 0)
    return blocked_scan(op, x, axis)


for _op in N.SCAN_OPS:
    N.register_composition(_op, lambda params, x, op=_op[3:]: blocked_scan(op, x,
                                                                           params["axis"]))


def blocked_scan(op, x, axis):
    """Inclusive scan of ``x`` along ``axis`` with reduction ``op`` as
    ``Reduce`` nodes over blocks of ``SCAN_BLOCK`` (``op``: sum, prod, any,
    all)."""
    n = x.shape[axis]
    if n <= 1:
        return x
    dtype = x.dtype
    identity = dtype.type(_IDENTITY[op])
    nb = -(-n // SCAN_BLOCK)
    size = SCAN_BLOCK if nb > 1 else n
    pre, post = x.shape[:axis], x.shape[axis + 1:]
    # in-block scans: body[pre, k, c, b, post] = x[pre, k*B + b, post] if b <= c
    # (one block: no k axis, and the reduction has the result's shape)
    blocks = (nb,) if nb > 1 else ()
    iv = index_vars(len(pre) + len(blocks) + 2 + len(post))
    c, b = iv[axis + len(blocks):axis + len(blocks) + 2]
    pos = size * iv[axis] + b if blocks else b
    keep = p.Comparison(b, "<=", c)
    if n % size:                               # the last block is short
        keep = call("logical_and", keep, p.Comparison(pos, "<", n))
        pos = p.If(p.Comparison(pos, "<", n), pos, n - 1)
    value = read(_X, iv[:axis] + (pos,) + iv[axis + len(blocks) + 2:])
    if op == "prod" and dtype.kind == "c":
        inblock = _complex_block_products(x, axis, blocks, size, n)
    else:
        body = N.IndexLambda.make(pre + blocks + (size, size) + post, dtype,
                                  call("where", keep, value, identity), ((_X, x),),
                                  f"cumulative {op}: block of {size}")
        inblock = N.Reduce.make(pre + blocks + (size,) + post, dtype, op, body,
                                (axis + len(blocks) + 1,))
    if not blocks:
        return inblock
    flat = reshape(inblock, pre + (nb * size,) + post)
    ov = index_vars(len(pre) + 1 + len(post))
    totals = N.IndexLambda.make(
        pre + (nb,) + post, dtype, read(_X, ov[:axis] + (ov[axis], size - 1) + ov[axis + 1:]),
        ((_X, inblock),), f"cumulative {op}: block totals")
    offsets = blocked_scan(op, totals, axis)
    q = ov[axis]
    here = read(_X, ov)
    before = read(_OFF, ov[:axis] + (p.If(p.Comparison(q, ">=", size),
                                          p.FloorDiv(q, size) - 1, 0),) + ov[axis + 1:])
    expr = call("where", p.Comparison(q, "<", size), here, call(_COMBINE[op], before, here))
    return N.IndexLambda.make(pre + (n,) + post, dtype, expr, ((_X, flat), (_OFF, offsets)),
                              f"cumulative {op}")


def _complex_block_products(x, axis, blocks, size, n):
    """In-block running products of complex ``x``, in ``log2(size)`` steps
    that each multiply an element by the one ``2**k`` before it (or keep
    it): no element is multiplied by the padding ``1 + 0j``, which NumPy's
    sequential loop never does and which is no identity of the complex
    ``*`` for infinite or NaN parts (``(1 + 0j) * (inf + 0j)`` is
    ``inf + nan j``)."""
    pre, post = x.shape[:axis], x.shape[axis + 1:]
    shape = pre + blocks + (size,) + post
    iv = index_vars(len(shape))
    c = iv[axis + len(blocks)]
    pos = size * iv[axis] + c if blocks else c
    if n % size:                               # the last block is short: any value
        pos = p.If(p.Comparison(pos, "<", n), pos, n - 1)
    y = N.IndexLambda.make(shape, x.dtype, read(_X, iv[:axis] + (pos,) + iv[axis + len(blocks) + 1:]),
                           ((_X, x),), f"cumulative prod: blocks of {size}")
    step = 1
    while step < size:
        back = read(_X, iv[:axis + len(blocks)] + (p.If(p.Comparison(c, ">=", step), c - step, 0),)
                    + iv[axis + len(blocks) + 1:])
        expr = call("where", p.Comparison(c, ">=", step), call("multiply", back, read(_X, iv)),
                    read(_X, iv))
        y = N.IndexLambda.make(shape, x.dtype, expr, ((_X, y),),
                               f"cumulative prod: products {step} apart")
        step *= 2
    return y


def _accumulate(op, a, axis, dtype, out, what, flatten_any=True, include_initial=False):
    no_out(out, what)
    node = as_node(a)
    if axis is None and node.ndim > 1 and not flatten_any:
        raise ValueError("For arrays which have more than one dimension ``axis`` "
                         "argument is required.")
    if axis is None or node.ndim == 0:        # NumPy: a 0-d array scans as 1-d
        node, axis = ravel(node), 0 if axis is None else axis
    axis = normalize_axis_index(axis, node.ndim)
    if dtype is None:                 # NumPy: small integers accumulate in int64 / uint64
        dtype = getattr(np, "cum" + op)(np.ones(1, node.dtype)).dtype
    dtype = check_dtype(dtype, what)
    node = astype(node, dtype)
    if dtype == np.bool_:             # add / multiply of booleans: or / and
        op = {"sum": "any", "prod": "all"}[op]
    result = _scan(op, node, axis)
    return _with_initial(result, axis, dtype.type(_IDENTITY[op])) if include_initial \
        else result


def _with_initial(x, axis, identity):
    """The identity, then ``x``, along ``axis`` (``include_initial=True``)."""
    shape = x.shape[:axis] + (x.shape[axis] + 1,) + x.shape[axis + 1:]
    if x.shape[axis] == 0:
        return full(shape, identity, x.dtype)
    iv = index_vars(len(shape))
    q = iv[axis]
    value = read(_X, iv[:axis] + (p.If(p.Comparison(q, ">", 0), q - 1, 0),) + iv[axis + 1:])
    return N.IndexLambda.make(shape, x.dtype,
                              call("where", p.Comparison(q, ">", 0), value, identity),
                              ((_X, x),), "cumulative: with initial")


def cumsum(a, axis=None, dtype=None, out=None) -> N.Node:
    """``np.cumsum``: ``axis=None`` scans the flattened array."""
    return _accumulate("sum", a, axis, dtype, out, "cumsum")


def cumprod(a, axis=None, dtype=None, out=None) -> N.Node:
    """``np.cumprod``: ``axis=None`` scans the flattened array."""
    return _accumulate("prod", a, axis, dtype, out, "cumprod")


def cumulative_sum(x, *, axis=None, dtype=None, out=None, include_initial=False) -> N.Node:
    """``np.cumulative_sum`` (the array API's): ``axis`` is required past 1-D;
    ``include_initial`` puts the identity (0) first."""
    return _accumulate("sum", x, axis, dtype, out, "cumulative_sum", False, include_initial)


def cumulative_prod(x, *, axis=None, dtype=None, out=None, include_initial=False) -> N.Node:
    """``np.cumulative_prod``: as ``cumulative_sum``, with 1 first."""
    return _accumulate("prod", x, axis, dtype, out, "cumulative_prod", False,
                       include_initial)
