"""The NumPy reference target: evaluates the DAG node by node with NumPy.

Every other target is checked against this one.  Each node is evaluated
exactly once (shared subexpressions included) and intermediates are freed
after their last use, so evaluation is O(N) in time and bounded in memory.
"""
from __future__ import annotations

import numpy as np
import pymbolic.primitives as p

from polyarray.ir import nodes as N
from polyarray.ir.mapper import Mapper
from polyarray.ir.printing import format_dag

from ..base import Executable, Target
from .exprs import NumpyExprEvaluator, evaluate_index_lambda
from . import custom as numpy_custom


def c_array(x) -> np.ndarray:
    """``x`` as a C-contiguous array, keeping 0-d arrays 0-d."""
    x = np.asarray(x)
    return x if x.flags.c_contiguous else np.ascontiguousarray(x)


class NumpyNodeEvaluator(Mapper):
    """``map_<node>(node, values, bindings) -> np.ndarray``."""

    def map_placeholder(self, node, values, bindings):
        return bindings[node.name]

    def map_data_wrapper(self, node, values, bindings):
        data = node.data        # a device-resident leaf (targets.foreign): a host copy
        return data if isinstance(data, np.ndarray) else np.asarray(data)

    def map_index_lambda(self, node, values, bindings):
        env = {name: values[id(child)] for name, child in node.bindings}
        if numpy_custom.special_node(node):     # a reduction kernel's map or post map
            return numpy_custom.evaluate_special(
                node, values, NumpyExprEvaluator(node.shape, env).rec)
        return evaluate_index_lambda(node.shape, node.dtype, node.expr, env)

    def map_reduce(self, node, values, bindings):
        x = values[id(node.array)]
        if isinstance(x, numpy_custom.MapArgs):      # a reduction kernel
            return numpy_custom.reduce_with_reference(node, x)
        if node.op in ("argmax", "argmin"):
            kept = [d for d in range(x.ndim) if d not in node.axes]
            x = np.transpose(x, kept + list(node.axes))
            x = x.reshape(x.shape[:len(kept)] + (int(np.prod(x.shape[len(kept):])),))
            return np.asarray(getattr(np, node.op)(x, axis=-1), dtype=np.int64)
        fn = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min,
              "any": np.any, "all": np.all}[node.op]
        kw = {"dtype": node.dtype} if node.op in ("sum", "prod") else {}
        return c_array(fn(x, axis=node.axes, **kw))

    def map_einsum(self, node, values, bindings):
        ops = [values[id(o)] for o in node.operands]
        out = np.einsum(node.subscripts, *ops, optimize=len(ops) > 1)
        return c_array(np.asarray(out, dtype=node.dtype))

    def map_reshape(self, node, values, bindings):
        return np.reshape(values[id(node.array)], node.shape)

    def map_concatenate(self, node, values, bindings):
        return np.concatenate([values[id(a)] for a in node.arrays], axis=node.axis)

    def map_recurrence(self, node, values, bindings):
        """Row by row, each row an IndexLambda of the others' shape whose
        ``_self`` reads the rows already computed."""
        from pymbolic.mapper.substitutor import substitute
        out = np.empty(node.shape, node.dtype)
        out[:node.lags] = values[id(node.init)]
        env = {name: values[id(child)] for name, child in node.bindings}
        env[N.Recurrence.SELF] = out
        inner = {f"_{k + 1}": p.Variable(f"_{k}") for k in range(node.ndim - 1)}
        for t in range(node.lags, node.shape[0]):
            row = substitute(node.expr, dict(inner, _0=t))
            out[t] = evaluate_index_lambda(node.shape[1:], node.dtype, row, env)
        return out

    def map_raw_kernel_output(self, node, values, bindings):
        """A raw kernel's ``reference`` (called once per launch), checked
        against the declared outputs."""
        done = self.__dict__.setdefault("_raw", {})
        if node.call not in done:
            done[node.call] = raw_reference(node, [values[id(a)] for a in node.inputs])
        return done[node.call][node.index]

    def map_library_call_output(self, node, values, bindings):
        """NumPy's ``linalg`` (LAPACK), once per call, its errors raised as
        NumPy raises them (``LinAlgError`` for a singular matrix)."""
        done = self.__dict__.setdefault("_library", {})
        if node.call not in done:
            from ..library import run_on_host
            done[node.call] = run_on_host(node, [values[id(a)] for a in node.inputs])
        return done[node.call][node.index]


def raw_reference(node, arrays):
    """The outputs of ``reference(*inputs, **scalars)`` for a raw kernel's
    launch, as declared: a value of the declared shape is cast to the
    declared dtype when NumPy casts it within its kind; else a ValueError."""
    spec = node.kernel
    got = spec.reference(*[np.array(a) for a in arrays], **dict(node.scalars))
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    if len(got) != len(node.outputs):
        raise ValueError(f"the reference of raw kernel {spec.name!r} returned {len(got)} "
                         f"array(s); {len(node.outputs)} are declared")
    out = []
    for k, (value, (shape, dt)) in enumerate(zip(got, node.outputs)):
        value, dt = np.asarray(value), np.dtype(dt)
        if value.shape != tuple(shape) or not np.can_cast(value.dtype, dt, "same_kind"):
            raise ValueError(f"the reference of raw kernel {spec.name!r} returned "
                             f"{value.dtype.name}{list(value.shape)} for output {k}, "
                             f"declared {dt.name}{list(shape)}")
        out.append(c_array(value.astype(dt, copy=False)))
    return out


def check_raw_kernels(order):
    """Refuse, when compiling, a raw kernel without a NumPy reference."""
    for n in order:
        if isinstance(n, N.RawKernelOutput) and n.kernel.reference is None:
            lang = {"cuda": "CUDA", "opencl": "OpenCL"}[n.kernel.language]
            raise ValueError(f"raw kernel {n.kernel.name!r} is written in {lang}; the numpy "
                             f"target cannot run it without reference= (a Python function "
                             f"of its inputs and scalars returning its outputs), or compile "
                             f"it for target={n.kernel.language!r}")


class NumpyExecutable(Executable):
    def __init__(self, outputs):
        self.outputs = outputs
        self.order = N.topological_order(outputs)
        numpy_custom.check_references(self.order)
        check_raw_kernels(self.order)
        last_use = {}
        for step, node in enumerate(self.order):
            for child in node.children():
                last_use[id(child)] = step
        keep = {id(o) for o in outputs}
        self._free_after = [[] for _ in self.order]
        for node in self.order:
            if id(node) in last_use and id(node) not in keep:
                self._free_after[last_use[id(node)]].append(id(node))
        self.nodes_evaluated = 0

    @property
    def source(self) -> str:
        return ("# NumPy reference: one NumPy evaluation per node\n"
                + format_dag(self.outputs))

    @property
    def kernels(self) -> dict:
        return {}

    def kernel_times(self, bindings) -> list:
        from .timing import kernel_times
        return kernel_times(self, bindings)

    def run(self, bindings):
        evaluator = NumpyNodeEvaluator()
        values = {}
        with np.errstate(all="ignore"):
            for step, node in enumerate(self.order):
                values[id(node)] = evaluator.rec(node, values, bindings)
                self.nodes_evaluated += 1
                for dead in self._free_after[step]:
                    del values[dead]
        results = []
        for o in self.outputs:
            v = values[id(o)]
            if isinstance(o, (N.Placeholder, N.DataWrapper)) or not v.flags.writeable:
                v = np.array(v)     # never hand out the caller's or our own buffer
            results.append(v)
        return results


class NumpyTarget(Target):
    name = "numpy"

    @classmethod
    def availability(cls):
        return True, "NumPy is always available"

    def import_binding(self, value):
        """Another library's CUDA array: a host copy (the reference reads
        host memory)."""
        from ..foreign import cuda_view, is_foreign_cuda, to_host
        return to_host(cuda_view(value)) if is_foreign_cuda(value) else value

    def binding_info(self, value):
        if isinstance(value, (np.ndarray, np.generic)):
            return value.shape, value.dtype
        return None

    def prepare_binding(self, value):
        return c_array(value)

    def compile(self, outputs, schedule=None, **options):
        if schedule:
            from polyarray.codegen.schedule import ScheduleError
            raise ScheduleError("the numpy target runs no kernels: schedules apply to the "
                                "opencl and cuda targets")
        if options:
            raise TypeError(f"numpy target: unknown options {sorted(options)}")
        return NumpyExecutable(outputs)
