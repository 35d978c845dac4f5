"""Small products that share every operand but one are one batched product
(``codegen/plan/siblings.py``); results stay NumPy's."""
import numpy as np
import pytest

import polyarray as pa
from polyarray import targets

OPENCL_OK, OPENCL_WHY = targets.availability("opencl")
CUDA_OK, CUDA_WHY = targets.availability("cuda")


def _einsums(outputs, target="cuda"):
    """The products' kernels of ``outputs`` lowered for ``target`` (a
    split product's combining kernel not counted)."""
    import loopy as lp
    from polyarray.codegen import lower_program
    t = lp.CudaTarget() if target == "cuda" else lp.PyOpenCLTarget()
    low = lower_program([o.node for o in outputs], t)
    return [k.name for k in low.kernels if "einsum" in k.name
            and not k.name.endswith("_combine")], low


def _forces(n=100):
    """nbody's accelerations: three products of one shape sharing ``mass``."""
    pos = pa.placeholder("pos", (n, 3), np.float64)
    mass = pa.placeholder("mass", (n, 1), np.float64)
    x, y, z = pos[:, 0:1], pos[:, 1:2], pos[:, 2:3]
    dx, dy, dz = x.T - x, y.T - y, z.T - z
    inv = (dx ** 2 + dy ** 2 + dz ** 2 + 0.01) ** -1.5
    acc = pa.hstack((2.0 * (dx * inv) @ mass, 2.0 * (dy * inv) @ mass, 2.0 * (dz * inv) @ mass))
    return acc * 0.5, {"pos": pos, "mass": mass}


def _numpy_forces(pos, mass):
    x, y, z = pos[:, 0:1], pos[:, 1:2], pos[:, 2:3]
    dx, dy, dz = x.T - x, y.T - y, z.T - z
    inv = (dx ** 2 + dy ** 2 + dz ** 2 + 0.01) ** -1.5
    return np.hstack((2.0 * (dx * inv) @ mass, 2.0 * (dy * inv) @ mass,
                      2.0 * (dz * inv) @ mass)) * 0.5


def test_three_force_products_are_one_kernel():
    acc, _ = _forces()
    names, low = _einsums([acc])
    assert len(names) == 1, low.kernels


@pytest.mark.parametrize("target", ["numpy", "opencl", "cuda"])
def test_joined_products_compute_numpys_values(target):
    if target == "opencl" and not OPENCL_OK:
        pytest.skip(f"opencl: {OPENCL_WHY}")
    if target == "cuda" and not CUDA_OK:
        pytest.skip(f"cuda: {CUDA_WHY}")
    acc, _ = _forces(37)
    rng = np.random.default_rng(0)
    pos, mass = rng.random((37, 3)), rng.random((37, 1))
    got = pa.compile(acc, target=target)(pos=pos, mass=mass)
    np.testing.assert_allclose(np.asarray(got), _numpy_forces(pos, mass), rtol=1e-12)


def test_products_sharing_the_first_operand_are_joined_and_exact():
    a = pa.placeholder("a", (20, 30), np.int64)
    w = pa.placeholder("w", (30, 4), np.int64)
    out = pa.stack([a @ w, a @ (w * 3), a @ (w + 2)]).sum(axis=0)
    names, _ = _einsums([out])
    assert len(names) == 1
    if OPENCL_OK:
        rng = np.random.default_rng(1)
        av, wv = rng.integers(-50, 50, (20, 30)), rng.integers(-50, 50, (30, 4))
        got = pa.compile(out, target="opencl")(a=av, w=wv)
        np.testing.assert_array_equal(np.asarray(got), av @ wv + av @ (wv * 3) + av @ (wv + 2))


def test_a_product_that_reads_another_is_not_joined():
    """``a @ w`` and ``((a @ w).sum() * a) @ w`` share ``w`` and shapes, but
    the second reads the first: joined, the stack would read its own
    result."""
    a = pa.placeholder("a", (10, 8), np.float64)
    w = pa.placeholder("w", (8, 3), np.float64)
    first = a @ w
    out = first + (first.sum() * a) @ w
    names, _ = _einsums([out])
    assert len(names) == 2
    if OPENCL_OK:
        rng = np.random.default_rng(2)
        av, wv = rng.random((10, 8)), rng.random((8, 3))
        got = pa.compile(out, target="opencl")(a=av, w=wv)
        np.testing.assert_allclose(np.asarray(got), av @ wv + ((av @ wv).sum() * av) @ wv,
                                   rtol=1e-12)


def test_outputs_and_large_products_stay_apart():
    a = pa.placeholder("a", (10, 8), np.float32)
    w = pa.placeholder("w", (8, 3), np.float32)
    # outputs: each its own product (a slice of a joined one would be a copy more)
    assert len(_einsums([a @ w, (a * 2) @ w])[0]) == 2
    big = pa.placeholder("big", (256, 256), np.float32)
    wb = pa.placeholder("wb", (256, 256), np.float32)
    out = pa.concatenate([big @ wb, (big * 2) @ wb])       # 2^24 multiply-adds each
    assert len(_einsums([out])[0]) == 2
    from polyarray.codegen.thresholds import using_thresholds
    with using_thresholds(SIBLING_MAX_WORK=1 << 24):
        assert len(_einsums([out])[0]) == 1


def test_the_joined_source_is_the_same_each_time():
    acc, _ = _forces(50)
    first = _einsums([acc], "opencl")[1].source
    again, _ = _forces(50)
    assert _einsums([again], "opencl")[1].source == first
