"""``cache.code_version``: the digest of the code generator's files, which
keys every cached program.  A new process reads it from the disk cache,
keyed by the folder's path and checked against one ``stat`` of each folder
and file, instead of listing the folders and reading and hashing the files (the disk-hit path)."""
import os

import polyarray.codegen as codegen
from polyarray.targets import cache


def _fresh(monkeypatch):
    monkeypatch.setattr(cache, "_CODE_VERSION", None)
    cache.clear_memory_layers()


def _later(monkeypatch, seconds=10):
    """The clock ``seconds`` ahead: the files just written count as settled."""
    real = cache.time.time_ns
    monkeypatch.setattr(cache, "_now_ns", lambda: real() + seconds * 10 ** 9)


def test_the_code_version_follows_the_code_generators_files(tmp_path, monkeypatch):
    pkg = tmp_path / "codegen"
    (pkg / "schedule").mkdir(parents=True)
    (pkg / "__init__.py").write_text("x = 1\n")
    (pkg / "schedule" / "steps.py").write_text("y = 2\n")
    (pkg / "notes.txt").write_text("not code\n")
    monkeypatch.setattr(codegen, "__file__", str(pkg / "__init__.py"))
    monkeypatch.setenv("POLYARRAY_CACHE_DIR", str(tmp_path / "cache"))
    _later(monkeypatch)
    _fresh(monkeypatch)
    first = cache.code_version()
    dirs, files, links = cache._py_files(str(pkg))
    assert not links
    assert [rel for rel, _ in dirs] == ["", "schedule"]
    assert [rel for rel, _ in files] == ["__init__.py", os.path.join("schedule", "steps.py")]

    # a new process with the same files: the stored digest, no file read
    _fresh(monkeypatch)
    real_open = open

    def no_reads(path, *a, **k):
        assert not str(path).endswith(".py"), path
        return real_open(path, *a, **k)
    monkeypatch.setattr("builtins.open", no_reads)
    assert cache.code_version() == first
    monkeypatch.setattr("builtins.open", real_open)

    (pkg / "notes.txt").write_text("still not code, longer\n")
    _fresh(monkeypatch)
    assert cache.code_version() == first

    (pkg / "schedule" / "steps.py").write_text("y = 3\n")      # same size, new content
    st = os.stat(pkg / "schedule" / "steps.py")
    os.utime(pkg / "schedule" / "steps.py", ns=(st.st_atime_ns, st.st_mtime_ns + 10 ** 9))
    _fresh(monkeypatch)
    changed = cache.code_version()
    assert changed != first

    (pkg / "schedule" / "steps.py").write_text("y = 2\n")       # back as it was: same digest
    os.utime(pkg / "schedule" / "steps.py", ns=(st.st_atime_ns, st.st_mtime_ns + 2 * 10 ** 9))
    _fresh(monkeypatch)
    assert cache.code_version() == first

    # a new file, found through its folder's stamp (no file's stamp changed)
    (pkg / "schedule" / "more.py").write_text("z = 4\n")
    _fresh(monkeypatch)
    added = cache.code_version()
    assert added not in (first, changed)
    (pkg / "schedule" / "more.py").unlink()
    _fresh(monkeypatch)
    assert cache.code_version() == first
    (pkg / "new").mkdir()                                           # a new subpackage
    (pkg / "new" / "mod.py").write_text("w = 5\n")
    _fresh(monkeypatch)
    assert cache.code_version() not in (first, changed, added)


def test_a_lookup_stats_each_file_once_and_lists_no_folder(monkeypatch, tmp_path):
    """The disk-hit path's check: one ``stat`` per folder and file, no
    listing (the real codegen folder)."""
    monkeypatch.setenv("POLYARRAY_CACHE_DIR", str(tmp_path))
    _later(monkeypatch)
    _fresh(monkeypatch)
    cache.code_version()
    _fresh(monkeypatch)
    calls = []
    real_stat, real_scandir = os.stat, os.scandir
    monkeypatch.setattr(os, "stat", lambda p, *a, **k: calls.append(p) or real_stat(p, *a, **k))
    monkeypatch.setattr(os, "scandir", lambda *a: (_ for _ in ()).throw(AssertionError(a)))
    cache.code_version()
    assert len(calls) == len(set(calls)) > 20, calls


def test_two_installs_with_equal_stamps_get_their_own_digests(tmp_path, monkeypatch):
    """Nix gives every file the mtime 1: two installs of different code with
    equal names, sizes and mtimes, sharing a cache, must not share a digest."""
    monkeypatch.setenv("POLYARRAY_CACHE_DIR", str(tmp_path / "cache"))
    digests = []
    for tag, text in (("one", "x = 1\n"), ("two", "x = 2\n")):
        pkg = tmp_path / tag / "codegen"
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text(text)
        os.utime(pkg / "__init__.py", ns=(1, 1))
        monkeypatch.setattr(codegen, "__file__", str(pkg / "__init__.py"))
        _later(monkeypatch)
        _fresh(monkeypatch)
        digests.append(cache.code_version())
    assert digests[0] != digests[1]


def _reads_py(monkeypatch):
    """Whether the next lookup reads a ``.py`` file (hashes again)."""
    import builtins
    real_open, read = builtins.open, []

    def spying(path, *a, **k):
        read.append(str(path).endswith(".py"))
        return real_open(path, *a, **k)
    _fresh(monkeypatch)
    monkeypatch.setattr(builtins, "open", spying)
    try:
        digest = cache.code_version()
    finally:
        monkeypatch.setattr(builtins, "open", real_open)
    return any(read), digest


def test_stamps_too_recent_to_trust_are_not_kept(tmp_path, monkeypatch):
    """A file added within the tick of a coarse clock leaves its folder's
    stamp as it was: so no digest is kept while any stamp is within a few
    seconds of now, and each process hashes again (git's "racily clean")."""
    pkg = tmp_path / "codegen"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("x = 1\n")
    monkeypatch.setattr(codegen, "__file__", str(pkg / "__init__.py"))
    monkeypatch.setenv("POLYARRAY_CACHE_DIR", str(tmp_path / "cache"))
    assert _reads_py(monkeypatch)[0]
    assert _reads_py(monkeypatch)[0]            # just written: hashed again
    _later(monkeypatch)
    hashed, digest = _reads_py(monkeypatch)
    assert hashed
    assert _reads_py(monkeypatch) == (False, digest)     # settled: kept


def test_a_link_in_the_folder_is_never_trusted(tmp_path, monkeypatch):
    """A dangling link is no file; when its target appears no stamp of
    ours changes.  So with a link there, every process hashes again."""
    pkg = tmp_path / "codegen"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("x = 1\n")
    (pkg / "late.py").symlink_to(tmp_path / "elsewhere.py")          # dangling
    monkeypatch.setattr(codegen, "__file__", str(pkg / "__init__.py"))
    monkeypatch.setenv("POLYARRAY_CACHE_DIR", str(tmp_path / "cache"))
    _later(monkeypatch)
    hashed, before = _reads_py(monkeypatch)
    assert hashed and _reads_py(monkeypatch) == (True, before)
    (tmp_path / "elsewhere.py").write_text("y = 2\n")             # the target appears
    hashed, after = _reads_py(monkeypatch)
    assert hashed and after != before


def test_the_thresholds_in_force_take_part_in_the_code_version():
    """Other thresholds make other code, so a program lowered under
    ``using_thresholds`` has another code version (another cache key) than
    one under the measured numbers; equal values are the same key, and a
    misspelt name is refused."""
    import pytest
    from polyarray.codegen.policy import current_thresholds, using_thresholds
    base = cache.code_version()
    with using_thresholds(ELEMENTWISE_ILP=2):
        changed = cache.code_version()
        with using_thresholds(FILL_THREADS=1 << 17):
            assert cache.code_version() not in (base, changed)
    assert changed != base and cache.code_version() == base
    with using_thresholds(ELEMENTWISE_ILP=current_thresholds().ELEMENTWISE_ILP):
        assert cache.code_version() == base
    with pytest.raises(TypeError, match="no threshold named 'ELEMENTWISE'"):
        with using_thresholds(ELEMENTWISE=2):
            pass


_DISK_HIT = """
import json, sys
import numpy as np, polyarray as pa
x = pa.placeholder("x", (100, 3), np.float32)
y = ((pa.exp(x) * 2.0 + 1.0) / (x * x + 1.0)).sum(axis=1)
prog = pa.compile(y, target=sys.argv[1])
v = np.linspace(-1, 1, 300, dtype=np.float32).reshape(100, 3)
ok = bool(np.allclose(prog(x=v), ((np.exp(v) * 2 + 1) / (v * v + 1)).sum(axis=1), rtol=1e-5))
print(json.dumps({"origin": prog._exe.compiled.origin, "ok": ok,
                  "loaded": sorted(m for m in sys.modules if m.startswith("polyarray.codegen"))}))
"""


def test_a_disk_hit_imports_no_pass_of_the_plan_nor_the_policy(device_target, tmp_path):
    """A disk hit in a new process loads the program's kernels and runs them:
    the plan's passes, the policy and the thresholds (whose dataclass alone
    took 6 ms of a 9 ms hit on the H200's host) are left unimported, and the
    key is the one the cold process wrote (no cache miss)."""
    import json
    import subprocess
    import sys
    from helpers import subprocess_env
    env = subprocess_env(POLYARRAY_CACHE_DIR=str(tmp_path))
    env.pop("POLYARRAY_OUTLINE_MIN", None)
    runs = [json.loads(subprocess.run([sys.executable, "-c", _DISK_HIT, device_target],
                                      capture_output=True, text=True, env=env, timeout=300,
                                      check=True).stdout.strip().splitlines()[-1])
            for _ in range(2)]
    assert [r["origin"] for r in runs] == ["built", "disk"] and all(r["ok"] for r in runs)
    heavy = [m for m in runs[1]["loaded"] if m.startswith(
        ("polyarray.codegen.policy", "polyarray.codegen.plan.make",
         "polyarray.codegen.plan.materialize", "polyarray.codegen.lowering",
         "polyarray.codegen.kernels", "polyarray.codegen.thresholds"))]
    assert heavy == [], heavy
