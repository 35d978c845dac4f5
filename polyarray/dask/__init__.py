"""``pa.dask.evaluate``: a polyarray DAG over Dask arrays, chunk by chunk.

Dask schedules (threads, processes or a ``distributed`` cluster: one device
per worker); each task runs one compiled polyarray program on host NumPy
blocks.  ``docs/design/dask.md`` says how the DAG is cut.  Dask is
imported only when called, so polyarray imports without it.
"""
from __future__ import annotations

import numpy as np

from . import cluster       # worker settings (imports nothing of Dask's)

__all__ = ["evaluate", "stats", "cluster"]


def stats() -> dict:
    """This process's counters of chunk tasks: programs compiled, tasks run,
    seconds in them, bytes of blocks in and results out.  On a cluster:
    ``client.run(pa.dask.stats)`` gives each worker's."""
    from .tasks import STATS
    return dict(STATS)


class _HostChecks:
    """What ``Program.check_bindings`` reads of a target, for arrays that
    stay where they are (dask arrays are checked by shape and dtype; nothing
    is computed or copied)."""

    def import_binding(self, value):
        return value

    def binding_info(self, value):
        if isinstance(value, (np.ndarray, np.generic)) or _is_dask(value):
            return tuple(value.shape), value.dtype
        return None

    def prepare_binding(self, value):
        return value


def _is_dask(value) -> bool:
    import sys
    da = sys.modules.get("dask.array")
    return da is not None and isinstance(value, da.Array)


class _Checker:
    """Placeholders of the outputs, checked by the one binding check."""
    target_name = "dask"

    def __init__(self, placeholders):
        self.placeholders = placeholders
        self._sorted_placeholders = sorted(placeholders.items())
        self._target = _HostChecks()

    from ..program import Program as _Program
    check_bindings = _Program.check_bindings


def _import_dask():
    try:
        import dask.array as da
    except ImportError as e:
        raise ImportError("pa.dask needs dask: pip install 'polyarray[dask]' (dask[array], "
                          "distributed)") from e
    return da


def evaluate(outputs, /, target=None, split_every=None, **bindings):
    """The outputs (an array, a list/tuple or a dict of arrays) as dask
    arrays, in the same structure, computed block by block.

    Placeholders are bound to dask arrays (their chunks are the chunks) or
    NumPy arrays (wrapped with dask's automatic chunks).  Bindings are
    checked here, before anything is submitted, as ``Program.__call__``
    checks them.  Each task runs one polyarray program on ``target``
    (default: the default target of the process that runs it): a fused
    elementwise region, or one with the per-block partial of a reduction
    or contraction; ``split_every`` is the fan-in of the tree reductions.
    Operations whose blocks need other blocks' data at computed positions
    (gathers, sort, positions as values) raise NotImplementedError."""
    da = _import_dask()
    from ..ir import nodes as N
    from ..program import _flatten
    if target is not None:
        from polyarray import targets
        targets.target_class(target)            # unknown names are refused now
    kind, keys, nodes = _flatten(outputs)
    placeholders = N.placeholders(nodes)
    prepared = _Checker(placeholders).check_bindings(bindings)
    arrays = {}
    for name, ph in placeholders.items():
        value = prepared[name]
        if not isinstance(value, da.Array):
            value = da.from_array(np.asarray(value))
        else:       # each chunk checked where it is made (fused into the task reading it)
            from .tasks import checked_chunk
            value = value.map_blocks(checked_chunk, placeholder=name, dtype=value.dtype,
                                     meta=np.empty((0,) * value.ndim, value.dtype))
        arrays[ph] = value
    from .graph import Translator
    translate = Translator(nodes, arrays, target=target, split_every=split_every)
    results = [translate.materialize(translate.eff(n)) for n in nodes]
    if kind == "single":
        return results[0]
    if kind == "dict":
        return dict(zip(keys, results))
    return tuple(results) if kind == "tuple" else list(results)
