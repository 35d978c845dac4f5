"""prog.profile: per-kernel device times tied to the DAG, the table, the
data, pa.show's annotations and Graphviz view, the roofline.  No timed
assertions: times are only checked to be positive and consistent."""
import functools
import io
import json
import re
import sys

import numpy as np
import pytest

import polyarray as pa
from polyarray.ir import nodes as N
from polyarray.inspect.hardware import Hardware, measure

M, K, NN, SIZE = 24, 40, 16, 1000
# given by hand so that the tests measure nothing (measure() is tested alone)
HW = Hardware("test device", 1e13, {"float32": 1e13, "float64": 5e12}, how="given")


def _dag():
    x = pa.placeholder("x", (SIZE,), np.float32)
    y = pa.placeholder("y", (SIZE,), np.float32)
    a = pa.placeholder("a", (M, K), np.float32)
    b = pa.placeholder("b", (K, NN), np.float32)
    return {"e": x * 2.0 + y, "m": a @ b}


def _bindings(prog):
    rng = np.random.default_rng(0)
    return {k: rng.standard_normal(p.shape).astype(np.float32)
            for k, p in prog.placeholders.items()}


@functools.cache
def _profiled(target):
    """One compile and one profile per target for the whole module."""
    prog = pa.compile(_dag(), target=target)
    return prog, prog.profile(**_bindings(prog), repeat=2, hardware=HW)


def _position(prog, node):
    return N.topological_order(prog._outputs).index(node)


def test_rows_cover_every_kernel_with_bytes_flops_and_nodes(target):
    prog, p = _profiled(target)
    outs = prog.outputs
    e, m = outs["e"].node, outs["m"].node
    assert p.target == target and p.repeat == 2 and p.wall > 0 and len(p.walls) == 2
    assert all(r.seconds > 0 and len(r.times) == 2 for r in p.rows), p
    assert p.kernel_seconds == pytest.approx(sum(r.seconds for r in p.rows)) and p.ratio > 0
    if target == "numpy":           # the reference runs nodes: a row per computing node
        assert p.unit == "node"
        order = N.topological_order(prog._outputs)
        assert [r.name for r in p.rows] == [
            f"%{k}" for k, n in enumerate(order)
            if not isinstance(n, (N.Placeholder, N.DataWrapper))]
        assert p.row(f"%{_position(prog, m)}").flops == 2 * M * K * NN
        add = p.row(f"%{_position(prog, e)}")
        assert add.bytes == 3 * SIZE * 4 and add.flops == SIZE
        return
    assert p.unit == "kernel"
    assert [r.name for r in p.rows] == list(prog.kernels)           # launch order
    # the elementwise kernel: x * 2 + y, computed into e; bytes = x, y and e exactly
    (ew,) = [r for r in p.rows if _position(prog, e) in r.nodes]
    mul = e.bindings[0][1]
    assert ew.nodes == (_position(prog, mul), _position(prog, e))
    assert ew.bytes == 3 * SIZE * 4
    assert ew.flops == 2 * SIZE and ew.form == "elementwise"
    assert ew.bound == "memory" and ew.fraction == pytest.approx(ew.bytes / ew.seconds / 1e13)
    # the matrix product: 2 M N K flops, counted once over its kernels (packing: none)
    product = [r for r in p.rows if _position(prog, m) in r.nodes]
    assert sum(r.flops for r in product) == 2 * M * K * NN
    main = [r for r in product if r.flops == 2 * M * K * NN]
    assert len(main) == 1 and main[0].name.endswith("_einsum")
    assert main[0].bound == "compute"       # intensity above this HW's ridge (1 flop/byte)
    buffers = prog._exe.lowered.buffers
    for r in p.rows:                        # each buffer argument once, whole
        info = prog.kernels[r.name]
        assert r.bytes == sum(buffers[a].size * buffers[a].storage.itemsize
                              for a in set(info.args))


def test_table_and_data(target):
    prog, p = _profiled(target)
    text = str(p)
    assert text == repr(p) and "synchronized call" in text and "estimates" in text
    for r in p.rows:
        assert r.name in text and r.labels and all(label in text for label in r.labels)
    d = json.loads(p.to_json())
    assert [r["name"] for r in d["rows"]] == [r.name for r in p.rows]
    assert d["hardware"]["copy_bandwidth"] == 1e13 and d["unit"] == p.unit
    with pytest.raises(KeyError, match="no .* named 'nope'"):
        p.row("nope")
    with pytest.raises(Exception):          # frozen
        p.rows[0].seconds = 1.0


def test_show_annotates_the_dag_and_the_kernels(target):
    prog, p = _profiled(target)
    out = io.StringIO()
    pa.show(prog, profile=p, file=out)
    lines = out.getvalue().splitlines()
    for r in p.rows:
        for k in r.nodes:       # each node line names the kernels that compute it
            assert r.name in lines[k], (k, lines[k])
    if target != "numpy":
        kernel_lines = lines[-len(p.rows):]
        assert all(" us" in line or " ms" in line or " s" in line for line in kernel_lines)
        assert all(f"<kernel {r.name} " in line for r, line in zip(p.rows, kernel_lines))


def _check_dot(text):
    """The Graphviz text's structure: {cluster name: node ids}, every edge
    between declared nodes, braces balanced."""
    assert text.startswith("digraph polyarray {") and text.rstrip().endswith("}")
    assert text.count("{") == text.count("}")
    clusters, current, declared = {}, None, set()
    for line in text.splitlines():
        m = re.match(r"\s*subgraph (cluster_\w+) \{", line)
        if m:
            current = clusters.setdefault(m.group(1), [])
            continue
        if line.strip() == "}":
            current = None
            continue
        m = re.match(r"\s*(n\d+) \[label=", line)
        if m:
            declared.add(m.group(1))
            if current is not None:
                current.append(m.group(1))
        m = re.match(r"\s*(n\d+) -> (n\d+);", line)
        if m:
            assert {m.group(1), m.group(2)} <= declared | {m.group(2)}, line
    edges = re.findall(r"(n\d+) -> (n\d+);", text)
    assert all(a in declared and b in declared for a, b in edges)
    return clusters


def test_dot_has_a_cluster_per_kernel(device_target):
    prog, p = _profiled(device_target)
    out = io.StringIO()
    pa.show(prog, format="dot", profile=p, file=out)
    clusters = _check_dot(out.getvalue())
    groups = {}
    for name, info in prog.kernels.items():     # kernels of one group share a cluster
        groups.setdefault(info.nodes, []).append(name)
    assert sorted(clusters) == sorted(f"cluster_{names[0]}" for names in groups.values())
    e = _position(prog, prog.outputs["e"].node)
    (ew,) = [r.name for r in p.rows if e in r.nodes]
    assert f"n{e}" in clusters[f"cluster_{ew}"]
    for r in p.rows:
        assert f"{r.name}: " in out.getvalue()          # its time in the cluster's label


def test_dot_of_a_plain_expression_clusters_the_plan():
    dag = _dag()
    out = io.StringIO()
    pa.show(dag, format="dot", file=out)
    clusters = _check_dot(out.getvalue())
    assert sorted(clusters) == ["cluster_k0_elementwise", "cluster_k1_einsum"] or \
        sorted(clusters) == ["cluster_k0_einsum", "cluster_k1_elementwise"], clusters
    with pytest.raises(ValueError, match="format must be one of"):
        pa.show(dag, format="pdf")


def test_images_need_graphviz(monkeypatch, tmp_path):
    import shutil
    monkeypatch.setitem(sys.modules, "graphviz", None)      # not installed
    monkeypatch.setattr(shutil, "which", lambda name: None)  # no dot program
    with pytest.raises(ImportError, match=r"polyarray\[graphviz\]"):
        pa.show(_dag()["e"], format="svg", file=tmp_path / "dag.svg")


def test_plot_draws_a_roofline(device_target, tmp_path):
    pytest.importorskip("matplotlib", reason="profile.plot() needs matplotlib (the plot extra)")
    prog, p = _profiled(device_target)
    fig = p.plot(file=tmp_path / "roofline.png")
    assert (tmp_path / "roofline.png").stat().st_size > 0
    (ax,) = fig.axes
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    labels = {t.get_text() for t in ax.texts}
    assert {r.name for r in p.rows if r.flops} <= labels
    assert all(r.name in " ".join(labels) for r in p.rows)     # copies: named in a corner


def test_plot_without_matplotlib_says_what_to_install(monkeypatch):
    prog, p = _profiled("numpy")
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r"polyarray\[plot\]"):
        p.plot()


def test_bad_bindings_raise_before_anything_runs(target):
    prog, _ = _profiled(target)
    good = _bindings(prog)
    evaluated = getattr(prog._exe, "nodes_evaluated", None)     # the NumPy target counts
    with pytest.raises(TypeError, match="missing binding for placeholder 'y'"):
        prog.profile(**{k: v for k, v in good.items() if k != "y"}, hardware=HW)
    with pytest.raises(TypeError, match="unexpected binding 'z'"):
        prog.profile(**good, z=good["x"], hardware=HW)
    with pytest.raises(ValueError, match="wrong shape"):
        prog.profile(**dict(good, x=good["x"][:10]), hardware=HW)
    with pytest.raises(TypeError, match="wrong dtype"):
        prog.profile(**dict(good, x=good["x"].astype(np.float64)), hardware=HW)
    with pytest.raises(ValueError, match="repeat must be a positive integer"):
        prog.profile(**good, repeat=0, hardware=HW)
    assert getattr(prog._exe, "nodes_evaluated", None) == evaluated


def test_hardware_is_measured_once():
    hw = measure("numpy")
    assert hw.copy_bandwidth > 0 and hw.peak("float32") is None and measure("numpy") is hw
    assert "GB/s" in str(hw)
    assert HW.peak(np.float64) == 5e12 and HW.peak(np.int32) == 1e13


def test_compile_progress_bar_only_in_a_terminal(monkeypatch):
    from polyarray.codegen.logs import Progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True
    assert Progress(10, "polyarray: lowering").bar is None      # pytest's stderr: no terminal
    monkeypatch.setattr(sys, "stderr", Terminal())
    assert Progress(1, "polyarray: lowering").bar is None       # one kernel: no bar
    pytest.importorskip("tqdm", reason="the bar needs tqdm (the progress extra)")
    bar = Progress(10, "polyarray: lowering")
    assert bar.bar is not None and bar.bar.delay == 1.0         # drawn past a second only
    bar.step("k0")
    bar.close()


def test_the_modules_shadow_no_function():
    """A submodule's import binds its name on the package: none may be a
    function's (a module ``polyarray/dot.py`` would replace ``pa.dot``)."""
    import importlib
    names = ("hardware", "profiling", "roofline", "dotgraph", "show", "environment")
    for name in names:
        importlib.import_module(f"polyarray.inspect.{name}")
    importlib.import_module("polyarray.testing.checking")
    assert callable(pa.dot) and callable(pa.show) and callable(pa.check)
    from polyarray.api import elementwise, creation
    assert not any(hasattr(elementwise, n) or hasattr(creation, n) for n in names)


def test_implausible_limits_are_said_not_drawn(tmp_path):
    """Limits a measurement got wrong (float32's FMA peak below float64's, a
    kernel far above the copy bandwidth): the profile warns that its
    fractions are not to be trusted, and the plot draws no roof."""
    inverted = Hardware("inverted", 1e13, {"float32": 1e12, "float64": 5e12}, how="given")
    assert "below float64's" in inverted.implausible()[0]
    assert HW.implausible() == []
    prog = pa.compile(_dag(), target="numpy")
    with pytest.warns(RuntimeWarning, match="float32 FMA peak .* below float64's"):
        prog.profile(**_bindings(prog), repeat=2, hardware=inverted)
    slow = Hardware("slow", 1e3, {"float32": 1e13, "float64": 5e12}, how="given")
    with pytest.warns(RuntimeWarning, match="above the copy bandwidth: %"):
        p = prog.profile(**_bindings(prog), repeat=2, hardware=slow)
    assert all(r.fraction > 1.5 for r in p.rows if r.bound == "memory" and r.bytes)


def test_implausible_limits_draw_no_roof(tmp_path):
    pytest.importorskip("matplotlib", reason="profile.plot() needs matplotlib (the plot extra)")
    prog = pa.compile(_dag(), target="numpy")
    slow = Hardware("slow", 1e3, {"float32": 1e13, "float64": 5e12}, how="given")
    with pytest.warns(RuntimeWarning, match="above the copy bandwidth"):
        p = prog.profile(**_bindings(prog), repeat=2, hardware=slow)
    with pytest.warns(RuntimeWarning, match="drawn without a roof"):
        fig = p.plot(tmp_path / "roof.png")
    assert not any("bandwidth" in (t.get_label() or "") for t in fig.axes[0].lines)
