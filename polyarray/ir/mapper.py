"""Mapper base for passes over the DAG, in pymbolic's style: one
``map_<node>`` method per node type, dispatched on ``node.mapper_method``.
"""
from __future__ import annotations


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

