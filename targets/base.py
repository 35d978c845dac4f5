"""The interface every target implements.

A ``Target`` turns output nodes into an ``Executable`` (``compile``), says
whether it can run here (``availability``), and tells which values it
accepts as bindings (``binding_info`` / ``prepare_binding``).  Binding
checks themselves are shared (``polyarray.program``), so every target gives
the same errors for the same mistakes.
"""
from __future__ import annotations


class BuildError(RuntimeError):
    """The device compiler refused a generated program; the message holds
    what the compiler said."""


class Executable:
    """A compiled program: ``run(bindings) -> list of outputs``."""

    source: str = ""
    kernels: dict = {}
    # optional ``fast_call(bindings) -> outputs or None``: a checked fast path
    # for the common call; None from it means "take the general path"
    fast_call = None
    # seconds of the work a device target leaves to its first call (CUDA
    # builds its module then); None until it ran (or where there is none)
    first_call_build = None

    def run(self, bindings):
        raise NotImplementedError

    def compile_stages(self) -> tuple:
        """``(origin, {stage: seconds})`` of making this executable: where
        its kernels came from ("built", "disk", "memory"; "none" without
        kernels) and the stages' times (``prog.compile_report()``)."""
        return "none", {}

    def synchronize(self):
        """Wait until all work this program queued on its device is done."""

    def can_read(self, value) -> bool:
        """Whether a call can take ``value`` (a device array another call
        returned) as it is; else it goes through the host.  Used for shared
        variables (``polyarray.shared``)."""
        import numpy as np
        return isinstance(value, np.ndarray)

    # prog.profile's hooks (targets/timing.py): each target times its own calls
    def profile_bindings(self, bindings) -> dict:
        """``bindings`` as profiled calls take them (a device target's host
        arrays copied to its device once)."""
        return dict(bindings)

    def wall_time(self, bindings) -> float:
        """Seconds of one call until its work is done."""
        from .timing import host_wall_time
        return host_wall_time(self, bindings)

    def kernel_times(self, bindings) -> list:
        """``[(kernel name or node position, seconds)]`` of one call."""
        raise NotImplementedError(f"{type(self).__name__} has no timing hook")

    def profile_queue(self):
        """The OpenCL queue of the program's device (to measure it), else None."""
        return None


class Target:
    name = "?"

    @classmethod
    def availability(cls):
        """``(available: bool, reason: str)`` without side effects."""
        raise NotImplementedError

    def import_binding(self, value):
        """``value`` as this target binds it (called first, for anything
        that is not a NumPy array).  Another library's CUDA array is refused
        here with an error that says what to do; the CUDA target reads it in
        place and the NumPy target copies it to the host."""
        from .foreign import is_foreign_cuda
        if is_foreign_cuda(value):
            raise TypeError(
                f"a {type(value).__module__.split('.')[0]} CUDA array cannot be bound on the "
                f"{self.name} target, which cannot read CUDA memory; compile for "
                "target='cuda' (which reads it in place) or pass a host copy")
        return value

    def binding_info(self, value):
        """``(shape, dtype)`` if ``value`` is an array this target accepts."""
        raise NotImplementedError

    def prepare_binding(self, value):
        return value

    def warm_up(self):
        """Start the device and driver now (otherwise the first call does)."""

    def compile(self, outputs, **options) -> Executable:
        raise NotImplementedError

    def memory_stats(self) -> dict:
        """Device memory held by this target's pool (empty: no pool)."""
        return {}


def pool_stats(pool) -> dict:
    """The counters pyopencl's and pycuda's memory pools both have."""
    stats = {"active_blocks": pool.active_blocks, "held_blocks": pool.held_blocks}
    for name in ("active_bytes", "managed_bytes"):
        if hasattr(pool, name):
            stats[name] = getattr(pool, name)
    return stats
