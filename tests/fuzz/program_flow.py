"""Statement generators of random programs for control flow: Python loops
of a few iterations (recurrences, columns, time steps), branches and
``while`` on traced values and the other values Python needs (graph
breaks: ``int()``, slice bounds, masks from the data), ``pa.fori_loop`` and
``pa.while_loop``, and statements NumPy refuses.  See
``fuzz.program_statements`` for the conventions.
"""
from __future__ import annotations

import re

import numpy as np

from fuzz.program_exprs import CMP
from fuzz.program_statements import (Stmt, st_adv_setitem, st_aug, st_setitem, st_stencil,
                                     st_view_write)


# -- control flow: loops, graph breaks ------------------------------------------------------

def _body(g, depth):
    """One or two statements for a loop or branch body."""
    gens = [st_aug, st_aug, st_setitem, st_stencil, st_adv_setitem, st_view_write]
    out = []
    for _ in range(1 if g.coin(0.6) else 2):
        for _ in range(6):
            st = g.choice(gens)(g)
            if st is not None:
                out.append(st)
                break
    return out


def st_loop(g):
    """A Python ``for`` loop of a few iterations: a recurrence along an axis
    (``x[i] += x[i - 1]``), columns (``x[:, i] = x[:, i - 1] * 0.5 + y``), rows
    of another length each step (``x[i, :i + 1] = ...``), or time steps of
    other statements (``for _ in range(n)``)."""
    r = g.ints(0, 4)
    names = [n for n, v in g.env.items() if isinstance(v, np.ndarray) and v.ndim >= 1
             and v.shape[0] >= 2 and v.dtype.kind in "fi" and v.flags.writeable]
    if r == 0 and names:
        a = g.choice(names)
        L = g.env[a].shape[0]
        op = g.choice(["+=", "-=", "="])
        rhs = g.choice([f"{a}[i - 1]", f"0.5 * {a}[i - 1]", f"{a}[i - 1] - {a}[i]"])
        if op != "=" and "- " in rhs:
            rhs = f"{a}[i - 1]"
        body = f"{a}[i] {op} {rhs}" if g.coin(0.7) else f"{a}[i, ...] {op} {rhs}"
        return Stmt("loop", [f"for i in range(1, {min(L, 4)}):", f"    {body}"],
                    {"loop recurrence"})
    two = [n for n in names if g.env[n].ndim == 2 and g.env[n].shape[1] >= 2]
    if r == 1 and two:
        a = g.choice(two)
        L = g.env[a].shape[1]
        col = g.choice(["0.5", "2", "-1"])
        others = [n for n, v in g.env.items() if isinstance(v, np.ndarray)
                  and v.shape == (g.env[a].shape[0],) and v.dtype.kind in "fi"]
        extra = f" + {g.choice(others)}" if others and g.coin(0.5) else ""
        return Stmt("loop", [f"for i in range(1, {min(L, 4)}):",
                             f"    {a}[:, i] = {a}[:, i - 1] * {col}{extra}"],
                    {"loop columns"})
    if r == 3 and two and min(g.env[two[0]].shape) >= 3:
        a = two[0]
        n = min(g.env[a].shape[0], g.env[a].shape[1] - 1, 6)
        op = g.choice(["+=", "*=", "="])
        rhs = g.choice([f"{a}[i, :i + 1] * 0.5 + 1", f"{a}[i - 1, :i + 1] - {a}[i, :i + 1]",
                        f"{a}[i - 1, 1:i + 2] * 2"])
        return Stmt("loop", [f"for i in range(1, {n}):", f"    {a}[i, :i + 1] {op} {rhs}"],
                    {"loop ragged rows"})
    steps = "n" if "n" in g.statics else str(int(g.ints(2, 4)))
    body = _body(g, 1)
    if not body:
        return None
    lines = [f"for _ in range({steps}):"]
    for st in body:
        lines += ["    " + line for line in st.lines]
    feats = {"loop steps"} | set().union(*(st.features for st in body))
    return Stmt("loop", lines, feats)


def _condition(g):
    """A traced condition (a graph break inside pa.jit), with its constant
    drawn from the current values so that either branch can be taken."""
    arrs = g.x.arrays(lambda v: v.dtype.kind in "fi" and v.size)
    if not arrs:
        return None
    n = g.choice(arrs)
    v = np.asarray(g.env[n])
    f = g.choice(["sum", "max", "min"])
    val = float(getattr(v, f)())
    c = g.choice([val, val + 1, val - 0.5, 0])
    return g.choice([f"{n}.{f}() {g.choice(CMP)} {c!r}", f"({n} > {c!r}).any()",
                     f"np.all({n} <= {c!r})", f"{n}.{f}() > {c!r}"])


def st_branch(g):
    """``if <traced condition>:`` (a graph break), with an ``else`` sometimes."""
    cond = _condition(g)
    if cond is None:
        return None
    body = _body(g, 1)
    if not body:
        return None
    lines = [f"if {cond}:"] + ["    " + line for st in body for line in st.lines]
    if g.coin(0.5):
        other = _body(g, 1)
        if other:
            lines += ["else:"] + ["    " + line for st in other for line in st.lines]
    return Stmt("branch", lines, {"if on traced value"})


def st_while(g):
    """``while k < K and <traced condition>:`` (a graph break per iteration)."""
    arrs = [n for n, v in g.env.items() if isinstance(v, np.ndarray) and v.dtype.kind in "fi"
            and v.size and v.flags.writeable]
    if not arrs:
        return None
    n = g.choice(arrs)
    v = g.env[n]
    k = g.new_local("k")
    c = float(v.max()) + g.choice([1, 2, 3])
    return Stmt("while", [f"{k} = 0", f"while {k} < 4 and {n}.max() < {c!r}:",
                          f"    {n} += 1", f"    {k} += 1"], {"while on traced value"})


def st_int_break(g):
    """A value Python needs: ``int(x.max())`` as an index, a slice bound or a
    trip count; ``float(x.sum())`` as a (weak) scalar."""
    arrs = g.x.arrays(lambda v: v.dtype.kind in "fi" and v.size)
    dests = [n for n, v in g.env.items() if isinstance(v, np.ndarray) and v.ndim >= 1
             and v.shape[0] >= 1 and v.flags.writeable]
    if not arrs or not dests:
        return None
    src, d = g.choice(arrs), g.choice(dests)
    L = g.env[d].shape[0]
    k = g.new_local("k")
    r = g.ints(0, 4)
    if r == 0:
        lines = [f"{k} = int({src}.max()) % {L}", f"{d}[{k}] += 1" if g.env[d].dtype.kind != "b"
                 else f"{d}[{k}] = True"]
        feat = "int() index"
    elif r == 1:
        lines = [f"{k} = int(abs({src}.sum())) % {L} + 1", f"{d}[:{k}] = 0"]
        feat = "slice bound from data"
    elif r == 2:
        lines = [f"for j in range(int(abs({src}.min())) % 3):", f"    {d}[j % {L}] *= 2"]
        feat = "range from data"
    else:
        if g.env[d].dtype.kind != "f":
            return None
        lines = [f"{k} = float({src}.max())", f"{d} *= {k}"]
        feat = "float() scalar"
    return Stmt("break", lines, {feat})


def st_mask(g):
    """Boolean masks computed from the data: ``x[x > c] = v`` (lazy mask),
    ``x[m] = y[m]`` and ``x[m] = f(y[m])`` (a value per element: where the
    values are floats, kept in place; else a graph break), ``t = x[m]``."""
    arrs = [n for n, v in g.env.items() if isinstance(v, np.ndarray) and v.ndim >= 1
            and v.dtype.kind in "fi" and v.flags.writeable]
    if not arrs:
        return None
    n = g.choice(arrs)
    v = g.env[n]
    c = g.choice([0, 1, -1, 0.5])
    cmp = g.choice(CMP)
    same = [m for m, w in g.env.items() if isinstance(w, np.ndarray) and w.shape == v.shape
            and w.dtype.kind in "fi"]
    m = g.choice(same)
    r = g.ints(0, 5)
    if r == 4:          # the selected values transformed (kept in place: polyarray.masked)
        o = g.choice(same)
        sel = f"{o}[{m} {cmp} {c!r}]"
        f = g.choice([f"2.0 * {sel} + 1", f"np.sqrt(np.abs({sel}))", f"1.0 / (1.0 + {sel} ** 2)",
                      f"-{sel} * {sel}"])
        return Stmt("mask", [f"{n}[{m} {cmp} {c!r}] = {f}"], {"mask set function"})
    if r == 0:
        return Stmt("mask", [f"{n}[{m} {cmp} {c!r}] = {g.choice(['0', '1', '-2', 'alpha', 'n'])}"],
                    {"mask set scalar"})
    if r == 1:
        return Stmt("mask", [f"{n}[{m} {cmp} {c!r}] {g.choice(['+=', '-=', '*='])} 2"],
                    {"mask aug"})
    if r == 2:
        o = g.choice(same)
        return Stmt("mask", [f"{n}[{m} {cmp} {c!r}] = {o}[{m} {cmp} {c!r}]"],
                    {"mask set values"})
    t = g.new_local("t")
    return Stmt("mask", [f"{t} = {n}[{m} {cmp} {c!r}]"], {"mask read"})


def _numeric_array(g):
    """A non-empty float or integer array in scope (a loop's carry), or None."""
    arrs = [n for n, v in g.env.items() if isinstance(v, np.ndarray) and v.dtype.kind in "fi"
            and v.size]
    return g.choice(arrs) if arrs else None


def st_fori(g):
    """``pa.fori_loop(lo, hi, body, init)``: the body compiled once."""
    n = _numeric_array(g)
    if n is None:
        return None
    v = g.env[n]
    saved = dict(g.env)
    g.env["v"] = v.copy()
    try:
        e = g.x.expr(v.shape, depth=1)
    finally:
        g.env.clear()
        g.env.update(saved)
    e_text = e.text if e is not None and re.search(r"\bv\b", e.text) else "v * 0.5 + 1"
    t = g.new_local("t")
    lines = ["def body(i, v):", f"    return ({e_text}).astype(v.dtype)",
             f"{t} = pa.fori_loop(0, {int(g.ints(1, 4))}, body, {n})"]
    if g.coin(0.5) and v.flags.writeable:
        lines.append(f"{n}[...] = {t}")
    return Stmt("fori", lines, {"fori_loop"})


def st_while_loop(g):
    """``pa.while_loop(cond, body, init)`` with a condition that ends."""
    n = _numeric_array(g)
    if n is None:
        return None
    v = g.env[n]
    c = float(v.sum()) + v.size * int(g.ints(1, 4)) - 0.5
    t = g.new_local("t")
    lines = [f"{t} = pa.while_loop(lambda v: v.sum() < {c!r}, lambda v: v + 1, {n})"]
    if g.coin(0.5) and v.flags.writeable:
        lines.append(f"{n}[...] = {t}")
    return Stmt("while_loop", lines, {"while_loop"})


# -- NumPy's errors -----------------------------------------------------------------------

def st_error(g):
    """A statement NumPy refuses (casting, broadcasting, an index out of
    range, a read-only destination, a scalar assigned into): polyarray must
    raise the same exception type and leave the arguments untouched."""
    arrs = [n for n, v in g.env.items() if isinstance(v, np.ndarray) and v.ndim >= 1]
    if not arrs:
        return None
    n = g.choice(arrs)
    v = g.env[n]
    L = v.shape[0]
    forms = [f"{n}[{L}] = 1", f"{n}[[0, {L}]] += 1", f"{n} += np.ones({v.shape[0] + 1})",
             f"{n}[:] = np.zeros({v.size + 1})", f"np.diagonal({n})[0] = 1" if v.ndim >= 2
             else f"np.broadcast_to({n}, (2,) + {n}.shape)[0] = 1",
             f"{n}[1.5] = 0", f"{n}[0:2] = np.ones((3, 3, 3))"]
    if v.dtype.kind in "iu":
        forms += [f"{n} /= 2", f"{n} *= 1.5", f"{n} **= -1"]
    if v.dtype.kind == "f":
        forms += [f"{n} <<= 1", f"{n} &= 1", f"{n}.sum()[()] = 1"]
    if v.dtype.kind == "b":
        forms += [f"{n} -= True"]
    forms += [f"s_ = {n}[{', '.join('0' for _ in v.shape)}]\n{'s_[()]'} = 1"]
    text = g.choice(forms)
    return Stmt("error", text.split("\n"), {"error"})


def st_loop_sum(g):
    """A sum written as a Python loop of 8 to 19 steps, which the device
    targets roll back into a reduction: ``s = s + a[i] * 2``,
    ``s -= a[L - 1 - i]``, two kinds of term alternating, a window
    ``a[i:i + w]``, an index that is not affine (``a[i * i % L]``); the sum
    then added to an array in scope."""
    arrs = [n for n, v in g.env.items() if isinstance(v, np.ndarray) and v.ndim >= 1
            and v.shape[0] >= 2 and v.dtype.kind in "fi"]
    if not arrs:
        return None
    a = g.choice(arrs)
    v = g.env[a]
    L = v.shape[0]
    steps = int(g.ints(8, 20))
    affine = L >= steps
    forms = ([f"{a}[i]", f"{a}[{L - 1} - i]", f"{a}[i, ...]"] if affine else []) + \
        [f"{a}[i % {L}]", f"{a}[i * i % {L}]"]
    if v.size >= steps:       # the fuzzer's arrays are small: their elements in turn
        forms += [f"{a}.ravel()[i]", f"{a}.ravel()[{v.size - 1} - i]"] * 2
    if v.size >= 2 * steps:
        forms.append(f"{a}.ravel()[2 * i + 1]")
    if L >= steps + 1:
        forms.append(f"{a}[i:i + {L - steps + 1}].sum(axis=0)")
    kinds = [g.choice(forms) for _ in range(1 if g.coin(0.6) else 2)]
    scale = [g.choice(["", " * 2", " * 0.5", " * -1"]) for _ in kinds]
    ops = [g.choice(["+", "-"]) for _ in kinds]
    s = g.new_local("s")
    start = g.choice(["0", "0.0", f"np.zeros_like({a}[0])", f"{a}[0] * 0"])
    inplace = start.startswith("np.zeros") and g.coin(0.5)
    body = [f"    {s} {op}= {k}{c}" if inplace else f"    {s} = {s} {op} {k}{c}"
            for k, c, op in zip(kinds, scale, ops)]
    lines = [f"{s} = {start}", f"for i in range({steps}):"] + body
    dests = [m for m, w in g.env.items() if isinstance(w, np.ndarray) and w.flags.writeable
             and w.dtype.kind == "f" and w.ndim >= v.ndim - 1
             and w.shape[w.ndim - (v.ndim - 1):] == v.shape[1:]]
    if dests:
        lines.append(f"{g.choice(dests)}[...] += {s}")
    return Stmt("loop", lines, {"loop sum"})


def st_loop_recurrence(g):
    """A loop of 10 to 17 steps whose rows build on the rows before, which
    the device targets roll into one recurrence kernel: columns
    (``y[:, j] = y[:, j - 1] * c + t``) or rows (``y[j] = ...``), forwards or
    backwards, reading one or two rows back, with a term read at the step
    (``b[:, j]``) or the same every step; the result added to an array in
    scope."""
    vecs = [n for n, v in g.env.items() if isinstance(v, np.ndarray) and v.ndim == 1
            and v.size >= 2 and v.dtype.kind in "fi"]
    if not vecs:
        return None
    u = g.choice(vecs)
    m, dt = g.env[u].shape[0], g.env[u].dtype
    L = int(g.ints(10, 18))
    rows = g.coin(0.4)
    back = g.coin(0.4)
    two = g.coin(0.5)
    y = g.new_local("y")

    def at(k):                       # the row or column k of y (k: an expression)
        return f"{y}[{k}]" if rows else f"{y}[:, {k}]"
    wide = [n for n, v in g.env.items() if isinstance(v, np.ndarray) and v.ndim == 2
            and v.dtype.kind in "fi" and v.shape[0] == m and v.shape[1] >= L]
    terms = [f"{u} * 0.5", f"np.sin({u})" if dt.kind == "f" else f"{u} % 7", f"{u}[::-1]"]
    terms += [f"{b}[:, j]" for b in wide] + [f"{b}[:, {g.env[b].shape[1] - 1} - j]"
                                             for b in wide]
    term = g.choice(terms)
    c, d = (g.choice(["0.5", "-0.25", "1.5"]), g.choice(["0.25", "-1"])) if dt.kind == "f" \
        else (g.choice(["3", "-1"]), g.choice(["2", "1"]))
    first, second = (L - 1, L - 2) if back else (0, 1)
    sign = "+" if back else "-"
    shape = f"({L}, {m})" if rows else f"({m}, {L})"
    lines = [f"{y} = np.zeros({shape}, dtype={u}.dtype)",
             f"{at(first)} = {u}"]
    if two:
        lines.append(f"{at(second)} = {u} * 2")
    start = (second - 1 if back else 2) if two else (first - 1 if back else 1)
    span = f"range({start}, -1, -1)" if back else f"range({start}, {L})"
    rhs = f"{at(f'j {sign} 1')} * {c} + {term}"
    if two:
        rhs += f" + {at(f'j {sign} 2')} * {d}"
    lines += [f"for j in {span}:", f"    {at('j')} = {rhs}"]
    dests = [n for n, w in g.env.items() if isinstance(w, np.ndarray) and w.flags.writeable
             and (w.dtype.kind == "f" or w.dtype == dt) and w.ndim >= 1 and w.shape[-1] == m]
    if dests:           # the whole array, or the last value (it reads every step)
        last = at(0 if back else L - 1)
        total = g.choice([last, f"{y}.sum(axis={0 if rows else 1})"])
        lines.append(f"{g.choice(dests)}[...] += {total}")
    return Stmt("loop", lines, {"loop recurrence rolled"})
