"""Node builders that remember what they built.

Nodes are interned, so building ``x + 1`` twice gives one node, but only
after the builder has done its work (NumPy's dtype rules, the expression,
the digests): about 100 us a node.  A Python loop that a ``pa.jit`` function
traces again at every call, or whose iterations graph-break (each one then
builds the same DAG on the same placeholders), repeats that work for
nothing.  ``memoized`` builders look the call up first: the key is the
builder and its arguments (nodes by identity, scalars by type and exact
value, keys and shapes by structure), and the value is the node built,
held weakly.

A hit must be the node the builder would make.  Builders are pure functions
of their arguments, and nodes by identity are safe: a result is remembered
only when every node argument is the result or one of its children, so the
arguments live as long as the entry does and their ids are not reused.
Arguments that cannot be keyed (NumPy arrays, lists of nodes) skip the
table.
"""
from __future__ import annotations

import functools
import weakref

import numpy as np

from ..codegen.ir import nodes as N

_TABLE = weakref.WeakValueDictionary()


class _NoKey(Exception):
    pass


def _key(value):
    if isinstance(value, N.Node):
        return ("n", id(value))
    if value is np._NoValue:
        return ("novalue",)
    if value is None or value is Ellipsis or isinstance(value, (bool, str)):
        return (type(value).__name__, value)
    if isinstance(value, int):
        return ("i", value)
    if isinstance(value, float):
        return ("f", value.hex())
    if isinstance(value, complex):
        return ("c", value.real.hex(), value.imag.hex())
    if isinstance(value, np.generic):
        return ("g", value.dtype.str, value.tobytes())
    if isinstance(value, np.dtype):
        return ("d", value.str)
    if isinstance(value, type):
        return ("t", value.__module__, value.__qualname__)
    if isinstance(value, tuple):
        return ("T",) + tuple(_key(v) for v in value)
    if isinstance(value, slice):
        return ("s", _key(value.start), _key(value.stop), _key(value.step))
    raise _NoKey


def _nodes_in(values):
    for v in values:
        if isinstance(v, N.Node):
            yield v
        elif isinstance(v, tuple):
            yield from _nodes_in(v)
        elif isinstance(v, slice):
            yield from _nodes_in((v.start, v.stop, v.step))


def memoized(builder):
    """``builder`` (a pure function of its arguments returning a node) with
    its results remembered (see the module docstring)."""
    name = f"{builder.__module__}.{builder.__qualname__}"

    @functools.wraps(builder)
    def build(*args, **kwargs):
        try:
            key = (name, _key(args), _key(tuple(sorted(kwargs.items()))))
        except _NoKey:
            return builder(*args, **kwargs)
        found = _TABLE.get(key)
        if found is not None:
            return found
        out = builder(*args, **kwargs)
        if isinstance(out, N.Node):
            children = out.children()
            if all(n is out or any(n is c for c in children)
                   for n in _nodes_in(args + tuple(kwargs.values()))):
                _TABLE[key] = out
        return out
    return build
