"""Record the generated source of every program a run builds, in both C
dialects, to prove a refactoring leaves code generation byte-identical
.  A pytest plugin and a script:

    PYTHONPATH=tests/support python -m pytest -q -p source_hashes tests/
                                                # writes $POLYARRAY_SOURCE_HASHES
    python tests/support/source_hashes.py bench OUT         # the benchmark suite's DAGs
    python tests/support/source_hashes.py compare OLD NEW   # same set of sources?

Every call of ``lower_program`` (whatever its target) is followed by the
same DAG lowered for the other dialect, so each DAG contributes its OpenCL
and its CUDA source.  Hypothesis is derandomized through ``-p`` order:
pass ``--hypothesis-seed=0``.  The file holds one sha256 per line, with the test that first made it;
``POLYARRAY_SOURCE_DUMP=folder`` keeps each source as ``<sha256>.c``.
The helpers' digest comment is masked (it hashes codegen files' text).
"""
from __future__ import annotations

import hashlib
import os
import re
import sys

_HELPERS_DIGEST = re.compile(r"polyarray helpers [0-9a-f]{16}")


def _codegen():
    import polyarray
    if os.path.exists(os.path.join(os.path.dirname(polyarray.__file__), "nodes.py")):
        import codegen as cg        # a tree from before the IR moved (top-level codegen)
    else:
        import polyarray.codegen as cg
    return cg


def pytest_configure(config):
    path = os.environ.get("POLYARRAY_SOURCE_HASHES")
    if not path:
        return
    install(path)


def install(path):
    import loopy as lp
    cg = _codegen()
    original = cg.lower_program
    seen = set()
    dump = os.environ.get("POLYARRAY_SOURCE_DUMP")      # a folder: keep each source too
    if dump:
        os.makedirs(dump, exist_ok=True)

    def recording(outputs, target, *args, **kwargs):
        lowered = original(outputs, target, *args, **kwargs)
        other = lp.CudaTarget() if isinstance(target, lp.OpenCLTarget) else lp.OpenCLTarget()
        sources = [lowered.source]
        try:
            kw = dict(kwargs)
            kw.pop("max_work_group", None)
            sources.append(original(outputs, other, *args, **kw).source)
        except Exception as e:      # noqa: BLE001  (a schedule valid for one dialect only)
            sources.append(f"error {type(e).__name__}")
        where = os.environ.get("PYTEST_CURRENT_TEST", "-").split(" ")[0]
        with open(path, "a") as f:
            for s in sources:
                # the helpers' digest hashes cfuncs.py/runtime_checks.py's text (it keys
                # loopy's code cache), so it moves when those files are edited
                s = _HELPERS_DIGEST.sub("polyarray helpers <digest>", s)
                h = hashlib.sha256(s.encode()).hexdigest()
                if h not in seen:
                    seen.add(h)
                    f.write(f"{h} {where}\n")
                    if dump:
                        with open(os.path.join(dump, h + ".c"), "w") as out:
                            out.write(s)
        return lowered

    cg.lower_program = recording


def _read(path):
    """sha256 -> where it was first made (a test id, or '-')."""
    out = {}
    for line in open(path):
        h, _, where = line.strip().partition(" ")
        out.setdefault(h, where or "-")
    return out


def compare(old, new):
    a, b = _read(old), _read(new)
    print(f"{len(a)} sources before, {len(b)} after, {len(a.keys() & b.keys())} identical; "
          f"{len(a.keys() - b.keys())} only before, {len(b.keys() - a.keys())} only after")
    for tag, only in (("only before", a.keys() - b.keys()), ("only after", b.keys() - a.keys())):
        for h in sorted(only, key=lambda h: (a.get(h) or b.get(h)))[:40]:
            print(f"  {tag}: {h[:16]} from {a.get(h) or b.get(h)}")
    return a.keys() == b.keys()


if __name__ == "__main__":
    if sys.argv[1:2] == ["bench"]:      # every workload of the quick suite, on OpenCL
        install(sys.argv[2])
        from benchmarks.__main__ import main
        main(["--device", "opencl", "--quick"])
        sys.exit(0)
    if sys.argv[1:2] == ["compare"]:
        sys.exit(0 if compare(*sys.argv[2:4]) else 1)
    raise SystemExit(__doc__)
