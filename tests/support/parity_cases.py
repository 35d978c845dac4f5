"""The parity suite: every function and operator, written once against an
array namespace ``xp`` and run both as ``xp=numpy`` and ``xp=polyarray``.

A case whose NumPy call raises must raise the same exception type in
polyarray, at build time.  Every target reuses these cases.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest

import polyarray as pa
from helpers import ALL_DTYPES, assert_same, random_array


@dataclass
class Case:
    name: str
    fn: Callable                     # fn(xp, *inputs)
    shapes: tuple = ((3, 4),)
    dtypes: list = field(default_factory=lambda: list(ALL_DTYPES))
    ranges: tuple = ()               # per input: (low, high, nonzero)
    input_dtypes: Callable = None    # dtype -> list of input dtypes
    neg_strides: bool = False        # bind reversed views
    data_inputs: bool = False        # inputs as pa.array data, not placeholders

    def make_inputs(self, rng, dtype):
        dts = self.input_dtypes(dtype) if self.input_dtypes else [dtype] * len(self.shapes)
        out = []
        for k, (shape, dt) in enumerate(zip(self.shapes, dts)):
            low, high, nonzero = (self.ranges[k] if k < len(self.ranges) and self.ranges[k]
                                  else (None, None, False))
            if self.neg_strides and len(shape):
                big = random_array(rng, (shape[0] * 2,) + tuple(shape[1:]), dt, low, high, nonzero)
                out.append(big[::-2])
            else:
                out.append(random_array(rng, shape, dt, low, high, nonzero))
        return out


CASES = []


def case(*args, **kw):
    c = Case(*args, **kw)
    CASES.append(c)
    return c


# -- unary elementwise -------------------------------------------------
_POS = (0.2, 5.0, False)
_UNIT = (-0.9, 0.9, False)
UNARY_RANGES = {"log": _POS, "log2": _POS, "log10": _POS, "log1p": _POS, "sqrt": _POS,
                "arcsin": _UNIT, "arccos": _UNIT, "arctanh": _UNIT,
                "arccosh": (1.1, 5.0, False)}
for _name in ["exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "square", "sin",
              "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
              "arcsinh", "arccosh", "arctanh", "abs", "sign", "floor", "ceil", "trunc",
              "isnan", "isinf", "isfinite", "logical_not"]:
    case(f"{_name}", lambda xp, a, n=_name: getattr(xp, n)(a),
         ranges=(UNARY_RANGES.get(_name),))
case("round", lambda xp, a: xp.round(a))
case("round_decimals", lambda xp, a: xp.round(a, 2), dtypes=[np.dtype(np.float32), np.dtype(np.float64)])
case("neg", lambda xp, a: -a)
case("pos", lambda xp, a: +a)
case("abs_builtin", lambda xp, a: abs(a))
case("invert", lambda xp, a: ~a)
case("astype_f32", lambda xp, a: a.astype(np.float32))
case("astype_i32", lambda xp, a: a.astype(np.int32), ranges=((-100, 100, False),))
case("astype_bool", lambda xp, a: a.astype(np.bool_))
case("astype_u8", lambda xp, a: a.astype(np.uint8), ranges=((0, 200, False),))

# -- binary elementwise and operators ----------------------------------
_BIN_SHAPES = ((3, 1, 4), (5, 4))
_NZ = (None, None, True)
for _name, _rng in [("add", ()), ("subtract", ()), ("multiply", ()), ("divide", (None, _NZ)),
                    ("floor_divide", (None, _NZ)), ("remainder", (None, _NZ)),
                    ("arctan2", ()), ("maximum", ()), ("minimum", ()),
                    ("logical_and", ()), ("logical_or", ()), ("logical_xor", ()),
                    ("bitwise_and", ()), ("bitwise_or", ()), ("bitwise_xor", ()),
                    ("equal", ()), ("not_equal", ()), ("less", ()), ("less_equal", ()),
                    ("greater", ()), ("greater_equal", ())]:
    case(_name, lambda xp, a, b, n=_name: getattr(xp, n)(a, b), shapes=_BIN_SHAPES,
         ranges=_rng)
case("power", lambda xp, a, b: xp.power(a, b), shapes=_BIN_SHAPES,
     ranges=((0.2, 3.0, False), (0, 3, False)))
case("op_pow", lambda xp, a, b: a ** b, ranges=((0.2, 3.0, False), (0, 3, False)),
     shapes=((4,), (4,)))
for _sym, _f in [("+", lambda a, b: a + b), ("-", lambda a, b: a - b), ("*", lambda a, b: a * b),
                 ("/", lambda a, b: a / b), ("//", lambda a, b: a // b), ("%", lambda a, b: a % b),
                 ("&", lambda a, b: a & b), ("|", lambda a, b: a | b), ("^", lambda a, b: a ^ b),
                 ("<", lambda a, b: a < b), ("<=", lambda a, b: a <= b), (">", lambda a, b: a > b),
                 (">=", lambda a, b: a >= b), ("==", lambda a, b: a == b), ("!=", lambda a, b: a != b)]:
    case(f"op{_sym}", lambda xp, a, b, f=_f: f(a, b), shapes=((4, 1), (1, 5)),
         ranges=(None, _NZ))
# Python scalars are weak (NEP 50); NumPy arrays are strong
case("scalar_mul_float", lambda xp, a: a * 2.5)
case("scalar_rsub_int", lambda xp, a: 3 - a)
case("scalar_rtruediv", lambda xp, a: 1.5 / a, ranges=(_NZ,))
case("scalar_rfloordiv", lambda xp, a: 7 // a, ranges=(_NZ,))
case("scalar_mod", lambda xp, a: a % 3)
case("scalar_pow2", lambda xp, a: a ** 2)
case("scalar_bool_and", lambda xp, a: a & True)
case("scalar_cmp", lambda xp, a: a > 1)
case("ndarray_radd", lambda xp, a: np.arange(4.0, dtype=np.float32) + a)
case("ndarray_rmul_i8", lambda xp, a: np.ones(4, np.int8) * a)
case("where", lambda xp, c, a, b: xp.where(c, a, b), shapes=((3, 1), (3, 4), (4,)),
     input_dtypes=lambda d: [np.dtype(bool), d, d])
case("where_scalar", lambda xp, c, a: xp.where(c > 0, a, 0), shapes=((3, 4), (3, 4)),
     input_dtypes=lambda d: [np.dtype(np.float32), d])
case("where_nonbool_cond", lambda xp, c, a: xp.where(c, a, 1.5), shapes=((3, 4), (3, 4)),
     input_dtypes=lambda d: [np.dtype(np.int32), d])
case("clip", lambda xp, a: xp.clip(a, 1, 5))
case("clip_arrays", lambda xp, a, lo: xp.clip(a, lo, 10), shapes=((3, 4), (4,)))
case("clip_method", lambda xp, a: a.clip(max=2))
case("mixed_dtype_add", lambda xp, a, b: a + b, shapes=((3, 4), (3, 4)),
     input_dtypes=lambda d: [d, np.dtype(np.int16)])
case("mixed_f32_i32", lambda xp, a, b: a * b, shapes=((6,), (6,)),
     input_dtypes=lambda d: [np.dtype(np.float32), d])

# -- reductions ----------------------------------------------------------
_R3 = ((3, 4, 5),)
for _name in ["sum", "prod", "max", "min", "any", "all", "mean", "var", "std"]:
    _r = ((0.5, 1.5, False),) if _name == "prod" else ()
    for _axis in [None, 0, 1, -1, (0, 2)]:
        case(f"{_name}_axis{_axis}", lambda xp, a, n=_name, ax=_axis: getattr(xp, n)(a, axis=ax),
             shapes=_R3, ranges=_r)
    case(f"{_name}_keepdims", lambda xp, a, n=_name: getattr(xp, n)(a, axis=1, keepdims=True),
         shapes=_R3, ranges=_r)
    case(f"{_name}_method", lambda xp, a, n=_name: getattr(a, n)(axis=(1, 2)), shapes=_R3, ranges=_r)
case("var_ddof", lambda xp, a: xp.var(a, axis=0, ddof=1), shapes=_R3)
case("std_ddof", lambda xp, a: xp.std(a, ddof=1), shapes=_R3)
for _name in ["argmax", "argmin"]:
    for _axis in [None, 0, 1, -1]:
        case(f"{_name}_axis{_axis}", lambda xp, a, n=_name, ax=_axis: getattr(xp, n)(a, axis=ax),
             shapes=_R3)
case("argmax_method", lambda xp, a: a.argmax(axis=0), shapes=((6, 2),))
case("sum_empty", lambda xp, a: xp.sum(a, axis=0), shapes=((0, 3),))
case("max_empty_axis", lambda xp, a: xp.max(a, axis=0), shapes=((0, 3),))
case("sum_0d", lambda xp, a: xp.sum(a), shapes=((),))
# a small reduction read by another reduction: unrolled into its kernel
case("nearest_centre", lambda xp, a, b: xp.argmin(((a[:, None, :] - b[None]) ** 2).sum(axis=2),
                                                  axis=1), shapes=((7, 3), (4, 3)))
case("sum_of_max", lambda xp, a: xp.sum(xp.max(a, axis=2), axis=1), shapes=_R3)
case("max_of_sum", lambda xp, a: xp.max(xp.sum(a, axis=(0, 2)), axis=0), shapes=_R3)
case("argmax_of_prod", lambda xp, a: xp.argmax(xp.prod(a, axis=0), axis=1), shapes=_R3,
     ranges=((0.5, 1.5, False),))
case("all_of_any", lambda xp, a: xp.all(xp.any(a, axis=1), axis=0), shapes=_R3)
case("min_of_all", lambda xp, a: xp.min(xp.all(a, axis=2), axis=1), shapes=_R3)

# -- linear algebra ------------------------------------------------------
_SMALL = ((-3, 3, False), (-3, 3, False))
case("dot_2d", lambda xp, a, b: xp.dot(a, b), shapes=((3, 4), (4, 5)), ranges=_SMALL)
case("dot_1d", lambda xp, a, b: xp.dot(a, b), shapes=((4,), (4,)), ranges=_SMALL)
case("dot_2d_1d", lambda xp, a, b: xp.dot(a, b), shapes=((3, 4), (4,)), ranges=_SMALL)
case("dot_3d_2d", lambda xp, a, b: xp.dot(a, b), shapes=((2, 3, 4), (4, 5)), ranges=_SMALL)
case("dot_nd_nd", lambda xp, a, b: xp.dot(a, b), shapes=((2, 3, 4), (3, 4, 2)), ranges=_SMALL)
case("dot_0d", lambda xp, a, b: xp.dot(a, b), shapes=((), (3,)), ranges=_SMALL)
case("dot_mismatch", lambda xp, a, b: xp.dot(a, b), shapes=((3, 4), (5, 2)))
case("matmul_batch", lambda xp, a, b: xp.matmul(a, b), shapes=((2, 1, 3, 4), (5, 4, 2)),
     ranges=_SMALL)
case("matmul_op", lambda xp, a, b: a @ b, shapes=((3, 4), (4, 2)), ranges=_SMALL)
case("matmul_1d_2d", lambda xp, a, b: a @ b, shapes=((4,), (4, 2)), ranges=_SMALL)
case("matmul_2d_1d", lambda xp, a, b: a @ b, shapes=((3, 4), (4,)), ranges=_SMALL)
case("matmul_1d_1d", lambda xp, a, b: a @ b, shapes=((4,), (4,)), ranges=_SMALL)
case("matmul_rmatmul_ndarray", lambda xp, a: np.ones((2, 3), np.float32) @ a, shapes=((3, 4),))
case("matmul_0d", lambda xp, a, b: xp.matmul(a, b), shapes=((), (3,)))
case("matmul_mismatch", lambda xp, a, b: a @ b, shapes=((3, 4), (3, 4)))
case("matmul_mixed", lambda xp, a, b: a @ b, shapes=((3, 4), (4, 2)),
     input_dtypes=lambda d: [d, np.dtype(np.float32)], ranges=_SMALL)
case("vdot", lambda xp, a, b: xp.vdot(a, b), shapes=((3, 4), (12,)), ranges=_SMALL)
case("inner", lambda xp, a, b: xp.inner(a, b), shapes=((3, 4), (2, 4)), ranges=_SMALL)
case("outer", lambda xp, a, b: xp.outer(a, b), shapes=((3,), (2, 2)))
case("tensordot_1", lambda xp, a, b: xp.tensordot(a, b, axes=1), shapes=((3, 4), (4, 2)),
     ranges=_SMALL)
case("tensordot_2", lambda xp, a, b: xp.tensordot(a, b), shapes=((2, 3, 4), (3, 4, 5)),
     ranges=_SMALL)
case("tensordot_lists", lambda xp, a, b: xp.tensordot(a, b, axes=([1, 0], [0, 1])),
     shapes=((3, 4, 5), (4, 3, 2)), ranges=_SMALL)
for _sub, _shapes in [("ij,jk->ik", ((3, 4), (4, 5))), ("ii->i", ((4, 4),)),
                      ("ij->ji", ((3, 4),)), ("ij,ij->", ((3, 4), (3, 4))),
                      ("ij,jk", ((3, 4), (4, 2))), ("bij,bjk->bik", ((2, 3, 4), (2, 4, 3))),
                      ("i,j->ij", ((3,), (4,))), ("ijk->", ((2, 3, 4),))]:
    case(f"einsum_{_sub}", lambda xp, *ops, s=_sub: xp.einsum(s, *ops), shapes=_shapes,
         ranges=_SMALL)

# -- shapes ----------------------------------------------------------------
case("reshape", lambda xp, a: xp.reshape(a, (6, 2)))
case("reshape_minus1", lambda xp, a: a.reshape(2, -1))
case("reshape_F", lambda xp, a: xp.reshape(a, (2, 6), order="F"))
case("reshape_bad", lambda xp, a: a.reshape(5, -1))
case("reshape_after_transpose", lambda xp, a: a.T.reshape(-1))
case("transpose", lambda xp, a: xp.transpose(a), shapes=((2, 3, 4),))
case("transpose_axes", lambda xp, a: xp.transpose(a, (1, 0, 2)), shapes=((2, 3, 4),))
case("T", lambda xp, a: a.T)
case("permute_dims", lambda xp, a: xp.permute_dims(a, (2, 0, 1)), shapes=((2, 3, 4),))
case("broadcast_to", lambda xp, a: xp.broadcast_to(a, (2, 3, 4)), shapes=((3, 1),))
case("broadcast_to_bad", lambda xp, a: xp.broadcast_to(a, (3, 3)), shapes=((2,),))
case("expand_dims", lambda xp, a: xp.expand_dims(a, 1))
case("expand_dims_tuple", lambda xp, a: xp.expand_dims(a, (0, -1)))
case("squeeze", lambda xp, a: xp.squeeze(a), shapes=((1, 3, 1, 4),))
case("squeeze_axis", lambda xp, a: xp.squeeze(a, axis=2), shapes=((1, 3, 1, 4),))
case("squeeze_bad", lambda xp, a: xp.squeeze(a, axis=1), shapes=((1, 3, 1, 4),))
case("concatenate0", lambda xp, a, b: xp.concatenate([a, b]), shapes=((2, 4), (3, 4)))
case("concatenate1", lambda xp, a, b: xp.concatenate((a, b), axis=1), shapes=((3, 2), (3, 4)))
case("concatenate_none", lambda xp, a, b: xp.concatenate([a, b], axis=None), shapes=((2, 2), (3,)))
case("concatenate_mixed", lambda xp, a, b: xp.concatenate([a, b]), shapes=((2,), (3,)),
     input_dtypes=lambda d: [d, np.dtype(np.int16)])
case("concatenate_bad", lambda xp, a, b: xp.concatenate([a, b]), shapes=((2, 4), (3, 3)))
case("stack", lambda xp, a, b: xp.stack([a, b], axis=1), shapes=((3, 4), (3, 4)))
case("stack_bad", lambda xp, a, b: xp.stack([a, b]), shapes=((3, 4), (4, 3)))
case("flip", lambda xp, a: xp.flip(a), shapes=((3, 4),))
case("flip_axis", lambda xp, a: xp.flip(a, axis=1), shapes=((3, 4),))
case("moveaxis", lambda xp, a: xp.moveaxis(a, 0, -1), shapes=((2, 3, 4),))
case("swapaxes", lambda xp, a: xp.swapaxes(a, 0, 2), shapes=((2, 3, 4),))
case("ravel", lambda xp, a: xp.ravel(a), shapes=((2, 3, 4),))
case("bad_axis", lambda xp, a: xp.sum(a, axis=3), shapes=((2, 3),))

# -- indexing ----------------------------------------------------------------
_I = ((4, 5, 6),)
_KEYS = [
        ("int", (1,)), ("neg_int", (-1, 2)), ("slice", (slice(1, 3),)),
        ("step_slice", (slice(None, None, 2), slice(1, None, 3))),
        ("neg_step", (slice(None, None, -1), slice(4, 0, -2))),
        ("none", (None, 1, None)), ("ellipsis", (Ellipsis, 2)),
        ("ellipsis_mid", (1, Ellipsis, slice(0, 2))),
        ("gather_list", ([0, 3, 1],)), ("gather_neg", (slice(None), np.array([-1, 0, 2]))),
        ("gather_2d_idx", (np.array([[0, 1], [2, 3]]),)),
        ("gather_pair", (np.array([0, 2]), np.array([1, 4]))),
        ("gather_separated", (np.array([0, 2]), slice(None), np.array([1, 3]))),
        ("gather_int_mixed", (slice(None), 1, np.array([0, 5]))),
        ("bool_mask", (np.array([True, False, True, True]),)),
        ("bool_mask_2d", (np.arange(20).reshape(4, 5) % 3 == 0,)),
        ("empty_slice", (slice(2, 2),)),
        ("out_of_bounds", (7,)), ("too_many", (0, 0, 0, 0)),
        ("gather_oob", (np.array([0, 9]),)), ("float_index", (1.5,))]
for _key_name, _key in _KEYS:
    case(f"getitem_{_key_name}", lambda xp, a, k=_key: a[k], shapes=_I)
case("getitem_lazy_gather", lambda xp, a, i: a[i], shapes=((6, 3), (4,)),
     input_dtypes=lambda d: [d, np.dtype(np.int64)], ranges=(None, (-6, 5, False)))
case("getitem_data_mask", lambda xp, a: a[xp.asarray(np.array([True, False, True]))],
     shapes=((3, 2),))


def _setitem(xp, a, key, value):
    """``t[key] = value`` on a copy of ``a``, returning ``t``."""
    t = xp.array(a[...])
    t[key] = value
    return t


for _key_name in ["int", "neg_step", "none", "gather_separated", "gather_int_mixed",
                  "bool_mask_2d", "out_of_bounds"]:
    _key = dict(_KEYS)[_key_name]
    case(f"setitem_{_key_name}", lambda xp, a, k=_key: _setitem(xp, a, k, 3), shapes=_I)
case("setitem_columns_augmented",
     lambda xp, a, b: _setitem(xp, _setitem(xp, a, (slice(None), 1), b[:, 0]),
                               (slice(None), 2), a[:, 2] + b[:, 3]), shapes=((3, 4), (3, 4)))
case("setitem_lazy_scatter", lambda xp, a, i, b: _setitem(xp, a, i, b),
     shapes=((6, 3), (4,), (3,)), input_dtypes=lambda d: [d, np.dtype(np.int64), d],
     ranges=(None, (-6, 5, False)))

# -- creation -------------------------------------------------------------
case("zeros", lambda xp: xp.zeros((2, 3), np.float32), shapes=())
case("ones_int", lambda xp: xp.ones(4, np.int16), shapes=())
case("full", lambda xp: xp.full((2, 2), 7.5), shapes=())
case("full_dtype", lambda xp: xp.full((3,), 3, dtype=np.uint8), shapes=())
case("empty_shape", lambda xp: xp.zeros((0, 3)), shapes=())
case("arange", lambda xp: xp.arange(10), shapes=())
case("arange_float", lambda xp: xp.arange(0.5, 3.0, 0.25), shapes=())
case("arange_neg_step", lambda xp: xp.arange(10, 0, -3), shapes=())
case("arange_dtype", lambda xp: xp.arange(5, dtype=np.float32), shapes=())
case("linspace", lambda xp: xp.linspace(0.0, 1.0, 7), shapes=())
case("linspace_noend", lambda xp: xp.linspace(-2, 3, 5, endpoint=False), shapes=())
case("eye", lambda xp: xp.eye(3, 4, k=1), shapes=())
case("eye_int", lambda xp: xp.eye(3, dtype=np.int32), shapes=())
case("zeros_like", lambda xp, a: xp.zeros_like(a))
case("ones_like", lambda xp, a: xp.ones_like(a, dtype=np.float32))
case("full_like", lambda xp, a: xp.full_like(a, 2))
case("creation_plus_input", lambda xp, a: a + xp.arange(4))
case("array_leaf", lambda xp, a: xp.asarray(np.arange(12).reshape(3, 4)) * a)

# -- shapes: 0-d, size-0, broadcasting, negative strides --------------------
case("zero_d_add", lambda xp, a, b: a + b, shapes=((), ()))
case("zero_d_bcast", lambda xp, a, b: a * b, shapes=((), (3, 2)))
case("size0_add", lambda xp, a, b: a + b, shapes=((0, 4), (4,)))
case("size0_reduce", lambda xp, a: xp.sum(a, axis=1), shapes=((0, 4),))
case("bcast_fail", lambda xp, a, b: a + b, shapes=((3, 4), (2, 4)))
case("neg_strides_add", lambda xp, a, b: a - b, shapes=((3, 4), (3, 4)), neg_strides=True)
case("neg_strides_reduce", lambda xp, a: xp.sum(a, axis=0), shapes=((3, 4),), neg_strides=True)
case("neg_strides_T", lambda xp, a: a.T[::-1], shapes=((3, 4),), neg_strides=True)
case("data_inputs", lambda xp, a, b: xp.exp(a) + b, shapes=((3,), (3,)),
     data_inputs=True, dtypes=[np.dtype(np.float32)])

# -- composite expressions (fusion candidates for device targets) -----------
_F = [np.dtype(np.float32), np.dtype(np.float64)]
case("softmax", lambda xp, a: xp.exp(a - a.max(axis=1, keepdims=True))
     / xp.exp(a - a.max(axis=1, keepdims=True)).sum(axis=1, keepdims=True),
     shapes=((5, 7),), dtypes=_F)
case("logsumexp", lambda xp, a: xp.log(xp.sum(xp.exp(a - xp.max(a, axis=-1, keepdims=True)),
                                                axis=-1)) + xp.max(a, axis=-1),
     shapes=((4, 9),), dtypes=_F)
case("gradient", lambda xp, X, x, z, W, h:
     xp.dot(X.T, xp.dot(-(x - z), W) * h * (1.0 - h)),
     shapes=((8, 6), (8, 6), (8, 6), (6, 4), (8, 4)), dtypes=_F)
case("chain10", lambda xp, a: xp.tanh(xp.sqrt(xp.abs(xp.sin(a * 2.0 + 1.0) - 0.5)) * 3.0) + xp.cos(a) / 2.0,
     shapes=((64,),), dtypes=_F)
case("shared_subexpr", lambda xp, a: (lambda e: e * e + xp.exp(-(e * e)))(xp.sin(a) + 1.0),
     shapes=((10,),), dtypes=_F)


for _c in CASES:
    if not _c.shapes:
        _c.dtypes = [np.dtype(np.float64)]


def run_case(c: Case, dtypes, target, seed=0):
    """Evaluate ``c`` for each dtype with NumPy and with polyarray on ``target``.

    All dtypes of a case are compiled into one program (one device build).
    Where NumPy raises, polyarray must raise the same exception type when
    the expression is built.
    """
    rng = np.random.default_rng(seed)
    exprs, expected, bindings, labels = [], [], {}, []
    for dtype in dtypes:
        inputs = c.make_inputs(rng, dtype)
        try:
            with np.errstate(all="ignore"):
                want = c.fn(np, *inputs)
            exc = None
        except Exception as e:       # NumPy refuses: polyarray must refuse alike
            exc = type(e)
        if c.data_inputs:
            args, binds = [pa.array(v) for v in inputs], {}
        else:
            names = [f"a{k}_{np.dtype(dtype).name}" for k in range(len(inputs))]
            args = [pa.placeholder(n, v.shape, v.dtype) for n, v in zip(names, inputs)]
            binds = dict(zip(names, inputs))
        if exc is not None:
            with pytest.raises(exc):
                c.fn(pa, *args)
            continue
        expr = c.fn(pa, *args)
        assert isinstance(expr, pa.Array), f"{c.name}: got {type(expr).__name__}"
        want = np.asarray(want)
        assert expr.shape == want.shape and expr.dtype == want.dtype, \
            f"{c.name}[{dtype}]: built {expr.dtype}{expr.shape}, NumPy gives " \
            f"{want.dtype}{want.shape}"
        exprs.append(expr)
        expected.append(want)
        bindings.update(binds)
        labels.append(np.dtype(dtype).name)
    if not exprs:
        return
    prog = pa.compile(exprs, target=target)
    got = prog(**{k: v for k, v in bindings.items() if k in prog.placeholders})
    for g, w, label in zip(got, expected, labels):
        assert_same(g, w, f"{c.name}[{label}] on {target}")
