"""nvmath-python's bindings imported one at a time (``targets/cuda/bindings``),
checked on a stand-in package shaped like nvmath's: no GPU and no nvmath
needed.  Its ``__init__`` files record that they ran, as the real ones load
every CUDA library (0.6-1.0 s)."""
import subprocess
import sys
import textwrap

from helpers import subprocess_env


def _package(root):
    pkg = root / "nvmath"
    (pkg / "bindings" / "_internal").mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "import builtins\nbuiltins.RAN = getattr(builtins, 'RAN', []) + ['nvmath']\n"
        "from nvmath import bindings\nfrom nvmath import linalg\n")
    (pkg / "linalg.py").write_text("")
    (pkg / "bindings" / "__init__.py").write_text(
        "import builtins\nbuiltins.RAN = getattr(builtins, 'RAN', []) + ['bindings']\n"
        "from nvmath.bindings import cublas\nfrom nvmath.bindings import cufft\n")
    (pkg / "bindings" / "_internal" / "__init__.py").write_text("")
    (pkg / "bindings" / "_internal" / "cublas.py").write_text("LOADED = False\n")
    for name in ("cublas", "cufft"):
        (pkg / "bindings" / f"{name}.py").write_text(
            "from nvmath.bindings._internal import cublas as _lib\nNAME = __name__\n")


def _run(root, code):
    env = subprocess_env()
    env["PYTHONPATH"] = f"{root}:{env['PYTHONPATH']}"      # the stand-in first
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_a_binding_imports_without_the_packages_init(tmp_path):
    _package(tmp_path)
    out = _run(tmp_path, """
        import builtins, sys
        from polyarray.targets.cuda.bindings import binding
        m = binding("cublas")
        print(m.NAME, getattr(builtins, "RAN", []) == [], "nvmath" in sys.modules,
              "nvmath.bindings" in sys.modules, binding("cublas") is m)
        """)
    assert out == ["nvmath.bindings.cublas", "True", "False", "False", "True"], out


def test_the_users_later_import_runs_the_real_init_and_shares_the_module(tmp_path):
    _package(tmp_path)
    out = _run(tmp_path, """
        import builtins
        from polyarray.targets.cuda.bindings import binding
        m = binding("cublas")
        import nvmath
        print(builtins.RAN, nvmath.bindings.cublas is m, hasattr(nvmath, "linalg"),
              binding("cufft") is nvmath.bindings.cufft)
        """)
    assert out == ["['nvmath',", "'bindings']", "True", "True", "True"], out


def test_after_the_users_import_a_binding_comes_from_the_real_package(tmp_path):
    _package(tmp_path)
    out = _run(tmp_path, """
        import nvmath
        from polyarray.targets.cuda.bindings import binding
        print(binding("cufft") is nvmath.bindings.cufft)
        """)
    assert out == ["True"], out


def test_without_nvmath_it_says_what_to_install(tmp_path):
    out = _run(tmp_path, """
        import importlib.util
        found = importlib.util.find_spec       # as where nvmath is not installed
        importlib.util.find_spec = lambda name, *a: None if name == "nvmath" else found(name, *a)
        from polyarray.targets.cuda.bindings import binding
        try:
            binding("cublas")
        except ImportError as e:
            print("pip install nvmath-python" in str(e))
        """)
    assert out == ["True"], out
