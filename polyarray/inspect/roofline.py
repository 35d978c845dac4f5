"""``profile.plot()``: a roofline of a profile's kernels (matplotlib).

x: arithmetic intensity (estimated FLOP per byte moved), y: achieved
GFLOP/s, both logarithmic; the roofs are the measured copy bandwidth
(``GB/s * intensity``) and each measured FMA peak.  Kernels that compute
nothing (copies, packing) are named in a corner, not drawn.  matplotlib is optional
(``pip install 'polyarray[plot]'``).
"""
from __future__ import annotations

import os


def _figure():
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("profile.plot() needs matplotlib, which is not installed: "
                          "pip install 'polyarray[plot]' (or matplotlib)") from None
    return Figure(figsize=(7, 5), layout="constrained")


def plot(profile, file=None, ax=None):
    """Draw the roofline of ``profile`` on ``ax`` (a new figure by default);
    return the figure, saved to ``file`` (a path or binary file) if given."""
    fig = ax.figure if ax is not None else _figure()
    ax = ax if ax is not None else fig.add_subplot()
    rows = [r for r in profile.rows if r.flops > 0]
    idle = [r.name for r in profile.rows if r.flops == 0]
    xs = [r.intensity for r in rows]
    ys = [r.flop_rate / 1e9 for r in rows]
    positive_x = [x for x in xs if x > 0] or [1.0]
    positive_y = [y for y in ys if y > 0] or [1.0]
    hw = profile.hardware
    if hw is not None and (why := hw.implausible(profile.rows)):
        import warnings
        warnings.warn(f"profile.plot(): the hardware limits look wrong ({'; '.join(why)}); "
                      "the kernels are drawn without a roof", RuntimeWarning, stacklevel=3)
        hw = None
    peaks = dict(hw.peak_flops) if hw is not None else {}
    x_lo = min(positive_x + [1e-2]) / 4
    x_hi = max(positive_x + [1.0]) * 4
    if hw is not None:
        for peak in peaks.values():
            x_hi = max(x_hi, 4 * peak / hw.copy_bandwidth)
    y_lo = min(positive_y) / 10
    y_hi = max(positive_y + [p / 1e9 for p in peaks.values()]) * 2
    if hw is not None:
        y_hi = max(y_hi, hw.copy_bandwidth * x_hi / 1e9 if not peaks else 0)
        bw = hw.copy_bandwidth / 1e9
        top = max(peaks.values()) / 1e9 if peaks else bw * x_hi
        ridge = top / bw
        ax.plot([x_lo, min(ridge, x_hi)], [bw * x_lo, bw * min(ridge, x_hi)], "k-", lw=1.5,
                label=f"copy bandwidth {bw:.0f} GB/s")
        for dtype, peak in sorted(peaks.items()):
            g = peak / 1e9
            ax.plot([g / bw, x_hi], [g, g], "--", lw=1.2, label=f"{dtype} FMA peak {g:.0f} GFLOP/s")
        y_lo = min(y_lo, bw * x_lo)
    for r, x, y in zip(rows, xs, ys):
        px, py = (x if x > 0 else x_lo), (y if y > 0 else y_lo)
        ax.plot([px], [py], "o", ms=7)
        ax.annotate(r.name, (px, py), textcoords="offset points", xytext=(5, 4), fontsize=8)
    if idle:
        ax.text(0.01, 0.01, "no flops, not drawn: " + ", ".join(idle), transform=ax.transAxes,
                fontsize=7, va="bottom")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo, y_hi)
    ax.set_xlabel("arithmetic intensity (FLOP / byte, estimated)")
    ax.set_ylabel("achieved GFLOP/s")
    ax.set_title(f"{profile.target}: {profile.device}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    if hw is not None:
        ax.legend(fontsize=8, loc="lower right")
    if file is not None:
        fig.savefig(os.fspath(file) if isinstance(file, os.PathLike) else file)
    return fig
