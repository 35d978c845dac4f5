"""Two-level compile cache: in memory, and on disk under the user cache dir.

Entries are pickled with a SHA-256 checksum in front.  A truncated or
corrupted entry -- or one whose value its consumer's validator refuses (a
checksum only proves the bytes are the ones written, not that they hold what
the reader expects) -- is logged as a warning, deleted and rebuilt; it never
crashes a program.  Writes are atomic (temporary file + rename), so two
processes compiling the same program at once cannot corrupt each other.  A
cache directory that cannot be created or written to is warned about once
per process and directory; programs then compile without a disk cache.
"""
from __future__ import annotations

import hashlib
import logging
import os
import sys
import pickle
import tempfile
import time

log = logging.getLogger("polyarray.cache")
FORMAT = b"polyarray-cache-v2\n"      # v2: keys from Node.local_digest, KernelInfo.loopy


_WARNED_DIRS = set()


def _warn_dir_once(d, what, e):
    """One warning per directory and process (not one per compile)."""
    d = os.path.normpath(d)
    if d not in _WARNED_DIRS:
        _WARNED_DIRS.add(d)
        log.warning("polyarray cache: %s %s (%s); compiling without a disk cache there",
                    what, d, e)


def cache_dir():
    """The cache directory, created if needed; None when it cannot be (a
    path under or at a regular file, no permission, ...)."""
    d = os.environ.get("POLYARRAY_CACHE_DIR")
    if not d:
        try:
            import platformdirs
            d = platformdirs.user_cache_dir("polyarray")
        except ImportError:
            d = os.path.join(os.path.expanduser("~"), ".cache", "polyarray")
    try:
        os.makedirs(d, exist_ok=True)
    except OSError as e:
        _warn_dir_once(d, "cannot create cache directory", e)
        return None
    return d


def key_digest(*parts) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(repr(part).encode())
        h.update(b"\0")
    return h.hexdigest()


_INSTANCES = []


class DiskCache:
    """``valid(value) -> bool`` (optional) says whether a decoded value has
    the shape its consumer needs; a refused value (or a validator that
    raises) counts as a corrupted entry."""

    def __init__(self, kind: str, valid=None):
        self.kind = kind
        self.valid = valid if valid is not None else _DEFAULT_VALID.get(kind)
        self.memory = {}
        _INSTANCES.append(self)
        self.hits = self.misses = self.corrupt = 0

    def path(self, key):
        """The entry's file, or None when there is no usable cache directory."""
        d = cache_dir()
        return None if d is None else os.path.join(d, f"{self.kind}-{key[:40]}.pkl")

    def _accepts(self, value):
        if value is None or self.valid is None:
            return value is not None        # None: failed checksum or unpickling
        try:
            return bool(self.valid(value))
        except Exception:      # noqa: BLE001  (a validator tripping = malformed)
            return False

    def get(self, key):
        if key in self.memory:
            self.hits += 1
            return self.memory[key]
        path = self.path(key)
        if path is None:
            self.misses += 1
            return None
        try:
            with open(path, "rb") as f:
                blob = f.read()
        except FileNotFoundError:
            self.misses += 1
            return None
        except PermissionError as e:       # the whole directory, most likely
            _warn_dir_once(os.path.dirname(path), "cannot read from cache directory", e)
            self.misses += 1
            return None
        except OSError as e:
            log.warning("polyarray cache: cannot read %s (%s); rebuilding", path, e)
            self.misses += 1
            return None
        value = self._decode(blob, key)
        if not self._accepts(value):
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
        if path is None:
            return
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
            os.replace(tmp, path)
        except OSError as e:
            _warn_dir_once(os.path.dirname(path), "cannot write to cache directory", e)
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass


def _valid_tune(entry):
    """polyarray.tuning's entries: {"schedule": {kernel: text}, "report": {...}}."""
    from polyarray.codegen.schedule import parse_schedule
    sched, report = entry["schedule"], entry["report"]
    if not (isinstance(sched, dict) and isinstance(report, dict)
            and isinstance(report.get("kernels"), dict)
            and isinstance(report.get("complete", True), bool)      # a budget cut it short
            and isinstance(report.get("budget_s"), (int, float, type(None)))):
        return False
    for name, text in sched.items():
        if not (isinstance(name, str) and isinstance(text, str)):
            return False
        parse_schedule(text)       # raises on text that is not a schedule
    return all(isinstance(r, dict) and {"chosen", "default", "candidates"} <= r.keys()
               and all(isinstance(row, (list, tuple)) and len(row) == 3
                       and isinstance(row[2], str) and (row[1] is None or isinstance(row[1], float))
                       for row in r["candidates"])
               for r in report["kernels"].values())


# validators for consumers that construct their DiskCache without one
_DEFAULT_VALID = {"tune": _valid_tune}


def clear_memory_layers():
    """Forget every in-memory entry (the disk entries stay)."""
    for cache in _INSTANCES:
        cache.memory.clear()


_CODE_VERSION = None
_VERSIONS = DiskCache("code-version",
                      valid=lambda v: isinstance(v, tuple) and len(v) == 3
                      and isinstance(v[2], str) and len(v[2]) == 16)


def _stamp(st, is_dir=False) -> tuple:
    """What tells a file (or a folder's list of entries) changed: the ctime
    changes on any rewrite, even one that restores the mtime, and the inode
    on a replacement; a folder's mtime changes when an entry is added,
    removed or renamed."""
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_ino) + (() if is_dir else (st.st_size,))


def _py_files(folder):
    """``([(relative folder, stat), ...], [(relative path, stat), ...],
    links)``: ``folder``'s subfolders (itself first) and ``.py`` files, in a
    fixed order, and whether any entry is a symbolic link."""
    dirs, found, stack, links = [], [], [""], False
    while stack:
        rel = stack.pop()
        here = os.path.join(folder, rel)
        dirs.append((rel, os.stat(here)))
        with os.scandir(here) as it:
            entries = sorted(it, key=lambda e: e.name)
        links = links or any(e.is_symlink() for e in entries)
        for e in reversed(entries):
            if e.is_dir() and not e.name.startswith((".", "__pycache__")):
                stack.append(os.path.join(rel, e.name))
        found += [(os.path.join(rel, e.name), e.stat()) for e in entries
                  if e.name.endswith(".py") and e.is_file()]
    return sorted(dirs, key=lambda d: d[0]), sorted(found, key=lambda f: f[0]), links


# A stamp this close to now may not change again on the next change: a coarse
# clock (1 s on ext4 with small inodes and on older kernels, 2 s on FAT) gives
# two changes within one tick one stamp (git's "racily clean" entries).
_QUIET_NS = 3 * 10 ** 9
_now_ns = time.time_ns


def _settled(stats) -> bool:
    now = _now_ns()
    return all(now - max(st.st_mtime_ns, st.st_ctime_ns) > _QUIET_NS for st in stats)


def _unchanged(folders, entries, is_dir) -> bool:
    for k, rel, stamp in entries:
        try:
            if _stamp(os.stat(os.path.join(folders[k], rel)), is_dir) != stamp:
                return False
        except OSError:
            return False
    return True


def _folder_digest(*folders) -> str:
    """The digest of the ``.py`` files under ``folders``.  A new process
    reads it from the disk cache (keyed by the folders' paths and identities,
    so two installs, say Nix's with every mtime 1, have their own) and checks
    each folder's and file's stamp (``_stamp``) with one ``stat``, instead
    of listing the folders and reading and hashing the files (the larger
    part of a 1 ms disk hit)."""
    # the paths and the folders' identities: realpath costs a stat a level
    roots = [os.stat(folder) for folder in folders]
    key = key_digest("code-version", *[(f, r.st_dev, r.st_ino) for f, r in zip(folders, roots)])
    memo = _VERSIONS.get(key)
    if memo is not None and memo[0][:len(roots)] == tuple(
            (k, "", _stamp(r, True)) for k, r in enumerate(roots)) \
            and _unchanged(folders, memo[0][len(roots):], True) \
            and _unchanged(folders, memo[1], False):
        return memo[2]
    h, dirs, files, links = hashlib.sha256(), [], [], False
    for k, folder in enumerate(folders):
        d, f, link = _py_files(folder)
        dirs += [(k, rel, st) for rel, st in d]
        files += [(k, rel, st) for rel, st in f]
        links = links or link
        for rel, _ in f:
            with open(os.path.join(folder, rel), "rb") as fh:
                h.update(f"{k}:{rel}".encode() + b"\0" + fh.read())
    digest = h.hexdigest()[:16]
    # not kept (the next process hashes again) while a stamp is too recent to
    # trust, or where a link is (a dangling one's target appears unseen)
    if not links and _settled([st for _, _, st in dirs + files]):
        roots_first = sorted(dirs, key=lambda d: (d[1] != "", d[0], d[1]))
        _VERSIONS.put(key, (tuple((k, rel, _stamp(st, True)) for k, rel, st in roots_first),
                            tuple((k, rel, _stamp(st)) for k, rel, st in files), digest))
    return digest


def code_version() -> str:
    """Digest of the code generator's own source and of the IR it reads, so
    that any change to either invalidates cached programs."""
    global _CODE_VERSION
    if _CODE_VERSION is None:
        from polyarray import codegen, ir
        _CODE_VERSION = _folder_digest(*(os.path.dirname(m.__file__) for m in (codegen, ir)))
    # the thresholds in force, where they differ from the measured ones (a
    # sweep or a test in ``using_thresholds``, POLYARRAY_OUTLINE_MIN): they
    # make other code, so other keys (the thresholds module imports no loopy;
    # until it is imported, or the variable set, none can differ: a disk hit
    # skips the import, whose dataclass takes milliseconds to make)
    changed = {}
    if "POLYARRAY_OUTLINE_MIN" in os.environ or any(
            m.endswith("codegen.thresholds") for m in list(sys.modules)):
        from polyarray.codegen.thresholds import current_thresholds
        changed = current_thresholds().changes()
    # which vendor libraries codegen may call (a product in cuBLAS or a kernel)
    from polyarray.codegen.emit.dialect import CUDA
    libraries = f"-{CUDA.vendor_blas}" if CUDA.vendor_blas else ""
    return _CODE_VERSION + libraries + (
        f"-t{key_digest(sorted(changed.items()))[:16]}" if changed else "")
