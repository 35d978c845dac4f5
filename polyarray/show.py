"""``pa.show``: print a DAG (the printing itself is ``codegen.ir.printing``)."""
from __future__ import annotations

import sys

from .codegen.ir.printing import describe, format_dag


def show(outputs, file=None) -> None:
    """Print the DAG of ``outputs`` (an array, list or dict of arrays); of a
    compiled program, its DAG and then its kernels (form, the policy rule
    that chose it, launch sizes, schedule), in launch order."""
    kernels = getattr(outputs, "kernels", None)
    if kernels is not None and hasattr(outputs, "outputs"):
        text = format_dag(outputs.outputs) + "\n" + "\n".join(map(repr, kernels.values()))
    else:
        text = format_dag(outputs)
    print(text, file=file or sys.stdout)


__all__ = ["describe", "format_dag", "show"]
