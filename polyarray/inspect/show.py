"""``pa.show``: print a DAG (the printing itself is ``polyarray.ir.printing``;
the Graphviz view is ``polyarray.inspect.dotgraph``)."""
from __future__ import annotations

import sys

from ..ir.printing import describe, format_dag
from ..testing.timing import format_seconds

FORMATS = ("text", "dot", "svg", "png")


def show(outputs, file=None, *, profile=None, format="text"):   # noqa: A002
    """Print the DAG of ``outputs`` (an array, list or dict of arrays); of a
    compiled program, its DAG and then its kernels (form, the policy rule
    that chose it, launch sizes, schedule), in launch order.

    ``profile``: a ``prog.profile(...)`` of that program; each node line
    then names the kernel that computes it and its time, and each kernel
    line its time and fraction of the hardware.  ``format="dot"``: Graphviz
    text with a cluster per kernel (``polyarray.inspect.dotgraph`` says how a plain
    expression is clustered); ``"svg"``/``"png"``: that graph rendered
    (Graphviz needed), written to ``file`` (a path or binary file), or
    returned as bytes without one."""
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(map(repr, FORMATS))}, "
                         f"got {format!r}")
    program = hasattr(outputs, "kernels") and hasattr(outputs, "outputs")
    roots = outputs.outputs if program else outputs
    if format != "text":
        from .dotgraph import node_roots, plan_kernels, render, to_dot, write_image
        kernels = ({k: tuple(info.nodes) for k, info in outputs.kernels.items()}
                   if program and outputs.kernels else None)
        if kernels is None and profile is not None and profile.unit == "node":
            kernels = {}         # the NumPy target runs nodes: no clusters
        notes = _notes(profile) if profile is not None else None
        text = to_dot(roots, kernels if kernels is not None else plan_kernels(
            node_roots(roots)), notes)
        if format == "dot":
            print(text, file=file or sys.stdout)
            return None
        data = render(text, format)
        if file is None:
            return data
        write_image(data, file)
        return None
    lines = format_dag(roots).split("\n")
    if profile is not None:
        _annotate_nodes(lines, profile)
    text = "\n".join(lines)
    if program:
        kernel_lines = [repr(k) for k in outputs.kernels.values()]
        if profile is not None:
            kernel_lines = _annotate_kernels(outputs.kernels, kernel_lines, profile)
        text += "\n" + "\n".join(kernel_lines)
    print(text, file=file or sys.stdout)
    return None


def _of_hw(row):
    if row.fraction is None:
        return ""
    return f", {row.fraction:.2f} of {'bandwidth' if row.bound == 'memory' else 'peak'}"


def _notes(profile):
    return {r.name: format_seconds(r.seconds) + _of_hw(r) for r in profile.rows}


def _annotate_nodes(lines, profile):
    """Each node line: ``[kernel time]`` of the kernels (nodes) computing it."""
    by_node = {}
    for r in profile.rows:
        for k in r.nodes:
            by_node.setdefault(k, []).append(f"{r.name} {format_seconds(r.seconds)}")
    for k, marks in by_node.items():
        if k < len(lines):
            lines[k] += "   [" + "; ".join(marks) + "]"


def _annotate_kernels(kernels, lines, profile):
    times = {r.name: r for r in profile.rows}
    out = []
    for name, line in zip(kernels, lines):
        r = times.get(name)
        out.append(line if r is None else f"{format_seconds(r.seconds):>10}{_of_hw(r)}  {line}")
    return out


__all__ = ["describe", "format_dag", "show"]
