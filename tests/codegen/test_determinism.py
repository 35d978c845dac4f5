"""The generated source of a DAG is the same in every process.

Loopy nests ILP loops, and orders the axes of the temporaries they
privatize, by the iteration order of a set of names, which follows
PYTHONHASHSEED; register-tiled matmuls have two to four such loops
(codegen/loopy_fixes/ilp_order.py).  Each child process generates all the
sources with its own hash seed, with loopy's disk cache off (it would
serve one process's result to the others) and an empty polyarray cache.
"""
import subprocess
import sys
import textwrap

from helpers import subprocess_env

_SCRIPT = textwrap.dedent("""
    import warnings, numpy as np, polyarray as pa
    from polyarray.schedules import RegisterTile
    warnings.simplefilter("ignore")
    a = pa.placeholder("a", (128, 64), np.float32)
    b = pa.placeholder("b", (64, 128), np.float32)
    tiles = {"cuda": [RegisterTile("a", "b", 32, 8, 8),                        # vector=1
                      RegisterTile("a", "b", 128, 16, 16, vector=4),            # 4 register loops
                      RegisterTile("a", "b", 32, 4, 8, vector=4, block_j=16)],  # 3, rectangular
             "opencl": [RegisterTile("a", "b", 32, 8, 8)]}
    for target, options in (("cuda", {}), ("opencl", {"device_kind": "gpu"})):
        # the default: RegisterTile("a", "b", 64, 16, 16, vector=4), 2 register loops
        print(pa.compile(a @ b, target=target, **options).source)
        for tile in tiles[target]:
            print(pa.compile(a @ b, target=target, schedule={"k0_einsum": [tile]},
                             **options).source)
""")


def test_register_tiled_sources_do_not_depend_on_the_hash_seed(tmp_path):
    procs = []
    for seed in ("0", "3", "6"):          # 3 and 6 nested the loops otherwise before
        env = subprocess_env(PYTHONHASHSEED=seed, LOOPY_NO_CACHE="1",
                             POLYARRAY_CACHE_DIR=str(tmp_path / seed))
        procs.append(subprocess.Popen([sys.executable, "-c", _SCRIPT], env=env, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        outs.append(out)
    assert outs[0].count("acc_k_outer_k_inner[") > 100     # register-tiled kernels
    assert outs[0] == outs[1] == outs[2]


def test_register_loops_nest_in_the_order_loopy_took_with_seed_0():
    from polyarray.codegen.schedule import RegisterTile
    assert RegisterTile("a", "b", 64, 16).register_loops() == ("j_inner_outer", "i_inner_outer")
    assert RegisterTile("a", "b", 128, 16, vector=4, block_j=64).register_loops() == (
        "i_inner_inner_inner", "j_inner_inner", "i_inner_outer")


def test_ilp_order_follows_loop_priorities_then_names():
    from types import SimpleNamespace

    from polyarray.codegen.loopy_fixes.ilp_order import InOrder, in_order
    kernel = SimpleNamespace(loop_priority=frozenset({("z", "k", "y")}))
    assert in_order(kernel, {"a", "y", "z", "b"}) == ("z", "y", "a", "b")
    names = InOrder({"a", "b", "c"}, ("c", "a", "b"))
    assert list(names) == ["c", "a", "b"] and names == {"a", "b", "c"}


def test_one_program_per_computation_whatever_the_einsum_letters():
    """``pa.dot(x, y)`` wrote ``ab,bc->ac`` and ``x @ y``
    ``ik,kj->ij``, so the same product compiled twice.  Letters are renamed
    in order of first appearance: one node, one program key."""
    import numpy as np
    import polyarray as pa
    from polyarray.codegen import program_key
    x = pa.placeholder("x", (3, 4), np.float32)
    y = pa.placeholder("y", (4, 5), np.float32)
    same = [pa.dot(x, y), x @ y, pa.matmul(x, y), pa.einsum("ij,jk->ik", x, y),
            pa.einsum("pq,qr", x, y), pa.tensordot(x, y, axes=1)]
    assert all(s.node is same[0].node for s in same), [s.node.subscripts for s in same]
    assert len({program_key([s.node]) for s in same}) == 1
    b = pa.placeholder("b", (2, 3, 4), np.float32)
    assert pa.einsum("zij,jk->zik", b, y).node is pa.einsum("bik,kj->bij", b, y).node
    # a different computation stays different
    assert pa.einsum("ij,jk->ki", x, y).node is not same[0].node


_MATMULS = textwrap.dedent("""
    import warnings, numpy as np, polyarray as pa
    warnings.simplefilter("ignore")
    x, y = pa.placeholder("x", (300, 5000), np.float32), pa.placeholder("y", (5000, 700), np.float32)
    d = pa.placeholder("d", (2048, 256), np.float64)
    for out in (x @ y, pa.tanh(x @ y + 1.0), d @ d.T):     # split-K, its epilogue, tensor cores
        print(pa.compile(out, target="cuda").source)
""")


def test_matmul_sources_do_not_depend_on_the_hash_seed(tmp_path):
    """Which dependency a barrier's comment names and the term order of a
    prefetch's bounds check followed PYTHONHASHSEED (seeds 1, 3 and 4 gave
    three sources; codegen/loopy_fixes/hash_order.py)."""
    procs = []
    for seed in ("1", "3", "4"):
        env = subprocess_env(PYTHONHASHSEED=seed, LOOPY_NO_CACHE="1",
                             POLYARRAY_CACHE_DIR=str(tmp_path / seed))
        procs.append(subprocess.Popen([sys.executable, "-c", _MATMULS], env=env, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in outs]
    assert "__syncthreads" in outs[0][0] and outs[0][0].count("__global__") >= 3
    assert outs[0][0] == outs[1][0] == outs[2][0]
