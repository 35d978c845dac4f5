"""Record the generated source of every program a run builds, in both C
dialects, to prove a refactoring leaves code generation byte-identical
(issue 14).  A pytest plugin and a script:

    python -m pytest -q -p source_hashes tests/      # writes $POLYARRAY_SOURCE_HASHES
    python tests/source_hashes.py compare OLD NEW     # same set of sources?

Every call of ``lower_program`` (whatever its target) is followed by the
same DAG lowered for the other dialect, so each DAG contributes its OpenCL
and its CUDA source.  Hypothesis is derandomized through ``-p`` order:
pass ``--hypothesis-seed=0``.  The file holds one sha256 per line.
"""
from __future__ import annotations

import hashlib
import os
import sys


def _codegen():
    try:
        import polyarray.codegen as cg
    except ImportError:
        import codegen as cg
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
        with open(path, "a") as f:
            for s in sources:
                h = hashlib.sha256(s.encode()).hexdigest()
                if h not in seen:
                    seen.add(h)
                    f.write(h + "\n")
        return lowered

    cg.lower_program = recording


def compare(old, new):
    a, b = (set(open(p).read().split()) for p in (old, new))
    print(f"{len(a)} sources before, {len(b)} after, {len(a & b)} identical; "
          f"{len(a - b)} only before, {len(b - a)} only after")
    return a == b


if __name__ == "__main__":
    if sys.argv[1:2] == ["compare"]:
        sys.exit(0 if compare(*sys.argv[2:4]) else 1)
    raise SystemExit(__doc__)
