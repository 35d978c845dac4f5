"""``prog.profile(**bindings)``: where a call's time goes, kernel by kernel.

Each kernel's device time (the median over ``repeat`` profiled calls,
``targets.timing``) is set beside what it moves and computes:

* **bytes**: each buffer argument counted once, whole (``KernelInfo.args``
  and the buffers' sizes and storage dtypes): the least traffic the kernel
  can have, so GB/s is a lower bound of what it achieved;
* **flops**: an *estimate* from the DAG nodes its group computes, inlined
  ones included: one per element for each value operation of an
  elementwise node (casts free, a transcendental one), one per input
  element of a reduction, ``n_operands * prod(extents)`` for a contraction
  (``2*M*N*K`` for a matrix product).  A group cut into several kernels
  counts its flops once, on the kernel that computes it; packing copies
  count none and a split's combine one per partial;
* the fraction of the measured hardware (``polyarray.inspect.hardware``): of the
  copy bandwidth where the kernel's arithmetic intensity (flops / bytes)
  is below the ridge (FMA peak / bandwidth), else of the FMA peak of its
  dtype.

The NumPy target runs nodes, not kernels: its rows are the DAG's nodes.
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass

import numpy as np

from ..ir import nodes as N
from ..ir.expr import call_name, is_call
from ..ir.printing import dag_listing
from .dotgraph import members
from ..testing.timing import format_seconds

_COPIES = ("_pack_a", "_pack_b")                      # forms/cpu_matmul.py
_COMBINES = ("_combine", "_l2", "_c2", "_s2")         # a split's second kernel


@dataclass(frozen=True)
class KernelRow:
    """One kernel (NumPy target: one node) of a profile."""
    name: str
    form: str
    rule: str
    seconds: float                 # median device time
    times: tuple                   # every profiled call's
    bytes: int                     # buffer arguments, each once
    flops: int                     # an estimate (see the module docstring)
    nodes: tuple                   # positions of the nodes it computes, inlined ones
    #                                included (``%k`` of pa.show)
    labels: tuple                  # their pa.show lines
    bound: str | None = None       # "memory" | "compute" | None (no hardware numbers)
    fraction: float | None = None  # of the copy bandwidth or of the FMA peak

    @property
    def bandwidth(self) -> float:
        """Bytes per second achieved."""
        return self.bytes / self.seconds if self.seconds > 0 else 0.0

    @property
    def flop_rate(self) -> float:
        """FLOP per second achieved (of the estimate)."""
        return self.flops / self.seconds if self.seconds > 0 else 0.0

    @property
    def intensity(self) -> float:
        """FLOP per byte moved."""
        return self.flops / self.bytes if self.bytes else 0.0

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d.update(bandwidth=self.bandwidth, flop_rate=self.flop_rate, intensity=self.intensity)
        return d


@dataclass(frozen=True)
class Profile:
    """The result of ``prog.profile``: ``rows`` in launch order, the wall
    time of a synchronized call, and the hardware it is compared with.
    ``str``/``repr`` print the table; ``to_dict``/``to_json`` give the data."""
    target: str
    device: str
    unit: str                      # "kernel" | "node" (the NumPy target)
    rows: tuple
    wall: float                    # median seconds of a synchronized call
    walls: tuple
    repeat: int
    hardware: object = None        # polyarray.inspect.hardware.Hardware, or None

    @property
    def kernel_seconds(self) -> float:
        """The rows' median times, summed."""
        return sum(r.seconds for r in self.rows)

    @property
    def ratio(self) -> float:
        """``kernel_seconds / wall``: near 1 when launches and host work hide
        behind the device's work."""
        return self.kernel_seconds / self.wall if self.wall > 0 else 0.0

    def row(self, name) -> KernelRow:
        for r in self.rows:
            if r.name == name:
                return r
        raise KeyError(f"no {self.unit} named {name!r}; this profile has: "
                       + ", ".join(r.name for r in self.rows))

    def to_dict(self) -> dict:
        hw = dataclasses.asdict(self.hardware) if self.hardware is not None else None
        return {"target": self.target, "device": self.device, "unit": self.unit,
                "wall": self.wall, "walls": list(self.walls), "repeat": self.repeat,
                "kernel_seconds": self.kernel_seconds, "ratio": self.ratio,
                "hardware": hw, "rows": [r.to_dict() for r in self.rows]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), default=lambda o: list(o) if isinstance(o, tuple)
                          else str(o))

    def __str__(self):
        return format_table(self)

    __repr__ = __str__

    def plot(self, file=None, ax=None):
        """A roofline (matplotlib, the ``plot`` extra): arithmetic intensity
        against achieved GFLOP/s, the bandwidth and FMA-peak roofs, a point
        per kernel.  Returns the figure; ``file``: also saved there."""
        from .roofline import plot
        return plot(self, file=file, ax=ax)


# -- estimates ------------------------------------------------------------------
def _value_ops(e) -> int:
    """Value operations of an IndexLambda expression (casts and index
    arithmetic are free)."""
    if is_call(e):
        own = 0 if call_name(e).startswith("cast_") else 1
        return own + sum(_value_ops(a) for a in e.parameters)
    if dataclasses.is_dataclass(e) and not hasattr(e, "aggregate"):    # not a Subscript
        return sum(_value_ops(getattr(e, f.name)) for f in dataclasses.fields(e))
    if isinstance(e, tuple):
        return sum(_value_ops(a) for a in e)
    return 0


def node_flops(node) -> int:
    """Estimated floating-point (or integer) operations to compute ``node``."""
    if isinstance(node, N.IndexLambda):
        return _value_ops(node.expr) * node.size
    if isinstance(node, N.Reduce):
        return node.array.size
    if isinstance(node, N.Einsum):
        extents = {}
        for letters, op in zip(node.subscripts.split("->")[0].split(","), node.operands):
            letters = letters.replace("...", "")     # the named axes are the last ones
            extents.update(zip(letters, op.shape[op.ndim - len(letters):]))
        return max(len(node.operands), 1) * math.prod(extents.values())
    return 0


def _kernel_flops(info, order, units_by_group, counted, buffers):
    if info.name.endswith(_COPIES):
        return 0
    if info.name.endswith(_COMBINES):
        return max((buffers[a].size for a in set(info.args)), default=0)
    if info.nodes in counted:
        return 0
    counted.add(info.nodes)
    units = [order[k] for k in info.nodes]
    return sum(node_flops(n) for n in members(units, units_by_group))


def _bound(hw, flops, nbytes, seconds, dtype):
    if hw is None or seconds <= 0:
        return None, None
    peak = hw.peak(dtype)
    if peak and flops and nbytes and flops / nbytes >= peak / hw.copy_bandwidth:
        return "compute", flops / seconds / peak
    return "memory", nbytes / seconds / hw.copy_bandwidth if nbytes else None


# -- building -------------------------------------------------------------------
def _median(xs):
    return float(np.median(xs)) if xs else 0.0


def profile_program(prog, bindings, repeat=5, hardware=None) -> Profile:
    """``prog.profile``: check the bindings (the usual errors, before
    anything runs), warm up, then ``repeat`` profiled calls and ``repeat``
    timed plain calls.  ``hardware``: a ``polyarray.inspect.hardware.Hardware``
    (None: measured once per process; False: no fractions)."""
    if not isinstance(repeat, int) or repeat < 1:
        raise ValueError(f"repeat must be a positive integer, got {repeat!r}")
    prepared = prog.check_bindings(bindings)
    if prog._state is not None:     # shared variables are read; a profile updates none
        full = dict(bindings, **prog._state.bindings(prog._exe.can_read))
        prepared = prog._state.prepared(prog, bindings, full)
    exe = prog._exe
    bound = exe.profile_bindings(prepared)          # each target's own timing hooks
    exe.wall_time(bound)                            # warm-up: builds, allocates
    calls = [exe.kernel_times(bound) for _ in range(repeat)]
    walls = tuple(exe.wall_time(bound) for _ in range(repeat))
    if hardware is None:
        from .hardware import measure
        hardware = measure(prog.target_name, exe.profile_queue())
    hw = hardware or None
    order = N.topological_order(prog._outputs)
    listing = [f"{name} {typ} = {body}" for name, typ, body, *_ in dag_listing(prog._outputs)]
    if prog.target_name == "numpy" or not hasattr(exe, "lowered"):
        rows = _node_rows(order, listing, calls, hw)
        unit = "node"
    else:
        rows = _kernel_rows(prog, exe, order, listing, calls, hw)
        unit = "kernel"
    device = getattr(exe, "device_desc", None)
    if device not in (None, "?"):
        device = device.split(" / ")[-1]        # the device's name, not the platform's
    else:
        device = hw.device if hw is not None else prog.target_name
    if hw is not None and (why := hw.implausible(rows)):
        import warnings
        warnings.warn(f"prog.profile(): the hardware limits look wrong ({'; '.join(why)}); "
                      "the fractions of them are not to be trusted: pass hardware=Hardware(...) "
                      "with the device's data sheet, or profile again on an idle device",
                      RuntimeWarning, stacklevel=3)
    return Profile(prog.target_name, device, unit, tuple(rows), _median(walls), walls,
                   repeat, hw)


def _kernel_rows(prog, exe, order, listing, calls, hw):
    infos = prog.kernels
    buffers = exe.lowered.buffers
    times = {}
    for call in calls:
        for name, seconds in call:
            times.setdefault(name, []).append(seconds)
    units = {id(order[k]) for info in infos.values() for k in info.nodes}
    position = {id(n): k for k, n in enumerate(order)}
    counted, rows = set(), []
    for info in infos.values():
        # (a raw kernel's scalars are arguments too, passed by value)
        nbytes = sum(buffers[a].size * buffers[a].storage.itemsize for a in set(info.args)
                     if a in buffers)
        flops = _kernel_flops(info, order, units, counted, buffers)
        dtypes = {order[k].dtype for k in info.nodes}
        dtype = np.float64 if np.dtype(np.float64) in dtypes else np.float32
        ts = tuple(times.get(info.name, ()))
        seconds = _median(ts)
        bound, fraction = _bound(hw, flops, nbytes, seconds, dtype)
        computed = sorted(position[id(n)] for n in members([order[k] for k in info.nodes],
                                                           units))
        rows.append(KernelRow(info.name, info.form, info.rule, seconds, ts, nbytes, flops,
                              tuple(computed), tuple(listing[k] for k in computed),
                              bound, fraction))
    return rows


def _node_rows(order, listing, calls, hw):
    rows = []
    for k, node in enumerate(order):
        if isinstance(node, (N.Placeholder, N.DataWrapper)):
            continue
        ts = tuple(call[k][1] for call in calls)
        seconds = _median(ts)
        operands = {id(c): c for c in node.children()}.values()
        nbytes = sum(n.size * n.dtype.itemsize for n in (node, *operands))
        flops = node_flops(node)
        bound, fraction = _bound(hw, flops, nbytes, seconds, node.dtype)
        form = type(node).__name__ + (f" {node.op}" if isinstance(node, (N.IndexLambda,
                                                                          N.Reduce)) else "")
        rows.append(KernelRow(f"%{k}", form, "", seconds, ts, nbytes, flops, (k,),
                              (listing[k],), bound, fraction))
    return rows


# -- the table ------------------------------------------------------------------
def _si(x, unit):
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= scale:
            return f"{x / scale:.1f} {prefix}{unit}"
    return f"{x:.0f} {unit}"


def of_hardware(row) -> str:
    """"0.85 bw" / "0.40 peak" / "-"."""
    if row.fraction is None:
        return "-"
    return f"{row.fraction:.2f} {'bw' if row.bound == 'memory' else 'peak'}"


def format_table(p: Profile) -> str:
    what = "kernel" if p.unit == "kernel" else "node"
    head = (f"profile on {p.target} ({p.device}): {len(p.rows)} {what}"
            f"{'' if len(p.rows) == 1 else 's'}, median of "
            f"{p.repeat} call{'s' if p.repeat > 1 else ''}")
    lines = [head]
    if p.hardware is not None:
        lines.append(f"hardware: {p.hardware}")
    cols = f"{'time':>10} {'bytes':>10} {'flops*':>10} {'GB/s':>8} {'GFLOP/s':>8} {'of hw':>9}"
    width = max([len(what)] + [len(r.name) for r in p.rows])
    lines.append(f"{what:<{width}} {cols}  form [rule], then the nodes it computes")
    for r in p.rows:
        form = r.form + (f" [{r.rule}]" if r.rule else "")
        lines.append(f"{r.name:<{width}} {format_seconds(r.seconds):>10} {_si(r.bytes, 'B'):>10} "
                     f"{_si(r.flops, ''):>10} {r.bandwidth / 1e9:8.2f} "
                     f"{r.flop_rate / 1e9:8.2f} {of_hardware(r):>9}  {form}")
        lines.extend(f"{'':{width + 4}}{label}" for label in r.labels)
    lines.append(f"{what}s {format_seconds(p.kernel_seconds)} of a {format_seconds(p.wall)} "
                 f"synchronized call ({p.ratio:.2f}); * flops are estimates from the DAG nodes")
    return "\n".join(lines)


__all__ = ["KernelRow", "Profile", "format_table", "node_flops",
           "profile_program"]
