"""CUDA source to cubin: NVRTC in this process where NVIDIA's bindings find
it, else an nvcc process; the cubins are cached on disk by us.

Why not pycuda's ``SourceModule``: an nvcc run costs about 0.45 s before its
first kernel (nvcc, cicc and ptxas start as processes), and pycuda's own
cache runs ``nvcc --version`` once per process, 81 ms of a disk hit on the
H100's host.  NVRTC is the same front end, NVVM and ptxas as a
library: a small kernel compiles in about 20 ms on that host (the first in
a process about 0.13 s).  The options mean the same to both (``-arch=sm_XY``
gives a cubin; fused multiply-add, precise division and square root are
both compilers' defaults).

NVRTC and nvJitLink are called through NVIDIA's bindings,
``cuda.bindings.nvrtc`` and ``cuda.bindings.nvjitlink`` (pip package
cuda-bindings), whose cuda-pathfinder finds the libraries of the pip wheels
(nvidia-cuda-nvrtc, nvidia-nvjitlink) or of the toolkit: no list of sonames
or paths of our own.  Without the bindings (or their library), the
toolkit's nvcc and nvlink run as processes; there is no other fallback.

The cache key is the source, the architecture, the options and the
compiler's identity: NVRTC's version, or nvcc's path, size and mtime (no
process to ask).  ``POLYARRAY_CUDA_COMPILER=nvcc`` (or ``nvrtc``) chooses one;
a source with an ``#include`` (a raw kernel's) goes to nvcc, which knows the
toolkit's header paths, and so does one holding the user's C (a raw or
custom kernel, written for nvcc's implicit ``cuda_runtime.h``: ``uint32_t``
without an include) where nvcc is installed.
"""
from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import tempfile

from ..cache import DiskCache, key_digest

log = logging.getLogger("polyarray.cuda")
_CUBINS = DiskCache("cubin", valid=lambda v: isinstance(v, bytes) and v[:4] == b"\x7fELF")
USER_C = re.compile(r"/\* (raw kernel |polyarray custom kernel: )")
_LINKED = DiskCache("linked-cubin", valid=lambda v: isinstance(v, bytes) and v[:4] == b"\x7fELF")
# the pip packages of what the bindings load, named where one is missing
NVRTC_PACKAGES = "cuda-bindings nvidia-cuda-nvrtc"
NVJITLINK_PACKAGES = "cuda-bindings nvidia-nvjitlink"


class CudaCompileError(Exception):
    """The device compiler refused a source: ``said`` is its log."""

    def __init__(self, compiler, said, command=""):
        super().__init__(said)
        self.compiler, self.said, self.command = compiler, said, command


def _wheel_identity():
    """NVRTC's identity from the pip wheels' metadata, without importing the
    bindings (80 ms of a process's first disk hit, against 6 ms to read the
    metadata): cuda-pathfinder loads the nvidia-cuda-nvrtc wheel's library
    before a toolkit's, so its version is the library's.  None where either
    package is not installed (the bindings then say)."""
    from importlib import metadata, util
    try:
        metadata.version("cuda-bindings")
        version = metadata.version("nvidia-cuda-nvrtc")
        if util.find_spec("cuda.bindings.nvrtc") is None:     # (the package, not the library)
            return None
    except (metadata.PackageNotFoundError, ImportError, ValueError):
        return None
    major, minor = (version.split(".") + ["0"])[:2]
    return f"nvrtc {major}.{minor}"


class Nvrtc:
    """NVRTC through ``cuda.bindings.nvrtc``; the import, or the first call
    (which loads the library), raises where either is missing.  Where the
    wheels' metadata names the version, the bindings load at the first
    compile, not for a disk hit's key."""
    name = "nvrtc"

    def __init__(self):
        self._api = None
        self.identity = _wheel_identity()
        if self.identity is None:
            status, major, minor = self.api.nvrtcVersion()
            self._check(status, "nvrtcVersion")
            self.identity = f"nvrtc {major}.{minor}"

    @property
    def api(self):
        if self._api is None:
            import cuda.bindings.nvrtc as nvrtc
            self._api = nvrtc
        return self._api

    def compile(self, source, arch, options):
        """``(cubin bytes, what the compiler said)``."""
        api = self.api
        status, prog = api.nvrtcCreateProgram(source.encode(), b"polyarray.cu", 0, [], [])
        self._check(status, "nvrtcCreateProgram")
        try:
            opts = [f"-arch={arch}".encode(), *(o.encode() for o in options)]
            (status,) = api.nvrtcCompileProgram(prog, len(opts), opts)
            said = self._text(api.nvrtcGetProgramLogSize, api.nvrtcGetProgramLog, prog)
            if status != 0:
                raise CudaCompileError(self.name, said or self._message(status),
                                       " ".join(o.decode() for o in opts))
            size = self._check(*api.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
            cubin = bytearray(size)
            self._check(*api.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
            return bytes(cubin), said
        finally:
            api.nvrtcDestroyProgram(prog)

    def _text(self, get_size, get, prog):
        size = self._check(*get_size(prog), get_size.__name__)
        text = bytearray(size)
        self._check(*get(prog, text), get.__name__)
        return text.rstrip(b"\0").decode(errors="replace").strip()

    def _message(self, status):
        return self.api.nvrtcGetErrorString(status)[1].decode()

    def _check(self, status, *rest):
        """The value a call returned beside its status (``rest[:-1]``), or
        CudaCompileError naming the call (``rest[-1]``)."""
        if status != 0:
            raise CudaCompileError(self.name, f"{rest[-1]}: {self._message(status)}")
        return rest[0] if len(rest) == 2 else None


class _Tool:
    """A toolkit program run as a process on files in a temporary folder;
    its identity (for cache keys) is its path, size and mtime (no process
    to ask)."""
    name = ""

    def __init__(self, path):
        st = os.stat(path)
        self.path, self.identity = path, f"{self.name} {path} {st.st_size} {st.st_mtime_ns}"

    def _run(self, inputs, args):
        """``(the output file's bytes, what the program said)`` of ``path
        *args``, ``inputs`` (file name -> text or bytes) written first: an
        argument that names an input, or ``OUT``, stands for its path."""
        with tempfile.TemporaryDirectory(prefix=f"polyarray-{self.name}-") as d:
            for name, data in inputs.items():
                with open(os.path.join(d, name), "wb" if isinstance(data, bytes) else "w") as f:
                    f.write(data)
            out = os.path.join(d, "out.cubin")
            command = [self.path, *(out if a is OUT else os.path.join(d, a) if a in inputs
                                    else a for a in args)]
            r = subprocess.run(command, capture_output=True, text=True)
            said = "\n".join(s.strip() for s in (r.stderr, r.stdout) if s.strip())
            if r.returncode != 0:
                raise CudaCompileError(self.name, said or f"exit status {r.returncode}",
                                       " ".join(command))
            with open(out, "rb") as f:
                return f.read(), said


OUT = object()      # ``_Tool._run``: the output file's path


class Nvcc(_Tool):
    name = "nvcc"

    def compile(self, source, arch, options):
        return self._run({"kernel.cu": source},
                         ["-cubin", f"-arch={arch}", *options, "-o", OUT, "kernel.cu"])


class NvJitLink:
    """Relocatable cubins linked in this process, through
    ``cuda.bindings.nvjitlink``."""
    name = "nvJitLink"

    def __init__(self):
        import cuda.bindings.nvjitlink as nvjitlink
        self.api = nvjitlink
        major, minor = nvjitlink.version()
        self.identity = f"nvJitLink {major}.{minor}"

    def link(self, cubins, arch):
        api = self.api
        try:
            handle = api.create(1, [f"-arch={arch}"])
        except api.nvJitLinkError as e:
            raise CudaCompileError(self.name, f"nvJitLink create: {e}") from None
        try:
            for k, c in enumerate(cubins):
                api.add_data(handle, api.InputType.ANY, c, len(c), f"unit{k}.cubin")
            api.complete(handle)
            out = bytearray(api.get_linked_cubin_size(handle))
            api.get_linked_cubin(handle, out)
            return bytes(out)
        except api.nvJitLinkError as e:
            raise CudaCompileError(self.name, f"nvJitLink: {e}: {self._log(handle)}") from None
        finally:
            api.destroy(handle)

    def _log(self, handle):
        try:
            text = bytearray(self.api.get_error_log_size(handle))
            self.api.get_error_log(handle, text)
        except self.api.nvJitLinkError:
            return ""
        return text.rstrip(b"\0").decode(errors="replace").strip()


class Nvlink(_Tool):
    """Relocatable cubins linked by the toolkit's ``nvlink`` process."""
    name = "nvlink"

    def link(self, cubins, arch):
        units = {f"unit{k}.cubin": c for k, c in enumerate(cubins)}
        return self._run(units, [f"-arch={arch}", "-o", OUT, *units])[0]


_CHOSEN = {}
_MISSING = {}       # why a library is not used: "nvrtc" / "link" -> the reason


def _bound(cls, key, packages):
    """``cls()`` (a library through NVIDIA's bindings), or None with the
    reason, which names the pip packages to install, kept in ``_MISSING``."""
    try:
        return cls()
    except ImportError as e:
        _MISSING[key] = f"{e.name or 'cuda.bindings'} is not installed (pip install {packages})"
    except RuntimeError as e:       # cuda-pathfinder did not find the library
        said = str(e).splitlines()[0] if str(e) else type(e).__name__
        _MISSING[key] = f"{cls.name}'s library was not found: {said} (pip install {packages})"
    log.debug("polyarray: no %s in this process: %s", cls.name, _MISSING[key])
    return None


def _nvrtc():
    if "nvrtc" not in _CHOSEN:
        _CHOSEN["nvrtc"] = _bound(Nvrtc, "nvrtc", NVRTC_PACKAGES)
    return _CHOSEN["nvrtc"]


def _nvcc():
    if "nvcc" not in _CHOSEN:
        path = shutil.which("nvcc")
        _CHOSEN["nvcc"] = Nvcc(path) if path else None
    return _CHOSEN["nvcc"]


def linker():
    """nvJitLink where the bindings find it, else ``nvlink`` on PATH (or
    beside nvcc), else None: where there is none, nothing is split."""
    if "link" not in _CHOSEN:
        found = _bound(NvJitLink, "link", NVJITLINK_PACKAGES)
        if found is None:
            nvcc = shutil.which("nvcc")
            path = shutil.which("nvlink") or (
                nvcc and os.path.join(os.path.dirname(nvcc), "nvlink"))
            found = Nvlink(path) if path and os.path.exists(path) else None
        _CHOSEN["link"] = found
    return _CHOSEN["link"]


def linked(cubins, arch):
    """The executable cubin of relocatable ``cubins`` (``linker()``), from
    the cache or linked."""
    link = linker()
    import hashlib
    key = key_digest("linked", tuple(hashlib.sha256(c).hexdigest() for c in cubins), arch,
                     link.identity)
    binary = _LINKED.get(key)
    if binary is None:
        binary = link.link(cubins, arch)
        _LINKED.put(key, binary)
    return binary


def compiler_for(source):
    """The compiler for ``source``: the one asked for, else nvcc for a
    source holding the user's C (a raw or custom kernel), else NVRTC unless
    the source includes a header or NVRTC is not found."""
    asked = os.environ.get("POLYARRAY_CUDA_COMPILER", "").lower()
    if asked not in ("", "nvrtc", "nvcc"):
        raise ValueError(f"POLYARRAY_CUDA_COMPILER={asked!r}: use 'nvrtc' or 'nvcc'")
    found = None
    if not asked and USER_C.search(source):
        found = _nvcc()         # the user's C: compiled as PyCUDA compiled it
    if found is None and (asked == "nvrtc" or (not asked and "#include" not in source)):
        found = _nvrtc()
    if found is None and asked != "nvrtc":
        found = _nvcc()
    if found is None:
        _nvrtc()                # the reason NVRTC is missing, for the message
        raise CudaCompileError("nvrtc" if asked == "nvrtc" else "nvcc",
                               f"no CUDA compiler: NVRTC is not usable here "
                               f"({_MISSING.get('nvrtc', 'not tried')})"
                               + ("" if asked == "nvrtc" else " and nvcc is not on PATH"))
    return found


def cubin(source, arch, options=()):
    """The cubin of ``source`` for ``arch`` ("sm_90"), from the cache or
    compiled; what the compiler said is logged at DEBUG."""
    comp = compiler_for(source)
    key = key_digest("cubin", source, arch, tuple(options), comp.identity)
    binary = _CUBINS.get(key)
    if binary is None:
        binary, said = comp.compile(source, arch, tuple(options))
        if said:
            log.debug("%s: %s", comp.name, said)
        _CUBINS.put(key, binary)
    return binary
