"""``pa.shared``: device-resident state that programs read and update.

Theano's shared variables: a ``SharedVariable`` is an Array (a placeholder
node of its own name) whose value the variable holds, so a program that
reads it needs no binding for it, and ``pa.compile(..., updates={var:
expr})`` gives it a new value after each call.  Updates are computed by the
same kernels as the outputs, into new buffers, from the old values: every
expression of a call sees the values from before the call (Theano's
semantics), and no buffer is ever read and written by one call, so there is
no read-after-write hazard to guard.  After the call the variables take the
new buffers (the old ones go back to the pool): no copy, no host transfer.

The value lives where the last program that updated it ran (a device array
of that target); another target reads it through the host.  ``StateUpdates``
is what ``Program`` uses: which placeholders are shared, the update
expressions, and the swap after a call.
"""
from __future__ import annotations

import itertools

import numpy as np

from .array import Array, node_of
from .ir import nodes as N
from .ops import creation as C, inputs as I
from .ops.dtypes import check_dtype

_COUNTER = itertools.count()


class SharedVariable(Array):
    """A named array whose value lives with the variable, on a device once a
    program has run with it: ``get_value()``/``set_value()``; programs read
    it without a binding, and update it with ``pa.compile(..., updates=)``.
    It cannot be assigned to in place (``w[i] = v``): give an update."""
    __slots__ = ("name", "_value", "_where")

    def __init__(self, node, value):
        super().__init__(node)
        self.name = node.name
        self._value, self._where = value, "host"

    def get_value(self) -> np.ndarray:
        """A NumPy copy of the current value (waits for the device)."""
        v = self._value
        if isinstance(v, np.ndarray):
            return v.copy()
        return np.asarray(v.get()).reshape(self.shape)

    def set_value(self, value) -> None:
        """Replace the value (NumPy's shape; the dtype must be the variable's,
        as for a binding: Python scalars and lists convert when lossless)."""
        self._value = _checked_value(value, self.name, self.shape, self.dtype)
        self._where = "host"

    @property
    def value_location(self) -> str:
        """Where the value is now: "host", or the target whose program last
        updated it (a device array there)."""
        return self._where

    # a variable is a dict key in ``updates=`` (by identity, as in Theano; ``==``
    # stays elementwise, but dicts compare full hashes, distinct for live objects)
    __hash__ = object.__hash__
    _shape_fixed = True         # the bound value's shape (``x.shape = s`` refused)

    def __setitem__(self, key, value):
        self._write_root(None)

    def _write_root(self, node):
        """Writes (``w[i] = v``, ``w += v``, through a view) are refused."""
        raise TypeError(f"shared variable {self.name!r} cannot be assigned to in place; "
                        f"give an update: pa.compile(..., updates={{{self.name}: new_value}})")

    def __repr__(self):
        return (f"pa.shared({self.name!r}, {self.dtype.name}{list(self.shape)}, "
                f"on {self.value_location})")

    # A copy is a variable of its own: a new name (``w_copy``, ``w_copy2``...),
    # a copy of the value (Theano's ``shared.copy()``); an update of one never
    # touches the other.  A pickle carries the name and the value, and loads as
    # a variable of that name where no live one has it, else as a copy.
    def __copy__(self):
        return shared(self.get_value(), name=_free_name(self.name))

    def __deepcopy__(self, memo):
        return self.__copy__()

    def __reduce__(self):
        return _unpickle, (self.name, self.get_value())


def view_of(array, what) -> SharedVariable:
    """A shared variable whose value is ``array`` itself, not a copy (a
    read-only view of its memory): each call reads the memory as it is
    then.  Named ``view<k>``; ``set_value`` replaces the view by a copy."""
    check_dtype(array.dtype, what)
    view = array.view()
    view.flags.writeable = False            # never written through by us
    k = next(_COUNTER)
    while f"view{k}" in C.SHARED:
        k = next(_COUNTER)
    name = f"view{k}"
    var = SharedVariable(C.placeholder(name, view.shape, view.dtype, shared=True), view)
    C.SHARED[name] = var
    return var


def _free_name(name) -> str:
    """``name``, or where a live variable has it, the first free of
    ``name_copy``, ``name_copy2``, ..."""
    if name not in C.SHARED:
        return name
    candidate, k = f"{name}_copy", 1
    while candidate in C.SHARED:
        k += 1
        candidate = f"{name}_copy{k}"
    return candidate


def _unpickle(name, value):
    return shared(value, name=_free_name(name))


def _checked_value(value, name, shape=None, dtype=None) -> np.ndarray:
    if isinstance(value, Array):
        raise TypeError(f"shared variable {name!r}: its value must be concrete data "
                        "(a NumPy array or a scalar), not a lazy expression; use "
                        "updates= to give it an expression's value")
    if isinstance(value, (bool, int, float, complex, list, tuple)) and dtype is not None:
        value = I.python_binding(value, name, dtype)
    arr = np.array(getattr(value, "get", lambda: value)(), copy=True, order="C")
    if shape is not None and arr.shape != tuple(shape):
        raise ValueError(f"shared variable {name!r} has shape {tuple(shape)}; "
                         f"the new value has shape {arr.shape}")
    if dtype is not None and arr.dtype != dtype:
        raise TypeError(f"shared variable {name!r} has dtype {np.dtype(dtype).name}; "
                        f"the new value has dtype {I.describe_dtype(arr.dtype)}")
    return arr


def shared(value, name=None, dtype=None) -> SharedVariable:
    """A shared variable holding a copy of ``value`` (Theano's ``shared``):
    a named array that programs read without a binding and update with
    ``pa.compile(outputs, updates={var: expr})``.  ``name`` must be a
    Python identifier that no live shared variable has (default:
    ``shared<k>``); ``dtype`` casts ``value`` first."""
    if dtype is not None:
        value = np.asarray(value, dtype=dtype)
    if name is None:
        name = f"shared{next(_COUNTER)}"
        while name in C.SHARED:
            name = f"shared{next(_COUNTER)}"
    elif name in C.SHARED:
        raise ValueError(f"a shared variable named {name!r} exists already; "
                         "shared variables need distinct names")
    arr = _checked_value(value, name)
    var = SharedVariable(C.placeholder(name, arr.shape, arr.dtype, shared=True), arr)
    C.SHARED[name] = var
    return var


class StateUpdates:
    """The shared variables a program reads and the updates it applies:
    ``exprs`` are compiled after the user's outputs; ``apply(values)`` gives
    each updated variable its new value after a call that succeeded."""

    def __init__(self, variables: dict, targets: list, exprs: list):
        self.variables = variables      # placeholder name -> SharedVariable (all read)
        self.targets = targets          # the updated variables, in update order
        self.exprs = exprs              # their new values' nodes

    @classmethod
    def make(cls, updates, outputs):
        """From ``updates`` (a dict or a list of (variable, expression)
        pairs) and the user's output nodes; None when neither reads nor
        updates a shared variable.  Errors name the variable."""
        pairs = _pairs(updates)
        targets, exprs = [], []
        for var, expr in pairs:
            if not isinstance(var, SharedVariable):
                raise TypeError(f"updates: keys must be shared variables (pa.shared), "
                                f"got {type(var).__name__}")
            if any(t is var for t in targets):
                raise ValueError(f"updates: shared variable {var.name!r} is updated twice")
            node = node_of(expr) if isinstance(expr, Array) else \
                node_of(_constant(expr, var))
            if tuple(node.shape) != var.shape:
                raise ValueError(f"updates: the new value of shared variable {var.name!r} "
                                 f"has shape {tuple(node.shape)}; the variable has shape "
                                 f"{var.shape}")
            if node.dtype != var.dtype:
                raise TypeError(f"updates: the new value of shared variable {var.name!r} "
                                f"has dtype {node.dtype.name}; the variable has dtype "
                                f"{var.dtype.name} (cast it: expr.astype({var.dtype.name!r}))")
            targets.append(var)
            exprs.append(node)
        variables = {}
        for name, ph in N.placeholders(list(outputs) + exprs).items():
            var = C.shared_of(ph)
            if var is not None:
                variables[name] = var
        if not variables and not targets:
            return None
        return cls(variables, targets, exprs)

    def bindings(self, fits):
        """Placeholder name -> current value, for the call; a value that
        ``fits(value)`` says the program cannot read goes as a host copy."""
        out = {}
        for name, var in self.variables.items():
            v = var._value
            out[name] = v if isinstance(v, np.ndarray) or fits(v) else var.get_value()
        return out

    def call(self, prog, bindings, fetch=True):
        """One call of ``prog`` with the variables' values; the updates apply
        once it has succeeded: an error (bindings, memory, a failed check)
        leaves every variable.  ``fetch=False``: outputs stay on the device."""
        exe = prog._exe
        full = dict(bindings)
        full.update(self.bindings(exe.can_read))
        results = exe.fast_call(full) if exe.fast_call is not None else None
        if results is None:
            results = exe.run(self.prepared(prog, bindings, full))
        return self.finish(prog, results, fetch)

    def prepared(self, prog, bindings, full):
        """The user's bindings checked as for any call, plus the variables'."""
        prepared = prog.check_bindings(bindings)
        prepare = prog._target.prepare_binding
        prepared.update({name: prepare(full[name]) for name in self.variables})
        return prepared

    def finish(self, prog, results, fetch=True):
        """Split a call's results into the outputs (copied to the host when
        the user asked for host outputs) and the updates, and apply these."""
        outs, new = results[:prog._n_out], results[prog._n_out:]
        device_only = prog._exe_options.get("out") == "device" != prog.options.get("out")
        if new and getattr(prog._exe, "_checks", ()):
            # a failed check raises before the update, as this call's (waits for
            # it); reading other programs' deferred checks would blame them on
            # "an earlier out='device' call"
            prog._exe.read_flags()
        if device_only and fetch:       # updates kept on the device, outputs asked on the host
            outs = [r.get() for r in outs]      # waits, and reads earlier calls' checks
        if prog.target_name == "numpy":         # never share an array with the caller
            new = [r.copy() for r in new]
        self.apply(new, prog.target_name)
        return prog._pack(outs)

    def apply(self, values, where) -> None:
        """Give the updated variables their new values (one per update),
        computed by a program of target ``where``."""
        for var, value in zip(self.targets, values):
            var._value = value
            var._where = "host" if isinstance(value, np.ndarray) else where


def repeat_calls(prog, n, bindings):
    """``prog.repeat``: ``n`` calls, each seeing the previous one's updates.
    The executable's ``run_repeated`` (CUDA: replayed graphs) where it has
    one; else a loop of calls with the bindings uploaded once."""
    exe, state = prog._exe, prog._state
    run_repeated = getattr(exe, "run_repeated", None)
    if run_repeated is not None and not getattr(exe, "repeats_in_graphs", lambda: True)():
        run_repeated = None         # a step that waits for the device: call by call
    if state is None or not state.targets or run_repeated is None:
        bindings = prog.check_bindings(bindings)    # uploaded once, where it can be
        to_device = getattr(exe, "to_device", None)
        if to_device is not None:
            bindings = {k: to_device(v) for k, v in bindings.items()}
        for _ in range(n - 1):
            if state is None:
                exe.run(bindings)
            else:
                state.call(prog, dict(bindings), fetch=False)
        return prog(**bindings)
    full = state.bindings(exe.can_read)
    carry = [(prog._n_out + j, var.name) for j, var in enumerate(state.targets)]
    results = run_repeated(state.prepared(prog, bindings, full), n, carry)
    return state.finish(prog, results)


def _pairs(updates):
    if updates is None:
        return []
    if isinstance(updates, dict):
        return list(updates.items())
    try:
        pairs = [tuple(p) for p in updates]
    except TypeError:
        raise TypeError("updates must be a dict or a list of (shared variable, "
                        f"expression) pairs, got {type(updates).__name__}") from None
    if any(len(p) != 2 for p in pairs):
        raise TypeError("updates: each item must be a (shared variable, expression) pair")
    return pairs


def _constant(value, var):
    from .api.creation import asarray
    return asarray(np.broadcast_to(np.asarray(value, var.dtype), var.shape))


__all__ = ["SharedVariable", "shared", "StateUpdates", "repeat_calls"]
