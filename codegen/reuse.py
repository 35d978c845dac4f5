"""Kernels that are the same code on other buffers, built once.

A traced loop (``for t in range(T): A[1:-1] = f(A)``) gives a kernel per
step that differs from the last one only in which buffers it reads and
writes.  ``group_key`` describes a plan group's computation with its
buffers abstracted to slots (numbered in order of first use, outputs first;
shapes and dtypes kept): every inlined node's ``local_digest`` with its
children as positions in the listing or slots.  Groups with one key are
one kernel: the first is built, and the others launch its function with
their own buffers (``KernelInfo.entry``, ``instance``).

Scratch buffers that a form adds (the partials of a split reduction) are
shared by the groups of one key: a group's kernels write and read them
before the next group's launch (launches are in order on one queue).
"""
from __future__ import annotations

import dataclasses
import hashlib

from polyarray.codegen.ir import nodes as N
from .classify import stacked_recurrence
from .passes import is_input


def group_key(group, plan, buffers):
    """``(key, slots)`` of a plan group (the one ``plan.building`` names):
    a digest of its computation with buffers as slots, and the buffer names
    in slot order.  O(the group's inlined region)."""
    units = [u.node for u in group.units]
    unit_ids = {id(n) for n in units}
    mat = plan.materialized
    slots = {}
    h = hashlib.sha256(b"polyarray-kernel-v1\n")
    h.update(f"{group.kind} {group.size} {group.apart}\n".encode())

    def buffer_ref(node):
        k = slots.setdefault(buffers[id(node)], len(slots))
        return f"b{k}:{node.shape}:{node.dtype.str}"

    stored = getattr(mat, "stored", None) or {}

    def is_buffer(node):
        return is_input(node) or (id(node) in mat and id(node) not in unit_ids) \
            or served(node) is not None

    def served(node):           # as lower.KernelBuilder._served reads it
        store = stored.get(id(node))
        if store is None or plan.building is None:
            return None
        gi = plan.group_of.get(id(store[0]))
        return store if gi is not None and gi < plan.building else None

    def ref(node):
        store = served(node) if id(node) not in mat else None
        if store is not None:
            return f"{buffer_ref(store[0])}+{store[1]}"
        return buffer_ref(node)

    for u in units:
        buffer_ref(u)
    num = {}
    for root in units:
        if id(root) in num:
            continue
        stack = [(root, iter(root.children()))]
        num_pending = {id(root)}
        while stack:
            node, it = stack[-1]
            for child in it:
                if not is_buffer(child) and id(child) not in num \
                        and id(child) not in num_pending:
                    num_pending.add(id(child))
                    stack.append((child, iter(child.children())))
                    break
            else:
                stack.pop()
                refs = [ref(c) if is_buffer(c) else f"n{num[id(c)]}"
                        for c in node.children()]
                num[id(node)] = len(num)
                h.update(f"{node.local_digest} {refs}\n".encode())
    h.update(f"units {[num[id(u)] for u in units]}\n".encode())
    if group.kind == "elementwise" and len(units) == 1 \
            and isinstance(units[0], N.Concatenate):
        # the policy reads the pieces' ancestry, past the buffers
        h.update(f"stacked {stacked_recurrence(units[0])}\n".encode())
    return h.hexdigest(), list(slots)


def instance(info, name, args_map, names_map, nodes):
    """The ``KernelInfo`` of a group that launches ``info``'s function (the
    first group of its key) with its own buffers: ``args_map`` maps the
    first group's buffers to this one's, ``names_map`` the names its steps
    and facts use (placeholders by their users' names)."""
    def rename(v):
        if isinstance(v, str):
            return names_map.get(v, v)
        if isinstance(v, (tuple, frozenset)):
            return type(v)(rename(x) for x in v)
        return v
    from .schedule import rename_arrays
    return dataclasses.replace(
        info, name=name, entry=info.entry or info.name,
        args=tuple(args_map.get(a, a) for a in info.args),
        schedule=tuple(rename_arrays(s, names_map) for s in info.schedule),
        facts={k: rename(v) for k, v in info.facts.items()}, nodes=nodes)


__all__ = ["group_key", "instance"]
