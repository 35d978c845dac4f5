"""nvmath-python's bindings, one library at a time.

``import nvmath`` runs the package's ``__init__``, which loads every library
it binds (cuBLAS, cuFFT, cuRAND, cuSOLVER, cuSPARSE, cuTENSOR) and imports
its fft/linalg/sparse/tensor layers: 0.6-1.0 s in a new process on an H200's
host, most of the first call of a program with one product.  polyarray needs
only the raw bindings of the library it calls, which each load their own
library on first use.  So ``binding("cublas")`` imports
``nvmath.bindings.cublas`` with the two parent packages as bare namespace
modules (their ``__path__`` only) and removes them afterwards: a later
``import nvmath`` by the user runs the real ``__init__``, which finds the
binding already imported and uses that same module."""
from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types

_LOCK = threading.Lock()
_PARENTS = ("nvmath", "nvmath.bindings")


def binding(name: str):
    """``nvmath.bindings.<name>`` (ImportError where nvmath-python is not
    installed)."""
    full = f"nvmath.bindings.{name}"
    with _LOCK:
        if full in sys.modules:
            return sys.modules[full]
        if "nvmath" in sys.modules:         # the real package (or its import) is there
            return importlib.import_module(full)
        spec = importlib.util.find_spec("nvmath")
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("No module named 'nvmath' (pip install nvmath-python[cu13])")
        path = list(spec.submodule_search_locations)
        bare = {}
        for parent in _PARENTS:
            module = types.ModuleType(parent)
            module.__path__ = path
            module.__package__ = parent
            bare[parent] = module
            sys.modules[parent] = module
            path = [f"{p}/bindings" for p in path]
        try:
            return importlib.import_module(full)
        finally:
            for parent, module in bare.items():
                if sys.modules.get(parent) is module:
                    del sys.modules[parent]
