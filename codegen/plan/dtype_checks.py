"""dtype checks for device targets, run once per compile before any lowering.

float16 is not supported on the device targets yet (OpenCL and CUDA need
``half`` extensions and loopy cannot map the dtype).  Instead of a failure
deep inside loopy ("unable to map dtype 'float16'") for ``x16.sum()``,
``x16 * y32`` or a float16 placeholder passed through unchanged, a device
target calls :func:`check_device_dtypes` first: any float16 node -- input,
intermediate or output -- or any float16 value inside an elementwise
expression gives a ``TypeError`` naming the node (the placeholder's name,
or the operation) and the advice.  The NumPy target supports float16 and
does not call this.
"""
from __future__ import annotations

import numpy as np
import pymbolic.primitives as p

from polyarray.ir import nodes as N
from polyarray.ir.mapper import Mapper

F16 = np.dtype(np.float16)
ADVICE = "float16 is not supported on device targets yet; use astype(np.float32)"


class _Describer(Mapper):
    """``map_<node>(node, kind)``: a short, user-facing name of the node;
    ``kind`` is its dtype and shape."""

    def map_placeholder(self, node, kind):
        return f"placeholder {node.name!r} ({kind})"

    def map_data_wrapper(self, node, kind):
        return f"a captured array (pa.array / NumPy operand, {kind})"

    def map_index_lambda(self, node, kind):
        return f"the result of {node.op} ({kind})"

    def map_reduce(self, node, kind):
        return f"the result of {node.op} over axes {node.axes} ({kind})"

    def map_einsum(self, node, kind):
        return f"the result of einsum({node.subscripts!r}) ({kind})"

    def map_reshape(self, node, kind):
        return f"the result of reshape ({kind})"

    def map_concatenate(self, node, kind):
        return f"the result of concatenate ({kind})"

    def map_recurrence(self, node, kind):
        return f"the result of a loop rolled into a recurrence ({kind})"

    def map_raw_kernel_output(self, node, kind):
        return f"output {node.index} of raw kernel {node.kernel.name!r} ({kind})"

    def map_library_call_output(self, node, kind):
        return f"output {node.index} of linalg.{node.op} ({kind})"


def describe_node(node) -> str:
    """A short, user-facing name for ``node``."""
    return _Describer()(node, f"{node.dtype.name}{list(node.shape)}")


def _expr_float16(expr):
    """What in ``expr`` is float16 (the first in a left-to-right walk), or
    None.  A plain walk over the expression's fields: it runs on every node
    of every device compile."""
    stack = [expr]
    while stack:
        e = stack.pop()
        t = type(e)
        if t is p.Variable or t is int or t is str:
            continue
        if isinstance(e, np.generic):
            if e.dtype == F16:
                return "a float16 constant"
        elif t is p.Call:
            if getattr(e.function, "name", "") == "cast_float16":
                return "a conversion to float16"
            stack.extend(reversed(e.parameters))
        elif isinstance(e, p.ExpressionNode):
            stack.extend(getattr(e, f) for f in reversed(N.field_names(t)))
        elif isinstance(e, tuple):
            stack.extend(reversed(e))
    return None


def check_device_dtypes(outputs, target="device") -> None:
    """Raise ``TypeError`` if the DAG under ``outputs`` (nodes, or
    ``pa.Array``s) has a float16 node or a float16 value anywhere.  Inputs
    are reported first (they come first in topological order), so the error
    names the placeholder a float16 computation starts from."""
    nodes = [getattr(o, "node", o) for o in outputs]
    on = "" if target == "device" else f" (on the {target} target)"
    for node in N.topological_order(nodes):
        if node.dtype == F16:
            hint = (" (declare the placeholder float32 and bind x.astype(np.float32))"
                    if isinstance(node, N.Placeholder) else "")
            raise TypeError(f"{describe_node(node)} is float16{on}: {ADVICE}{hint}")
        if isinstance(node, N.IndexLambda):
            found = _expr_float16(node.expr)
            if found:
                raise TypeError(f"{describe_node(node)} computes with {found}{on}: "
                                f"{ADVICE}")
