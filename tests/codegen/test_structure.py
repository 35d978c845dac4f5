"""Structure: one structural digest (the compile key is made of
the nodes' own digests), one placeholder walk, the node printers as Mappers,
and ``prog.kernels`` after a disk-cache hit without lowering."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import polyarray as pa
from polyarray import targets
from polyarray.codegen import program_key
from polyarray.codegen.plan.dtype_checks import describe_node
from polyarray.ir import nodes as N
from helpers import subprocess_env

ok, reason = targets.availability("opencl")
needs_opencl = pytest.mark.skipif(not ok, reason=f"opencl: {reason}")


def key(*arrays):
    return program_key([a.node for a in arrays])


def test_program_key_is_structure_not_data_values():
    x = pa.placeholder("x", (4,), np.float64)
    y = pa.placeholder("y", (4,), np.float64)
    a, b = pa.array(np.arange(4.0)), pa.array(np.arange(4.0) + 1)
    c = pa.array(np.arange(4.0) + 7)
    assert a.node.local_digest == b.node.local_digest       # values aside
    assert a.node.digest != b.node.digest                   # the DAG's identity
    assert (a + b).node.digest != (a + c).node.digest
    assert key(a + b) == key(b + c)             # new data reuses the kernels
    assert key(a + a) == key(c + c)
    assert key(a + a) != key(a + b)             # one buffer, not two
    assert key(pa.concatenate([a, b, a])) != key(pa.concatenate([a, b, b]))
    assert key(x + y) != key(y + x) != key(x + x)
    assert key(x + y) != key(pa.placeholder("x", (4,), np.float32) + y)
    assert key(x, y) != key(y, x)               # output order
    assert key((x * 2).sum()) == key((pa.placeholder("x", (4,), np.float64) * 2).sum())


_KEY_SCRIPT = textwrap.dedent("""
    import numpy as np, polyarray as pa
    from polyarray.codegen import program_key
    x = pa.placeholder("x", (6, 5), np.float32)
    w = pa.array(np.arange(10, dtype=np.float32).reshape(5, 2))
    e = pa.exp(x - x.max(axis=1, keepdims=True))
    outs = [pa.dot(e / e.sum(axis=1, keepdims=True), w), x[::2, [1, 3]].sum()]
    print(program_key([o.node for o in outs]), outs[0].node.digest)
""")


def test_program_key_is_the_same_in_every_process():
    runs = {subprocess.run([sys.executable, "-c", _KEY_SCRIPT], check=True, text=True,
                           capture_output=True, env=subprocess_env(PYTHONHASHSEED=seed)).stdout
            for seed in ("0", "77")}
    assert len(runs) == 1


def test_placeholders_are_collected_by_one_walk():
    x = pa.placeholder("x", (3,), np.float32)
    n = pa.placeholder("n", (3,), np.float32)
    e = (x * 2.0 + n).sum() + x.max()
    found = N.placeholders([e.node])
    assert list(found) == ["x", "n"]                  # topological order
    assert found["x"] is x.node and found["n"] is n.node
    prog = pa.compile(e, target="numpy")
    assert prog.placeholders == found
    with pytest.raises(ValueError, match=r"two different placeholders are named 'x': "
                                         r"shape \(3,\), dtype float32 and shape \(3,\), "
                                         r"dtype float64"):
        N.placeholders([(x + pa.placeholder("x", (3,), np.float64)).node])


def test_lowering_names_the_walk_s_placeholders_in_order():
    pytest.importorskip("loopy")
    import loopy as lp
    from polyarray.codegen import lower_program
    x = pa.placeholder("x", (3,), np.float32)
    y = pa.placeholder("y", (3,), np.float32)
    L = lower_program([(y * x).node], lp.OpenCLTarget())
    assert L.inputs == {"y": "p1_y", "x": "p1_x"}     # buffers in topological order
    assert list(L.buffers)[:2] == ["p1_y", "p1_x"]


_GOLDEN = """\
pa.Array(shape=(7,), dtype=float32, expr=(concatenate([reshape(einsum('ab,bc->ac', x, \
<data float32[3,2]>), (4,)), sum(x, axis=(1,)), getitem[:1]((getitem[0](<data float32[3,3]>) \
* 2.0))], axis=0) + max(exp(x), axis=(0, 1))))
   %0 float32[2,3]           = placeholder 'x'   * shared: 3 uses
   %1 float32[3,2]           = data
   %2 float32[2,2]           = einsum('ab,bc->ac', %0, %1)
   %3 float32[4]             = reshape(%2, (4,))
   %4 float32[2]             = sum(%0, axis=(1,))
   %5 float32[3,3]           = data
   %6 float32[3]             = getitem[0](%5)
   %7 float32[3]             = (%6 * 2.0)
   %8 float32[1]             = getitem[:1](%7)
   %9 float32[7]             = concatenate([%3, %4, %8], axis=0)
  %10 float32[2,3]           = exp(%0)
  %11 float32[]              = max(%10, axis=(0, 1))
  %12 float32[7]             = (%9 + %11)   -> output 0
placeholder 'x' (float32[2, 3])
a captured array (pa.array / NumPy operand, float32[3, 2])
the result of einsum('ab,bc->ac') (float32[2, 2])
the result of reshape (float32[4])
the result of sum over axes (1,) (float32[2])
a captured array (pa.array / NumPy operand, float32[3, 3])
the result of getitem[0] (float32[3])
the result of multiply (float32[3])
the result of getitem[:1] (float32[1])
the result of concatenate (float32[7])
the result of exp (float32[2, 3])
the result of max over axes (0, 1) (float32[])
the result of add (float32[7])"""


def test_printers_write_every_node_type():
    """repr, pa.format_dag and describe_node (Mappers now) write what the
    isinstance chains they replace wrote."""
    x = pa.placeholder("x", (2, 3), np.float32)
    w = pa.array(np.arange(6, dtype=np.float32).reshape(3, 2))
    big = pa.array(np.ones((3, 3), np.float32))
    e = (pa.concatenate([pa.dot(x, w).reshape(4), x.sum(axis=1), (big[0] * 2.0)[:1]])
         + pa.exp(x).max())
    lines = [repr(e), pa.format_dag(e)]
    lines += [describe_node(n) for n in N.topological_order([e.node])]
    assert "\n".join(lines) == _GOLDEN
    small = pa.array(np.array([1.0, 2.0]))
    assert repr(pa.exp(small)) == "pa.Array(shape=(2,), dtype=float64, expr=exp([1., 2.]))"
    deep = x
    for _ in range(8):
        deep = pa.sin(deep)
    assert repr(deep).endswith("expr=sin(sin(sin(sin(sin(sin(…)))))))")


@needs_opencl
def test_kernels_after_a_disk_hit_lower_nothing(tmp_path, monkeypatch):
    import polyarray.codegen as codegen
    import polyarray.targets.device_common as dc
    monkeypatch.setenv("POLYARRAY_CACHE_DIR", str(tmp_path))
    dc.clear_memory_cache()
    x = pa.placeholder("x", (33, 7), np.float32)
    expr = pa.exp(x).sum(axis=1) * x[:, 0]
    first = pa.compile(expr, target="opencl")
    assert first._exe.compiled.origin == "built"

    def facts(prog):
        return {name: (repr(k), k.args, k.gsize, k.lsize, k.form, k.rule, k.schedule)
                for name, k in prog.kernels.items()}
    want, nest = facts(first), {n: k.loop_nest() for n, k in first.kernels.items()}
    real = codegen.lower_program

    def refuse(*args, **kwargs):
        raise AssertionError("lowered after a disk-cache hit")
    monkeypatch.setattr(codegen, "lower_program", refuse)
    dc.clear_memory_cache()
    second = pa.compile(expr, target="opencl")
    assert second._exe.compiled.origin == "disk"
    assert facts(second) == want and second.schedule == first.schedule
    assert second._exe.placeholders == [("x", x.node)]
    xv = np.random.default_rng(0).uniform(-1, 1, (33, 7)).astype(np.float32)
    np.testing.assert_allclose(second(x=xv), first(x=xv))
    info = next(iter(second.kernels.values()))
    with pytest.raises(AssertionError, match="lowered after a disk-cache hit"):
        info.loopy_kernel               # the loopy objects: lowered when asked for
    monkeypatch.setattr(codegen, "lower_program", real)
    assert {n: k.loop_nest() for n, k in second.kernels.items()} == nest
    assert all(k.loopy_kernel is not None for k in second.kernels.values())


def test_disk_entries_hold_no_loopy_objects():
    pytest.importorskip("loopy")
    import loopy as lp
    from polyarray.codegen import lower_program
    from polyarray.targets.device_common import _strip, valid_lowered_entry
    x = pa.placeholder("x", (5,), np.float32)
    L = lower_program([pa.exp(x).node], lp.OpenCLTarget())
    assert L.kernels[0].loopy_kernel is not None
    assert not valid_lowered_entry({"lowered": L})
    stripped = _strip(L)
    assert valid_lowered_entry({"lowered": stripped})
    assert stripped.kernels[0].loopy_kernel is None and L.kernels[0].loopy is not None
