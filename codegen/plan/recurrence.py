"""Loops whose rows build on the rows before, rolled back into recurrences.

``for j in range(2, n): y[:, j] = a * x[:, j] + b * y[:, j - 1] + c * y[:, j - 2]``
traces to ``n`` values, each reading the one or two before it.  Unrolled,
every column is a node of its own: the program grows with ``n``, its kernels
select among ``n`` pieces, and a device compiler's time grows faster than
``n``.  This pass finds the chains of such values that are the same code at
another column and gives each as one ``Recurrence`` node: a kernel whose
work-items each run the loop for one element (``forms/recurrence.py``).

Which values a loop wrote, the frontend says: a value written into one
column or row of an array (``ops.assign``) is an identity node of its own,
``op`` ``WRITTEN``.  A *step* is such a value's computation with the nodes
below it of the same shape that are not written values (computing nodes,
inlined in the step); everything else it reads is a written value or a
node that must be the same in every step.  A step's predecessor is the
written value of the same code that it reads, the latest one; following
predecessors gives a chain, in the loop's order whichever way the loop ran.
Along a run of the chain the integer constants of the subscripts must be
affine in the step (``x[:, j]``), as ``reroll`` requires of a sum's terms;
each written value a step reads is the one ``k`` steps before it
(``1 <= k <= MAX_LAGS``: a *lag*, read at the step's own element, so a
work-item reads only what it wrote) or, for the first steps, the rows the
run starts from.  Runs are at least ``MIN_STEPS`` long.

A step that reads another loop's values (``q[:, j] = f(q[:, j - 1], p[:, j - 1])``)
is rolled once that loop is: the pass repeats until no run is left, and by
then the other loop's values are rows of its recurrence, read like any
array.  Other readers of a step's value (``y[:, j]`` read after the loop)
read its row.  Values are the same as the loop's, operation for operation.
The numpy target runs programs as written; the device targets run this
pass (``polyarray.program``).  Each round is O(N) in the DAG.
"""
from __future__ import annotations

from dataclasses import dataclass

import pymbolic.primitives as p
from pymbolic.mapper.substitutor import substitute

from polyarray.ir import nodes as N
from polyarray.ir.expr import index_var, index_vars
from .reroll import _rewrite

MIN_STEPS = 8           # a shorter run stays unrolled
MAX_LAGS = 4            # rows before that a step may read
MAX_STEP_NODES = 64     # computing nodes in one step
MAX_ROUNDS = 8          # passes over the DAG (loops reading other loops' values)
_SELF = p.Variable(N.Recurrence.SELF)


def roll_recurrences(outputs) -> list:
    """``outputs`` with their runs of same-code recurrent steps as
    ``Recurrence`` nodes (the same nodes where there are none)."""
    outputs, steps = list(outputs), {}
    for _ in range(MAX_ROUNDS):
        outputs, built = _round(outputs, steps)
        if not built:
            break
    return outputs


def _round(outputs, steps):
    """One pass over the DAG: ``(outputs, how many recurrences were made)``;
    ``steps``: id(written value) -> (it, its ``_Step`` or None), kept from
    round to round (a step depends on the nodes below it alone)."""
    order = N.topological_order(outputs)
    written = {id(n): k for k, n in enumerate(order) if N.is_written(n)}
    if len(written) < MIN_STEPS + 1:
        return outputs, 0
    runs = _runs(order, written, steps)
    while runs:
        made, failed = _rolled(outputs, runs)
        if not failed:
            return made, len(runs)
        # the walk skipped a failed run's computations: again without it (once:
        # a run that failed for want of another's rows failed with it)
        runs = [run for run in runs if not any(run is f for f in failed)]
    return outputs, 0


def _rolled(outputs, runs):
    """``(outputs with the runs as recurrences, the runs that could not be
    built)``; with any of the latter the outputs are to be made again
    without them."""
    run_of = {id(v): run for run in runs for v in run.values}
    # a run's first value reads what the recurrence will read (its leaves, first
    # rows and other loops' values), and each later value the one before it, not
    # the steps' computations: in that order each run comes after the runs it
    # reads, and dead computations are not made again
    reads = {}
    for run in runs:
        reads[id(run.values[0])] = run.reads()
        for a, b in zip(run.values, run.values[1:]):
            reads[id(b)] = (a,)
    order = _order(outputs, reads)
    row_of = {}                 # id(written value) -> [(Recurrence, row), ...]
    rows = {}                   # id(a run's value) -> (Recurrence, row): read as ``_row``
    changed = set()             # ids of the nodes to make again (on demand)
    new, failed = {}, []

    def make(n):
        if id(n) in rows:
            return _row(*rows[id(n)])
        if isinstance(n, N.Concatenate):
            return _joined(n, row_of, get)
        return N.remade(n, get)

    def get(value):
        """What replaces ``value``: made when first asked for, children
        first (an explicit stack: no recursion along a chain), so that what
        nothing reads (the pieces a join absorbs) is never made."""
        if id(value) not in changed:
            return value
        stack = [value]
        while stack:
            n = stack[-1]
            if id(n) in new:
                stack.pop()
                continue
            todo = [] if id(n) in rows else [
                c for c in (_kept_pieces(n, row_of) if isinstance(n, N.Concatenate)
                            else n.children()) if id(c) in changed and id(c) not in new]
            if todo:
                stack.extend(todo)
                continue
            new[id(n)] = make(n)
            stack.pop()
        return new[id(value)]
    for n in order:
        if id(n) in changed:
            continue
        run = run_of.get(id(n))       # its first value: the order puts it first
        if run is not None:
            made = run.build(get, row_of)
            if made is None:
                failed.append(run)
                for v in run.values:
                    run_of.pop(id(v))
                continue
            for k, v in enumerate(run.init):        # the first rows of several
                row_of.setdefault(id(v), []).append((made, k))
            for k, v in enumerate(run.values):
                row_of[id(v)] = [(made, run.lags + k)]
                rows[id(v)] = (made, run.lags + k)
                changed.add(id(v))
            continue
        if any(id(c) in changed for c in n.children()):
            changed.add(id(n))
    if failed:
        return outputs, failed
    return [get(o) for o in outputs], []


def _order(outputs, reads):
    """The topological order of the DAG below ``outputs`` where the nodes of
    ``reads`` (id -> nodes) read those nodes instead of their children."""
    order, seen = [], set()
    for root in outputs:
        if id(root) in seen:
            continue
        seen.add(id(root))
        stack = [(root, iter(reads.get(id(root)) or root.children()))]
        while stack:
            node, it = stack[-1]
            for child in it:
                if id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, iter(reads.get(id(child)) or child.children())))
                    break
            else:
                stack.pop()
                order.append(node)
    return order


# -- pieces -------------------------------------------------------------------

def _value(piece, axis):
    """The value a one-wide piece of a concatenation along ``axis`` puts
    there (``y[:, j] = v`` makes the piece ``v[:, None]``), else None."""
    if not isinstance(piece, N.IndexLambda) or len(piece.bindings) != 1 \
            or piece.shape[axis] != 1:
        return None
    (name, v), = piece.bindings
    others = tuple(index_var(d) for d in range(piece.ndim) if d != axis)
    want = p.Subscript(p.Variable(name), others) if others else p.Variable(name)
    if v.shape != piece.shape[:axis] + piece.shape[axis + 1:] or v.dtype != piece.dtype \
            or not isinstance(v, N.IndexLambda) or N.expression_text(piece.expr) != \
            N.expression_text(want):
        return None
    return v


# -- steps ----------------------------------------------------------------------

class _Step:
    """One value as the same code over shared leaves: its computing nodes
    (``slots``, breadth first in binding-name order: ``(node, kids)``, with
    ``kids`` binding name -> slot, or ``("value", k)`` for ``values[k]``, a
    written value that it reads), their subscript constants (slot ``s``'s
    from ``starts[s]``), and a ``key`` equal for steps of the same code over
    the same leaves (None: too large a step)."""

    def __init__(self, root):
        shape = root.shape
        self.slots, self.values, self.constants, self.starts = [], [], [], []
        skeleton, queue, slot_of = [], [root], {id(root): 0}
        while len(self.slots) < len(queue):
            node = queue[len(self.slots)]
            kids, shown = {}, []
            for name, child in sorted(node.bindings, key=lambda b: b[0]):
                if id(child) in slot_of:
                    kids[name] = slot_of[id(child)]
                elif N.is_written(child):
                    kids[name] = ("value", len(self.values))
                    self.values.append(child)
                    shown.append((name, "value"))
                    continue
                elif isinstance(child, N.IndexLambda) and child.bindings \
                        and child.shape == shape:
                    slot_of[id(child)] = len(queue)
                    kids[name] = len(queue)
                    queue.append(child)
                else:
                    shown.append((name, "leaf", id(child)))
                    continue
                shown.append((name, kids[name]))
            self.slots.append((node, kids))
            self.starts.append(len(self.constants))
            text = N.expression_text(_rewrite(node.expr, self.constants.append))
            skeleton.append((node.shape, node.dtype.str, text, tuple(shown)))
            if len(queue) > MAX_STEP_NODES:
                self.key = None
                return
        self.key = tuple(skeleton)


def _runs(order, written, known):
    """The runs of same-code steps, each in the loop's order (``known``:
    the steps of earlier rounds)."""
    steps = {}
    for n in order:
        if id(n) in written:
            hit = known.get(id(n))
            if hit is None:
                (_, v), = n.bindings
                step = _Step(v) if isinstance(v, N.IndexLambda) and v.bindings else None
                if step is not None and (step.key is None or not step.values):
                    step = None
                hit = known[id(n)] = (n, step)
            if hit[1] is not None:
                steps[id(n)] = hit
    pred, succ = {}, {}
    for key, (n, step) in steps.items():
        same = [u for u in step.values if id(u) in steps and steps[id(u)][1].key == step.key
                and u is not n]
        if same:
            u = max(same, key=lambda u: written[id(u)])
            pred[key] = u
            succ.setdefault(id(u), []).append(n)
    runs = []
    for key, (n, step) in steps.items():
        if key in pred and len(succ.get(id(pred[key]), ())) == 1:
            continue                    # inside a chain: its start walks it
        chain = [n]
        while len(succ.get(id(chain[-1]), ())) == 1 and len(chain) <= len(steps):
            chain.append(succ[id(chain[-1])][0])
        if len(chain) >= MIN_STEPS:
            runs.extend(_split(chain, [steps[id(c)][1] for c in chain]))
    return runs


def _split(chain, steps):
    """The runs of ``chain`` (its steps: ``steps``) whose constants step
    evenly, long enough, with every written value they read a lag."""
    runs, a = [], 0
    while a + MIN_STEPS <= len(chain):
        b = a + 1
        d = tuple(y - x for x, y in zip(steps[a].constants, steps[b].constants))
        while b < len(chain) and all(
                y - x == s for x, y, s in zip(steps[b - 1].constants, steps[b].constants, d)):
            b += 1
        run = _lagged(chain[a:b], steps[a:b], d) if b - a >= MIN_STEPS else None
        if run is not None:
            runs.append(run)
        a = b if run is not None or b - a >= MIN_STEPS else a + 1
    return runs


def _lagged(chain, steps, d):
    """The ``_Run`` of ``chain``, or None where a step reads a written value
    that is neither a lag nor one of the rows the run starts from."""
    at = {id(c): t for t, c in enumerate(chain)}
    lags = {}
    for t, step in enumerate(steps):
        for k, u in enumerate(step.values):
            if id(u) in at:
                lag = t - at[id(u)]
                if not 1 <= lag <= MAX_LAGS or lags.setdefault(k, lag) != lag:
                    return None
    if not lags:
        return None                     # no step reads the one before
    K = max(lags.values())
    init = [None] * K
    for t, step in enumerate(steps):
        for k, u in enumerate(step.values):
            if k not in lags:           # another loop's value
                if id(u) in at:
                    return None
                continue
            r = t - lags[k]
            if r < 0:
                if init[K + r] is None:
                    init[K + r] = u
                elif init[K + r] is not u:
                    return None
            elif chain[r] is not u:
                return None
    if any(u is None for u in init):
        return None
    return _Run(steps[0], list(chain), init, lags, tuple(steps[0].constants), d, steps)


@dataclass
class _Run:
    """The written values of one loop's steps (``values``, in the loop's
    order), the rows they start from (``init``, in order) and their shared
    code: ``first``'s slots, with subscript constants ``constants0 + deltas
    * step``."""
    first: _Step
    values: list
    init: list
    lags_of: dict               # index in ``first.values`` -> how many rows back
    constants0: tuple
    deltas: tuple
    steps: list                 # the steps' _Step, in order

    @property
    def lags(self) -> int:
        return len(self.init)

    def reads(self) -> tuple:
        """What the recurrence reads: the nodes the steps read that are
        neither their computing nodes nor written values (the same in every
        step), the first rows, and the values of other loops."""
        found = [child for node, kids in self.first.slots
                 for name, child in node.bindings if name not in kids]
        found += self.init
        found += [step.values[k] for step in self.steps
                  for k in range(len(step.values)) if k not in self.lags_of]
        return tuple(found)

    def build(self, get, row_of):
        """The ``Recurrence`` node (``get``: what replaced a node; ``row_of``:
        id(written value) -> (recurrence, row) of the runs built), or None
        where a lag is read at another element than the step's own, or
        another loop's values are not rows of one recurrence in order."""
        step, K, n = self.first, self.lags, len(self.values)
        root = step.slots[0][0]
        shape, nd = root.shape, root.ndim
        bindings, names = [], {}

        def bind(node):
            if id(node) not in names:
                names[id(node)] = f"_in{len(bindings)}"
                bindings.append((names[id(node)], node))
            return p.Variable(names[id(node)])
        lag_dependent = {}

        def reads_lag(s):
            """Whether slot ``s`` reads a lag, itself or below (a DAG of at most
            ``MAX_STEP_NODES`` slots)."""
            if s not in lag_dependent:
                lag_dependent[s] = any(isinstance(k, tuple) or reads_lag(k)
                                       for k in step.slots[s][1].values())
            return lag_dependent[s]

        def affine(s, base):
            """Slot ``s``'s k-th constant at row ``_0``: ``c0 + d * (_0 - base)``."""
            def at(k):
                c, d = self.constants0[step.starts[s] + k], self.deltas[step.starts[s] + k]
                if d == 0:
                    return c
                c -= d * base
                row = index_var(0) if d == 1 else p.Product((d, index_var(0)))
                return row if c == 0 else p.Sum((row, c))
            return at
        stacked = {}

        def stacked_node(s):
            """A computing node that reads no lag, for every step: a first axis
            of ``n`` rows (row ``t - K`` of the recurrence's row ``t``)."""
            if s not in stacked:
                node, kids = step.slots[s]
                sub = {name: stacked_node(k) for name, k in kids.items()}
                b = tuple((name, sub[name] if name in sub else get(child))
                          for name, child in node.bindings)
                e = _rewrite(node.expr, affine=affine(s, 0), internal=set(sub), shift=1)
                stacked[s] = N.IndexLambda.make((n,) + tuple(node.shape), node.dtype, e, b,
                                                "step")
            return stacked[s]

        def expr_of(s):
            """Slot ``s``'s value at the recurrence's row ``_0`` and element
            ``_1 ..`` (its own index variables shifted by one)."""
            node, kids = step.slots[s]
            env = dict(node.bindings)

            def read(name, index):
                k = kids.get(name)
                if isinstance(k, tuple) and k[1] not in self.lags_of:   # another loop's
                    return other(k[1], index)
                if isinstance(k, tuple):                    # a lag
                    row = p.Sum((index_var(0), -self.lags_of[k[1]]))
                    return p.Subscript(_SELF, (row,) + index)
                if k is not None and reads_lag(k):      # inlined, at ``index``
                    return substitute(expr_of(k),
                                      {f"_{d + 1}": i for d, i in enumerate(index)})
                if k is not None:                           # stacked: its row t - K
                    return p.Subscript(bind(stacked_node(k)),
                                       (p.Sum((index_var(0), -K)),) + index)
                v = bind(get(env[name]))
                return p.Subscript(v, index) if index else v
            return _ReadMapper(read)(_rewrite(node.expr, affine=affine(s, K), shift=1))
        def other(k, index):
            """Value ``k`` of each step, of another loop: one node in every
            step, or rows of one recurrence, in order."""
            found = [step.values[k] for step in self.steps]
            if all(u is found[0] for u in found):
                v = bind(get(found[0]))
                return p.Subscript(v, index) if index else v
            hits = [dict((id(rec), r) for rec, r in row_of.get(id(u), ())) for u in found]
            for rec, _ in row_of.get(id(found[-1]), ()):     # a recurrence holding all
                rows = [h.get(id(rec)) for h in hits]
                if None in rows:
                    continue
                r0, d = rows[0], rows[1] - rows[0]
                if all(r == r0 + d * t for t, r in enumerate(rows)):
                    row = p.Sum((p.Product((d, p.Sum((index_var(0), -K)))), r0)) if d else r0
                    return p.Subscript(bind(rec), (row,) + index)
            raise _NotRows
        try:
            expr = expr_of(0)
        except _NotRows:
            return None
        element = tuple(index_var(d + 1) for d in range(nd))
        if not all(r[0] in _LAG_READS and r[1:] == element for r in _self_reads(expr)):
            return None
        init = [_expand(get(v)) for v in self.init]
        first = init[0] if K == 1 else \
            N.Concatenate.make((K,) + tuple(shape), root.dtype, tuple(init), 0)
        return N.Recurrence.make((K + n,) + tuple(shape), root.dtype, expr,
                                 tuple(bindings), first, "recurrence")


class _NotRows(Exception):
    """Another loop's values that a step reads are not rows of one built
    recurrence in order: the run stays as written."""


_LAG_READS = frozenset(p.Sum((index_var(0), -k)) for k in range(1, MAX_LAGS + 1))


class _ReadMapper:
    """Rebuilds an expression with each binding read (``name[index]`` or a
    bare 0-d ``name``) replaced by ``read(name, index)``."""

    def __init__(self, read):
        self.read = read

    def __call__(self, e):
        t = type(e)
        if t is p.Variable:
            return self.read(e.name, ()) if e.name.startswith("_in") else e
        if t is tuple:
            return tuple(self(a) for a in e)
        if isinstance(e, p.Subscript) and isinstance(e.aggregate, p.Variable) \
                and e.aggregate.name.startswith("_in"):
            index = e.index if isinstance(e.index, tuple) else (e.index,)
            return self.read(e.aggregate.name, tuple(self(i) for i in index))
        if isinstance(e, p.ExpressionNode):
            return t(*[self(getattr(e, f)) for f in N.field_names(t)])
        return e


def _self_reads(expr):
    """The index tuples of the ``_self`` reads in ``expr``."""
    found, stack = [], [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, p.Subscript) and e.aggregate == _SELF:
            found.append(tuple(e.index))
        if isinstance(e, tuple):
            stack.extend(e)
        elif isinstance(e, p.ExpressionNode):
            stack.extend(getattr(e, f) for f in N.field_names(type(e)))
    return found


def _expand(v):
    """``v`` with a new first axis of one."""
    idx = index_vars(v.ndim + 1)[1:]
    shifted = p.Subscript(p.Variable("_in0"), idx) if idx else p.Variable("_in0")
    return N.IndexLambda.make((1,) + tuple(v.shape), v.dtype, shifted, (("_in0", v),),
                              "expand_dims")


def _row(rec, row):
    """Row ``row`` of recurrence ``rec``, of its rows' shape."""
    idx = (row,) + index_vars(rec.ndim - 1)
    return N.IndexLambda.make(rec.shape[1:], rec.dtype, p.Subscript(p.Variable("_in0"), idx),
                              (("_in0", rec),), "getitem")


def _kept_pieces(concat, row_of):
    """The pieces of ``concat`` that ``_joined`` keeps (not rows of a
    recurrence)."""
    return [a for a in concat.arrays if id(_value(a, concat.axis)) not in row_of]


def _joined(concat, row_of, get):
    """``concat`` again, its pieces that are consecutive rows of one
    recurrence (in either order) joined into one piece reading them."""
    axis = concat.axis
    pieces, block = [], None         # block: [recurrence, first row, step, count]

    def flush():
        if block is not None:
            pieces.append(_rows(concat, *block))
    for piece in concat.arrays:
        v = _value(piece, axis)
        hits = row_of.get(id(v), ()) if v is not None else ()
        hit = next((h for h in hits if block is not None and h[0] is block[0]),
                   hits[0] if hits else None)
        if hit is None:
            flush()
            block = None
            pieces.append(get(piece))
            continue
        rec, row = hit
        if block is not None and block[0] is rec:
            step = block[2] if block[3] > 1 else row - block[1]
            if abs(step) == 1 and row == block[1] + step * block[3]:
                block[2] = step
                block[3] += 1
                continue
        flush()
        block = [rec, row, 1, 1]
    flush()
    if len(pieces) == 1:
        return pieces[0]
    return N.Concatenate.make(concat.shape, concat.dtype, tuple(pieces), axis)


def _rows(concat, rec, first, step, count):
    """Rows ``first, first + step, ..`` (``count`` of them) of ``rec`` as a
    piece of ``concat`` (its axis is the rows' order)."""
    axis = concat.axis
    shape = concat.shape[:axis] + (count,) + concat.shape[axis + 1:]
    if axis == 0 and first == 0 and step == 1 and count == rec.shape[0]:
        return rec
    along = index_var(axis) if step == 1 else p.Product((step, index_var(axis)))
    row = along if first == 0 else p.Sum((along, first))
    rest = tuple(index_var(d) for d in range(len(shape)) if d != axis)
    return N.IndexLambda.make(shape, rec.dtype, p.Subscript(p.Variable("_in0"), (row,) + rest),
                              (("_in0", rec),), "getitem")
