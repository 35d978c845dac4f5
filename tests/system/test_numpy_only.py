"""``pip install polyarray`` without an extra: NumPy and pymbolic alone.
``import polyarray``, the numpy target (``pa.compile``, ``pa.jit``, custom
kernels with their NumPy reference) and ``python -m polyarray`` work, and
the device targets say what to install.  A child Python in which loopy,
pyopencl, pycuda and islpy cannot be imported stands for that install (the
test environment has them all)."""
import subprocess
import sys
import textwrap

from helpers import subprocess_env

_BLOCK = textwrap.dedent("""
    import importlib.abc, sys
    class Missing(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in ("loopy", "pyopencl", "pycuda", "islpy"):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    sys.meta_path.insert(0, Missing())
""")


def _run(code, *args):
    return subprocess.run([sys.executable, "-c", _BLOCK + textwrap.dedent(code), *args],
                          capture_output=True, text=True, timeout=120, env=subprocess_env())


def test_import_and_the_numpy_target_need_no_loopy():
    done = _run("""
        import numpy as np
        import polyarray as pa
        x = pa.asarray(np.arange(6.0))
        got = pa.compile(pa.sin(x) * 2 + x.sum(), target="numpy")()
        assert np.allclose(got, np.sin(np.arange(6.0)) * 2 + 15.0)
        f = pa.jit(lambda a: (a * 2).sum(), target="numpy")
        assert f(np.arange(4.0)) == 12.0
        k = pa.elementwise_kernel("float64 x", "float64 y", "y = x * 3 + 1", "triple",
                                  reference=lambda x: x * 3 + 1)
        assert np.array_equal(np.asarray(pa.compile(k(x), target="numpy")()),
                              np.arange(6.0) * 3 + 1)
        try:
            pa.compile(x + 1, target="opencl")
        except Exception as e:
            print("opencl:", type(e).__name__, e)
        assert not any(m.split(".")[0] in ("loopy", "pyopencl", "pycuda", "islpy")
                       for m in sys.modules)
        print("ok")
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ok" in done.stdout
    assert "opencl: " in done.stdout and "install" in done.stdout, done.stdout


def test_the_environment_report_runs():
    done = _run("""
        import runpy
        sys.argv = ["polyarray"]
        runpy.run_module("polyarray", run_name="__main__")
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "numpy   available" in done.stdout and "default target: numpy" in done.stdout
