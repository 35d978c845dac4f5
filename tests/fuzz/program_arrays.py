"""Statement generators of random programs that make arrays: views
(``v = x[1:, ::2]``, ``.T``, reshape, expand_dims; read-only ones), arrays
NumPy's creation functions make (lazy inside pa.jit), locals and second
names, rebinding, NumPy scalars and 0-d arrays.  See ``fuzz.program_statements``
for the conventions (``st_*(g)`` returns a ``Stmt`` or None).
"""
from __future__ import annotations

import numpy as np

from fuzz.program_statements import Stmt


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
