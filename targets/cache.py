"""Two-level compile cache: in memory, and on disk under the user cache dir.

Entries are pickled with a SHA-256 checksum in front.  A truncated or
corrupted entry is detected, logged as a warning and rebuilt; it never
crashes a program.  Writes are atomic (temporary file + rename), so two
processes compiling the same program at once cannot corrupt each other.
"""
from __future__ import annotations

import hashlib
import logging
import os
import pickle
import tempfile

log = logging.getLogger("polyarray.cache")
FORMAT = b"polyarray-cache-v1\n"


def cache_dir() -> str:
    d = os.environ.get("POLYARRAY_CACHE_DIR")
    if not d:
        try:
            import platformdirs
            d = platformdirs.user_cache_dir("polyarray")
        except ImportError:
            d = os.path.join(os.path.expanduser("~"), ".cache", "polyarray")
    os.makedirs(d, exist_ok=True)
    return d


def key_digest(*parts) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(repr(part).encode())
        h.update(b"\0")
    return h.hexdigest()


_INSTANCES = []


class DiskCache:
    def __init__(self, kind: str):
        self.kind = kind
        self.memory = {}
        _INSTANCES.append(self)
        self.hits = self.misses = self.corrupt = 0

    def path(self, key):
        return os.path.join(cache_dir(), f"{self.kind}-{key[:40]}.pkl")

    def get(self, key):
        if key in self.memory:
            self.hits += 1
            return self.memory[key]
        path = self.path(key)
        try:
            with open(path, "rb") as f:
                blob = f.read()
        except FileNotFoundError:
            self.misses += 1
            return None
        except OSError as e:
            log.warning("polyarray cache: cannot read %s (%s); rebuilding", path, e)
            self.misses += 1
            return None
        value = self._decode(blob, key)
        if value is None:
            self.corrupt += 1
            log.warning("polyarray cache: corrupted entry %s; rebuilding it", path)
            try:
                os.unlink(path)
            except OSError:
                pass
            return None
        self.hits += 1
        self.memory[key] = value
        return value

    @staticmethod
    def _decode(blob, key):
        head = len(FORMAT)
        if len(blob) < head + 64 or blob[:head] != FORMAT:
            return None
        digest, payload = blob[head:head + 64], blob[head + 64:]
        if hashlib.sha256(payload).hexdigest().encode() != digest:
            return None
        try:
            stored_key, value = pickle.loads(payload)
        except Exception:      # noqa: BLE001  (any unpickling failure = corrupt)
            return None
        return value if stored_key == key else None

    def put(self, key, value):
        self.memory[key] = value
        payload = pickle.dumps((key, value), protocol=pickle.HIGHEST_PROTOCOL)
        blob = FORMAT + hashlib.sha256(payload).hexdigest().encode() + payload
        path = self.path(key)
        try:
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
            os.replace(tmp, path)
        except OSError as e:
            log.warning("polyarray cache: cannot write %s (%s)", path, e)


def clear_memory_layers():
    """Forget every in-memory entry (the disk entries stay)."""
    for cache in _INSTANCES:
        cache.memory.clear()


_CODE_VERSION = None


def code_version() -> str:
    """Digest of the code generator's own source, so that any change to
    codegen invalidates cached programs."""
    global _CODE_VERSION
    if _CODE_VERSION is None:
        import codegen
        h = hashlib.sha256()
        folder = os.path.dirname(codegen.__file__)
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py"):
                with open(os.path.join(folder, name), "rb") as f:
                    h.update(name.encode() + b"\0" + f.read())
        _CODE_VERSION = h.hexdigest()[:16]
    return _CODE_VERSION
