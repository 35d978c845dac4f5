"""Target registry.  Targets are imported lazily, so that a CPU-only install
never imports pycuda (or pyopencl) until it is asked for."""
from __future__ import annotations

import importlib

from .base import BuildError  # noqa: F401  (the device compiler refused a program)

# name -> "module:Class"; the order is the preference for the default target
REGISTRY = {
    "cuda": "polyarray.targets.cuda:CudaTarget",
    "opencl": "polyarray.targets.opencl:OpenCLTarget",
    "numpy": "polyarray.targets.numpy:NumpyTarget",
}
_INSTANCES = {}


class TargetUnavailableError(RuntimeError):
    """The target exists but cannot run on this machine."""


def target_class(name):
    if name not in REGISTRY:
        raise ValueError(f"unknown target {name!r}; known targets: "
                         + ", ".join(sorted(REGISTRY)))
    module, cls = REGISTRY[name].split(":")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name == module:
            return None        # not implemented in this version
        raise
    return getattr(mod, cls)


def availability(name):
    cls = target_class(name)
    if cls is None:
        return False, f"the {name} target is not implemented in this version"
    return cls.availability()


def get_target(name):
    """The target instance.  A target that can generate code without its
    device (CUDA) is returned even where the device is missing; running a
    program there raises TargetUnavailableError."""
    if name in _INSTANCES:
        return _INSTANCES[name]
    ok, reason = availability(name)
    cls = target_class(name)
    if not ok and not (cls is not None and getattr(cls, "codegen_without_device", False)
                       and not reason.startswith("loopy")):
        raise TargetUnavailableError(f"target {name!r} is unavailable: {reason}")
    _INSTANCES[name] = cls()
    return _INSTANCES[name]


def available_targets():
    return [n for n in REGISTRY if availability(n)[0]]


def best_available():
    return available_targets()[0]
