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
computed), its line of the user's is a loop's: there, that time and every
later time, the live arrays that reach work computed before or by this
program are computed by the same program and each is rebound to a leaf
holding its value (as NumPy would hold it).  The next iteration builds on
data, and its DAG is one iteration deep.  The first value asked for of a
DAG changes nothing, so code that asks once (``np.asarray(result)`` at the
end) keeps its whole DAG: one fused program, every intermediate
inspectable with ``pa.show``.

A value of host data alone (NumPy arrays given to ``pa.asarray``) whose DAG
computes little (``SMALL_WORK``: ``A_row[i]``, a dot of a few elements) is
computed by the NumPy target, as NumPy would: a launch and a copy back cost
more than the work.

Arrays that read an unbound placeholder, shared variables and views are
never rebound (a view follows its root, which may be).  Inside ``pa.jit``
the graph breaks of ``polyarray.tracing`` do the same work on the device.
"""
from __future__ import annotations

import logging
import weakref

import numpy as np

from .array import TRACKED, Array, live_arrays
from .codegen import TooManyKernels, kernel_budget, program_key
from .ir import nodes as N
from .ops import eager
from .ops.creation import array as data_leaf
from .program import compile as compile_, get_default_target

_LOG = logging.getLogger("polyarray")
_COMPUTED = weakref.WeakSet()     # computing nodes of programs run for values asked for
_LOOP_LINES = set()               # user lines where a value reached work computed before
_FACTS = weakref.WeakKeyDictionary()    # node -> (reads a placeholder, reaches computed work)


class _Live(list):
    """The bottom of ``array.TRACKED`` outside every ``pa.jit`` session: the
    arrays made, weakly (so a loop's arrays can be found when a value is
    asked for).  Pruned of dead references as it grows."""

    prune_at = 4096
    element_writes = 0      # since the last value asked for

    def append(self, ref):
        super().append(ref)
        if len(self) >= self.prune_at:
            self[:] = [r for r in self if r() is not None]
            self.prune_at = max(4096, 2 * len(self))

    def element_write(self):
        self.element_writes += 1


def install():
    """Track arrays made outside sessions (the bottom of ``TRACKED``), and
    compute the values the eager functions ask for (``ops.eager``) here."""
    if not TRACKED or not isinstance(TRACKED[0], _Live):
        TRACKED.insert(0, _Live())
    if value not in eager.VALUE_HOOKS:
        eager.VALUE_HOOKS.append(value)


def outside_sessions() -> bool:
    return len(TRACKED) == 1 and isinstance(TRACKED[0], _Live)


def value(node):
    """``node``'s value, computed by one program on the default target; live
    arrays whose DAG would be computed again next time are computed by the
    same program and rebound to their values (module docstring)."""
    order = N.topological_order([node])
    again = any(n in _COMPUTED for n in order if _computes(n))
    roots, line = [], None
    if outside_sessions():
        line = eager.user_line()
        if again:
            _LOOP_LINES.add(line)
        if line in _LOOP_LINES:
            # a loop's line: from then on, every value asked for there also
            # keeps the live arrays that reach what this program computes
            roots = _rebindable_roots({id(n) for n in order if _computes(n)})
    outputs = [node] + [r._node for r in roots if r._node is not node]
    values = _compute(outputs, line)
    by_node = dict(zip(map(id, outputs), values))
    _remember(N.topological_order(outputs) if roots else order)
    for r in roots:
        r._node = data_leaf(np.asarray(by_node[id(r._node)]))
    return values[0]


# Where compiling would cost more than it saves, the value is computed by the
# NumPy target (the reference evaluator) on the host instead, as ``pa.jit``
# runs such a signature with NumPy: a program needing more than MAX_KERNELS
# new kernels (loops over shrinking slices: codegen.kernel_budget), more than
# MAX_ELEMENT_WRITES single-element writes since the last value asked for
# (element-by-element Python loops), or the program structure new for the
# (MAX_PROGRAMS_PER_LINE + 1)-th time at one line of the user's (an index baked
# into each iteration's program).  A WARNING names the line, once per line.
MAX_KERNELS = 64
MAX_ELEMENT_WRITES = 1024
MAX_PROGRAMS_PER_LINE = 8
# A value of host data alone whose DAG computes at most SMALL_WORK operations
# (``A_row[i]``, a dot of a few values) is computed by the NumPy target too: a
# launch and a copy back cost more (NPBench's spmv asked 16384 such values, 2 ms
# each through PoCL).
SMALL_WORK = 4096
# Inside a pa.jit trace, a value of host data alone is a constant of the trace
# (it reads none of the call's arguments): the NumPy target computes it, as
# NumPy would, instead of a program built for the device for each new shape
# (NPBench's mandelbrot2 shrinks its arrays by a mask at every step: 40
# programs, 60 s of PoCL builds in the first call)
_SEEN_PROGRAMS = set()
_NEW_AT_LINE = {}
_WARNED = set()


def _compute(nodes, line):
    """The values of ``nodes``; ``line``: the user's, None inside a session."""
    target = get_default_target()
    outputs = [Array(n) for n in nodes]
    if line is None and _small_on_host(nodes, limit=False):
        return compile_(outputs, target="numpy")()
    if target == "numpy" or line is None:
        return compile_(outputs, target=target)()
    if _small_on_host(nodes):
        return compile_(outputs, target="numpy")()
    if not any(map(_computes, nodes)):
        return compile_(outputs, target=target)()      # (reading data computes nothing)
    live = TRACKED[0]
    writes, live.element_writes = live.element_writes, 0
    key = program_key(nodes)
    new = key not in _SEEN_PROGRAMS
    if new:
        _NEW_AT_LINE[line] = _NEW_AT_LINE.get(line, 0) + 1
    why = None
    if writes > MAX_ELEMENT_WRITES:
        why = f"{writes} single-element writes since the last value"
    elif new and _NEW_AT_LINE[line] > MAX_PROGRAMS_PER_LINE:
        why = f"a new program at this line for the {_NEW_AT_LINE[line]}th time"
    else:
        try:
            with kernel_budget(MAX_KERNELS):
                prog = compile_(outputs, target=target)
            _SEEN_PROGRAMS.add(key)
            return prog()
        except TooManyKernels:
            why = f"more than {MAX_KERNELS} new kernels"
    _warn_host(line, why, target)
    return compile_(outputs, target="numpy")()


def _small_on_host(nodes, limit=None) -> bool:
    """Whether ``nodes`` read host data alone (NumPy arrays: no placeholder,
    no device array) and compute at most ``limit`` operations (None:
    ``SMALL_WORK``; False: any)."""
    from .inspect.profiling import node_flops
    limit = SMALL_WORK if limit is None else limit
    work = 0
    for n in N.topological_order(nodes):
        if isinstance(n, (N.Placeholder, N.RawKernelOutput)) or (
                isinstance(n, N.DataWrapper) and not isinstance(n.data, np.ndarray)):
            return False
        if limit is not False and _computes(n):
            work += max(node_flops(n), n.size)
            if work > limit:
                return False
    return True


def _warn_host(line, why, target):
    if target != "numpy" and line not in _WARNED:
        _WARNED.add(line)
        _LOG.warning("polyarray: %s: computed with NumPy on the host (%s; compiling for %s "
                     "would cost more than it saves)", line, why, target)


def _computes(n) -> bool:
    return not isinstance(n, (N.DataWrapper, N.Placeholder))


def _remember(order):
    for n in order:
        if _computes(n):
            _COMPUTED.add(n)


def _rebindable_roots(computing):
    """Live arrays (roots, not views or shared variables) whose DAG reaches
    work computed before or in ``computing`` (node ids), and reads no
    placeholder."""
    roots = [a for a in live_arrays(TRACKED[0]) if type(a) is Array and _computes(a._node)]
    if not roots:
        return []
    facts = _facts([r._node for r in roots], computing)
    return [r for r in roots if facts[id(r._node)] == (False, True)]


def _facts(nodes, computing):
    """id(node) -> (reads a placeholder, reaches work computed before or in
    ``computing``) for ``nodes`` and below, walked iteratively.  Answers are
    kept per node (``_FACTS``), and a walk stops at a node it knows: a DAG
    that grows by a write per iteration is walked once, not once per value
    asked for.  A kept "does not reach" can go stale when work below is
    computed later; that only leaves an array unrebound (its values are the
    same either way)."""
    out, stack = {}, [(n, False) for n in nodes]
    while stack:
        n, children_done = stack.pop()
        if id(n) in out:
            continue
        known = _FACTS.get(n)
        if known is not None and (known[1] or id(n) not in computing):
            out[id(n)] = known
            continue
        kids = n.children()
        if not children_done:
            stack.append((n, True))
            stack.extend((c, False) for c in kids if id(c) not in out)
            continue
        fact = (isinstance(n, N.Placeholder) or any(out[id(c)][0] for c in kids),
                id(n) in computing or (_computes(n) and n in _COMPUTED)
                or any(out[id(c)][1] for c in kids))
        out[id(n)] = _FACTS[n] = fact
    return out
