"""``pa.fori_loop`` and ``pa.while_loop``: loops compiled once, run on the device.

A Python ``for`` loop over traced arrays unrolls: each iteration adds its
nodes to the DAG.  Kernels that repeat are built once (the compile cache
keys them by structure), but the DAG and its plan still grow with the trip
count, and a ``while`` loop on a traced condition graph-breaks at every
iteration, tracing its body again each time.  These primitives take JAX's
names and signatures: the body is traced *once*, on placeholders of the
carried values' shapes and dtypes (and the index, for ``fori_loop``),
compiled to one program, and that program runs once per iteration on the
target, its results (on the device) bound as the next iteration's carry.

    fori_loop(lower, upper, body_fun, init_val)    # body_fun(i, val) -> val
    while_loop(cond_fun, body_fun, init_val)       # cond_fun(val) -> bool

``init_val`` is an array or a tuple/list/dict of arrays (and Python or
NumPy scalars); the body must return the same structure, shapes and dtypes
(a ``TypeError`` names the leaf that differs, as JAX's does).  The loops
are eager, as NumPy's are: the initial values are computed when the loop is
called (inside ``pa.jit``: a graph break, ``polyarray.tracing``), the loop
runs, and the result is arrays holding the final values.  The body may read
other arrays (the function's arguments, constants): they are bound as they
are when the loop starts.  Use them for long loops whose body is the same
code every iteration (time steps, fixed-point iterations); a short loop
unrolled in Python fuses across iterations and is faster.
"""
from __future__ import annotations

import numpy as np

from . import tracing
from .array import Array, mark_array_0d
from .ops import eager
from .ops.creation import placeholder
from .program import compile as _compile, get_default_target


def fori_loop(lower, upper, body_fun, init_val):
    """``val = body_fun(i, val)`` for ``i`` in ``range(lower, upper)``,
    the body compiled once (JAX's ``fori_loop``; see the module docstring).
    ``lower`` and ``upper`` are integers (concrete values)."""
    lo, hi = (_concrete_int(v, name) for v, name in ((lower, "lower"), (upper, "upper")))
    index = np.result_type(np.asarray(lower).dtype, np.asarray(upper).dtype) \
        if not isinstance(lower, int) or not isinstance(upper, int) else np.dtype(np.int64)
    loop = _Loop(init_val, body_fun, "fori_loop", index_dtype=index)
    for i in range(lo, hi):
        loop.step(i)
    return loop.result()


def while_loop(cond_fun, body_fun, init_val):
    """``while cond_fun(val): val = body_fun(val)``, the body and the
    condition compiled once each (JAX's ``while_loop``; see the module
    docstring).  The condition is read on the host at every iteration."""
    loop = _Loop(init_val, body_fun, "while_loop", cond_fun=cond_fun)
    while loop.test():
        loop.step(None)
    return loop.result()


def _concrete_int(value, name):
    if isinstance(value, Array):
        value = np.asarray(value)
    if isinstance(value, (bool, np.bool_)) or not np.issubdtype(np.asarray(value).dtype,
                                                                np.integer):
        raise TypeError(f"fori_loop: {name} must be an integer, got {value!r}")
    return int(value)


# -- pytrees of arrays ------------------------------------------------------------

def _flatten(tree, path="val"):
    if isinstance(tree, (list, tuple)):
        parts = [_flatten(t, f"{path}[{k}]") for k, t in enumerate(tree)]
        return (type(tree).__name__, tuple(p[0] for p in parts)), \
            [leaf for p in parts for leaf in p[1]]
    if isinstance(tree, dict):
        keys = sorted(tree)
        parts = [_flatten(tree[k], f"{path}[{k!r}]") for k in keys]
        return ("dict", tuple(zip(keys, (p[0] for p in parts)))), \
            [leaf for p in parts for leaf in p[1]]
    if isinstance(tree, Array):
        return "leaf", [(path, tree)]
    if isinstance(tree, (np.ndarray, np.generic, bool, int, float)):
        from .api.creation import asarray
        return "leaf", [(path, asarray(tree))]
    raise TypeError(f"loop carry {path} is a {type(tree).__name__}: the carried value "
                    "must be arrays or scalars, in tuples, lists or dicts")


def _unflatten(structure, leaves):
    leaves = iter(leaves)

    def build(s):
        if s == "leaf":
            return next(leaves)
        tag, parts = s
        if tag == "dict":
            return {k: build(p) for k, p in parts}
        items = [build(p) for p in parts]
        return items if tag == "list" else tuple(items)
    return build(structure)


class _Loop:
    """One loop: the body (and condition) traced on carry placeholders and
    compiled once; the carry's current values (device arrays where the
    target has a device); the other placeholders the body reads, bound to
    their values when the loop started."""

    def __init__(self, init_val, body_fun, what, index_dtype=None, cond_fun=None):
        self.what = what
        self.structure, leaves = _flatten(init_val)
        self.paths = [p for p, _ in leaves]
        inits = [a for _, a in leaves]
        self.session = tracing.current()
        if self.session is not None:
            self.session.note_break(f"pa.{what} runs")
        self.target = self.session.target if self.session is not None else \
            get_default_target()
        self.names = [f"loop_carry{k}" for k in range(len(inits))]
        with tracing.untracked():           # the body's arrays are not the caller's state
            carry = [Array(placeholder(n, a.shape, a.dtype))
                     for n, a in zip(self.names, inits)]
            args = [_unflatten(self.structure, carry)]
            if index_dtype is not None:
                self.index = placeholder("loop_index", (), index_dtype)
                args.insert(0, Array(self.index))
            out_structure, out = _flatten(body_fun(*args), "body_fun's result")
        self._check(out_structure, out, inits)
        self.kinds = [(a.shape, a.dtype) for a in inits]
        self.body = self._program([a for _, a in out], device=True)
        self.cond = None
        if cond_fun is not None:
            with tracing.untracked():
                c = cond_fun(_unflatten(self.structure, carry))
            if not isinstance(c, Array):
                raise TypeError(f"{what}: cond_fun must return a boolean array (a lazy "
                                f"0-d array), got {type(c).__name__}; a Python bool does not "
                                "depend on the carry")
            if c.shape != () or c.dtype != np.bool_:
                raise TypeError(f"{what}: cond_fun must return a boolean scalar, got "
                                f"{c.dtype.name}{list(c.shape)}")
            self.cond = self._program([c], device=False)
        self.others = self._bindings_of_others()
        self.values = self._initial_values(inits)

    def _program(self, arrays, device):
        """The compiled program of ``arrays`` (device results where asked and
        the target has a device); a pa.jit call's cache keeps it for later
        calls."""
        options = {"out": "device"} if device and self.target in ("cuda", "opencl") else {}
        if self.session is None:
            return _compile(arrays, target=self.target, **options)
        key = ("loop", self.target, tuple(options.items())) + tuple(a.node for a in arrays)
        prog = self.session.programs.get(key)
        if prog is None:
            prog = self.session.programs[key] = _compile(arrays, target=self.target,
                                                         **options)
        return prog

    def _check(self, out_structure, out, inits):
        if out_structure != self.structure:
            raise TypeError(f"{self.what}: body_fun must return the structure of init_val "
                            f"({self.structure}), got {out_structure}")
        for path, got, want in zip(self.paths, (a for _, a in out), inits):
            if got.shape != want.shape or got.dtype != want.dtype:
                raise TypeError(f"{self.what}: body_fun's result {path} is "
                                f"{got.dtype.name}{list(got.shape)}, but the carried value "
                                f"is {want.dtype.name}{list(want.shape)}: the body must keep "
                                "each carried array's shape and dtype")

    def _bindings_of_others(self):
        """Values of the placeholders the body reads besides the carry."""
        mine = set(self.names) | {"loop_index"}
        needed = set(self.body.placeholders) | (set(self.cond.placeholders) if self.cond
                                                else set())
        others = sorted(needed - mine)
        if not others:
            return {}
        if self.session is None:
            raise eager.LazyValueError(
                f"{self.what}: the body reads the unbound placeholder(s) "
                f"{', '.join(map(repr, others))}; bind them first (or call the loop inside "
                "a pa.jit function, where they are its arguments)")
        return {n: self.session.bindings[n] for n in others}

    def _initial_values(self, inits):
        nodes = [a.node for a in inits]
        if self.session is not None:
            return list(self.session.evaluate(nodes))
        for node in nodes:
            eager.require_bound(node, f"{self.what}'s initial value", "bind it first, or "
                                "call the loop inside a pa.jit function")
        options = {"out": "device"} if self.target in ("cuda", "opencl") else {}
        values = _compile(list(inits), target=self.target, **options)()
        return list(values)

    def _bindings(self):
        b = dict(self.others)
        b.update(zip(self.names, self.values))
        return {n: v for n, v in b.items() if n in self.body.placeholders}

    def test(self) -> bool:
        b = dict(self.others)
        b.update(zip(self.names, self.values))
        (value,) = self.cond(**{n: v for n, v in b.items() if n in self.cond.placeholders})
        return bool(np.asarray(value.get() if hasattr(value, "get") else value))

    def step(self, i):
        b = self._bindings()
        if i is not None and "loop_index" in self.body.placeholders:
            b["loop_index"] = np.asarray(i, self.index.dtype)
        out = self.body(**b)
        self.values = list(out)

    def result(self):
        """The final carry as arrays (0-d ones too: written in place, as
        NumPy's 0-d arrays, not rebound as scalars)."""
        if self.session is not None:
            arrays = self.session.bind_values(self.values, self.kinds)
        else:
            from .api.creation import asarray
            arrays = [asarray(v if isinstance(v, np.ndarray) else
                              (v.get() if hasattr(v, "get") else np.asarray(v)))
                      for v in self.values]
        return _unflatten(self.structure, [a if a.shape else mark_array_0d(a) for a in arrays])
