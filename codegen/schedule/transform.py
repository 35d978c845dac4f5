"""Raw loopy: any ``loopy kernel -> kernel`` function as a step, for what
the other steps cannot say.  Its errors still name the kernel; it has no
text form, so programs using it skip the disk cache."""
from __future__ import annotations

from dataclasses import dataclass

from .base import ScheduleError, Step


@dataclass(frozen=True)
class Transform(Step):
    """Any ``loopy kernel -> kernel`` function (``prog.transform``).  Not
    replayable from text, and programs using it skip the disk cache."""
    fn: object

    def __repr__(self):
        return f"Transform({getattr(self.fn, '__qualname__', repr(self.fn))})"

    def apply(self, knl, ctx):
        try:
            out = self.fn(knl)
        except ScheduleError:
            raise
        except Exception as e:      # noqa: BLE001  (user code: report, naming the kernel)
            raise ScheduleError(f"{self!r} failed on kernel {ctx.name}: "
                                f"{type(e).__name__}: {e}") from e
        if out is None or not hasattr(out, "default_entrypoint"):
            self.fail(ctx, f"the function returned {type(out).__name__}, not a loopy kernel")
        return out
