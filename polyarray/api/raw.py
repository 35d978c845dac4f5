"""``pa.raw_kernel``: a hand-written CUDA or OpenCL kernel as a DAG node.

The frontend only unwraps Arrays, calls the functions that give output
declarations and launch sizes, and wraps the nodes; the checks are
``ops.raw``'s, the lowering ``codegen/forms/raw.py``'s (see docs/design/user-kernels.md,
"Raw kernels")."""
from __future__ import annotations

from ..array import Array, node_of
from ..ops import raw as R


class RawKernel:
    """A hand-written kernel; calling it on arrays makes one launch, a DAG
    node per declared output (see :func:`raw_kernel`)."""

    def __init__(self, spec, outputs, grid, block):
        self.spec, self._outputs, self._grid, self._block = spec, outputs, grid, block

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def language(self) -> str:
        return self.spec.language

    @property
    def params(self) -> tuple:
        """``(role, name, C type, dtype)`` per parameter, in order."""
        return self.spec.params

    def __repr__(self):
        sig = ", ".join(f"{role} {ctype} {name}" for role, name, ctype, _ in self.spec.params)
        return f"<raw {self.spec.language} kernel {self.spec.name}({sig})>"

    def __call__(self, *args, **kwargs) -> tuple:
        """``k(*inputs, *scalars, **scalars)`` -> a tuple of Arrays, one per
        output.  Positional arguments fill the input and scalar parameters
        in their order in the signature (outputs are left out); keywords
        name scalars."""
        spec, kname = self.spec, self.spec.name
        free = [p for p in spec.params if p[0] != "out"]
        if len(args) > len(free):
            raise TypeError(f"raw kernel {kname!r} takes {len(free)} arguments (inputs and "
                            f"scalars: {', '.join(p[1] for p in free)}), got {len(args)}")
        inputs, scalars = [], {}
        for value, (role, name, *_rest) in zip(args, free):
            if role == "in":
                inputs.append(value)
            else:
                scalars[name] = value
        for name, value in kwargs.items():
            if name in scalars:
                raise TypeError(f"raw kernel {kname!r} got multiple values for {name!r}")
            if any(p[1] == name and p[0] == "in" for p in spec.params):
                raise TypeError(f"raw kernel {kname!r}: pass input array {name!r} by "
                                "position, in the signature's order")
            scalars[name] = value
        R.check_arguments(spec, len(inputs), scalars)   # before the user's functions
        arrays = [x if isinstance(x, Array) else Array(R.as_node(x)) for x in inputs]

        def given(value):               # a function of the call's arguments, or a value
            return value(*arrays, **scalars) if callable(value) else value
        nodes = R.call(spec, [node_of(a) for a in arrays], scalars, given(self._outputs),
                       given(self._grid), given(self._block))
        return tuple(Array(n) for n in nodes)


def raw_kernel(source, name, *, outputs, grid, block, language="cuda", params=None,
               reference=None) -> RawKernel:
    """A hand-written kernel (PyCUDA's ``SourceModule`` style) as a lazy
    operation: ``k = pa.raw_kernel(source, "saxpy", outputs=..., grid=...,
    block=...)``; ``k(x, y, n=...)`` returns a tuple of Arrays, one per
    output, computed by one launch of the kernel in order with the fused
    kernels around it (its inputs are C-order buffers that earlier kernels
    computed, its outputs buffers that later kernels read).

    ``source``: CUDA (``__global__ void name(...)``; wrapped in ``extern
    "C"`` unless it says ``extern "C"`` itself) or OpenCL (``__kernel void
    name(__global ...)``), after ``language``.  Parameters (read from the
    source, or ``params="const float *x, float *out, int n"``): pointers to
    const (or ``__constant``) are input arrays, other pointers output arrays,
    in their order; the rest are scalars, passed by value.  Pointer types
    must match the arrays' dtypes (``bool`` arrays are ``unsigned char``).
    The kernel must not write its inputs and must write every output element
    (and check its own bounds: the launch is ``grid`` x ``block``).

    ``outputs``: ``[(shape, dtype), ...]`` (or one pair); ``grid``: work-groups
    (CUDA blocks) per axis; ``block``: work-items (threads) per group: ints or
    tuples of up to 3.  Each may also be a function of the call's arguments
    (``lambda x, y, n: (x.shape, x.dtype)``).  A grid of 0 launches nothing.

    It runs on the target of its language; compiling for another device
    target is a ValueError naming it.  The numpy target runs ``reference``
    (called as the kernel is, ``reference(*inputs, **scalars)`` on NumPy
    arrays, returning the outputs), or refuses the program without one."""
    spec = R.make_spec(source, name, language, params, reference)
    return RawKernel(spec, outputs, grid, block)


__all__ = ["RawKernel", "raw_kernel"]
