"""The assembler: one loopy kernel per plan group.

For each group it classifies the shape (``classify``), asks the policy for
a form (``policy.choose``), and has that form's builder (``forms/``) emit
the kernel parts; ``finish`` makes the loopy kernel and applies its
schedule: the user's steps for that kernel if any, else the default.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np

import loopy as lp

from polyarray.ir import nodes as N
from ..emit.cfuncs import HELPERS_PREAMBLE, storage_dtype
from ..emit.dialect import dialect_of
from ..emit.runtime_checks import ERROR_BUFFER, callable_for
from ..emit.user_callables import UserCallable
from ..user_functions import is_user_function
from ..emit.outline import RegionCallable, is_region
from ..policy.classify import (Elementwise, Steps, contraction_class, product_class,
                       reduction_class, rows_class, stacked_columns)
from ..policy.device import Device
from ..forms import form_module, reduction_builder
from ..forms.parts import reduction_spec
from ..plan import Group, inlined_shared_run, inlined_terms, materialized_deps
from ..policy import (EPILOGUE_FORMS, Form, choose, reduction_stores_through_epilogue,
                     stores_through_epilogue)
from ..thresholds import current_thresholds
from ..schedule import (KernelContext, ScheduleError, apply_steps, build_options,
                       rename_arrays, user_names)


@dataclass
class KernelPlan:
    name: str
    tu: object
    written: tuple      # buffer names this kernel writes
    form: Form = Form.ELEMENTWISE
    steps: tuple = ()   # the schedule in force
    rule: str = ""      # the policy rule that chose the form
    aliases: dict = None    # kernel argument -> the buffer it names too (``x @ x.T``)
    preprocessed: object = None     # LoopKernel -> LoopKernel, after loopy's preprocessing
    facts: dict = None      # the builder's facts (sizes, operands), arrays named as the user's


class Assembler:
    """Builds all kernels of a plan; collects extra (partial) buffers."""

    def __init__(self, plan, buffers, target, index_dtype, device=Device(), schedules=None,
                 arrays=None, thresholds=None, dialect=None):
        self.arrays = arrays or {}        # placeholder name -> device-code name
        self.device = device              # the facts the policy reads
        self.thresholds = thresholds if thresholds is not None else current_thresholds()
        self.schedules = schedules or {}  # kernel name or pattern -> steps (user's)
        self.matched = set()
        self.plan = plan
        self.buffers = buffers            # id(node) -> name
        self.target = target
        self.dialect = dialect if dialect is not None else dialect_of(target)   # its C
        self.index_dtype = index_dtype
        self.buffer_specs = {}            # name -> (size, storage dtype)
        self.kernels = []
        self.prebuilt = {}                # kernel name -> parts a policy probe built

    def add_buffer(self, name, size, dtype):
        self.buffer_specs[name] = (int(size), storage_dtype(dtype))

    def user_steps(self, name):
        """The user's steps for kernel ``name`` (an exact name beats a
        pattern; among patterns the first in sorted order wins), or None."""
        import fnmatch
        hits = sorted(pat for pat in self.schedules if fnmatch.fnmatchcase(name, pat))
        if not hits:
            return None
        self.matched.update(hits)
        return tuple(rename_arrays(s, self._to_device_names())
                     for s in self.schedules[name if name in hits else hits[0]])

    def _to_device_names(self):
        """Placeholder name -> device name, for the placeholders whose name
        no generated buffer has (``data0`` means the generated buffer, and
        the placeholder ``data0`` is ``p5_data0``): so the mapping is
        reversible and ``prog.schedule`` replays exactly."""
        return {u: c for u, c in self.arrays.items() if u not in self.buffer_specs}

    # -- groups -> forms ------------------------------------------------------
    def elementwise(self, name, group):
        """An elementwise group; a user schedule's build steps (layout,
        elements per item) are facts the policy reads."""
        user = self.user_steps(name)
        requested = build_options(user, Form.ELEMENTWISE, name) if user is not None else None
        cls = Elementwise(group.size, group.units[0].node.shape, requested,
                          probe=lambda: form_module("elementwise").transposed_reads(self, name, group),
                          stacked=stacked_columns(group),
                          shared_run=inlined_shared_run([u.node for u in group.units],
                                                        self.plan.materialized),
                          buffers=len({id(d) for u in group.units
                                       for d in materialized_deps(u.node, self.plan.materialized)}))
        form_module("elementwise").build(self, name, group,
                                         choose(cls, self.device, self.thresholds))
        self.prebuilt.pop(name, None)

    def rows(self, name, group):
        """A ``rows`` group: row reductions and their elementwise readers in
        one kernel, or, where the row-fusion pass set the group ``apart``,
        the reductions and the outputs as separate kernels."""
        rows = form_module("rows")
        reds, outs = rows.split(group)
        if group.apart:
            for k, r in enumerate(reds):
                self.reduction(f"{name}_{k}{r.op}", r)
            self.elementwise(f"{name}_elementwise", outs)
            return
        choice = choose(rows_class(outs.units[0].node.shape, self.user_steps(name) is not None),
                        self.device, self.thresholds)
        rows.build(self, name, group, choice)

    def recurrence(self, name, group):
        """A ``Recurrence``: its rows in order, a work-item per element."""
        node = group.units[0].node
        rows = node.shape[0]
        form_module("recurrence").build(self, name, group,
                                  choose(Steps(node.size // rows if rows else 0, rows),
                                         self.device, self.thresholds))

    def reduction(self, name, node, epilogue=()):
        """A Reduce or Einsum node -> one to four kernels; ``epilogue``: the
        elementwise unit stored instead of the node's own result, by a tiled
        matmul or a reduction form of ``policy.EPILOGUE_FORMS``
        (``plan/epilogue.py`` chose it with the same policy, from the node
        alone: where this kernel's facts choose another form -- a user's
        schedule, one buffer as both operands -- the unit is its own kernel)."""
        spec = reduction_spec(node, self.plan.transposed)
        spec.update(out=self.buffers[id(node)], out_dtype=node.dtype)
        user = self.user_steps(name)
        cls = contraction_class(node, spec, self.plan, self.buffers, user is not None) \
            if isinstance(node, N.Einsum) else _reduce_class(node, spec, self.plan.materialized)
        choice = choose(cls, self.device, self.thresholds)
        if user == () and isinstance(node, N.Einsum):   # no steps: a library call's replay
            plain = choose(replace(cls, scheduled=False), self.device, self.thresholds)
            choice = plain if plain.form == Form.CUBLAS else choice
        if choice.form is None:
            return
        if choice.form == Form.TILED_MATMUL and (not epilogue or "split" not in choice.params):
            return form_module("matmul").build(self, name, node, choice, epilogue)
        if epilogue and choice.form not in EPILOGUE_FORMS:
            self.reduction(name, node)
            self.elementwise(f"{name}_epilogue",
                             Group(list(epilogue), "elementwise", epilogue[0].node.size))
            return
        if choice.form == Form.CUBLAS:      # (what a schedule for it would build: tuning)
            from ..forms import library
            return library.build_product(self, name, node, choice, choose(
                replace(cls, scheduled=True), self.device, self.thresholds))
        if choice.form == Form.MMA_MATMUL:
            return form_module("mma_matmul").build(self, name, node, choice)
        if choice.form == Form.PACKED_MATMUL:
            return form_module("cpu_matmul").build(self, name, node, choice)
        build = reduction_builder(choice.form)
        return build(self, name, spec, choice, epilogue) if epilogue else \
            build(self, name, spec, choice)

    # -- kernel parts -> loopy ----------------------------------------------------
    def finish(self, name, kb, domains, written, steps, form=Form.ELEMENTWISE, rule="",
               shapes=None, construct=None, scheduled=None, aliases=None, facts=None,
               preprocessed=None, index_dtype=None):
        """Make the loopy kernel and apply its schedule: the user's steps for
        this kernel if any, else ``steps`` (the default).  ``construct`` tags
        loops that the construction itself fixes; ``scheduled`` adjusts the
        kernel to the schedule applied.  Buffers are flat unless
        ``shapes`` gives a multi-dimensional view (needed by ``add_prefetch``).
        ``aliases``: extra arguments naming a buffer again; ``facts``: what
        the builder knows that steps read (``KernelContext.facts``);
        ``preprocessed`` adjusts the kernel after loopy's preprocessing
        (realized reductions); ``index_dtype`` replaces the program's index
        type in this kernel."""
        used = set()
        from loopy.symbolic import get_dependencies
        for insn in kb.instructions:
            used |= set(get_dependencies(insn.expression)) | set(insn.assignee_var_names())
        shapes = shapes or {}
        args = [lp.GlobalArg(b, self.buffer_specs[b][1],
                             shape=shapes.get(b, (max(self.buffer_specs[b][0], 1),)),
                             is_input=b not in written, is_output=b in written)
                for b in sorted(used & set(self.buffer_specs))]
        aliases = aliases or {}
        args += [lp.GlobalArg(a, self.buffer_specs[b][1], shape=shapes[a], is_input=True,
                              is_output=False) for a, b in sorted(aliases.items())]
        if ERROR_BUFFER in used:        # read as pa_err[0] by checked helpers, which write it
            args.append(lp.GlobalArg(ERROR_BUFFER, np.int64, shape=(1,), is_input=False,
                                     is_output=True))
        params = getattr(kb, "params", None) or {}      # offsets passed by value
        named = {w for d in domains for w in re.findall(r"\w+", str(d))}
        used |= named & set(params)                                        # lengths
        args += [lp.ValueArg(n, params[n]) for n in sorted(used & set(params))]
        knl = lp.make_kernel(domains, kb.instructions, args + list(kb.temporaries.values()),
                             name=name, target=self.target, lang_version=(2018, 2),
                             index_dtype=index_dtype or self.index_dtype,
                             preambles=[HELPERS_PREAMBLE])
        for f in sorted(kb.functions):
            knl = lp.register_callable(knl, f, UserCallable(f) if is_user_function(f)
                                       else RegionCallable(f) if is_region(f)
                                       else callable_for(f))
        knl = lp.set_options(knl, enforce_array_accesses_within_bounds="no_check")
        if construct is not None:
            knl = construct(knl)
        user = self.user_steps(name)
        if user is not None and form != Form.ELEMENTWISE:
            build_options(user, form, name)         # refuses build steps here
        steps = tuple(user) if user is not None else tuple(steps)
        ctx = KernelContext(name, form, facts or {})
        users = {c: u for u, c in self._to_device_names().items()}
        try:
            knl = apply_steps(knl, steps, ctx)
        except ScheduleError as e:          # name arrays as the user did
            raise ScheduleError(user_names(str(e), users)) from e.__cause__
        if scheduled is not None:
            knl = scheduled(knl)
        # a work-group reduction's result is stored by every work-item (same value)
        # ('ilp' loops, as in register tiles, need loopy's older scheduler)
        kern = knl.default_entrypoint
        knl = knl.with_kernel(kern.copy(silenced_warnings=frozenset(
            kern.silenced_warnings) | {"write_race(*)", "v1_scheduler_fallback"}))
        if user is not None:        # refuse now, naming the kernel, what codegen would refuse
            try:
                lp.generate_code_v2(knl)
            except Exception as e:      # noqa: BLE001
                raise ScheduleError(user_names(f"the schedule {list(steps)} of kernel {name} does not "
                                    f"generate code: {type(e).__name__}: "
                                    f"{str(e).splitlines()[0] if str(e) else ''}", users)) from e
        self.kernels.append(KernelPlan(name, knl, tuple(sorted(written)), form,
                                       tuple(rename_arrays(s, users) for s in steps), rule,
                                       aliases, preprocessed, _user_facts(facts or {}, users)))


def _user_facts(facts, users):
    """``facts`` with the arrays they name (``A``, ``B`` of a matmul) named
    as in the steps the user sees (``users``: device name -> user name)."""
    def rename(v):
        if isinstance(v, str):
            return users.get(v, v)
        if isinstance(v, (tuple, frozenset)):
            return type(v)(rename(x) for x in v)
        return v
    return {k: rename(v) for k, v in facts.items()}


def epilogue_fusable(node, mat, transposed, device, thresholds=None) -> bool:
    """Whether the reduction or contraction ``node`` stores an elementwise
    reader of its result (asked by ``plan/epilogue.py`` before buffers
    exist: the class from the node and the materialized set alone)."""
    if isinstance(node, N.Einsum) and stores_through_epilogue(node, device, thresholds):
        return True
    spec = reduction_spec(node, transposed)
    cls = product_class(node, reduction_class(spec)) if isinstance(node, N.Einsum) else \
        _reduce_class(node, spec, mat)
    return reduction_stores_through_epilogue(cls, device, thresholds)


def _reduce_class(node, spec, mat):
    """The shape class of Reduce ``node`` (``spec``: its flattened view)
    given the materialized node ids ``mat``."""
    return reduction_class(spec, inlined_terms(node.array, mat),
                           sum(d.size for d in materialized_deps(node, mat)),
                           inlined_shared_run([node], mat))


__all__ = ["Assembler", "KernelPlan", "epilogue_fusable"]
