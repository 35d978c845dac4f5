"""Library calls that device targets compute with kernels of their own:
the scans ``cumsum``/``cumprod`` (along the axis of param ``axis``, ``ops/scans.py``)
and ``sort``/``argsort`` (of one row, ``ops/ordering.py``).  Each call
becomes the kernels the policy chooses for it, before anything else sees
the DAG:

- ``Form.SCAN``: the single-pass scan kernel and the one that zeroes its
  tile states (``emit/scan_kernels.py``), as raw-kernel nodes: one read and one
  write of the values; ``Form.COLUMN_SCAN``: the column scan's three
  kernels (another axis than the last);
- ``Form.RADIX_SORT``: a radix sort (``emit/sort_kernels.py``: the digits'
  counts, then a onesweep kernel per pass), raw-kernel nodes too;
- ``Form.ROW_ARGMAX``: argmax/argmin (``Reduce`` nodes) along the last
  axis of a buffer, 1 to 1024 work-items per row (``emit/arg_kernels.py``), where
  the policy chooses it; else the reduction stays for the generated forms;
- ``Form.BLOCKED_SCAN`` / ``Form.MERGE_SORT``: the compositions every
  target can run (``ops.scans.blocked_scan``, ``ops.ordering.merge_sort``,
  which the frontend registers: ``ir.nodes.composition``), whose nodes
  fuse with their neighbours as any others do.

The numpy target never sees this: it runs NumPy's own ``cumsum`` and
``sort``.
"""
from __future__ import annotations

import numpy as np

from polyarray.ir import nodes as N

from ..policy import choose
from ..policy.classify import ArgRows, Call
from ..policy.rules import Form


def _kernels(node, x, form, thresholds):
    """The nodes of ``form``'s kernels for call ``node`` on ``x``."""
    if form == Form.SCAN:
        from ..emit.scan_kernels import scan_nodes
        return scan_nodes(node.op, x)
    if form == Form.COLUMN_SCAN:
        from ..emit.scan_kernels import column_scan_nodes
        return column_scan_nodes(node.op, x, node.param["axis"])
    if form == Form.RADIX_SORT:
        from ..emit.sort_kernels import sort_nodes
        return sort_nodes(x, node.op == "argsort", node.param["descending"],
                          x.size >= thresholds.RADIX_WIDE_STATES)
    return N.composition(node.op, node.params, x)       # the frontend's, for any target


def is_kernel_call(node) -> bool:
    return isinstance(node, N.LibraryCallOutput) and node.op in N.SCAN_OPS | N.SORT_OPS


# nodes whose values are a buffer whatever reads them (a kernel of their own or the
# caller's data): a raw kernel reads them where they are, at no extra pass
_BUFFERS = (N.Placeholder, N.DataWrapper, N.Einsum, N.RawKernelOutput, N.LibraryCallOutput)


def _arg_rows(node, device) -> bool:
    """argmax/argmin along the last axis of a buffer, as int64 indices."""
    return device.row_argmax and isinstance(node, N.Reduce) \
        and node.op in ("argmax", "argmin") and node.dtype == np.int64 \
        and isinstance(node.array, _BUFFERS) and node.array.ndim >= 2 \
        and node.array.shape[-1] > 0 and tuple(node.axes) == (node.array.ndim - 1,)


def lowered_kernel_calls(outputs, device, thresholds):
    """``(outputs, origin)``: ``outputs`` with every scan and sort call
    (and each argmax/argmin of rows the policy gives its own kernel)
    replaced by its kernels' nodes (the same list where there is none), and
    for each node made here the node of ``outputs``' DAG it computes (by
    id; a call's kernels: the call), for what a kernel says it computes.
    O(N), no recursion."""
    order = N.topological_order(outputs)
    if not any(is_kernel_call(n) or _arg_rows(n, device) for n in order):
        return list(outputs), {}
    new = {}

    def get(n):
        return new.get(id(n), n)
    with N.collector_paused():
        for node in order:
            if is_kernel_call(node):
                x = get(node.inputs[0])
                choice = choose(Call(node.op, x.dtype.str, tuple(x.shape),
                                     node.param.get("axis")), device, thresholds)
                new[id(node)] = _kernels(node, x, choice.form, thresholds)
                continue
            if _arg_rows(node, device):
                x = get(node.array)
                choice = choose(ArgRows(node.op, x.dtype.str, x.size // x.shape[-1],
                                        x.shape[-1]), device, thresholds)
                if choice.form == Form.ROW_ARGMAX:
                    from ..emit.arg_kernels import arg_rows_node
                    new[id(node)] = arg_rows_node(node.op, x, node.shape,
                                                  choice.params["threads"])
                    continue
            if any(id(c) in new for c in node.children()):
                new[id(node)] = N.remade(node, get)
    made = [get(o) for o in outputs]
    return made, origins(order, new, made)


def origins(order, new, made):
    """{id(node made): original node}: each replacement stands for its
    original, and a node below it that the DAG had not for the nearest
    replacement above it (reverse topological order: parents first)."""
    origin = {id(v): old for old in order if (v := new.get(id(old))) is not None}
    known = {id(n) for n in order}
    for node in reversed(N.topological_order(made)):
        mine = origin.get(id(node))
        if mine is None:
            continue
        for child in node.children():
            if id(child) not in known and id(child) not in origin:
                origin[id(child)] = mine
    return origin
