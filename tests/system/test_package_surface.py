"""What a user of the installed package sees: ``dir(pa)`` and
``from polyarray import *`` list the public names (``__all__``) and no
implementation modules; ``pa.linalg``, ``pa.random`` and ``pa.fft`` list
their functions alone; the document that error messages cite ships with the package and prints with
``python -m polyarray differences``; and the project's files name
themselves alone (no labels of the issues or work periods they came from)."""
import os
import re
import subprocess
import sys
import types

import pytest

import polyarray as pa
from helpers import subprocess_env

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_dir_and_star_import_list_the_public_names():
    assert dir(pa) == sorted(pa.__all__)
    missing = [n for n in pa.__all__ if not hasattr(pa, n)]
    assert not missing, missing
    modules = sorted(n for n in pa.__all__ if isinstance(getattr(pa, n), types.ModuleType))
    assert modules == ["dask", "fft", "linalg", "random", "schedules", "testing"], modules
    for name in ("sum", "matmul", "jit", "float32", "newaxis", "Array", "cumsum", "sort"):
        assert name in pa.__all__, name
    namespace = {}
    exec("from polyarray import *", namespace)
    assert namespace["sum"] is pa.sum and "ops" not in namespace and "api" not in namespace
    assert pa.ops is not None and pa.api.elementwise.exp is pa.exp     # still importable


def test_linalg_and_random_list_their_functions_alone():
    assert dir(pa.linalg) == sorted(pa.linalg.__all__)
    assert all(callable(getattr(pa.linalg, n)) for n in pa.linalg.__all__)
    assert not {"Array", "M", "annotations", "node_of"} & set(dir(pa.linalg))
    assert dir(pa.random) == sorted(pa.random.__all__)
    assert dir(pa.fft) == sorted(pa.fft.__all__)
    assert all(callable(getattr(pa.fft, n)) for n in pa.fft.__all__)
    assert not {"Array", "F", "annotations", "node_of", "math"} & set(dir(pa.fft))
    assert all(callable(getattr(pa.random, n)) for n in pa.random.__all__)
    assert not {"Array", "R", "np", "annotations", "node_of"} & set(dir(pa.random))


def test_the_package_ships_its_differences_and_type_marker():
    here = os.path.dirname(pa.__file__)
    assert os.path.isfile(os.path.join(here, "py.typed"))
    out = subprocess.run([sys.executable, "-m", "polyarray", "differences"],
                         capture_output=True, text=True, env=subprocess_env(), timeout=120)
    assert out.returncode == 0, out.stderr
    with open(os.path.join(here, "numpy_differences.md"), encoding="utf-8") as f:
        assert out.stdout.strip() == f.read().strip()
    bad = subprocess.run([sys.executable, "-m", "polyarray", "nonsense"],
                         capture_output=True, text=True, env=subprocess_env(), timeout=120)
    assert bad.returncode != 0 and "usage: python -m polyarray" in bad.stderr


# built from pieces, so that this file does not match itself
_LABEL = re.compile("|".join([r"[Ii]ssue[-_ ]?#?[0-9]", r"[Ss]ession[-_ ]?#?[0-9]",
                              "helper" + r"[-_ ]?[0-9]", r"[Ww]ork[- ]period[-_ ]?#?[0-9]"]))
_TEXT = (".py", ".md", ".ini", ".toml", ".cfg", ".txt", ".sh", ".json", ".rst")


def _project_files():
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in (
            "__pycache__", "build", "dist") and not d.endswith(".egg-info")]
        for name in files:
            if name.endswith(_TEXT) or name == "run":
                yield os.path.join(folder, name)
    yield os.path.join(ROOT, ".ci", "run")
    yield os.path.join(ROOT, ".importlinter")


def test_the_project_names_no_issues_or_work_periods():
    if not os.path.isfile(os.path.join(ROOT, "setup.py")):
        pytest.skip("the tests are not in polyarray's source tree")
    found = []
    for path in _project_files():
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for k, line in enumerate(f, 1):
                if _LABEL.search(line):
                    found.append(f"{os.path.relpath(path, ROOT)}:{k}: {line.strip()[:100]}")
    assert not found, "labels of issues or work periods:\n" + "\n".join(found[:20])
