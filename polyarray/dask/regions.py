"""The DAG rewritten for chunking: every IndexLambda made elementwise.

A chunk of an elementwise IndexLambda is the same expression on the
operands' chunks, so a run of them fuses into one program per block.  An
IndexLambda is *aligned* when each read ``_inK[...]`` indexes the operand's
axes by the output's (right-aligned, NumPy broadcasting; 0 on a length-1
axis) and no index variable is used as a value.  Other reads whose indices
are affine in one output index each (slices, flips, integer indices,
transposes, new axes) become views taken by dask (``x[1:5:2].T``) of the
materialized operand, read aligned; anything else (gathers, positions used
as values, diagonals) is refused with NotImplementedError naming the op.
Stand-in placeholders (``Leaf``) name the dask arrays that a region reads.
"""
from __future__ import annotations

import re

import numpy as np
import pymbolic.primitives as p
from pymbolic.mapper import IdentityMapper

from ..ir import nodes as N
from ..ir.expr import _children, broadcast_indices, read

_INDEX = re.compile(r"_(\d+)$")


def _walk_reads(expr):
    """(reads, positional): each binding read ``(name, index tuple)``, and
    whether an index variable is used outside a subscript."""
    reads, positional, stack = [], False, [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, p.Subscript) and isinstance(e.aggregate, p.Variable):
            index = e.index if isinstance(e.index, tuple) else (e.index,)
            reads.append((e.aggregate.name, tuple(index)))
        elif isinstance(e, p.Variable):
            if e.name.startswith("_in"):
                reads.append((e.name, ()))
            elif _INDEX.match(e.name):
                positional = True
        elif isinstance(e, p.Call):
            stack.extend(e.parameters)
        elif isinstance(e, p.ExpressionNode):
            stack.extend(_children(e))
        elif isinstance(e, tuple):
            stack.extend(e)
    return reads, positional


def is_fill(node) -> bool:
    """An IndexLambda whose value is the same everywhere (``full``,
    ``ones_like``): elementwise, so it joins a region instead of being made
    whole on the client."""
    reads, positional = _walk_reads(node.expr)
    return not reads and not positional


def aligned_read(index, child_shape, out_shape) -> bool:
    if len(index) != len(child_shape) or len(index) > len(out_shape):
        return False
    offset = len(out_shape) - len(child_shape)
    for j, (i, n) in enumerate(zip(index, child_shape)):
        a = offset + j
        if isinstance(i, p.Variable) and i.name == f"_{a}":
            if n != out_shape[a]:
                return False
        elif not (isinstance(i, (int, np.integer)) and i == 0 and n == 1):
            return False
    return True


def affine(e):
    """``{output axis: coefficient}, constant`` of an integer index
    expression, or None when it is not affine in the output indices."""
    if isinstance(e, (int, np.integer)) and not isinstance(e, (bool, np.bool_)):
        return {}, int(e)
    if isinstance(e, p.Variable):
        m = _INDEX.match(e.name)
        return ({int(m.group(1)): 1}, 0) if m else None
    if isinstance(e, p.Sum):
        coeffs, const = {}, 0
        for c in e.children:
            part = affine(c)
            if part is None:
                return None
            for k, v in part[0].items():
                coeffs[k] = coeffs.get(k, 0) + v
            const += part[1]
        return coeffs, const
    if isinstance(e, p.Product):
        coeffs, const = {}, 1
        for c in e.children:
            part = affine(c)
            if part is None or (coeffs and part[0]):
                return None
            if part[0]:
                coeffs = {k: v * const for k, v in part[0].items()}
                const = part[1] * const
            else:
                coeffs = {k: v * part[1] for k, v in coeffs.items()}
                const *= part[1]
        return coeffs, const
    return None


def view_of(index, child_shape, out_shape):
    """``(key, order, expand)`` taking the part of an operand that a read
    ``index`` sees, laid out along the reader's axes: ``x[key]``, then
    ``transpose(order)``, then ``expand`` (a key of None/slices adding
    length-1 axes); None if the read is no such view."""
    key, used = [], []
    for i, n in zip(index, child_shape):
        part = affine(i)
        if part is None:
            return None
        coeffs, b = part
        coeffs = {a: c for a, c in coeffs.items() if c != 0}
        if not coeffs:
            key.append(b)
            continue
        if len(coeffs) != 1:
            return None
        (a, s), = coeffs.items()
        if a in used:                   # a diagonal
            return None
        used.append(a)
        m = out_shape[a]
        if m == 0:
            key.append(slice(0, 0))
        elif s > 0:
            key.append(slice(b, b + s * (m - 1) + 1, s))
        else:
            stop = b + s * (m - 1) - 1
            key.append(slice(b, stop if stop >= 0 else None, s))
    order = tuple(sorted(range(len(used)), key=lambda k: used[k]))
    placed = sorted(used)
    expand = tuple(slice(None) if a in placed else None for a in range(len(out_shape)))
    return tuple(key), order, expand


class Leaf:
    """Stand-in placeholders for dask arrays (reductions, contractions,
    views, constants): the leaves that regions read."""

    def __init__(self):
        self.arrays = {}        # placeholder node -> dask array
        self._n = 0

    def make(self, array, dtype):
        self._n += 1
        node = N.Placeholder.make(tuple(int(n) for n in array.shape), np.dtype(dtype),
                                  f"\x00dask{self._n}")
        self.arrays[node] = array
        return node


class _Replace(IdentityMapper):
    def __init__(self, reads):
        self.reads = reads

    def map_subscript(self, expr, *args, **kwargs):
        if isinstance(expr.aggregate, p.Variable):
            index = expr.index if isinstance(expr.index, tuple) else (expr.index,)
            new = self.reads.get((expr.aggregate.name, tuple(index)))
            if new is not None:
                return new
        return super().map_subscript(expr, *args, **kwargs)

    def map_constant(self, expr, *args, **kwargs):      # NumPy scalars kept as they are
        return expr


def align(node, children, materialize, leaves):
    """``node`` (an IndexLambda over ``children``, already rewritten) as an
    aligned IndexLambda: its unaligned reads replaced by aligned reads of
    views.  ``materialize(child)`` gives a child's dask array."""
    reads, positional = _walk_reads(node.expr)
    if positional:
        raise NotImplementedError(
            f"pa.dask.evaluate: {node.op!r} uses positions as values; chunked evaluation "
            "runs only elementwise operations, broadcasts, slices and transposes on "
            "placeholder data (other IndexLambdas must not depend on placeholders)")
    by_name = dict(node.bindings)
    bindings = [(k, children[c]) for k, c in node.bindings]
    replaced = {}
    for name, index in reads:
        child = by_name[name]
        if not index and child.ndim == 0 or aligned_read(index, child.shape, node.shape):
            continue
        view = view_of(index, child.shape, node.shape)
        if view is None:
            raise NotImplementedError(
                f"pa.dask.evaluate: {node.op!r} reads its operand of shape {child.shape} "
                "at computed positions (index arithmetic beyond slices and transposes: a "
                "gather, fancy indexing, roll, tile, a diagonal), which cannot be cut into "
                "chunks; evaluate it on one device (pa.compile)")
        key, order, expand = view
        array = materialize(children[child])[key].transpose(order)[expand]
        stand_in = leaves.make(array, child.dtype)
        new_name = f"_in{len(bindings)}"
        bindings.append((new_name, stand_in))
        replaced[(name, index)] = read(new_name, broadcast_indices(stand_in.shape, node.shape))
    if not replaced and all(children[c] is c for _, c in node.bindings):
        return node
    expr = _Replace(replaced)(node.expr) if replaced else node.expr
    used = {name for name, _ in _walk_reads(expr)[0]}
    bindings = tuple((k, c) for k, c in bindings if k in used)
    return N.IndexLambda.make(node.shape, node.dtype, expr, bindings, node.op)
