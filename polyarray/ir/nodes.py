"""The expression DAG: immutable, hash-consed nodes.

Every node is a frozen dataclass.  Nodes are *interned*: building a node that
is structurally equal to a live node returns that node.  So structural
equality is identity, comparing two DAGs is O(1), hashing is cached, and a
subexpression that the user writes twice is still one node that is evaluated
once.

Each node also has two SHA-256 digests, stable across processes (they never
use Python's randomized ``hash``), from one description of its fields, made
when first asked for:
``local_digest`` is the node itself (type, shape, dtype, fields), its
children and data values aside; ``digest`` adds the children's digests and
a captured array's content, so it names the whole DAG below the node.
``codegen.program_key`` builds the compile caches' key from the local digests
(data values are kernel arguments, so new data reuses the kernels).

Node types
----------
``Placeholder``   named input, bound at evaluation.
``DataWrapper``   a NumPy array captured in the graph (read-only copy).
``IndexLambda``   ``out[_0, .., _n] = expr`` over index variables ``_k`` with
                  named bindings ``_in0..``.  Elementwise ops, broadcasts,
                  transposes, slicing, gathers and constants are all
                  IndexLambdas (pytato's model).
``Reduce``        a reduction (sum, prod, max, min, any, all, argmax, argmin)
                  over some axes; the output keeps the other axes in order.
``Einsum``        a sum of products given by einsum subscripts (dot, matmul,
                  tensordot, inner, vdot, einsum).
``Reshape``       C-order reshape (cheap on contiguous data, so kept apart).
``Concatenate``   joins arrays along an axis.
``Recurrence``    rows computed in order, each from the rows before it (a
                  Python loop ``y[:, j] = f(y[:, j - 1], x[:, j])`` rolled
                  back: ``codegen/plan/recurrence.py``).
``RawKernelOutput`` one output of a launch of a hand-written kernel
                  (``pa.raw_kernel``): the outputs of one launch share every
                  field but ``index``.
``LibraryCallOutput`` one output of a call of a library routine (a
                  factorization or a solve of ``pa.linalg``, a transform of
                  ``pa.fft``): the outputs of
                  one call share every field but ``index``.
"""
from __future__ import annotations

import contextlib
import gc
import hashlib
import math
import threading
import weakref
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import pymbolic.primitives as p


_INTERN = weakref.WeakValueDictionary()
_INTERN_LOCK = threading.Lock()

MAX_INTP = 2**63 - 1


def check_shape_size(shape, dtype):
    """Refuse shapes no array can have, with NumPy's errors: a dimension
    beyond intp, or ``size * itemsize`` beyond intp (zero dimensions are
    skipped, as NumPy does, so ``(0, 2**40, 2**40)`` is refused too).  All
    arithmetic is on Python ints: nothing wraps."""
    nbytes = np.dtype(dtype).itemsize
    for n in shape:
        if n > MAX_INTP:
            raise ValueError("Maximum allowed dimension exceeded")
        if n:
            nbytes *= n
    if nbytes > MAX_INTP:
        raise ValueError("array is too big; `arr.size * arr.dtype.itemsize` is larger "
                         f"than the maximum possible size. (shape {tuple(shape)} of "
                         f"{np.dtype(dtype).name} would need {nbytes} bytes)")


def _key_part(value):
    """A hashable stand-in for one field value, children by identity."""
    if isinstance(value, Node):
        return ("node", id(value))
    if isinstance(value, np.dtype):
        return ("dtype", value.str)
    if isinstance(value, tuple):
        return tuple(_key_part(v) for v in value)
    if isinstance(value, np.ndarray):
        raise AssertionError("arrays are keyed by DataWrapper.content_digest")
    return (type(value).__name__, value)


def _local_text(value, children) -> str:
    """One field value as text, each child node as ``@`` (appended to
    ``children``); strings are quoted by ``repr``, so a bare ``@`` is a child."""
    t = type(value)
    if t is str or t is int:
        return repr(value)
    if t is tuple:
        return "(" + ",".join([_local_text(v, children) for v in value]) + ")"
    if isinstance(value, Node):
        children.append(value)
        return "@"
    if isinstance(value, np.dtype):
        return value.str
    if isinstance(value, tuple):
        return "(" + ",".join(_local_text(v, children) for v in value) + ")"
    if isinstance(value, p.ExpressionNode):
        return expression_text(value)
    return repr(value)


_FIELDS: dict = {}       # dataclass type -> its field names, in order


def field_names(cls) -> tuple:
    """``dataclasses.fields(cls)``'s names, looked up once per class (a
    node's fields are read for each node made)."""
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in fields(cls))
    return names


_LAST_TEXT = (None, "")     # (expression, its text): made once for a node's key and digest


def expression_text(e) -> str:
    """A pymbolic expression written out in full, with the type of every
    constant: pymbolic's ``repr`` elides what lies deeper than a few levels
    (``Call(..., (...,))``), so two expressions that differ only there had
    one digest, and one program key (sort and descending sort)."""
    global _LAST_TEXT
    last = _LAST_TEXT
    if last[0] is e:
        return last[1]
    text = _expression_text(e)
    _LAST_TEXT = (e, text)
    return text


_VARIABLE_TEXT: dict = {}       # name -> the text of Variable(name) (index, binding, function)


def _expression_text(e) -> str:
    t = type(e)
    if t is p.Variable:
        text = _VARIABLE_TEXT.get(e.name)
        if text is None:
            text = f"Variable({_expression_text(e.name)})"
            if len(_VARIABLE_TEXT) < 4096:
                _VARIABLE_TEXT[e.name] = text
        return text
    if t is tuple:
        return "(" + ",".join([_expression_text(a) for a in e]) + ")"
    if isinstance(e, p.ExpressionNode):     # pymbolic's nodes are dataclasses
        return (t.__name__ + "(" +
                ",".join([_expression_text(getattr(e, f)) for f in field_names(t)])
                + ")")
    if isinstance(e, tuple):
        return "(" + ",".join([_expression_text(a) for a in e]) + ")"
    if isinstance(e, np.generic):
        return f"{e.dtype.str}:{e!r}"
    return f"{type(e).__name__}:{e!r}"


def _digest_below(root):
    """Make the digests of ``root`` and of the nodes below it that have none,
    children first (an explicit stack: no recursion along a chain)."""
    stack = [(root, iter(root.children()))]
    seen = {id(root)}
    while stack:
        node, it = stack[-1]
        for child in it:
            if id(child) not in seen and "_digest" not in child.__dict__:
                seen.add(id(child))
                stack.append((child, iter(child.children())))
                break
        else:
            stack.pop()
            local, whole = _digests(node)
            object.__setattr__(node, "_local_digest", local)
            object.__setattr__(node, "_digest", whole)


def _digest_of(node, name):
    """The digest ``name`` of ``node``, made (with those below it) if new."""
    found = node.__dict__.get(name)
    if found is None:
        _digest_below(node)
        found = node.__dict__[name]
    return found


def _digests(node) -> tuple:
    """``(local_digest, digest)`` of a new node (see the module docstring)."""
    children, h = [], hashlib.sha256(type(node).__name__.encode())
    for f in field_names(type(node)):
        if f not in node.value_fields:
            h.update(b"\0" + f.encode() + b"=")
            h.update(_local_text(getattr(node, f), children).encode())
    local = h.hexdigest()
    whole = hashlib.sha256(local.encode())
    for child in children:
        whole.update(child.digest.encode())
    whole.update(node.value_digest().encode())
    return local, whole.hexdigest()


@dataclass(frozen=True, eq=False, repr=False)
class Node:
    """Base node: ``shape`` and ``dtype`` are known when it is built."""
    shape: tuple
    dtype: np.dtype

    # -- interning --------------------------------------------------------
    @classmethod
    def make(cls, *args, **kwargs):
        node = cls(*args, **kwargs)
        check_shape_size(node.shape, node.dtype)
        key = (cls.__name__,) + node._intern_key()
        with _INTERN_LOCK:
            existing = _INTERN.get(key)
            if existing is not None:
                return existing
            _INTERN[key] = node
        object.__setattr__(node, "_hash", hash(key))
        object.__setattr__(node, "_reads_placeholder", isinstance(node, Placeholder) or any(
            c.reads_placeholder for c in node.children()))
        return node

    @property
    def reads_placeholder(self) -> bool:
        """Whether a placeholder lies below (or is) this node: made with the
        node from its children's, so a graph break asks it without a walk."""
        found = self.__dict__.get("_reads_placeholder")
        if found is None:           # a node made without ``make``
            found = any(isinstance(n, Placeholder) for n in topological_order([self]))
            object.__setattr__(self, "_reads_placeholder", found)
        return found

    # digests are made when first asked for (a compile's cache key, a pickle),
    # not with every node: a loop of column writes makes a concatenation of all
    # the columns per write, and hashing each one's children would make tracing
    # quadratic in the loop's length
    @property
    def local_digest(self) -> str:
        return _digest_of(self, "_local_digest")

    @property
    def digest(self) -> str:
        return _digest_of(self, "_digest")

    def _intern_key(self):
        return tuple(_key_part(getattr(self, f)) for f in field_names(type(self)))

    # fields holding data values, not structure: out of ``local_digest``
    value_fields = ()

    def value_digest(self) -> str:
        """The data values' part of ``digest`` (a captured array's content)."""
        return ""

    def __hash__(self):
        return self._hash

    def __eq__(self, other):
        # interned: structurally equal nodes are the same object
        return self is other

    def __ne__(self, other):
        return self is not other

    def children(self) -> tuple:
        return ()

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return math.prod(self.shape)          # a Python int: never wraps

    def __repr__(self):
        return f"{type(self).__name__}(shape={self.shape}, dtype={self.dtype})"

    # -- copies and pickles: immutable, interned ------------------------
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        # the DAG below as a flat table, made again through ``make`` when
        # loaded (see ``dag_table``)
        return _node_from_table, (dag_table([self]),)


@dataclass(frozen=True, eq=False, repr=False)
class Placeholder(Node):
    mapper_method = "map_placeholder"
    name: str
    shared: bool = False    # a shared variable's (pa.shared): never a user placeholder


@dataclass(frozen=True, eq=False, repr=False)
class DataWrapper(Node):
    mapper_method = "map_data_wrapper"
    data: Any   # a read-only, C-contiguous numpy.ndarray, or (pa.asarray of another
    #             library's CUDA array) a targets.foreign.CudaView read in place
    content_digest: str

    def _intern_key(self):
        return (self.shape, self.dtype.str, self.content_digest)

    value_fields = ("data", "content_digest")

    def value_digest(self):
        return self.content_digest


@dataclass(frozen=True, eq=False, repr=False)
class IndexLambda(Node):
    """``out[_0, ..., _{n-1}] = expr``.

    ``expr`` is a pymbolic expression.  Value operations are calls such as
    ``add(a, b)`` or ``cast_float32(a)`` whose operands already have the loop
    dtype; index arithmetic inside subscripts uses plain pymbolic integer
    operators.  ``bindings`` maps ``_inK`` to input nodes.  ``op`` is a short
    human-readable label (used by ``repr`` and ``pa.show``).
    """
    mapper_method = "map_index_lambda"
    expr: Any
    bindings: tuple          # ((name, Node), ...)
    op: str

    def children(self):
        kids = self.__dict__.get("_children")      # made once: walks ask often
        if kids is None:
            kids = tuple(n for _, n in self.bindings)
            object.__setattr__(self, "_children", kids)
        return kids

    def reads(self) -> dict:
        """``expr.binding_reads(self.expr)``, made once (shared: not to be
        changed)."""
        found = self.__dict__.get("_reads")
        if found is None:
            from .expr import binding_reads
            found = binding_reads(self.expr)
            object.__setattr__(self, "_reads", found)
        return found

    def _intern_key(self):
        # the expression as exact text: pymbolic's ``==`` calls 1 and 1.0 equal
        return (self.shape, self.dtype.str, expression_text(self.expr),
                tuple((k, id(v)) for k, v in self.bindings), self.op)


# ``IndexLambda.op`` of a value as written into one column or row of an array
# (``x[:, j] = v``: an identity read of ``v``): the recurrence pass finds a
# loop's values by it (``codegen/plan/recurrence.py``)
WRITTEN = "written"


@contextlib.contextmanager
def collector_paused():
    """Python's cyclic garbage collector paused while a large DAG is
    rewritten (the passes over a program's outputs).
    Nodes form no cycles, but each full collection walks every live node,
    and the collector runs one whenever the live objects have grown by a
    quarter: building a DAG of N nodes then costs N log N walks of it (a
    loop of 4000 column writes traced in 8.2 s with the collector, 3.2 s
    without; rolled in 0.63 s and 0.2 s).  Enabled again after, as it was.
    Not while tracing: which arrays a graph break finds alive
    (``polyarray.tracing``) would then include the garbage the collector
    has not freed."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def is_written(n) -> bool:
    """A value as a loop wrote it into one column of an array."""
    return isinstance(n, IndexLambda) and n.op == WRITTEN and len(n.bindings) == 1


def remade(node, replace):
    """``node`` made again with each child (in a field of its own or in a
    tuple field) replaced by ``replace(child)``: the step of every rewrite
    of a DAG, children first."""
    def field(value):
        if isinstance(value, Node):
            return replace(value)
        if type(value) is tuple:
            return tuple(field(v) for v in value)
        return value
    cls = type(node)
    return cls.make(*[field(getattr(node, f)) for f in field_names(cls)])


def without_written(outputs) -> list:
    """``outputs`` with each written value's mark replaced by the value
    (what is left after rolling): the DAG the kernels compute and
    ``pa.show`` prints is the program as written.  O(N)."""
    new = {}

    def get(n):
        return new.get(id(n), n)
    for n in topological_order(outputs):
        if is_written(n):
            new[id(n)] = get(n.bindings[0][1])
        elif any(id(c) in new for c in n.children()):
            new[id(n)] = remade(n, get)
    return [get(o) for o in outputs]


@dataclass(frozen=True, eq=False, repr=False)
class Reduce(Node):
    """Reduce ``array`` over ``axes``; accumulates in ``dtype``.

    For ``argmax``/``argmin`` with several axes the result is the C-order
    flat index within the reduced axes (NumPy's ``axis=None`` behaviour).
    """
    mapper_method = "map_reduce"
    op: str
    array: Node
    axes: tuple

    def children(self):
        return (self.array,)


@dataclass(frozen=True, eq=False, repr=False)
class Einsum(Node):
    """``np.einsum(subscripts, *operands)`` with explicit output subscripts.
    All operands already have ``dtype`` (the result dtype).  ``precision``:
    the least a float32 product may be computed with ("highest": NumPy's;
    "tf32", "bf16": tensor-core inputs, where a target's library has them)."""
    mapper_method = "map_einsum"
    subscripts: str
    operands: tuple
    precision: str = "highest"

    def children(self):
        return self.operands


@dataclass(frozen=True, eq=False, repr=False)
class Reshape(Node):
    mapper_method = "map_reshape"
    array: Node

    def children(self):
        return (self.array,)


@dataclass(frozen=True, eq=False, repr=False)
class Concatenate(Node):
    mapper_method = "map_concatenate"
    arrays: tuple
    axis: int

    def children(self):
        return self.arrays

    def _intern_key(self):
        # the pieces by identity, made at C speed: a loop writing columns makes
        # one concatenation of all of them per write
        return (self.shape, self.dtype.str, tuple(map(id, self.arrays)), self.axis)


@dataclass(frozen=True, eq=False, repr=False)
class Recurrence(Node):
    """Rows computed in order along the first axis: rows ``0 .. lags - 1``
    are ``init``'s (``lags = init.shape[0]``); row ``t >= lags`` is ``expr``
    at ``(t, i1, ...)`` (index variables as an IndexLambda's: ``_0`` is the
    row), where ``_self[_0 - k, _1, ...]`` reads row ``t - k`` at the same
    element (``1 <= k <= lags``).  Each element's rows depend on that
    element's alone, so the elements of a row are computed in parallel and
    the rows in order."""
    mapper_method = "map_recurrence"
    expr: Any
    bindings: tuple          # ((name, Node), ...), as an IndexLambda's
    init: Node
    op: str

    SELF = "_self"

    @property
    def lags(self) -> int:
        return self.init.shape[0]

    def children(self):
        return tuple(n for _, n in self.bindings) + (self.init,)

    def _intern_key(self):
        return (self.shape, self.dtype.str, expression_text(self.expr),
                tuple((k, id(v)) for k, v in self.bindings), id(self.init), self.op)


@dataclass(frozen=True)
class RawKernelSpec:
    """A hand-written kernel (``pa.raw_kernel``): plain values, compared and
    hashed by value, written in full by ``repr`` (so the source text is in
    the digests: another source is another program).  ``params``:
    ``(role, name, C type, dtype str)`` per parameter, role "in", "out" or
    "scalar"; ``reference``: the NumPy target's Python stand-in (by
    identity, never in a digest)."""
    language: str            # "cuda" | "opencl"
    name: str
    source: str
    params: tuple
    reference: Any = field(default=None, repr=False)


@dataclass(frozen=True, eq=False, repr=False)
class RawKernelOutput(Node):
    """Output ``index`` of one launch of ``kernel`` over the buffers of
    ``inputs`` and the ``scalars`` (``((name, value), ...)``), with the
    declared ``outputs`` (``((shape, dtype str), ...)``) and launch sizes
    ``grid`` (work-groups) x ``block`` (work-items per group)."""
    mapper_method = "map_raw_kernel_output"
    kernel: RawKernelSpec
    inputs: tuple
    scalars: tuple
    outputs: tuple
    grid: tuple
    block: tuple
    index: int

    def children(self):
        return self.inputs

    def _intern_key(self):
        # scalars as exact text: 0.0 == -0.0 in Python
        return super()._intern_key() + (repr(self.scalars),)

    @property
    def call(self) -> tuple:
        """What the outputs of one launch share (hashable; inputs by identity)."""
        return (self.kernel, tuple(map(id, self.inputs)), repr(self.scalars), self.outputs,
                self.grid, self.block)


# the library calls that are ``pa.fft``'s transforms (the others: ``pa.linalg``'s)
FFT_OPS = frozenset({"fft", "rfft", "irfft"})


# the library calls that are scans (``cumsum``, ``cumprod``; param ``axis``):
# device targets lower them to kernels (``codegen/plan/kernel_calls.py``)
SCAN_OPS = frozenset({"cumsum", "cumprod"})
# ... and the sorts of one row (``sort``, ``argsort``; param ``descending``)
SORT_OPS = frozenset({"sort", "argsort"})


def library_family(op) -> str:
    """``"fft"``, ``"linalg"``, or ``""`` for the scans and sorts (NumPy's
    top-level names): the namespace a library call's ``op`` is in."""
    return "fft" if op in FFT_OPS else "" if op in SCAN_OPS | SORT_OPS else "linalg"


# op -> build(params, x): the nodes of the frontend's composition that computes
# a scan or sort call on any target (the ops modules register them)
_COMPOSITIONS = {}


def register_composition(op, build):
    _COMPOSITIONS[op] = build


def composition(op, params, x) -> Node:
    """Call ``op`` with ``params`` on ``x`` as the frontend's composition."""
    return _COMPOSITIONS[op](dict(params), x)


def library_name(op) -> str:
    """``fft.rfft``, ``linalg.solve``, ``cumsum``: the routine as the user
    called it."""
    family = library_family(op)
    return f"{family}.{op}" if family else op


@dataclass(frozen=True, eq=False, repr=False)
class LibraryCallOutput(Node):
    """Output ``index`` of one call of the library routine ``op`` (a
    factorization, a solve or a transform: ``codegen``'s library forms say
    which library runs it on each target) on ``inputs``, with ``params`` (``((name,
    value), ...)``, plain values) and the declared ``outputs`` (``((shape,
    dtype str), ...)``).  Inputs are materialized and the call is a step
    between kernels: the work around it fuses into the kernels beside it."""
    mapper_method = "map_library_call_output"
    op: str
    params: tuple
    inputs: tuple
    outputs: tuple
    index: int

    def children(self):
        return self.inputs

    @property
    def call(self) -> tuple:
        """What the outputs of one call share (hashable; inputs by identity)."""
        return (self.op, self.params, tuple(map(id, self.inputs)), self.outputs)

    @property
    def param(self) -> dict:
        return dict(self.params)


def topological_order(outputs) -> list:
    """All nodes reachable from ``outputs``, children before parents.

    Iterative, so deep chains do not hit Python's recursion limit; O(N).
    """
    order, seen = [], set()
    for root in outputs:
        if id(root) in seen:
            continue
        stack = [(root, iter(root.children()))]
        seen.add(id(root))
        while stack:
            node, it = stack[-1]
            for child in it:
                if id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, iter(child.children())))
                    break
            else:
                stack.pop()
                order.append(node)
    return order


def use_counts(order) -> dict:
    """id(node) -> number of distinct consumers within ``order``."""
    counts = {id(n): 0 for n in order}
    for n in order:
        for c in set(map(id, n.children())):
            counts[c] += 1
    return counts


def placeholders(outputs, order=None) -> dict:
    """Placeholder name -> node, in topological order (``order``: that of
    ``outputs``, if already walked).  Two different placeholders of one name
    are refused: a binding could not say which it is for."""
    found = {}
    for node in topological_order(outputs) if order is None else order:
        if isinstance(node, Placeholder):
            seen = found.setdefault(node.name, node)
            if seen is not node:
                raise ValueError(f"two different placeholders are named {node.name!r}: "
                                 f"{_shape_and_dtype(seen)} and {_shape_and_dtype(node)}")
    return found


def _shape_and_dtype(node) -> str:
    return f"shape {tuple(node.shape)}, dtype {np.dtype(node.dtype).name}"


# -- pickling: a DAG as a flat table ---------------------------------------
# A pickled node that kept its fields would come back as a second object,
# not interned (equal nodes no longer the same object: every table keyed by
# node breaks), and pickle would recurse once per level of the DAG.  So a
# DAG crosses as rows ``(type, field values)``, children before parents and
# each child as its row number, and loading makes each row through ``make``.


@dataclass(frozen=True)
class Row:
    """A child node in a ``dag_table``: the number of its row."""
    index: int


def dag_table(outputs, order=None) -> tuple:
    """``(rows, outputs' row numbers)`` for the DAG below ``outputs``
    (``order``: its topological order, if already walked); O(N), no
    recursion per level."""
    order = topological_order(outputs) if order is None else order
    row = {id(n): i for i, n in enumerate(order)}

    def encode(value):
        if isinstance(value, Node):
            return Row(row[id(value)])
        if type(value) is tuple:
            return tuple(encode(v) for v in value)
        return value
    rows = tuple((type(node), tuple(encode(getattr(node, f)) for f in field_names(type(node))))
                 for node in order)
    return rows, tuple(row[id(n)] for n in outputs)


def rebuild_dag(table, rename=None) -> list:
    """The output nodes of a ``dag_table``, each row made again through
    ``make`` (so interned: equal to live nodes, as identity); ``rename``
    (old name -> new) renames shared variables' placeholders."""
    rows, outputs = table
    made = []

    def decode(value):
        if type(value) is Row:
            return made[value.index]
        if type(value) is tuple:
            return tuple(decode(v) for v in value)
        return value
    for cls, values in rows:
        values = decode(values)
        if cls is Placeholder and rename and values[3] and values[2] in rename:
            values = values[:2] + (rename[values[2]],) + values[3:]
        elif cls is DataWrapper and isinstance(values[2], np.ndarray):
            values[2].flags.writeable = False     # loaded arrays are writeable
        made.append(cls.make(*values))
    return [made[i] for i in outputs]


def _node_from_table(table):
    return rebuild_dag(table)[0]
