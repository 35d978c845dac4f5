"""Statement generators of random programs: writes, views, creations, loops,
branches and NumPy's errors, in the style of NPBench's kernels.

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

from fuzz.program_exprs import CMP, broadcasts_to


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


# -- views -------------------------------------------------------------------------------

def st_view(g):
    """``v = <a view of x>`` (basic indexing, .T, transpose, reshape, ravel,
    squeeze, expand_dims, swapaxes; diagonal and broadcast_to read-only);
    a later write through ``v`` must reach ``x`` and its other views."""
    names = [n for n, v in g.env.items() if isinstance(v, np.ndarray)]
    if not names:
        return None
    n = g.choice(names)
    v = g.env[n]
    forms = ["key"] * 4 + ["T", "none", "expand"]
    if g.reshape_safe(n):
        forms += ["reshape", "ravel"]
    if v.ndim >= 2:
        forms += ["transpose", "swapaxes", "diagonal", "moveaxis"]
    if 1 in v.shape:
        forms += ["squeeze"] * 2
    if v.ndim:
        forms += ["broadcast"]
    form = g.choice(forms)
    if form == "key":
        text = f"{n}[{g.x.basic_key(v.shape, allow_scalar=False)}]"
    elif form == "T":
        text = f"{n}.T"
    elif form == "transpose":
        perm = [int(p) for p in g.rng.permutation(v.ndim)]
        text = g.choice([f"{n}.transpose({tuple(perm)})", f"np.transpose({n}, {perm})"])
    elif form == "swapaxes":
        text = g.choice([f"{n}.swapaxes(0, -1)", f"np.swapaxes({n}, 0, 1)"])
    elif form == "moveaxis":
        text = f"np.moveaxis({n}, 0, -1)"
    elif form == "reshape":
        shapes = [(-1,), (v.size,), (1, -1), (-1, 1)]
        if v.ndim >= 2:
            shapes.append(v.shape[::-1])
            shapes.append((v.shape[0], -1))
        s = g.choice(shapes)
        text = g.choice([f"{n}.reshape({s})", f"np.reshape({n}, {s})"])
    elif form == "ravel":
        text = g.choice([f"{n}.ravel()", f"np.ravel({n})"])
    elif form == "none":
        text = g.choice([f"{n}[None]", f"{n}[..., None]", f"{n}[:, None]" if v.ndim else
                         f"{n}[None]"])
    elif form == "expand":
        text = f"np.expand_dims({n}, {int(g.ints(-v.ndim - 1, v.ndim + 1))})"
    elif form == "squeeze":
        text = g.choice([f"{n}.squeeze()", f"np.squeeze({n})"])
    elif form == "diagonal":
        text = f"{n}.diagonal()"
    else:
        text = f"np.broadcast_to({n}, (2,) + {n}.shape)"
    try:
        val = g.eval(text)
    except Exception:                           # noqa: BLE001
        return None
    if not isinstance(val, np.ndarray):
        return None
    w = g.new_local("v")
    return Stmt("view", [f"{w} = {text}"], {f"view {form}"},
                reshape_view=w if form in ("reshape", "ravel", "expand", "squeeze") else None)


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
    maximum 44); no such statement is drawn (docs/numpy_differences.md)."""
    try:
        into = g.eval(f"np.{f}({a}, axis={ax}, out=np.zeros({shape!r}, {dtype}))")
        cast = g.eval(f"np.asarray(np.{f}({a}, axis={ax})).astype({dtype})")
    except Exception:                           # noqa: BLE001  (NumPy's error: drawn)
        return True
    return np.array_equal(into, cast)


# -- created arrays, locals, rebinding ---------------------------------------------------------

def _some_shape(g):
    shapes = [np.shape(v) for v in g.env.values() if isinstance(v, np.ndarray)]
    N, M, _ = g.dims
    return g.choice(shapes + [(N,), (N, M), (M,)])


def st_create(g):
    """A new array made by NumPy's creation functions (lazy inside pa.jit)."""
    x = g.x
    t = g.new_local("t")
    N, M, K = g.dims
    shape = _some_shape(g)
    dt = g.choice(["np.float64", "np.float32", "np.int64", "np.int32", "float", "int"])
    names = [n for n, v in g.env.items() if isinstance(v, np.ndarray)]
    form = g.choice(["zeros", "empty", "empty", "ones_like", "full", "arange", "arange2",
                     "linspace", "eye", "copy", "array", "asarray", "list", "zeros_like",
                     "full_like", "identity", "tri", "zeros0d", "stack"])
    lines = []
    feat = f"create {form}"
    if form == "zeros":
        lines.append(f"{t} = np.zeros({shape!r}, {dt})")
    elif form == "empty":               # written in full before it is read
        rhs = x.expr(shape, depth=1) if shape else x.leaf((), "fi")
        if rhs is None:
            return None
        lines.append(f"{t} = np.empty({shape!r}, {dt})")
        fill = g.choice([f"{t}[...] = {rhs.text}", f"{t}[:] = {rhs.text}" if shape else
                         f"{t}[...] = {rhs.text}"])
        if shape and g.coin(0.3):
            a, b = x.leaf(shape, "fi"), x.leaf(shape, "fi")
            if a is None or b is None or x.ex(f"np.add({a.text}, {b.text})", "add",
                                              [a, b]) is None:
                return None
            fill = f"np.add({a.text}, {b.text}, out={t})"
        lines.append(fill)
    elif form in ("ones_like", "zeros_like") and names:
        lines.append(f"{t} = np.{form}({g.choice(names)})")
    elif form == "full_like" and names:
        lines.append(f"{t} = np.full_like({g.choice(names)}, {g.choice([2, 3, -1])})")
    elif form == "full":
        lines.append(f"{t} = np.full({shape!r}, {g.choice(['2.5', '-1', '3', 'alpha', 'n'])})")
    elif form == "arange":
        lines.append(f"{t} = np.arange({g.choice([N, M, N * M])}"
                     f"{', dtype=' + dt if g.coin(0.5) else ''})")
        if g.coin(0.4):
            lines[-1] = f"{t} = np.arange({N * M}).reshape({N}, {M})"
    elif form == "arange2":
        lines.append(f"{t} = np.arange({g.choice(['0.5', '-1', '1'])}, {N}, "
                     f"{g.choice(['0.5', '1', '0.25'])})")
    elif form == "linspace":
        q = g.choice([1, 2, 0.5])
        lines.append(f"{t} = np.linspace(0, {q * (N - 1)!r}, {N})")
    elif form == "eye":
        lines.append(f"{t} = np.eye({N}{', ' + str(M) if g.coin(0.5) else ''}"
                     f"{', k=1' if g.coin(0.3) else ''}{', dtype=' + dt if g.coin(0.4) else ''})")
    elif form == "identity":
        lines.append(f"{t} = np.identity({N})")
    elif form == "tri":
        lines.append(f"{t} = np.tri({N}, {M})")
    elif form == "copy" and names:
        n = g.choice(names)
        lines.append(g.choice([f"{t} = np.copy({n})", f"{t} = {n}.copy()", f"{t} = np.array({n})",
                               f"{t} = {n}.astype(np.float64)"]))
    elif form == "asarray" and names:
        # NumPy gives the same array back (no copy): writing the result writes it
        lines.append(f"{t} = np.asarray({g.choice(names)})")
        feat = "create asarray (same array)"
    elif form == "list":
        arrs = x.arrays(lambda v: v.ndim >= 1 and v.dtype.kind in "fi")
        if not arrs:
            return None
        n = g.choice(arrs)
        v = np.asarray(g.env[n])
        i, j = int(g.ints(0, v.shape[0])), int(g.ints(-v.shape[0], v.shape[0]))
        lines.append(g.choice([f"{t} = np.array([{n}[{i}], {n}[{j}] * 2])",
                               f"{t} = np.array([{n}[{i}].sum(), 1.5, {n}.max()])"]))
    elif form == "zeros0d":
        lines.append(g.choice([f"{t} = np.zeros(())", f"{t} = np.asarray(1.5)",
                               f"{t} = np.zeros((), np.int64)"]))
        feat = "create 0-d array"
    elif form == "stack":
        arrs = x.arrays(lambda v: v.ndim >= 1)
        if not arrs:
            return None
        n = g.choice(arrs)
        lines.append(g.choice([f"{t} = np.stack([{n}, {n} * 2])",
                               f"{t} = np.concatenate([{n}, {n}[::-1]])"]))
    else:
        return None
    return Stmt("create", lines, {feat})


def st_local(g):
    """``t = expr`` (a new array), ``t = x`` (a second name for the same
    array), or a rebinding ``x = x * 2`` (the argument is not written)."""
    x = g.x
    r = g.ints(0, 10)
    names = [n for n, v in g.env.items() if isinstance(v, np.ndarray)]
    if r < 5:
        target = _some_shape(g) if g.coin(0.6) else None
        e = x.expr(target, depth=2)
        if e is None:
            return None
        return Stmt("local", [f"{g.new_local('t')} = {e.text}"], {"local expr"})
    if r < 7 and names:
        return Stmt("local", [f"{g.new_local('t')} = {g.choice(names)}"], {"second name"})
    if not names:
        return None
    n = g.choice(names)
    v = g.env[n]
    if g.coin(0.5) and v.ndim >= 1:
        return Stmt("rebind", [f"{n} = {n}[{g.x.basic_key(v.shape, allow_scalar=False)}]"],
                    {"rebind to view"})
    e = x.expr(v.shape, depth=1)
    if e is None:
        return None
    return Stmt("rebind", [f"{n} = {n} + {e.p()}" if g.coin(0.5) else f"{n} = {e.text}"],
                {"rebind"})


def st_scalar(g):
    """NumPy scalars and 0-d arrays: ``s = x[i, j]`` and ``s += 1`` rebinds
    ``s`` (x unchanged); ``z = x[0, ...]`` is a 0-d view (``z += 1`` writes
    x); ``s = x.sum()`` is a scalar."""
    arrs = [n for n, v in g.env.items() if isinstance(v, np.ndarray) and v.ndim >= 1
            and v.size and v.dtype.kind in "fi"]
    if not arrs:
        return None
    n = g.choice(arrs)
    v = g.env[n]
    s = g.new_local("s")
    idx = ", ".join(str(int(g.ints(-d, d))) for d in v.shape)
    r = g.ints(0, 4)
    dests = [m for m, w in g.env.items() if isinstance(w, np.ndarray) and w.flags.writeable
             and w.dtype.kind in "fi"]
    if not dests:
        return None
    d = g.choice(dests)
    if r == 0:
        lines = [f"{s} = {n}[{idx}]", f"{s} += {g.choice(['1', '2', '0.5'])}",
                 f"{d}[...] += {s}" if g.env[d].dtype.kind == "f" else f"{d}[...] += int({s})"]
        feat = "scalar rebinds"
    elif r == 1:
        lines = [f"{s} = {n}[{idx}, ...]", f"{s} += {g.choice(['1', '2'])}"]
        feat = "0-d view write"
    elif r == 2:
        lines = [f"{s} = {n}.{g.choice(['sum', 'max', 'min'])}()", f"{s} *= 2",
                 f"{d}[...] -= {s}" if g.env[d].dtype.kind == "f" else f"{d}[...] -= int({s})"]
        feat = "0-d result"
    else:
        s2 = g.new_local("s")
        lines = [f"{s} = np.zeros((), {n}.dtype)", f"{s} += {n}[{idx}]", f"{s2} = {s}",
                 f"{s} += 1", f"{d}[...] = {s2}"]
        feat = "0-d array written in place"
    return Stmt("scalar", lines, {feat})


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
    (``x[i] += x[i - 1]``), columns (``x[:, i] = x[:, i - 1] * 0.5 + y``), or
    time steps of other statements (``for _ in range(n)``)."""
    r = g.ints(0, 3)
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
    ``x[m] = y[m]`` (a value per element: a graph break), ``t = x[m]``."""
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
    r = g.ints(0, 4)
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


def st_fori(g):
    """``pa.fori_loop(lo, hi, body, init)``: the body compiled once."""
    arrs = [n for n, v in g.env.items() if isinstance(v, np.ndarray) and v.dtype.kind in "fi"
            and v.size]
    if not arrs:
        return None
    n = g.choice(arrs)
    v = g.env[n]
    saved = dict(g.env)
    g.env["v"] = v.copy()
    try:
        e = g.x.expr(v.shape, depth=1)
    finally:
        g.env.clear()
        g.env.update(saved)
    if e is None or "v" not in e.text.replace("np.", "").split() and "v" not in e.text:
        e_text = "v * 0.5 + 1"
    else:
        e_text = e.text
    t = g.new_local("t")
    lines = ["def body(i, v):", f"    return ({e_text}).astype(v.dtype)",
             f"{t} = pa.fori_loop(0, {int(g.ints(1, 4))}, body, {n})"]
    if g.coin(0.5) and v.flags.writeable:
        lines.append(f"{n}[...] = {t}")
    return Stmt("fori", lines, {"fori_loop"})


def st_while_loop(g):
    """``pa.while_loop(cond, body, init)`` with a condition that ends."""
    arrs = [n for n, v in g.env.items() if isinstance(v, np.ndarray) and v.dtype.kind in "fi"
            and v.size]
    if not arrs:
        return None
    n = g.choice(arrs)
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
