"""Node builders of custom kernels (CuPy's ``ElementwiseKernel`` and
``ReductionKernel``): the parameter strings parsed as CuPy parses them,
types resolved as CuPy resolves them, then ordinary nodes.

An elementwise kernel is one IndexLambda per output whose expression calls
a user C function (``codegen.user_functions``), so it fuses like a ufunc.
A reduction kernel is three: the map (elementwise), a ``Reduce`` whose op
is the user's combine function, and the post map (one per output).
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from ..ir import nodes as N
from ..codegen.user_functions import UserFunction, register
from .creation import as_node
from .dtypes import is_python_scalar, scalar_to_dtype
from .elementwise import broadcast_shapes, build
from .reductions import normalize_axes
from .shapes import expand_dims

# C spellings accepted for ``reduce_type`` beside NumPy names and placeholders
_C_TYPES = {"float": np.float32, "double": np.float64, "int": np.int32,
            "unsigned int": np.uint32, "long long": np.int64,
            "unsigned long long": np.uint64, "bool": np.bool_}


@dataclass(frozen=True)
class Param:
    name: str
    dtype: np.dtype | None      # None: a type placeholder (``ctype``)
    ctype: str


def parse_params(text, kernel, what) -> tuple:
    """``"float32 x, T y"`` -> Params (CuPy's ``ParameterInfo`` rules: a
    one-letter type is a placeholder, any other is a NumPy dtype name)."""
    if not isinstance(text, str):
        raise TypeError(f"{kernel}: {what} must be a string such as 'float32 x, T y', "
                        f"got {type(text).__name__}")
    params = []
    for part in (s.strip() for s in text.split(",")) if text.strip() else ():
        words = part.split()
        if len(words) < 2:
            raise ValueError(f"{kernel}: syntax error in {what} {part!r}: expected "
                             f"'<type> <name>' (e.g. 'float32 x' or 'T x')")
        for word in words[:-2]:
            if word == "raw":
                raise NotImplementedError(f"{kernel}: 'raw' parameters ({part!r}) are not "
                                          "supported: custom kernels are elementwise; "
                                          "use pa.raw_kernel for indexed access")
            raise ValueError(f"{kernel}: unknown keyword {word!r} in {what} {part!r}")
        t, name = words[-2:]
        if not name.isidentifier() or not name.isascii():
            raise ValueError(f"{kernel}: {name!r} in {what} {part!r} is not a C identifier")
        params.append(Param(name, None if len(t) == 1 else _dtype_name(t, kernel, part), t))
    return tuple(params)


def _dtype_name(t, kernel, part):
    try:
        dt = np.dtype(t)
    except TypeError:
        dt = None
    if dt is None or dt.name != t:
        raise ValueError(f"{kernel}: wrong type {t!r} in {part!r}: use a NumPy dtype name "
                         "(float32, float64, int32, int64, uint8, bool, ...) or a "
                         "one-letter type placeholder such as T")
    if dt.kind not in "biuf" or dt == np.float16:
        raise TypeError(f"{kernel}: {dt.name} ({part!r}) is not supported in custom kernels")
    return dt


def _is_scalar(x) -> bool:
    return isinstance(x, (bool, numbers.Number, np.generic)) and not isinstance(x, N.Node)


def resolve_types(kernel, in_params, out_params, args) -> dict:
    """Placeholder -> dtype, bound by the array arguments (CuPy's
    ``_decide_params_type``): an array must have exactly its parameter's
    dtype, scalars take their parameter's type."""
    types = {}
    for prm, a in zip(in_params, args):
        if _is_scalar(a):
            continue
        if prm.dtype is not None:
            if a.dtype != prm.dtype:
                raise TypeError(f"{kernel}: type mismatch for parameter {prm.name!r}: "
                                f"expected {prm.dtype.name}, got {a.dtype.name} "
                                f"(cast with astype)")
        elif prm.ctype in types and types[prm.ctype] != a.dtype:
            raise TypeError(f"{kernel}: type mismatch for parameter {prm.name!r} of type "
                            f"{prm.ctype}: expected {types[prm.ctype].name} (as an earlier "
                            f"{prm.ctype} argument), got {a.dtype.name}")
        else:
            if a.dtype.kind == "c":     # its C would apply C's operators to a struct
                raise TypeError(f"{kernel}: parameter {prm.name!r} of type {prm.ctype} is "
                                f"{a.dtype.name}: complex arrays are not supported in custom "
                                "kernels")
            types[prm.ctype] = a.dtype
    for prm in in_params + out_params:
        if prm.dtype is None and prm.ctype not in types:
            raise TypeError(f"{kernel}: cannot determine type {prm.ctype} of parameter "
                            f"{prm.name!r}: no array argument has a parameter of type "
                            f"{prm.ctype} (scalars take their parameter's type)")
    return types


def _dtype(prm, types):
    return prm.dtype if prm.dtype is not None else types[prm.ctype]


def _operands(kernel, in_params, args, types):
    """Arrays as nodes, scalars converted to their parameter's dtype."""
    if len(args) != len(in_params):
        raise TypeError(f"{kernel}: takes {len(in_params)} input argument(s) "
                        f"({', '.join(p.name for p in in_params)}), got {len(args)} "
                        "(outputs are returned, not passed)")
    ops = []
    for prm, a in zip(in_params, args):
        dt = _dtype(prm, types)
        if _is_scalar(a):
            if isinstance(a, (complex, np.complexfloating)):
                raise TypeError(f"{kernel}: complex scalar for parameter {prm.name!r}")
            if is_python_scalar(a):     # NumPy's conversion (OverflowError out of range)
                ops.append(scalar_to_dtype(a, dt))
            else:
                with np.errstate(all="ignore"):     # a NumPy scalar: cast, as CuPy casts
                    ops.append(np.asarray(a).astype(dt)[()])
        else:
            ops.append(a)
    if not any(isinstance(o, N.Node) for o in ops):
        raise TypeError(f"{kernel}: at least one input must be an array (the output "
                        "shape is the inputs' broadcast shape)")
    return ops


def _check_names(kernel, *groups):
    seen = set()
    for prm in (p for g in groups for p in g):
        if prm.name in seen:
            raise ValueError(f"{kernel}: parameter name {prm.name!r} is used twice")
        seen.add(prm.name)


@dataclass(frozen=True)
class ElementwiseDef:
    in_params: tuple
    out_params: tuple
    operation: str
    name: str
    preamble: str
    reference: object


def elementwise_def(in_params, out_params, operation, name, preamble="", reference=None):
    _check_kernel_name(name)
    ins = parse_params(in_params, name, "in_params")
    outs = parse_params(out_params, name, "out_params")
    if not outs:
        raise ValueError(f"{name}: out_params names no output")
    _check_names(name, ins, outs)
    for s, what in ((operation, "operation"), (preamble, "preamble")):
        if not isinstance(s, str):
            raise TypeError(f"{name}: {what} must be a string of C code")
    return ElementwiseDef(ins, outs, operation, name, preamble, reference)


def _check_kernel_name(name):
    if not isinstance(name, str) or not name.isidentifier() or not name.isascii():
        raise ValueError(f"custom kernel name {name!r} must be a C identifier")


def _typedefs(types):
    return tuple(sorted(types.items()))


def elementwise(kdef, args) -> tuple:
    """The output nodes of ``kdef`` applied to ``args`` (nodes or scalars)."""
    args = [a if _is_scalar(a) else as_node(a) for a in args]
    if len(args) == len(kdef.in_params):
        types = resolve_types(kdef.name, kdef.in_params, kdef.out_params, args)
    else:
        types = {}
    ops = _operands(kdef.name, kdef.in_params, args, types)
    shape = broadcast_shapes(*(o.shape for o in ops if isinstance(o, N.Node)),
                             what=f"{kdef.name}: inputs")
    params = tuple((p.name, _dtype(p, types)) for p in kdef.in_params)
    variables = tuple((p.name, _dtype(p, types)) for p in kdef.out_params)
    outs = []
    for k, prm in enumerate(kdef.out_params):
        fn = UserFunction(kdef.name, "elementwise_kernel", f"out{k}", params, variables,
                          kdef.operation, prm.name, _dtype(prm, types), _typedefs(types),
                          kdef.preamble)
        fname = register(fn, kdef.reference)
        outs.append(build(kdef.name, fname, ops, [d for _, d in params], fn.result, shape))
    return tuple(outs)


@dataclass(frozen=True)
class ReductionDef:
    in_params: tuple
    out_params: tuple
    map_expr: str
    reduce_expr: str
    post_map_expr: str
    identity: str
    name: str
    reduce_type: str | None
    preamble: str
    reference: object


def reduction_def(in_params, out_params, map_expr, reduce_expr, post_map_expr, identity,
                  name, reduce_type=None, preamble="", reference=None):
    _check_kernel_name(name)
    ins = parse_params(in_params, name, "in_params")
    outs = parse_params(out_params, name, "out_params")
    if not ins or not outs:
        raise ValueError(f"{name}: a reduction kernel needs at least one input and one output")
    _check_names(name, ins, outs)
    for prm in ins + outs:
        if prm.name in ("a", "b"):
            raise ValueError(f"{name}: parameter name {prm.name!r} is reserved (reduce_expr "
                             "combines a and b; post_map_expr reads a)")
    for s, what in ((map_expr, "map_expr"), (reduce_expr, "reduce_expr"),
                    (post_map_expr, "post_map_expr"), (identity, "identity"),
                    (preamble, "preamble")):
        if not isinstance(s, str):
            raise TypeError(f"{name}: {what} must be a string of C code")
    if reduce_type is not None and not isinstance(reduce_type, str):
        raise TypeError(f"{name}: reduce_type must be a type name string")
    return ReductionDef(ins, outs, map_expr, reduce_expr, post_map_expr, identity, name,
                        reduce_type, preamble, reference)


def _reduce_dtype(rdef, types):
    t = rdef.reduce_type
    if t is None:
        return _dtype(rdef.out_params[0], types)
    t = " ".join(t.split())
    if len(t) == 1:
        if t not in types:
            raise TypeError(f"{rdef.name}: reduce_type {t} is not the type of any parameter")
        return types[t]
    if t in _C_TYPES:
        return np.dtype(_C_TYPES[t])
    return _dtype_name(t, rdef.name, f"reduce_type={t!r}")


def reduction(rdef, args, axis=None, keepdims=False) -> tuple:
    """The output nodes of ``rdef`` over ``axis`` of its broadcast inputs."""
    args = [a if _is_scalar(a) else as_node(a) for a in args]
    types = resolve_types(rdef.name, rdef.in_params, rdef.out_params, args) \
        if len(args) == len(rdef.in_params) else {}
    ops = _operands(rdef.name, rdef.in_params, args, types)
    shape = broadcast_shapes(*(o.shape for o in ops if isinstance(o, N.Node)),
                             what=f"{rdef.name}: inputs")
    axes = normalize_axes(axis, len(shape))
    acc = _reduce_dtype(rdef, types)
    defs = _typedefs({**types, "_type_reduce": acc})
    params = tuple((p.name, _dtype(p, types)) for p in rdef.in_params)
    kind, ref = "reduction_kernel", rdef.reference
    new = lambda role, ps, var, st, ret, res, partner="": UserFunction(  # noqa: E731
        rdef.name, kind, role, ps, var, st, ret, res, defs, rdef.preamble, partner)
    identity = register(new("identity", (), (), "", rdef.identity, acc), ref)
    combine = register(new("reduce", (("a", acc), ("b", acc)), (), "", rdef.reduce_expr,
                           acc, identity), ref)
    mapped = build(f"{rdef.name}:map", register(new("map", params, (), "", rdef.map_expr,
                                                        acc), ref),
                   ops, [d for _, d in params], acc, shape)
    kept = tuple(n for d, n in enumerate(shape) if d not in axes)
    red = N.Reduce.make(kept, acc, combine, mapped, axes)
    variables = tuple((p.name, _dtype(p, types)) for p in rdef.out_params)
    outs = []
    for k, prm in enumerate(rdef.out_params):
        post = register(new(f"post{k}", (("a", acc),), variables, rdef.post_map_expr,
                            prm.name, _dtype(prm, types)), ref)
        out = build(rdef.name, post, [red], [acc], _dtype(prm, types), kept)
        outs.append(expand_dims(out, axes) if keepdims else out)
    return tuple(outs)


__all__ = ["ElementwiseDef", "ReductionDef", "elementwise", "elementwise_def",
           "parse_params", "reduction", "reduction_def", "resolve_types"]
