"""One order for a kernel's ILP loops, in every process.

Loopy 2025.2 takes two decisions about the loops tagged ``ilp`` (and
``vec``) in the iteration order of a Python set of their names, which
follows ``PYTHONHASHSEED``: how they nest (each is a scheduler tier of its
own, ``loopy/schedule/__init__.py``, and ``loop_priority`` is ignored for
them) and in which order they add axes to the temporaries they privatize
(``realize_ilp``).  A register-tiled matmul has two to four ILP loops, so
its source differed between processes (and loopy's disk cache served
whichever a first process wrote).  No input leaves loopy no choice, so
``install`` makes both decisions follow ``in_order``: the ILP loops as
``lp.prioritize_loops`` lists them (``RegisterTile`` lists its own), then
the others by name.
"""
from __future__ import annotations


def in_order(kernel, names):
    """``names`` (ILP or vector loops of ``kernel``) in the order its loop
    priorities list them, then the rest sorted."""
    listed = [n for prio in sorted(kernel.loop_priority) for n in prio if n in names]
    first = tuple(dict.fromkeys(listed))
    return first + tuple(sorted(set(names) - set(first)))


class InOrder(frozenset):
    """A frozenset of names that iterates in a given order."""

    def __new__(cls, names, order):
        self = super().__new__(cls, names)
        self.order = tuple(order)
        return self

    def __iter__(self):
        return iter(self.order)


def realize_ilp(kernel):
    """Loopy's ``realize_ilp``, privatizing over one loop at a time in
    ``in_order``, so the added axes come in that order."""
    from loopy.kernel.data import IlpBaseTag, VectorizeTag, filter_iname_tags_by_type
    from loopy.transform.privatize import privatize_temporaries_with_inames
    names = frozenset(name for name, iname in kernel.inames.items()
                      if filter_iname_tags_by_type(iname.tags, (IlpBaseTag, VectorizeTag)))
    for name in in_order(kernel, names):
        kernel = privatize_temporaries_with_inames(kernel, frozenset([name]))
    return kernel


def _ordered_state(state_cls):
    """Loopy's scheduler state, iterating its ILP and vector loops in
    ``in_order`` (the order in which the scheduler tries to enter them)."""
    class OrderedSchedulerState(state_cls):
        ordered = True

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            for field in ("ilp_inames", "vec_inames"):
                names = getattr(self, field)
                if not isinstance(names, InOrder):
                    object.__setattr__(self, field,
                                       InOrder(names, in_order(self.kernel, names)))

    OrderedSchedulerState.__qualname__ = state_cls.__qualname__
    return OrderedSchedulerState


def install():
    """Make loopy's two ILP-order decisions follow ``in_order`` (idempotent).
    Only orders that loopy left to chance change, so loopy code of others
    in the process stays valid."""
    import loopy.preprocess as preprocess
    import loopy.schedule as schedule
    if not getattr(schedule.SchedulerState, "ordered", False):
        schedule.SchedulerState = _ordered_state(schedule.SchedulerState)
    preprocess.realize_ilp = realize_ilp
