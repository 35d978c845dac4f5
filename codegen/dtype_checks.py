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
from pymbolic.mapper import WalkMapper

from .ir import nodes as N
from .ir.mapper import Mapper

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

    def map_raw_kernel_output(self, node, kind):
        return f"output {node.index} of raw kernel {node.kernel.name!r} ({kind})"


def describe_node(node) -> str:
    """A short, user-facing name for ``node``."""
    return _Describer()(node, f"{node.dtype.name}{list(node.shape)}")


class _Float16Finder(WalkMapper):
    """Finds a float16 cast or constant inside an IndexLambda expression."""

    def __init__(self):
        self.found = None

    def map_constant(self, expr, *args, **kwargs):
        if isinstance(expr, np.generic) and expr.dtype == F16 and self.found is None:
            self.found = "a float16 constant"

    def map_call(self, expr, *args, **kwargs):
        name = getattr(expr.function, "name", "")
        if name == "cast_float16" and self.found is None:
            self.found = "a conversion to float16"
        for par in expr.parameters:
            self.rec(par, *args, **kwargs)

    def map_variable(self, expr, *args, **kwargs):
        pass


def _expr_float16(expr):
    if isinstance(expr, np.generic):
        return "a float16 constant" if expr.dtype == F16 else None
    finder = _Float16Finder()
    finder.rec(expr)
    return finder.found


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
