"""Helpers to build the pymbolic expressions held by ``IndexLambda``.

Conventions (shared by every target):

* ``_0, _1, ...`` are the output index variables.
* ``_in0, _in1, ...`` name the bindings; ``_inK[i, j]`` reads one, and a 0-d
  binding is read as the bare variable ``_inK``.
* Value operations are ``Call(Variable(name), args)`` where ``name`` is a
  NumPy ufunc name (``add``, ``exp``, ``floor_divide``...), ``where``, or
  ``cast_<dtype>``.  Arguments already have the loop dtype.
* Constants are NumPy scalars of their exact dtype.
* Index expressions (inside subscripts, and the arguments of
  ``cast_<dtype>`` when an index is used as a value) use plain pymbolic
  integer arithmetic: Sum, Product, FloorDiv, Remainder, Comparison, If.
"""
from __future__ import annotations

import pymbolic.primitives as p


_VARIABLES: dict = {}    # name -> one shared Variable (fewer objects per node)


def variable(name: str) -> p.Variable:
    """``p.Variable(name)``, one object per name for the names every node
    uses (index variables, bindings, functions): a node then holds fewer
    objects, for Python's collector to walk, and its text is looked up
    (``nodes.expression_text``)."""
    var = _VARIABLES.get(name)
    if var is None:
        var = p.Variable(name)
        if len(_VARIABLES) < 4096:
            _VARIABLES[name] = var
    return var


def index_var(k: int) -> p.Variable:
    return variable(f"_{k}")


def index_vars(n: int) -> tuple:
    return tuple(index_var(k) for k in range(n))


def binding_name(k: int) -> str:
    return f"_in{k}"


def read(name: str, indices) -> p.Expression:
    indices = tuple(indices)
    if not indices:
        return variable(name)
    return p.Subscript(variable(name), indices)


def call(fn: str, *args) -> p.Call:
    return p.Call(variable(fn), tuple(args))


def cast(dtype, expr) -> p.Call:
    return call("cast_" + dtype.name, expr)


_BROADCASTS: dict = {}   # (in_shape, out_shape) -> broadcast_indices (shared tuples)


def broadcast_indices(in_shape, out_shape) -> tuple:
    """Indices reading an input of ``in_shape`` broadcast to ``out_shape``."""
    key = (tuple(in_shape), tuple(out_shape))
    idx = _BROADCASTS.get(key)
    if idx is None:
        idx = _broadcast_indices(*key)
        if len(_BROADCASTS) < 4096:
            _BROADCASTS[key] = idx
    return idx


def _broadcast_indices(in_shape, out_shape) -> tuple:
    offset = len(out_shape) - len(in_shape)
    idx = []
    for d, n in enumerate(in_shape):
        if n == 1 and out_shape[offset + d] != 1:
            idx.append(0)
        else:
            idx.append(index_var(offset + d))
    return tuple(idx)


def binding_reads(expr) -> dict:
    """Binding name -> the index tuple of each read of it in ``expr``, in
    order, repeats included (a bare 0-d read is ``()``).  A walk of the whole
    tree: pymbolic's ``repr`` elides subtrees past a few levels."""
    found = {}
    stack = [expr]
    while stack:
        e = stack.pop()
        t = type(e)
        if t is p.Variable:             # the common nodes first, by exact type
            if e.name.startswith("_in"):
                found.setdefault(e.name, []).append(())
        elif t is p.Call:
            stack.extend(e.parameters)
        elif t is tuple:
            stack.extend(e)
        elif t is int or t is str:
            pass
        elif isinstance(e, p.Subscript) and isinstance(e.aggregate, p.Variable):
            index = e.index if isinstance(e.index, tuple) else (e.index,)
            found.setdefault(e.aggregate.name, []).append(tuple(index))
            stack.extend(index)
        elif isinstance(e, p.Variable):
            if e.name.startswith("_in"):
                found.setdefault(e.name, []).append(())
        elif isinstance(e, p.Call):
            stack.extend(e.parameters)
        elif isinstance(e, p.ExpressionNode):
            stack.extend(c for c in _children(e))
        elif isinstance(e, tuple):
            stack.extend(e)
    return found


def called_functions(expr) -> list:
    """The name of the function of each call in ``expr`` (repeats kept), in the
    order of a depth-first walk (any pymbolic expression: frontend or
    loopy-level, whose dataclass fields are its children)."""
    found, stack = [], [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, p.Call):
            found.append(e.function.name)
            stack.extend(e.parameters)
        elif isinstance(e, p.ExpressionNode):
            stack.extend(getattr(e, f) for f in e.__dataclass_fields__)
        elif isinstance(e, tuple):
            stack.extend(e)
    return found


def _children(e):
    """The sub-expressions of an arithmetic, comparison, logic or If node."""
    if isinstance(e, p.If):
        return (e.condition, e.then, e.else_)
    if isinstance(e, p.Comparison):
        return (e.left, e.right)
    if isinstance(e, (p.FloorDiv, p.Remainder, p.Quotient)):
        return (e.numerator, e.denominator)
    if isinstance(e, p.LogicalNot):
        return (e.child,)
    if isinstance(e, p.Power):
        return (e.base, e.exponent)
    return getattr(e, "children", ())


def is_call(expr, name=None) -> bool:
    return (isinstance(expr, p.Call) and isinstance(expr.function, p.Variable)
            and (name is None or expr.function.name == name))


def call_name(expr) -> str:
    return expr.function.name
