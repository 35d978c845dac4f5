"""Schedules: every accepted ``schedule=`` is either right or a
clear ScheduleError raised at ``compile``, before any device compiler runs --
never a bare TypeError, a minutes-long unroll in loopy/PoCL/nvcc, or an
INVALID_WORK_GROUP_SIZE at the call.  (OpenCL on PoCL; CUDA source only, no
GPU needed.)"""
import time

import numpy as np
import pytest

import polyarray as pa
from polyarray import targets
from polyarray.codegen.schedule import (CUDA_MAX_WORK_GROUP, MAX_UNROLL, MAX_UNROLL_HINT,
                                       MAX_UNROLLED)
from polyarray.schedules import (ElementsPerItem, Layout, Prefetch, ScheduleError, Split, Tag,
                                 Tile, Unroll, WorkGroup)

ok, reason = targets.availability("opencl")
needs_opencl = pytest.mark.skipif(not ok, reason=f"opencl: {reason}")
FAST_S = 20          # a refused schedule is refused long before any device compile


def _prog(n=5000):
    x = pa.placeholder("x", (n,), np.float32)
    xv = np.linspace(-3, 3, n, dtype=np.float32)
    return x * 2.0 + 1.0, {"x": xv}, xv * np.float32(2) + np.float32(1)


def _refused(schedule, match, target="opencl", n=5000):
    """Compile with ``schedule``; it must raise ScheduleError matching
    ``match``, quickly.  Returns the message."""
    out, _, _ = _prog(n)
    t0 = time.perf_counter()
    with pytest.raises(ScheduleError, match=match) as info:
        pa.compile(out, target=target, schedule=schedule)
    assert time.perf_counter() - t0 < FAST_S
    return str(info.value)


def _device_limits():
    from polyarray.targets.opencl import select_device
    _, dev, _ = select_device()
    return dev.max_work_group_size, tuple(dev.max_work_item_sizes)


# -- 1. the shape of ``schedule=`` ---------------------------------------------------

@needs_opencl
def test_single_step_value_is_a_one_step_schedule():
    out, binds, want = _prog()
    single = pa.compile(out, target="opencl", schedule={"k0_elementwise": WorkGroup(64)})
    listed = pa.compile(out, target="opencl", schedule={"k0_elementwise": [WorkGroup(64)]})
    assert single.schedule == listed.schedule == {"k0_elementwise": (WorkGroup(64),)}
    assert single.source == listed.source
    np.testing.assert_array_equal(single(**binds), want)
    np.testing.assert_array_equal(listed(**binds), want)
    # with_schedule takes the same forms
    again = pa.compile(out, target="opencl").with_schedule({"k0_*": WorkGroup(64)})
    assert again.schedule == single.schedule
    np.testing.assert_array_equal(again(**binds), want)


@needs_opencl
@pytest.mark.parametrize("schedule,given", [
    ([WorkGroup(64)], r"got list \[WorkGroup\(size=64"),
    ((WorkGroup(64),), r"got tuple \(WorkGroup\(size=64"),
    (WorkGroup(64), r"got the step WorkGroup\(size=64"),
    ("k0_elementwise", r"got str 'k0_elementwise'"),
    (64, r"got int 64"),
], ids=["list", "tuple", "step", "str", "int"])
def test_non_dict_schedule_says_what_is_expected(schedule, given):
    msg = _refused(schedule, given)
    assert "schedule must be a dict mapping kernel names or fnmatch patterns" in msg
    assert "'k0_elementwise': [WorkGroup(128)]" in msg          # an example of the form


@needs_opencl
def test_non_dict_schedule_in_with_schedule():
    out, _, _ = _prog()
    prog = pa.compile(out, target="opencl")
    with pytest.raises(ScheduleError, match="must be a dict mapping kernel names.*got list"):
        prog.with_schedule([WorkGroup(64)])


@needs_opencl
@pytest.mark.parametrize("value,match", [
    (5, r"schedule for kernel k0_elementwise: expected a step or a list of steps .*got int 5"),
    (None, r"schedule for kernel k0_elementwise: expected a step .*got NoneType None"),
    ("WorkGroup(64)", r"kernel k0_elementwise: .*got str 'WorkGroup\(64\)' \(parse_schedule"),
    ({"a": WorkGroup(64)}, r"kernel k0_elementwise: .*got dict \{'a': WorkGroup"),
    ([WorkGroup(64), 7], r"schedule for kernel k0_elementwise: 7 is not a schedule step"),
], ids=["int", "none", "str", "dict", "list-with-int"])
def test_bad_value_names_the_kernel_and_the_value(value, match):
    _refused({"k0_elementwise": value}, match)


@needs_opencl
def test_non_string_key_is_refused():
    _refused({0: [WorkGroup(64)]}, r"schedule keys must be kernel names or fnmatch patterns "
                                   r"\(str\), got int 0")


# -- 2. unrolling bounded before any compiler sees it --------------------------------

@needs_opencl
@pytest.mark.parametrize("steps,match", [
    ([Unroll("i", 5000)], r"Unroll\(iname='i', factor=5000\) does not apply to kernel "
                          r"k0_elementwise: it unrolls loop 'i_inner' \(unr\) 5000 times; "
                          rf"at most {MAX_UNROLL} per loop \(MAX_UNROLL\)"),
    ([Tag("i", "unr")], r"Tag\(iname='i', tag='unr'\) .*loop 'i' \(unr\) 5000 times; "
                        rf"at most {MAX_UNROLL} per loop"),
    ([Split("i", 1000, inner_tag="unr")], r"loop 'i_inner' \(unr\) 1000 times"),
    ([Split("i", 10, outer_tag="unr")], r"loop 'i_outer' \(unr\) 500 times"),
    ([Split("i", 1000, outer_tag="g.0", inner_tag="ilp")], r"loop 'i_inner' \(ilp.unr\) 1000"),
    ([Split("i", 1000, outer_tag="g.0"), Tag("i_inner", "unr")],
     r"Tag\(iname='i_inner', tag='unr'\) .*loop 'i_inner' \(unr\) 1000 times"),
    ([Unroll("i")], rf"full unrolling needs a constant <= {MAX_UNROLL}"),
    ([ElementsPerItem(500)], rf"n=500 unrolls each work-item's loops 500 times; at most "
                             rf"{MAX_UNROLL} \(MAX_UNROLL\)"),
    # each loop within the limit, the nest not: 50 x 50 copies of each instruction
    ([Split("i", 2500, outer_tag="g.0"), Split("i_inner", 50, outer_tag="unr", inner_tag="unr")],
     rf"Split\(iname='i_inner', factor=50.* its unrolled loops i_inner_inner\(50\) x "
     rf"i_inner_outer\(50\) copy instruction '\w+' 2500 times; at most {MAX_UNROLLED} "
     r"copies per instruction \(MAX_UNROLLED\)"),
    # a private prefetch unrolls its copy loops
    ([Split("i", 1000, outer_tag="g.0"), Prefetch("x", ("i_inner",), into="private")],
     r"Prefetch\(.* it unrolls loop '\w+' \(unr\) 1000 times"),
    # a full #pragma unroll over 5000 iterations: 110 s in PoCL
    ([Split("i", 5000, outer_tag="g.0", inner_tag="unr_hint")],
     rf"its unr_hint on loop 'i_inner' asks the device compiler to unroll 5000 iterations; "
     rf"at most {MAX_UNROLL_HINT} \(MAX_UNROLL_HINT\)"),
    ([Tag("i", "unr_hint.1000")], r"unr_hint.1000 on loop 'i' .* 1000 iterations"),
], ids=["Unroll-5000", "Tag-unr", "Split-inner-unr", "Split-outer-unr", "ilp", "Tag-after-split",
        "Unroll-full", "ElementsPerItem", "nested", "private-prefetch", "unr_hint-full",
        "unr_hint.N"])
def test_huge_unrolls_are_refused_fast(steps, match):
    msg = _refused({"k0_elementwise": steps}, match)
    assert "k0_elementwise" in msg


@needs_opencl
@pytest.mark.parametrize("steps", [
    [Unroll("i", MAX_UNROLL)],
    [Split("i", 64, outer_tag="g.0"), Split("i_inner", 8, outer_tag="unr", inner_tag="unr")],
    [Split("i", 2500, outer_tag="g.0", inner_tag="unr_hint.4")],      # a small N: any extent
    [Split("i", 64, inner_tag="l.0"), Tag("i_outer", "unr_hint.8")],     # 79 iterations
], ids=["Unroll-at-limit", "nested-within", "unr_hint.4-over-2500", "unr_hint.8-outer"])
def test_unrolls_within_the_limits_are_right(steps):
    out, binds, want = _prog()
    prog = pa.compile(out, target="opencl", schedule={"k0_elementwise": steps})
    np.testing.assert_array_equal(prog(**binds), want)


# -- 3. work-group size against the device's limits, at compile time ---------------

@needs_opencl
def test_l0_tag_larger_than_the_device_allows():
    total, axes = _device_limits()
    n = max(5000, min(total, axes[0]) + 1)
    msg = _refused({"k0_elementwise": Tag("i", "l.0")}, "kernel k0_elementwise has work-groups",
                   n=n)
    assert str(n) in msg and str(min(total, axes[0])) in msg, msg
    assert "Tag(iname='i', tag='l.0')" in msg          # the schedule in force


@needs_opencl
def test_two_axis_work_group_over_the_total_limit():
    total, axes = _device_limits()
    l0 = min(axes[0], total)
    l1 = total // l0 + 1
    if l1 > axes[1]:
        pytest.skip(f"this device's limits {total}, {axes} allow no such group")
    x = pa.placeholder("x", (l1, l0), np.float32)
    with pytest.raises(ScheduleError, match=rf"kernel k0_elementwise has work-groups of "
                                            rf"{l0 * l1} work-items \({l0} x {l1}\), more than "
                                            rf"the device's limit of {total} per work-group"):
        pa.compile(x + 1.0, target="opencl",
                   schedule={"k0_elementwise": [Layout("axes"), Tile("i0", "i1", l1, l0)]})


@needs_opencl
def test_work_group_at_the_device_limit_runs():
    total, axes = _device_limits()
    n = min(total, axes[0], 1024)
    out, binds, want = _prog(n)
    prog = pa.compile(out, target="opencl", schedule={"k0_elementwise": Tag("i", "l.0")})
    assert prog.kernels["k0_elementwise"].lsize == (n,)
    np.testing.assert_array_equal(prog(**binds), want)


def test_cuda_refuses_a_2048_item_l0_tag_without_a_gpu():
    x = pa.placeholder("x", (2048,), np.float32)
    assert "k0_elementwise" in pa.compile(x * 2.0, target="cuda").source   # codegen only
    with pytest.raises(ScheduleError, match=r"kernel k0_elementwise has work-groups of 2048 "
                                            r"work-items on axis l.0, more than the device's "
                                            r"limit of 1024 on that axis"):
        pa.compile(x * 2.0, target="cuda", schedule={"k0_elementwise": Tag("i", "l.0")})
    y = pa.placeholder("y", (1024,), np.float32)
    ok_prog = pa.compile(y * 2.0, target="cuda", schedule={"k0_elementwise": Tag("i", "l.0")})
    assert ok_prog.kernels["k0_elementwise"].lsize == (1024,)
    assert "k0_elementwise" in ok_prog.source


def test_cuda_refuses_more_than_64_on_the_z_axis():
    assert CUDA_MAX_WORK_GROUP == (1024, (1024, 1024, 64))
    x = pa.placeholder("x", (128, 2, 2), np.float32)
    with pytest.raises(ScheduleError, match=r"128 work-items on axis l.2, more than the "
                                            r"device's limit of 64 on that axis"):
        pa.compile(x * 2.0, target="cuda", schedule={"k0_elementwise": [
            Layout("axes"), Tag("i0", "l.2"), Tag("i1", "l.1"), Tag("i2", "l.0")]})


def test_cuda_refuses_huge_unrolls_without_a_gpu():
    x = pa.placeholder("x", (5000,), np.float32)
    with pytest.raises(ScheduleError, match=r"Unroll\(iname='i', factor=5000\).*at most "
                                            rf"{MAX_UNROLL} per loop"):
        pa.compile(x * 2.0, target="cuda", schedule={"k0_elementwise": Unroll("i", 5000)})
