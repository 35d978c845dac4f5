"""Human-readable views of a DAG: ``repr`` (one line) and ``pa.show`` (one
line per node, with shared nodes marked)."""
from __future__ import annotations

import functools

import numpy as np
import pymbolic.primitives as p

from . import nodes as N
from .expr import is_call, call_name
from .mapper import Mapper

_INFIX = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/",
          "floor_divide": "//", "remainder": "%", "power": "**",
          "less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">=",
          "equal": "==", "not_equal": "!=", "bitwise_and": "&",
          "bitwise_or": "|", "bitwise_xor": "^"}
_PREFIX = {"negative": "-", "positive": "+", "invert": "~"}


def _fmt_type(node):
    return f"{node.dtype.name}[{','.join(map(str, node.shape))}]"


def _const(value):
    if isinstance(value, np.floating):
        return str(value)       # the shortest digits of its own type: float32 0.1 is "0.1"
    if isinstance(value, np.generic):
        return repr(value.item())
    return repr(value)


def _cut_deep(render):
    """An inner node's ``map_`` method: "…" once ``max_depth`` levels deep."""
    @functools.wraps(render)
    def method(self, node, depth):
        if depth >= self.max_depth:
            return "…"
        return render(self, node, depth)
    return method


class _Renderer(Mapper):
    """``map_<node>(node, depth) -> str``: a node as an expression.  The
    subclasses say how leaves and operands (``operand``) are written."""
    max_depth = 6

    def operand(self, node, depth):
        """An operand of a node rendered at ``depth``."""
        return self.rec(node, depth + 1)

    @_cut_deep
    def map_index_lambda(self, node, depth):
        if N.is_written(node):      # a mark for the recurrence pass: the value itself
            return self.rec(node.bindings[0][1], depth)
        env = dict(node.bindings)
        if not node.bindings and "(" in node.op:
            return node.op      # a constant of indices, as it was made: arange(0, 5, 1)
        if is_call(node.expr):
            return self.expr(node.expr, env, depth)
        if node.bindings:
            return f"{node.op}({self.operand(node.bindings[0][1], depth)})"
        return node.op

    @_cut_deep
    def map_reduce(self, node, depth):
        return f"{node.op}({self.operand(node.array, depth)}, axis={node.axes})"

    @_cut_deep
    def map_einsum(self, node, depth):
        operands = ", ".join(self.operand(o, depth) for o in node.operands)
        extra = f", precision={node.precision!r}" if node.precision != "highest" else ""
        return f"einsum({node.subscripts!r}, {operands}{extra})"

    @_cut_deep
    def map_reshape(self, node, depth):
        return f"reshape({self.operand(node.array, depth)}, {node.shape})"

    @_cut_deep
    def map_concatenate(self, node, depth):
        arrays = ", ".join(self.operand(a, depth) for a in node.arrays)
        return f"concatenate([{arrays}], axis={node.axis})"

    @_cut_deep
    def map_recurrence(self, node, depth):
        env = dict(node.bindings)
        env[N.Recurrence.SELF] = node
        return (f"recurrence(rows {node.lags}.. = {self.expr(node.expr, env, depth)}, "
                f"first rows {self.operand(node.init, depth)})")

    @_cut_deep
    def map_raw_kernel_output(self, node, depth):
        args = [self.operand(a, depth) for a in node.inputs]
        args += [f"{k}={v!r}" for k, v in node.scalars]
        out = f"[{node.index}]" if len(node.outputs) > 1 else ""
        return f"raw_kernel {node.kernel.name!r}({', '.join(args)}){out}"

    @_cut_deep
    def map_library_call_output(self, node, depth):
        args = [self.operand(a, depth) for a in node.inputs]
        args += [f"{k}={v!r}" for k, v in node.params]
        out = f"[{node.index}]" if len(node.outputs) > 1 else ""
        if node.op in N.SORT_OPS:               # a sort of one row: along the last axis
            args.append("axis=-1")
        return f"{N.library_name(node.op)}({', '.join(args)}){out}"

    def expr(self, e, env, depth):
        """An IndexLambda's expression; ``env``: binding name -> node."""
        if is_call(e):
            name = call_name(e)
            args = [self.expr(a, env, depth) for a in e.parameters]
            if name.startswith("cast_"):
                return args[0] if len(args[0]) < 40 else f"{name[5:]}({args[0]})"
            if name in _INFIX and len(args) == 2:
                return f"({args[0]} {_INFIX[name]} {args[1]})"
            if name in _PREFIX:
                return f"{_PREFIX[name]}{args[0]}"
            return f"{name}({', '.join(args)})"
        if isinstance(e, (p.Subscript, p.Variable)):
            var = e.aggregate if isinstance(e, p.Subscript) else e
            if var.name in env:
                return self.operand(env[var.name], depth)
            return var.name
        if isinstance(e, (np.generic, int, float, bool)):
            return _const(e)
        return str(e)


class _Repr(_Renderer):
    """``repr``: the whole expression (to ``max_depth``), placeholders by
    name, small captured arrays by value."""

    def map_placeholder(self, node, depth):
        return node.name

    def map_data_wrapper(self, node, depth):
        if node.size <= 4 and isinstance(node.data, np.ndarray):
            return np.array2string(node.data, separator=", ")
        return f"<data {_fmt_type(node)}>"


class _Listing(_Renderer):
    """One line of ``format_dag``: operands by their lines' names (``%k``)."""

    def __init__(self, names):
        self.names = names

    def operand(self, node, depth):
        return self.names[id(node)]

    def map_placeholder(self, node, depth):
        return f"placeholder {node.name!r}"

    def map_data_wrapper(self, node, depth):
        return "data"


def describe(node) -> str:
    """One line: shape, dtype and a readable (depth-limited) expression."""
    text = _Repr()(node, 0)
    if len(text) > 400:
        text = text[:397] + "..."
    return f"pa.Array(shape={node.shape}, dtype={node.dtype.name}, expr={text})"


def _roots(outputs):
    if isinstance(outputs, dict):
        roots = list(outputs.values())
    elif isinstance(outputs, (list, tuple)):
        roots = list(outputs)
    else:
        roots = [outputs]
    return [getattr(r, "node", r) for r in roots]


def dag_listing(outputs) -> list:
    """Per node in evaluation order: ``(name, type, body, uses, output)``
    (``%k``, ``float32[3,4]``, the expression over ``%k`` names, how many
    nodes read it, the first output it is or None): what ``format_dag``
    prints, as data (the Graphviz view reads it too)."""
    roots = _roots(outputs)
    order = N.topological_order(roots)
    uses = N.use_counts(order)
    names = {id(n): f"%{k}" for k, n in enumerate(order)}
    listing = _Listing(names)
    rows = []
    for n in order:
        outs = [k for k, r in enumerate(roots) if r is n]
        rows.append((names[id(n)], _fmt_type(n), listing(n, 0), uses[id(n)],
                     outs[0] if outs else None))
    return rows


def format_dag(outputs) -> str:
    """One line per node in evaluation order; ``*`` marks shared nodes.
    ``outputs``: a node, or anything with a ``.node`` (the frontend's Array),
    or a list or dict of them."""
    lines = []
    for name, typ, body, uses, out in dag_listing(outputs):
        mark = f"   * shared: {uses} uses" if uses > 1 else ""
        out = f"   -> output {out}" if out is not None else ""
        lines.append(f"{name:>5} {typ:<22} = {body}{mark}{out}")
    return "\n".join(lines)
