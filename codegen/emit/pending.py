"""Assignments held back from loopy until outlining has decided.

A loopy instruction costs milliseconds across loopy's passes, and even its
construction (``make_assignment``: a dependency walk of the expression)
and a ``TemporaryVariable`` each cost more than the lowering that produced
them.  An elementwise body that may be outlined (``outline.py``) records
its assignments as ``Pending`` and its scalar temporaries as
``PendingScalar`` instead; outlining then takes them whole (one call
instead), or ``realize`` makes exactly the instructions and temporaries
that ``KernelBuilder`` would have made at once, in the same order, with
the same ids and dependencies, so kernels that are not outlined are
byte-identical.
"""
from __future__ import annotations

import numpy as np

import loopy as lp
from loopy.kernel.instruction import make_assignment
from loopy.symbolic import get_dependencies


class PendingScalar:
    """A private scalar temporary of storage dtype ``dtype``."""
    __slots__ = ("dtype",)

    def __init__(self, dtype):
        self.dtype = dtype


class Pending:
    """An assignment ``KernelBuilder.assign`` recorded while deferring:
    ``depends`` are the dependencies it was given, ``writers`` the number
    of temporaries written before it (the writers of those it reads are
    found when it is realized: no later temporary can be among them)."""
    __slots__ = ("assignees", "expression", "id", "within_inames", "depends", "writers",
                 "kw")

    def __init__(self, assignees, expression, id, within_inames, depends, writers, kw):
        self.assignees, self.expression, self.id = assignees, expression, id
        self.within_inames, self.depends, self.writers, self.kw = \
            within_inames, depends, writers, kw

    @property
    def assignee(self):
        return self.assignees[0]

    @property
    def predicates(self):
        return self.kw.get("predicates", frozenset())


def scalar_dtype(kb, name):
    """The storage dtype of ``kb``'s temporary ``name`` if it is a scalar,
    else None."""
    t = kb.temporaries.get(name)
    if type(t) is PendingScalar:
        return t.dtype
    if t is None or t.shape != ():
        return None
    return np.dtype(t.dtype.numpy_dtype)


def temporary_dtype(t):
    """The storage dtype of a temporary, pending or loopy's."""
    return np.dtype(t.dtype if type(t) is PendingScalar else t.dtype.numpy_dtype)


def realize(kb):
    """Make loopy temporaries and instructions of ``kb``'s pending ones, in
    place (the order stays), and stop deferring."""
    kb.deferring = False
    for name, t in list(kb.temporaries.items()):
        if type(t) is PendingScalar:
            kb.temporaries[name] = lp.TemporaryVariable(
                name, dtype=t.dtype, shape=(), address_space=lp.AddressSpace.PRIVATE)
    writer = kb._tmp_writer
    rank = {n: k for k, n in enumerate(writer)}
    for k, insn in enumerate(kb.instructions):
        if type(insn) is Pending:
            deps = set(insn.depends) | {writer[n] for n in get_dependencies(insn.expression)
                                        if rank.get(n, insn.writers) < insn.writers}
            kb.instructions[k] = make_assignment(
                insn.assignees, insn.expression, id=insn.id, within_inames=insn.within_inames,
                depends_on=frozenset(deps), **insn.kw)


__all__ = ["Pending", "PendingScalar", "realize", "scalar_dtype", "temporary_dtype"]
