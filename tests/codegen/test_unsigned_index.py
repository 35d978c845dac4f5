"""The unsigned index folds of the lowering (``lowering/unsigned_index``)
against uint64 arithmetic on values: each fold gives the value of the
operation it replaces, and the folds that need a sum not to wrap decline
where it may."""
import itertools

import numpy as np
import pymbolic.primitives as p
import pytest

from polyarray.codegen.lowering import unsigned_index as ui

U64 = np.dtype(np.uint64)
X, Y = p.Variable("x"), p.Variable("y")


def _value(e, env):
    """``e`` (a linear expression of ``unsigned_index``) in uint64 arithmetic."""
    if isinstance(e, p.Sum):
        return sum(_value(c, env) for c in e.children) % 2**64
    if isinstance(e, p.Product):
        return _value(e.children[0], env) * _value(e.children[1], env) % 2**64
    if isinstance(e, p.Variable):
        return env[e.name]
    return int(e) % 2**64


def _numpy(name, a, b):
    a, b = np.uint64(a), np.uint64(b)
    if name == "equal":
        return int(a == b)
    if name == "not_equal":
        return int(a != b)
    return int(getattr(np, name)(a, b))


def _linear(terms, const):
    return ui.build([(k, v) for k, v in terms], const)


FORMS = [([(4, X)], 0), ([(4, X)], 3), ([(8, X), (16, Y)], 5), ([(1024, X), (4, Y)], 2),
         ([(3, X)], 1), ([(1, X)], 0)]
OPS = [("bitwise_and", 1), ("bitwise_and", 3), ("bitwise_and", 7), ("floor_divide", 4),
       ("floor_divide", 2), ("floor_divide", 1), ("right_shift", 2), ("right_shift", 0),
       ("remainder", 4), ("remainder", 2)]


@pytest.mark.parametrize("terms,const", FORMS)
@pytest.mark.parametrize("name,b", OPS)
def test_folds_give_uint64_values(terms, const, name, b):
    """Where a fold applies, its expression has the operation's value for
    indices that do not wrap (what ``nowrap`` promises)."""
    e = _linear(terms, const)
    folded = ui.fold(name, [(e, U64), (np.uint64(b), U64)], {e})
    if folded is None:
        return
    expr, dt = folded
    assert dt == U64
    for x, y in itertools.product([0, 1, 5, 1000, 2**31 - 1], [0, 3, 2**20]):
        env = {"x": x, "y": y}
        assert _value(expr, env) == _numpy(name, _value(e, env), b), (name, b, terms, const)


@pytest.mark.parametrize("name,b", OPS)
def test_folds_that_need_no_wrap_decline_without_it(name, b):
    """``(2**40 x) >> 40`` is ``x`` only if ``2**40 x`` does not wrap: not
    folded unless the expression is known not to wrap (but ``& m``, exact
    in modular arithmetic, and the identities by 1 and 0 always are)."""
    e = _linear([(2**40, X)], 0)
    big = {"x": 2**30}                          # 2**70 wraps
    folded = ui.fold(name, [(e, U64), (np.uint64(b), U64)], set())
    if name == "bitwise_and" or (name, b) in (("floor_divide", 1), ("right_shift", 0)):
        assert folded is not None
        assert _value(folded[0], big) == _numpy(name, _value(e, big), b)
    else:
        assert folded is None


def test_constants_fold_with_numpy_semantics():
    for name in ("bitwise_and", "bitwise_or", "floor_divide", "remainder", "right_shift",
                 "equal", "not_equal"):
        for a, b in [(7, 3), (2**64 - 1, 2), (5, 0), (1, 64), (3, 3)]:
            if name == "right_shift" and b >= 64:
                want = 0
            elif name in ("floor_divide", "remainder") and b == 0:
                want = 0
            else:
                want = _numpy(name, a, b)
            expr, dt = ui.fold(name, [(np.uint64(a), U64), (np.uint64(b), U64)], set())
            assert int(expr) == want, (name, a, b)
            assert dt == (np.dtype(bool) if "equal" in name else U64)


def test_other_dtypes_and_operands_are_left_alone():
    e = _linear([(4, X)], 1)
    assert ui.fold("bitwise_and", [(e, np.dtype(np.int64)), (3, np.dtype(np.int64))], {e}) \
        is None
    assert ui.fold("bitwise_and", [(e, U64), (Y, U64)], {e}) is None
    assert ui.fold("add", [(e, U64), (np.uint64(1), U64)], {e}) is None
    assert ui.fold("floor_divide", [(e, U64), (np.uint64(4), U64)], {e})[0] == X
    assert ui.fold("floor_divide", [(_linear([(4, X)], 5), U64), (np.uint64(4), U64)],
                   {_linear([(4, X)], 5)}) is None        # 5 >= 4: a carry into x


def test_bounds_and_own_flat_index():
    v0, v1 = p.Variable("_0"), p.Variable("_1")
    flat = p.Sum((p.Product((1000, v0)), v1))
    assert ui.own_flat(flat, (1024, 1000))
    assert not ui.own_flat(flat, (1024, 999))
    assert not ui.own_flat(p.Sum((flat, 1)), (1024, 1000))
    assert ui.own_flat(v1, (1, 7)) and not ui.own_flat(v0, (1, 7))
    assert ui.bounded(flat, (1024, 1000))
    assert not ui.bounded(p.Product((2**62, v0)), (4,))       # 3 * 2**62 > 2**63
    assert not ui.bounded(p.Sum((v0, -1)), (4,))
    assert not ui.bounded(p.Product((v0, v1)), (4, 4))
