"""DAG -> fused Loopy kernels: code generation's face (docs/DESIGN.md, "Pipeline").

``lower_program(outputs, target)`` (``pipeline.py``: its steps in pipeline
order, plan, buffer names, kernels, code, launch list) gives ``Lowered``
(``lowered.py``): plain data, plus each kernel's loopy objects for
inspection, so targets cache it on disk and launch it themselves.  This
module re-exports what the frontend and the targets use (placeholders'
device names ``c_name``, the new-kernel budget ``kernel_budget``) and holds
the compile caches' key (``program_key``).  The packages, in pipeline
order: ``plan/``, ``policy/``, ``forms/`` and ``kernels/`` (with
``lowering/``, ``schedule/``, ``emit/`` below them; ``.importlinter`` states
the order).
"""
from __future__ import annotations

from polyarray.ir import nodes as N
from .lowered import BufferSpec, KernelInfo, Lowered
from .pipeline import (LAUNCHES_PER_NEW_KERNEL, REPEATING_MAX_KERNELS, TooManyKernels, c_name,
                       data_nodes, index_dtype_for, kernel_budget, lower_program,
                       refuse_beyond_budget, repeating_budget)


def program_key(outputs) -> str:
    """The compile caches' key of the computation: each node's
    ``local_digest`` (its own structure, children and data values aside) in
    topological order, with its children's positions in that order, then the
    outputs' positions.  So equal DAGs get one key in any process, and a DAG
    that differs in structure or sharing (``a + a`` against ``a + b``) gets
    another; data values are left out (they are passed as kernel arguments),
    so re-running with new data reuses the kernels.  O(N)."""
    import hashlib
    order = N.topological_order(outputs)
    num = {id(n): k for k, n in enumerate(order)}
    h = hashlib.sha256(b"polyarray-program-v2")
    for n in order:
        h.update(f"{n.local_digest}{[num[id(c)] for c in n.children()]}\n".encode())
    h.update(repr([num[id(o)] for o in outputs]).encode())
    return h.hexdigest()


__all__ = ["BufferSpec", "KernelInfo", "LAUNCHES_PER_NEW_KERNEL", "Lowered", "REPEATING_MAX_KERNELS",
           "TooManyKernels", "c_name", "data_nodes", "index_dtype_for", "kernel_budget",
           "lower_program", "program_key", "refuse_beyond_budget", "repeating_budget"]
