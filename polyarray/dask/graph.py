"""A polyarray DAG as dask arrays (the client side of ``pa.dask.evaluate``).

Each output, reduction and contraction becomes one ``da.blockwise`` call
whose task runs one polyarray program on its blocks (``tasks.run_block``):
the elementwise region feeding it is fused into that program.  Reductions
then combine their per-block partials with ``da.reduction``'s tree, and
contractions sum their per-block products, as ``dask.array.einsum`` does.
Reshapes and concatenations are dask's own (they move data between blocks).
"""
from __future__ import annotations

import hashlib
import math
import string
from functools import partial

import numpy as np

from ..array import Array
from ..ir import nodes as N
from ..program import compile as compile_program
from . import device_records, moments, tasks
from .regions import Leaf, align, is_fill

LETTERS = string.ascii_lowercase + string.ascii_uppercase
# a reduction whose partials (of one output block) fit in this combines them in
# one task, not dask's tree of 16 at a time: the partials are small, the tasks not
ONE_COMBINE_BYTES = 32 << 20


def _meta_module(arrays):
    """CuPy where a dask array's meta is a CuPy array, else NumPy."""
    for a in arrays:
        if type(getattr(a, "_meta", None)).__module__.split(".")[0] == "cupy":
            import cupy
            return cupy
    return np


def _entry_text(entry) -> str:
    kind, letters, shape, dtype, *fields = entry
    parts = [kind, letters, repr(tuple(shape)), np.dtype(dtype).str]
    for f in fields:
        parts.append(N.expression_text(f) if kind == "il" and f is fields[0] else repr(f))
    return "|".join(parts)


class Translator:
    """Outputs -> dask arrays; ``bindings``: placeholder node -> dask array."""

    def __init__(self, outputs, bindings, target=None, split_every=None, out="host"):
        import dask.array as da
        self.da, self.target, self.split_every = da, target, split_every
        self.out = "device" if out == "device" else "auto"
        self.meta = _meta_module(bindings.values())
        self.leaves = Leaf()
        self.leaves.arrays.update(bindings)
        self._eff, self._dask = {}, {}
        self._variable = {}         # node -> depends on a placeholder
        order = N.topological_order(outputs)
        for node in order:
            self._variable[node] = (isinstance(node, N.Placeholder)
                                    or any(self._variable[c] for c in node.children()))
        self._group(order)

    # -- the rewritten DAG: aligned IndexLambdas over leaves ---------------
    def eff(self, root):
        for node in N.topological_order([root]):
            if node not in self._eff:
                self._eff[node] = self._rewrite(node)
        return self._eff[root]

    def _rewrite(self, node):
        da = self.da
        if isinstance(node, N.Placeholder):
            if node.shared:
                raise NotImplementedError(
                    f"pa.dask.evaluate: shared variable {node.name!r}: chunked evaluation "
                    "takes placeholders only")
            return node
        if isinstance(node, N.IndexLambda) and not node.bindings and is_fill(node):
            return node                       # a constant fill is computed in the programs
        if not self._variable[node]:          # other constants: computed once, here
            if isinstance(node, N.DataWrapper) and isinstance(node.data, np.ndarray):
                value = node.data
            else:
                value = compile_program(Array(node), target="numpy")()
            return self.leaves.make(da.from_array(value), node.dtype)
        if isinstance(node, N.IndexLambda):
            return align(node, self._eff, self.materialize, self.leaves)
        if isinstance(node, N.Reduce):
            return self.leaves.make(self._reduce(node), node.dtype)
        if isinstance(node, N.Einsum):
            return self.leaves.make(self._einsum(node), node.dtype)
        if isinstance(node, N.Reshape):     # dask rechunks where blocks do not line up
            array = self.materialize(self._eff[node.array]).reshape(node.shape)
            return self.leaves.make(array, node.dtype)
        if isinstance(node, N.Concatenate):
            parts = [self.materialize(self._eff[c]) for c in node.arrays]
            return self.leaves.make(da.concatenate(parts, axis=node.axis), node.dtype)
        what = (f"{N.library_name(node.op)} (a library call)"
                if isinstance(node, N.LibraryCallOutput) else f"{type(node).__name__} nodes")
        raise NotImplementedError(
            f"pa.dask.evaluate: {what} cannot be cut into chunks; "
            "evaluate it on one device (pa.compile)")

    def materialize(self, node):
        """The dask array of a rewritten node (a leaf, or a blockwise call)."""
        if node in self.leaves.arrays:
            return self.leaves.arrays[node]
        if node not in self._dask:
            letters = LETTERS[:node.ndim]
            entries, inputs, index = self._entries([(node, letters)])
            stage = self._stage("map", entries, (index[(node, letters)],), letters)
            self._dask[node] = self._blockwise(stage, inputs, node.dtype)[0]
        return self._dask[node]

    # -- stages ------------------------------------------------------------
    def _entries(self, roots):
        """Entries (tasks.Stage) of the regions below ``roots`` ((node,
        letters) pairs), inputs ((dask array, letters) pairs), positions."""
        entries, inputs, index = [], [], {}
        for root in roots:
            stack = [(root, False)]
            while stack:
                key, ready = stack.pop()
                if key in index:
                    continue
                node, letters = key
                if isinstance(node, N.Placeholder):
                    index[key] = len(entries)
                    entries.append(("in", letters, node.shape, node.dtype, len(inputs)))
                    inputs.append((self.leaves.arrays[node], letters))
                    continue
                kids = [(c, letters[len(letters) - c.ndim:]) for _, c in node.bindings]
                if not ready:
                    stack.append((key, True))
                    stack.extend((k, False) for k in kids if k not in index)
                    continue
                index[key] = len(entries)
                entries.append(("il", letters, node.shape, node.dtype, node.expr, node.op,
                                tuple((name, index[k]) for (name, _), k
                                      in zip(node.bindings, kids))))
        covered = {l for a, ls in inputs for l, n in zip(ls, a.shape) if n != 1}
        for node, letters in roots:     # axes no input spans (broadcast_to): a sizer
            for letter, n in zip(letters, node.shape):
                if n != 1 and letter not in covered:
                    covered.add(letter)
                    entries.append(("in", letter, (n,), np.dtype(np.int8), len(inputs)))
                    inputs.append((self.da.zeros((n,), dtype=np.int8), letter))
        return entries, inputs, index

    def _stage(self, kind, entries, outputs, out_letters, extra="", fields=()):
        text = "\n".join([kind, repr(outputs), out_letters, extra, repr(self.target),
                          repr(tuple(fields)), self.out] + [_entry_text(e) for e in entries])
        key = hashlib.sha256(text.encode()).hexdigest()
        return tasks.Stage(key, kind, tuple(entries), tuple(outputs), out_letters,
                           self.target, extra, tuple(fields), self.out)

    def empty(self, ndim, dtype):
        """Dask's meta for a result: CuPy's where a binding has CuPy chunks."""
        module = np if np.dtype(dtype).names else self.meta
        return module.empty((0,) * ndim, dtype)

    def _blockwise(self, stage, inputs, dtype, adjust=None):
        """(dask array, letter -> chunks) of ``stage`` over its inputs."""
        from dask.array.core import unify_chunks
        from dask.base import tokenize
        da = self.da
        pairs = [x for a, letters in inputs for x in (a, letters)]
        chunkss, arrays = unify_chunks(*pairs) if pairs else ({}, [])
        args = [x for a, (_, letters) in zip(arrays, inputs) for x in (a, letters)]
        new_axes = {l: 1 for l in stage.out_letters if l not in chunkss}
        name = "polyarray-" + stage.kind + "-" + tokenize(
            stage.key, stage.out_letters, [a.name for a in arrays], adjust)
        out = da.blockwise(partial(tasks.run_block, stage), stage.out_letters, *args,
                           name=name, dtype=dtype, adjust_chunks=adjust, new_axes=new_axes,
                           align_arrays=False, concatenate=True,
                           meta=self.empty(len(stage.out_letters), dtype))
        return out, dict(chunkss, **{l: (1,) for l in new_axes})

    def _reduce(self, node):
        if node.op not in tasks.REDUCTIONS:
            raise NotImplementedError(
                f"pa.dask.evaluate: the reduction {node.op!r} has no combine for partial "
                f"results (chunked: {', '.join(tasks.REDUCTIONS)})")
        if not node.axes:
            array = self._eff[node.array]
            letters = LETTERS[:array.ndim]
            entries, inputs, index = self._entries([(array, letters)])
            entries.append(("reduce", letters, node.shape, node.dtype, node.op,
                            index[(array, letters)], ()))
            stage = self._stage("map", entries, (len(entries) - 1,), letters)
            return self._blockwise(stage, inputs, node.dtype)[0]
        if node not in self._reduced:
            key = self._group_key[node]
            self._reduced.update(self._reductions(key, self._groups[key]))
        return self._reduced[node]

    def _group(self, order):
        """Reductions over the same source and axes, made by one task per
        block (``mean`` and ``argmax`` of ``y`` read ``y``'s inputs once)."""
        self._groups, self._group_key, self._reduced = {}, {}, {}
        for node in order:
            if isinstance(node, N.Reduce) and node.axes and node.op in tasks.REDUCTIONS:
                x = moments.squared_deviations(node)
                op, source = ("moments", x) if x is not None else (node.op, node.array)
                key = (source, tuple(sorted(node.axes)))
                self._groups.setdefault(key, []).append((node, op))
                self._group_key[node] = key

    def _reductions(self, key, members):
        """{node: dask array} of ``members`` ((Reduce, op) pairs over one
        source and axes): one blockwise stage makes every member's partial
        (fields of one record per block), then each has its own tree."""
        source, axes = key
        array = self._eff[source]
        letters = LETTERS[:array.ndim]
        kept = "".join(l for d, l in enumerate(letters) if d not in axes)
        entries, inputs, index = self._entries([(array, letters)])
        child = index[(array, letters)]
        fields, picks = [], []          # (name, entry, part); each member's fields
        for k, (node, op) in enumerate(members):
            mine = []
            if op == "moments":
                entries.append(("moments", kept, node.shape, node.dtype, child, axes))
                mine += [(f"f{k}{p[0]}", len(entries) - 1, p) for p in ("count", "sum", "m2")]
            else:
                if op in ("argmax", "argmin"):      # the extreme beside its index
                    entries.append(("reduce", kept, node.shape, array.dtype, op[3:], child,
                                    axes))
                    mine.append((f"f{k}v", len(entries) - 1, "value"))
                entries.append(("reduce", kept, node.shape, node.dtype, op, child, axes))
                mine.append((f"f{k}", len(entries) - 1, "value"))
            fields += mine
            picks.append(mine)
        record = np.dtype([(name, np.int64 if part == "count" else entries[pos][3])
                           for name, pos, part in fields])
        stage = self._stage("reduce", entries, (), letters, fields=fields)
        partials, chunkss = self._blockwise(stage, inputs, record,
                                            adjust={letters[a]: 1 for a in axes})
        out = {}
        for (node, op), mine in zip(members, picks):
            out[node] = self._tree(node, op, partials, mine, array, axes,
                                   tuple(chunkss[l] for l in letters))
        return out

    def _tree(self, node, op, partials, fields, array, axes, chunks):
        """One member's partials picked from the records, then reduced."""
        names = tuple(name for name, _, _ in fields)
        if op == "moments":
            pdtype, rename = moments.record_dtype(node.dtype), ("n", "s", "m2")
        elif op in ("argmax", "argmin"):
            pdtype, rename = tasks.pair_dtype(array.dtype), ("v", "i")
        else:
            pdtype, rename = node.dtype, None
        mine = partials.map_blocks(tasks.pick, names=names, rename=rename, dtype=pdtype,
                                   meta=self.empty(array.ndim, pdtype) if rename is None
                                   else np.empty((0,) * array.ndim, pdtype))
        if op in ("argmax", "argmin"):
            mine = mine.map_blocks(
                device_records.add_offsets, axes=axes, block_chunks=chunks,
                full=tuple(array.shape[a] for a in axes), dtype=pdtype,
                meta=np.empty((0,) * array.ndim, pdtype))
        if op == "moments":
            aggregate = partial(device_records.aggregate_moments, dtype=node.dtype)
            combine = device_records.combine_moments
        elif op in ("argmax", "argmin"):
            aggregate = partial(device_records.aggregate_args, op=op, dtype=node.dtype,
                                target=self.target)
            combine = partial(device_records.combine_args, op=op, target=self.target)
        else:
            aggregate = partial(tasks.aggregate, op=op, dtype=node.dtype, target=self.target)
            combine = partial(tasks.combine, op=op, dtype=None if rename else node.dtype,
                              target=self.target)
        return self._combined(mine, axes, chunks, pdtype, node.dtype, aggregate, combine)

    def _combined(self, partials, axes, chunks, pdtype, dtype, aggregate, combine):
        """``da.reduction`` of per-block partials over ``axes``: host partials
        combined with NumPy; device partials by polyarray programs on the
        device, ``tasks.FOLD_WIDTH`` at a time (kernel arguments): one field
        elementwise, argmax's pairs and variance's moments as device records
        (``device_records``)."""
        split = self.split_every
        if split is None:       # small partials: one combine (fewer tasks than dask's tree)
            kept = math.prod(max(c) for d, c in enumerate(chunks) if d not in axes)
            blocks = math.prod(len(chunks[a]) for a in axes)
            if blocks * kept * pdtype.itemsize <= ONE_COMBINE_BYTES:
                split = {a: max(2, len(chunks[a])) for a in axes}
        ndim = len(chunks) - len(axes)
        return self.da.reduction(
            partials, tasks.identity, aggregate, combine=combine, axis=axes, keepdims=False,
            dtype=dtype, split_every=split, concatenate=False,
            meta=self.empty(ndim, dtype))

    def _einsum(self, node):
        ins, out = node.subscripts.split("->")
        operands = ins.split(",")
        for letters in operands:
            if len(set(letters)) != len(letters):
                raise NotImplementedError(
                    f"pa.dask.evaluate: einsum {node.subscripts!r} repeats an index within "
                    "an operand (a diagonal), which cannot be cut into chunks")
        contracted = "".join(dict.fromkeys(l for l in ins if l not in out + ","))
        roots = [(self._eff[o], letters) for o, letters in zip(node.operands, operands)]
        entries, inputs, index = self._entries(roots)
        entries.append(("einsum", out, node.shape, node.dtype, node.subscripts,
                        tuple(index[r] for r in roots), node.precision))
        stage = self._stage("einsum", entries, (len(entries) - 1,), out + contracted,
                            contracted)
        result = self._blockwise(stage, inputs, node.dtype,
                                 adjust={l: 1 for l in contracted})[0]
        if not contracted:
            return result
        axes = tuple(range(len(out), len(out) + len(contracted)))
        chunks = result.chunks
        return self._combined(
            result, axes, chunks, node.dtype, node.dtype,
            partial(tasks.aggregate, op="sum", dtype=node.dtype, target=self.target),
            partial(tasks.combine, op="sum", dtype=node.dtype, target=self.target))
