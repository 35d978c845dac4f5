"""Kernel forms: one builder module per family.  Each takes a group (or a
reduction's flattened view) and the policy's ``Choice``, emits the kernel's
instructions and domain, and hands them to ``Assembler.finish``
(``kernels/assemble.py``), which finds a form's builder here
(``form_module``, ``reduction_builder``).  Builders decide nothing (the
policy did) and call no other form; shared pieces live in ``parts`` and the
loopy reduction operations in ``reduction_ops``.

  elementwise     flat, elements per item, axes, transposed tile
  reduce          thread, group, neutral (argmax/argmin: one pass over pairs)
  two_stage       few outputs, long reductions: partials, then a combine
  split_columns   few outputs along the contiguous axes: column chunks
  lanes           CPU: lanes of accumulators along the contiguous axis
  matmul          tiled and register-tiled matrix products of any size,
                  batched, split-K, with an elementwise epilogue
  mma_matmul      CUDA float64 matrix products on the FP64 tensor cores (DMMA)
  cpu_matmul      CPU matrix products: packed operands, vector register blocks
  rows            fused row reductions with their elementwise readers
  recurrence      rows in order, each from the rows before (a rolled loop)
  raw             the user's hand-written kernel (pa.raw_kernel): its launch
                  and its source after the generated code
"""
from __future__ import annotations

from ..policy import Form

REDUCTIONS = {            # reduction form -> its builder: (module of forms/, function)
    Form.NEUTRAL: ("reduce", "neutral"),
    Form.THREAD: ("reduce", "single"),
    Form.GROUP: ("reduce", "single"),
    Form.TWO_STAGE: ("two_stage", "build"),
    Form.SPLIT_COLUMNS: ("split_columns", "build"),
    Form.LANES: ("lanes", "build"),
}


def form_module(module):
    """The builder module ``forms/<module>.py``, imported on first use: a
    program imports only the forms it builds (each form module costs a cold
    compile 0.1-0.8 ms to import, ``lanes`` the most).  The imports are
    written out, one per form, so that the import contracts see them."""
    if module == "elementwise":
        from . import elementwise as m
    elif module == "rows":
        from . import rows as m
    elif module == "recurrence":
        from . import recurrence as m
    elif module == "matmul":
        from . import matmul as m
    elif module == "mma_matmul":
        from . import mma_matmul as m
    elif module == "cpu_matmul":
        from . import cpu_matmul as m
    elif module == "reduce":
        from . import reduce as m
    elif module == "two_stage":
        from . import two_stage as m
    elif module == "split_columns":
        from . import split_columns as m
    elif module == "lanes":
        from . import lanes as m
    else:
        raise KeyError(f"no form module {module!r}")
    return m


def reduction_builder(form):
    """The function that builds a reduction of ``form`` (``REDUCTIONS``)."""
    module, function = REDUCTIONS[form]
    return getattr(form_module(module), function)


__all__ = ["REDUCTIONS", "form_module", "reduction_builder"]
