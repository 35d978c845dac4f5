"""Graph breaks: a traced ``pa.jit`` call that needs a value goes on.

Python needs a concrete value where a traced function branches on an array
(``if err > tol:``, ``while ...``), converts one (``int(n)``, a slice
bound, ``range(k)``), or indexes with a mask computed from the data.  In a
``Session`` (one call of a ``pa.jit`` function), the eager hooks ask the
session instead of refusing (``ops/eager.py``'s hook):

1. every live array traced so far that depends on the inputs is computed by
   one program (with the value asked for), on the call's target; results
   stay on the device;
2. each of those arrays is rebound to a placeholder of its own (``seg0``,
   ``seg1``, ... in the order the arrays were made) bound to its result, so
   the code after the break builds on buffers, not on the history before;
3. the value goes back to Python, and tracing goes on.

Because the placeholders are named by position, not by the break, an
iteration of a Python loop that breaks at the same places builds the same
DAGs as the one before it, and its programs come from the session's cache:
a loop of a thousand iterations compiles its body once.  The programs are
kept by the ``pa.jit`` function, so later calls compile nothing either
(each call runs the Python function again, since the values may lead it
elsewhere).  Each break is logged at INFO with the user's line.
"""
from __future__ import annotations

import contextlib
import logging
import weakref

import numpy as np

from .array import TRACKED, Array, live_arrays
from .ir import nodes as N
from .ops import eager
from .ops.creation import placeholder
from .program import compile as _compile

_LOG = logging.getLogger("polyarray.jit")
_ACTIVE = []            # the sessions tracing now, innermost last


def current():
    """The innermost session tracing now, or None."""
    return _ACTIVE[-1] if _ACTIVE else None


class _Tracked(list):
    """A session's weak references to the arrays made or written, and the
    count of single-element writes (``x[i, j] = v``) since the last break:
    NumPy code that fills arrays element by element in Python loops (a
    triangular solve, a Gauss-Seidel sweep) traces a node per element and
    a DAG whose planning grows faster than its size; past the limit the call
    gives up tracing (``TooManyPrograms``) and runs with NumPy.  Only where
    the writes are the loop's work: a loop that makes ``WORK_PER_WRITE``
    arrays or more per element it writes (a time step that stores one
    energy per step: NPBench's nbody makes about 30) is array code."""

    WORK_PER_WRITE = 16

    def __init__(self, limit):
        super().__init__()
        self.limit, self.element_writes, self.since = limit, 0, 0

    def element_write(self):
        self.element_writes += 1
        if self.limit is not None and self.element_writes > self.limit \
                and len(self) - self.since < self.WORK_PER_WRITE * self.element_writes:
            raise TooManyPrograms(f"more than {self.limit} single-element writes")

    def restart(self):
        """A break: count from here."""
        self.element_writes, self.since = 0, len(self)


class TooManyPrograms(Exception):
    """A call's graph breaks needed more new programs than its limit, or one
    line of the user's more than a quarter of it: the break's values are
    baked into what it computes (an index per element, a mask per step), so
    each iteration compiles anew (see ``pa.jit``'s ``max_break_programs``)."""


@contextlib.contextmanager
def untracked():
    """Arrays made inside are not the traced function's state: a loop body
    traced on its carry's placeholders (``polyarray.loops``) makes arrays
    that its compiled program keeps alive, and a later break must not try
    to compute them (their placeholders are bound only inside the loop)."""
    if not TRACKED:
        yield
        return
    TRACKED.append(_Tracked(None))
    try:
        yield
    finally:
        TRACKED.pop()


class Session:
    """One call of a ``pa.jit`` function with graph breaks (see the module
    docstring).  ``bindings``: placeholder name -> value (the call's
    arguments, then the arrays computed at breaks); ``inputs``: the
    arguments' placeholder nodes, never rebound; ``programs``: the cache of
    compiled programs (outputs -> Program) shared by the calls."""

    def __init__(self, target, bindings, inputs, programs, options, prefix="seg",
                 max_programs=None, max_element_writes=None):
        self.target, self.bindings = target, dict(bindings)
        self.inputs, self.programs = frozenset(inputs), programs
        self.options = dict(options)
        if target in ("cuda", "opencl"):
            self.options["out"] = "device"      # what the next segment reads stays there
        self.prefix = prefix
        while any(name.startswith(prefix) for name in self.bindings):
            prefix = self.prefix = prefix + "_"
        self.fresh = 0              # values bound outside a break (bind_values)
        self.named = {}             # id(array) -> (weakref to it, its placeholder name)
        self.names_given = 0
        self.compiled, self.max_programs = 0, max_programs     # programs new in this call
        self.compiled_at = {}       # ... per user line of a break
        self.tracked = _Tracked(max_element_writes)     # the arrays made or written
        self.breaks = []            # the user's line of each break

    def __enter__(self):
        TRACKED.append(self.tracked)
        eager.BREAK_HOOKS.append(self.value)
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc):
        TRACKED.pop()
        eager.BREAK_HOOKS.pop()
        _ACTIVE.pop()

    # -- eager steps inside the trace (pa.fori_loop, pa.while_loop) ---------------------
    def note_break(self, what):
        """Record a break that is not a value asked for (a loop that runs now)."""
        line = eager.user_line()
        self.breaks.append(line)
        _LOG.debug("pa.jit: graph break at %s (%s)", line, what)

    def evaluate(self, nodes):
        """The values of ``nodes`` (device arrays on a device target) now,
        with this session's bindings."""
        out, todo = {}, []
        for n in nodes:
            if _bound_placeholder(n, self.bindings):
                out[id(n)] = self.bindings[n.name]
            elif id(n) not in out and n not in todo:
                todo.append(n)
        if todo:
            out.update(zip(map(id, todo), self.run(todo)))
        return [out[id(n)] for n in nodes]

    def bind_values(self, values, kinds):
        """Arrays standing for ``values`` (computed outside a program):
        placeholders of their own, bound in this session; the next break
        renames them with the other live arrays."""
        arrays = []
        for value, (shape, dtype) in zip(values, kinds):
            self.fresh += 1
            name = f"{self.prefix}v{self.fresh}"
            self.bindings[name] = value
            arrays.append(Array(placeholder(name, shape, dtype)))
        return arrays

    def track(self, arrays):
        self.tracked.extend(weakref.ref(a) for a in arrays)

    # -- a break ------------------------------------------------------------------
    def value(self, node, what):
        """The NumPy value of ``node`` (which depends on the inputs), after
        the work traced so far has run; None where ``node`` depends on no
        placeholder (the caller evaluates it as usual)."""
        if not node.reads_placeholder:
            return None
        roots, _ = self._live_roots()
        line = eager.user_line()
        self.breaks.append(line)
        _LOG.debug("pa.jit: graph break at %s (%s needs a value)", line, what)
        computed = [r for r in roots if r._node.reads_placeholder and r._node not in self.inputs]
        outputs, seen = [], set()
        for n in [r._node for r in computed] + [node]:
            if id(n) not in seen and not _bound_placeholder(n, self.bindings):
                seen.add(id(n))
                outputs.append(n)
        values = dict(zip(map(id, outputs), self.run(outputs)))

        def value_of(n):
            return self.bindings[n.name] if _bound_placeholder(n, self.bindings) \
                else values[id(n)]
        wanted = value_of(node)
        bindings = {n.name: v for n, v in self._input_bindings()}
        for r in computed:
            name = self._name_of(r)
            bindings[name] = value_of(r._node)
            r._node = placeholder(name, r.shape, r.dtype)
        self.bindings = bindings
        self.tracked.restart()
        return _host(wanted)

    def _name_of(self, array):
        """The placeholder name of ``array`` after a break: the same at every
        break for the same array (the arrays a loop updates in place keep
        theirs, so every iteration after the first is the same program:
        names by position among the live arrays changed as temporaries came
        and went, and two programs alternated); new arrays take new names."""
        entry = self.named.get(id(array))
        if entry is not None and entry[0]() is array:
            return entry[1]
        self.names_given += 1
        if self.names_given % 256 == 0:                     # forget the dead
            self.named = {k: e for k, e in self.named.items() if e[0]() is not None}
        name = f"{self.prefix}{self.names_given - 1}"
        self.named[id(array)] = (weakref.ref(array), name)
        return name

    def run(self, outputs):
        """The values of ``outputs`` (nodes) with this session's bindings,
        through the cached program for them."""
        key = tuple(outputs)
        prog = self.programs.get(key)
        if prog is None:
            self.compiled += 1
            line = self.breaks[-1] if self.breaks else None
            self.compiled_at[line] = self.compiled_at.get(line, 0) + 1
            if self.max_programs is not None and (
                    self.compiled > self.max_programs
                    or self.compiled_at[line] > max(2, self.max_programs // 4)):
                raise TooManyPrograms(self.compiled)
            prog = self.programs[key] = _compile([Array(n) for n in outputs],
                                                 target=self.target, **self.options)
        return prog(**{name: self.bindings[name] for name in prog.placeholders})

    def _input_bindings(self):
        for n in self.inputs:
            if n.name in self.bindings:
                yield n, self.bindings[n.name]

    def _live_roots(self):
        """The arrays made or written in this session that are alive, in the
        order they were made (each once), and their nodes."""
        roots = [a for a in live_arrays(self.tracked)
                 if type(a) is Array or not hasattr(a, "_root")]     # roots only
        return roots, [r._node for r in roots]


def _bound_placeholder(node, bindings) -> bool:
    return isinstance(node, N.Placeholder) and not node.shared and node.name in bindings


def _host(value) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    return value.get() if hasattr(value, "get") else np.asarray(value)
