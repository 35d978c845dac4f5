"""Human-readable views of a DAG: ``repr`` (one line) and ``pa.show`` (one
line per node, with shared nodes marked)."""
from __future__ import annotations

import numpy as np
import pymbolic.primitives as p

from . import nodes as N
from .expr import is_call, call_name

_INFIX = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/",
          "floor_divide": "//", "remainder": "%", "power": "**",
          "less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">=",
          "equal": "==", "not_equal": "!=", "bitwise_and": "&",
          "bitwise_or": "|", "bitwise_xor": "^"}
_PREFIX = {"negative": "-", "positive": "+", "invert": "~"}


def _fmt_type(node):
    return f"{node.dtype.name}[{','.join(map(str, node.shape))}]"


def _const(value):
    if isinstance(value, np.generic):
        return repr(value.item())
    return repr(value)


class _Renderer:
    """Renders a node as an expression; ``leaf(node)`` may cut the recursion."""

    def __init__(self, leaf, max_depth=6):
        self.leaf = leaf
        self.max_depth = max_depth

    def node(self, node, depth=0):
        short = self.leaf(node, depth)
        if short is not None:
            return short
        if depth >= self.max_depth:
            return "…"
        r = lambda n: self.node(n, depth + 1)    # noqa: E731
        if isinstance(node, N.IndexLambda):
            env = dict(node.bindings)
            if is_call(node.expr):
                return self.expr(node.expr, env, r)
            if node.bindings:
                return f"{node.op}({r(node.bindings[0][1])})"
            return node.op
        if isinstance(node, N.Reduce):
            return f"{node.op}({r(node.array)}, axis={node.axes})"
        if isinstance(node, N.Einsum):
            return f"einsum({node.subscripts!r}, {', '.join(map(r, node.operands))})"
        if isinstance(node, N.Reshape):
            return f"reshape({r(node.array)}, {node.shape})"
        if isinstance(node, N.Concatenate):
            return f"concatenate([{', '.join(map(r, node.arrays))}], axis={node.axis})"
        return type(node).__name__

    def expr(self, e, env, r):
        if is_call(e):
            name = call_name(e)
            args = [self.expr(a, env, r) for a in e.parameters]
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
                return r(env[var.name])
            return var.name
        if isinstance(e, (np.generic, int, float, bool)):
            return _const(e)
        return str(e)


def _leaf_repr(node, depth):
    if isinstance(node, N.Placeholder):
        return node.name
    if isinstance(node, N.DataWrapper):
        if node.size <= 4:
            return np.array2string(node.data, separator=", ")
        return f"<data {_fmt_type(node)}>"
    return None


def describe(node) -> str:
    """One line: shape, dtype and a readable (depth-limited) expression."""
    text = _Renderer(_leaf_repr).node(node)
    if len(text) > 400:
        text = text[:397] + "..."
    return f"pa.Array(shape={node.shape}, dtype={node.dtype.name}, expr={text})"


def format_dag(outputs) -> str:
    """One line per node in evaluation order; ``*`` marks shared nodes.
    ``outputs``: a node, or anything with a ``.node`` (the frontend's Array),
    or a list or dict of them."""
    if isinstance(outputs, dict):
        roots = list(outputs.values())
    elif isinstance(outputs, (list, tuple)):
        roots = list(outputs)
    else:
        roots = [outputs]
    roots = [getattr(r, "node", r) for r in roots]
    order = N.topological_order(roots)
    uses = N.use_counts(order)
    names = {id(n): f"%{k}" for k, n in enumerate(order)}

    def leaf(node, depth):
        return names[id(node)] if depth > 0 else None

    lines = []
    for n in order:
        if isinstance(n, N.Placeholder):
            body = f"placeholder {n.name!r}"
        elif isinstance(n, N.DataWrapper):
            body = "data"
        else:
            body = _Renderer(leaf, max_depth=2).node(n)
        mark = f"   * shared: {uses[id(n)]} uses" if uses[id(n)] > 1 else ""
        outs = [k for k, r in enumerate(roots) if r is n]
        out = f"   -> output {outs[0]}" if outs else ""
        lines.append(f"{names[id(n)]:>5} {_fmt_type(n):<22} = {body}{mark}{out}")
    return "\n".join(lines)
