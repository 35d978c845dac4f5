"""``pa.print_environment_info()`` and ``python -m polyarray``: what a bug
report needs (as ``jax.print_environment_info()``): versions, the targets
and why one cannot run, the OpenCL and CUDA devices, the default target and
the cache directory.  Every part is guarded: a broken driver is reported,
not raised."""
from __future__ import annotations

import os
import platform
import sys

# distributions whose versions matter, in the order printed
PACKAGES = ("numpy", "loopy", "pyopencl", "pymbolic", "islpy", "pycuda", "platformdirs",
            "tqdm", "dask", "distributed")
ENV_PREFIXES = ("POLYARRAY_", "PYOPENCL_", "POCL_", "CUDA_VISIBLE_DEVICES", "LOOPY_")


def _version(dist) -> str:
    from importlib import metadata
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _guarded(lines, fn):
    """``fn(lines)``, or a line saying why it failed."""
    try:
        fn(lines)
    except Exception as e:      # noqa: BLE001  (a broken driver is reported, not raised)
        lines.append(f"  (failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})")


def _targets(lines):
    from polyarray import targets
    from ..program import get_default_target
    lines.append("targets (best first):")
    for name in targets.REGISTRY:
        ok, reason = targets.availability(name)
        lines.append(f"  {name:<8}{'available' if ok else 'unavailable: ' + reason}")
    lines.append(f"default target: {get_default_target()}")


def _opencl(lines):
    if _version("pyopencl") == "not installed":
        lines.append("OpenCL: pyopencl is not installed")
        return
    import pyopencl as cl
    try:
        from polyarray.targets.opencl import select_device
        used = select_device()[1].int_ptr
    except Exception:          # noqa: BLE001  (said by the targets' lines)
        used = None
    lines.append("OpenCL platforms (* the device polyarray uses):")
    for plat in cl.get_platforms():
        lines.append(f"  {plat.name} ({plat.version})")
        try:
            devices = plat.get_devices()
        except cl.Error as e:
            lines.append(f"    no devices ({e})")
            continue
        for dev in devices:
            kind = ("GPU" if dev.type & cl.device_type.GPU else
                    "CPU" if dev.type & cl.device_type.CPU else cl.device_type.to_string(dev.type))
            lines.append(f"    {'*' if dev.int_ptr == used else ' '} {dev.name} ({kind}, "
                         f"{dev.max_compute_units} compute units, "
                         f"{dev.global_mem_size / 2**30:.1f} GiB, driver {dev.driver_version})")


def _cuda(lines):
    import shutil
    lines.append(f"nvcc: {shutil.which('nvcc') or 'not on PATH'}")
    if _version("pycuda") == "not installed":
        lines.append("CUDA devices: none listed (pycuda is not installed)")
        return
    import pycuda.driver as drv
    drv.init()
    n = drv.Device.count()
    lines.append(f"CUDA devices ({n}; driver {drv.get_driver_version()}, pycuda built for "
                 f"CUDA {'.'.join(map(str, drv.get_version()))}):")
    for k in range(n):
        dev = drv.Device(k)
        lines.append(f"  {k}: {dev.name()} sm_{''.join(map(str, dev.compute_capability()))}"
                     f", {dev.total_memory() / 2**30:.1f} GiB")


def _cache(lines):
    from polyarray.targets.cache import cache_dir
    d = cache_dir()
    lines.append(f"cache directory: {d or 'unusable (the polyarray.cache log says why)'}")


def environment_info() -> str:
    """The text ``print_environment_info`` prints."""
    here = os.path.dirname(os.path.abspath(__file__))
    version = getattr(sys.modules.get("polyarray"), "__version__", "?")
    lines = [f"{'polyarray:':<14}{version} ({here})",
             f"{'python:':<14}{sys.version.splitlines()[0]}",
             f"{'platform:':<14}{platform.platform()}"]
    lines += [f"{dist + ':':<14}{_version(dist)}" for dist in PACKAGES]
    for part in (_targets, _opencl, _cuda, _cache):
        _guarded(lines, part)
    env = sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith(ENV_PREFIXES))
    lines.append("environment: " + (", ".join(env) if env else "no POLYARRAY_* variables"))
    return "\n".join(lines)


def print_environment_info(file=None) -> None:
    """Print versions, targets (with why one is unavailable), devices, the
    default target and the cache directory: paste it into a bug report."""
    print(environment_info(), file=file or sys.stdout)
