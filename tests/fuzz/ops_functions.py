"""Op generators for NumPy's everyday functions built as compositions:
rearrangements (``rot90``, ``flipud``, ``insert``, ``delete``, ``split``,
``append``, ``ediff1d``), order statistics (``median``, ``quantile``,
``partition``, ``lexsort``), counting (``digitize``, ``histogram``),
elementwise compositions (``fmod``, ``gcd``, ``frexp``/``ldexp``,
``select``) and sums over remapped indices (``convolve``, ``correlate``).
Each reads other nodes' values at remapped or gathered indices, or sorts
them, which is where fusion and materialization can go wrong.

Each ``op_*(b)`` takes the ``_Builder`` and returns the new entry or None.
"""
from __future__ import annotations

import numpy as np

from fuzz.builder import _is_int, _is_intlike
from fuzz.dtypes import BOOL


def op_rearrange(b):
    """Index remaps with concrete positions (slices joined, gathers)."""
    a = b.pick(lambda e: e.ndim >= 1)
    if a is None:
        return None
    ax = int(b.rng.integers(a.ndim))
    n = a.shape[ax]
    forms = [f"xp.flipud({a.var})", f"xp.delete({a.var}, {int(b.rng.integers(-n, n)) if n else 0}"
             f", axis={ax})" if n else f"xp.flipud({a.var})",
             f"xp.delete({a.var}, {sorted(set(b.rng.integers(0, max(n, 1), 3).tolist()))}, "
             f"axis={ax})" if n else f"xp.flipud({a.var})",
             f"xp.insert({a.var}, {int(b.rng.integers(0, n + 1))}, {b.scalar(a.dtype, True)!r}"
             f", axis={ax})",
             f"xp.insert({a.var}, {sorted(b.rng.integers(0, n + 1, 2).tolist())}, "
             f"{a.var}[{':, ' * ax}:1], axis={ax})" if n else f"xp.flipud({a.var})",
             f"xp.array_split({a.var}, {int(b.rng.integers(1, 4))}, axis={ax})[0]",
             f"xp.append({a.var}, {a.var}, axis={ax})", f"xp.ediff1d({a.var})"]
    if a.ndim >= 2:
        forms += [f"xp.rot90({a.var}, {int(b.rng.integers(-1, 4))})", f"xp.fliplr({a.var})"]
    code = b.choice(forms)
    if "ediff1d" in code:
        if a.dtype == BOOL:
            return None
        return b.apply(code, [a.var], ("same", []))
    return b.apply(code, [a.var])


def op_order_stat(b):
    """Medians, quantiles and partitions: a sort, then gathers."""
    a = b.pick(lambda e: e.ndim >= 1 and e.val.size > 0 and e.kind in "iuf")
    if a is None:
        return None
    ax = b.axis_arg(a, allow_tuple=True)
    if ax is not None and 0 in [a.shape[x] for x in (ax if isinstance(ax, tuple) else (ax,))]:
        return None
    method = b.choice(["lower", "higher", "nearest", "linear", "midpoint", "inverted_cdf"])
    q = b.choice(["0.5", "0.25", "[0.0, 0.75, 1.0]", "1.0"])
    forms = [(f"xp.median({a.var}, axis={ax!r})", ("inexact",)),
             (f"xp.quantile({a.var}, {q}, axis={ax!r}, method={method!r})",
              ("move",) if method in ("lower", "higher", "nearest", "inverted_cdf")
              else ("inexact",)),
             (f"xp.percentile({a.var}, 50, axis={ax!r}, keepdims=True)", ("inexact",))]
    if a.kind == "f":
        forms.append((f"xp.nanmedian({a.var}, axis={ax!r})", ("inexact",)))
    if b.usable(a, True):
        k = int(b.rng.integers(a.shape[-1]))
        forms.append((f"xp.partition({a.var}, {k})[..., {k}]", ("move",)))
        if a.ndim >= 1:
            forms.append((f"xp.lexsort([{a.var}, -{a.var}])" if a.kind != "u" else
                          f"xp.lexsort([{a.var}])", None))
    code, rule = b.choice(forms)
    return b.apply(code, [a.var], rule or ("move",))


def op_count(b):
    """Bins by binary search, counts by reductions (or a sort of the bins)."""
    a = b.pick(lambda e: e.kind in "iuf" and e.val.size > 0 and b.usable(e, True))
    if a is None:
        return None
    bins = b.choice([3, 8, 40, 1100])
    forms = [f"xp.digitize({a.var}, [-2.0, -0.5, 0.0, 1.5, 4.0])",
             f"xp.digitize({a.var}, [4.0, 1.0, -1.0], right=True)",
             f"xp.histogram({a.var}, {bins}, (-4, 4))[0]",
             f"xp.histogram({a.var}, [-8.0, -1.0, 0.0, 0.25, 8.0])[0]"]
    if a.kind == "f" and np.isfinite(a.val).all():
        forms.append(f"xp.histogram({a.var}, {bins})[0]")
    return b.apply(b.choice(forms), [a.var])


def op_composed(b):
    """``fmod``, ``gcd``/``lcm``, ``frexp``/``ldexp``, ``select``."""
    a = b.pick(lambda e: e.kind in "iuf")
    if a is None:
        return None
    forms = [(f"xp.fmod({a.var}, {b.choice([3, 2.5, -4, 7])})", ("move",)),
             (f"xp.select([{a.var} > 0, {a.var} < -1], [{a.var}, 2 * {a.var}], 7)",
              ("same", [])),
             (f"xp.ldexp({a.var}, {b.choice([-3, 0, 2, 5])})", ("inexact",)),
             (f"xp.frexp({a.var})[0]", ("inexact",)), (f"xp.frexp({a.var})[1]", None)]
    if _is_int(a):
        c = b.partner(a, _is_int)
        other = c.var if c is not None else str(b.scalar(a.dtype, True))
        forms += [(f"xp.gcd({a.var}, {other})", None), (f"xp.lcm({a.var}, {other})", None)]
        deps = [a.var] + ([c.var] if c is not None else [])
    else:
        deps = [a.var]
    code, rule = b.choice(forms)
    if ("fmod" in code or "select" in code) and not b.usable(a, True):
        return None
    used = deps if "gcd" in code or "lcm" in code else [a.var]
    return b.apply(code, used, rule or ("move",))


def op_convolve(b):
    """Sums over the overlap of a remapped index (one reduction)."""
    a = b.pick(lambda e: e.ndim == 1 and e.val.size > 0 and _is_intlike(e) or
               (e.ndim == 1 and e.val.size > 0 and e.kind == "f"))
    if a is None:
        return None
    mode = b.choice(["full", "same", "valid"])
    kernel = b.choice(["[1, -2, 1]", "[0.5, 0.5]", "[3]", "[1, 0, 0, 0, 0, 0, 0, 2]"])
    fn = b.choice(["convolve", "correlate"])
    rule = ("inexact",) if a.kind == "f" or "." in kernel else ("move",)
    if a.kind == BOOL.kind and "." not in kernel:
        rule = ("move",)
    return b.apply(f"xp.{fn}({a.var}, {kernel}, {mode!r})", [a.var], rule)


def op_fft(b):
    """A transform (a library call between kernels), with the crops, pads,
    axis moves and scaling around it that fuse with its neighbours.  Only
    finite values of moderate size: where inputs hold inf or NaN, which
    outputs are NaN depends on the library's order of butterflies, and a
    transform of values near the dtype's limit overflows in some orders."""
    def ok(e):
        if e.ndim < 1 or e.val.size == 0 or e.kind not in "biufc":
            return False
        v = np.abs(np.asarray(e.val, dtype=np.complex128))
        return bool(np.isfinite(v).all()) and float(v.max(initial=0)) < 1e6
    a = b.pick(ok, complex_ok=True)
    if a is None:
        return None
    ax = int(b.rng.integers(-a.ndim, a.ndim))
    n = b.choice(["None", str(max(1, a.shape[ax] + int(b.rng.integers(-2, 3))))])
    norm = b.choice([None, "ortho", "forward"])
    forms = [f"xp.fft.fft({a.var}, n={n}, axis={ax}, norm={norm!r})",
             f"xp.fft.ifft({a.var}, n={n}, axis={ax}, norm={norm!r})",
             f"xp.fft.irfft({a.var}, n={n}, axis={ax}, norm={norm!r})",
             f"xp.fft.hfft({a.var}, axis={ax}, norm={norm!r})",
             f"xp.fft.fftshift({a.var})"]
    if a.kind != "c":
        forms += [f"xp.fft.rfft({a.var}, n={n}, axis={ax}, norm={norm!r})",
                  f"xp.fft.ihfft({a.var}, axis={ax})"]
    if a.ndim >= 2:
        forms += [f"xp.fft.fft2({a.var}, norm={norm!r})", f"xp.fft.ifftn({a.var})"]
        if a.kind != "c":
            forms.append(f"xp.fft.rfftn({a.var}, axes=(0, -1))")
    code = b.choice(forms)
    if "hfft" in code and (a.shape[ax] < 2 and "ihfft" not in code):
        return None             # n = 2 * (m - 1) = 0 points: NumPy's error
    return b.apply(code, [a.var], ("move",) if "shift" in code else ("inexact",))
