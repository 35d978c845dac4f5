"""The plan: which nodes get buffers and which kernel computes each, decided
on the DAG before any kernel is built.

Before it, on a program's DAG: ``half`` (float16 computed as rounded
float32, stored as its bits; ``dtype_checks`` names nodes for it), and
the two rewrites ``pa.compile`` runs for device targets, ``reroll`` (sums
written as loops) and ``recurrence`` (rows built on rows before).  Then the passes from output nodes to a ``Plan`` (``data``), one
module each, run in order by ``make_plan``:

1. ``materialize``: which nodes get a buffer; which einsum operands are
   read in place as a transposed buffer (decided here, once);
2. ``group``: which kernel computes each materialized node;
3. ``fuse_rows``: row reductions join the elementwise kernel that reads them;
4. ``epilogue``: an elementwise kernel that only transforms a reduction's
   or a matrix product's result is computed in its store (given a device).

See docs/design/fusion.md."""
from __future__ import annotations

import importlib

# Names load with their module on first use: ``pa.compile`` runs ``reroll``
# and ``recurrence`` before the cache key, and a disk-cache hit needs no
# other pass of the plan (nor the policy they import).
_WHERE = {"make_plan": "make", "Group": "data", "Materialized": "data", "Plan": "data",
          "Unit": "data", "is_input": "data", "materialized_deps": "data",
          "inlined_shared_run": "materialize", "inlined_terms": "materialize",
          "transposed_buffer": "materialize"}


def __getattr__(name):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)


__all__ = ["Group", "Materialized", "Plan", "Unit", "inlined_shared_run", "inlined_terms",
           "is_input", "make_plan", "materialized_deps", "transposed_buffer"]
