"""Custom kernels on the NumPy target: the user's Python ``reference``
runs where the devices run the user's C (``codegen.user_functions``).

An elementwise kernel's call is evaluated inside its IndexLambda
(``numpy.exprs``).  A reduction kernel is three nodes (map, ``Reduce``,
post map); its reference takes the inputs and returns the final outputs,
so here the map evaluates to its broadcast arguments (``MapArgs``), the
``Reduce`` to the reference's outputs (``Results``) and each post map to
one of them."""
from __future__ import annotations

import numpy as np
import pymbolic.primitives as p

from polyarray.ir import nodes as N
from polyarray.codegen.user_functions import (any_registered, is_user_function,
                                               is_user_reduce, lookup, reference_of,
                                               user_calls)


class MapArgs(tuple):
    """A reduction kernel's inputs, broadcast (the value of its map node)."""


class Results(tuple):
    """A reduction kernel's outputs (the value of its ``Reduce`` node)."""


def check_references(order):
    """Refuse, at compile time, a custom kernel without a NumPy reference."""
    if not any_registered():
        return
    for node in order:
        names = user_calls(node.expr) if isinstance(node, N.IndexLambda) else \
            [node.op] if isinstance(node, N.Reduce) and is_user_reduce(node.op) else []
        for name in names:
            if reference_of(name) is None:
                fn = lookup(name)
                raise NotImplementedError(
                    f"{fn.kind} {fn.kernel!r} has no NumPy reference: the numpy target "
                    f"runs the Python function given as pa.{fn.kind}(..., reference=f); "
                    "pass one, or compile for 'opencl' or 'cuda' to run its C")


def _role(name):
    return lookup(name).role


def _outputs(fn, value, count):
    out = value if isinstance(value, tuple) else (value,)
    if len(out) != count:
        raise ValueError(f"the reference of {fn.kind} {fn.kernel!r} returned {len(out)} "
                         f"value(s), the kernel has {count} output(s)")
    return out


def call_elementwise(name, args):
    """The value of an elementwise kernel's output call, by its reference."""
    fn = lookup(name)
    k = int(fn.role[3:])
    value = _outputs(fn, reference_of(name)(*args), len(fn.variables))[k]
    return np.asarray(value).astype(fn.result, copy=False)


def special_node(node) -> bool:
    """A reduction kernel's map or post-map node (evaluated here)."""
    e = node.expr
    return (isinstance(e, p.Call) and is_user_function(e.function.name)
            and (_role(e.function.name) == "map" or _role(e.function.name).startswith("post")))


def evaluate_special(node, values, evaluate_arg):
    """A map node: its arguments broadcast; a post map: the result it
    names of its ``Reduce``'s reference outputs, checked."""
    name = node.expr.function.name
    fn, role = lookup(name), _role(name)
    if role == "map":
        args = [np.asarray(evaluate_arg(a)) for a in node.expr.parameters]
        return MapArgs(np.broadcast_to(a, node.shape) for a in args)
    results, k = values[id(node.bindings[0][1])], int(role[4:])
    if k >= len(results):
        raise ValueError(f"the reference of reduction_kernel {fn.kernel!r} returned "
                         f"{len(results)} value(s); the kernel has more outputs")
    value = np.asarray(results[k])
    if value.shape != node.shape:
        raise ValueError(f"the reference of reduction_kernel {fn.kernel!r} returned shape "
                         f"{value.shape} for output {k}; expected {node.shape}")
    return np.array(value.astype(node.dtype, copy=False), order="C")


def reduce_with_reference(node, args):
    """A custom ``Reduce``: the reference over the map node's arguments."""
    out = reference_of(node.op)(*args, axis=node.axes, keepdims=False)
    return Results(out if isinstance(out, tuple) else (out,))


__all__ = ["MapArgs", "Results", "call_elementwise", "check_references", "evaluate_special",
           "reduce_with_reference", "special_node"]
