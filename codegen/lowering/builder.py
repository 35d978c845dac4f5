"""Lowering of DAG nodes to loopy expressions, one kernel at a time.

Every buffer is a flat 1-D array; multi-indices are linearized here, so a
reshape of a buffer is free and a read at the kernel's own index is just
``buf[i]``.  Inlined nodes are lowered by substituting index expressions
(pymbolic-style mapper, one ``map_<node>`` per node type); a node that is
used several times in one kernel is computed once into a private temporary.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pymbolic.primitives as p
from pymbolic.mapper import Mapper as ExprMapper

import loopy as lp
from loopy.kernel.instruction import make_assignment
from loopy.symbolic import TypeCast

from polyarray.ir import nodes as N
from polyarray.ir.expr import binding_reads
from polyarray.ir.mapper import Mapper
from ..emit.cfuncs import BOOL, U8, clip_index, lower_call, special_constant, storage_dtype
from ..emit.complex_helpers import COMPLEX as COMPLEX_OF, helper_name as complex_helper_name
from ..emit.runtime_checks import checked_call
from ..emit.pending import Pending, PendingScalar
from ..user_functions import is_user_function, lower_user_call
from .index import decompose, interleave, linearize
from . import unsigned_index

SPILL_DEPTH = 24       # spill deep inlined chains into temporaries
DEEP = 40              # node levels of lowering after which what a node reads is
#                        lowered ahead, iteratively (KernelBuilder._evaluate_below)


class KernelBuilder(Mapper):
    """Builds the instructions of one kernel.

    ``buffers`` maps id(node) -> buffer name for every materialized or input
    node; ``local`` maps id(node) -> (temporary name, index) for materialized
    nodes computed earlier in this same kernel.
    """

    def __init__(self, plan, buffers, inames):
        self.plan = plan
        self.buffers = buffers
        self.inames = inames               # outer parallel inames of this kernel
        self.instructions = []
        self.temporaries = {}
        self.functions = set()
        self.local = {}
        self.flat = {}                     # shape -> (flat var, idx tuple)
        self._memo = {}
        self._below = {}                   # values lowered ahead (_evaluate_below)
        self._depth = 0                    # node levels of value() in progress
        self._tmp_writer = {}
        self._n = 0
        self.uses = {}
        self.spill = set()
        # buffer name -> register copy of ``buf[own index]``, or None
        self.fetch_direct = None
        # multi-dimensional reads (``buf[a, b]``, for footprint-based
        # transformations such as prefetch); name -> shape of those read so
        self.multidim = False
        self.read_shapes = {}
        # nodes this kernel computes in temporaries only (``local``), never
        # in their buffers: a read at any other index cannot be served
        self.kernel_local = frozenset()
        # assignments and scalar temporaries are recorded, not made loopy's,
        # until ``pending.realize`` (outlining may take them: pending.py)
        self.deferring = False
        # offsets read from integer kernel arguments (``reuse.lift_offsets``):
        # id(node) -> its expression with them as variables; name -> dtype
        lifted = getattr(plan, "lifted", None)
        self.lifted = lifted.exprs if lifted is not None else {}
        self.params = {n: v.dtype for n, v in lifted.values.items()} \
            if lifted is not None else {}
        # unsigned index expressions that cannot wrap (``unsigned_index``)
        self.nowrap = set()
        # a temporary for each distinct right-hand side (the elements of a
        # run, lowered one by one: what they share is computed once)
        self.share_equal = False
        self._equal = {}
        # ids of nodes whose sine and cosine this kernel both takes: one
        # ``cis`` (sincos) temporary gives both (``paired_trig``)
        self.sincos = frozenset()

    # -- analysis ----------------------------------------------------------
    def analyze(self, roots):
        """Count in-kernel reads of inlined nodes and choose spill points.

        A node read more than once (by several consumers, or twice by one
        expression such as ``e * e``) is computed once into a temporary.
        Walks only this kernel's inlined region, so it is O(region).
        """
        order, seen, kids = [], set(), {}
        uses = self.uses
        for root in roots:
            kids[id(root)] = self._inlined_children(root)
            stack = [(root, iter(kids[id(root)]))]
            while stack:
                node, it = stack[-1]
                for child in it:
                    uses[id(child)] = uses.get(id(child), 0) + _reads(node, child)
                    if id(child) not in seen:
                        seen.add(id(child))
                        kids[id(child)] = self._inlined_children(child)
                        stack.append((child, iter(kids[id(child)])))
                        break
                else:
                    stack.pop()
                    order.append(node)
        self.region_order = order
        depth = {}
        for n in order:                 # children before parents
            d = 1 + max((depth.get(id(c), 0) for c in kids[id(n)]), default=0)
            if d >= SPILL_DEPTH:
                self.spill.add(id(n))
                d = 1
            depth[id(n)] = d

    def paired_trig(self):
        """Ids of the nodes of this kernel's region (``analyze``) of which
        it takes both the sine and the cosine, by an expression's call on
        one binding (a Box-Muller pair's angle)."""
        seen = {}
        for n in self.region_order:
            if not isinstance(n, N.IndexLambda):
                continue
            env = dict(n.bindings)
            stack = [n.expr]
            while stack:
                e = stack.pop()
                if isinstance(e, p.Call):
                    name = _bound_name(e.parameters[0]) if len(e.parameters) == 1 else None
                    if e.function.name in ("sin", "cos") and name in env:
                        seen.setdefault(id(env[name]), set()).add(e.function.name)
                    stack.extend(e.parameters)
                elif isinstance(e, p.ExpressionNode):
                    stack.extend(c for c in _fields(e) if isinstance(c, p.ExpressionNode))
        return frozenset(k for k, names in seen.items() if len(names) == 2)

    def prewarm(self, idx_by_shape, within):
        """Create the temporaries of shared/spilled nodes bottom-up, so that
        lowering the roots recurses at most ``SPILL_DEPTH`` levels deep."""
        for n in self.region_order:
            if (self.uses.get(id(n), 0) > 1 or id(n) in self.spill) and _computes(n) \
                    and n.shape in idx_by_shape and self._inlined(n):
                self.value(n, idx_by_shape[n.shape], within)

    def _inlined_children(self, node):
        return [c for c in dict.fromkeys(node.children()) if self._inlined(c)]

    def _inlined(self, node):
        return id(node) not in self.buffers and self._served(node) is None

    def _served(self, node):
        """``(store, offset)`` where an earlier kernel stored ``node``
        unchanged in the buffer of ``store`` (``plan.data.Materialized``):
        this kernel reads it there instead of computing it again."""
        stored = getattr(self.plan.materialized, "stored", None)
        store = stored.get(id(node)) if stored else None
        if store is None or self.plan.building is None:
            return None
        gi = self.plan.group_of.get(id(store[0]))
        return store if gi is not None and gi < self.plan.building else None

    # -- names ----------------------------------------------------------
    def fresh(self, prefix):
        self._n += 1
        return f"{prefix}{self._n}"

    def temp(self, expr, dtype, within, depends=()):
        """Emit ``tmp = expr`` and return the temporary's variable (with
        ``share_equal``, the one already holding ``expr``)."""
        sdt = storage_dtype(dtype)
        if self.share_equal:
            key = (typed_key(expr), sdt, frozenset(within), frozenset(depends))
            hit = self._equal.get(key)
            if hit is not None:
                return hit
        name = self.fresh("v")
        self.temporaries[name] = PendingScalar(sdt) if self.deferring else \
            lp.TemporaryVariable(name, dtype=sdt, shape=(), address_space=lp.AddressSpace.PRIVATE)
        self.assign(p.Variable(name), expr, within, depends)
        self._tmp_writer[name] = self.instructions[-1].id
        if self.share_equal:
            self._equal[key] = p.Variable(name)
        return p.Variable(name)

    def assign(self, lhs, rhs, within, depends=(), **kw):
        insn_id = self.fresh("insn")
        lhs = lhs if isinstance(lhs, tuple) else (lhs,)
        if self.deferring:
            self.instructions.append(Pending(lhs, rhs, insn_id, frozenset(within),
                                             frozenset(depends), len(self._tmp_writer), kw))
            return insn_id
        deps = set(depends) | self._deps_of(rhs)
        self.instructions.append(make_assignment(
            lhs, rhs, id=insn_id, within_inames=frozenset(within),
            depends_on=frozenset(deps), **kw))
        return insn_id

    def _deps_of(self, expr):
        from loopy.symbolic import get_dependencies
        return {self._tmp_writer[n] for n in get_dependencies(expr)
                if n in self._tmp_writer}

    # -- reading values -----------------------------------------------------
    def value(self, node, idx, within, reducing=False):
        """``(expr, dtype)`` of ``node`` at multi-index ``idx``."""
        if id(node) in self.local and tuple(self.local[id(node)][1]) == tuple(idx):
            return self.local[id(node)][0], node.dtype
        if id(node) in self.kernel_local:
            raise AssertionError(f"internal error: {type(node).__name__} {node.shape} is read "
                                 f"at {idx}, not where this kernel computes it (the "
                                 f"row-fusion pass checks every read: plan/fuse_rows.py)")
        if id(node) in self.buffers:
            return self.read_buffer(node, idx), node.dtype
        served = self._served(node)
        if served is not None:          # stored unchanged by an earlier kernel
            store, off = served
            return self.read_buffer(store, tuple(i + o if o else i
                                                 for i, o in zip(idx, off))), node.dtype
        key = (id(node), tuple(idx))
        if key in self._memo:
            return self._memo[key]
        hit = self._below.get((key, reducing))
        if hit is not None:
            return hit
        if self._depth >= DEEP:         # a long chain: what it reads first, iteratively
            self._evaluate_below(node, tuple(idx), within, reducing)
        self._depth += 1
        try:
            expr, dt = self.rec(node, tuple(idx), within, reducing)
        finally:
            self._depth -= 1
        if not reducing and (self.uses.get(id(node), 0) > 1 or id(node) in self.spill) \
                and _computes(node):
            expr = self.temp(expr, dt, within)
            self._memo[key] = (expr, dt)
        return expr, dt

    def _evaluate_below(self, node, idx, within, reducing):
        """Lower, children first, the inlined nodes that ``node`` reaches
        from ``idx`` through reads whose index no data decides (``reads_at``),
        keeping each value: then lowering ``node`` recurses one level, however
        long the chain below it (a loop's 144 updates of one array).  An
        explicit stack: no recursion proportional to the chain."""
        done = lambda k: k in self._memo or (k, reducing) in self._below  # noqa: E731
        order, seen = [], {(id(node), idx)}
        stack = [(node, idx, iter(self.reads_at(node, idx)))]
        while stack:
            n, i, it = stack[-1]
            for c, ci in it:
                k = (id(c), ci)
                if k in seen or not self._inlined(c) or id(c) in self.local \
                        or id(c) in self.kernel_local or done(k):
                    continue
                seen.add(k)
                stack.append((c, ci, iter(self.reads_at(c, ci))))
                break
            else:
                stack.pop()
                order.append((n, i))
        depth, self._depth = self._depth, 0
        try:
            for n, i in order[:-1]:         # node itself is its caller's
                self._below[((id(n), i), reducing)] = self.value(n, i, within, reducing)
        finally:
            self._depth = depth

    def reads_at(self, node, idx):
        """``(child, index)`` of each read of ``node``'s definition at ``idx``
        whose index is index arithmetic alone (no value read from data), as
        lowering ``node`` would make it."""
        if isinstance(node, N.IndexLambda):
            env = dict(node.bindings)
            lowerer = _ExprLowerer(self, idx, env, None, False)
            found = []
            lifted = self.lifted.get(id(node))
            reads = node.reads() if lifted is None else binding_reads(lifted)
            for name, indices in reads.items():
                for index in indices:
                    if all(_index_arithmetic(e) for e in index):
                        found.append((env[name], tuple(lowerer.rec(e)[0] for e in index)))
            return found
        if isinstance(node, N.Reshape):
            return [(node.array, self._reshape_index(node, idx))]
        if isinstance(node, N.Concatenate):
            return [(arr, sub) for arr, sub, _ in self._pieces(node, idx)]
        if isinstance(node, N.Reduce):
            red = [node.array.shape[a] for a in node.axes]
            return [(node.array, interleave(idx, decompose(r, red), node.axes, node.array.ndim))
                    for r in range(math.prod(red))]
        return []

    def read_buffer(self, node, idx):
        name = self.buffers[id(node)]
        flat = self.flat.get(node.shape)
        if self.multidim and len(node.shape) >= 2:     # every read of it: buf[a, b]
            self.read_shapes[name] = node.shape
            return p.Subscript(p.Variable(name), tuple(idx))
        if flat is not None and tuple(idx) == flat[1]:
            fetched = self.fetch_direct and self.fetch_direct(name)
            if fetched is not None:
                return fetched
            lin = flat[0]
        else:
            lin = linearize(idx, node.shape)
        return p.Subscript(p.Variable(name), (lin,))

    def define(self, node, idx, within, reducing=False):
        """The value of ``node`` from its definition (ignoring its buffer)."""
        return self.rec(node, tuple(idx), within, reducing)

    # -- node mappers (inlined definitions) -------------------------------
    def map_index_lambda(self, node, idx, within, reducing):
        env = dict(node.bindings)
        lowerer = _ExprLowerer(self, idx, env, within, reducing, node.shape)
        return lowerer.rec(self.lifted.get(id(node), node.expr))

    def map_reshape(self, node, idx, within, reducing):
        return self.value(node.array, self._reshape_index(node, idx), within, reducing)

    def _reshape_index(self, node, idx):
        flat = self.flat.get(node.shape)
        if flat is not None and tuple(idx) == flat[1]:
            lin = flat[0]
        else:
            lin = linearize(idx, node.shape)
        return self._flat_index(lin, node.array.shape)

    def _flat_index(self, lin, shape):
        flat = self.flat.get(shape)
        if flat is not None and lin == flat[0]:
            return flat[1]
        return decompose(lin, shape)

    def map_concatenate(self, node, idx, within, reducing):
        pieces = [(off, self.value(arr, sub, within, reducing)[0])
                  for arr, sub, off in self._pieces(node, idx)]
        return _select_piece(idx[node.axis], pieces), node.dtype

    def _pieces(self, node, idx):
        """``(piece, index in it, offset)`` of each piece of concatenation
        ``node`` read at ``idx``."""
        ax = node.axis
        pieces, off = [], 0
        total = node.shape[ax]
        for arr in node.arrays:
            sub = list(idx)
            n = arr.shape[ax]
            # a piece one wide along the axis is read at index 0 there, so its
            # values are shared with every other use at the same position.
            # Other pieces are read at an index clamped into the piece: a
            # piece's value may be computed into a temporary ahead of the
            # select (a shared subexpression), and must not read outside its
            # buffers there (a gather's index check would fire on garbage)
            local = idx[ax] - off if off else idx[ax]
            if n != 1 and (off or off + n < total) and _selects(idx[ax]):
                # an index that already selects (a piece of a piece): a helper,
                # which names it once (each conditional below names it twice)
                local = clip_index(local, 0, n - 1, self.functions)
            elif n != 1:        # conditionals, not min/max: OpenCL's min(ulong, int)
                if off:         # is ambiguous (a uint64 gather index, fuzzer seed 9342)
                    local = p.If(p.Comparison(local, ">", 0), local, 0)
                if off + n < total:
                    local = p.If(p.Comparison(local, "<", n - 1), local, n - 1)
            sub[ax] = 0 if n == 1 else local
            pieces.append((arr, tuple(sub), off))
            off += n
        return pieces

    def map_reduce(self, node, idx, within, reducing):
        """A small reduction inlined into its reader (``plan/materialize``):
        its terms unrolled and combined pairwise, in registers, with the
        elementwise op of the same NumPy semantics (wrapping integer sums,
        NaN-propagating max/min)."""
        combine = INLINE_COMBINE[node.op]
        terms = [self.value(a, i, within, reducing) for a, i in self.reads_at(node, idx)]
        if not terms:
            return storage_dtype(node.dtype).type(IDENTITY[node.op]), node.dtype
        while len(terms) > 1:
            pairs = [lower_call(combine, [a, b], self.functions)
                     for a, b in zip(terms[::2], terms[1::2])]
            terms = pairs + terms[len(pairs) * 2:]
        (expr, dt), = terms
        if dt != node.dtype:
            expr, dt = lower_call("cast_" + node.dtype.name, [(expr, dt)], self.functions)
        return expr, dt


# the elementwise op that combines two values of each reduction an inlined
# small reduction can be (``plan/materialize`` inlines only these), and the
# value of an empty one
INLINE_COMBINE = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum",
                  "any": "logical_or", "all": "logical_and"}
IDENTITY = {"sum": 0, "prod": 1, "any": 0, "all": 1}


SELECT_CHAIN = 8        # pieces selected by a chain of conditionals; more: a tree


def _select_piece(i, pieces):
    """The value of the piece holding position ``i`` among ``pieces``
    (``(start, value)`` in order): a chain of conditionals, or for many
    pieces a balanced tree of them, whose nesting grows with the log of their
    number (a recurrence of 200 columns nested 200 deep, past the 256
    brackets that clang allows)."""
    if len(pieces) > SELECT_CHAIN:
        mid = len(pieces) // 2
        return p.If(p.Comparison(i, "<", pieces[mid][0]), _select_piece(i, pieces[:mid]),
                    _select_piece(i, pieces[mid:]))
    expr = pieces[-1][1]
    for (start, e), (nxt, _) in zip(reversed(pieces[:-1]), reversed(pieces[1:])):
        expr = p.If(p.Comparison(i, "<", nxt), e, expr)
    return expr


def _index_arithmetic(e):
    """Whether index expression ``e`` is arithmetic on index variables and
    constants (no value read, no call): its lowering has no side effects."""
    stack = [e]
    while stack:
        x = stack.pop()
        t = type(x)
        if t is int or isinstance(x, np.integer):
            continue
        if t is p.Variable:
            if x.name.startswith("_in"):
                return False
            continue
        if isinstance(x, (p.Sum, p.Product)):
            stack.extend(x.children)
        elif isinstance(x, (p.FloorDiv, p.Remainder)):
            stack.extend((x.numerator, x.denominator))
        elif isinstance(x, p.If):
            stack.extend((x.condition, x.then, x.else_))
        elif isinstance(x, p.Comparison):
            stack.extend((x.left, x.right))
        else:
            return False
    return True


def _selects(expr):
    """Whether index expression ``expr`` holds a conditional or a call (a
    clamped piece index): walked iteratively, stopping at the first."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, (p.If, p.Call)):
            return True
        if isinstance(e, (p.Sum, p.Product)):
            stack.extend(e.children)
        elif isinstance(e, (p.FloorDiv, p.Remainder, p.Quotient)):
            stack.extend((e.numerator, e.denominator))
        elif isinstance(e, p.Subscript):
            stack.extend(e.index_tuple)
    return False


def _reads(parent, child):
    """How many times ``parent``'s definition reads ``child``."""
    if isinstance(parent, N.IndexLambda):
        reads = parent.reads()
        return sum(len(reads.get(name, ())) for name, c in parent.bindings if c is child)
    return 1


def _computes(node):
    """Worth a temporary when shared: it does arithmetic, not just a read
    (nor an unsigned index, which ``unsigned_index`` folds where it is read)."""
    if isinstance(node, N.IndexLambda):
        e = node.expr
        return isinstance(e, p.Call) and not (
            e.function.name == "cast_uint64" and _index_arithmetic(e.parameters[0]))
    return isinstance(node, (N.Concatenate, N.Reduce))


class _ExprLowerer(ExprMapper):
    """Frontend IndexLambda expression -> loopy expression, ``(expr, dtype)``."""

    def __init__(self, kb, idx, env, within, reducing, shape=None):
        self.kb, self.idx, self.env = kb, idx, env
        self.within, self.reducing = within, reducing
        self.shape = shape          # of the node whose expression this lowers

    def map_constant(self, c):
        if isinstance(c, np.generic):
            dt = c.dtype
            if dt == BOOL:
                return U8.type(int(c)), dt
            if dt.kind == "f" and not np.isfinite(c):
                return special_constant(c, dt, self.kb.functions), dt
            if dt == np.int64 and c == np.iinfo(np.int64).min:
                # C has no literal for it: 9223372036854775808l does not fit a
                # long, and nvcc made the negated literal unsigned (comparisons
                # with it then were unsigned: fuzzer seed 7089 on the H100)
                return p.Sum((np.int64(-2**63 + 1), np.int64(-1))), dt
            return c, dt
        if isinstance(c, bool):
            return U8.type(int(c)), BOOL
        return c, np.dtype(np.int64)

    def map_variable(self, v):
        name = v.name
        if name.startswith("_in"):
            return self.kb.value(self.env[name], (), self.within, self.reducing)
        if name in self.kb.params:          # an offset passed as a kernel argument
            return v, self.kb.params[name]
        k = int(name[1:])
        return self.idx[k], np.dtype(np.int64)

    def map_subscript(self, s):
        child = self.env[s.aggregate.name]
        index = s.index if isinstance(s.index, tuple) else (s.index,)
        sub = tuple(self.rec(i)[0] for i in index)
        return self.kb.value(child, sub, self.within, self.reducing)

    def map_call(self, c):
        name = c.function.name
        if name == "where":     # a condition known here lowers one branch alone: a
            cond = self.rec(c.parameters[0])    # chain of writes read at a constant
            if _int_constant(cond[0]):          # row has every other row's write dead
                return self.rec(c.parameters[1] if cond[0] else c.parameters[2])
            args = [cond] + [self.rec(a) for a in c.parameters[1:]]
        else:
            args = [self.rec(a) for a in c.parameters]
        if name == "checked_index":         # (raw index, axis size, axis)
            (raw, dt), (n, _), (axis, _) = args
            return checked_call("index", dt, (raw, np.int64(n)), ("index", int(axis), int(n)),
                                self.kb.plan.checks, self.kb.functions), np.dtype(np.int64)
        if is_user_function(name):          # pa.elementwise_kernel / reduction_kernel
            return lower_user_call(name, args, self.kb.functions)
        if name == "power" and args[0][1].kind == "i":
            return checked_call("power", args[0][1], [e for e, _ in args], ("power",),
                                self.kb.plan.checks, self.kb.functions), args[0][1]
        if name == "cast_uint64" and args[0][1].kind in "iu" \
                and _index_arithmetic(c.parameters[0]):      # (of loop indices alone)
            return self._unsigned_index(c.parameters[0], args[0][0]), np.dtype(np.uint64)
        folded = unsigned_index.fold(name, args, self.kb.nowrap)
        if folded is not None:
            return folded
        if name in ("sin", "cos") and self.kb.sincos and args[0][1] in COMPLEX_OF \
                and id(self.env.get(_bound_name(c.parameters[0]))) in self.kb.sincos:
            return self._from_cis(name, args[0])
        return lower_call(name, args, self.kb.functions)

    def _from_cis(self, name, arg):
        """``sin``/``cos`` of a value whose other one the kernel takes too:
        a part of its ``cis`` (one sincos), a temporary both share."""
        x, dt = arg
        cdt = COMPLEX_OF[dt]
        fname = complex_helper_name("cis", cdt)
        self.kb.functions.add(fname)
        both = self.kb.temp(p.Call(p.Variable(fname), (x,)), cdt, self.within)
        return lower_call("imag" if name == "sin" else "real", [(both, cdt)], self.kb.functions)

    def _unsigned_index(self, e, lowered):
        """``(uint64) e`` for index arithmetic ``e``: of the node's own flat
        index, the kernel's flat index itself (not rebuilt from the
        multi-index); marked as not wrapping where ``e`` is bounded."""
        shape, flat = self.shape, None
        if shape is not None:
            flat = self.kb.flat.get(shape)
            if flat is not None and (tuple(flat[1]) != tuple(self.idx)
                                     or not unsigned_index.own_flat(e, shape)):
                flat = None
        out = _unsigned_terms(flat[0] if flat is not None else lowered)
        if shape is not None and unsigned_index.bounded(e, shape):
            self.kb.nowrap.add(out)
        return out

    # Index arithmetic on constants alone is folded here.  Besides shorter
    # source, it keeps loopy's mappers right: they memoize results keyed by
    # the expression, and ``(-1)*2`` equals ``(-1)*2.0`` (hash and ``==``), so
    # an index subexpression could come back as the float one of a value
    # elsewhere in the kernel (fuzzer seed 24621316).
    def map_sum(self, e):
        ch = tuple(self.rec(c)[0] for c in e.children)
        if all(map(_int_constant, ch)):
            return sum(int(c) for c in ch), np.dtype(np.int64)
        return p.Sum(ch), np.dtype(np.int64)

    def map_product(self, e):
        ch = tuple(self.rec(c)[0] for c in e.children)
        if all(map(_int_constant, ch)):
            return math.prod(int(c) for c in ch), np.dtype(np.int64)
        return p.Product(ch), np.dtype(np.int64)

    def map_floor_div(self, e):
        a, b = self.rec(e.numerator)[0], self.rec(e.denominator)[0]
        if _int_constant(a) and _int_constant(b) and b > 0:
            return int(a) // int(b), np.dtype(np.int64)
        return p.FloorDiv(a, b), np.dtype(np.int64)

    def map_remainder(self, e):
        a, b = self.rec(e.numerator)[0], self.rec(e.denominator)[0]
        if _int_constant(a) and _int_constant(b) and a >= 0 and b > 0:
            return int(a) % int(b), np.dtype(np.int64)
        return p.Remainder(a, b), np.dtype(np.int64)

    def map_comparison(self, e):
        left, right = self.rec(e.left)[0], self.rec(e.right)[0]
        if _int_constant(left) and _int_constant(right):
            return U8.type(_COMPARE[e.operator](int(left), int(right))), BOOL
        return p.Comparison(left, e.operator, right), BOOL

    def map_if(self, e):
        cond = self.rec(e.condition)[0]
        if _int_constant(cond):
            return self.rec(e.then if cond else e.else_)
        then, dt = self.rec(e.then)
        return p.If(cond, then, self.rec(e.else_)[0]), dt


def _fields(e):
    """The parts of pymbolic expression ``e`` (a dataclass), in order."""
    if dataclasses.is_dataclass(e):
        return tuple(getattr(e, f.name) for f in dataclasses.fields(e))
    return e.__getinitargs__()


def _bound_name(e):
    """The binding an expression's argument reads (``_in0`` or ``_in0[...]``),
    or None."""
    if isinstance(e, p.Subscript):
        e = e.aggregate
    return e.name if isinstance(e, p.Variable) else None


def typed_key(expr):
    """A key of ``expr`` that tells constants of different types apart
    (pymbolic's ``==`` has ``2 == 2.0`` and ``np.float32(2) == 2.0``)."""
    out, stack = [], [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, p.ExpressionNode):
            out.append(type(e).__name__)
            kids = _fields(e)
            out.append(len(kids))
            stack.extend(reversed(kids))
        elif isinstance(e, tuple):
            out.append(("tuple", len(e)))
            stack.extend(reversed(e))
        else:
            out.append((type(e).__name__, e if not isinstance(e, np.dtype) else str(e)))
    return tuple(out)


def _int_constant(x):
    return type(x) is int or (isinstance(x, np.integer) and not isinstance(x, np.bool_))


def _unsigned_terms(e):
    """``(uint64) e`` for index arithmetic ``e``, the cast taken into its
    top-level sum and constant factors: ``4*Y + u`` becomes ``4ul *
    (uint64) Y + (uint64) u``.  Exact (unsigned arithmetic is modular, and
    an index computed in ``int`` does not overflow), and the compiler then
    sees that ``(4*Y + u) / 4`` is ``Y`` for each ``u < 4``: a run of
    neighbours that share work (a random block) computes it once."""
    U = np.dtype(np.uint64)

    def term(t):
        if _int_constant(t):
            return np.uint64(int(t) % 2**64)
        if isinstance(t, p.Product):
            consts = [c for c in t.children if _int_constant(c)]
            rest = [c for c in t.children if not _int_constant(c)]
            if consts and rest:
                k = np.uint64(math.prod(int(c) for c in consts) % 2**64)
                inner = rest[0] if len(rest) == 1 else p.Product(tuple(rest))
                return p.Product((k, TypeCast(U, inner)))
        return TypeCast(U, t)
    if isinstance(e, p.Sum):
        return p.Sum(tuple(term(t) for t in e.children))
    return term(e)


_COMPARE = {"<": int.__lt__, "<=": int.__le__, ">": int.__gt__, ">=": int.__ge__,
            "==": int.__eq__, "!=": int.__ne__}


__all__ = ["IDENTITY", "INLINE_COMBINE", "KernelBuilder"]
