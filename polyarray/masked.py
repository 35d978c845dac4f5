"""``x[mask] = f(x[mask])`` without a graph break.

Inside a ``pa.jit`` call, ``x[mask]`` with a lazily computed mask has a
length only the mask's values decide: the trace stops there (a graph
break) to compute it.  NumPy code often only transforms the selected
values and writes them back under the same mask (NPBench's nbody:
``r[r > 0] = r[r > 0] ** -1.5``, twice per time step), and then the
length never matters.  ``Selected`` is that selection kept in place: the
values of the whole array with the mask beside them.  Elementwise
operations with scalars, or with selections under the same mask, give
selections; writing one back under its mask is ``where(mask, v, x)``.
Anything else (its shape, a reduction, an index, another operand) takes
the selection as NumPy has it, through the graph break as before.

Only floating-point selections stay in place: an operation on the
elements the mask leaves out is computed and discarded, and for floats
that can raise nothing (integer operations may check their operands).
"""
from __future__ import annotations

import numbers
import weakref

import numpy as np

from .array import KEEP_SELECTION, TRACKED, Array, node_of
from .ir import nodes as N
from .ops import elementwise, eager

_ARRAY_NODE = Array._node       # the slot of a materialized selection's node


def select(x: Array, mask_node: N.Node):
    """``x[mask]`` kept in place, or None where it cannot be (not inside a
    ``pa.jit`` trace, not a full-shape mask, not floating point)."""
    if not eager.BREAK_HOOKS or mask_node.shape != x.shape or x.dtype.kind not in "fc" \
            or x.ndim == 0:
        return None
    return Selected(Array(x._node), Array(mask_node))


class Selected(Array):
    """The selection ``base[mask]`` as the whole array's values with the
    mask: NumPy's 1-D selection wherever it is looked at."""
    __slots__ = ("_full", "_mask", "_made")

    def __init__(self, full: Array, mask: Array):      # noqa: super().__init__ not called
        self._full, self._mask, self._made = full, mask, False

    @property
    def _node(self):
        if not self._made:          # as NumPy has it: through the graph break
            from .array import _concrete_masks
            from .ops import assign
            concrete = _concrete_masks(self._mask._node)
            if concrete is None:
                from .ops.indexing import NonConcreteBooleanIndexError
                raise NonConcreteBooleanIndexError(
                    "boolean mask indexing with a lazily computed mask needs the mask's "
                    "values; inside pa.jit they are computed at a graph break")
            _ARRAY_NODE.__set__(self, assign.getitem(self._full._node, concrete))
            self._made = True
            if TRACKED:             # an array as any other from now on
                TRACKED[-1].append(weakref.ref(self))
        return _ARRAY_NODE.__get__(self)

    @_node.setter
    def _node(self, node):
        _ARRAY_NODE.__set__(self, node)
        self._made = True

    def _same_mask(self, other) -> bool:
        return isinstance(other, Selected) and not other._made \
            and other._mask._node is self._mask._node

    def _operand(self, other):
        """``other``'s node for an elementwise operation kept in place, or None."""
        if self._same_mask(other):
            return other._full._node
        if isinstance(other, (numbers.Number, np.generic)) and not isinstance(other, Array):
            return other
        if isinstance(other, np.ndarray) and other.ndim == 0:
            return other
        if isinstance(other, Array) and not isinstance(other, Selected) and other.ndim == 0:
            return other._node
        return None

    def _apply(self, name, others, reflected=False):
        return _kept(name, [*others[::-1], self] if reflected else [self, *others])

    def write_into(self, x: Array, key) -> bool:
        """``x[key] = self`` as ``where(mask, self, x)`` where ``key`` is this
        selection's mask and ``x`` has its shape; False to write as before."""
        if self._made or node_of(key) is not self._mask._node or x.shape != self._full.shape:
            return False
        from .array import setitem
        value = elementwise.astype(self._full._node, x.dtype)
        setitem(x, Ellipsis, elementwise.where(self._mask._node, value, x._node))
        return True


def _binary(name, reflected=False):
    base = getattr(Array, ("__r" if reflected else "__") + _DUNDER[name] + "__")

    def method(self, other):
        kept = self._apply(name, [other], reflected)
        return kept if kept is not None else base(self, other)
    method.__name__ = base.__name__
    return method


def _unary(name):
    base = getattr(Array, "__" + _DUNDER[name] + "__")

    def method(self):
        kept = self._apply(name, [])
        return kept if kept is not None else base(self)
    method.__name__ = base.__name__
    return method


_DUNDER = {"add": "add", "subtract": "sub", "multiply": "mul", "divide": "truediv",
           "power": "pow", "negative": "neg", "absolute": "abs", "positive": "pos",
           "less": "lt", "less_equal": "le", "greater": "gt", "greater_equal": "ge",
           "equal": "eq", "not_equal": "ne"}
for _name in ("add", "subtract", "multiply", "divide", "power"):
    _d = _DUNDER[_name]
    setattr(Selected, f"__{_d}__", _binary(_name))
    setattr(Selected, f"__r{_d}__", _binary(_name, True))
for _name in ("less", "less_equal", "greater", "greater_equal", "equal", "not_equal"):
    setattr(Selected, f"__{_DUNDER[_name]}__", _binary(_name))
for _name in ("negative", "absolute", "positive"):
    setattr(Selected, f"__{_DUNDER[_name]}__", _unary(_name))
del _name, _d


def apply_ufunc(ufunc, inputs):
    """NumPy's elementwise ``ufunc`` on selections under one mask (and
    scalars), kept in place; None where it cannot be (an output given
    positionally, ``np.multiply(z, z, z)``, is a write: ``Array``'s)."""
    if ufunc.nout != 1 or len(inputs) != ufunc.nin or ufunc.__name__ not in _KEPT_UFUNCS:
        return None
    return _kept(ufunc.__name__, inputs)


def _kept(name, inputs):
    """The elementwise operation ``name`` on ``inputs`` (selections under
    the first one's mask, scalars) as a selection under that mask; None
    where an input is anything else or the result is not floating point
    or boolean."""
    first = next(i for i in inputs if isinstance(i, Selected))
    if first._made:
        return None
    nodes = [first._operand(i) for i in inputs]     # (first's own: its full values)
    if any(n is None for n in nodes):
        return None
    result = elementwise.apply_ufunc(name, *nodes)
    return Selected(Array(result), first._mask) if result.dtype.kind in "fcb" else None


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """NumPy's elementwise ufuncs on selections under one mask (and scalars)
    stay in place; everything else as for any array."""
    if method == "__call__" and not kwargs:
        kept = apply_ufunc(ufunc, inputs)
        if kept is not None:
            return kept
    return Array.__array_ufunc__(self, ufunc, method, *inputs, **kwargs)


# NumPy's floating-point ufuncs of one output that polyarray computes
_KEPT_UFUNCS = frozenset(
    "add subtract multiply divide true_divide power float_power negative positive absolute "
    "fabs reciprocal square sqrt cbrt exp exp2 expm1 log log2 log10 log1p sin cos tan arcsin "
    "arccos arctan sinh cosh tanh arcsinh arccosh arctanh maximum minimum fmax fmin hypot "
    "arctan2 less less_equal greater greater_equal equal not_equal".split())

Selected.__array_ufunc__ = _array_ufunc

def settle(result) -> None:
    """Take the selections among a traced function's results (nested in
    tuples, lists and dicts) as NumPy has them, while the trace can still
    compute their masks."""
    stack = [result]
    while stack:
        r = stack.pop()
        if isinstance(r, Selected):
            r._node         # noqa: B018  (materializes)
        elif isinstance(r, (tuple, list)):
            stack.extend(r)
        elif isinstance(r, dict):
            stack.extend(r.values())


KEEP_SELECTION.append(select)

__all__ = ["Selected", "apply_ufunc", "select", "settle"]
