"""Sums written as Python loops, rolled back into reductions.

``for i in range(n): s += f(a[i, i])`` traces to a chain of ``n`` additions,
each of a term that is the same code at another index: unrolled, it is one
kernel of ``n`` statements in a row (a device compiler's time grows faster
than linearly with them, and one thread adds them up).  This pass finds
such chains and gives each run of terms that are the same code, with the
integer constants of their subscripts affine in the step, as one
reduction: the terms stacked along a new first axis (the constants become
``c0 + d * _0``) and summed over it, ``s0 + sum(terms)``.

What a term is: the other operand of one addition of the chain (negated
for a subtraction), with the nodes below it that only it reads
(computing nodes, read once); everything else it reads must be the same
node in every term of the run.  Runs shorter than ``MIN_TERMS`` stay
unrolled.  Integer sums are exact in any order; floating-point sums are
added in the reduction's order, as ``numpy.sum`` adds them, rather than
left to right.

The numpy target evaluates the program as written; device targets run
this pass (``polyarray.program``) before lowering, so what ``pa.show``
prints of a program is what its kernels compute.  O(N) in the DAG: each
node is one chain's or one term's at most.
"""
from __future__ import annotations

import re

import pymbolic.primitives as p

from polyarray.ir import nodes as N
from polyarray.ir.expr import call, index_var, index_vars, read

MIN_TERMS = 8           # a shorter run of same-code terms stays unrolled
MAX_PERIOD = 4          # kinds of term that may alternate in one run

_INDEX_VAR = re.compile(r"_(\d+)\Z")
_MARK = p.Variable("_c")        # an integer constant of a subscript, in a skeleton


def reroll_sums(outputs) -> list:
    """``outputs`` with their long sums of same-code terms as reductions
    (the same nodes where there are none)."""
    order = N.topological_order(outputs)
    counts = N.use_counts(order)
    for o in outputs:
        counts[id(o)] += 1          # an output is read by the caller
    links = {}
    for n in order:
        link = _chain_link(n, counts)
        if link is not None:
            links[id(n)] = link
    if not links:
        return list(outputs)
    continued = {id(link[1]) for link in links.values()}
    new = {}

    def get(n):
        return new.get(id(n), n)
    for n in order:              # chains below a chain's terms are replaced first
        if id(n) in links and id(n) not in continued:
            made = _rerolled(_chain(n, links), links, counts, get)
            if made is not None:
                new[id(n)] = made
                continue
        if any(id(c) in new for c in n.children()):
            new[id(n)] = N.remade(n, get)
    return [get(o) for o in outputs]


# -- chains -----------------------------------------------------------------

def _identity_read(e, name, ndim) -> bool:
    if ndim == 0:
        return type(e) is p.Variable and e.name == name
    return (isinstance(e, p.Subscript) and isinstance(e.aggregate, p.Variable)
            and e.aggregate.name == name and tuple(e.index) == index_vars(ndim))


def _chain_link(n, counts):
    """``(term expression, previous node, its binding name)`` where ``n`` adds
    a term to a node of its own shape and dtype that only it reads (the
    chain continues below), else None."""
    if not isinstance(n, N.IndexLambda) or n.dtype.kind not in "iuf" \
            or not (isinstance(n.expr, p.Call) and isinstance(n.expr.function, p.Variable)
                    and n.expr.function.name in ("add", "subtract")
                    and len(n.expr.parameters) == 2):
        return None
    op = n.expr.function.name
    bindings = dict(n.bindings)
    found = []
    for mine, other in ((0, 1), (1, 0)) if op == "add" else ((0, 1),):
        e = n.expr.parameters[mine]
        name = e.name if type(e) is p.Variable else \
            e.aggregate.name if isinstance(e, p.Subscript) and \
            isinstance(e.aggregate, p.Variable) else None
        prev = bindings.get(name)
        if prev is None or prev.shape != n.shape or prev.dtype != n.dtype \
                or counts[id(prev)] != 1 or not _identity_read(e, name, n.ndim) \
                or len(n.reads()[name]) != 1:      # the previous value also in the term
            continue
        term = n.expr.parameters[other]
        found.append((call("negative", term) if op == "subtract" else term, prev, name))
    # ``t + s`` as well as ``s + t``: the side that is itself an addition first
    found.sort(key=lambda link: not _is_addition(link[1]))
    return found[0] if found else None


def _is_addition(n):
    return isinstance(n, N.IndexLambda) and isinstance(n.expr, p.Call) \
        and isinstance(n.expr.function, p.Variable) \
        and n.expr.function.name in ("add", "subtract")


def _chain(top, links):
    """``[(node, term expression, other bindings)]`` from the bottom of the
    chain ending at ``top``; the first entry's node is the base (its own
    value, not a term)."""
    steps, n = [], top
    while id(n) in links:
        term, prev, name = links[id(n)]
        steps.append((n, term, tuple((k, v) for k, v in n.bindings if k != name)))
        n = prev
    steps.append((n, None, ()))
    steps.reverse()
    return steps


# -- terms ------------------------------------------------------------------

class _Term:
    """One term as the same code over shared leaves: a pseudo-node (the
    term expression over the addition's other bindings), then the nodes only
    it reads, breadth first in binding-name order.  Per slot: ``(shape,
    dtype, expr, bindings)``, the slots of its internal children by binding
    name, and where its subscript constants start in ``constants``."""

    def __init__(self, shape, dtype, expr, bindings, counts, links):
        self.nodes, self.kids, self.starts = [], [], []
        self.constants, skeleton = [], []
        queue, seen = [(shape, dtype, expr, bindings)], set()
        while len(self.nodes) < len(queue):
            entry = queue[len(self.nodes)]
            self.nodes.append(entry)
            shape, dtype, expr, bindings = entry
            kids, shown = {}, []
            for name, child in sorted(bindings, key=lambda b: b[0]):
                if isinstance(child, N.IndexLambda) and counts[id(child)] == 1 \
                        and id(child) not in links and id(child) not in seen:
                    seen.add(id(child))
                    kids[name] = len(queue)
                    shown.append((name, len(queue)))
                    queue.append((child.shape, child.dtype, child.expr, child.bindings))
                else:
                    shown.append((name, "leaf", id(child)))
            self.kids.append(kids)
            self.starts.append(len(self.constants))
            text = N.expression_text(_rewrite(expr, self.constants.append))
            skeleton.append((shape, dtype.str, text, tuple(shown)))
        self.key = tuple(skeleton)


def _rewrite(e, constant=None, affine=None, internal=(), shift=0):
    """``e`` rebuilt: the integer constants of its subscripts passed to
    ``constant`` and replaced by a mark, or replaced by ``affine(k)`` for the
    k-th of them; index variables shifted by ``shift``; reads of the
    bindings named in ``internal`` given the new first axis."""
    count = [0]

    def rec(e, in_index):
        t = type(e)
        if t is int:
            if not in_index:
                return e
            count[0] += 1
            if affine is None:
                constant(e)
                return _MARK
            return affine(count[0] - 1)
        if t is p.Variable:
            if shift:
                m = _INDEX_VAR.match(e.name)
                if m:
                    return index_var(int(m.group(1)) + shift)
            if e.name in internal:
                return p.Subscript(e, (index_var(0),))
            return e
        if t is tuple:
            return tuple(rec(a, in_index) for a in e)
        if isinstance(e, p.Subscript) and isinstance(e.aggregate, p.Variable):
            index = e.index if isinstance(e.index, tuple) else (e.index,)
            index = tuple(rec(i, True) for i in index)
            if e.aggregate.name in internal:
                index = (index_var(0),) + index
            return p.Subscript(e.aggregate, index)
        if isinstance(e, p.ExpressionNode):
            return t(*[rec(getattr(e, f), in_index) for f in N.field_names(t)])
        return e                  # NumPy scalars, floats, strings
    return rec(e, False)


def _runs(terms):
    """Cover ``terms`` in order with ``(start, period, repeats, steps)``: from
    ``start``, ``repeats`` times ``period`` terms, where the terms of each
    phase are one skeleton whose subscript constants step by that phase's
    ``steps`` entry (``s += a[i] - b[i]`` alternates two kinds of term).
    Where no period repeats ``MIN_TERMS`` times, a single term:
    ``(start, 1, 1, None)``."""
    runs, i = [], 0
    while i < len(terms):
        best = (1, 1, None)
        for period in range(1, MAX_PERIOD + 1):
            repeats, steps = _repeats(terms, i, period)
            if repeats >= MIN_TERMS and repeats * period > best[0] * best[1]:
                best = (period, repeats, steps)
        runs.append((i,) + best)
        i += best[0] * best[1]
    return runs


def _repeats(terms, i, period):
    """How many times the ``period`` terms from ``i`` repeat with constants
    stepping evenly, and the steps per phase."""
    if i + 2 * period > len(terms):
        return 1, None
    steps = []
    for j in range(period):
        a, b = terms[i + j], terms[i + period + j]
        if a.key != b.key:
            return 1, None
        steps.append(tuple(y - x for x, y in zip(a.constants, b.constants)))
    repeats = 2
    while i + (repeats + 1) * period <= len(terms):
        at = i + repeats * period
        if not all(terms[at + j].key == terms[i + j].key and all(
                y - x == s for x, y, s in zip(terms[at - period + j].constants,
                                              terms[at + j].constants, steps[j]))
                   for j in range(period)):
            break
        repeats += 1
    return repeats, steps


def _rerolled(chain, links, counts, get):
    """The chain's top computed with its long runs as reductions, or None;
    ``get`` maps a node to what replaced it (chains below)."""
    steps = chain[1:]
    if len(steps) < MIN_TERMS:          # no run can repeat often enough
        return None
    top = steps[-1][0]
    terms = [_Term(top.shape, top.dtype, term, bindings, counts, links)
             for _, term, bindings in steps]
    runs = _runs(terms)
    if all(repeats == 1 for _, _, repeats, _ in runs):
        return None
    cur = get(chain[0][0])
    for start, period, repeats, d in runs:
        if repeats == 1:           # the step as it was, on the new previous value
            node = steps[start][0]
            name = links[id(node)][2]
            bindings = tuple((k, cur if k == name else get(v)) for k, v in node.bindings)
            cur = N.IndexLambda.make(node.shape, node.dtype, node.expr, bindings, node.op)
            continue
        for j in range(period):
            cur = _add(cur, _stacked_sum(terms[start + j], d[j], repeats, get))
    return cur


def _add(cur, other):
    """``cur + other``, of ``cur``'s shape and dtype."""
    idx = index_vars(len(cur.shape))
    return N.IndexLambda.make(cur.shape, cur.dtype,
                              call("add", read("_in0", idx), read("_in1", idx)),
                              (("_in0", cur), ("_in1", other)), "add")


def _stacked_sum(first, d, count, get):
    """The sum over a new first axis of ``count`` terms like ``first``, whose
    subscript constants step by ``d``."""
    c0 = first.constants
    made = [None] * len(first.nodes)
    for slot in range(len(first.nodes) - 1, -1, -1):        # children before parents
        shape, dtype, expr, bindings = first.nodes[slot]
        kids, start = first.kids[slot], first.starts[slot]

        def affine(k, start=start):
            c, s = c0[start + k], d[start + k]
            if s == 0:
                return c
            step = index_var(0) if s == 1 else p.Product((s, index_var(0)))
            return step if c == 0 else p.Sum((step, c))
        new_bindings = tuple((name, made[kids[name]] if name in kids else get(child))
                             for name, child in bindings)
        e = _rewrite(expr, affine=affine, internal=set(kids), shift=1)
        made[slot] = N.IndexLambda.make((count,) + tuple(shape), dtype, e, new_bindings,
                                        f"{count} terms" if slot == 0 else "term")
    root = made[0]
    return N.Reduce.make(root.shape[1:], root.dtype, "sum", root, (0,))
