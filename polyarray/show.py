"""``pa.show``: print a DAG (the printing itself is ``codegen.ir.printing``)."""
from __future__ import annotations

import sys

from .codegen.ir.printing import describe, format_dag


def show(outputs, file=None) -> None:
    """Print the DAG of ``outputs`` (an array, list or dict of arrays)."""
    print(format_dag(outputs), file=file or sys.stdout)


__all__ = ["describe", "format_dag", "show"]
