"""Run-time checks of calls whose results stay on the device.

A call with host results waits for its kernels anyway (the copy back), so
its check flags (``codegen.emit.runtime_checks``) are read at once.  A call with device
results (``out="device"``) returns while its kernels run; waiting for them
only to read the flags cost 15-20 us a call on the H100 (+31% on a 51 us
gather).  So such a call is *deferred*: its program is noted here, and the
flags are read at the next point where the host waits for that device
anyway:

- a call of any program of the same target with host results;
- ``get()`` of a device result, or its export to another library
  (``__cuda_array_interface__``): the result array is a thin subclass of the
  driver's array type (``checked_array_type``);
- ``synchronize()`` of a program.

No number reaches the host, or another library, before the checks of the
work that produced it were read -- as JAX raises an asynchronous error when
a result is read.  The error is NumPy's, with a note that names the deferral.
"""
from __future__ import annotations

NOTE = ("found when a result of an earlier out='device' call was read: "
        "device results are checked when read, not when the call returns")


class DeferredChecks:
    """The executables of one target whose last device-result calls have
    unread flags, in call order."""

    def __init__(self):
        self._pending = {}

    def defer(self, exe):
        self._pending.setdefault(id(exe), exe)

    def discard(self, exe):
        """``exe`` read its own flags (they cover its deferred calls too)."""
        self._pending.pop(id(exe), None)

    def __bool__(self):
        return bool(self._pending)

    def resolve(self):
        """Read every deferred program's flags (each waits for its own work
        where needed) and raise the first failed check, with ``NOTE`` appended.  The
        failed program's flags are zeroed first; other failed programs stay
        pending and raise at the next resolve."""
        while self._pending:
            exe = self._pending.pop(next(iter(self._pending)))
            try:
                exe.read_flags()
            except (IndexError, ValueError) as e:
                raise type(e)(f"{e} ({NOTE})") from None


def checked_array_type(base, deferred):
    """A subclass of the driver array type ``base`` whose host reads and
    exports first resolve ``deferred`` (cached per base type)."""
    cached = _TYPES.get((base, id(deferred)))
    if cached is not None:
        return cached

    def get(self, *args, **kwargs):
        host = base.get(self, *args, **kwargs)      # waits for the queued work
        if deferred:
            deferred.resolve()
        return host

    namespace = {"get": get, "__doc__": f"{base.__name__} whose ``get()`` and exports "
                 "raise a failed run-time check of the call that produced it "
                 "(polyarray: targets/deferred_checks.py).",
                 "__module__": __name__}
    if hasattr(base, "__cuda_array_interface__"):
        def cuda_array_interface(self):
            if deferred:
                deferred.resolve()      # each program waits for its own work
            return base.__cuda_array_interface__.__get__(self)
        namespace["__cuda_array_interface__"] = property(cuda_array_interface)
    cls = type("Checked" + base.__name__, (base,), namespace)
    _TYPES[(base, id(deferred))] = cls
    return cls


_TYPES = {}

__all__ = ["DeferredChecks", "NOTE", "checked_array_type"]
