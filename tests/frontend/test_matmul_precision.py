"""A matrix product's ``precision`` (JAX's manner): per call, per block
(``pa.matmul_precision``) and per process (``pa.set_matmul_precision``);
"highest" unless asked, so results stay NumPy's; targets without a
tensor-core library compute every precision as "highest"."""
from __future__ import annotations

import numpy as np
import pytest

import polyarray as pa
from helpers import assert_same


def _precisions(*arrays):
    from polyarray.ir import nodes as N
    return [n.precision for a in arrays for n in N.topological_order([a._node])
            if isinstance(n, N.Einsum)]


def test_the_default_is_highest_and_each_way_of_asking_is_kept():
    x = pa.placeholder("x", (8, 8), np.float32)
    v = pa.placeholder("v", (8,), np.float32)
    assert _precisions(x @ x, pa.dot(x, x), pa.einsum("ij,jk->ik", x, x)) == ["highest"] * 3
    assert _precisions(pa.matmul(x, x, precision="tf32"), pa.dot(x, v, precision="bf16"),
                       pa.tensordot(x, x, 1, precision="tf32"),
                       pa.inner(x, x, precision="bf16"),
                       pa.einsum("ij,jk->ik", x, x, precision="tf32")) == \
        ["tf32", "bf16", "tf32", "bf16", "tf32"]
    with pa.matmul_precision("tf32"):
        inside = x @ x
        named = pa.matmul(x, x, precision="highest")
        with pa.matmul_precision("bf16"):
            nested = x.dot(x)
    assert _precisions(inside, named, nested, x @ x) == ["tf32", "highest", "bf16", "highest"]
    previous = pa.set_matmul_precision("bf16")
    try:
        assert previous == "highest"
        assert _precisions(x @ x) == ["bf16"]
    finally:
        pa.set_matmul_precision(previous)
    assert _precisions(x @ x) == ["highest"]
    assert "precision='tf32'" in repr(pa.matmul(x, x, precision="tf32"))
    assert "precision" not in repr(x @ x)


@pytest.mark.parametrize("call", [
    lambda x: pa.matmul(x, x, precision="fast"),
    lambda x: pa.einsum("ij,jk->ik", x, x, precision="float32"),
    lambda x: pa.set_matmul_precision(None),
    lambda x: pa.matmul_precision("TF32").__enter__(),
])
def test_an_unknown_precision_is_refused_naming_the_choices(call):
    x = pa.placeholder("x", (4, 4), np.float32)
    with pytest.raises(ValueError, match="'highest', 'tf32', 'bf16'"):
        call(x)
    assert _precisions(x @ x) == ["highest"]


def test_targets_without_tensor_cores_compute_at_highest(target):
    """The NumPy target, PoCL and generated kernels: every precision is
    NumPy's float32 product."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((33, 40)).astype(np.float32)
    b = rng.standard_normal((40, 21)).astype(np.float32)
    x, y = pa.placeholder("x", a.shape, np.float32), pa.placeholder("y", b.shape, np.float32)
    for precision in ("highest", "tf32", "bf16"):
        prog = pa.compile(pa.matmul(x, y, precision=precision), target=target)
        if "cublas" in [k.form for k in prog.kernels.values()]:
            continue        # CUDA with cuBLAS: tensor cores (tests/targets/cuda/test_cuda_blas.py)
        assert_same(prog(x=a, y=b), a @ b, f"{target} {precision}")


def test_jit_traces_again_under_another_default_precision():
    """A ``pa.jit`` function's trace holds the products' precision: a call
    under another default is traced again, never given the first trace's."""
    seen = []

    def f(a):
        y = a @ a
        seen.append(y._node.precision if hasattr(y, "_node") else None)
        return y
    g = pa.jit(f, target="numpy")
    a = np.eye(3, dtype=np.float32)
    with pa.matmul_precision("tf32"):
        g(a)
    g(a)
    g(a)
    assert seen == ["tf32", "highest"] and len(g.programs) == 2
