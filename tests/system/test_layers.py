"""The layer rule stays: import-linter checks the contracts in ``.importlinter``
(the frontend above targets above codegen above the IR, codegen's packages
in pipeline order, and no import cycle between sibling modules), so CI fails
on an import that breaks them."""
import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("importlinter", reason="import-linter is in the test extra")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_LINT = ("import sys; from importlinter.cli import lint_imports; "
         "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True, no_logo=True))")


def installed_layout(tmp_path) -> str:
    """A folder whose ``polyarray`` holds ``codegen`` and ``targets`` as
    subpackages, as ``pip install`` lays them out (setup.py's package_dir):
    import-linter reads the package from the disk, and in this repository
    they sit beside it."""
    if os.path.isdir(os.path.join(ROOT, "polyarray", "codegen")):
        return ROOT
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(os.path.join(ROOT, "polyarray"), tmp_path / "polyarray", ignore=skip)
    for sub in ("codegen", "targets"):
        shutil.copytree(os.path.join(ROOT, sub), tmp_path / "polyarray" / sub, ignore=skip)
    return str(tmp_path)


def test_import_contracts_are_kept(tmp_path):
    env = dict(os.environ, PYTHONPATH=installed_layout(tmp_path))
    r = subprocess.run([sys.executable, "-c", _LINT, os.path.join(ROOT, ".importlinter")],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    assert "BROKEN" not in r.stdout and "KEPT" in r.stdout, r.stdout
