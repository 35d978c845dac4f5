"""Mapper base for passes over the DAG, in pymbolic's style: one
``map_<node>`` method per node type, dispatched on ``node.mapper_method``.

``CachedMapper`` evaluates each node once (keyed by identity; nodes are
interned), and walks the DAG iteratively so deep chains never recurse.
"""
from __future__ import annotations

from . import nodes as N


class Mapper:
    def rec(self, node, *args, **kwargs):
        try:
            method = getattr(self, node.mapper_method)
        except AttributeError:
            raise NotImplementedError(
                f"{type(self).__name__} has no {node.mapper_method} for "
                f"{type(node).__name__}") from None
        return method(node, *args, **kwargs)

    __call__ = rec


class CachedMapper(Mapper):
    """Maps every node reachable from some outputs exactly once.

    ``map_*`` methods read the results of their children through
    ``self.result(child)``.
    """

    def __init__(self):
        self._results = {}
        self.nodes_mapped = 0

    def result(self, node):
        return self._results[id(node)]

    def map_all(self, outputs):
        for node in N.topological_order(outputs):
            if id(node) not in self._results:
                self._results[id(node)] = self.rec(node)
                self.nodes_mapped += 1
        return [self._results[id(o)] for o in outputs]
