"""Shared variables: ``pa.shared``, ``pa.compile(..., updates=)``
and ``prog.repeat``, on every target, against NumPy loops.

Theano's semantics: every expression of a call, the updates included, sees
the values from before the call; updates apply only after a call succeeded.
On CUDA ``repeat`` replays CUDA graphs of 64 steps (n = 133 takes two
replays and five single steps)."""
import zlib

import numpy as np
import pytest

import polyarray as pa
from helpers import assert_same


def _names(request):
    """Shared variable names unique to the test (live variables must differ),
    the same in every process (crc32, not hash(): sources compared across
    PYTHONHASHSEEDs by tests/support/source_hashes.py stay comparable)."""
    base = request.node.name.replace("[", "_").replace("]", "").replace("-", "_")
    return lambda name: f"{name}_{zlib.crc32(base.encode()) % 10**8}"


@pytest.fixture
def nm(request):
    return _names(request)


def test_updates_see_old_values_and_apply_after_the_call(target, nm):
    a = pa.shared(np.float32([1, 2, 3]), name=nm("a"))
    b = pa.shared(np.float32([10, 20, 30]), name=nm("b"))
    k = pa.shared(np.int64(0), name=nm("k"))
    prog = pa.compile({"sum": a + b, "a": a}, target=target,
                      updates={a: b, b: a, k: k + 1})     # a swap: both read the old values
    assert set(prog.placeholders) == set()
    r = prog()
    assert_same(r["sum"], np.float32([11, 22, 33]))
    assert_same(r["a"], np.float32([1, 2, 3]))            # the output sees the old a
    assert_same(a.get_value(), np.float32([10, 20, 30]))
    assert_same(b.get_value(), np.float32([1, 2, 3]))
    assert int(k.get_value()) == 1
    prog()
    assert_same(a.get_value(), np.float32([1, 2, 3]))
    assert int(k.get_value()) == 2
    assert a.value_location == ("host" if target == "numpy" else target)


def _logreg(ns, X, Y, w, c, lr=0.1):
    p = 1.0 / (1.0 + ns.exp(-(ns.dot(X, w) + c)))
    d = p - Y
    n = X.shape[0]
    return w - lr * (ns.dot(X.T, d) / n + 0.02 * w), c - lr * ns.sum(d) / n


@pytest.mark.parametrize("steps", [1, 2, 133])
def test_training_loop_with_shared_weights_equals_numpy(target, nm, steps):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((40, 30)).astype(np.float32)
    Y = (rng.random(40) > 0.5).astype(np.float32)
    w0 = (0.1 * rng.standard_normal(30)).astype(np.float32)
    w, c = pa.shared(w0, name=nm("w")), pa.shared(np.float32(0), name=nm("c"))
    Xp, Yp = pa.placeholder("X", X.shape, np.float32), pa.placeholder("Y", Y.shape, np.float32)
    nw, nc = _logreg(pa, Xp, Yp, w, c)
    loss = pa.mean((1.0 / (1.0 + pa.exp(-(pa.dot(Xp, w) + c))) - Yp) ** 2)
    prog = pa.compile(loss, target=target, updates={w: nw, c: nc})
    ref_w, ref_c, ref_losses = w0, np.float32(0), []
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(X @ ref_w + ref_c)))
        ref_losses.append(np.mean((p - Y) ** 2))
        ref_w, ref_c = _logreg(np, X, Y, ref_w, ref_c)
    got = prog.repeat(steps, X=X, Y=Y)              # the last step's loss (old weights)
    np.testing.assert_allclose(got, ref_losses[-1], rtol=1e-4)
    np.testing.assert_allclose(w.get_value(), ref_w, rtol=2e-4, atol=1e-5)
    np.testing.assert_allclose(c.get_value(), ref_c, rtol=2e-4, atol=1e-5)
    # step by step from the same start: the same values
    w.set_value(w0)
    c.set_value(np.float32(0))
    for k in range(min(steps, 3)):
        np.testing.assert_allclose(prog(X=X, Y=Y), ref_losses[k], rtol=1e-4)


def test_repeat_returns_outputs_and_copies_on_every_target(target, nm):
    """Outputs that are a variable itself, an update's value, or a plain
    expression; an update whose value is another variable (a copy)."""
    a = pa.shared(np.arange(4, dtype=np.int32), name=nm("a"))
    b = pa.shared(np.zeros(4, np.int32), name=nm("b"))
    prog = pa.compile([a, a * 2, b], target=target, updates={a: a * 2, b: a})
    out = prog.repeat(5)
    start = np.arange(4, dtype=np.int32)
    assert_same(out[0], start * 16)                 # the 5th call sees a after 4 updates
    assert_same(out[1], start * 32)
    assert_same(out[2], start * 8)
    assert_same(a.get_value(), start * 32)
    assert_same(b.get_value(), start * 16)
    unread = pa.shared(np.zeros(2, np.float32), name=nm("u"))    # updated, never read
    x = pa.placeholder("x", (2,), np.float32)
    p2 = pa.compile([], target=target, updates={unread: x * 3})
    p2.repeat(70, x=np.float32([1, 2]))
    assert_same(unread.get_value(), np.float32([3, 6]))


def test_shared_read_without_updates_and_set_value(target, nm):
    s = pa.shared(np.float64([1.5, 2.5]), name=nm("s"))
    x = pa.placeholder("x", (2,), np.float64)
    prog = pa.compile(s * x, target=target)
    assert_same(prog(x=np.float64([2, 2])), np.float64([3, 5]))
    s.set_value([1, 1])                             # a list: converted losslessly
    assert_same(prog(x=np.float64([2, 2])), np.float64([2, 2]))
    v = s.get_value()
    v[0] = 100                                      # a copy
    assert_same(s.get_value(), np.float64([1, 1]))
    assert "float64[2]" in repr(s)


def test_errors_name_the_variable_and_leave_state_unchanged(target, nm):
    w = pa.shared(np.zeros(3, np.float32), name=nm("w"))
    x = pa.placeholder("x", (3,), np.float32)
    with pytest.raises(TypeError, match=f"shared variable '{w.name}' has dtype float64; "
                                        "the variable has dtype float32"):
        pa.compile(x, target=target, updates={w: x.astype(np.float64)})
    with pytest.raises(ValueError, match=r"has shape \(\); the variable has shape \(3,\)"):
        pa.compile(x, target=target, updates={w: pa.sum(x)})
    with pytest.raises(TypeError, match="keys must be shared variables"):
        pa.compile(x, target=target, updates={"w": x})
    with pytest.raises(TypeError, match="dict or a list of"):
        pa.compile(x, target=target, updates=5)
    with pytest.raises(ValueError, match="is updated twice"):
        pa.compile(x, target=target, updates=[(w, x), (w, x + 1)])
    with pytest.raises(ValueError, match=f"placeholder name '{w.name}' is taken by a shared"):
        pa.placeholder(w.name, (3,), np.float32)
    with pytest.raises(ValueError, match="exists already"):
        pa.shared(np.zeros(2), name=w.name)
    with pytest.raises(ValueError, match=r"has shape \(3,\); the new value has shape \(2,\)"):
        w.set_value(np.zeros(2, np.float32))
    with pytest.raises(TypeError, match="has dtype float32; the new value has dtype int64"):
        w.set_value(np.zeros(3, np.int64))
    with pytest.raises(TypeError, match="cannot be assigned to in place"):
        w[0] = 1
    prog = pa.compile(w.sum(), target=target, updates={w: w + x})
    prog(x=np.ones(3, np.float32))
    for bad in (dict(x=np.ones(2, np.float32)), dict(), dict(x=np.ones(3, np.float32), y=1)):
        with pytest.raises((ValueError, TypeError)):
            prog(**bad)
        assert_same(w.get_value(), np.ones(3, np.float32))     # unchanged
    with pytest.raises(ValueError, match="positive integer"):
        prog.repeat(0, x=np.ones(3, np.float32))


def test_a_failed_check_leaves_shared_state_unchanged(target, nm):
    """An out-of-bounds gather raises NumPy's IndexError; the update of that
    call is not applied, and the next good call works."""
    v = pa.shared(np.arange(5, dtype=np.float32), name=nm("v"))
    idx = pa.placeholder("idx", (2,), np.int64)
    prog = pa.compile(v[idx].sum(), target=target, updates={v: v + v[idx].sum()})
    with pytest.raises(IndexError, match="index 9 is out of bounds for axis 0 with size 5"):
        prog(idx=np.array([0, 9]))
    assert_same(v.get_value(), np.arange(5, dtype=np.float32))
    assert float(prog(idx=np.array([1, 2]))) == 3.0
    assert_same(v.get_value(), np.arange(5, dtype=np.float32) + 3)


def test_device_outputs_and_another_target(target, nm):
    """``out="device"`` programs update in place of their outputs' kind; a
    variable last updated on one target is read by another through the host."""
    s = pa.shared(np.float32([1, 2]), name=nm("s"))
    opts = {} if target == "numpy" else {"out": "device"}
    prog = pa.compile(s * 1, target=target, updates={s: s + 1}, **opts)
    r = prog()
    got = r if isinstance(r, np.ndarray) else r.get()
    assert_same(got, np.float32([1, 2]))
    other = pa.compile(s * 10, target="numpy")
    assert_same(other(), np.float32([20, 30]))


def test_profile_reads_shared_variables_and_updates_none(target, nm):
    w = pa.shared(np.float32([1, 2, 3]), name=nm("w"))
    x = pa.placeholder("x", (3,), np.float32)
    prog = pa.compile((w * x).sum(), target=target, updates={w: w + x})
    profile = prog.profile(x=np.ones(3, np.float32), repeat=2, hardware=False)
    assert profile.rows
    assert_same(w.get_value(), np.float32([1, 2, 3]))


def test_shared_state_is_kept_where_a_call_fails_or_checks(target, nm):
    """(1) with device outputs a failed check once still applied
    the update; (2) a placeholder made before a shared variable of its name
    was taken over; (3) prog.check applied the updates; (4) on numpy an
    output that is also the update's value was the variable's storage."""
    w = pa.shared(np.zeros(3), name=nm("w"))
    i = pa.placeholder("i", (3,), np.int64)
    opts = {} if target == "numpy" else {"out": "device"}
    prog = pa.compile(w.sum(), target=target, updates={w: w[i] + 1}, **opts)
    prog(i=np.array([0, 1, 2]))
    with pytest.raises(IndexError, match="index 7 is out of bounds"):
        r = prog(i=np.array([0, 7, 1]))
        getattr(r, "get", lambda: r)()
    assert_same(w.get_value(), np.ones(3))
    early = pa.placeholder(nm("p"), (3,), np.float64)
    late = pa.shared(np.full(3, 7.0), name=early.node.name)
    plain = pa.compile(early + 1, target=target)
    assert list(plain.placeholders) == [early.node.name]
    assert_same(plain(**{early.node.name: np.zeros(3)}), np.ones(3))
    with pytest.raises(ValueError, match="two different placeholders"):
        pa.compile(early + late, target=target)
    v = pa.shared(np.zeros(4, np.float32), name=nm("v"))
    x = pa.placeholder("x", (4,), np.float32)
    p2 = pa.compile(v + x, target=target, updates={v: v + x})
    report = p2.check(x=np.ones(4, np.float32), targets=("numpy", target))
    assert report.ok, report
    assert_same(v.get_value(), np.zeros(4, np.float32))
    u = pa.shared(np.arange(3.0), name=nm("u"))
    n = u + 1
    out = pa.compile(n, target=target, updates={u: n})()
    out[0] = 99
    assert_same(u.get_value(), np.arange(3.0) + 1)


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_a_copy_is_a_variable_of_its_own(target, nm, how):
    """``copy.copy``, ``copy.deepcopy`` and a pickle round trip give a new
    shared variable holding a copy of the value: a program that updates the
    copy reads and writes the copy, and the original keeps its value."""
    import copy
    import pickle
    w = pa.shared(np.float32([1, 2, 3]), name=nm("w"))
    pa.compile(w.sum(), target=target, updates={w: w * 2})()   # the value on the device
    c = {"copy": copy.copy, "deepcopy": copy.deepcopy,
         "pickle": lambda v: pickle.loads(pickle.dumps(v))}[how](w)
    assert isinstance(c, pa.SharedVariable) and c.name == nm("w") + "_copy"
    assert c.value_location == "host"
    step = pa.compile(c.sum(), target=target, updates={c: c + 1})
    sums = [float(step()) for _ in range(3)]
    assert sums == [12.0, 15.0, 18.0]
    assert_same(c.get_value(), np.float32([5, 7, 9]))
    assert_same(w.get_value(), np.float32([2, 4, 6]))
    again = copy.copy(w)
    assert again.name == nm("w") + "_copy2"


def test_deepcopy_of_expressions_and_programs_copies_their_variables(target, nm):
    """One ``deepcopy`` of a structure gives one copy of each variable, which
    the copied expressions and programs read and update."""
    import copy
    w = pa.shared(np.float64([1, 2]), name=nm("w"))
    x = pa.placeholder("x", (2,), np.float64)
    step = pa.compile({"cost": (w * x).sum()}, target=target, updates={w: w + x})
    model = {"w": w, "twice": w * 2, "step": step}
    clone = copy.deepcopy(model)
    w2 = clone["w"]
    assert w2 is not w and w2.name == nm("w") + "_copy"
    assert clone["step"](x=np.ones(2)) == {"cost": 3.0}
    assert_same(w2.get_value(), np.float64([2, 3]))
    assert_same(w.get_value(), np.float64([1, 2]))        # the original program's
    assert_same(pa.compile(clone["twice"], target=target)(), np.float64([4, 6]))
    assert_same(pa.compile(model["twice"], target=target)(), np.float64([2, 4]))
    assert step(x=np.ones(2)) == {"cost": 3.0}
    assert_same(w.get_value(), np.float64([2, 3]))
    assert_same(w2.get_value(), np.float64([2, 3]))


def test_pickled_variable_keeps_its_name_in_another_process(target, nm, tmp_path):
    """A pickle loads as a variable of the same name and value where no live
    variable has that name (another process: a Dask worker, a checkpoint),
    with the programs and expressions that read it."""
    import pickle
    import subprocess
    import sys
    from helpers import subprocess_env
    w = pa.shared(np.float32([1, 2, 3]), name=nm("w"))
    step = pa.compile(w.sum(), target=target, updates={w: w + 1})
    step()
    path = tmp_path / "state.pkl"
    path.write_bytes(pickle.dumps({"w": w, "step": step, "half": w / 2}))
    code = f"""if True:
        import pickle, numpy as np
        import polyarray as pa
        d = pickle.loads(open({str(path)!r}, "rb").read())
        w = d["w"]
        assert w.name == {nm("w")!r}, w.name
        assert d["step"].target_name == {target!r}
        print([float(d["step"]()) for _ in range(2)], w.get_value().tolist(),
              pa.compile(d["half"], target={target!r})().tolist())
        """
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=subprocess_env(), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split("\n")[0] == "[9.0, 12.0] [4.0, 5.0, 6.0] [2.0, 2.5, 3.0]"
    assert_same(w.get_value(), np.float32([2, 3, 4]))


@pytest.mark.parametrize("out", ["numpy", "device"])
def test_a_failed_check_with_updates_is_this_calls(device_target, nm, out):
    """A call with updates reads its own checks before applying them: its
    error is NumPy's, as a host call's, not one "found when a result of an
    earlier out='device' call was read"; an earlier device call's failure
    stays that call's, raised when its result is read."""
    v = pa.shared(np.arange(5.0), name=nm("v"))
    i = pa.placeholder("i", (2,), np.int64)
    prog = pa.compile(v[i].sum(), target=device_target, updates={v: v + 1}, out=out)
    with pytest.raises(IndexError) as e:
        r = prog(i=np.array([0, 9]))
        getattr(r, "get", lambda: r)()
    assert str(e.value) == "index 9 is out of bounds for axis 0 with size 5"
    assert_same(v.get_value(), np.arange(5.0))
    x = pa.placeholder("x", (3,), np.float64)
    pa.compile(x[i], target=device_target, out="device")(
        x=np.zeros(3), i=np.array([7, 0]))               # fails, unread
    earlier_error = r"index 7 is out of bounds for axis 0 with size 3 \(found when a " \
        r"result of an earlier out='device' call was read"
    if out == "numpy":          # reading this call's outputs reads the earlier call's checks
        with pytest.raises(IndexError, match=earlier_error):
            prog(i=np.array([1, 2]))
        assert_same(v.get_value(), np.arange(5.0))
        assert_same(prog(i=np.array([1, 2])), np.float64(3))
    else:
        r = prog(i=np.array([1, 2]))                   # this call's checks pass
        with pytest.raises(IndexError, match=earlier_error):
            r.get()
        assert_same(r.get(), np.float64(3))
    assert_same(v.get_value(), np.arange(5.0) + 1)


def test_eager_hooks_read_shared_variables(target, nm):
    """np.asarray, float, bool, tolist and the eager functions read a shared
    variable's value (a pa.from_dlpack view is one): it is bound by its
    variable, never an unbound placeholder."""
    w = pa.shared(np.float64([3, 0, 1, 3]), name=nm("w"))
    src = np.arange(4.0)
    view = pa.from_dlpack(src)
    with pa.target(target):
        assert_same(np.asarray(w * 2), np.float64([6, 0, 2, 6]))
        assert float(w.sum()) == 7.0 and bool(w[0] > 2) and w.tolist() == [3, 0, 1, 3]
        assert_same(pa.unique(w).to_numpy(), np.float64([0, 1, 3]))
        assert_same(pa.nonzero(w)[0].to_numpy(), np.int64([0, 2, 3]))
        src[1] = 10.0
        assert_same(np.asarray(view + w), np.float64([3, 10, 3, 6]))
    x = pa.placeholder("x", (4,), np.float64)
    with pytest.raises(pa.LazyValueError, match=r"unbound placeholder 'x' \(at "):
        float((w + x).sum())
