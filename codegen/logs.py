"""Where compiling reports: the ``polyarray`` logger, never the terminal.

polyarray logs through ``logging.getLogger("polyarray")`` and its children
(``polyarray.codegen``, ``polyarray.compile``, ``polyarray.opencl``,
``polyarray.cuda``, ``polyarray.tune``, ``polyarray.cache``) and adds only a
NullHandler, so a successful compile prints nothing.  To see what happened:
``logging.basicConfig(); logging.getLogger("polyarray").setLevel("DEBUG")``
(INFO: compiles longer than a second, with their stages; DEBUG: every
compile's stages, what the device compilers and loopy said).  In a
terminal, with tqdm installed, a lowering past a second also draws a
progress bar over its kernels (``Progress``), gone when it ends.

Warnings raised by loopy, islpy or the device compilers while polyarray
compiles (``routed_warnings``) are meant for polyarray's developers, not its
users: they are recorded and logged.  Only our own compile calls are
covered; a warning of polyarray's own code is issued again as it was, and
warnings elsewhere keep the user's filters.
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import warnings

SLOW_COMPILE_S = 1.0        # a compile longer than this logs its stages at INFO

_UP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# our source folders: installed, codegen/ lies inside polyarray/ (a package,
# with its __init__.py); in a source tree, codegen/ and targets/ lie beside it
_OURS = ((_UP + os.sep,) if os.path.isfile(os.path.join(_UP, "__init__.py")) else
         tuple(os.path.join(_UP, d) + os.sep for d in ("polyarray", "codegen", "targets")))


def _ours(filename) -> bool:
    return os.path.abspath(filename or "").startswith(_OURS)


@contextlib.contextmanager
def routed_warnings(log, what, level=logging.DEBUG, everything=False):
    """Record the warnings raised inside the block and log them to ``log``
    at ``level`` (each distinct one once, with its count), prefixed with
    ``what`` ("lowering", "nvcc", ...).  A warning raised by polyarray's own
    code is issued again after the block, unless ``everything`` (a device
    build, where pycuda attributes nvcc's output to our calling line)."""
    caught, ours = [], []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
    finally:
        seen = {}
        for w in caught:
            if not everything and _ours(w.filename):
                ours.append(w)
            else:
                key = (w.category.__name__, str(w.message))
                seen[key] = seen.get(key, 0) + 1
        for (category, message), n in seen.items():
            log.log(level, "%s: %s%s: %s", what, category,
                    f" ({n} times)" if n > 1 else "", message)
    for w in ours:              # only after a block that did not raise
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)


def log_duration(log, what, seconds, stages=None):
    """One line: ``what`` took ``seconds`` (and its ``stages``), at INFO when
    longer than ``SLOW_COMPILE_S``, else at DEBUG."""
    level = logging.INFO if seconds > SLOW_COMPILE_S else logging.DEBUG
    if not log.isEnabledFor(level):
        return
    parts = ", ".join(f"{k} {v:.3f} s" for k, v in (stages or {}).items())
    log.log(level, "polyarray: %s in %.3f s%s", what, seconds, f" ({parts})" if parts else "")


class Progress:
    """A tqdm bar over a compile's ``total`` kernels, drawn only once the
    compile has taken ``SLOW_COMPILE_S`` (tqdm's ``delay``), where tqdm is
    installed (the ``progress`` extra) and stderr is a terminal; otherwise
    nothing (the log still says what took long)."""

    def __init__(self, total, desc):
        self.bar = None
        try:
            terminal = sys.stderr.isatty()
        except (AttributeError, ValueError):    # replaced or closed
            terminal = False
        if total < 2 or not terminal:
            return
        try:
            from tqdm.auto import tqdm
        except ImportError:
            return
        self.bar = _quiet_class(tqdm)(total=total, desc=desc, unit="kernel", leave=False,
                                      delay=SLOW_COMPILE_S)

    def step(self, what=""):
        if self.bar is not None:
            self.bar.set_postfix_str(what, refresh=False)
            self.bar.update(1)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def _quiet_class(tqdm):
    """``tqdm`` without its monitor thread: code generation forks only a
    process of one thread (``concurrent_codegen``)."""
    return type("CompileBar", (tqdm,), {"monitor_interval": 0})
