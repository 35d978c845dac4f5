"""Statement generators of random programs that write: in-place operators,
``x[key] = v`` and ``x[key] op= v`` (basic and advanced keys), stencils,
writes through views made on the spot, ``out=``; and the conventions of
every generator (``fuzz.program_arrays``: views, creations, scalars;
``fuzz.program_flow``: loops, branches, graph breaks, errors).

Each ``st_*(g)`` draws one statement (a block of source lines, indented
relative to the function body) against the values the program holds now
(``g.env``), or returns None.  The generator (``fuzz.programs``) then runs
the program so far with NumPy and keeps the statement only if NumPy ran it
and every value is still exact (or, now and then, if NumPy raised: the
statement ends the program, and polyarray must raise the same).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Stmt:
    kind: str
    lines: list
    features: set = field(default_factory=set)
    reshape_view: str = None        # the name of a view made by a reshape it binds

    def text(self, indent="    "):
        return "\n".join(indent + line for line in self.lines)


AUG_OPS = {
    "f": ["+=", "-=", "*=", "+=", "-=", "*=", "/=", "//=", "%=", "**="],
    "i": ["+=", "-=", "*=", "//=", "%=", "**=", "&=", "|=", "^=", "<<=", ">>=", "+=", "-="],
    "b": ["&=", "|=", "^=", "+=", "*="],
}
# ops whose right operand NumPy rejects for the destination's kind: drawn now and
# then, so that NumPy's errors (and polyarray's) are exercised
ODD_OPS = {"f": ["&=", "<<=", "|="], "i": ["/="], "b": ["-=", "/=", "<<="]}
UFUNCS_OUT = ["add", "subtract", "multiply", "maximum", "minimum"]


def _writable(g, prefer_views=True, read_only=0.04):
    """Names of ndarrays to write to (views more often; read-only now and then)."""
    names = [n for n, v in g.env.items() if isinstance(v, np.ndarray)]
    if not names:
        return None
    ok = [n for n in names if g.env[n].flags.writeable]
    if not ok or g.coin(read_only):
        return g.choice(names)
    views = [n for n in ok if g.env[n].base is not None or n in g.arg_names]
    if prefer_views and views and g.coin(0.5):
        return g.choice(views)
    return g.choice(ok)


def _dest(g, name, need_key=False):
    """(base text, key text or None) of a write into array ``name``: the
    array itself, a basic region of it, or a region of one of its views
    made on the spot (``.T``, ``.reshape(-1)``, ``[None]``, expand_dims)."""
    v = g.env[name]
    forms = ["name"] * (0 if need_key else 3) + ["key"] * 5 + ["T", "none", "expand"]
    if g.reshape_safe(name):
        forms += ["reshape", "ravel"]
    form = g.choice(forms)
    if form == "name":
        return name, None
    if form == "T" and v.ndim >= 2:
        base = f"{name}.T"
    elif form == "reshape" and v.ndim >= 2:
        base = f"{name}.reshape(-1)"
    elif form == "ravel" and v.ndim >= 2:
        base = f"{name}.ravel()"
    elif form == "none":
        base = f"{name}[None]"
    elif form == "expand" and v.ndim >= 1:
        base = f"np.expand_dims({name}, {int(g.ints(0, v.ndim + 1))})"
    else:
        base = name
    shape = np.shape(g.eval(base))
    return base, g.x.basic_key(shape)


def _target(g, base, key):
    text = base if key is None else f"{base}[{key}]"
    try:
        val = g.eval(text)
    except Exception:                           # noqa: BLE001
        return text, None
    return text, val


def _aug_op(g, kind):
    if g.coin(0.04):
        return g.choice(ODD_OPS["f" if kind == "f" else ("b" if kind == "b" else "i")])
    return g.choice(AUG_OPS["f" if kind == "f" else ("b" if kind == "b" else "i")])


def _rhs_for(g, op, dest_val, kind):
    """An exact right operand for ``dest op= rhs``."""
    shape = np.shape(dest_val)
    x = g.x
    if op == "**=":
        return x.constant("i") if kind != "f" else \
            g.choice([x.constant("i"), _ex_lit(g, "2"), _ex_lit(g, "0.5")]) \
            if g.coin(0.1) else _ex_lit(g, "2")
    if op in ("<<=", ">>="):
        if kind in "iu" and g.coin(0.3):
            return x.leaf(shape, "iu")
        return _ex_lit(g, str(g.choice([1, 2, 3])))
    if op in ("//=", "%="):
        return x.nonzero_leaf(shape)
    if op == "/=":
        return g.choice([_ex_lit(g, "2"), _ex_lit(g, "0.5"), _ex_lit(g, "4.0"),
                         x.nonzero_leaf(shape)])
    if op in ("&=", "|=", "^="):
        return x.leaf(shape, "iub" if kind in "iu" else "b")
    if g.coin(0.3) and shape:
        return x.leaf(shape, "fiub")
    return x.expr(shape, depth=2)


def _ex_lit(g, text):
    return g.x.ex(text, atom=True)


def _combined_exact(g, dest_text, op, rhs):
    """Whether ``dest op rhs`` is exact (the value written back)."""
    d = g.x.ex(dest_text, atom=True)
    if d is None:
        return True                 # NumPy refuses it: an error statement
    binop = op[:-1]
    kind = {"+": "add", "-": "add", "*": "mul", "/": "div", "//": "int", "%": "mod",
            "@": "matmul"}.get(binop, "move")
    if binop == "**":
        kind = "mul"
        kids = [d, d]
    else:
        kids = [d, rhs]
    return g.x.ex(f"({dest_text}) {binop} ({rhs.text})", kind, kids) is not None


# -- writes ----------------------------------------------------------------------------

def st_aug(g):
    """``x op= expr`` on an argument, a local or a view, or ``x[key] op= expr``."""
    name = _writable(g)
    if name is None:
        return None
    base, key = _dest(g, name)
    text, val = _target(g, base, key)
    if val is None:
        return None
    kind = np.asarray(val).dtype.kind
    op = _aug_op(g, kind)
    rhs = _rhs_for(g, op, val, kind)
    if rhs is None or not _combined_exact(g, text, op, rhs):
        return None
    feats = {f"op {op}", "aug view" if base != name else ("aug key" if key else "aug name")}
    return Stmt("aug", [f"{text} {op} {rhs.text}"], feats)


def st_matmul_inplace(g):
    """``A @= B`` with B square (NumPy's only valid form)."""
    names = [n for n, v in g.env.items() if isinstance(v, np.ndarray) and v.ndim == 2
             and v.dtype.kind in "fi"]
    if not names:
        return None
    a = g.choice(names)
    m = g.env[a].shape[1]
    sq = [n for n, v in g.env.items() if isinstance(v, np.ndarray) and v.shape == (m, m)
          and v.dtype.kind in "fib"]
    rhs = g.x.ex(g.choice(sq), atom=True) if sq and g.coin(0.8) else \
        g.x.ex(f"np.eye({m}, dtype=np.{g.env[a].dtype.name}) * 2", "mul", [])
    if rhs is None or not _combined_exact(g, a, "@=", rhs):
        return None
    return Stmt("aug", [f"{a} @= {rhs.text}"], {"op @="})


def st_setitem(g):
    """``x[key] = expr`` with a basic key (or through a view made on the spot)."""
    name = _writable(g)
    if name is None:
        return None
    base, key = _dest(g, name, need_key=True)
    text, val = _target(g, base, key)
    if val is None:
        return None
    shape = np.shape(val)
    rhs = g.x.expr(shape, depth=2) if g.coin(0.7) else g.x.leaf(shape)
    if rhs is None:
        return None
    return Stmt("setitem", [f"{text} = {rhs.text}"],
                {"setitem view" if base != name else "setitem key"})


def st_adv_setitem(g):
    """``x[advanced] = expr`` / ``op=``: integer lists and arrays (duplicates),
    masks and indices computed from the data."""
    name = _writable(g)
    if name is None:
        return None
    key = g.x.advanced_key(name)
    if key is None:
        return None
    text, val = _target(g, name, key)
    if val is None:
        return None
    shape = np.shape(val)
    if g.coin(0.35):
        kind = np.asarray(val).dtype.kind
        op = g.choice(AUG_OPS["f" if kind == "f" else ("b" if kind == "b" else "i")][:3])
        rhs = g.x.leaf((), "fi" if kind != "b" else "b") if g.coin(0.5) else \
            g.x.leaf(shape, "fi" if kind != "b" else "b")
        if rhs is None or not _combined_exact(g, text, op, rhs):
            return None
        return Stmt("adv", [f"{text} {op} {rhs.text}"], {"adv aug", _key_feature(key)})
    if "%" not in key and ">" not in key and "<" not in key and "=" not in key and \
            g.coin(0.3):
        rhs = g.x.leaf((), "fiub")
    else:
        rhs = g.x.expr(shape, depth=1) if shape and shape[0] else g.x.leaf((), "fiub")
    if rhs is None:
        return None
    return Stmt("adv", [f"{text} = {rhs.text}"], {"adv set", _key_feature(key)})


def _key_feature(key):
    if any(c in key for c in "<>=") or key.isidentifier():
        return "mask from data"
    if "%" in key:
        return "index from data"
    return "integer key"


def st_stencil(g):
    """A stencil update along one axis: ``a[1:-1] = c * (b[:-2] + b[2:])``,
    ``a[1:] += a[:-1]`` (read and written overlap)."""
    names = [n for n, v in g.env.items() if isinstance(v, np.ndarray) and v.ndim >= 1
             and v.shape[0] >= 3 and v.dtype.kind in "fi" and v.flags.writeable]
    if not names:
        return None
    a = g.choice(names)
    same = [n for n in names if g.env[n].shape == g.env[a].shape] or [a]
    b = g.choice(same)
    x = g.x
    lo, mid, hi = (x.ex(f"{b}[{k}]", atom=True) for k in (":-2", "1:-1", "2:"))
    if lo is None or mid is None or hi is None:
        return None
    form = g.choice(["avg", "shift", "three"])
    if form == "avg":
        s = x.ex(f"{lo.text} + {hi.text}", "add", [lo, hi])
        c = x.ex(g.choice(["0.5", "0.25", "2"]), atom=True)
        if s is None or c is None:
            return None
        rhs = x.ex(f"{c.text} * ({s.text})", "mul", [c, s]) \
            if g.env[a].dtype.kind == "f" else s
        text = f"{a}[1:-1] = {rhs.text}" if rhs is not None else None
    elif form == "shift":
        op = g.choice(["+=", "-=", "*="])
        rhs = x.ex(f"{b}[:-1]", atom=True)
        text = f"{a}[1:] {op} {b}[:-1]"
        if rhs is None or not _combined_exact(g, f"{a}[1:]", op, rhs):
            return None
    else:
        two = x.ex(f"2 * {mid.text}", "mul", [x.ex("2", atom=True), mid])
        d = x.ex(f"{lo.text} - {two.text}", "add", [lo, two]) if two is not None else None
        rhs = x.ex(f"{d.text} + {hi.text}", "add", [d, hi]) if d is not None else None
        text = f"{a}[1:-1] = {rhs.text}" if rhs is not None else None
    if text is None:
        return None
    return Stmt("stencil", [text], {"stencil"})


def st_view_write(g):
    """A write through a view made and used in one statement:
    ``a.T[0] = e``, ``a.reshape(-1)[k] += e``, ``a[1:, ::2][0] = e``."""
    names = [n for n, v in g.env.items() if isinstance(v, np.ndarray) and v.ndim >= 1
             and v.flags.writeable]
    if not names:
        return None
    n = g.choice(names)
    v = g.env[n]
    inner = g.x.basic_key(v.shape, allow_scalar=False)
    bases = [f"{n}.T", f"{n}[{inner}]", f"{n}[::-1]"]
    if g.reshape_safe(n):
        bases += [f"{n}.reshape(-1)", f"{n}.ravel()", f"{n}.T.reshape(-1)"]
    base = g.choice(bases)
    try:
        shape = np.shape(g.eval(base))
    except Exception:                           # noqa: BLE001
        return None
    key = g.x.basic_key(shape)
    text, val = _target(g, base, key)
    if val is None:
        return None
    if g.coin(0.5):
        kind = np.asarray(val).dtype.kind
        op = g.choice(AUG_OPS["f" if kind == "f" else ("b" if kind == "b" else "i")][:3])
        rhs = g.x.leaf(np.shape(val), "fi" if kind != "b" else "b")
        if rhs is None or not _combined_exact(g, text, op, rhs):
            return None
        return Stmt("view write", [f"{text} {op} {rhs.text}"], {"view write aug"})
    rhs = g.x.expr(np.shape(val), depth=1)
    if rhs is None:
        return None
    return Stmt("view write", [f"{text} = {rhs.text}"], {"view write set"})


# -- out= ------------------------------------------------------------------------------------

def st_out(g):
    """``np.<ufunc>(a, b, out=d)`` (``where=`` too) and reductions with
    ``out=`` (``np.sum(a, axis=0, out=d)``), into an array or a view."""
    x = g.x
    r = g.ints(0, 10)
    if r < 6:
        f = g.choice(UFUNCS_OUT + ["negative", "absolute", "floor_divide", "square"])
        name = _writable(g, read_only=0.02)
        if name is None:
            return None
        base, key = _dest(g, name)
        text, val = _target(g, base, key)
        if val is None or not isinstance(val, np.ndarray):
            return None
        shape = val.shape
        if f in ("negative", "absolute", "square"):
            a = x.leaf(shape, "fi")
            args = [a]
        elif f == "floor_divide":
            args = [x.leaf(shape, "fi"), x.nonzero_leaf(shape)]
        else:
            args = [x.expr(shape, depth=1, numeric=True), x.leaf(shape, "fi")]
        if any(a is None for a in args):
            return None
        where = ""
        if g.coin(0.25):
            c = x.compare(shape)
            if c is not None:
                where = f", where={c.text}"
        call = f"np.{f}({', '.join(a.text for a in args)}"
        kind = {"multiply": "mul", "square": "mul", "floor_divide": "int",
                "add": "add", "subtract": "add"}.get(f, "move")
        kids = args if f != "square" else args * 2
        if x.ex(call + ")", kind, kids) is None:
            return None
        return Stmt("out", [f"{call}, out={text}{where})"], {f"out ufunc{' where' if where else ''}"})
    if r < 9:
        arrs = x.arrays(lambda v: v.ndim >= 1 and v.dtype.kind in "fi")
        if not arrs:
            return None
        a = g.choice(arrs)
        va = np.asarray(g.env[a])
        ax = int(g.ints(0, va.ndim))
        f = g.choice(["sum", "max", "min", "sum"])
        shape = va.shape[:ax] + va.shape[ax + 1:]
        dests = [n for n, v in g.env.items() if isinstance(v, np.ndarray) and v.shape == shape]
        lines = []
        if dests and g.coin(0.7):
            d = g.choice(dests)
            dtype = f"{d}.dtype"
        else:
            d = g.new_local("t")
            dtype = f"np.{g.choice(['float64', 'int64', 'float32'])}"
            lines.append(f"{d} = np.zeros({shape!r}, {dtype})")
        kind = "sum" if f == "sum" else "move"
        src = x.ex(a, atom=True)
        if src is None or x.ex(f"np.{f}({a}, axis={ax})", kind, [src], extra=(ax,)) is None:
            return None
        if not _reduced_then_cast(g, f, a, ax, shape, dtype):
            return None
        lines.append(f"np.{f}({a}, axis={ax}, out={d})")
        return Stmt("out", lines, {"out reduction"})
    # functions NumPy gives out= that are not ufuncs or reductions
    arrs = x.arrays(lambda v: v.ndim >= 1 and v.dtype.kind in "fi")
    if not arrs:
        return None
    a = g.choice(arrs)
    va = np.asarray(g.env[a])
    dests = [n for n, v in g.env.items() if isinstance(v, np.ndarray) and v.shape == va.shape
             and v.flags.writeable]
    if not dests:
        return None
    d = g.choice(dests)
    form = g.choice([f"np.clip({a}, -1, 2, out={d})", f"np.cumsum({a}, axis=0, out={d})",
                     f"np.matmul({a}, np.eye({va.shape[-1]}, dtype={d}.dtype), out={d})"])
    if "cumsum" in form and (x.ex(f"np.cumsum({a}, axis=0)", "sum", [x.ex(a, atom=True)],
                                  extra=(0,)) is None
                             or not _reduced_then_cast(g, "cumsum", a, 0, va.shape,
                                                       f"{d}.dtype")):
        return None
    return Stmt("out", [form], {"out function"})


def _reduced_then_cast(g, f, a, ax, shape, dtype) -> bool:
    """Whether NumPy's ``np.<f>(a, axis=ax, out=<dtype>)`` equals the
    reduction cast to ``dtype``, as polyarray computes it.  Into a dtype
    that cannot hold the values (a narrower integer, bool), NumPy casts
    the partial results (``np.max([300, 50], out=int8)`` is 50, the cast
    maximum 44); no such statement is drawn (polyarray/numpy_differences.md)."""
    try:
        into = g.eval(f"np.{f}({a}, axis={ax}, out=np.zeros({shape!r}, {dtype}))")
        cast = g.eval(f"np.asarray(np.{f}({a}, axis={ax})).astype({dtype})")
    except Exception:                           # noqa: BLE001  (NumPy's error: drawn)
        return True
    return np.array_equal(into, cast)
