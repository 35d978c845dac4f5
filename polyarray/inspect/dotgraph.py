"""``pa.show(x, format="dot")``: the DAG as Graphviz text, kernels as clusters.

Each node is a box labelled as ``pa.show`` lists it (``%k type = expression``),
with an edge from each operand.  Each kernel is a ``subgraph cluster_<name>``
holding the nodes it computes: its materialized nodes and the nodes inlined
into them.  A node inlined into several kernels (each recomputes it) stays
outside the clusters, dashed; inputs are ellipses, outputs doubly outlined.

* Of a compiled program: its kernels (``KernelInfo.nodes``); kernels that
  compute the same nodes (a split-K product and its combine, a packed
  matmul's packing) share one cluster, named after the first.
* Of a plain expression: nothing is compiled; the clusters are the fusion
  groups of the device-independent plan (``codegen.plan.make_plan``),
  named as the device targets name their kernels (``k<n>_<kind>``).  A
  target may still cut a group into stages, or store a product's
  elementwise reader through the product (an epilogue, decided per device).

``format="svg"`` or ``"png"`` renders the text with the ``graphviz`` package
(the ``graphviz`` extra) or, without it, Graphviz's ``dot`` program.
"""
from __future__ import annotations

import os
import shutil
import subprocess

from ..ir import nodes as N
from ..ir.printing import dag_listing


def node_roots(outputs):
    """The nodes of an array, a list/tuple or a dict of arrays (or nodes)."""
    if isinstance(outputs, dict):
        outputs = list(outputs.values())
    if not isinstance(outputs, (list, tuple)):
        outputs = [outputs]
    return [getattr(o, "node", o) for o in outputs]


def plan_kernels(roots) -> dict:
    """Kernel name -> positions of the nodes its group computes, from the
    device-independent plan (names as ``codegen.lower_program`` gives them)."""
    from ..codegen.plan import make_plan
    plan = make_plan(roots)
    position = {id(n): k for k, n in enumerate(plan.order)}
    kernels = {}
    for gi, g in enumerate(plan.groups):
        if g.size == 0:
            continue
        node = g.units[0].node
        kind = (g.kind if g.kind in ("elementwise", "rows") else
                node.op if isinstance(node, N.Reduce) else "einsum")
        kernels[f"k{gi}_{kind}"] = tuple(position[id(u.node)] for u in g.units)
    return kernels


def members(units, stops) -> list:
    """``units`` and the nodes inlined into them: their descendants down to
    (not including) ``stops`` (other units) and inputs."""
    seen, out, stack = set(), [], list(units)
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        out.append(n)
        stack.extend(c for c in n.children()
                     if id(c) not in stops and not isinstance(c, (N.Placeholder, N.DataWrapper)))
    return out


def _quote(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(outputs, kernels=None, notes=None) -> str:
    """Graphviz text of the DAG of ``outputs``; ``kernels``: name -> node
    positions (None: the plan's groups, ``plan_kernels``); ``notes``:
    kernel name -> a line added to its cluster's label (a profile's time)."""
    roots = node_roots(outputs)
    order = N.topological_order(roots)
    listing = dag_listing(roots)
    if kernels is None:
        kernels = plan_kernels(roots)
    notes = notes or {}
    clusters = {}                       # node positions -> kernel names
    for name, nodes in kernels.items():
        clusters.setdefault(tuple(nodes), []).append(name)
    units = {id(order[k]) for nodes in clusters for k in nodes}
    position = {id(n): k for k, n in enumerate(order)}
    computed_by = {}                    # position -> cluster keys
    for nodes in clusters:
        for n in members([order[k] for k in nodes], units - {id(order[k]) for k in nodes}):
            computed_by.setdefault(position[id(n)], []).append(nodes)
    lines = ["digraph polyarray {", "  rankdir=TB;",
             '  node [shape=box, fontname="monospace", fontsize=10];']

    def node_line(k, indent="  ", extra=""):
        name, typ, body, uses, out = listing[k]
        attrs = [f"label={_quote(f'{name} {typ}' + chr(10) + body)}"]
        if isinstance(order[k], (N.Placeholder, N.DataWrapper)):
            attrs.append("shape=ellipse")
        if out is not None:
            attrs.append("peripheries=2")
        return f"{indent}n{k} [{', '.join(attrs)}{extra}];"

    for key, names in clusters.items():
        label = "\n".join(n + (f": {notes[n]}" if n in notes else "") for n in names)
        lines.append(f"  subgraph cluster_{names[0]} {{")
        lines.append(f"    label={_quote(label)}; style=rounded; color=blue;")
        for k in sorted(p for p, keys in computed_by.items() if keys == [key]):
            lines.append(node_line(k, "    "))
        lines.append("  }")
    for k in range(len(order)):
        keys = computed_by.get(k, [])
        if len(keys) == 1:
            continue
        extra = ""
        if len(keys) > 1:
            by = ", ".join(clusters[c][0] for c in keys)
            extra = f", style=dashed, tooltip={_quote('recomputed in ' + by)}"
        lines.append(node_line(k, extra=extra))
    for k, n in enumerate(order):
        for c in dict.fromkeys(id(c) for c in n.children()):
            lines.append(f"  n{position[c]} -> n{k};")
    lines.append("}")
    return "\n".join(lines)


def render(text, fmt) -> bytes:
    """Graphviz text rendered as ``fmt`` ("svg", "png") bytes: with the
    ``graphviz`` package, else the ``dot`` program."""
    try:
        import graphviz
    except ImportError:
        graphviz = None
    if graphviz is not None:
        try:
            return graphviz.Source(text).pipe(format=fmt)
        except graphviz.ExecutableNotFound:
            pass
    dot = shutil.which("dot")
    if dot is None:
        raise ImportError(f"pa.show(format={fmt!r}) needs Graphviz: pip install "
                          "'polyarray[graphviz]' (the graphviz package) and Graphviz's dot "
                          "program (e.g. apt-get install graphviz); format='dot' gives the "
                          "text without either")
    return subprocess.run([dot, f"-T{fmt}"], input=text.encode(), capture_output=True,
                          check=True).stdout


def write_image(data, file):
    """``data`` to ``file``: a path, or a binary file object."""
    if isinstance(file, (str, os.PathLike)):
        with open(file, "wb") as f:
            f.write(data)
    else:
        file.write(data)
