"""What a pickled (or deep-copied) DAG carries besides its nodes.

The nodes cross as a flat table, interned again where they are loaded
(``polyarray.ir.nodes.dag_table``).  Two things of this process go with
them: the shared variables the DAG reads (pickled with their values; a
loaded one whose name a live variable has takes another name, and the
DAG's placeholders follow it), and the C functions of the custom kernels
it calls (``pa.elementwise_kernel``...), whose table is per process.
``Array`` and ``Program`` pickle through ``dag_state``/``restore_dag``.
"""
from __future__ import annotations

import copy

from .codegen import user_functions as U
from .ir import nodes as N
from .ops import creation as C


def dag_state(nodes) -> tuple:
    """``(table, shared variables, custom functions)`` for ``nodes``:
    ``((placeholder name, variable), ...)`` and ``((UserFunction,
    reference), ...)``."""
    order = N.topological_order(nodes)
    names = set()
    for node in order:
        if isinstance(node, N.IndexLambda):
            names.update(U.user_calls(node.expr))
        elif isinstance(node, N.Reduce) and U.is_user_reduce(node.op):
            names.add(node.op)
    for name in list(names):            # a custom reduction's identity function
        partner = U.lookup(name).partner
        if partner:
            names.add(partner)
    functions = tuple((U.lookup(n), U.reference_of(n)) for n in sorted(names))
    return N.dag_table(nodes, order), shared_variables(order), functions


def shared_variables(order) -> tuple:
    """``((placeholder name, live shared variable), ...)`` read by the nodes
    of ``order``."""
    found = []
    for node in order:
        var = C.shared_of(node)
        if var is not None:
            found.append((node.name, var))
    return tuple(found)


def deep_copy(node, memo):
    """``node`` over deep copies of the shared variables it reads (itself
    where it reads none): ``copy.deepcopy`` of an expression copies the
    variables, as of any object it refers to; ``memo`` keeps one copy of
    each."""
    order = N.topological_order([node])
    variables = shared_variables(order)
    if not variables:
        return node
    rename = {name: copy.deepcopy(var, memo).name for name, var in variables}
    return N.rebuild_dag(N.dag_table([node], order), rename)[0]


def restore_dag(state) -> list:
    """The nodes of a ``dag_state``, reading the variables it carries."""
    table, variables, functions = state
    for fn, reference in functions:
        U.restore(fn, reference)
    rename = {name: var.name for name, var in variables if var.name != name}
    return N.rebuild_dag(table, rename)
