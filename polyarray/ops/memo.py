"""Node builders that remember what they built.

Nodes are interned, so building ``x + 1`` twice gives one node, but only
after the builder has done its work (NumPy's dtype rules, the expression,
the digests): about 100 us a node.  A Python loop that a ``pa.jit`` function
traces again at every call, or whose iterations graph-break (each one then
builds the same DAG on the same placeholders), repeats that work for
nothing.  ``memoized`` builders look the call up first: the key is the
builder and its arguments (nodes themselves, compared by identity;
scalars by type and exact value; keys and shapes by structure), and the value is the node built,
held weakly.

A hit must be the node the builder would make.  Builders are pure functions
of their arguments; a result is remembered only when every node argument is
the result or one of its children (so the key keeps nothing alive that the
result does not).
Arguments that cannot be keyed (NumPy arrays, lists of nodes) skip the
table.
"""
from __future__ import annotations

import collections
import functools
import weakref

import numpy as np

from ..ir import nodes as N

_TABLE = {}           # key -> weak reference to the node built
# the last results built, held strongly: a loop whose iterations rebuild the
# same nodes after their predecessors died (a graph break rebinds the arrays
# that held them) still finds them
_RECENT = collections.deque(maxlen=8192)


class _NoKey(Exception):
    pass


def _tuple_key(value):
    return ("T",) + tuple([_key(v) for v in value])


_NONE = ("None",)
_NODE_TYPES = frozenset((N.Placeholder, N.DataWrapper, N.IndexLambda, N.Reduce, N.Einsum,
                         N.Reshape, N.Concatenate, N.RawKernelOutput,
                         N.LibraryCallOutput))
_PLAIN = (int, type(None))


def _key(value):
    """Exact types first, in the order a traced loop passes them (nodes,
    integers, slices, tuples): this runs for every argument of every
    operation traced.  Nodes stand for themselves (hashed once, equal only
    to themselves); scalars carry their type, so 1, 1.0 and True differ,
    and floats their bits, so -0.0 and 0.0 differ."""
    t = type(value)
    if t in _NODE_TYPES or t is str:
        return value
    if t is int:
        return ("i", value)
    if t is slice:
        a, b, c = value.start, value.stop, value.step
        if type(a) in _PLAIN and type(b) in _PLAIN and type(c) in _PLAIN:
            return ("s", a, b, c)
        return ("s", _key(a), _key(b), _key(c))
    if t is tuple:
        return _tuple_key(value)
    if t is float:
        return ("f", value.hex())
    if value is None:
        return _NONE
    if t is bool:
        return ("b", value)
    if value is Ellipsis:
        return ("...",)
    if isinstance(value, N.Node):
        return value
    if value is np._NoValue:
        return ("novalue",)
    if isinstance(value, complex):
        return ("c", value.real.hex(), value.imag.hex())
    if isinstance(value, np.generic):
        return ("g", value.dtype.str, value.tobytes())
    if isinstance(value, np.dtype):
        return ("d", value.str)
    if isinstance(value, type):
        return ("t", value.__module__, value.__qualname__)
    raise _NoKey


def _call_key(name, args, kwargs):
    """The table's key of builder ``name`` called with ``args`` and ``kwargs``."""
    return (name, _tuple_key(args), _tuple_key(tuple(sorted(kwargs.items())))
            if kwargs else ())


def memoized(builder):
    """``builder`` (a pure function of its arguments returning a node) with
    its results remembered (see the module docstring)."""
    name = f"{builder.__module__}.{builder.__qualname__}"

    @functools.wraps(builder)
    def build(*args, **kwargs):
        try:
            key = _call_key(name, args, kwargs)
        except _NoKey:
            return builder(*args, **kwargs)
        ref = _TABLE.get(key)
        if ref is not None:
            found = ref()
            if found is not None:
                return found
        out = builder(*args, **kwargs)
        if isinstance(out, N.Node):
            _TABLE[key] = weakref.ref(out, functools.partial(_forget, key))
            _RECENT.append(out)
        return out
    build.memo_name = name
    return build


def peek(build, *args):
    """The node that memoized ``build`` made of ``args`` before, if it is
    still alive, else None: nothing is built."""
    try:
        key = _call_key(build.memo_name, args, {})
    except _NoKey:
        return None
    ref = _TABLE.get(key)
    return ref() if ref is not None else None


def _forget(key, ref, table=_TABLE):
    """The result of ``key`` died: drop its entry (not a newer one).  The
    table is bound here: at interpreter exit the module's globals may be
    gone before the last nodes."""
    if table.get(key) is ref:
        del table[key]
