"""The schedules the tuner times for each kernel form, next to the policy
table that picks the default (``rules.py``): the candidates are read from
the facts a kernel's builder recorded (``KernelInfo.facts``)."""
from __future__ import annotations

from ..thresholds import current_thresholds
from .rules import Form


def tuning_candidates(form, facts, thresholds=None):
    """Candidate schedules the tuner times for a kernel of ``form``, from the
    facts its builder recorded (``KernelInfo.facts``): an elementwise
    kernel's ``size`` and ``shape``; a tiled matmul's ``M``, ``N``, ``K``,
    ``batch`` (products; 0: no batch axes), ``split`` and ``chunk`` (split-K:
    the chunks of K and their length), ``itemsize`` and operands ``A``,
    ``B`` (its argument names: ``x @ x.T`` reads ``x`` and its alias); a
    cuBLAS product's ``generated`` (the tiled matmul's facts, timed against
    the call); ``thresholds``: default ``current_thresholds()``."""
    from ..schedule import (ElementsPerItem, GroupReduce, Layout, Prefetch, RegisterTile,
                           Split, StoreThroughLocal, Tag, Tile, Unroll, WorkGroup)
    out = []
    if form == Form.ELEMENTWISE:
        size, shape = facts.get("size", 1), facts.get("shape", ())
        out += [(WorkGroup(wg),) for wg in (64, 128, 256, 512) if wg <= max(size, 1)]
        out += [(ElementsPerItem(n, 256),) for n in (2, 4, 8) if size >= 256 * n * 4]
        if len(shape) == 2 and shape[-1] <= 64:
            # a work-item per row (a loop over the row), storing directly or
            # through a local-memory tile (coalesced)
            row = (Layout("axes"), WorkGroup(256, "i0"), Unroll("i1"))
            out += [row, row + (StoreThroughLocal(),)]
    elif form == Form.GROUP:
        out = [(GroupReduce("j", s),) for s in (32, 64, 128, 256, 512)]
    elif form == Form.THREAD:
        out = [(WorkGroup(s),) for s in (32, 64, 128, 256, 512)]
    elif form == Form.TILED_MATMUL:
        # any size: the loops are padded to each candidate's tiles (forms/matmul.py),
        # but a split-K chunk is the policy's: the tile depth must divide it
        A, B, edge = facts["A"], facts["B"], max(facts["M"], facts["N"])
        split, chunk = facts.get("split", 1), facts.get("chunk", facts["K"])
        # batches and split-K chunks run on grid axis 2, as in the default schedule
        first = (Tag("b", "g.2"),) if facts.get("batch") or split > 1 else ()
        t = current_thresholds() if thresholds is None else thresholds
        vector = t.MATMUL_VECTOR if facts.get("itemsize", 4) <= 4 else t.MATMUL_VECTOR_8

        def depth_fits(depth):
            return split == 1 or chunk % depth == 0
        out += [first + (Tile("i", "j", t, t), Split("k", t),
                         Prefetch(A, ("i_inner", "k_inner")), Prefetch(B, ("k_inner", "j_inner")))
                for t in (8, 16, 32) if t <= edge and depth_fits(t)]
        out += [first + (RegisterTile(A, B, bt, 16, kt, vector=min(v, vector), block_j=bj),)
                for bt, bj, kt, v in ((64, 0, 16, 1), (64, 0, 16, 4), (64, 0, 32, 4),
                                      (128, 64, 16, 4), (128, 0, 8, 4), (128, 0, 16, 4),
                                      (128, 0, 32, 4))
                if bt <= edge and depth_fits(kt)]
        out = list(dict.fromkeys(out))      # 8-byte types: two vector widths are one
    elif form == Form.CUBLAS and "generated" in facts:
        # the library call (its schedule: none, the default) against the tiled
        # matmul a schedule builds instead: that form's candidates
        out = tuning_candidates(Form.TILED_MATMUL, facts["generated"], thresholds)
    return out


__all__ = ["tuning_candidates"]
