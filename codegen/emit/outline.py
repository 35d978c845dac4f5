"""Outlined regions: a kernel's chain of scalar temporaries as one C function.

Loopy spends milliseconds per instruction across its passes (hashing,
type inference, scheduling, code generation), so a fused kernel of 2000
shared values (each a private temporary and an instruction of its own)
took seconds to generate.  Where an elementwise kernel would get more than
``OUTLINE_MIN`` such instructions (of the thresholds the assembler carries,
``thresholds.py``; ``POLYARRAY_OUTLINE_MIN=0`` forces it for tests), its
temporaries and the
values it stores become one function, ``pa_r_<digest>``, printed by
``cprint`` with loopy's own semantics, and loopy sees one call:
``out0[i] = pa_r_...(x[i], y[i])`` (several outputs: ``o1 = f(..., &o2)``
and a store each).  The parameters are the region's array reads and loop
index arithmetic, so every schedule step and loopy pass still sees the
reads; the reads are evaluated before the call, which is safe because
lowering keeps every read in bounds (clamped concatenate pieces and
gathers) wherever it may be computed ahead of a select.

The body's assignments and temporaries are records until this decides
(``pending.py``): a region never becomes loopy instructions at all.

A gather at an index computed in the region (``t[f(v)]``, ``v`` a region
temporary) reads ``t`` through a pointer parameter: loopy's call passes
``t[0]`` (so its passes see a read of ``t``) and ``RegionCallable`` prints
it as ``t``'s address, as it does for the error buffer; the read and its
checked index are printed where loopy would print them.  Anything the
printer does not know (a read of a buffer the region stores, a function of
loopy's own) leaves the kernel as it was.  The
function's name is a digest of its text, so equal DAGs give equal source in
any process, and kernels below the threshold are unchanged.
"""
from __future__ import annotations

import hashlib

import numpy as np
import pymbolic.primitives as p
from loopy.kernel.function_interface import ScalarCallable
from loopy.kernel.instruction import make_assignment
from loopy.types import NumpyType

from polyarray.ir.expr import called_functions
from .runtime_checks import ERROR_BUFFER, callable_for
from .pending import Pending, scalar_dtype, temporary_dtype
from .cprint import Printer, Refused, Types, call_types
from .user_callables import UserCallable
from ..user_functions import is_user_function

PREFIX = "pa_r_"
_REGIONS: dict = {}     # function name -> (C text, called function names)
REFUSED: dict = {}      # why a kernel kept its instructions -> how often (for tests)
OUTLINED = [0]          # kernels outlined in this process (for tests)


def outline(asm, kb, start, within):
    """Outline ``kb.instructions[start:]`` that run in ``within`` (an
    elementwise body) if they hold at least ``asm.thresholds.OUTLINE_MIN``
    temporaries; leaves ``kb`` unchanged where the printer refuses."""
    within = frozenset(within)
    region = [k for k in range(start, len(kb.instructions))
              if kb.instructions[k].within_inames == within]
    insns = [kb.instructions[k] for k in region]
    if not all(type(insn) is Pending and len(insn.assignees) == 1
               and set(insn.kw) <= {"predicates"} for insn in insns):
        return False
    temps = {}
    for insn in insns:
        lhs = insn.assignee
        if isinstance(lhs, p.Variable):
            dt = scalar_dtype(kb, lhs.name)
            if dt is not None:
                temps[lhs.name] = dt
    if any(np.dtype(dt).kind == "c" for dt in temps.values()):
        return False        # complex values stay loopy's (cprint refuses their helpers too)
    if len(temps) < asm.thresholds.OUTLINE_MIN:     # 0 (tests): a kernel without any too
        return False
    try:
        built = _build(asm, kb, insns, temps, within)
    except Refused as e:
        REFUSED[str(e)] = REFUSED.get(str(e), 0) + 1
        return False
    except Exception as e:      # noqa: BLE001  (a printer bug: loopy's code stays)
        if asm.thresholds.outline_forced:       # forced (tests): show it
            raise
        import logging
        logging.getLogger("polyarray.codegen").debug("not outlined: %r", e)
        return False
    taken = set(region)
    keep = [insn for k, insn in enumerate(kb.instructions) if k not in taken]
    kept_stores, new_insns, new_temps, functions = built
    kb.instructions = keep + kept_stores + new_insns
    for name in temps:
        del kb.temporaries[name]
    kb.temporaries.update(new_temps)
    used = set()
    for insn in kb.instructions:
        used.update(called_functions(insn.expression))
    kb.functions = {f for f in kb.functions if f in used} | functions
    OUTLINED[0] += 1
    return True


def _depends_on_temps(temps):
    memo = {}

    def deps(e):
        hit = memo.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        if isinstance(e, p.Variable):
            r = e.name in temps
        elif isinstance(e, p.ExpressionNode):
            r = any(deps(getattr(e, f)) for f in e.__dataclass_fields__)
        elif isinstance(e, tuple):
            r = any(deps(c) for c in e)
        else:
            r = False
        memo[id(e)] = (e, r)
        return r
    return deps


class _Params:
    """The region's parameters: each array read and each piece of loop
    index arithmetic it uses (equal expressions share one), in order of
    first use."""

    def __init__(self, asm, kb, temps, within, index_dtype):
        self.asm, self.kb, self.temps = asm, kb, temps
        # offsets passed as kernel arguments are index arithmetic as loop indices are
        self.inames = set(within) | set(getattr(kb, "params", None) or ())
        self.deps = _depends_on_temps(temps)
        self.written = set()
        self.index_types = Types({}, index_dtype, self.inames)
        self.exprs, self.names = {}, []
        self.dtypes = {}        # parameter -> its expression's dtype (as loopy infers it)
        self.declared = {}      # parameter -> its C type (the argument's)
        self.pointers = {}      # parameter index -> the buffer it points to (gathers)
        self._index = {}

    def _index_expr(self, e):
        """Loop index arithmetic: inames and integer constants only."""
        hit = self._index.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        if isinstance(e, p.Variable):
            r = e.name in self.inames
        elif isinstance(e, (p.Sum, p.Product, p.Min, p.Max)):
            kids = [self._index_expr(c) if not isinstance(c, (int, np.integer)) else None
                    for c in e.children]
            r = all(k is not False for k in kids) and any(kids)
        elif isinstance(e, (p.FloorDiv, p.Remainder)):
            kids = [self._index_expr(c) if not isinstance(c, (int, np.integer)) else None
                    for c in (e.numerator, e.denominator)]
            r = all(k is not False for k in kids) and any(kids)
        else:
            r = False
        self._index[id(e)] = (e, r)
        return r

    def dtype_of(self, e):
        """The dtype of ``e`` as a parameter, or None: it is none."""
        if isinstance(e, p.Subscript):
            if self.deps(e) or not isinstance(e.aggregate, p.Variable):
                return None
            name = e.aggregate.name
            if name == ERROR_BUFFER or name in self.written:
                return None     # a buffer the region stores: loopy orders the read after
            if name in self.asm.buffer_specs:
                return np.dtype(self.asm.buffer_specs[name][1])
            if name in self.kb.temporaries:
                return temporary_dtype(self.kb.temporaries[name])
            return None
        if isinstance(e, p.ExpressionNode) and self._index_expr(e):
            return self.index_types(e)
        return None

    def gather_dtype(self, e):
        """The dtype of ``e``, a read of a flat buffer at an index computed in
        the region (a gather), or None: a buffer the region stores, a
        temporary array or the error buffer stay refused."""
        if not isinstance(e.aggregate, p.Variable) or len(e.index_tuple) != 1:
            return None
        name = e.aggregate.name
        if name == ERROR_BUFFER or name in self.written or name not in self.asm.buffer_specs:
            return None
        return np.dtype(self.asm.buffer_specs[name][1])

    def pointer(self, e):
        """The pointer parameter through which the region reads ``e`` (a
        gather), or None.  Its argument is ``buf[0]`` for loopy (a read of
        the buffer for its dependencies and passes), printed as the
        buffer's address (``RegionCallable``), as for the error buffer."""
        dt = self.gather_dtype(e)
        if dt is None:
            return None
        key = (e.aggregate, "pointer")
        var = self.exprs.get(key)
        if var is None:
            self.pointers[len(self.names)] = e.aggregate.name
            var = self.exprs[key] = p.Variable(f"a{len(self.names)}")
            self.names.append(e.aggregate[0])
            self.dtypes[var.name] = self.declared[var.name] = dt
        return var

    def __call__(self, e, ctx=None):
        """The parameter standing for ``e`` in type context ``ctx`` (made at
        its first use), or None.  Index arithmetic in a float context is a
        parameter of that float type: loopy prints its constants as float
        literals there (``lid(0) + gid(0) * 256.0f``), so C computes it in
        float, and so does the argument loopy prints for it."""
        kind = ctx if ctx in ("f", "d") and not isinstance(e, p.Subscript) else None
        key = (e, kind)
        var = self.exprs.get(key)
        if var is not None:
            return var
        dt = self.dtype_of(e)
        if dt is None:
            return None
        var = self.exprs[key] = p.Variable(f"a{len(self.names)}")
        self.names.append(e)
        self.dtypes[var.name] = np.dtype(dt)
        self.declared[var.name] = np.dtype({"f": np.float32, "d": np.float64}.get(kind, dt))
        return var


def _build(asm, kb, insns, temps, within):
    """The function's text and the instructions that call it."""
    params = _Params(asm, kb, temps, within, asm.index_dtype)
    params.written = {insn.assignee.aggregate.name for insn in insns
                      if isinstance(insn.assignee, p.Subscript)}
    printer = Printer(asm.target, dict(temps), asm.index_dtype, params, within)
    lines, results, kept = [], [], []
    for insn in insns:
        if insn.assignee.__class__ is p.Variable and insn.assignee.name in temps:
            if insn.predicates:
                raise Refused("a predicated temporary")
            dt = temps[insn.assignee.name]
            lines.append(f"{printer.ctype(dt)} {insn.assignee.name} = "
                         f"{printer.value(insn.expression, dt)};")
        elif params.dtype_of(insn.expression) is not None or \
                isinstance(insn.expression, (int, float, np.generic)):
            kept.append(insn)       # a copy of a read, or a constant: stays loopy's
            continue
        else:
            buf = insn.assignee.aggregate.name
            dt = asm.buffer_specs[buf][1]
            results.append((insn, dt, printer.value(insn.expression, dt)))
    called = printer.lowering.called
    if not results:
        raise Refused("no stored value")
    checked = any(call_types(f)[2] for f in called)
    space = asm.dialect.global_space
    args = [f"{space}const {printer.ctype(params.declared[f'a{k}'])} *a{k}"
            if k in params.pointers else f"{printer.ctype(params.declared[f'a{k}'])} a{k}"
            for k in range(len(params.names))]
    if checked:
        args.append(f"{space}long *{ERROR_BUFFER}")
    args += [f"{printer.ctype(dt)} *r{k}" for k, (_, dt, _) in enumerate(results) if k]
    body = [f"  {line}" for line in lines]
    body += [f"  *r{k} = {text};" for k, (_, _, text) in enumerate(results) if k]
    body.append(f"  return {results[0][2]};")
    # forced inline: nvcc kept a 300-op region a real function (a call per element),
    # and ptxas then took 1.7x as long as for loopy's code
    head = f"{asm.dialect.region_qualifier} {printer.ctype(results[0][1])} @NAME@({', '.join(args) or 'void'})"
    text = "\n".join([f"/* polyarray outlined region: {len(lines)} temporaries */", head,
                      "{", *body, "}", ""])
    name = PREFIX + hashlib.sha256(text.encode()).hexdigest()[:16]
    text = text.replace("@NAME@", name)
    _REGIONS[name] = (text, tuple(sorted(called)))
    _TYPES[name] = (tuple(params.declared[f"a{k}"] for k in range(len(params.names))),
                    tuple(dt for _, dt, _ in results), checked, frozenset(params.pointers))

    call_args = tuple(params.names) + ((p.Variable(ERROR_BUFFER)[0],) if checked else ())
    call = p.Call(p.Variable(name), call_args)
    # what the call waits for: the writers of the temporaries its arguments
    # read (the region reads no other temporary: the printer refuses it)
    depends = frozenset().union(*(i.depends for i in insns), kb._deps_of(call_args)) \
        - {i.id for i in insns}
    first = results[0][0]
    if len(results) == 1:
        new = [make_assignment((first.assignee,), call, id=kb.fresh("insn"),
                               within_inames=within, depends_on=depends,
                               predicates=first.predicates)]
        return kept, new, {}, {name}
    import loopy as lp
    outs = [kb.fresh("o") for _ in results]
    new_temps = {o: lp.TemporaryVariable(o, dtype=dt, shape=(),
                                         address_space=lp.AddressSpace.PRIVATE)
                 for o, (_, dt, _) in zip(outs, results)}
    call_id = kb.fresh("insn")
    new = [make_assignment(tuple(p.Variable(o) for o in outs), call, id=call_id,
                           within_inames=within, depends_on=depends)]
    for o, (insn, _, _) in zip(outs, results):
        new.append(make_assignment((insn.assignee,), p.Variable(o), id=kb.fresh("insn"),
                                   within_inames=within, depends_on=frozenset([call_id]),
                                   predicates=insn.predicates))
    return kept, new, new_temps, {name}


_TYPES: dict = {}       # name -> (parameter dtypes, result dtypes, checked, pointer indices)


def _buffer_name(arg, kernel):
    """The buffer a pointer parameter's argument ``buf[0]`` reads; a
    schedule step that replaced it (a prefetch of the buffer) is an error,
    never the address of a copy."""
    name = getattr(getattr(arg, "aggregate", None), "name", None)
    if name not in kernel.arg_dict:
        raise ValueError(f"an outlined region gathers from a buffer that a schedule step "
                         f"replaced by {arg}; schedule this kernel without outlining "
                         f"(policy.using_thresholds(OUTLINE_MIN=...)) or without that step")
    return name


def is_region(name) -> bool:
    return isinstance(name, str) and name.startswith(PREFIX) and name in _REGIONS


class RegionCallable(ScalarCallable):
    """An outlined region for loopy: typed from its parameters and results;
    its definition, after the helpers it calls, is a preamble."""

    def with_types(self, arg_id_to_dtype, clbl_inf_ctx):
        from constantdict import constantdict
        args, results, checked, _ = _TYPES[self.name]
        types = {k: NumpyType(d) for k, d in enumerate(args)}
        if checked:
            types[len(args)] = NumpyType(np.dtype(np.int64))
        for k, d in enumerate(results):
            types[-1 - k] = NumpyType(d)
        return self.copy(arg_id_to_dtype=constantdict(types), name_in_target=self.name), \
            clbl_inf_ctx

    def _pointers(self, call, given, kernel):
        """The addresses of the error buffer and of the gathered buffers
        (``buf``, not ``buf[0]``: ``given`` are the call's parameters as
        loopy's instruction holds them)."""
        args, _, checked, pointers = _TYPES[self.name]
        if not checked and not pointers:
            return call
        params = list(call.parameters)
        if checked:
            params[len(args)] = p.Variable(ERROR_BUFFER)
        for k in pointers:
            params[k] = p.Variable(_buffer_name(given[k], kernel))
        return p.Call(call.function, tuple(params))

    def emit_call(self, expression_to_code_mapper, expression, target):
        args, _, checked, pointers = _TYPES[self.name]
        ecm = expression_to_code_mapper
        from loopy.expression import dtype_to_type_context
        out = [p.Variable(_buffer_name(a, ecm.kernel)) if k in pointers else
               ecm.rec(a, dtype_to_type_context(target, NumpyType(d)), NumpyType(d))
               for k, (a, d) in enumerate(zip(expression.parameters, args))]
        if checked:
            out.append(p.Variable(ERROR_BUFFER))
        return p.Variable(self.name_in_target)(*out)

    def emit_call_insn(self, insn, target, expression_to_code_mapper):
        call, returned = super().emit_call_insn(insn, target, expression_to_code_mapper)
        return self._pointers(call, insn.expression.parameters,
                              expression_to_code_mapper.kernel), returned

    def generate_preambles(self, target):
        text, called = _REGIONS[self.name]
        for f in called:
            clbl = UserCallable(f) if is_user_function(f) else callable_for(f)
            yield from clbl.generate_preambles(target)
        yield (f"60_{self.name}", text)


__all__ = ["PREFIX", "RegionCallable", "is_region", "outline"]
