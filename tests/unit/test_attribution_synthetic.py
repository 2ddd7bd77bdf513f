"""Attribution on synthetic events shaped like a PrivateUse1 (Neuron) or CUDA profile.

No device exists here, so these events stand in for what Kineto reports on one: CPU ops with
correlation ids, device events linked to them, legacy per-op device time. The attribution
logic under test is OpLens's own, unchanged.
"""

from __future__ import annotations

import pytest

from oplens.analysis.attribution import RawEvent, attribute

T = 1  # the profiled thread


def cpu(name: str, start: int, end: int, corr: int = 0, thread: int = T, **kw: object) -> RawEvent:
    return RawEvent(name=name, thread=thread, start_ns=start, end_ns=end, correlation_id=corr, **kw)  # type: ignore[arg-type]


def kernel(name: str, start: int, end: int, linked: int) -> RawEvent:
    return RawEvent(name=name, thread=99, start_ns=start, end_ns=end, linked_correlation_id=linked, on_device=True)


def one_iteration(offset: int = 0, it: int = 0) -> list[RawEvent]:
    o = offset
    return [
        cpu(f"oplens.iter:{it}", o + 0, o + 10_000),
        cpu("oplens.line:11", o + 100, o + 2_000),
        cpu("aten::mul", o + 200, o + 1_000, corr=o + 1),
        # the mul's launch (a runtime event, linked to the op) and its kernel on the device
        cpu("neuronLaunch", o + 500, o + 800, corr=o + 2, linked_correlation_id=o + 1),
        kernel("mul_kernel", o + 5_000, o + 6_164, linked=o + 1),
        cpu("oplens.line:12", o + 2_000, o + 6_000),
        # aten::add → aten::copy_ (the CPU scalar's host-to-device copy): each launches its own kernel
        cpu("aten::add", o + 2_100, o + 3_000, corr=o + 3),
        cpu("aten::copy_", o + 2_200, o + 2_600, corr=o + 4),
        kernel("copy_kernel", o + 6_200, o + 6_500, linked=o + 4),
        kernel("add_kernel", o + 6_500, o + 6_700, linked=o + 3),
    ]


def test_stand_in_privateuse1_device_time_is_per_line_and_not_double_counted() -> None:
    evs = one_iteration() + one_iteration(offset=100_000, it=1)
    r = attribute(evs, iters=2, def_line=10, device_time="linked")
    lines = {s.line: s for s in r.lines}
    assert lines[11].self_device_us == pytest.approx(1.164)
    assert lines[12].self_device_us == pytest.approx(0.3 + 0.2)
    assert r.totals.self_device_us == pytest.approx(1.664)  # kernels once, not once more as rows
    assert r.totals.unattributed_device_us == 0
    ops = {o.name: o for o in r.ops}
    assert ops["aten::add"].self_device_us == pytest.approx(0.2)
    assert ops["aten::copy_"].self_device_us == pytest.approx(0.3)
    assert ops["neuronLaunch"].self_device_us == 0  # a runtime event claims no kernel
    assert "mul_kernel" not in ops
    # self CPU: mul 800 ns minus its nested launch 300 ns
    assert ops["aten::mul"].self_cpu_us == pytest.approx(0.5)
    assert lines[12].op_calls == 1  # copy_ is nested inside add
    assert sum(s.self_device_us for s in r.lines) == pytest.approx(r.totals.self_device_us)


def test_stand_in_legacy_privateuse1_time_on_the_cpu_op() -> None:
    evs = [
        cpu("oplens.iter:0", 0, 10_000),
        cpu("oplens.line:5", 10, 9_000),
        cpu("aten::rsqrt", 100, 900, corr=7, legacy_device_ns=415_000),
    ]
    r = attribute(evs, iters=1, def_line=4, device_time="linked")
    assert r.lines[0].self_device_us == pytest.approx(415.0)


def test_stand_in_kernel_without_launching_op_is_reported_not_lost() -> None:
    evs = one_iteration() + [kernel("orphan", 7_000, 7_400, linked=12345)]
    r = attribute(evs, iters=1, def_line=10, device_time="linked")
    assert r.totals.unattributed_device_us == pytest.approx(0.4)
    assert r.totals.self_device_us == pytest.approx(1.664)


def test_ops_on_other_threads_go_to_the_line_running_then() -> None:
    evs = [
        cpu("oplens.iter:0", 0, 10_000),
        cpu("oplens.line:3", 100, 5_000),
        cpu("oplens.line:4", 5_000, 9_000),
        cpu("aten::mm", 6_000, 7_000, thread=2),  # autograd's thread, during line 4
        cpu("aten::sum", 20_000, 21_000, thread=2),  # after the iteration: not ours
    ]
    r = attribute(evs, iters=1, def_line=2, device_time="cpu")
    assert [(s.line, s.self_cpu_us) for s in r.lines if s.ops] == [(4, pytest.approx(1.0))]  # (3 ran no op)


def test_cpu_backend_device_time_is_self_cpu_and_markers_are_not_ops() -> None:
    r = attribute(one_iteration(), iters=1, def_line=10, device_time="cpu")
    assert r.totals.self_device_us == r.totals.self_cpu_us
    assert not any(o.name.startswith("oplens.") for o in r.ops)
    assert r.totals.self_cpu_us == pytest.approx((800 + 900) / 1000)


def test_ops_before_the_first_line_go_to_the_def_line() -> None:
    evs = [cpu("oplens.iter:0", 0, 1_000), cpu("aten::empty", 10, 20), cpu("oplens.line:9", 30, 900)]
    r = attribute(evs, iters=1, def_line=8)
    assert [s.line for s in r.lines if s.ops] == [8]


def test_a_statements_ops_outside_the_functions_lines_are_counted_apart_where_it_runs_more_than_the_function() -> None:
    """A notebook's `%oplens -f f g(x)`: the iteration is g's statement; g's own op (and its kernel) around the
    call of f is on no line of f. By default it goes to f's def line; with `outside` it is not f's."""
    evs = [*one_iteration(), cpu("aten::mm", 7_000, 9_000, corr=9), kernel("mm_kernel", 9_100, 12_100, linked=9)]
    before = attribute(evs, iters=1, def_line=10, device_time="linked")
    assert {s.line: s.self_device_us for s in before.lines}[10] == pytest.approx(3.0)  # the def line, before
    r = attribute(evs, iters=1, def_line=10, device_time="linked", outside=True)
    assert {s.line for s in r.lines if s.ops} == {11, 12} and "aten::mm" not in {o.name for o in r.ops}
    assert r.totals.self_device_us == pytest.approx(1.664)  # f's lines only, as without g's matmul
    assert r.totals.outside_device_us == pytest.approx(3.0) and r.totals.unattributed_device_us == 0


def calls_of_one_line(mul_ns: list[int], work: list[str] | None = None) -> list[RawEvent]:
    """One profiled call per entry: line 11 runs one aten::mul of that many ns; `work`: each call's
    argument marker (a capture's `oplens.work:<digest>`, "" for none)."""
    evs = []
    for i, ns in enumerate(mul_ns):
        o = i * 1_000_000
        evs += [cpu(f"oplens.iter:{i}", o, o + 900_000), cpu("oplens.line:11", o + 100, o + 800_000),
                cpu("aten::mul", o + 200, o + 200 + ns)]  # fmt: skip
        if work and work[i]:
            evs.append(cpu(f"oplens.work:{work[i]}", o + 10, o + 20))
    return evs


def test_a_stalled_call_is_left_out_of_every_figure_and_recorded() -> None:
    times = [1_000, 1_100, 50_000, 900, 1_000, 1_000]  # call 2 stalled inside its op
    r = attribute(calls_of_one_line(times), iters=6, def_line=10)
    o = r.totals.outliers
    assert o is not None and [c.call for c in o.calls] == [2] and (o.kept, o.profiled, o.works) == (5, 6, 1)
    (line,) = r.lines
    (op,) = r.ops
    assert line.self_cpu_us == r.totals.self_cpu_us == op.self_cpu_us == pytest.approx(1.0)  # the kept calls' mean
    assert (line.op_calls, op.calls, r.totals.op_calls) == (1, 1, 1)
    assert line.cpu_samples_us[2] == 50.0 and line.cpu_spread.max == 50.0  # the samples keep every call
    assert o.all_cpu_us == pytest.approx(sum(times) / 6 / 1000)


def test_a_call_on_other_arguments_is_other_work_and_counts_in_full() -> None:
    times = [1_000, 1_100, 50_000, 900, 1_000, 1_000]  # call 2 on a longer sequence: the same ops, other shapes
    r = attribute(calls_of_one_line(times, ["a", "a", "b", "a", "a", "a"]), iters=6, def_line=10)
    assert r.totals.outliers is not None and r.totals.outliers.calls == [] and r.totals.outliers.works == 2
    assert r.totals.self_cpu_us == pytest.approx(sum(times) / 6 / 1000)
