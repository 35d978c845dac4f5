"""What lowering hands a target: plain data (``Lowered``: one device source,
the kernels in launch order, the buffers), so that a target caches it on
disk and launches it itself.  Each ``KernelInfo`` also holds its loopy
objects for inspection (``loop_nest()``, tuning), which the disk cache
drops."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np


class BufferSpec(NamedTuple):
    size: int              # elements
    storage: np.dtype      # dtype in device memory (bool is uint8)
    shape: tuple
    dtype: np.dtype        # logical dtype
    role: str              # input | data | temp | output


@dataclass
class KernelInfo:
    """One kernel: plain data (what launches, ``repr`` and ``prog.schedule``
    read; the disk cache keeps it) and its loopy objects (for ``loop_nest()``,
    tuning, raw transforms), which the disk cache does not keep."""
    name: str
    args: tuple            # buffer names, in the kernel's argument order
    gsize: tuple
    lsize: tuple
    form: str                      # a policy.Form's value: elementwise, thread, group, ...
    schedule: tuple = ()           # the schedule steps in force
    rule: str = ""                 # the policy rule that chose the form
    # what its builder knew, plain data: a matmul's M, N, K, batch, split, chunk,
    # operands A and B (argument names, as in its steps); an elementwise kernel's
    # size and shape (the tuner's candidates read them)
    facts: dict = field(default_factory=dict)
    # where the schedule came from: "policy" (the default), "user" or "tuned"
    # (the tuning cache's winner; polyarray.program sets it)
    origin: str = "policy"
    # the materialized nodes its group computes, as positions in the outputs'
    # topological order (``%k`` in pa.show); a group cut into several kernels
    # (split-K's combine, packing, two stages, rows apart) lists them on each
    nodes: tuple = ()
    # the function to launch, where it is not ``name``: a raw kernel's
    # (``codegen/forms/raw.py``: launches of one kernel share its function), or an
    # earlier kernel's that is the same code on other buffers (``kernels/reuse.py``)
    entry: str = ""
    # (loopy kernel, callables table); or a function that returns them (after
    # a disk-cache hit: the program is lowered again only when they are
    # asked for); None: stripped for the disk cache
    loopy: object = field(default=None, repr=False, compare=False)
    # the launch grid as loopy gives it in the kernel's integer arguments (a
    # length passed as an argument, ``reuse.lift_offsets``), else ()
    grid: tuple = ()

    @property
    def loopy_kernel(self):
        return self._loopy()[0]

    @property
    def callables(self):
        return self._loopy()[1]

    def _loopy(self):
        if callable(self.loopy):
            self.loopy = self.loopy()
        return self.loopy or (None, None)

    def loop_nest(self) -> str:
        """The loop nest with extents and hardware mapping, as text."""
        from .loopnest import loop_nest
        if self.form == "raw":
            return (f"raw kernel {self.entry}: the user's code, grid {self.gsize} x block "
                    f"{self.lsize}")
        if "language" in self.facts:        # polyarray's own hand-written kernel
            return (f"{self.form} kernel {self.entry}: hand-written (see prog.source), grid "
                    f"{self.gsize} x block {self.lsize}")
        if "op" in self.facts and not self.gsize:
            return (f"library call linalg.{self.facts['op']} ({self.form}): no loop nest of "
                    "ours")
        if self.loopy_kernel is None:
            raise ValueError("no loopy kernel here (stripped for the disk cache); "
                             "use prog.kernels, whose kernels lower again on demand")
        from .loopy_fixes.caches import without_loopy_caches
        return without_loopy_caches(loop_nest)(self.loopy_kernel, self.callables,
                                               self.gsize, self.lsize)

    def __repr__(self):
        from .schedule import format_schedule
        rule = f" [{self.rule}]" if self.rule else ""
        origin = "" if self.origin == "policy" else f" ({self.origin})"
        return (f"<kernel {self.name} ({self.form}{rule}) grid {self.gsize} x block "
                f"{self.lsize} schedule{origin} {format_schedule(self.schedule)}>")


@dataclass
class Lowered:
    source: str
    kernels: list                  # [KernelInfo] in launch order
    buffers: dict                  # name -> BufferSpec
    inputs: dict                   # placeholder name -> buffer name
    data: dict                     # buffer name -> index of the DataWrapper in order
    outputs: list                  # buffer name per output
    index_dtype: str = "int32"
    checks: tuple = ()             # run-time checks, by slot of the error buffer
    scalars: dict = field(default_factory=dict)    # name -> NumPy scalar: kernel
    #                                arguments passed by value (raw kernels' sizes)
    # seconds per stage of the lowering (plan, kernels, codegen), for the log;
    # None in a disk-cache entry
    stages: dict = field(default=None, repr=False, compare=False)
