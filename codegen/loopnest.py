"""``loop_nest``: a kernel's loops, their extents and hardware mapping, and
the statements inside them, in the spirit of Halide's ``print_loop_nest``."""
from __future__ import annotations


def _extent(kern, iname):
    try:
        size = kern.get_iname_bounds(iname, constants_only=True).size
        (_, aff), = size.get_pieces()
        return str(aff.get_constant_val().to_python())
    except Exception:      # noqa: BLE001  (bounds that depend on other loops)
        return "?"


def _tag(kern, iname):
    tags = kern.inames[iname].tags
    return ", ".join(str(t) for t in tags) if tags else "serial"


def _statement(insn, width=72):
    text = f"{', '.join(str(a) for a in insn.assignees)} = {insn.expression}" \
        if hasattr(insn, "expression") else str(insn)
    return text if len(text) <= width else text[:width - 3] + "..."


def loop_nest(knl, callables_table, gsize=(), lsize=()) -> str:
    """The kernel's loop nest as indented text.  Loops mapped to hardware
    axes are listed first (they run in parallel), then the sequential loops
    in the order the linearizer chose, with each statement inside its loops."""
    import loopy as lp
    from loopy.schedule import (Barrier, CallKernel, EnterLoop, LeaveLoop,
                                ReturnFromKernel, RunInstruction)
    kern = knl
    lines = [f"kernel {kern.name}: grid {tuple(gsize)} x block {tuple(lsize)}"]
    axes = {}
    for i in sorted(kern.all_inames()):
        for t in kern.inames[i].tags:
            if str(t)[:2] in ("g.", "l."):
                axes.setdefault(str(t), []).append(i)
    depth = 1
    for axis in sorted(axes):       # g.0 < g.1 < ... < l.0 < l.1 < l.2
        names = ", ".join(f"{i} in [0, {_extent(kern, i)})" for i in axes[axis])
        lines.append("  " * depth + f"parallel {axis}: {names}")
        depth += 1
    lin = lp.get_one_linearized_kernel(kern, callables_table)
    insns = {insn.id: insn for insn in lin.instructions}
    for item in lin.linearization:
        if isinstance(item, EnterLoop):
            lines.append("  " * depth + f"for {item.iname} in [0, {_extent(kern, item.iname)})"
                         f"  [{_tag(kern, item.iname)}]")
            depth += 1
        elif isinstance(item, LeaveLoop):
            depth -= 1
        elif isinstance(item, RunInstruction):
            lines.append("  " * depth + _statement(insns[item.insn_id]))
        elif isinstance(item, Barrier):
            lines.append("  " * depth + f"barrier ({item.synchronization_kind})")
        elif isinstance(item, (CallKernel, ReturnFromKernel)):
            continue
    return "\n".join(lines)
