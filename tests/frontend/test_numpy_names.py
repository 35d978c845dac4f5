"""NumPy code unchanged: NumPy's everyday names that polyarray
lacked, NumPy's keywords it refused, and the array API's spellings, each
against NumPy on every target (dtypes compared, integers and bools exact);
the errors and the names themselves are in test_numpy_names_api.py.

Every case is written once against a namespace ``xp`` (``numpy`` or
``polyarray``).  The cases of one group (a function, or a few of a family)
are one program: one compile per group and target, the inputs bound as
placeholders, float16 included on every target."""
import warnings

import numpy as np
import pytest

import polyarray as pa
from helpers import assert_same

rng = np.random.default_rng(16)
F32 = rng.standard_normal((3, 5)).astype(np.float32)
F64 = rng.standard_normal((4, 5))
SPEC = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, -2.5, 1e-300, 3e38, -7.0, 2.0])
SPEC_R = SPEC[::-1].copy()
SPEC32 = SPEC.astype(np.float32)
I32 = rng.integers(-9, 10, (4, 5)).astype(np.int32)
I8 = np.array([-128, -7, -1, 0, 1, 2, 5, 127], np.int8)
U8 = np.array([0, 1, 2, 7, 128, 255], np.uint8)
I64 = np.array([-2**63, -5, -1, 0, 1, 3, 2**62], np.int64)
B = rng.random((4, 5)) < 0.5
NANS = F64.copy()
NANS[0, 1] = NANS[1, 0] = np.nan
NANS[3] = np.nan
MASK = rng.random((4, 5)) < 0.6
MASK[2] = False
ROWMASK = np.array([True, False, True, True, False])

GROUPS = {}


def case(group, label, fn, *inputs):
    GROUPS.setdefault(group, []).append((label, fn, inputs))


# -- ufuncs composed of others ---------------------------------------------------
case("hypot", "f32", lambda xp, a, b: xp.hypot(a, b), F32, F32[::-1])
case("hypot", "special", lambda xp, a, b: xp.hypot(a, b), SPEC, SPEC_R)
case("hypot", "big", lambda xp, a: xp.hypot(a, a), np.array([1e200, 3e38, 1e-300]))
case("hypot", "int", lambda xp, a: xp.hypot(a, 3), I32)
case("hypot", "int8_f16", lambda xp, a: xp.hypot(a, a), I8)
case("copysign", "special", lambda xp, a, b: xp.copysign(a, b), SPEC, SPEC_R)
case("copysign", "scalar", lambda xp, a: xp.copysign(a, -1.0), F32)
case("copysign", "signbits", lambda xp, a: xp.signbit(xp.copysign(2.0, a)), SPEC)
case("copysign", "int", lambda xp, a, b: xp.copysign(a, b), I32, F64)
case("signbit", "special", lambda xp, a: xp.signbit(a), SPEC)
case("signbit", "f32", lambda xp, a: xp.signbit(a), SPEC32)
case("signbit", "ints", lambda xp, a, b, c: (xp.signbit(a), xp.signbit(b), xp.signbit(c)),
     I8, U8, B)
case("logaddexp", "special", lambda xp, a, b: xp.logaddexp(a, b), SPEC, SPEC_R)
case("logaddexp", "equal", lambda xp, a: xp.logaddexp(a, a), SPEC)
case("logaddexp", "f32", lambda xp, a: xp.logaddexp(a, 1000.0 * a), F32)
case("logaddexp", "int", lambda xp, a: xp.logaddexp(a, 2), I32)
case("fmax_fmin", "special", lambda xp, a, b: (xp.fmax(a, b), xp.fmin(a, b)), SPEC, SPEC_R)
case("fmax_fmin", "nan_both", lambda xp, a: (xp.fmax(a, a), xp.fmin(a, np.nan)), SPEC)
case("fmax_fmin", "ints", lambda xp, a, b: (xp.fmax(a, b), xp.fmin(a, 0), xp.fmax(b, b)),
     I32, B)
case("angles", "f32", lambda xp, a: (xp.deg2rad(a), xp.rad2deg(a), xp.radians(a),
                                     xp.degrees(a)), F32)
case("angles", "int", lambda xp, a: (xp.deg2rad(a), xp.rad2deg(a)), I32)
case("angles", "u8_f16", lambda xp, a: xp.deg2rad(a), U8)
case("reciprocal", "float", lambda xp, a, b: (xp.reciprocal(a), xp.reciprocal(b)), SPEC, F32)
case("reciprocal", "ints", lambda xp, a, b, c, d: (xp.reciprocal(a), xp.reciprocal(b),
                                                   xp.reciprocal(c), xp.reciprocal(d)),
     I32, I8, U8, I64)
case("reciprocal", "bool", lambda xp, a: xp.reciprocal(a), B)
case("cbrt", "special", lambda xp, a: (xp.cbrt(a), xp.signbit(xp.cbrt(a))), SPEC)
case("cbrt", "f32_int", lambda xp, a, b: (xp.cbrt(a), xp.cbrt(b)), F32, I32)
case("exp2", "all", lambda xp, a, b, c: (xp.exp2(a), xp.exp2(b), xp.exp2(c)), F32, I32, SPEC)
case("heaviside", "special", lambda xp, a: (xp.heaviside(a, 0.5), xp.heaviside(a, a)), SPEC)
case("heaviside", "int", lambda xp, a, b: xp.heaviside(a, b), I32, F64)
case("float_power", "all", lambda xp, a, b: (xp.float_power(xp.abs(a), 1.5),
                                             xp.float_power(b, 2), xp.float_power(b, -1.0)),
     F32, I32)

SHIFT_COUNTS = np.array([0, 1, 3, 7, 8, 9, 15, 31, 32, 33, 63, 64, 65, 100, -1, -8])
for _dt in ("int8", "uint8", "int16", "int32", "uint32", "int64", "uint64"):
    _x = (np.arange(-8, 8) * 37).astype(_dt)
    _c = (SHIFT_COUNTS if _dt[0] == "i" else np.abs(SHIFT_COUNTS)).astype(_dt)
    case("shifts", _dt, lambda xp, a, b: (xp.left_shift(a, b), xp.right_shift(a, b),
                                          xp.bitwise_left_shift(a, b),
                                          xp.bitwise_right_shift(a, b)), _x, _c)
    case("shifts", _dt + "_const", lambda xp, a: (a << 3, a >> 3, 1 << a[4:5], a >> 70,
                                                  xp.left_shift(a, 100)), _x)
case("shifts", "bool_mixed", lambda xp, a, b: (xp.left_shift(a, a), xp.right_shift(b, a)), B, I32)

case("nan_to_num", "special", lambda xp, a: (xp.nan_to_num(a), xp.nan_to_num(
    a, nan=-1.0, posinf=7, neginf=-9.5)), SPEC)
case("nan_to_num", "f32_int", lambda xp, a, b: (xp.nan_to_num(a, posinf=1e40), xp.nan_to_num(b)),
     SPEC32, I32)
case("isclose", "float", lambda xp, a, b: (xp.isclose(a, b), xp.isclose(a, b, equal_nan=True),
                                           xp.isclose(a, a + 1e-9 * a, rtol=0, atol=1e-3)),
     SPEC, SPEC_R)
case("isclose", "mixed", lambda xp, a, b: (xp.isclose(a, b), xp.isclose(b, 0.5),
                                           xp.isclose(a, 2)), I32, F32[:1])
case("allclose", "all", lambda xp, a, b: (xp.allclose(a, a + 1e-9), xp.allclose(a, a[::-1]),
                                          xp.allclose(b, b), xp.allclose(b, b, equal_nan=True)),
     F64, SPEC)

# -- rearranging -----------------------------------------------------------------
case("atleast", "one", lambda xp, a: (xp.atleast_1d(a[0, 0]), xp.atleast_2d(a[0]),
                                      xp.atleast_3d(a), xp.atleast_3d(a[0]),
                                      xp.atleast_2d(a[None])), I32)
case("atleast", "several", lambda xp, a, b: xp.atleast_2d(a, b[0, 0], b), F32, I32)
case("stacks", "hv", lambda xp, a, b: (xp.hstack([a, b[:3]]), xp.hstack((a[0], b[0])),
                                       xp.vstack([a[0], b[1, :5]]), xp.vstack([a, b])), F32, I32)
case("stacks", "dcol", lambda xp, a, b: (xp.dstack([a[0], b[0]]), xp.dstack((a, b[:3])),
                                         xp.column_stack([a[0], b[0], a.T[:5, :2]]),
                                         xp.hstack([a, a], dtype=np.float64)), F32, I32)
case("unstack", "all", lambda xp, a: xp.unstack(a, axis=1) + xp.unstack(a[None], axis=-2), I32)
case("meshgrid", "xy_ij", lambda xp, a, b: xp.meshgrid(a, b) + xp.meshgrid(a, b, indexing="ij")
     + xp.meshgrid(a, b, a[:2], sparse=True), F32[0], I32[:, 0])
case("tile", "all", lambda xp, a: (xp.tile(a, 2), xp.tile(a, (2, 1, 3)), xp.tile(a[0], (3, 2)),
                                   xp.tile(a, (0, 2)), xp.tile(a[:, :1], 4)), I32)
case("repeat", "all", lambda xp, a: (xp.repeat(a, 2, axis=1), xp.repeat(a, [1, 0, 3, 2], axis=0),
                                     xp.repeat(a, 3), xp.repeat(a, 0, axis=-1),
                                     a.repeat(2), xp.repeat(a[0, 0], 4)), I32)
case("kron", "all", lambda xp, a, b, c: (xp.kron(a[:2, :3], b[0]), xp.kron(a[0], b[1]),
                                         xp.kron(c[:2, :2], c[0]), xp.kron(a[0, 0], b[:2])),
     I32, F32, B)
case("roll", "all", lambda xp, a: (xp.roll(a, 7), xp.roll(a, -2, axis=1), xp.roll(a, (1, -6),
                                   axis=(0, 1)), xp.roll(a, (2, 3), axis=(1, 1)),
                                   xp.roll(a, 13, axis=-1)), I32)
case("diff", "all", lambda xp, a, b: (xp.diff(a), xp.diff(a, 2, axis=0), xp.diff(a, n=7),
                                      xp.diff(b), xp.diff(a, prepend=0, append=a[:, :1]),
                                      xp.diff(a, axis=0, prepend=a[:1] * 2.5)), I32, B)
case("diff", "u8_wraps", lambda xp, a: xp.diff(a), U8)
PAD_WIDTHS = [1, (2, 3), ((1, 0), (4, 2)), ((7, 1),), [[2], [6]]]
for _mode in ("constant", "edge", "reflect", "symmetric", "wrap"):
    case("pad", _mode, lambda xp, a, m=_mode: tuple(xp.pad(a, w, mode=m) for w in PAD_WIDTHS),
         I32[:3, :4])
case("pad", "values", lambda xp, a, b: (xp.pad(a, 2, constant_values=((1, 2), (3, 4))),
                                        xp.pad(b, (1, 2), constant_values=7.9),
                                        xp.pad(b[:1, :1], 3, mode="reflect"),
                                        xp.pad(a[None], ((0, 0), (1, 1), (2, 0)), "symmetric")),
     F32, I32)
case("take_along_axis", "all", lambda xp, a, i, j: (
    xp.take_along_axis(a, i, axis=1), xp.take_along_axis(a, i[:, :2], axis=-1),
    xp.take_along_axis(a, j, axis=0), xp.take_along_axis(a[0], i[0], axis=None)),
    F32, np.argsort(F32, axis=1), np.array([[2, -1, 0, 1, -3]]))

# -- matrices --------------------------------------------------------------------
case("diag", "all", lambda xp, a, b: (xp.diag(a[0]), xp.diag(a[0], 2), xp.diag(a[0], -3),
                                      xp.diag(a), xp.diag(a, 1), xp.diag(a, -2), xp.diag(a, 9),
                                      xp.diag(b[0]), xp.diag(a[0, :0], 2)), I32, B)
case("diagonal", "all", lambda xp, a: (xp.diagonal(a), xp.diagonal(a, 2), xp.diagonal(a, -1),
                                       xp.diagonal(a[None], 1, 2, 1), a.diagonal(-3),
                                       xp.diagonal(a[None], 0, -1, 0)), I32)
case("trace", "all", lambda xp, a, b: (xp.trace(a), xp.trace(a, -1), a.trace(1),
                                       xp.trace(b, dtype=np.float32), xp.trace(b[None], 0, 1, 2),
                                       xp.trace(a, 9)), F32, I8[:6].reshape(2, 3))
case("tril_triu", "all", lambda xp, a, b: (xp.tril(a), xp.tril(a, -1), xp.triu(a, 2),
                                           xp.triu(a[None], -2), xp.tril(a[0]), xp.triu(b, 1)),
     I32, B)
case("cross", "all", lambda xp, a, b: (xp.cross(a[:, :3], b[:3, 1:4]),
                                       xp.cross(a[:, :3], b[0, :3]),
                                       xp.cross(a[:3, :3], b[:3, :3], axisa=0, axisb=0, axisc=0)),
     F32, I32)
case("vecdot", "all", lambda xp, a, b, c: (xp.vecdot(a, a[:1]), xp.vecdot(b, b, axis=0),
                                           xp.vecdot(c, c), xp.vecdot(b[:, None], b[None])),
     F32, I32, B)
_ORDS = [None, 1, 2, np.inf, -np.inf, 0, 3, -1.5]
case("norm", "vectors", lambda xp, a: tuple(xp.linalg.norm(a, o, axis=1) for o in _ORDS)
     + (xp.linalg.norm(a), xp.linalg.norm(a[0], 2), xp.linalg.norm(a, axis=0, keepdims=True)),
     F32)
case("norm", "matrices", lambda xp, a: tuple(xp.linalg.norm(a, o) for o in
                                             ("fro", "f", 1, -1, np.inf, -np.inf))
     + (xp.linalg.norm(a[None], 1, axis=(2, 1), keepdims=True),
        xp.linalg.norm(a[None], np.inf, axis=(-1, 1))), I32)
case("norm", "vector_matrix_norm", lambda xp, a: (
    xp.linalg.vector_norm(a), xp.linalg.vector_norm(a, axis=(0, 1), keepdims=True, ord=3),
    xp.linalg.vector_norm(a[None], axis=(2, 0), ord=np.inf), xp.linalg.vector_norm(a, axis=-1),
    xp.linalg.matrix_norm(a[None]), xp.linalg.matrix_norm(a, ord=1, keepdims=True),
    xp.linalg.matrix_norm(a, ord=-np.inf)), F32)
case("linalg_namespace", "all", lambda xp, a, b: (
    xp.linalg.diagonal(a[None], offset=1), xp.linalg.trace(a[None], offset=-1),
    xp.linalg.outer(a[0], b[0]), xp.linalg.cross(a[:, :3], b[:3, 2:]),
    xp.linalg.matmul(a, b.T[:5]), xp.linalg.tensordot(a, b[:3], axes=2),
    xp.linalg.tensordot(a, b.T, axes=1), xp.linalg.matrix_transpose(a[None]),
    xp.linalg.vecdot(a, b[1:], axis=-1)), F32, I32)

# -- statistics --------------------------------------------------------------------
case("nansum_nanprod", "all", lambda xp, a, b: (
    xp.nansum(a), xp.nansum(a, axis=1), xp.nansum(a, axis=0, keepdims=True, dtype=np.float32),
    xp.nanprod(a, axis=1), xp.nansum(b, axis=0), xp.nanprod(b[:, :2], 1), xp.nansum(a, initial=2)),
    NANS, I32)
case("nanmax_nanmin", "all", lambda xp, a, b, m: (
    xp.nanmax(a, axis=1), xp.nanmin(a, axis=1), xp.nanmax(a, axis=0, keepdims=True),
    xp.nanmin(a), xp.nanmax(a, axis=1, initial=0.5), xp.nanmin(a, 1, where=m, initial=9),
    xp.nanmax(b, axis=0), xp.nanmax(a.astype(np.float32), 1)), NANS, I32, MASK)
case("nanmean", "all", lambda xp, a, b, m: (
    xp.nanmean(a), xp.nanmean(a, axis=1), xp.nanmean(a.astype(np.float32), axis=0),
    xp.nanmean(b, axis=1), xp.nanmean(a, 1, where=m), xp.nanmean(a, 0, keepdims=True)),
    NANS, I32, MASK)
case("ptp", "all", lambda xp, a, b: (xp.ptp(a), xp.ptp(a, axis=1), xp.ptp(b, 0, keepdims=True)),
     F32, I8[:6].reshape(2, 3))
case("average", "all", lambda xp, a, b, w: (
    xp.average(a), xp.average(b, axis=1), xp.average(a, axis=1, weights=w),
    xp.average(b, weights=np.abs(I32) + 1.0), xp.average(a, 0, keepdims=True))
    + xp.average(b, axis=1, weights=w, returned=True) + xp.average(a, 1, returned=True)
    + xp.average(b, axis=(0, 1), weights=np.abs(I32) + 1, returned=True),
    F32, I32, np.arange(1.0, 6.0))
case("count_nonzero", "all", lambda xp, a, b, c: (
    xp.count_nonzero(a), xp.count_nonzero(a, axis=0), xp.count_nonzero(b, axis=1, keepdims=True),
    xp.count_nonzero(c, axis=(0, 1))), I32, SPEC[None], B)

# -- keywords NumPy has ------------------------------------------------------------
case("reduce_where", "all", lambda xp, a, m, r: (
    xp.sum(a, axis=1, where=m), xp.prod(a, where=m), xp.sum(a, 0, where=r),
    xp.any(a > 1, axis=1, where=m), xp.all(a > -1, axis=0, where=m, keepdims=True),
    xp.mean(a, axis=1, where=m), xp.mean(a, where=r), a.sum(1, where=m),
    xp.mean(a.astype(np.int32), axis=1, where=m)), F64, MASK, ROWMASK)
case("reduce_initial", "all", lambda xp, a, b, m: (
    xp.max(a, axis=1, initial=0.5), xp.min(a, initial=-9), xp.amax(b, 0, initial=3),
    xp.amin(b, axis=1, initial=2.7), xp.max(b, 1, where=m, initial=-100),
    xp.min(a, axis=0, where=m, initial=1e9), xp.sum(b, axis=0, initial=5),
    xp.prod(a[:, :2], 1, initial=2), xp.max(a[:, :0], axis=1, initial=7),
    a.max(axis=1, initial=1.0)), F64, I32, MASK)
case("var_std", "all", lambda xp, a, m: (
    xp.var(a, axis=1, where=m), xp.std(a, 0, where=m, ddof=1), xp.var(a, correction=1),
    xp.std(a, dtype=np.float32), a.var(1, ddof=2)), F64, MASK)
case("argmax_keepdims", "all", lambda xp, a: (
    xp.argmax(a, keepdims=True), xp.argmin(a, axis=0, keepdims=True),
    xp.argmax(a, -1, keepdims=True), a.argmin(keepdims=True), a.argmax(1)), F32)
case("clip", "all", lambda xp, a: (
    xp.clip(a, min=-1, max=1), xp.clip(a, max=0.5), xp.clip(a, -0.5, None), a.clip(max=0),
    xp.clip(a, a_min=0, a_max=2)), F32)
case("shape_keywords", "all", lambda xp, a: (
    xp.ravel(a, order="F"), xp.ravel(a, "K"), a.ravel("F"), a.flatten(order="C"),
    xp.reshape(a, (5, 4), copy=None), xp.reshape(a, (2, -1), order="F"),
    xp.squeeze(a[None, :, None], axis=(0, 2)), xp.expand_dims(a, (0, -1)),
    a.astype(np.float32, copy=False), a.reshape(20, copy=True), xp.round(a, 0),
    xp.concatenate([a, a], axis=None, dtype=np.int64), xp.stack([a, a], 1, dtype=np.float32),
    xp.take(a, [3, 0], axis=1), a.take([1, -1])), I32)
case("einsum", "ellipsis", lambda xp, a, b: (
    xp.einsum("...ij,...jk", a[None], a.T[None]), xp.einsum("i...->...", a),
    xp.einsum("...i,...i", a, b[0]), xp.einsum("...", a), xp.einsum("ij...,j...->i...", a, b[0]),
    xp.einsum("ij,jk->ik", a[:, :1], b.T[:3], optimize=True),
    xp.einsum("ab...,b...", a[:, :, None], b[0, :5, None], optimize="greedy"),
    xp.einsum(a, [0, 1], b[:, :5], [2, 1], [0, 2]), xp.einsum(a, [Ellipsis, 1], b[0], [1]),
    xp.einsum("ij->j", b, dtype=np.float64)), F32, I32)
case("ufunc_keywords", "all", lambda xp, a, b: (
    xp.add(a, a, dtype=np.int16), xp.multiply(a, 3, dtype=np.float32), xp.sqrt(b, dtype=np.float64),
    xp.less(a, 2.5, dtype=bool), xp.exp(b, out=None), xp.hypot(a, a, dtype=np.float32),
    xp.exp2(a, dtype=np.float64), xp.left_shift(a, 2, dtype=np.int16)), I8, F32)
case("array_api", "all", lambda xp, a, b: (
    xp.acos(a / 3), xp.acosh(xp.abs(a) + 1), xp.asin(a / 3), xp.asinh(a), xp.atan(a),
    xp.atan2(a, a[::-1]), xp.atanh(a / 3), xp.pow(a, 2), xp.pow(b, 3), xp.bitwise_invert(b),
    xp.concat([b, b], axis=1), xp.permute_dims(b, (1, 0)), xp.matrix_transpose(b[None]),
    xp.astype(b, np.float32, copy=False), xp.expand_dims(b, 1), b.mT, xp.bitwise_left_shift(b, 2),
    xp.take(b, np.array([0, 3]), axis=0), xp.unstack(b)[1]), F32, I32)

# -- splitting, adding and removing elements, flips, grids --------------------------
SQ = rng.standard_normal((4, 6))
case("split", "all", lambda xp, a: (
    xp.split(a, 3, axis=1) + xp.split(a, [1, 3, -1, 10]) + xp.array_split(a, 4, axis=1)
    + xp.array_split(a, [2, 1], axis=-1) + xp.array_split(a[0], 5) + xp.split(a, 1)
    + xp.hsplit(a, 2) + xp.hsplit(a[0], [2]) + xp.vsplit(a, [1]) + xp.dsplit(a[None], 3)
    + xp.array_split(a[:, :0], 2, axis=1)), SQ)
case("split", "int_bool", lambda xp, a, b: tuple(xp.array_split(a, 3)) + tuple(
    xp.split(b, [2], axis=1)), I32, B)
case("append", "all", lambda xp, a, b: (
    xp.append(a, [1, 2]), xp.append(a, a[:1], axis=0), xp.append(a, b[:, :2], axis=1),
    xp.append(b, 2.5), xp.append(a[0], a[1]), xp.append(a[:0], b[0])), F64, I32)
case("insert", "scalar_index", lambda xp, a: (
    xp.insert(a, 1, 9), xp.insert(a, 1, [7, 8, 9, 10], axis=1), xp.insert(a, -1, 2.5, axis=0),
    xp.insert(a, 0, a[:, 0], axis=1), xp.insert(a, 5, [[1], [2], [3], [4]], axis=1),
    xp.insert(a, [1], [[7], [8], [9], [10]], axis=1)), I32)
case("insert", "indices", lambda xp, a, b: (
    xp.insert(a, [0, 2, 2, -1], [7, 8, 9, 6], axis=1), xp.insert(a, slice(0, 3), [1, 2, 3], axis=1),
    xp.insert(a, np.array([True, False, True, False, True]), 5, axis=1),
    xp.insert(a, list(range(0, 20, 1)), a.ravel() * 2), xp.insert(a, [], []),
    xp.insert(b, [1, 3], b[:, :2], axis=1)), I32, F64)
case("delete", "all", lambda xp, a, b: (
    xp.delete(a, 1, axis=1), xp.delete(a, [0, 0, 4, -1], axis=1), xp.delete(a, slice(None, None, 2)),
    xp.delete(a, [True, False, True, False], axis=0), xp.delete(a, list(range(0, 20, 2))),
    xp.delete(b, -1, 0), xp.delete(b, [], 1), xp.delete(b, slice(1, 4), axis=-1)), I32, F64)
case("flips", "all", lambda xp, a, b: (
    xp.fliplr(a), xp.flipud(a), xp.flipud(a[0]), xp.fliplr(b[None]), xp.rot90(a), xp.rot90(a, 2),
    xp.rot90(a, 3), xp.rot90(a, -1), xp.rot90(a, 4), xp.rot90(b[None], 1, (2, 0)),
    xp.rot90(b[None], 3, axes=(-1, 1))), I32, B)
case("ediff1d", "all", lambda xp, a, b: (
    xp.ediff1d(a), xp.ediff1d(a, to_end=[1, 2], to_begin=-5), xp.ediff1d(b, to_begin=b[0, :2]),
    xp.ediff1d(a[:1, :1]), xp.ediff1d(b[0], 0.5)), I32, F32)
case("ediff1d", "u8_wraps", lambda xp, a: xp.ediff1d(a), U8)
case("indices", "all", lambda xp: (
    xp.indices((2, 3)), xp.indices((2, 3, 4), dtype=np.int32), xp.indices(()),
    xp.indices((3, 0))) + xp.indices((2, 5), sparse=True))
case("triangle_indices", "all", lambda xp: (
    xp.tril_indices(4) + xp.tril_indices(4, 1, 6) + xp.triu_indices(4, -1) + xp.triu_indices(3, 0, 2)
    + xp.tril_indices(0)))

# -- more ufuncs ---------------------------------------------------------------------
SPECX = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, -2.5, 1e-300, 3e38, -7.0, 2.0, 5e-324,
                  -1e-310, 1.7976931348623157e308, 0.5, 1.0, 3.0, -3.5, 1e300, 2.0**-1022])
EXPS = np.array([0, 1, -1, 5, -1074, -1075, 1023, 1024, 2000, -2000, 3, -1022, 70, -1100, 2**40,
                 -2**40, 60, -60, 10, -10], np.int64)
GCD8 = np.array([-128, -7, -1, 0, 1, 2, 5, 127, 6, -6, 12, 100], np.int8)
GCD64 = np.array([-2**63, -5, -1, 0, 1, 3, 2**62, 12, 18, -30, 7, 100], np.int64)
GCDU8 = np.array([0, 1, 2, 7, 128, 255, 12, 18, 30, 40, 6, 9], np.uint8)
GCD32 = np.array([-2**31, 100000, 300007, -12, 0, 1, 2**31 - 1, 48, 180, -7, 9, 3], np.int32)
case("fabs", "all", lambda xp, a, b, c: (xp.fabs(a), xp.fabs(b), xp.fabs(c), xp.fabs(c[:3] > 0)),
     SPECX, SPEC32, I32)
case("fmod", "float", lambda xp, a: (xp.fmod(a, a[::-1]), xp.fmod(a, 2.5), xp.fmod(-a, 0.75),
                                     xp.fmod(a.astype(np.float32), np.float32(1.5))), SPECX)
case("fmod", "int", lambda xp, a, b, c, d: (
    xp.fmod(a, a[::-1]), xp.fmod(b, b[::-1]), xp.fmod(c, c[::-1]), xp.fmod(d, d[::-1]),
    xp.fmod(a, 3), xp.fmod(c, d), xp.fmod(a > 0, a < 0)), GCD8, GCD64, GCDU8, GCD32)
with np.errstate(over="ignore"):
    SPECX32 = SPECX.astype(np.float32)
case("modf_frexp", "float", lambda xp, a, b: xp.modf(a) + xp.modf(b) + xp.frexp(a) + xp.frexp(b),
     SPECX, SPECX32)
case("modf_frexp", "int", lambda xp, a: xp.modf(a) + xp.frexp(a), I32)
case("modf_frexp", "small_int_exponent", lambda xp, a, b, c: (
    xp.frexp(a)[1], xp.frexp(b)[1], xp.frexp(c)[1], xp.frexp(a)[0]), U8, I8, B)
case("ldexp", "all", lambda xp, a, e: (
    xp.ldexp(a, e), xp.ldexp(a, 3), xp.ldexp(a[::-1], e), xp.ldexp(np.float64(0.75), e),
    xp.ldexp(a.astype(np.float32), e.astype(np.int32) // 8), xp.ldexp(e[:4].astype(np.int32), 2)),
    SPECX, EXPS)
case("ldexp", "rounding", lambda xp, a, e: xp.ldexp(a, e),
     np.array([1.5, 1.5, 1.25, 1.75, 1.0 + 2**-52, -1.5, 3.0, 1.5]),
     np.array([-1074, -1075, -1076, -1075, -1074, -1074, -1076, -1073]))
case("gcd_lcm", "all", lambda xp, a, b, c, d: (
    xp.gcd(a, a[::-1]), xp.gcd(b, b[::-1]), xp.gcd(c, c[::-1]), xp.gcd(d, d[::-1]), xp.gcd(a, 0),
    xp.gcd(c, a), xp.lcm(a, a[::-1]), xp.lcm(b, b[::-1]), xp.lcm(c, c[::-1]), xp.lcm(d, d[::-1]),
    xp.lcm(a, -1), xp.lcm(c, a)), GCD8, GCD64, GCDU8, GCD32)
case("logaddexp2", "all", lambda xp, a, b: (xp.logaddexp2(a, b), xp.logaddexp2(a, a),
                                            xp.logaddexp2(a.astype(np.float32), 3)), SPEC, SPEC_R)
case("sinc", "all", lambda xp, a, b, c: (xp.sinc(a), xp.sinc(b), xp.sinc(c)), SPEC, SPEC32, I32)
case("array_equal", "all", lambda xp, a, b, c: (
    xp.array_equal(a, a), xp.array_equal(a, b), xp.array_equal(a, a, equal_nan=True),
    xp.array_equal(a, a[:3]), xp.array_equal(c, c), xp.array_equal(c, c * 1.0),
    xp.array_equal(c, c[::-1]), xp.array_equiv(a, a), xp.array_equiv(c[:1], c),
    xp.array_equiv(c[:1], c[:2]), xp.array_equiv(c, c[:3]), xp.array_equiv(c[0], c[0])),
    SPEC, SPEC_R, I32)
case("select", "all", lambda xp, a, b: (
    xp.select([a > 0, b > 1], [a, b * 2]), xp.select([a < 0], [b], default=-1.5),
    xp.select([a > 1, a > 0], [1, 2.5], 7), xp.select([a > 0], [a.astype(np.int8)], 3),
    xp.select([a > 0, a < -1], [a[None], 1], a[:, None][:1])), F64, F64[::-1])
case("piecewise", "all", lambda xp, a: (
    xp.piecewise(a, [a < 0, a >= 0], [lambda x: -x, lambda x: x * 2]),
    xp.piecewise(a, [a < 0], [0, lambda x: x + 1]), xp.piecewise(a, a > 1, [5.5, 1]),
    xp.piecewise(a.astype(int), [a > 2], [lambda x, k: x * k, 9], 3),
    xp.piecewise(a, [a > 0, a > 1], [1, 2])), F64[0])

# -- ranges, polynomials, sampled data, covariance ----------------------------------
XP = np.sort(rng.uniform(-2, 2, 9))
FP = rng.standard_normal(9)
XQ = np.concatenate([rng.uniform(-3, 3, 20), XP, [np.nan, -np.inf, np.inf]])
PHASE = np.cumsum(rng.uniform(-4, 4, (3, 12)), axis=1)
case("logspace_geomspace", "all", lambda xp: (
    xp.logspace(0, 2, 5), xp.logspace(0, 2, 5, dtype=int), xp.logspace(1, 3, 4, endpoint=False,
                                                                       base=2.0),
    xp.logspace(0, 1, 1), xp.logspace(0, 1, 0), xp.geomspace(1, 1000, 4), xp.geomspace(-1, -100, 3),
    xp.geomspace(1, 1000, 4, dtype=np.float32), xp.geomspace(2, 1000, 4, endpoint=False),
    xp.geomspace(1, 2, 1), xp.geomspace(1, 256, 9, dtype=int)))
case("vander_polyval", "all", lambda xp, a, b, c: (
    xp.vander(a[0]), xp.vander(a[0], 3), xp.vander(a[0], 0), xp.vander(b[0], 4, increasing=True),
    xp.vander(a[0].astype(np.float32), 3), xp.vander(b[0] > 0), xp.polyval(a[0, :3], a),
    xp.polyval([1, 2, 3], a), xp.polyval(b[0], b), xp.polyval(a[0], 2.5),
    xp.polyval(b[0].astype(np.int8), 3), xp.polyval([], a), xp.polyval(c, c)), F64, I32, I8)
for _mode in ("full", "same", "valid"):
    case("convolve", _mode, lambda xp, a, b, c, m=_mode: (
        xp.convolve(a, b, m), xp.convolve(b, a, m), xp.correlate(a, b, m), xp.correlate(b, a, m),
        xp.convolve(c, c[:3], m), xp.correlate(c[:1], c, m), xp.convolve(c > 0, c[:2] > 0, m),
        xp.convolve(a[:4], b[:4], m), xp.correlate(a, a[:1] * 1.0, m)), F64[0], F64[1, :3], I32[0])
case("convolve", "int8_wraps", lambda xp, a: (xp.convolve(a, a), xp.correlate(a, a, "full")),
     np.array([100, 100, -7], np.int8))
case("trapezoid", "all", lambda xp, a, x: (
    xp.trapezoid(a), xp.trapezoid(a, axis=0), xp.trapezoid(a, x), xp.trapezoid(a, dx=0.5),
    xp.trapezoid(a, a, axis=1), xp.trapezoid(a[:, :1]), xp.trapezoid(a.astype(int))),
    F64, np.cumsum(np.abs(F64[0])))
case("interp", "all", lambda xp, x, p, f: (
    xp.interp(x, p, f), xp.interp(x, p, f, left=-7, right=9.5), xp.interp(x, p[:1], f[:1]),
    xp.interp(x, p, f, period=3.0), xp.interp(x.astype(np.float32), p, f), xp.interp(2.5, p, f),
    xp.interp(x, [0, 1, 1, 2], [0, 1, 5, 2]), xp.interp(x, [0.0, 1.0, 2.0], [np.inf, 1.0, 1.0])),
    XQ, XP, FP)
case("unwrap", "all", lambda xp, p, q: (
    xp.unwrap(p), xp.unwrap(p, axis=0), xp.unwrap(p, discont=4.0), xp.unwrap(p, period=3.0),
    xp.unwrap(q, period=6), xp.unwrap(q, period=5), xp.unwrap(p[:, :1])),
    PHASE, np.array([0, 7, 14, -3, 5, 11, 2]))
case("gradient", "all", lambda xp, f, x: (
    xp.gradient(f[0]), xp.gradient(f[0], 2.0), xp.gradient(f[0], x), xp.gradient(f[0], x, edge_order=2),
    xp.gradient(f[0], edge_order=2)) + xp.gradient(f) + xp.gradient(f, 0.5, 2.0, edge_order=2) + (
    xp.gradient(f, axis=-1), xp.gradient(f.astype(int), x, axis=1),
    xp.gradient(f, np.arange(4.0) ** 2, axis=0), xp.gradient(f[:, :2], axis=1)),
    F64, np.cumsum(np.abs(F64[1]) + 0.1))
case("gradient", "float32", lambda xp, f: xp.gradient(f, 0.5, np.arange(5.0) ** 2), F32)
case("cov_corrcoef", "all", lambda xp, a, b, w: (
    xp.cov(a), xp.cov(a, rowvar=False), xp.cov(a[0]), xp.cov(a[0], b[0]), xp.cov(a, b), xp.cov(a, bias=True),
    xp.cov(a, ddof=3), xp.cov(a, fweights=np.arange(1, 6)), xp.cov(a, aweights=w),
    xp.cov(a, fweights=np.arange(1, 6), aweights=w), xp.cov(b), xp.cov(a, dtype=np.float32),
    xp.cov(a.astype(np.float32)), xp.corrcoef(a), xp.corrcoef(a, rowvar=False),
    xp.corrcoef(a[0], b[0]), xp.corrcoef(a[0]), xp.corrcoef(b)), F64, I32, np.abs(F64[2]) + 0.5)

# -- order statistics and counting ----------------------------------------------------
STAT = rng.standard_normal((4, 7))
STATNAN = STAT.copy()
STATNAN[0, 1] = STATNAN[2, 3] = np.nan
STATNAN[3] = np.nan
STATI = rng.integers(-9, 10, (4, 7))
case("median", "all", lambda xp, a, b, c: (
    xp.median(a), xp.median(a, axis=1), xp.median(a, 0), xp.median(a, (0, 1)), xp.median(b, 1),
    xp.median(c), xp.median(c, 1, keepdims=True), xp.median(a[:, :6], 1),
    xp.median(a.astype(np.float32), 0), xp.median(a[:, :0], 1), xp.median(c.astype(np.int8)),
    xp.median(a[None], axis=(0, 2))), STAT, STATNAN, STATI)
for _method in ("inverted_cdf", "averaged_inverted_cdf", "closest_observation",
                "interpolated_inverted_cdf", "hazen", "weibull", "linear", "median_unbiased",
                "normal_unbiased", "lower", "higher", "midpoint", "nearest"):
    case("quantile", _method, lambda xp, a, b, c, m=_method: (
        xp.quantile(a, 0.3, method=m), xp.quantile(a, [0, 0.25, 0.5, 0.99, 1], axis=1, method=m),
        xp.quantile(c, np.array([0.1, 0.9]), axis=0, method=m), xp.quantile(b, 0.5, axis=1, method=m),
        xp.quantile(a.astype(np.float32), 0.7, 1, method=m),
        xp.percentile(a, [10, 90], 1, method=m, keepdims=True),
        xp.nanquantile(b, [0.2, 0.5], 1, method=m), xp.nanpercentile(b, 50, 0, method=m),
        xp.quantile(c[:, :1], 0.5, 1, method=m), xp.nanquantile(a, np.float32(0.4), (0, 1),
                                                                method=m)),
        STAT, STATNAN, STATI)
case("quantile", "integer_q", lambda xp, a: xp.quantile(a, np.array([0, 1]), axis=1), STATI)
case("nanmedian", "all", lambda xp, a, b, c: (
    xp.nanmedian(a), xp.nanmedian(b, 1), xp.nanmedian(b, 0, keepdims=True), xp.nanmedian(c, 1),
    xp.nanmedian(b.astype(np.float32), 1), xp.nanquantile(b[3], 0.5)), STAT, STATNAN, STATI)
case("partition", "kth_places", lambda xp, a, b: (
    xp.partition(a, 3, axis=1)[:, 3], xp.partition(a, [1, 5])[..., [1, 5]],
    xp.partition(a, -1, axis=0)[-1], xp.sort(xp.partition(a, 2, axis=None)),
    xp.partition(b, 2)[..., 2],
    xp.take_along_axis(a, xp.argpartition(a, 3, axis=1), 1)[:, 3],
    xp.argpartition(a[0], 0)[0], xp.sort(xp.argpartition(b, 4, axis=None))), STAT, STATI)
case("lexsort", "all", lambda xp, a, b: (
    xp.lexsort([a[0], b[0]]), xp.lexsort((b[0] > 0, a[1] > 0, b[1])), xp.lexsort(b),
    xp.lexsort([a, b], axis=0), xp.lexsort([a, b]), xp.lexsort(b[0]),
    xp.lexsort([b[:, :0], b[:, :0]])), STAT, STATI)
HISTV = rng.standard_normal(200)
HISTW = rng.uniform(0, 2, 200)
HISTE = np.array([-2.0, -0.5, 0.0, 0.3, 1.0, 2.5])
HISTI = rng.integers(-5, 20, 300)
case("digitize", "all", lambda xp, x, e, d: (
    xp.digitize(x, e), xp.digitize(x, e, right=True), xp.digitize(x, e[::-1]),
    xp.digitize(x, e[::-1], True), xp.digitize(x, d), xp.digitize(x, d, True),
    xp.digitize(np.array([-0.5, 0.0, 3.0]), e)), HISTV, HISTE, HISTE[::-1].copy())
case("histogram", "even_bins", lambda xp, a, w, b, i: (
    xp.histogram(a) + xp.histogram(a, 5, (-1, 1)) + xp.histogram(a, 100)
    + xp.histogram(a, 7, weights=w) + xp.histogram(a, 6, density=True)
    + xp.histogram(b, 12) + xp.histogram(i, 9) + xp.histogram(i, 50, (0, 10))
    + xp.histogram(a[:0], 3) + xp.histogram(np.full(5, 2.5), 4) + xp.histogram(b, 40, (-1.5, 2.0))),
    HISTV, HISTW, HISTV.astype(np.float32), HISTI)
case("histogram", "sorted_counts", lambda xp, a, w: (
    xp.histogram(a, 1100) + xp.histogram(a, 1100, weights=w) + xp.histogram2d(a, a[::-1], 40)),
    HISTV, HISTW)
case("histogram", "edges", lambda xp, a, w, e: (
    xp.histogram(a, [-3, -1, 0, 0.5, 2]) + xp.histogram(a, e, weights=w, density=True)
    + xp.histogram(a, e)), HISTV, HISTW, HISTE)
case("histogram2d", "all", lambda xp, x, y, w: (
    xp.histogram2d(x, y) + xp.histogram2d(x, y, 4, [[-1, 1], [-2, 2]])
    + xp.histogram2d(x, y, [3, 7], weights=w) + xp.histogram2d(x, y, 20, density=True)
    + xp.histogram2d(x, y, [HISTE, np.array([-1.0, 0.0, 1.0])]) + xp.histogram2d(x, y, HISTE)),
    HISTV, HISTV[::-1] * 2, HISTW)

EMPTY = np.zeros((3, 0), np.float32)
case("empty_axes", "all", lambda xp, a, b: (
    xp.nansum(a, axis=1), xp.nanmax(a, axis=1, initial=-1), xp.count_nonzero(a, axis=0),
    xp.diff(a), xp.diff(a, axis=0), xp.pad(a, 2), xp.roll(a, 3), xp.tile(a, 2),
    xp.repeat(a, 2, axis=0), xp.kron(a, b[0]), xp.diag(a[0]), xp.tril(a), xp.trace(a),
    xp.vecdot(a, a), xp.linalg.norm(a, axis=1), xp.hypot(a, a), xp.hstack([a, a]),
    xp.take_along_axis(a, np.zeros((3, 0), np.int64), 1), xp.sum(a, 1, initial=2),
    xp.max(a, axis=1, initial=5), xp.cross(a.T[:, :0].reshape(0, 3), b[:0, :3]),
    xp.einsum("ij->i", a), xp.nanmean(b[:, :0], axis=0)), EMPTY, F32)

GROUP_IDS = sorted(GROUPS)


def _as_list(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _build(group, target):
    """(outputs, NumPy's results, bindings) of a group's cases."""
    names, bindings, outs, expected = {}, {}, {}, {}

    def arg(v):
        if not isinstance(v, np.ndarray):
            return v
        if id(v) not in names:
            names[id(v)] = f"{group}_a{len(names)}"
            bindings[names[id(v)]] = v
        return pa.placeholder(names[id(v)], v.shape, v.dtype)
    for label, fn, inputs in GROUPS[group]:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            want = _as_list(fn(np, *inputs))
            got = _as_list(fn(pa, *map(arg, inputs)))
        assert len(got) == len(want), label
        for k, (g, w) in enumerate(zip(got, want)):
            w = np.asarray(w)
            assert (g.shape, g.dtype) == (w.shape, w.dtype), \
                f"{group}/{label}[{k}]: built {g.shape} {g.dtype}, NumPy gives {w.shape} {w.dtype}"
            outs[f"{label}[{k}]"], expected[f"{label}[{k}]"] = g, w
    return outs, expected, {n: bindings[n] for n in sorted(bindings)}


@pytest.mark.parametrize("group", GROUP_IDS)
def test_matches_numpy(group, target):
    outs, expected, bindings = _build(group, target)
    prog = pa.compile(outs, target=target)
    res = prog(**{n: bindings[n] for n in prog.placeholders})
    for key, want in expected.items():
        assert_same(res[key], want, f"{group}: {key}")


@pytest.mark.parametrize("part", range(3))
def test_cuda_source_compiles_with_nvcc(part):
    """Every group's program (float16 outputs included) as CUDA sources (a
    third of the groups each: the parts run side by side under xdist),
    generated without a GPU and compiled by nvcc for sm_90."""
    import shutil
    import subprocess
    import tempfile

    import loopy as lp
    from polyarray.codegen import lower_program
    nodes = [o.node for g in GROUP_IDS[part::3] for o in _build(g, "cuda")[0].values()]
    source = lower_program(nodes, lp.CudaTarget()).source
    assert "__global__" in source
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc (the CUDA compiler) is not on PATH; the source was generated")
    with tempfile.TemporaryDirectory() as d:
        path = f"{d}/names.cu"
        with open(path, "w") as f:
            f.write(source)
        r = subprocess.run([nvcc, "-cubin", "-arch=sm_90", "-o", path + ".cubin", path],
                           capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[:4000]


def test_eager_functions_evaluate_on_the_default_target(target):
    """``unique``, ``nonzero``, ``argwhere``, ``flatnonzero`` and one-argument
    ``where`` evaluate a lazy input (without placeholders) on the default
    target and return data arrays, as NumPy's results."""
    base = np.array([[3.0, 0.0, np.nan], [3.0, 1.0, 0.0], [np.nan, 1.0, -2.0]])
    y = pa.array(base) * 2.0 - 2.0
    want = base * 2.0 - 2.0
    with pa.target(target):
        got = {
            "unique": pa.unique(y),
            "unique_all": pa.unique(y, return_index=True, return_inverse=True,
                                    return_counts=True),
            "unique_nan": pa.unique(y, equal_nan=False),
            "unique_axis": pa.unique(pa.array(I32[:, :2]) % 2, axis=0),
            "unique_values": pa.unique_values(y),
            "unique_counts": tuple(pa.unique_counts(y)),
            "unique_inverse": tuple(pa.unique_inverse(y)),
            "unique_all_api": tuple(pa.unique_all(y)),
            "nonzero": pa.nonzero(y),
            "nonzero_method": y.nonzero(),
            "where": pa.where(y > 0),
            "argwhere": pa.argwhere(y),
            "flatnonzero": pa.flatnonzero(y),
        }
    expected = {
        "unique": np.unique(want),
        "unique_all": np.unique(want, return_index=True, return_inverse=True, return_counts=True),
        "unique_nan": np.unique(want, equal_nan=False),
        "unique_axis": np.unique(I32[:, :2] % 2, axis=0),
        "unique_values": np.unique_values(want), "unique_counts": tuple(np.unique_counts(want)),
        "unique_inverse": tuple(np.unique_inverse(want)),
        "unique_all_api": tuple(np.unique_all(want)),
        "nonzero": np.nonzero(want), "nonzero_method": want.nonzero(), "where": np.where(want > 0),
        "argwhere": np.argwhere(want), "flatnonzero": np.flatnonzero(want),
    }
    for key, want_k in expected.items():
        for k, (g, w) in enumerate(zip(_as_list(got[key]), _as_list(want_k))):
            assert isinstance(g, pa.Array), key
            assert_same(g.to_numpy(), np.asarray(w), f"{key}[{k}]")
    assert pa.unique_counts(y)._fields == ("values", "counts")
    # the results are ordinary (data) arrays: a gather by nonzero's indices
    assert_same(pa.compile(y[pa.nonzero(y)], target=target)(), want[np.nonzero(want)])
