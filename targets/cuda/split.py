"""One large outlined region built as several translation units at once.

A fused chain of 2000 ops is one kernel calling one outlined region
(``codegen/emit/outline.py``) of about 2600 statements.  NVRTC and nvcc compile
one translation unit on one core, and their time grows linearly with the
region's statements (nvcc here: 0.67 s in the front end and 0.92 s in ptxas
for that region), so the only way to cut it is to share it between cores.
``split`` cuts such a region's straight-line body into segments at points
where few values are live, and gives each segment to a unit of its own as an
``extern "C" __device__`` function; the values live across a cut come back
in a struct (through pointers to the caller's locals they went through
local memory: the 1000-op chain over 2^22 elements ran 10% slower).  The units are compiled as relocatable code
(``-rdc=true``) concurrently and linked (``cuda.compiler.linker``).

Every statement is the same text in the same order, with the same types;
only the function it sits in changes.  The numbers are the same but for one
thing: nvcc fuses a product with an add that uses it into one ``fma`` even
across statements, and cannot across a cut, so a product live across a cut
would be rounded on its own.  ``_cuts`` moves a cut to where no product is
live (within a tenth of a share); only where there is no such point can a
result differ from the whole build's, in the last bit.  The cuts depend on
the source alone, so a program's binary is the same on every host.  The cost
at run time is a few calls per element of a region that has hundreds of
statements per segment.  The text is ours (``outline._build``): a line that
is not the expected ``  T name = expr;``, ``  *rK = expr;`` or ``  return
expr;`` leaves the region whole.
"""
from __future__ import annotations

import re

_REGION = re.compile(r"^/\* polyarray outlined region: (\d+) temporaries \*/\n"
                     r"(__device__ static __(?:force|no)inline__ ([\w ]+?) (pa_r_[0-9a-f]+)"
                     r"\(([^)]*)\))\n\{\n(.*?)\n\}\n", re.M | re.S)
_DECL = re.compile(r"^  ((?:unsigned |signed )?\w+) (\w+) = (.*);$")
_STORE = re.compile(r"^  \*(r\d+) = (.*);$")
_RETURN = re.compile(r"^  return (.*);$")
_PARAM = re.compile(r"^\s*(.*?)\s*\b(\w+)$")
_WORD = re.compile(r"\b[A-Za-z_]\w*\b")
_CAST = re.compile(r"^\((?:unsigned |signed )?\w+\)\s*(?=\()")      # (float) (...)


class _Region:
    """A region's parsed body: declarations ``(type, name, expr)`` and the
    tail lines (stores through result pointers, and the return)."""

    def __init__(self, m):
        self.start, self.end = m.start(), m.end()
        self.head, self.rtype, self.name = m.group(2), m.group(3), m.group(4)
        self.params = []                # (type, name), in order
        for text in filter(None, (t.strip() for t in m.group(5).split(","))):
            if text != "void":
                pm = _PARAM.match(text)
                self.params.append((pm.group(1), pm.group(2)))
        lines = m.group(6).split("\n")
        self.decls, self.tail = [], []
        for line in lines:
            d = _DECL.match(line)
            if d and not self.tail:
                self.decls.append(d.groups())
            elif _STORE.match(line) or _RETURN.match(line):
                self.tail.append(line)
            else:
                raise ValueError(line)
        if not self.tail or not _RETURN.match(self.tail[-1]):
            raise ValueError("no return")


def regions(source):
    """The outlined regions of ``source`` that parse, with their statement
    counts: ``[(statements, _Region), ...]``."""
    found = []
    for m in _REGION.finditer(source):
        try:
            found.append((int(m.group(1)), _Region(m)))
        except ValueError:
            continue
    return found


def is_product(expr):
    """Whether ``expr``'s outermost operation is a multiplication: nvcc
    fuses such a value with an add that uses it into one ``fma`` (rounded
    once), also across statements, but not across a call into another unit,
    so a cut after it can change the last bit."""
    expr = _CAST.sub("", expr.strip(), count=1)
    while expr.startswith("(") and _closes_at_end(expr):
        expr = expr[1:-1].strip()
    depth, prev, mul = 0, "", False
    for ch in expr:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth == 0 and not ch.isspace():
            if ch in "+?<>=&|^%/" or (ch == "-" and prev and (prev.isalnum() or prev in "._)]")):
                return False
            mul = mul or ch == "*"
        if not ch.isspace():
            prev = ch
    return mul


def _closes_at_end(expr):
    """Whether the parenthesis that opens ``expr`` closes at its end."""
    depth = 0
    for k, ch in enumerate(expr):
        depth += (ch == "(") - (ch == ")")
        if depth == 0:
            return k == len(expr) - 1
    return False


def _cuts(region, segments):
    """Indices of the first declaration of each segment after the first:
    near equal shares, moved within a tenth of a share to where no product
    is live (``is_product``), then to where the fewest values are."""
    n = len(region.decls)
    index = {name: i for i, (_, name, _) in enumerate(region.decls)}
    last = {}                       # a declaration's last use (n: the tail)
    for i, (_, _, expr) in enumerate(region.decls):
        for w in _WORD.findall(expr):
            if w in index:
                last[w] = i
    for line in region.tail:
        for w in _WORD.findall(line):
            if w in index:
                last[w] = n
    # live across the cut before declaration c: (products, values), each a
    # running sum of +1 where a value's life starts and -1 past its last use
    delta = [[0, 0] for _ in range(n + 2)]
    for name, i in index.items():
        if name in last and last[name] > i:
            weight = 1 if is_product(region.decls[i][2]) else 0
            for at, sign in ((i + 1, 1), (last[name] + 1, -1)):
                delta[at][0] += sign * weight
                delta[at][1] += sign
    live, running = [None] * (n + 1), [0, 0]
    for c in range(n + 1):
        running = [running[0] + delta[c][0], running[1] + delta[c][1]]
        live[c] = tuple(running)
    share = n / segments
    window = max(1, int(share / 10))
    cuts = []
    for k in range(1, segments):
        ideal = int(round(k * share))
        lo, hi = max(1 + (cuts[-1] if cuts else 0), ideal - window), min(n - 1, ideal + window)
        if lo > hi:
            continue
        cuts.append(min(range(lo, hi + 1), key=lambda c: (*live[c], abs(c - ideal))))
    return cuts


def split(source, units, min_statements):
    """``[main unit, other units...]`` of ``source``: each region of at
    least ``2 * min_statements`` statements cut into segments of at least
    ``min_statements`` (at most ``units`` segments in all; each region's
    share follows its size), dealt to units of their own (the first unit
    keeps the kernels and the rest, and is small: with a segment in it, nvcc
    took twice as long over it as over the others); or ``[source]`` where
    nothing is split.  The cuts depend on the arguments and the text alone,
    never on the machine (``cuda.build`` passes constants), so a program
    gets the same binary, and the same bits, on every host."""
    min_statements = max(1, int(min_statements))
    found = regions(source)
    big = [(s, r) for s, r in found if s >= 2 * min_statements]
    if not big or units < 2:
        return [source]
    total = sum(s for s, _ in big)
    prelude = source[:min(r.start for _, r in found)]
    functions, replaced = [], []      # segment texts; (start, end, new region text)
    for statements, region in big:
        segments = max(2, min(statements // min_statements,
                              round(units * statements / total)))
        cuts = [0] + _cuts(region, segments) + [len(region.decls)]
        texts, calls, externs = _segments(region, cuts)
        functions += texts
        replaced.append((region.start, region.end,
                         "\n".join(externs) + "\n" + region.head + "\n{\n"
                         + "\n".join(calls) + "\n}\n"))
    main = source
    for start, end, text in sorted(replaced, reverse=True):
        main = main[:start] + text + main[end:]
    bins = [[] for _ in range(min(units, len(functions)))]
    for k, text in enumerate(functions):
        bins[k % len(bins)].append(text)
    return [main] + [prelude + "\n".join(b) for b in bins]


def _segments(region, cuts):
    """The segment functions' texts, the region's new body lines (calls), and
    the ``extern`` declarations of the segments."""
    types = dict((name, t) for t, name in region.params)
    types.update((name, t) for t, name, _ in region.decls)
    params = [name for _, name in region.params]

    def used(lines):
        words = set()
        for line in lines:
            words.update(_WORD.findall(line))
        return words

    n = len(cuts) - 1
    uses = [used(e for _, _, e in region.decls[cuts[k]:cuts[k + 1]])      # each segment's
            | (used(region.tail) if k == n - 1 else set()) for k in range(n)]
    later = [set() for _ in cuts]       # names used at or after each cut
    for k in range(n - 1, -1, -1):
        later[k] = uses[k] | later[k + 1]
    texts, calls, externs = [], [], []
    for k in range(n):
        a, b = cuts[k], cuts[k + 1]
        last = k == n - 1
        fname = f"{region.name}_s{k}"
        body = [f"  {t} {name} = {e};" for t, name, e in region.decls[a:b]]
        mine = uses[k]
        ins = [x for x in params if x in mine] + \
            [name for _, name, _ in region.decls[:a] if name in mine]
        outs = [] if last else [name for _, name, _ in region.decls[a:b]
                                if name in later[k + 1]]
        args = [f"{types[x]} {x}" for x in ins]
        struct = f"struct {fname}_out {{ " + " ".join(f"{types[x]} {x};" for x in outs) + " };"
        rtype = region.rtype if last else f"struct {fname}_out" if outs else "void"
        sig = f'extern "C" __device__ {rtype} {fname}({", ".join(args) or "void"})'
        if last:
            body += region.tail
        elif outs:
            body += [f"  {rtype} out = {{{', '.join(outs)}}};", "  return out;"]
        texts.append((struct + "\n" if outs else "") + f"{sig}\n{{\n" + "\n".join(body)
                     + "\n}\n")
        externs += ([struct] if outs else []) + [sig + ";"]
        call = f"{fname}({', '.join(ins)})"
        if last:
            calls.append(f"  return {call};")
        elif outs:
            calls.append(f"  {rtype} o{k} = {call};")
            calls += [f"  {types[x]} {x} = o{k}.{x};" for x in outs]
        else:
            calls.append(f"  {call};")
    return texts, calls, externs
