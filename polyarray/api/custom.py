"""``pa.elementwise_kernel`` and ``pa.reduction_kernel``: a few lines of C
for the one operation the library lacks, following CuPy's
``ElementwiseKernel`` / ``ReductionKernel``, run as part of everything
else: the nodes they make fuse with their neighbours on OpenCL and CUDA.
On the numpy target they run the Python ``reference`` given here.
The parsing, type rules and nodes live in ``ops/custom.py``."""
from __future__ import annotations

from ..array import Array, node_of
from ..ops import custom as X


def _wrap(nodes):
    return Array(nodes[0]) if len(nodes) == 1 else tuple(Array(n) for n in nodes)


class ElementwiseKernel:
    """A custom elementwise operation (``pa.elementwise_kernel``): calling it
    with arrays (broadcast as NumPy does) or scalars returns the lazy
    output, or a tuple of them for several ``out_params``."""

    def __init__(self, in_params, out_params, operation, name, preamble="",
                 reference=None):
        self._def = X.elementwise_def(in_params, out_params, operation, name, preamble,
                                      reference)

    @property
    def name(self):
        return self._def.name

    def __call__(self, *args):
        return _wrap(X.elementwise(self._def, [node_of(a) for a in args]))

    def __repr__(self):
        d = self._def
        return (f"pa.elementwise_kernel({d.name!r}: "
                f"{', '.join(p.ctype + ' ' + p.name for p in d.in_params)} -> "
                f"{', '.join(p.ctype + ' ' + p.name for p in d.out_params)})")


class ReductionKernel:
    """A custom reduction (``pa.reduction_kernel``): ``k(*args, axis=None,
    keepdims=False)`` maps the broadcast inputs with ``map_expr``, combines
    the values with ``reduce_expr`` from ``identity``, and applies
    ``post_map_expr`` to each result."""

    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr,
                 identity, name, reduce_type=None, preamble="", reference=None):
        self._def = X.reduction_def(in_params, out_params, map_expr, reduce_expr,
                                    post_map_expr, identity, name, reduce_type, preamble,
                                    reference)

    @property
    def name(self):
        return self._def.name

    def __call__(self, *args, axis=None, keepdims=False):
        return _wrap(X.reduction(self._def, [node_of(a) for a in args], axis, keepdims))

    def __repr__(self):
        d = self._def
        return (f"pa.reduction_kernel({d.name!r}: map {d.map_expr!r}, "
                f"reduce {d.reduce_expr!r}, identity {d.identity!r})")


def elementwise_kernel(in_params, out_params, operation, name, preamble="",
                       reference=None) -> ElementwiseKernel:
    """CuPy's ``ElementwiseKernel``: ``operation`` (C statements) assigns the
    outputs from the inputs, element by element.

    ``in_params``/``out_params`` are ``"<type> <name>, ..."`` with NumPy dtype
    names or one-letter placeholders (``"T x, T y"``) bound by the array
    arguments' dtypes; an array must match its parameter's dtype exactly,
    and Python/NumPy scalars are converted to it.  ``preamble`` is C placed
    before the function (helper functions, macros).  ``reference(*arrays)``
    computes the same with NumPy (a tuple for several outputs): the numpy
    target runs it, and refuses the kernel without one."""
    return ElementwiseKernel(in_params, out_params, operation, name, preamble, reference)


def reduction_kernel(in_params, out_params, map_expr, reduce_expr, post_map_expr, identity,
                     name, reduce_type=None, preamble="", reference=None) -> ReductionKernel:
    """CuPy's ``ReductionKernel``: ``map_expr`` of the inputs, combined by
    ``reduce_expr`` (of ``a`` and ``b``) starting from ``identity``, then
    ``post_map_expr`` assigns each output from the result ``a``.

    ``reduce_type`` is the accumulator's type (a NumPy name, a placeholder,
    or float/double/int; by default the first output's).  The call takes
    ``axis`` and ``keepdims`` as NumPy's reductions do.  ``reference(*arrays,
    axis=, keepdims=)`` computes the same with NumPy for the numpy target
    (``axis`` a tuple of axes of the broadcast inputs, ``keepdims`` False)."""
    return ReductionKernel(in_params, out_params, map_expr, reduce_expr, post_map_expr,
                           identity, name, reduce_type, preamble, reference)
