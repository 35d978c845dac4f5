"""Functions whose output shape depends on the input's values (``unique``,
``nonzero``, ``argwhere``, ``flatnonzero``, one-argument ``where``) are
eager: the input is evaluated when the function is called (data leaves are
read directly, anything else is evaluated by the caller's ``evaluate``, the
default target), NumPy computes the result, and it comes back as data
leaves.  An input that still depends on placeholders cannot be evaluated
yet, and is refused naming them."""
from __future__ import annotations

import linecache
import os
import sys

import numpy as np

from ..ir import nodes as N
from .creation import array, shared_of


class LazyValueError(TypeError):
    """A value (``bool``, ``float``, an index, a NumPy array, or the input of
    an eager function) was asked of an expression whose placeholders are not
    bound yet."""


ConcretizationError = LazyValueError        # JAX's name for it

# ``hook(node, what)``: the value of ``node`` where a pa.jit call with graph
# breaks is tracing (polyarray.tracing.Session.value), or None where ``node``
# reads no placeholder; the innermost session last
BREAK_HOOKS = []
# ``hook(node)``: the NumPy value of a node that reads no unbound placeholder,
# asked for outside pa.jit (polyarray.reevaluation: no work computed twice)
VALUE_HOOKS = []


def value_now(node, evaluate):
    """``node``'s value outside a graph break: through the hook where one
    is installed, else ``evaluate(node)``."""
    return np.asarray(VALUE_HOOKS[-1](node) if VALUE_HOOKS else evaluate(node))


def value_at_break(node, what):
    """``node``'s NumPy value from the active graph-break session, or None
    (no session, or nothing to compute there)."""
    return BREAK_HOOKS[-1](node, what) if BREAK_HOOKS else None


_POLYARRAY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_NUMPY = os.path.dirname(np.__file__)


def user_line() -> str:
    """``file:line: source`` of the innermost caller outside polyarray and
    NumPy (where a value was asked for)."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith((_POLYARRAY, _NUMPY,
                                                              "<polyarray")):
        f = f.f_back
    if f is None:
        return "?"
    src = linecache.getline(f.f_code.co_filename, f.f_lineno).strip()
    return f"{f.f_code.co_filename}:{f.f_lineno}: {src}"


def require_bound(node, subject, advice):
    """Raise ``LazyValueError`` if ``node`` depends on placeholders: the one
    message of every eager hook and eager function, naming them and the
    user's line.  A shared variable's placeholder is bound by its variable."""
    names = sorted(name for name, ph in N.placeholders([node]).items()
                   if shared_of(ph) is None)
    if names:
        raise LazyValueError(
            f"{subject} depends on the unbound placeholder{'s' if len(names) > 1 else ''} "
            f"{', '.join(map(repr, names))} (at {user_line()}); {advice}")


def concrete(node, what, evaluate, depends="shape") -> np.ndarray:
    """``node``'s values now (``evaluate(node)`` unless it is data); ``depends``:
    what of the result depends on the values (for the message)."""
    if not isinstance(node, N.Node):
        return np.asarray(node)
    if isinstance(node, N.DataWrapper):
        return node.data
    found = value_at_break(node, what)
    if found is not None:
        return found
    require_bound(node, f"{what} is eager (the {depends} of its result depends on the values), "
                  "so it evaluates its input now, but the input",
                  f"evaluate first (x.evaluate(...) or pa.compile) and call {what} on the "
                  "result")
    return value_now(node, evaluate)


def _data(result):
    """NumPy's result (an array, a tuple or a named tuple) as data leaves."""
    if isinstance(result, np.ndarray):
        return array(result)
    items = [_data(r) for r in result]
    return type(result)(*items) if hasattr(result, "_fields") else tuple(items)


def nonzero(values) -> tuple:
    return _data(np.nonzero(values))


def argwhere(values) -> N.Node:
    return _data(np.argwhere(values))


def flatnonzero(values) -> N.Node:
    return _data(np.flatnonzero(values))


def unique(values, *args, **kwargs):
    """``np.unique`` (every keyword passed on)."""
    return _data(np.unique(values, *args, **kwargs))


def unique_family(name, values):
    """``np.unique_values`` / ``unique_counts`` / ``unique_inverse`` / ``unique_all``."""
    return _data(getattr(np, name)(values))
