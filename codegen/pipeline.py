"""``lower_program``: output nodes to ``Lowered`` (one device source, the
kernels in launch order, the buffers), as named steps in pipeline order:

1. ``_install_loopy_fixes``: loopy's code generation made deterministic
   (``loopy_fixes/``: ilp order, hash order, exact division);
2. ``_plan``: dtype checks, the new-kernel budget's early refusal, and
   ``plan.make_plan`` (materialized nodes grouped into kernels), under the
   thresholds given (``thresholds.py``) for the loopy target's C dialect;
3. ``_name_buffers``: every buffer named, deterministically, in topological
   order (data, inputs, outputs, temporaries);
4. ``_build_groups``: per group, the policy's form built by ``forms/`` with
   its schedule (``kernels/assemble.Assembler``); a group that is an earlier group's
   code on other buffers launches that group's kernels, and one an earlier
   program generated takes its code (``kernels/reuse.py``);
5. ``_generate``: loopy's code per new kernel (``reuse.generate_all``) and
   each kernel's launch record;
6. ``_device_source``: the kernels' code joined as loopy joins a merged
   program, with the dialect's edits (``emit/dialect``: helpers compiled
   once, the error buffer);
7. ``_finish``: the launch list, checked against the device's limits.

Each step's seconds go to ``Lowered.stages`` (plan, kernels, codegen).
The steps share the placeholders' device names (``c_name``) and the
new-kernel budget (``kernel_budget``), defined here first."""
from __future__ import annotations

import contextvars
from contextlib import contextmanager
from dataclasses import dataclass
from time import perf_counter as clock

import numpy as np

from polyarray.ir import nodes as N
from .loopy_fixes.caches import log, without_loopy_caches
from .lowered import BufferSpec, KernelInfo, Lowered

# the most kernels one lowering may generate anew (None: any number); pa.jit
# sets it (``kernel_budget``), and runs on the host a function that needs more
_KERNEL_BUDGET = contextvars.ContextVar("polyarray_kernel_budget", default=None)


class TooManyKernels(Exception):
    """A lowering needed more new kernels than ``kernel_budget`` allows:
    code whose every step is a kernel of its own (loops over shrinking
    slices, offsets per iteration), where generating them would cost more
    than it saves."""


@contextmanager
def kernel_budget(limit):
    """Lowerings inside may generate at most ``limit`` distinct kernels
    (kernels that are the same code on other buffers count once); more
    raises ``TooManyKernels`` before any is generated."""
    token = _KERNEL_BUDGET.set(limit)
    try:
        yield
    finally:
        _KERNEL_BUDGET.reset(token)


def c_name(name: str) -> str:
    """The device-code name of the placeholder ``name``: ``p<len>_<name>``.

    Every placeholder gets the prefix, so no user name can be a C, OpenCL or
    CUDA keyword, macro or builtin, and none can equal a generated name
    (kernels ``k<n>_...``, buffers ``data<n>``/``out<n>``/``t<n>``, loops,
    temporaries: none of them starts with ``p`` and a digit).  The length
    makes it injective even against names derived by suffixing (``x_r``,
    ``x_fetch``): ``p1_x_r`` can be no placeholder's name, since a name
    of length 1 is one character.  Names outside C's alphabet (``π``) are
    ``p<len>x_<utf-8 hex>``.  ``prog.source`` lists the mapping."""
    if name.isascii() and name.isidentifier():
        return f"p{len(name)}_{name}"
    # a Python identifier outside C's alphabet (``π``): its UTF-8 bytes in hex
    return f"p{len(name)}x_{name.encode().hex()}"


def index_dtype_for(order):
    big = any(n.size > 2**31 - 1 for n in order)
    return np.dtype(np.int64) if big else np.dtype(np.int32)


def data_nodes(order):
    return [n for n in order if isinstance(n, N.DataWrapper)]


def refuse_beyond_budget(outputs) -> None:
    """``TooManyKernels`` now, where a new-kernel budget is in force
    (``kernel_budget``) and the program's reductions and products of
    distinct shapes exceed it: a target asks before it computes the cache
    key, which digests every node (covariance at NPBench's preset L, 6400
    writes: 2.9 s of the 8.1 s its first call spent compiling before it fell
    back to the host, on a 2-core CPU)."""
    budget = _KERNEL_BUDGET.get()
    if budget is not None:      # (a disk hit outside pa.jit imports no thresholds)
        from .thresholds import current_thresholds
        _refuse_many_shapes(outputs, budget, current_thresholds())


def _refuse_many_shapes(outputs, budget, t):
    """``TooManyKernels`` before planning where the program holds more than
    ``budget`` reductions and contractions of distinct shapes (each is a
    kernel root, and kernels of other shapes are other code): durbin's
    ``np.dot(r[:k], y[:k])`` for every ``k`` is refused at once instead of
    after planning its thousands of kernels.  Small reductions that may be
    inlined into others (``INLINE_REDUCTION_MAX`` values of the thresholds
    ``t``) do not count."""
    from .plan.materialize import reduced_count
    shapes = set()
    for n in N.topological_order(outputs):
        if isinstance(n, N.Reduce):
            if reduced_count(n) > t.INLINE_REDUCTION_MAX:
                shapes.add(("reduce", n.op, n.array.shape, n.axes, n.dtype.str))
        elif isinstance(n, N.Einsum):
            shapes.add(("einsum", n.subscripts, tuple(o.shape for o in n.operands),
                        n.dtype.str))
        else:
            continue
        if len(shapes) > budget:
            raise TooManyKernels(f"this program needs more than {budget} new kernels "
                                 f"(more than {budget} reductions and products of distinct "
                                 "shapes)")


def _group_keys(plan, buffers, budget, index_dtype) -> tuple:
    """``(keys, lifted, budget)``: each group's key and slots, found before any
    kernel is generated, with the constant offsets that differ among groups
    of one skeleton as kernel arguments (``reuse.lift_offsets``);
    ``TooManyKernels`` at once where more than ``budget`` are distinct (a
    group an earlier program generated counts here too: the refusal comes
    before generating the first kernel, not after the budget's worth); the
    budget is raised for a program that repeats its kernels
    (``repeating_budget``)."""
    from .kernels import reuse
    skeletons, raws = {}, 0
    for gi, g in enumerate(plan.groups):
        if g.size == 0:
            continue
        if g.kind in ("raw", "library"):
            raws += 1
        else:
            plan.building = gi
            skeletons[gi] = reuse.group_skeleton(g, plan, buffers)
    plan.building = None
    keys, lifted = reuse.lift_offsets(skeletons, index_dtype)
    distinct = raws + len({k for k, _ in keys.values()})
    budget = repeating_budget(budget, distinct, len(keys) + raws)
    if budget is not None and distinct > budget:
        raise TooManyKernels(f"this program needs more than {budget} new kernels")
    return keys, lifted, budget


# A program whose launches repeat its distinct kernels LAUNCHES_PER_NEW_KERNEL
# times or more on average is a loop of a few step forms, not one whose every
# step is a kernel of its own: it may generate up to REPEATING_MAX_KERNELS.
# NPBench's cavity_flow at preset L: 6333 launches of 71 distinct kernels (the
# first steps' forms differ as the boundary updates settle) went to NumPy on the
# host under a flat 64.
LAUNCHES_PER_NEW_KERNEL = 8
REPEATING_MAX_KERNELS = 256


def repeating_budget(budget, distinct, launches):
    """The new-kernel budget of a program of ``launches`` launches of
    ``distinct`` kernels, under the caller's ``budget`` (None: any)."""
    if budget is None or launches < LAUNCHES_PER_NEW_KERNEL * distinct:
        return budget
    return max(budget, REPEATING_MAX_KERNELS)


@without_loopy_caches
def lower_program(outputs, target, cpu=False, schedules=None, max_work_group=None,
                  max_grid=None, thresholds=None) -> Lowered:
    """Lower output nodes to kernels for a loopy ``target``; ``cpu`` picks
    reduction layouts suited to CPU devices (contiguous per work-item);
    ``schedules`` maps kernel names (or fnmatch patterns) to steps that
    replace those kernels' default schedules; ``max_work_group`` (the
    device's ``(work-items per group, (per axis 0, 1, 2))``) refuses larger
    work-groups with a ScheduleError, ``max_grid`` (work-groups per grid
    axis) larger grids; ``thresholds`` (a ``Thresholds``) the numbers the
    policy, the plan and the emitted source read (default: those in force,
    ``current_thresholds()``)."""
    from .emit.dialect import dialect_of
    from .thresholds import current_thresholds
    _install_loopy_fixes()
    thresholds = current_thresholds() if thresholds is None else thresholds
    dialect = dialect_of(target)        # the C it is written in, asked once
    t0 = clock()
    from .plan.half import singles_for_halves
    from .plan.attention import fused_attention
    from .plan.kernel_calls import lowered_kernel_calls
    device = _device(dialect, cpu, max_work_group)
    program_order = N.topological_order(outputs)    # what KernelInfo.nodes index
    # attention chains, then scans and sorts, as the kernels the policy chooses for them
    # (``between`` keeps the nodes the first pass made alive: ``first`` is keyed by id)
    between, first = fused_attention(outputs, device, thresholds)
    outputs, origin = lowered_kernel_calls(between, device, thresholds)
    origin = {k: first.get(id(v), v) for k, v in origin.items()} | first
    # float16 computed in float32; its large products as the BLAS's half products
    outputs, halves = singles_for_halves(
        outputs, thresholds if dialect.vendor_blas == "cublas" else None)
    plan, budget = _plan(outputs, device, thresholds)
    stages = {"plan": clock() - t0}     # seconds, logged by the target (logs.log_duration)
    idx_dt = index_dtype_for(plan.order)
    names = _name_buffers(plan, outputs, halves)
    t0 = clock()
    groups = _build_groups(plan, names, target, dialect, device, idx_dt, schedules, budget,
                           thresholds)
    stages["kernels"] = clock() - t0         # policy, forms, schedules
    t0 = clock()
    generated, built, group_nodes = _generate(plan, groups, program_order, origin)
    source = _device_source(generated, plan, groups.asm, names.inputs, dialect, thresholds)
    kernels, specs = _finish(plan, groups, names, built, group_nodes, max_work_group,
                             max_grid)
    stages["codegen"] = clock() - t0        # loopy: preprocess, generate code
    from .forms import raw
    return Lowered(source, kernels, specs, names.inputs, names.data, names.out_names,
                   idx_dt.name, tuple(plan.checks), stages=stages,
                   scalars={**groups.scalars, **raw.scalars_of(groups.asm.kernels)})


def _install_loopy_fixes():
    from .loopy_fixes import install
    install()


def _device(dialect, cpu, max_work_group):
    """The device facts the policy reads (``policy.device.Device``)."""
    from .policy.device import Device
    # the FP64 tensor cores' mma is inline PTX: CUDA alone; so is cuSOLVER
    return Device(cpu, max_work_group, fp64_mma=dialect.fp64_mma,
                  vendor_solvers=dialect.vendor_solvers, vendor_fft=dialect.vendor_fft,
                  vendor_blas=dialect.vendor_blas, single_pass_scan=dialect.single_pass_scan,
                  radix_sort=dialect.radix_sort, flash_attention=dialect.flash_attention,
                  row_argmax=dialect.row_argmax)


def _plan(outputs, device, t):
    """``(plan, budget)``: the outputs' plan for the device, under the
    thresholds ``t`` and the new-kernel budget in force
    (``kernel_budget``)."""
    from .kernels.assemble import epilogue_fusable
    from .plan import make_plan
    budget = _KERNEL_BUDGET.get()
    if budget is not None:
        _refuse_many_shapes(outputs, budget, t)
    plan = make_plan(outputs, device,
                     lambda e, mat, transposed: epilogue_fusable(e, mat, transposed, device, t),
                     thresholds=t)
    return plan, budget


@dataclass
class _Buffers:
    """The program's buffers: node id -> name, name -> ``BufferSpec``, the
    inputs (placeholder -> buffer), data arrays (buffer -> position among
    the DataWrappers) and each output's buffer."""
    buffers: dict
    specs: dict
    inputs: dict
    data: dict
    out_names: list


def _name_buffers(plan, outputs, halves=frozenset()) -> _Buffers:
    """``halves``: the outputs that hold float16 bits (returned as float16)."""
    from .emit.cfuncs import storage_dtype
    order = plan.order
    b = _Buffers({}, {}, {}, {}, [])

    def add(node, name, role, dtype=None):
        b.buffers[id(node)] = name
        b.specs[name] = BufferSpec(node.size, storage_dtype(node.dtype), node.shape,
                                   node.dtype if dtype is None else dtype, role)

    for k, n in enumerate(data_nodes(order)):
        add(n, f"data{k}", "data")
        b.data[f"data{k}"] = k
    for name, n in N.placeholders(outputs, order).items():
        add(n, c_name(name), "input")
        b.inputs[name] = c_name(name)
    for k, o in enumerate(outputs):
        if id(o) not in b.buffers:
            add(o, f"out{k}", "output", np.dtype(np.float16) if k in halves else None)
        b.out_names.append(b.buffers[id(o)])
    ntemp = 0
    for n in order:
        if id(n) in plan.materialized and id(n) not in b.buffers:
            add(n, f"t{ntemp}", "temp")
            ntemp += 1
    return b


@dataclass
class _Groups:
    """What ``_build_groups`` made: the assembler (its kernels' plans and
    buffers), the launches in order (``(group, first group of its key or
    None, slots)``), the groups built now (``fresh``: group -> (code key,
    plans, checks, buffers)) and those whose code an earlier program
    generated (``kept``: group -> ``GroupCode``), each key's first group's
    kernels as its instances launch them (``rep``), and the lifted offsets'
    values (``scalars``)."""
    asm: object
    launches: list
    fresh: dict
    kept: dict
    rep: dict
    scalars: dict


def _build_groups(plan, names, target, dialect, device, idx_dt, schedules, budget,
                  t) -> _Groups:
    from .kernels import reuse
    from .kernels.assemble import Assembler
    from .logs import Progress
    from .schedule import ScheduleError, normalize
    schedules = {pat: normalize(steps, pat) for pat, steps in (schedules or {}).items()}
    asm = Assembler(plan, names.buffers, target, idx_dt, device,
                    schedules=schedules, arrays=names.inputs, thresholds=t, dialect=dialect)
    for name, (size, sdt, *_rest) in names.specs.items():
        asm.add_buffer(name, size, sdt)
    ngroups = sum(1 for g in plan.groups if g.size > 0)
    if ngroups > 4:
        log.info("polyarray: lowering %d kernels", ngroups)
    bar = Progress(ngroups, "polyarray: lowering")      # drawn past a second, in a terminal
    # groups that are the same code on other buffers (``kernels/reuse.py``) launch the
    # first one's kernels, and a group whose code an earlier program generated
    # takes it; not under a user's schedule, which names kernels and arrays
    ctx = reuse.context(target, device, idx_dt, t) if not schedules else None
    first_of, launches = {}, []     # key -> (group, slots, kernels); per group, in order
    fresh, kept = {}, {}            # group -> (code key, plans, checks, buffers) / GroupCode
    rep = {}                        # group -> its kernels, as its instances launch them
    keys, lifted, budget = _group_keys(plan, names.buffers, budget, idx_dt) \
        if ctx is not None else ({}, {}, budget)
    scalars = {name: v for lift in lifted.values() for name, v in lift.values.items()}
    for gi, g in enumerate(plan.groups):
        if g.size == 0:
            continue
        bar.step(f"k{gi}")
        plan.building = gi      # values stored by earlier groups are read there
        key = None
        if ctx is not None and g.kind not in ("raw", "library"):
            key, slots = keys[gi]
            if key in first_of:
                launches.append((gi, first_of[key], slots))
                continue
            ckey = reuse.code_key(key, slots, gi, len(plan.checks), ctx)
            code = reuse.lookup(ckey)
            if code is not None:            # generated by an earlier program
                plan.checks.extend(code.checks)
                for name, size, sdt in code.buffers:
                    asm.add_buffer(name, size, sdt)
                kept[gi] = code
                first_of[key] = (gi, slots, code.kernels)
                launches.append((gi, None, None))
                continue
        if budget is not None and len(fresh) >= budget:
            raise TooManyKernels(f"this program needs more than {budget} new kernels")
        start, checks_at, had = len(asm.kernels), len(plan.checks), set(asm.buffer_specs)
        launches.append((gi, None, None))
        plan.lifted = lifted.get(gi)        # offsets read from kernel arguments
        _build_group(asm, gi, g)
        plan.lifted = None
        plans = asm.kernels[start:]
        if key is not None and any(kp.tu is None for kp in plans):
            key = None          # a library call (a cuBLAS product): no code to reuse
        if key is not None:
            rep[gi] = plans
            first_of[key] = (gi, slots, plans)
            fresh[gi] = (ckey, plans, tuple(plan.checks[checks_at:]),
                         tuple((n, *asm.buffer_specs[n])
                               for n in sorted(set(asm.buffer_specs) - had)))
        else:
            fresh[gi] = (None, plans, (), ())
    bar.close()         # (an error leaves it to tqdm's own cleanup)
    plan.building = None
    unmatched = sorted(set(schedules) - asm.matched)
    if unmatched:
        raise ScheduleError(f"the schedule for {unmatched[0]!r} matches no kernel; this "
                            f"program's kernels are: {', '.join(k.name for k in asm.kernels)}")
    for name, (size, sdt) in asm.buffer_specs.items():
        if name not in names.specs:
            names.specs[name] = BufferSpec(size, sdt, (size,), sdt, "temp")
    return _Groups(asm, launches, fresh, kept, rep, scalars)


def _build_group(asm, gi, g):
    """Group ``gi``'s kernels, by its kind (the policy picks the form)."""
    from .forms import raw
    if g.kind == "elementwise":
        asm.elementwise(f"k{gi}_elementwise", g)
    elif g.kind == "rows":
        asm.rows(f"k{gi}_rows", g)
    elif g.kind == "raw":
        raw.build(asm, f"k{gi}_{g.units[0].node.kernel.name}", g)
    elif g.kind == "library":
        from .forms import library
        library.build(asm, f"k{gi}_{g.units[0].node.op}", g)
    elif g.kind == "recurrence":
        asm.recurrence(f"k{gi}_recurrence", g)
    else:
        node = g.units[0].node
        label = node.op if isinstance(node, N.Reduce) else "einsum"
        asm.reduction(f"k{gi}_{label}", node, g.units[1:])


def _generate(plan, groups, program_order, origin):
    """``(generated, built, group_nodes)``: the new kernels' code in launch
    order, each kernel's ``KernelInfo`` by name, and each group's nodes (as
    positions in ``program_order``, the program's DAG: a node the plan's
    rewrites made stands for its ``origin``; one of the float16 rewrite's
    is left out)."""
    from .kernels import reuse
    position = {id(n): k for k, n in enumerate(program_order)}

    def at(node):
        return position.get(id(origin.get(id(node), node)))
    group_nodes = {f"k{gi}": tuple(dict.fromkeys(k for u in g.units
                                                 if (k := at(u.node)) is not None))
                   for gi, g in enumerate(plan.groups)}
    fresh, kept = groups.fresh, groups.kept
    count = sum(1 for _, plans, _, _ in fresh.values() for kp in plans if kp.tu is not None)
    if count > 4:
        log.info("polyarray: generating code for %d kernels: %s", count,
                 ", ".join(kp.name for _, plans, _, _ in fresh.values() for kp in plans
                           if kp.tu is not None))
    todo = [kp for gi, first, _ in groups.launches if first is None and gi not in kept
            for kp in fresh[gi][1] if kp.tu is not None]
    code_of = {k.name: k for k in reuse.generate_all(todo)}
    generated, built = [], {}       # the generated kernels in order; name -> KernelInfo
    for gi, first, _ in groups.launches:
        if first is not None:
            continue
        if gi in kept:
            group = list(kept[gi].kernels)
        else:
            ckey, plans, checks, extra = fresh[gi]
            group = [code_of[kp.name] for kp in plans if kp.tu is not None]
            for kp in plans:
                if kp.tu is None:           # a raw kernel or a library call
                    built[kp.name] = info = kp.kernel_info(KernelInfo)
                    info.nodes = group_nodes.get(f"k{gi}", ())
            if ckey is not None:
                reuse.remember(ckey, reuse.GroupCode(tuple(group), checks, extra))
            if gi in groups.rep:            # its instances take the generated records
                made = {k.name: k for k in group}
                groups.rep[gi][:] = [made.get(kp.name, kp) for kp in groups.rep[gi]]
        generated.extend(group)
        for k in group:
            built[k.name] = KernelInfo(k.name, k.args, reuse.launch_grid(k.gsize, groups.scalars),
                                       k.lsize, k.form, schedule=k.steps, rule=k.rule,
                                       facts=k.facts,
                                       nodes=group_nodes.get(k.name.split("_")[0], ()),
                                       loopy=k.loopy, grid=reuse.symbolic_grid(k.gsize))
    return generated, built, group_nodes


def _device_source(generated, plan, asm, inputs, dialect, t) -> str:
    """The program's one device source: the generated kernels joined, with
    the dialect's edits (helpers compiled once, under the thresholds ``t``;
    the error buffer), then the raw kernels' own code."""
    from .forms import raw
    from .kernels import reuse
    source = ""
    if generated:
        source = _names_comment(inputs) + reuse.device_code(generated)
        source = dialect.noinline(source, t)
        if plan.checks:
            from .emit.runtime_checks import writable_error_buffer
            source = writable_error_buffer(source)
    raw_text = raw.source_after(asm.kernels, dialect)      # raw kernels' own code
    if raw_text:
        source = (source or _names_comment(inputs)) + raw_text
    return source


def _finish(plan, groups, names, built, group_nodes, max_work_group, max_grid):
    """``(kernels, specs)``: every launch's ``KernelInfo``, checked against the
    device's limits before any device compiler runs, and the buffers the
    launches use (with the run-time checks' error buffer)."""
    from .schedule import check_grid, check_work_groups
    kernels = _launch_list(groups.launches, built, group_nodes, names.inputs, groups.scalars)
    check_work_groups(kernels, max_work_group)      # before any device compiler runs
    check_grid(kernels, max_grid)
    specs = names.specs
    if plan.checks:
        from .emit.runtime_checks import ERROR_BUFFER
        n = len(plan.checks)
        specs[ERROR_BUFFER] = BufferSpec(n, np.dtype(np.int64), (n,), np.dtype(np.int64),
                                         "errors")
    used = {a for k in kernels for a in k.args}     # fused row reductions need no buffer
    return kernels, {n: b for n, b in specs.items() if b.role != "temp" or n in used}


def _launch_list(launches, built, group_nodes, inputs, scalars):
    """The ``KernelInfo`` of every launch, in order: a group's own kernels,
    or those of the first group of its key on this group's buffers."""
    from .kernels.reuse import instance
    users = {c: u for u, c in inputs.items()}
    by_group = {}
    for name, info in built.items():
        by_group.setdefault(name.split("_")[0], []).append(info)
    kernels = []
    for gi, first, slots in launches:
        if first is None:
            kernels.extend(by_group.get(f"k{gi}", ()))
            continue
        fgi, fslots, kps = first
        args = dict(zip(fslots, slots))
        for kp in kps:
            args.update({a: args[b] + a[len(b):] for a, b in (kp.aliases or {}).items()
                         if b in args})
        names = {users.get(a, a): users.get(b, b) for a, b in args.items()}
        for kp in kps:
            name = f"k{gi}" + kp.name[len(f"k{fgi}"):]
            kernels.append(instance(built[kp.name], name, args, names,
                                    group_nodes.get(f"k{gi}", ()), scalars))
    return kernels


def _names_comment(inputs):
    """A comment naming each placeholder's device-code name."""
    if not inputs:
        return ""
    lines = "".join(f" *   {c:<20} placeholder {n!r}\n" for n, c in sorted(inputs.items()))
    return f"/* polyarray buffers:\n{lines} */\n"
