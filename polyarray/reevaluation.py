"""Values asked for outside ``pa.jit`` in a Python loop: no work done twice.

NumPy code run with ``import polyarray as np`` builds lazy arrays and asks
for a value where Python needs one (``while diff > tol:``, ``float(s)``,
``np.asarray(x)``).  Each such value is computed by a program of the DAG
behind it.  In a loop, the arrays of one iteration are built on those of
the one before, so without care the DAG of iteration ``k`` holds all ``k``
iterations, and each value asked for computes the whole history again: the
run is quadratic in the number of iterations.

So, where a value asked for would compute again work that an earlier value
asked for already computed (its DAG reaches a node that an earlier program
computed), the live arrays that reach such work are computed by the same
program and each is rebound to a leaf holding its value (as NumPy would
hold it): the next iteration builds on data, and its DAG is one iteration
deep.  The first value asked for of a DAG changes nothing, so code that
asks once (``np.asarray(result)`` at the end) keeps its whole DAG: one
fused program, every intermediate inspectable with ``pa.show``.

Arrays that read an unbound placeholder, shared variables and views are
never rebound (a view follows its root, which may be).  Inside ``pa.jit``
the graph breaks of ``polyarray.tracing`` do the same work on the device.
"""
from __future__ import annotations

import weakref

import numpy as np

from .array import TRACKED, Array
from .codegen.ir import nodes as N
from .ops import eager
from .ops.creation import array as data_leaf
from .program import compile as compile_, get_default_target

_COMPUTED = weakref.WeakSet()     # computing nodes of programs run for values asked for
_LIVE = []                        # weak references to the arrays made (see track)
_PRUNE_AT = [4096]


class _Live(list):
    """The bottom of ``array.TRACKED`` outside every ``pa.jit`` session: the
    arrays made, weakly (so a loop's arrays can be found when a value is
    asked for).  Pruned of dead references as it grows."""

    def append(self, ref):
        super().append(ref)
        if len(self) >= _PRUNE_AT[0]:
            self[:] = [r for r in self if r() is not None]
            _PRUNE_AT[0] = max(4096, 2 * len(self))

    def element_write(self):
        pass


def install():
    """Track arrays made outside sessions (the bottom of ``TRACKED``), and
    compute the values the eager functions ask for (``ops.eager``) here."""
    if not TRACKED or not isinstance(TRACKED[0], _Live):
        TRACKED.insert(0, _Live())
    if value not in eager.VALUE_HOOKS:
        eager.VALUE_HOOKS.append(value)


def outside_sessions() -> bool:
    return len(TRACKED) == 1 and isinstance(TRACKED[0], _Live)


def value(node, compute=None):
    """``node``'s value, computed by ``compute(nodes) -> values`` (default:
    one program on the default target); live arrays whose DAG would be
    computed again next time are computed by the same program and rebound
    to their values (module docstring)."""
    compute = compute or _compute
    order = N.topological_order([node])
    again = any(n in _COMPUTED for n in order if _computes(n))
    roots = _rebindable_roots() if again and outside_sessions() else []
    outputs = [node] + [r._node for r in roots if r._node is not node]
    values = compute(outputs)
    by_node = dict(zip(map(id, outputs), values))
    _remember(N.topological_order(outputs) if roots else order)
    for r in roots:
        r._node = data_leaf(np.asarray(by_node[id(r._node)]))
    return values[0]


def _compute(nodes):
    prog = compile_([Array(n) for n in nodes], target=get_default_target())
    return prog()


def _computes(n) -> bool:
    return not isinstance(n, (N.DataWrapper, N.Placeholder))


def _remember(order):
    for n in order:
        if _computes(n):
            _COMPUTED.add(n)


def _rebindable_roots():
    """Live arrays (roots, not views or shared variables) whose DAG reaches
    work computed before and reads no placeholder."""
    live = TRACKED[0]
    alive, roots, seen = [], [], set()
    for ref in live:
        a = ref()
        if a is None or id(a) in seen:
            continue
        seen.add(id(a))
        alive.append(ref)
        if type(a) is Array and _computes(a._node):
            roots.append(a)
    live[:] = alive
    if not roots:
        return []
    reads_placeholder, reaches_computed = {}, {}
    for n in N.topological_order([r._node for r in roots]):
        kids = n.children()
        reads_placeholder[id(n)] = isinstance(n, N.Placeholder) or any(
            reads_placeholder[id(c)] for c in kids)
        reaches_computed[id(n)] = (_computes(n) and n in _COMPUTED) or any(
            reaches_computed[id(c)] for c in kids)
    return [r for r in roots
            if reaches_computed[id(r._node)] and not reads_placeholder[id(r._node)]]
