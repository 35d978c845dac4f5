"""Every public callable of polyarray says what it computes,
and polyarray/numpy_differences.md names only functions that exist.

The public callables: everything in ``dir(pa)`` that is callable, does not
start with ``_`` and is not a dtype class; ``pa.linalg.__all__`` and
``pa.random.__all__``; and the public methods and properties of ``pa.Array``,
``pa.Program``, ``pa.Jitted`` and ``pa.random.Generator``.  A new function without a docstring, or a ufunc without its
line in the summary tables of ``polyarray/api/elementwise.py`` (it
would keep the generic "Elementwise ``np.X``."), fails here."""
from __future__ import annotations

import inspect
import os
import re

import numpy as np
import pytest

import polyarray as pa

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "polyarray",
                   "numpy_differences.md")
GENERIC = re.compile(r"^Elementwise ``np\.\w+``")


def public_callables() -> dict:
    """Qualified name -> object (a property for properties)."""
    found = {}
    for name in dir(pa):
        obj = getattr(pa, name)
        if name.startswith("_") or not callable(obj):
            continue
        if isinstance(obj, type) and issubclass(obj, np.generic):     # dtype classes
            continue
        found[f"pa.{name}"] = obj
    for name in pa.linalg.__all__:
        found[f"pa.linalg.{name}"] = getattr(pa.linalg, name)
    for name in pa.random.__all__:
        found[f"pa.random.{name}"] = getattr(pa.random, name)
    for where, cls in (("pa", pa.Array), ("pa", pa.Program), ("pa", pa.Jitted),
                       ("pa.random", pa.random.Generator)):
        for name, obj in vars(cls).items():
            if not name.startswith("_") and (callable(obj) or isinstance(obj, property)):
                found[f"{where}.{cls.__name__}.{name}"] = obj
    return found


PUBLIC = public_callables()


def doc_of(obj) -> str:
    if isinstance(obj, property):
        obj = obj.fget
    return inspect.cleandoc(getattr(obj, "__doc__", None) or "")


def test_the_set_is_complete():
    # a sample from each source, so a change to the walk above is noticed
    for name in ("pa.exp", "pa.acos", "pa.hypot", "pa.sum", "pa.sort", "pa.jit",
                 "pa.compile", "pa.linalg.norm", "pa.Array.sum", "pa.Array.shape",
                 "pa.Array.device", "pa.Program.tune", "pa.Jitted.lower",
                 "pa.random.default_rng", "pa.random.Generator.integers"):
        assert name in PUBLIC
    assert "pa.float32" not in PUBLIC and "pa.bool" not in PUBLIC
    assert len(PUBLIC) > 250


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_public_callable_has_a_docstring(name):
    doc = doc_of(PUBLIC[name])
    assert len(doc) >= 20, f"{name} has no docstring (or a too short one): {doc!r}"
    first = doc.splitlines()[0]
    assert not GENERIC.match(first), (
        f"{name} keeps the generic first line {first!r}: add it to the ufunc summary "
        "table (_SUMMARY or _COMPOSED_SUMMARY in polyarray/api/elementwise.py)")


def _differences_names():
    text = open(DOC, encoding="utf-8").read()
    spans = re.findall(r"`([^`\n]+)`", text)
    names = set()
    for span in spans:
        names.update(re.findall(r"(?<![\w.])pa\.([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)", span))
    return sorted(names)


def test_differences_doc_names_exist():
    names = _differences_names()
    assert len(names) > 30          # the document is there and names functions
    missing = []
    for dotted in names:
        obj = pa
        for part in dotted.split("."):
            if not hasattr(obj, part):
                missing.append(f"pa.{dotted}")
                break
            obj = getattr(obj, part)
    assert not missing, f"polyarray/numpy_differences.md names what polyarray lacks: {missing}"
