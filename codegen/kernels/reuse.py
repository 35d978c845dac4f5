"""Kernels that are the same code on other buffers, built once.

A traced loop (``for t in range(T): A[1:-1] = f(A)``) gives a kernel per
step that differs from the last one only in which buffers it reads and
writes.  ``group_skeleton`` describes a plan group's computation with its
buffers abstracted to slots (numbered in order of first use, outputs first;
shapes and dtypes kept): every inlined node's ``local_digest`` with its
children as positions in the listing or slots; the constant offsets that
differ between groups of one skeleton, and a 1-D group's length, are
integer kernel arguments (``lift_offsets``).  Groups with one key are one
kernel: the first is built, and the others launch its function with their
own buffers and arguments (``KernelInfo.entry``, ``instance``).

Scratch buffers that a form adds (the partials of a split reduction) are
shared by the groups of one key: a group's kernels write and read them
before the next group's launch (launches are in order on one queue).

Across programs, a group's generated code (``GroupCode``: each kernel's
device code, preambles, launch sizes and records) is kept in this process
under ``code_key``: the group's key, its buffers' names, its position (its
kernels' names), the run-time check slots it starts at, the target, the
device facts and every setting the code generation reads.  The text is a
function of that key alone, so a program's source is the same whether its
kernels were generated now or taken from an earlier program (a loop of 800
steps after one of 50: the same first kernels on the same buffer names).
Kernels are generated one by one (``generate``) and their code joined as
loopy joins a merged program's (``device_code``): the same text.
"""
from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import pymbolic.primitives as p

from polyarray.ir import nodes as N
from ..policy.classify import stacked_recurrence
from ..plan import is_input


class _Listing:
    """A group's computation written out: one line per node (``lines``),
    and the same with the group's 1-D length ``n`` as ``N`` where it is no
    more than the length of a 1-D value (``alines``; None where a node's
    code depends on it, or the group has no such length)."""

    def __init__(self, head, size, n):
        self.n = n
        self.lines = [head.format(size)]
        self.alines = [head.format("N")] if n else None

    def shape(self, shape, abstract):
        return "(N,)" if abstract and shape == (self.n,) else str(shape)

    def add(self, line, aline=None):
        self.lines.append(line)
        if self.alines is not None:
            if aline is None:
                self.alines = None
            else:
                self.alines.append(aline)

    def keys(self):
        """``(key, abstract key or None)``."""
        concrete = hashlib.sha256(("polyarray-kernel-v1\n" + "".join(self.lines)).encode())
        if self.alines is None:
            return concrete.hexdigest(), None
        return concrete.hexdigest(), hashlib.sha256(
            ("polyarray-kernel-v1 extent\n" + "".join(self.alines)).encode()).hexdigest()


def group_skeleton(group, plan, buffers):
    """``(key, slots, offsets, sites)`` of a plan group (the one
    ``plan.building`` names): a digest of its computation with buffers as
    slots, and the buffer names in slot order; the constant offsets of the
    subscripts of an elementwise group's index expressions (``x[t]``,
    ``x[_0 + 5]``: ``offsets``) are left out of the key
    (``lift_offsets`` puts back those that stay constants), and ``sites``
    are the inlined nodes that hold them, ``(node, how many)`` in order.
    O(the group's inlined region).
    A flat group of 1-D values whose code does not depend on their length
    ``n`` (``C[i, :i + 1] = f(A[:i + 1, k], ...)``, a row of another length
    each step) has ``n`` as its first offset, and its key leaves it out."""
    units = [u.node for u in group.units]
    unit_ids = {id(n) for n in units}
    mat = plan.materialized
    slots = {}
    liftable = group.kind == "elementwise"
    n1 = group.size if liftable and not group.apart and all(
        u.shape == (group.size,) for u in units) else None
    listing = _Listing(f"{group.kind} {{}} {group.apart}\n", group.size, n1)

    def buffer_ref(node, abstract=False):
        k = slots.setdefault(buffers[id(node)], len(slots))
        return f"b{k}:{listing.shape(node.shape, abstract)}:{node.dtype.str}"

    stored = getattr(mat, "stored", None) or {}

    def is_buffer(node):
        return is_input(node) or (id(node) in mat and id(node) not in unit_ids) \
            or served(node) is not None

    def served(node):           # as builder.KernelBuilder._served reads it
        store = stored.get(id(node))
        if store is None or plan.building is None:
            return None
        gi = plan.group_of.get(id(store[0]))
        return store if gi is not None and gi < plan.building else None

    def ref(node, abstract=False):
        store = served(node) if id(node) not in mat else None
        if store is not None:
            return f"{buffer_ref(store[0], abstract)}+{store[1]}"
        return buffer_ref(node, abstract)

    for u in units:
        buffer_ref(u)
    num, offsets, sites = {}, [], []

    def mark(v):
        offsets.append(v)
        return _MARK
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
                kids = node.children()
                refs = [ref(c) if is_buffer(c) else f"n{num[id(c)]}" for c in kids]
                num[id(node)] = len(num)
                if not liftable or type(node) is not N.IndexLambda:
                    line = f"{node.local_digest} {refs}\n"
                    # a node other than an elementwise value (a reduction over
                    # the group's length, a reshape): its code may depend on it
                    listing.add(line, None if n1 in node.shape
                                or any(n1 in c.shape for c in kids) else line)
                    continue
                before = len(offsets)
                marked = _offsets_marked(node.expr, mark)
                if len(offsets) == before and listing.alines is None:
                    listing.add(f"{node.local_digest} {refs}\n")   # no line needs its text
                    continue
                text = N.expression_text(marked)
                # (its ``op`` is a label: ``getitem[3]`` names the offset)
                body = f"{node.dtype.str} {node.op == N.WRITTEN} {text} " \
                    f"{[k for k, _ in node.bindings]}"
                if len(offsets) > before:
                    sites.append((node, len(offsets) - before))
                    line = f"IL {node.shape} {body} {refs}\n"
                else:
                    line = f"{node.local_digest} {refs}\n"
                aline = None
                if listing.alines is not None and (node.shape == (n1,) or n1 not in node.shape):
                    arefs = [ref(c, True) if is_buffer(c) else f"n{num[id(c)]}" for c in kids]
                    aline = f"IL {listing.shape(node.shape, True)} {body} {arefs}\n"
                listing.add(line, aline)
    tail = f"units {[num[id(u)] for u in units]}\n"
    if group.kind == "elementwise" and len(units) == 1 \
            and isinstance(units[0], N.Concatenate):
        # the policy reads the pieces' ancestry, past the buffers
        tail += f"stacked {stacked_recurrence(units[0])}\n"
    listing.add(tail, tail)
    key, abstract = listing.keys()
    if abstract is not None:                # the length is the first offset
        return abstract, list(slots), [n1] + offsets, [(None, 1)] + sites
    return key, list(slots), offsets, sites


def _with_offsets(key, offsets, lifted=()):
    """A group's key: its skeleton's with the offsets that stay constants
    in its code (those at positions ``lifted`` are kernel arguments)."""
    lifted = set(lifted)
    kept = [None if j in lifted else v for j, v in enumerate(offsets)]
    return hashlib.sha256(f"{key} {kept}".encode()).hexdigest()


_MARK = p.Variable("_c")        # an offset, in a skeleton
MAX_LIFTED = 16         # offsets of one kernel passed as arguments, at most
MAX_SITES = 512         # nodes holding them


@dataclass(frozen=True)
class Lifted:
    """The offsets of a group that are kernel arguments: ``exprs`` (id of
    an inlined node -> its expression with those offsets as variables, the
    arguments' names), ``values`` (argument name -> offset) and ``extent``
    (the argument that is the group's 1-D length, or None)."""
    exprs: dict
    values: dict
    extent: str = None


def lift_offsets(skeletons, index_dtype) -> tuple:
    """``(keys, lifted)`` from each group's ``group_skeleton``
    (``gi -> (key, slots, offsets, sites)``): groups of one skeleton whose
    offsets differ (the steps of a loop, ``ey[0, :] = f[t]``; rows of
    another length) become one kernel with the offsets that differ among
    them as integer arguments (``c<group>_<k>``, one per distinct column of
    values, after the buffers in the slots); ``keys``: ``gi -> (key,
    slots)``; ``lifted``: ``gi -> Lifted``.  Where they are too many, or no
    offset differs, each group keeps its offsets as constants."""
    classes = {}
    for gi, (key, _, offsets, _) in skeletons.items():
        classes.setdefault((key, len(offsets)), []).append(gi)
    keys, lifted = {}, {}
    for (key, n), members in classes.items():
        columns = [tuple(skeletons[gi][2][j] for gi in members) for j in range(n)]
        varying = [j for j, col in enumerate(columns) if len(set(col)) > 1]
        distinct = list(dict.fromkeys(columns[j] for j in varying))
        if len(members) < 2 or not varying or len(distinct) > MAX_LIFTED \
                or len(skeletons[members[0]][3]) > MAX_SITES:
            varying = []
        param = {j: distinct.index(columns[j]) for j in varying}
        for gi in members:
            _, slots, offsets, sites = skeletons[gi]
            if not varying:
                keys[gi] = (_with_offsets(key, offsets), slots)
                continue
            names = [f"c{gi}_{k}" for k in range(len(distinct))]
            keys[gi] = (_with_offsets(key, offsets, varying), list(slots) + names)
            value = {names[param[j]]: index_dtype.type(offsets[j]) for j in varying}
            exprs, extent, at = {}, None, 0
            for node, count in sites:
                if node is None:        # the group's length
                    extent = names[param[at]] if at in param else None
                else:
                    pos = iter(range(at, at + count))

                    def replace(v, pos=pos):
                        j = next(pos)
                        return p.Variable(names[param[j]]) if j in param else v
                    exprs[id(node)] = _offsets_marked(node.expr, replace)
                at += count
            lifted[gi] = Lifted(exprs, value, extent)
    return keys, lifted


def _offsets_marked(expr, offset):
    """``expr`` with each constant offset of its subscripts (a constant
    index, or a constant term of an index's sum) replaced by ``offset(v)``
    in a fixed order."""
    def index(e):
        t = type(e)
        if t is int:
            return offset(e)
        if t is p.Sum:
            return p.Sum(tuple(offset(c) if type(c) is int else rec(c) for c in e.children))
        return rec(e)

    def rec(e):
        t = type(e)
        if t is p.Subscript and isinstance(e.aggregate, p.Variable):
            ix = e.index if isinstance(e.index, tuple) else (e.index,)
            return p.Subscript(e.aggregate, tuple(index(i) for i in ix))
        if t is tuple:
            return tuple(rec(a) for a in e)
        if isinstance(e, p.ExpressionNode) and t is not p.Variable:
            return t(*[rec(getattr(e, f)) for f in N.field_names(t)])
        return e
    return rec(expr)


def instance(info, name, args_map, names_map, nodes, scalars=None):
    """The ``KernelInfo`` of a group that launches ``info``'s function (the
    first group of its key) with its own buffers: ``args_map`` maps the
    first group's buffers (and integer arguments) to this one's,
    ``names_map`` the names its steps and facts use (placeholders by their
    users' names); ``scalars``: the integer arguments' values (a grid that
    depends on them is this group's)."""
    def rename(v):
        if isinstance(v, str):
            return names_map.get(v, v)
        if isinstance(v, (tuple, frozenset)):
            return type(v)(rename(x) for x in v)
        return v
    from ..schedule import rename_arrays
    gsize = info.gsize
    if info.grid:
        gsize = launch_grid(info.grid, {a: scalars[args_map.get(a, a)] for a in info.args
                                        if args_map.get(a, a) in scalars})
    return dataclasses.replace(
        info, name=name, entry=info.entry or info.name, gsize=gsize,
        args=tuple(args_map.get(a, a) for a in info.args),
        schedule=tuple(rename_arrays(s, names_map) for s in info.schedule),
        facts={k: rename(v) for k, v in info.facts.items()}, nodes=nodes)


@dataclass(frozen=True)
class Generated:
    """One generated kernel: its device code and what launching and
    describing it need (``KernelInfo``'s fields)."""
    name: str
    text: str                   # the kernel's device code
    preambles: tuple            # loopy's (tag, code) device preambles
    gsize: tuple
    lsize: tuple
    args: tuple                 # buffer names, in argument order
    form: str
    steps: tuple
    rule: str
    facts: dict
    aliases: dict
    loopy: object = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class GroupCode:
    """A group's kernels as generated, with the run-time checks its lowering
    added and the scratch buffers its forms added ``(name, size, dtype)``."""
    kernels: tuple
    checks: tuple
    buffers: tuple


KEPT = 4096             # groups' code kept per process (least recently used dropped)
_CODE: OrderedDict = OrderedDict()
_LOCK = threading.Lock()


def context(target, device, index_dtype, thresholds) -> str:
    """What besides a group's key its generated code depends on: the target,
    the device facts, the index type and every setting code generation
    reads (the thresholds lowering was given, which sweeps and tests change
    with ``using_thresholds``, and the lowering's own constants)."""
    from ..lowering import builder
    settings = sorted((k, repr(v)) for k, v in vars(builder).items()
                      if k.isupper() and isinstance(v, (int, float, str, tuple, dict)))
    return hashlib.sha256(repr((type(target).__name__, repr(device), str(index_dtype),
                                repr(thresholds), settings)).encode()).hexdigest()


def code_key(key, slots, group_index, checks_at, ctx) -> str:
    return hashlib.sha256(repr((key, tuple(slots), group_index, checks_at, ctx)).encode()
                          ).hexdigest()


def lookup(ckey):
    """The ``GroupCode`` kept under ``ckey``, or None."""
    with _LOCK:
        code = _CODE.get(ckey)
        if code is not None:
            _CODE.move_to_end(ckey)
        return code


def remember(ckey, code):
    with _LOCK:
        _CODE[ckey] = code
        while len(_CODE) > KEPT:
            _CODE.popitem(last=False)


def forget():
    """Drop every kept group's code (``targets.clear_memory_cache``)."""
    with _LOCK:
        _CODE.clear()


def _int_or_expr(x):
    try:
        return int(x)
    except TypeError:           # an expression in the kernel's integer arguments
        return x


def symbolic_grid(gsize) -> tuple:
    """``gsize`` where it depends on the kernel's integer arguments, else ()."""
    return tuple(gsize) if any(not isinstance(g, int) for g in gsize) else ()


def launch_grid(gsize, values) -> tuple:
    """``gsize`` evaluated with the integer arguments' ``values``."""
    if not symbolic_grid(gsize):
        return tuple(gsize)
    from pymbolic import evaluate
    return tuple(int(evaluate(g, {k: int(v) for k, v in values.items()})) for g in gsize)


def generate(kp) -> Generated:
    """Device code of one assembled kernel (``assemble.KernelPlan``):
    loopy's preprocessing, the form's adjustment after it, code generation."""
    import loopy as lp
    tu = _preprocessed(kp)
    result = lp.generate_code_v2(tu)
    knl = tu[kp.name]
    gsize, lsize = knl.get_grid_size_upper_bounds_as_exprs(tu.callables_table)
    return Generated(kp.name, "\n\n".join(str(dp.ast) for dp in result.device_programs),
                     tuple(result.device_preambles), tuple(_int_or_expr(x) for x in gsize),
                     tuple(int(x) for x in lsize),
                     tuple((kp.aliases or {}).get(a.name, a.name) for a in knl.args),
                     # a plain str: unpickling a disk-cache entry then imports no
                     # policy (nor loopy)
                     str(kp.form), kp.steps, kp.rule, kp.facts or {}, kp.aliases or {},
                     (knl, tu.callables_table))


def _preprocessed(kp):
    from loopy.preprocess import preprocess_program
    tu = preprocess_program(kp.tu)
    if kp.preprocessed is not None:         # e.g. a predicated store after the accumulation
        tu = tu.with_kernel(kp.preprocessed(tu[kp.name]))
    return tu


def loopy_objects(kp):
    """``(loopy kernel, callables table)`` of ``kp`` as ``generate`` keeps
    them (for a kernel generated in another process)."""
    tu = _preprocessed(kp)
    return tu[kp.name], tu.callables_table


def generate_all(kps) -> list:
    """``generate`` of each of ``kps``, at once in forked processes where
    there are enough (``concurrent_codegen``)."""
    from .concurrent_codegen import generate_all as run
    return run(kps, generate, loopy_objects)


def device_code(kernels) -> str:
    """The device source of generated kernels, as loopy writes a merged
    program's: the preambles once each (in loopy's order), then the kernels."""
    from loopy.codegen.result import process_preambles
    preambles = [p for k in kernels for p in k.preambles]
    return "".join(process_preambles(preambles)) + "\n" + "\n\n".join(k.text for k in kernels)


__all__ = ["Generated", "GroupCode", "Lifted", "code_key", "context", "device_code", "forget",
           "generate", "generate_all", "group_skeleton", "instance", "lift_offsets",
           "loopy_objects", "lookup", "remember"]
