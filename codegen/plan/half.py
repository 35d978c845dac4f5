"""float16 on the device targets: the DAG rewritten so that no node is
float16, before anything else sees it, computing as NumPy computes.

NumPy stores a half in two bytes and computes each float16 operation in
float32, rounding the result to half (its ``HALF_*`` loops; reductions and
products accumulate in float32 and round once).  So here:

- a float16 input is a ``uint16`` placeholder of the same name (the bound
  array's bytes as they are, host or device), read through
  ``from_half_bits``: a float32 holding the half's value, exactly;
- a float16 array of data is read as its bits the same way;
- every float16 node becomes its float32 computation followed by
  ``round_half`` (round to the nearest half, ties to even, as a float32),
  so each node's values are NumPy's half values held in float32; copies,
  reshapes, joins, maxima and minima move values and need no rounding;
- an expression's ``cast_float16`` becomes ``round_half`` (from float64
  without double rounding: ``emit/cfuncs``) and its float16 constants
  float32 ones;
- a float16 output is written as its bits (``half_bits``: ``uint16``
  storage), which the target returns as float16.

Temporaries computed in between are float32 buffers.  A raw kernel or a
library call on float16 values is refused, as before.

Where the target's BLAS has half products (cuBLAS: ``half_products``), a
float16 matrix product of at least ``BLAS_MIN_WORK`` multiply-adds becomes
the library call ``matmul_half`` on its operands' bits (the tensor cores'
HGEMM, summing in float32 and rounding once, as NumPy's float16 product;
NumPy's own ``matmul`` on the host where the library is missing), read back
through ``from_half_bits``.
"""
from __future__ import annotations

import numpy as np
import pymbolic.primitives as p
from pymbolic.mapper import IdentityMapper

from polyarray.ir import nodes as N
from polyarray.ir.expr import binding_name, call, index_vars, read

from .dtype_checks import describe_node, expr_float16

F16, F32, U16 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.uint16)
ROUNDED_REDUCTIONS = ("sum", "prod")     # max, min pick values: already halves


class _Single(IdentityMapper):
    """An expression with float16 constants as float32 ones and casts to
    float16 as ``round_half``."""

    def map_constant(self, expr):
        return np.float32(expr) if isinstance(expr, np.generic) and expr.dtype == F16 else expr

    def map_call(self, expr):
        params = tuple(self.rec(a) for a in expr.parameters)
        if getattr(expr.function, "name", "") == "cast_float16":
            return call("round_half", *params)
        return p.Call(expr.function, params)


def has_half(order) -> bool:
    """Whether a float16 node or value is in the DAG's ``order``."""
    for node in order:
        if node.dtype == F16:
            return True
        if isinstance(node, (N.IndexLambda, N.Recurrence)) and expr_float16(node.expr):
            return True
    return False


def _elementwise(fn, node, dtype, op) -> N.IndexLambda:
    """``fn(node[i...])`` elementwise, of ``dtype``."""
    name = binding_name(0)
    return N.IndexLambda.make(node.shape, dtype, call(fn, read(name, index_vars(node.ndim))),
                              ((name, node),), op)


def _bits_of_data(node) -> N.DataWrapper:
    """A float16 data leaf as its bits: the same array (the target uploads the
    original DAG's data by position, so the leaves stay one for one)."""
    return N.DataWrapper.make(node.shape, U16, node.data, node.content_digest + "/half bits")


def _bits(value) -> N.Node:
    """The half bits of a rewritten float16 value: the bits it was read
    from, else its value written as bits (exact: every float16 node's
    value is a half)."""
    if isinstance(value, N.IndexLambda) and value.op == "float16 read":
        return value.bindings[0][1]
    return _elementwise("half_bits", value, U16, "float16 bits")


def _half_product(node, new, thresholds):
    """Float16 Einsum ``node`` as the library call ``matmul_half`` on its
    operands' bits (``forms/library.build_product``'s params: A stored as
    ``[.., k, i]`` where ``transpose_a``...), its result read back; or None
    where it is no matrix product or too small."""
    from ..policy.classify import parse_subscripts, product_class, stored_layout
    from ..policy.rules import blas_sized
    from .materialize import transposed_view
    sub = parse_subscripts(node.subscripts)
    if not sub.matmul or not blas_sized(product_class(node), thresholds):
        return None
    orders, inputs = [], []
    for o, letters in zip(node.operands, sub.ins):
        src = transposed_view(o)        # x.T: x's bits, read transposed in place
        orders.append(letters if src is None else letters[::-1])
        inputs.append(_bits(new[id(o if src is None else src)]))
    bits = N.LibraryCallOutput.make(node.shape, U16, "matmul_half", stored_layout(sub, orders),
                                    tuple(inputs), ((node.shape, U16.str),), 0)
    return _elementwise("from_half_bits", bits, F32, "float16 read")


def _rewritten(node, new, single, half_products=None):
    def swap(v):
        if isinstance(v, N.Node):
            return new[id(v)]
        if type(v) is tuple:
            return tuple(swap(x) for x in v)
        return v
    half = node.dtype == F16
    cls = type(node)
    if isinstance(node, N.Placeholder):
        if not half:
            return node
        bits = N.Placeholder.make(node.shape, U16, node.name, node.shared)
        return _elementwise("from_half_bits", bits, F32, "float16 read")
    if isinstance(node, N.DataWrapper):
        if not half:
            return node
        return _elementwise("from_half_bits", _bits_of_data(node), F32, "float16 read")
    if isinstance(node, (N.RawKernelOutput, N.LibraryCallOutput)) and (
            half or any(c.dtype == F16 for c in node.children())):
        raise TypeError(f"{describe_node(node)} reads or makes float16 values: not on "
                        "device targets yet (use astype(np.float32) around it)")
    if half and half_products is not None and isinstance(node, N.Einsum):
        product = _half_product(node, new, half_products)
        if product is not None:
            return product
    values = {f: swap(getattr(node, f)) for f in N.field_names(cls)}
    if half:
        values["dtype"] = F32
    if isinstance(node, (N.IndexLambda, N.Recurrence)):
        expr = single(node.expr)
        moved = isinstance(expr, p.Subscript)       # a copy: already a half's value
        values["expr"] = call("round_half", expr) if half and not moved else expr
    made = cls.make(**values)
    if half and (isinstance(node, N.Einsum) or (isinstance(node, N.Reduce)
                                                 and node.op in ROUNDED_REDUCTIONS)):
        return _elementwise("round_half", made, F32, "float16 round")
    return made


def _check_data_positions(order, made, new):
    """The target binds data by position among the original DAG's data
    leaves: the rewritten DAG must hold them in the same order."""
    def data(nodes):
        return [n for n in nodes if isinstance(n, N.DataWrapper)]
    before = [id(new[id(n)].bindings[0][1]) if n.dtype == F16 else id(new[id(n)])
              for n in data(order)]
    after = [id(n) for n in data(N.topological_order(made))]
    if before != after:
        raise AssertionError("float16 rewrite: the data leaves changed order")


def singles_for_halves(outputs, half_products=None):
    """``(outputs, halves)``: the outputs of the DAG with float16 computed
    in float32 (unchanged where it has none), and the positions of the
    outputs whose buffers hold float16 bits (``uint16``).
    ``half_products``: the thresholds under which float16 matrix products
    become the BLAS's half products (None: the target has none)."""
    order = N.topological_order(outputs)
    if not has_half(order):
        return list(outputs), frozenset()
    single, new = _Single(), {}
    with N.collector_paused():
        for node in order:
            new[id(node)] = _rewritten(node, new, single, half_products)
    _check_data_positions(order, [new[id(o)] for o in outputs], new)
    outs, halves = [], set()
    for k, o in enumerate(outputs):
        if o.dtype == F16:
            value = new[id(o)]
            read = value.bindings[0][1] if isinstance(value, N.IndexLambda) \
                and value.op == "float16 read" else None
            # a half product's bits are the output as they are
            outs.append(read if isinstance(read, N.LibraryCallOutput) else
                        _elementwise("half_bits", value, U16, "float16 write"))
            halves.add(k)
        else:
            outs.append(new[id(o)])
    return outs, frozenset(halves)
