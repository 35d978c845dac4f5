"""CUDA source to cubin: NVRTC in this process where its library is found,
else an nvcc process; the cubins are cached on disk by us.

Why not pycuda's ``SourceModule``: an nvcc run costs about 0.45 s before its
first kernel (nvcc, cicc and ptxas start as processes), and pycuda's own
cache runs ``nvcc --version`` once per process, 81 ms of a disk hit on the
H100's host.  NVRTC is the same front end, NVVM and ptxas as a
library: a small kernel compiles in about 20 ms on that host (the first in
a process about 0.13 s).  The options mean the same to both (``-arch=sm_XY``
gives a cubin; fused multiply-add, precise division and square root are
both compilers' defaults).

The cache key is the source, the architecture, the options and the
compiler's identity: NVRTC's version, or nvcc's path, size and mtime (no
process to ask).  ``POLYARRAY_CUDA_COMPILER=nvcc`` (or ``nvrtc``) chooses one;
a source with an ``#include`` (a raw kernel's) goes to nvcc, which knows the
toolkit's header paths, and so does one holding the user's C (a raw or
custom kernel, written for nvcc's implicit ``cuda_runtime.h``: ``uint32_t``
without an include) where nvcc is installed.
"""
from __future__ import annotations

import ctypes
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
_NVRTC_NAMES = ("libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2")
_JITLINK_NAMES = ("libnvJitLink.so", "libnvJitLink.so.13", "libnvJitLink.so.12")
_JITLINK_INPUT_ANY = 10         # nvJitLinkInputType: told from the data
_LINKED = DiskCache("linked-cubin", valid=lambda v: isinstance(v, bytes) and v[:4] == b"\x7fELF")


class CudaCompileError(Exception):
    """The device compiler refused a source: ``said`` is its log."""

    def __init__(self, compiler, said, command=""):
        super().__init__(said)
        self.compiler, self.said, self.command = compiler, said, command


class Nvrtc:
    name = "nvrtc"

    def __init__(self, lib):
        self.lib = lib
        major, minor = ctypes.c_int(), ctypes.c_int()
        lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
        self.identity = f"nvrtc {major.value}.{minor.value}"
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p

    def compile(self, source, arch, options):
        """``(cubin bytes, what the compiler said)``."""
        lib, prog = self.lib, ctypes.c_void_p()
        self._check(lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"polyarray.cu",
                                           0, None, None), "nvrtcCreateProgram")
        try:
            opts = [f"-arch={arch}".encode(), *(o.encode() for o in options)]
            status = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            text = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, text)
            said = text.value.decode(errors="replace").strip()
            if status != 0:
                raise CudaCompileError(self.name, said or lib.nvrtcGetErrorString(status).decode(),
                                       " ".join(o.decode() for o in opts))
            self._check(lib.nvrtcGetCUBINSize(prog, ctypes.byref(size)), "nvrtcGetCUBINSize")
            cubin = ctypes.create_string_buffer(size.value)
            self._check(lib.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
            return cubin.raw, said
        finally:
            lib.nvrtcDestroyProgram(ctypes.byref(prog))

    def _check(self, status, what):
        if status != 0:
            raise CudaCompileError(self.name, f"{what}: "
                                   f"{self.lib.nvrtcGetErrorString(status).decode()}")


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
    """Relocatable cubins linked in this process (CUDA 12's nvJitLink)."""
    name = "nvJitLink"

    def __init__(self, lib):
        self.lib = lib
        major, minor = ctypes.c_uint(), ctypes.c_uint()
        status = lib.nvJitLinkVersion(ctypes.byref(major), ctypes.byref(minor))
        self.identity = f"nvJitLink {major.value}.{minor.value}" if status == 0 else "nvJitLink"

    def link(self, cubins, arch):
        lib, handle = self.lib, ctypes.c_void_p()
        opts = [f"-arch={arch}".encode()]
        self._check(lib.nvJitLinkCreate(ctypes.byref(handle), len(opts),
                                        (ctypes.c_char_p * len(opts))(*opts)), handle, "create")
        try:
            for k, c in enumerate(cubins):
                self._check(lib.nvJitLinkAddData(handle, _JITLINK_INPUT_ANY, c, ctypes.c_size_t(len(c)),
                                                 f"unit{k}.cubin".encode()), handle, "add")
            self._check(lib.nvJitLinkComplete(handle), handle, "complete")
            size = ctypes.c_size_t()
            self._check(lib.nvJitLinkGetLinkedCubinSize(handle, ctypes.byref(size)), handle, "size")
            out = ctypes.create_string_buffer(size.value)
            self._check(lib.nvJitLinkGetLinkedCubin(handle, out), handle, "cubin")
            return out.raw
        finally:
            lib.nvJitLinkDestroy(ctypes.byref(handle))

    def _check(self, status, handle, what):
        if status != 0:
            size = ctypes.c_size_t()
            text = b""
            if handle and self.lib.nvJitLinkGetErrorLogSize(handle, ctypes.byref(size)) == 0:
                buf = ctypes.create_string_buffer(size.value)
                self.lib.nvJitLinkGetErrorLog(handle, buf)
                text = buf.value
            raise CudaCompileError(self.name, f"nvJitLink {what}: status {status}: "
                                   f"{text.decode(errors='replace').strip()}")


class Nvlink(_Tool):
    """Relocatable cubins linked by the toolkit's ``nvlink`` process."""
    name = "nvlink"

    def link(self, cubins, arch):
        units = {f"unit{k}.cubin": c for k, c in enumerate(cubins)}
        return self._run(units, [f"-arch={arch}", "-o", OUT, *units])[0]


_CHOSEN = {}


def _library(names, home_name, wrap):
    """``wrap(ctypes.CDLL(name))`` of the first of ``names`` (then
    ``$CUDA_HOME/lib64/<home_name>``) that loads and has the functions
    ``wrap`` calls, or None."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    for name in (*names, os.path.join(home, "lib64", home_name)):
        try:
            return wrap(ctypes.CDLL(name))
        except (OSError, AttributeError):
            continue
    return None


def _nvrtc():
    if "nvrtc" not in _CHOSEN:
        _CHOSEN["nvrtc"] = _library(_NVRTC_NAMES, "libnvrtc.so", Nvrtc)
    return _CHOSEN["nvrtc"]


def _nvcc():
    if "nvcc" not in _CHOSEN:
        path = shutil.which("nvcc")
        _CHOSEN["nvcc"] = Nvcc(path) if path else None
    return _CHOSEN["nvcc"]


def linker():
    """nvJitLink where its library is found, else ``nvlink`` on PATH (or
    beside nvcc), else None: where there is none, nothing is split."""
    if "link" not in _CHOSEN:
        found = _library(_JITLINK_NAMES, "libnvJitLink.so", NvJitLink)
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
    the source includes a header or no NVRTC library is found."""
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
        raise CudaCompileError("nvrtc" if asked == "nvrtc" else "nvcc",
                               "no CUDA compiler: NVRTC's library (libnvrtc.so) was not found"
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
