"""``pa.fft`` on every target against ``numpy.fft``: every transform with
NumPy's ``n``/``s``/``axes``/``norm`` semantics, its dtype rules (single
precision stays single, integers compute in double), the imaginary parts
NumPy's ``irfft`` ignores, the work around a transform in the same program,
empty batches, NumPy's errors and warnings, and the policy's rows.  OpenCL
runs in both layouts: on a GPU the transforms are VkFFT's (where pyvkfft is
installed; else the host's, as on a CPU)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import polyarray as pa
from polyarray import targets
from conftest import TEST_TARGETS

# pocketfft and a device library differ in the last bits: relative to the
# largest magnitude of the result, per dtype of the result
TOL = {np.dtype(np.complex64): 3e-6, np.dtype(np.float32): 3e-6,
       np.dtype(np.complex128): 1e-13, np.dtype(np.float64): 1e-13,
       np.dtype(np.float16): 3e-3}


def close(got, want, what=""):
    got, want = np.asarray(got), np.asarray(want)
    assert (got.shape, got.dtype) == (want.shape, want.dtype), (what, got.shape, got.dtype,
                                                                 want.shape, want.dtype)
    if want.dtype.kind in "biu":            # (the shifts move integers: exactly)
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    scale = max(float(np.max(np.abs(want), initial=0.0)), 1.0)
    np.testing.assert_allclose(got, want, rtol=0, atol=TOL[want.dtype] * scale, err_msg=what)


LAYOUTS = [pytest.param((t, None), id=t) for t in TEST_TARGETS] + [
    pytest.param(("opencl", "gpu"), id="opencl-gpu") for t in TEST_TARGETS if t == "opencl"]


@pytest.fixture(params=LAYOUTS)
def layout(request):
    """A target under test and, for OpenCL, the device kind its policy
    reads (``"gpu"``: VkFFT's row)."""
    name, kind = request.param
    ok, reason = targets.availability(name)
    if not ok:
        pytest.skip(f"{name}: {reason}")
    return request.param


def run(layout, cases, *arrays):
    """Each ``f(xp, *arrays)`` of ``cases`` as one program on ``layout``
    (``(target, device kind)``; the arrays its placeholders), compared with
    ``f(np, *arrays)``."""
    target, kind = layout
    names = [f"a{i}" for i in range(len(arrays))]
    ph = [pa.placeholder(n, a.shape, a.dtype) for n, a in zip(names, arrays)]
    outs = [f(pa, *ph) for f in cases.values()]
    opts = {"device_kind": kind} if kind else {}
    got = pa.compile(outs, target=target, **opts)(**dict(zip(names, arrays)))
    for (what, f), g in zip(cases.items(), got):
        close(g, f(np, *arrays), what)


def _signal(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("single", [True, False], ids=["single", "double"])
def test_every_transform_matches_numpy(layout, norm, single):
    """Random complex input, so ``irfft``/``hfft`` see imaginary parts at
    frequency 0 and n/2 (NumPy ignores them) and non-Hermitian spectra."""
    z = _signal((6, 10), np.complex64 if single else np.complex128)
    x = z.real.copy()
    F = {
        "fft": lambda xp, z, x: xp.fft.fft(z, norm=norm),
        "ifft n=7 axis=0": lambda xp, z, x: xp.fft.ifft(z, n=7, axis=0, norm=norm),
        "rfft n=13": lambda xp, z, x: xp.fft.rfft(x, n=13, norm=norm),
        "rfft n=4 axis=0": lambda xp, z, x: xp.fft.rfft(x, n=4, axis=0, norm=norm),
        "irfft": lambda xp, z, x: xp.fft.irfft(z, norm=norm),
        "irfft n=9 axis=0": lambda xp, z, x: xp.fft.irfft(z, n=9, axis=0, norm=norm),
        "irfft n=30": lambda xp, z, x: xp.fft.irfft(z, n=30, norm=norm),
        "hfft": lambda xp, z, x: xp.fft.hfft(z, norm=norm),
        "ihfft": lambda xp, z, x: xp.fft.ihfft(x, norm=norm),
        "fft2": lambda xp, z, x: xp.fft.fft2(z, norm=norm),
        "ifft2 s": lambda xp, z, x: xp.fft.ifft2(z, s=(3, 16), norm=norm),
        "ifftn s axes": lambda xp, z, x: xp.fft.ifftn(z, s=(4, 12), axes=(1, 0), norm=norm),
        "rfftn": lambda xp, z, x: xp.fft.rfftn(x, norm=norm),
        "rfft2 axes": lambda xp, z, x: xp.fft.rfft2(x, axes=(1, 0), norm=norm),
        "irfft2": lambda xp, z, x: xp.fft.irfft2(z, norm=norm),
        "irfftn s axes": lambda xp, z, x: xp.fft.irfftn(z, s=(5, 7), axes=(0, 1), norm=norm),
    }
    run(layout, F, z, x)


def test_more_axes_batches_and_dtypes(layout):
    """A 3-D array transformed over its first and last axes, over all three,
    and over one axis twice; integers and booleans compute in double."""
    z = _signal((3, 4, 5), np.complex128, seed=1)
    i = (_signal((4, 6), np.float64, seed=2) * 10).astype(np.int16)
    F = {
        "fftn axes (0, 2)": lambda xp, z, i: xp.fft.fftn(z, axes=(0, 2)),
        "ifftn": lambda xp, z, i: xp.fft.ifftn(z),
        "fftn axes (1, 1)": lambda xp, z, i: xp.fft.fftn(z, axes=(1, 1)),
        "rfftn axes (2, 0)": lambda xp, z, i: xp.fft.rfftn(z.real, axes=(2, 0)),
        "fft of int16": lambda xp, z, i: xp.fft.fft(i),
        "rfft of int16": lambda xp, z, i: xp.fft.rfft(i, axis=0),
        "irfft of bool": lambda xp, z, i: xp.fft.irfft(i > 0),
        "fftshift": lambda xp, z, i: xp.fft.fftshift(z),
        "ifftshift axes=1": lambda xp, z, i: xp.fft.ifftshift(i, axes=1),
        "fftshift axes=(0, 2)": lambda xp, z, i: xp.fft.fftshift(z.real, axes=(0, 2)),
    }
    run(layout, F, z, i)


def test_the_work_around_a_transform_runs_with_it(layout):
    """A convolution ``irfft(rfft(x) * rfft(k))`` with a window before and a
    scale after: the arithmetic is nodes of the same program."""
    rng = np.random.default_rng(3)
    x, k = rng.standard_normal((4, 64)), rng.standard_normal(64)
    F = {"convolution": lambda xp, x, k: 0.5 * xp.fft.irfft(
        xp.fft.rfft(x * xp.hanning(64)) * xp.fft.rfft(k), n=64)}
    run(layout, F, x, k)


def test_empty_batches_and_single_points(layout):
    z = np.zeros((0, 4), np.complex64)
    one = _signal((3, 1), np.complex128)
    F = {"empty batch": lambda xp, z, o: xp.fft.fft(z),
         "empty rfft": lambda xp, z, o: xp.fft.rfft(z.real),
         "one point": lambda xp, z, o: xp.fft.ifft(o),
         "one point irfft n=1": lambda xp, z, o: xp.fft.irfft(o, n=1)}
    run(layout, F, z, one)


def test_float16_computes_in_single_precision(layout):
    """NumPy's rule: the transform in single precision, irfft's result
    float16, and the normalization factor of a transform of float16 data
    computed in half precision (``1/6`` and ``1/sqrt(5)`` rounded to half:
    2.4e-4 and 1.1e-4 off; later axes' factors in single)."""
    x = _signal((5, 6), np.float16)
    F = {"fft": lambda xp, x: xp.fft.fft(x), "irfft": lambda xp, x: xp.fft.irfft(x),
         "rfft": lambda xp, x: xp.fft.rfft(x), "ifft": lambda xp, x: xp.fft.ifft(x),
         "ifftn": lambda xp, x: xp.fft.ifftn(x), "fft_ortho": lambda xp, x: xp.fft.fft(
             x, axis=0, norm="ortho"), "rfftn_forward": lambda xp, x: xp.fft.rfftn(
             x, norm="forward"), "irfft_odd": lambda xp, x: xp.fft.irfft(x, n=7)}
    run(layout, F, x)


def test_frequencies():
    for n, d in [(8, 0.1), (9, 1.0), (1, 2.0)]:
        for name in ("fftfreq", "rfftfreq"):
            got = np.asarray(getattr(pa.fft, name)(n, d))
            want = getattr(np.fft, name)(n, d)
            assert got.dtype == want.dtype and np.array_equal(got, want), (name, n, d)


def test_shapes_and_dtypes_are_known_at_once():
    x = pa.placeholder("x", (3, 10), np.float32)
    assert pa.fft.rfft(x).shape == (3, 6) and pa.fft.rfft(x).dtype == np.complex64
    assert pa.fft.irfft(pa.fft.rfft(x), n=11).shape == (3, 11)
    assert pa.fft.fft2(x, s=(4, 4)).dtype == np.complex64
    assert pa.fft.hfft(x).dtype == np.float32
    assert pa.fft.fft(x.astype(np.int8)).dtype == np.complex128
    assert "fft.rfft(" in pa.format_dag(pa.fft.rfft(x))
    assert pa.fft.fftn(x, axes=()) is not None and pa.fft.fftn(x, axes=()).dtype == x.dtype


def test_numpys_errors_and_warnings():
    x = np.ones((4, 6))
    for call, err, match in [
            (lambda m: m.fft.fft(x, n=0), ValueError, r"Invalid number of FFT data points \(0\)"),
            (lambda m: m.fft.irfft(x, n=-2), ValueError, r"Invalid number of FFT data points"),
            (lambda m: m.fft.fft(x, norm="none"), ValueError, "Invalid norm value none"),
            (lambda m: m.fft.fftn(x, s=(2, 2), axes=(0,)), ValueError,
             "Shape and axes have different lengths"),
            (lambda m: m.fft.fft(x, axis=2), IndexError, None),
            (lambda m: m.fft.rfft(x + 1j), TypeError, None)]:
        with pytest.raises(err, match=match):
            call(np)
        with pytest.raises(err, match=match):
            call(pa)
    with pytest.raises(TypeError, match="complex"):
        pa.fft.rfft(x + 1j)
    with pytest.raises(NotImplementedError, match="out="):
        pa.fft.fft(x, out=np.empty((4, 6), complex))
    for m in (np, pa):
        with pytest.warns(DeprecationWarning, match="`axes` should not be `None`"):
            m.fft.fftn(x, s=(2, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        close(pa.fft.fftn(x, s=(2, 3)), np.fft.fftn(x, s=(2, 3)))
        close(pa.fft.fftn(x, s=(None, 3), axes=(0, 1)), np.fft.fftn(x, s=(None, 3), axes=(0, 1)))


def test_the_policy_gives_transforms_to_cufft_on_cuda_vkfft_on_opencl_gpus_and_the_host_elsewhere():
    """The policy's rows, read from the programs' calls (code generation
    alone, no GPU needed)."""
    x = pa.placeholder("x", (4, 16), np.complex64)
    outs = [pa.fft.fft(x), pa.fft.rfft(x.real), pa.fft.irfft(x)]
    want = {"fft", "rfft", "irfft"}
    calls = [k for k in pa.compile(outs, target="cuda").kernels.values() if "op" in k.facts]
    assert {k.facts["op"] for k in calls} == want
    assert {(k.form, k.rule) for k in calls} == {("cufft", "fft: cuFFT on the device")}
    if targets.availability("opencl")[0]:
        for kind, form, rule in (("cpu", "host fft", "fft: pocketfft on the host"),
                                 ("gpu", "vkfft", "fft: VkFFT on an OpenCL GPU")):
            calls = [k for k in pa.compile(outs, target="opencl", device_kind=kind)
                     .kernels.values() if "op" in k.facts]
            assert {(k.facts["op"], k.form, k.rule) for k in calls} == \
                {(op, form, rule) for op in want}


def test_vkfft_runs_the_transforms_of_an_opencl_gpu(caplog):
    """On an OpenCL GPU (PoCL's CPU with the GPU policy, in CI) the
    transforms are VkFFT's where pyvkfft is installed, and the host's
    (pocketfft, logged) where it is not: both agree with NumPy, in a
    program whose work around the transforms runs in kernels."""
    import logging
    if not targets.availability("opencl")[0]:
        pytest.skip("opencl: " + targets.availability("opencl")[1])
    try:
        import pyvkfft.opencl  # noqa: F401
        library = "VkFFT"
    except ImportError:
        library = "the host"
    rng = np.random.default_rng(7)
    z = (rng.standard_normal((3, 6, 10)) + 1j * rng.standard_normal((3, 6, 10))).astype(np.complex64)
    r = rng.standard_normal((4, 97))
    p = rng.standard_normal(24001).astype(np.complex64)      # a guarded Bluestein length
    F = {"fft": lambda xp, z, r, p: xp.fft.fft(z * 2),
         "ifftn 3 axes": lambda xp, z, r, p: xp.fft.ifftn(z),
         "rfft of a prime length": lambda xp, z, r, p: xp.fft.rfft(r),
         "irfft even": lambda xp, z, r, p: xp.fft.irfft(xp.fft.rfft(r), 96) + 1,
         "irfft odd": lambda xp, z, r, p: xp.fft.irfft(xp.fft.rfft(r), 97),
         "guarded length": lambda xp, z, r, p: xp.fft.fft(p)}
    with caplog.at_level(logging.INFO, logger="polyarray"):
        run(("opencl", "gpu"), F, z, r, p)
    said = " ".join(rec.getMessage() for rec in caplog.records)
    if library == "VkFFT":
        assert "runs in VkFFT (c2r, 4 transforms of 97, float64)" in said
        assert "runs in VkFFT (inverse, 1 transforms of 3 x 6 x 10, complex64)" in said
        assert "of length (24001,) runs on the host" in said
    else:
        assert "VkFFT is not usable here" in said or "runs on the host" in said


def test_numpys_functions_on_lazy_arrays_are_these():
    """``np.fft.fft(x)`` of a polyarray array is ``pa.fft.fft(x)``, lazily;
    NumPy's ``out=`` is written."""
    v = np.arange(8.0)
    x = pa.asarray(v)
    got = np.fft.rfft(x, norm="ortho")
    assert isinstance(got, pa.Array)
    close(got, np.fft.rfft(v, norm="ortho"))
    out = np.empty(8, complex)
    np.fft.fft(x, out=out)
    close(out, np.fft.fft(v))
    assert type(pa.fft.fft(x)) is pa.Array


def test_profiles_time_transforms_on_an_opencl_gpu():
    """A profile times a transform's step from the kernels before it done to
    its own work done (VkFFT's calls return at once), on the profiling
    queue, without pyvkfft's warning about a queue other than its app's."""
    if not targets.availability("opencl")[0]:
        pytest.skip("opencl: " + targets.availability("opencl")[1])
    x = pa.placeholder("x", (8, 1024), np.complex64)
    prog = pa.compile(pa.fft.fft(x * 2) + 1, target="opencl", device_kind="gpu")
    v = _signal((8, 1024), np.complex64)
    close(prog(x=v), np.fft.fft(v * 2) + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.simplefilter("ignore", RuntimeWarning)      # (hardware limits on a busy CPU)
        prof = prog.profile(x=v)
    (call,) = [r for r in prof.rows if "fft" in r.name]
    assert call.seconds > 0
    close(prog(x=v), np.fft.fft(v * 2) + 1)               # after the profiling queue's run
