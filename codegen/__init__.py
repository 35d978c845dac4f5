"""DAG -> fused Loopy kernels (see docs/DESIGN.md for the pipeline).

``lower_program(outputs, target)`` runs the passes in order:

1. ``passes.make_plan``: which nodes are materialized, grouped into kernels
   (``passes/``: materialize, group, fuse_rows);
2. buffer naming (deterministic, in topological order);
3. ``assemble.Assembler``: per group, the policy's kernel form
   (``policy.py``, one table) built by ``forms/``, with its default schedule;
   a group that is an earlier group's code on other buffers launches that
   group's kernels, and a group an earlier program generated takes its code
   (``reuse.py``);
4. ``reuse.generate`` per kernel, joined as loopy joins a merged program:
   one device source, with each kernel's launch sizes.

The result, ``Lowered``, is plain data (plus each kernel's loopy objects
for inspection), so targets can cache it on disk and launch it themselves.
"""
from __future__ import annotations

import contextvars
import logging
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from polyarray.ir import nodes as N

log = logging.getLogger("polyarray.codegen")

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


class BufferSpec(NamedTuple):
    size: int              # elements
    storage: np.dtype      # dtype in device memory (bool is uint8)
    shape: tuple
    dtype: np.dtype        # logical dtype
    role: str              # input | data | temp | output


@dataclass
class KernelInfo:
    """One kernel: plain data (what launches, ``repr`` and ``prog.schedule``
    read; the disk cache keeps it) and its loopy objects (for ``loop_nest()``,
    tuning, raw transforms), which the disk cache does not keep."""
    name: str
    args: tuple            # buffer names, in the kernel's argument order
    gsize: tuple
    lsize: tuple
    form: str                      # a policy.Form's value: elementwise, thread, group, ...
    schedule: tuple = ()           # the schedule steps in force
    rule: str = ""                 # the policy rule that chose the form
    # what its builder knew, plain data: a matmul's M, N, K, batch, split, chunk,
    # operands A and B (argument names, as in its steps); an elementwise kernel's
    # size and shape (the tuner's candidates read them)
    facts: dict = field(default_factory=dict)
    # where the schedule came from: "policy" (the default), "user" or "tuned"
    # (the tuning cache's winner; polyarray.program sets it)
    origin: str = "policy"
    # the materialized nodes its group computes, as positions in the outputs'
    # topological order (``%k`` in pa.show); a group cut into several kernels
    # (split-K's combine, packing, two stages, rows apart) lists them on each
    nodes: tuple = ()
    # the function to launch, where it is not ``name``: a raw kernel's
    # (``codegen/raw.py``: launches of one kernel share its function), or an
    # earlier kernel's that is the same code on other buffers (``reuse.py``)
    entry: str = ""
    # (loopy kernel, callables table); or a function that returns them (after
    # a disk-cache hit: the program is lowered again only when they are
    # asked for); None: stripped for the disk cache
    loopy: object = field(default=None, repr=False, compare=False)
    # the launch grid as loopy gives it in the kernel's integer arguments (a
    # length passed as an argument, ``reuse.lift_offsets``), else ()
    grid: tuple = ()

    @property
    def loopy_kernel(self):
        return self._loopy()[0]

    @property
    def callables(self):
        return self._loopy()[1]

    def _loopy(self):
        if callable(self.loopy):
            self.loopy = self.loopy()
        return self.loopy or (None, None)

    def loop_nest(self) -> str:
        """The loop nest with extents and hardware mapping, as text."""
        from .loopnest import loop_nest
        if self.form == "raw":
            return (f"raw kernel {self.entry}: the user's code, grid {self.gsize} x block "
                    f"{self.lsize}")
        if self.loopy_kernel is None:
            raise ValueError("no loopy kernel here (stripped for the disk cache); "
                             "use prog.kernels, whose kernels lower again on demand")
        return without_loopy_caches(loop_nest)(self.loopy_kernel, self.callables,
                                               self.gsize, self.lsize)

    def __repr__(self):
        from .schedule import format_schedule
        rule = f" [{self.rule}]" if self.rule else ""
        origin = "" if self.origin == "policy" else f" ({self.origin})"
        return (f"<kernel {self.name} ({self.form}{rule}) grid {self.gsize} x block "
                f"{self.lsize} schedule{origin} {format_schedule(self.schedule)}>")


@dataclass
class Lowered:
    source: str
    kernels: list                  # [KernelInfo] in launch order
    buffers: dict                  # name -> BufferSpec
    inputs: dict                   # placeholder name -> buffer name
    data: dict                     # buffer name -> index of the DataWrapper in order
    outputs: list                  # buffer name per output
    index_dtype: str = "int32"
    checks: tuple = ()             # run-time checks, by slot of the error buffer
    scalars: dict = field(default_factory=dict)    # name -> NumPy scalar: kernel
    #                                arguments passed by value (raw kernels' sizes)
    # seconds per stage of the lowering (plan, kernels, codegen), for the log;
    # None in a disk-cache entry
    stages: dict = field(default=None, repr=False, compare=False)


def index_dtype_for(order):
    big = any(n.size > 2**31 - 1 for n in order)
    return np.dtype(np.int64) if big else np.dtype(np.int32)


def data_nodes(order):
    return [n for n in order if isinstance(n, N.DataWrapper)]


def without_loopy_caches(fn):
    """Run ``fn`` with loopy's disk caches off, and the warnings of loopy
    and islpy logged (``logs.routed_warnings``), not shown to users.
    polyarray caches whole programs under its own keys (``program_key``);
    loopy's keys (``LoopyKeyBuilder``) hash ``np.uint64(0)``,
    ``np.float64(0)`` and ``0`` alike, so a kernel that differs from a cached
    one only in a constant's type got the cached kernel's code (a uint64
    product rounded through double: fuzzer seeds 85 and 167)."""
    from functools import wraps

    @wraps(fn)
    def run(*args, **kwargs):
        import loopy as lp
        from .logs import routed_warnings
        with lp.CacheMode(False), routed_warnings(log, "lowering"), collector_paused():
            return fn(*args, **kwargs)
    return run


@contextmanager
def collector_paused():
    """Python's cyclic garbage collector paused (reference counting still
    frees what lowering drops).  Lowering allocates millions of small
    objects; each gen-2 collection they trigger walks every object of the
    process (loopy, islpy, numpy and the user's DAG): a third of the
    lowering of a chain of 2000 ops went there.  A collector someone
    else paused stays paused; concurrent lowerings may re-enable it early
    (harmless: only the saving is lost)."""
    import gc
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _refuse_many_shapes(outputs, budget):
    """``TooManyKernels`` before planning where the program holds more than
    ``budget`` reductions and contractions of distinct shapes (each is a
    kernel root, and kernels of other shapes are other code): durbin's
    ``np.dot(r[:k], y[:k])`` for every ``k`` is refused at once instead of
    after planning its thousands of kernels.  Small reductions that may be
    inlined into others (``policy.INLINE_REDUCTION_MAX`` values) do not
    count."""
    from . import policy
    from .passes.materialize import reduced_count
    shapes = set()
    for n in N.topological_order(outputs):
        if isinstance(n, N.Reduce):
            if reduced_count(n) > policy.INLINE_REDUCTION_MAX:
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
    from . import reuse
    skeletons, raws = {}, 0
    for gi, g in enumerate(plan.groups):
        if g.size == 0:
            continue
        if g.kind == "raw":
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
                  max_grid=None) -> Lowered:
    """Lower output nodes to kernels for a loopy ``target``; ``cpu`` picks
    reduction layouts suited to CPU devices (contiguous per work-item);
    ``schedules`` maps kernel names (or fnmatch patterns) to steps that
    replace those kernels' default schedules; ``max_work_group`` (the
    device's ``(work-items per group, (per axis 0, 1, 2))``) refuses larger
    work-groups with a ScheduleError, ``max_grid`` (work-groups per grid
    axis) larger grids."""
    import loopy as lp
    from .schedule import install_exact_division, install_hash_order, install_ilp_order
    install_ilp_order()         # loopy's ilp loop order, fixed (schedule/ilp_order.py)
    install_hash_order()        # barrier comments, affine terms (schedule/hash_order.py)
    install_exact_division()    # subscript divisions as C computes them (exact_division.py)
    from .cfuncs import storage_dtype
    from .assemble import Assembler
    from .device import Device
    from polyarray.codegen.dtype_checks import check_device_dtypes
    from .passes import make_plan
    from . import raw
    raw_language = raw.language_of(target)

    from time import perf_counter as clock
    t0 = clock()
    check_device_dtypes(outputs)        # float16: a clear error before loopy (cache hits
    #                                     never get here: they were checked when lowered)
    # the CUDA target alone can emit the FP64 tensor cores' mma (inline PTX)
    device = Device(cpu, max_work_group, fp64_mma=isinstance(target, lp.CudaTarget))
    from .assemble import epilogue_fusable
    budget = _KERNEL_BUDGET.get()
    if budget is not None:
        _refuse_many_shapes(outputs, budget)
    plan = make_plan(outputs, device,
                     lambda e, mat, transposed: epilogue_fusable(e, mat, transposed, device))
    stages = {"plan": clock() - t0}     # seconds, logged by the target (logs.log_duration)
    order = plan.order
    idx_dt = index_dtype_for(order)
    buffers, specs, inputs, data = {}, {}, {}, {}

    def add(node, name, role):
        buffers[id(node)] = name
        specs[name] = BufferSpec(node.size, storage_dtype(node.dtype), node.shape, node.dtype,
                                 role)

    for k, n in enumerate(data_nodes(order)):
        add(n, f"data{k}", "data")
        data[f"data{k}"] = k
    for name, n in N.placeholders(outputs, order).items():
        add(n, c_name(name), "input")
        inputs[name] = c_name(name)
    out_names = []
    for k, o in enumerate(outputs):
        if id(o) not in buffers:
            add(o, f"out{k}", "output")
        out_names.append(buffers[id(o)])
    ntemp = 0
    for n in order:
        if id(n) in plan.materialized and id(n) not in buffers:
            add(n, f"t{ntemp}", "temp")
            ntemp += 1

    from .schedule import ScheduleError, normalize
    schedules = {pat: normalize(steps, pat) for pat, steps in (schedules or {}).items()}
    asm = Assembler(plan, buffers, target, idx_dt, device,
                    schedules=schedules, arrays=inputs)
    for name, (size, sdt, *_rest) in specs.items():
        asm.add_buffer(name, size, sdt)
    ngroups = sum(1 for g in plan.groups if g.size > 0)
    if ngroups > 4:
        log.info("polyarray: lowering %d kernels", ngroups)
    t0 = clock()
    from .logs import Progress
    bar = Progress(ngroups, "polyarray: lowering")      # drawn past a second, in a terminal
    # groups that are the same code on other buffers (``reuse.py``) launch the
    # first one's kernels, and a group whose code an earlier program generated
    # takes it; not under a user's schedule, which names kernels and arrays
    from . import reuse
    ctx = reuse.context(target, device, idx_dt) if not schedules else None
    first_of, launches = {}, []     # key -> (group, slots, kernels); per group, in order
    fresh, kept = {}, {}            # group -> (code key, plans, checks, buffers) / GroupCode
    rep = {}                        # group -> its kernels, as its instances launch them
    keys, lifted, budget = _group_keys(plan, buffers, budget, idx_dt) if ctx is not None \
        else ({}, {}, budget)
    scalars = {name: v for lift in lifted.values() for name, v in lift.values.items()}
    for gi, g in enumerate(plan.groups):
        if g.size == 0:
            continue
        bar.step(f"k{gi}")
        plan.building = gi      # values stored by earlier groups are read there
        key = None
        if ctx is not None and g.kind != "raw":
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
        if g.kind == "elementwise":
            asm.elementwise(f"k{gi}_elementwise", g)
        elif g.kind == "rows":
            asm.rows(f"k{gi}_rows", g)
        elif g.kind == "raw":
            raw.build(asm, f"k{gi}_{g.units[0].node.kernel.name}", g)
        elif g.kind == "recurrence":
            asm.recurrence(f"k{gi}_recurrence", g)
        else:
            node = g.units[0].node
            label = node.op if isinstance(node, N.Reduce) else "einsum"
            asm.reduction(f"k{gi}_{label}", node, g.units[1:])
        plan.lifted = None
        plans = asm.kernels[start:]
        if key is not None:
            rep[gi] = plans
            first_of[key] = (gi, slots, plans)
            fresh[gi] = (ckey, plans, tuple(plan.checks[checks_at:]),
                         tuple((n, *asm.buffer_specs[n]) for n in sorted(set(asm.buffer_specs) - had)))
        else:
            fresh[gi] = (None, plans, (), ())
    bar.close()         # (an error leaves it to tqdm's own cleanup)
    plan.building = None
    unmatched = sorted(set(schedules) - asm.matched)
    if unmatched:
        raise ScheduleError(f"the schedule for {unmatched[0]!r} matches no kernel; this "
                            f"program's kernels are: {', '.join(k.name for k in asm.kernels)}")
    for name, (size, sdt) in asm.buffer_specs.items():
        if name not in specs:
            specs[name] = BufferSpec(size, sdt, (size,), sdt, "temp")

    stages["kernels"] = clock() - t0         # policy, forms, schedules
    t0 = clock()
    position = {id(n): k for k, n in enumerate(order)}
    group_nodes = {f"k{gi}": tuple(position[id(u.node)] for u in g.units)
                   for gi, g in enumerate(plan.groups)}
    count = sum(1 for _, plans, _, _ in fresh.values() for kp in plans if kp.tu is not None)
    if count > 4:
        log.info("polyarray: generating code for %d kernels: %s", count,
                 ", ".join(kp.name for _, plans, _, _ in fresh.values() for kp in plans
                           if kp.tu is not None))
    todo = [kp for gi, first, _ in launches if first is None and gi not in kept
            for kp in fresh[gi][1] if kp.tu is not None]
    code_of = {k.name: k for k in reuse.generate_all(todo)}
    generated, built = [], {}       # the generated kernels in order; name -> KernelInfo
    for gi, first, _ in launches:
        if first is not None:
            continue
        if gi in kept:
            group = list(kept[gi].kernels)
        else:
            ckey, plans, checks, extra = fresh[gi]
            group = [code_of[kp.name] for kp in plans if kp.tu is not None]
            for kp in plans:
                if kp.tu is None:
                    built[kp.name] = raw.kernel_info(kp, KernelInfo)
            if ckey is not None:
                reuse.remember(ckey, reuse.GroupCode(tuple(group), checks, extra))
            if gi in rep:                   # its instances take the generated records
                made = {k.name: k for k in group}
                rep[gi][:] = [made.get(kp.name, kp) for kp in rep[gi]]
        generated.extend(group)
        for k in group:
            built[k.name] = KernelInfo(k.name, k.args, reuse.launch_grid(k.gsize, scalars),
                                       k.lsize, k.form, schedule=k.steps, rule=k.rule,
                                       facts=k.facts,
                                       nodes=group_nodes.get(k.name.split("_")[0], ()),
                                       loopy=k.loopy, grid=reuse.symbolic_grid(k.gsize))
    source = ""
    if generated:
        source = _names_comment(inputs) + reuse.device_code(generated)
        if isinstance(target, lp.CudaTarget):
            from .noinline import noinline_large_helpers
            source = noinline_large_helpers(source)
        else:
            from .noinline import noinline_opencl_helpers
            source = noinline_opencl_helpers(source)
        if plan.checks:
            from .checks import writable_error_buffer
            source = writable_error_buffer(source)
    raw_text = raw.source_after(asm.kernels, raw_language)      # raw kernels' own code
    if raw_text:
        source = (source or _names_comment(inputs)) + raw_text
    kernels = _launch_list(launches, built, group_nodes, inputs, scalars)
    from .schedule import check_grid, check_work_groups
    check_work_groups(kernels, max_work_group)      # before any device compiler runs
    check_grid(kernels, max_grid)
    if plan.checks:
        from .checks import ERROR_BUFFER
        n = len(plan.checks)
        specs[ERROR_BUFFER] = BufferSpec(n, np.dtype(np.int64), (n,), np.dtype(np.int64),
                                         "errors")
    used = {a for k in kernels for a in k.args}     # fused row reductions need no buffer
    specs = {n: b for n, b in specs.items() if b.role != "temp" or n in used}
    stages["codegen"] = clock() - t0        # loopy: preprocess, generate code
    return Lowered(source, kernels, specs, inputs, data, out_names, idx_dt.name,
                   tuple(plan.checks), stages=stages,
                   scalars={**scalars, **raw.scalars_of(asm.kernels)})


def _launch_list(launches, built, group_nodes, inputs, scalars):
    """The ``KernelInfo`` of every launch, in order: a group's own kernels,
    or those of the first group of its key on this group's buffers."""
    from .reuse import instance
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


def program_key(outputs) -> str:
    """The compile caches' key of the computation: each node's
    ``local_digest`` (its own structure, children and data values aside) in
    topological order, with its children's positions in that order, then the
    outputs' positions.  So equal DAGs get one key in any process, and a DAG
    that differs in structure or sharing (``a + a`` against ``a + b``) gets
    another; data values are left out (they are passed as kernel arguments),
    so re-running with new data reuses the kernels.  O(N)."""
    import hashlib
    order = N.topological_order(outputs)
    num = {id(n): k for k, n in enumerate(order)}
    h = hashlib.sha256(b"polyarray-program-v2")
    for n in order:
        h.update(f"{n.local_digest}{[num[id(c)] for c in n.children()]}\n".encode())
    h.update(repr([num[id(o)] for o in outputs]).encode())
    return h.hexdigest()
