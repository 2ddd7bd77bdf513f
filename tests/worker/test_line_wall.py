"""Each line's host wall time and its time outside every operator (issue 39, part 1-3): a real program's function
profiled by the real CLI path (`engine.profile`, its worker), a line that sleeps, a pure-Python loop line, a line
calling a helper that writes a file, and operator lines."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import pytest

from oplens.engine.profile import ProfileRequest, profile
from oplens.notebook.display import text as notebook_text
from oplens.records.job import TargetSpec
from oplens.views.editor import hint_label, line_markdown
from oplens.views.lines import lines_wall_sentence
from oplens.views.run import run_page

SLEEP_S = 0.03
SOURCE = f"""\
import time

import torch


def write(path):
    with open(path, "w") as f:
        f.write("x" * 100_000)


def mixed(x, path):
    time.sleep({SLEEP_S})
    total = sum(i * i for i in range(2_000))
    write(path)
    y = x @ x
    return y.sum() + total
"""


@pytest.mark.timing
def test_each_line_has_its_wall_time_and_the_sleep_line_is_named_first(tmp_path: Path) -> None:
    (tmp_path / "mixed.py").write_text(SOURCE)
    run = profile(ProfileRequest(TargetSpec(str(tmp_path / "mixed.py"), "mixed"), iters=5,
                                 args=f"torch.randn(256, 256), {str(tmp_path / 'out.txt')!r}", workspace=tmp_path))  # fmt: skip
    lines = {s.line: s for s in run.lines}
    sleep, loop, io, matmul, ret = (lines[n] for n in range(12, 17))  # every line has a row, with ops or not
    # the sleep line's wall time, against the same sleep timed here: a sleep overshoots, never undershoots
    here: list[int] = []
    for _ in range(5):
        t0 = time.perf_counter_ns()
        time.sleep(SLEEP_S)
        here.append(time.perf_counter_ns() - t0)
    assert sleep.wall_us >= SLEEP_S * 1e6 and abs(sleep.wall_us - statistics.median(here) / 1000) <= 0.1 * sleep.wall_us
    # no operator on the sleep, the loop or the write: all of their time is outside operators
    for s in (sleep, loop, io):
        assert s.op_calls == 0 and s.outside_ops_us == s.wall_us > 0
    assert matmul.op_calls >= 1 and matmul.outside_ops_us < matmul.wall_us  # its operators ran in it
    # the lines' wall times and what the call spent outside them make the call's wall time
    lines_sum = sum(s.wall_us for s in run.lines)
    assert abs(lines_sum + run.totals.outside_lines_us - run.totals.call_wall_us) <= 0.001 * run.totals.call_wall_us
    assert lines_sum <= run.totals.call_wall_us
    # most of the call is outside operators: the first insight names the line that spends the most of it
    first = run.insights[0]
    assert first.kind == "outside_operators" and first.line == 12 and "outside any operator" in first.message
    assert not any(i.kind == "hot_line" for i in run.insights)
    # where a user reads it: the hint says the time outside operators first, the hover its wall time, the results
    # page's row and the notebook's table their wall column, the CLI's listing (cli/render.py) too
    call = run.totals.call_wall_us
    assert hint_label(sleep, call_wall_us=call).endswith("outside ops") and hint_label(matmul, call_wall_us=call).endswith("%")
    assert "Wall " in line_markdown(run, sleep) and "outside any operator" in line_markdown(run, sleep)
    page = run_page(run)
    row = page.lines[run.lines.index(sleep)]
    assert page.with_wall and row.wall and row.outside_ops == row.wall and "outside any operator" in row.wall_title
    assert page.insights[0].line == 12
    roof = next((x for x in page.stats if x.label == "At the roofline"), None)  # its "to win", in the call's terms
    assert roof is None or "of the call's" in roof.note
    assert f"wall {row.wall:>10}" in notebook_text(run, run.run_dir)
    assert lines_wall_sentence(run).startswith("The lines' wall times: ") and "outside its lines" in lines_wall_sentence(run)


ITEM_SOURCE = """\
import torch


def reads(x):
    y = x @ x
    return y.sum().item()
"""


def test_an_item_on_the_cpu_is_no_wait_and_says_so(tmp_path: Path) -> None:
    """On the CPU, `.item()` after a large op waits for nothing: the op's work was done when it returned."""
    (tmp_path / "reads.py").write_text(ITEM_SOURCE)
    run = profile(ProfileRequest(TargetSpec(str(tmp_path / "reads.py"), "reads"), iters=3, args="torch.randn(256, 256)",
                                 workspace=tmp_path))  # fmt: skip
    item = next(s for s in run.lines if s.line == 6)
    assert item.wait_us == 0 and any(o.name == "aten::item" for o in item.ops)
    assert "No wait for a device: on the CPU" in line_markdown(run, item)


def _trace(sync_runtime: bool) -> list[dict[str, object]]:
    """One call's events as a device's profile holds them: line 5 launches a long kernel, line 6 reads a scalar
    back (`.item()`), which blocks until the kernel ran: with CUDA's runtime events (cudaStreamSynchronize under the
    read), or a PrivateUse1 device's (Neuron's: no runtime event, the read itself blocks)."""
    events: list[dict[str, object]] = [
        {"ph": "X", "cat": "user_annotation", "name": "oplens.iter:0", "ts": 1000.0, "dur": 900.0, "tid": 7},
        {"ph": "X", "cat": "user_annotation", "name": "oplens.line:5", "ts": 1001.0, "dur": 20.0, "tid": 7},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1002.0, "dur": 10.0, "tid": 7, "args": {"External id": 41}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 1010.0, "dur": 700.0, "tid": 12,
         "args": {"External id": 41, "correlation": 900}},
        {"ph": "X", "cat": "user_annotation", "name": "oplens.line:6", "ts": 1021.0, "dur": 760.0, "tid": 7},
        {"ph": "X", "cat": "cpu_op", "name": "aten::item", "ts": 1022.0, "dur": 750.0, "tid": 7, "args": {"External id": 42}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::_local_scalar_dense", "ts": 1023.0, "dur": 748.0, "tid": 7,
         "args": {"External id": 43}},
    ]  # fmt: skip
    if sync_runtime:
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "ts": 1030.0, "dur": 690.0,
                       "tid": 7, "args": {"External id": 43, "correlation": 901}})  # fmt: skip
    return events


def test_a_read_that_waits_for_the_device_is_named_a_wait_on_cuda_and_privateuse1_events() -> None:
    """Synthetic events (the shapes torch.profiler records on CUDA and on a PrivateUse1 device such as Neuron's; no
    device here): the wait is the runtime's synchronisation where it shows one, else the scalar read itself."""
    from oplens.analysis.attribution import attribute
    from oplens.analysis.chrome_trace import events_of

    cuda = {s.line: s for s in attribute(events_of(_trace(True)), iters=1, def_line=4, device_time="linked").lines}
    assert cuda[6].wait_us == 690.0 and cuda[5].wait_us == 0
    privateuse1 = {s.line: s for s in attribute(events_of(_trace(False)), iters=1, def_line=4, device_time="linked").lines}
    assert privateuse1[6].wait_us == 748.0
    assert {s.line: s.wait_us for s in attribute(events_of(_trace(True)), iters=1, def_line=4).lines} == {5: 0, 6: 0}


def test_on_a_device_a_line_s_host_time_against_its_device_time_says_launch_or_device_bound() -> None:
    from oplens.records.run import LineStat
    from oplens.views.lines import host_device_phrase

    launch = LineStat(line=5, self_cpu_us=40.0, self_device_us=300.0, pct_device=50.0, pct_cpu=50.0, op_calls=30)
    launch.wall_us = 1_200.0  # Python between thirty launches
    assert host_device_phrase(launch, on_device=True) == "host 1.20 ms per call against 300.0 µs on the device: launch-bound"
    waits = LineStat(line=6, self_cpu_us=900.0, self_device_us=800.0, pct_device=50.0, pct_cpu=50.0, op_calls=1)
    waits.wall_us, waits.wait_us = 1_000.0, 950.0  # an .item() waiting for the device: not the host's own time
    assert host_device_phrase(waits, on_device=True).endswith("device-bound")
    assert host_device_phrase(launch, on_device=False) == ""  # on the CPU the host is the device


GEN_SOURCE = """\
import torch


def gen(x):
    total = sum(i * i for i in range(20_000))
    y = x @ x
    return y.sum() + total
"""


def test_what_oplens_s_own_line_marks_cost_is_measured_in_the_profile_and_kept_apart(tmp_path: Path) -> None:
    """The probe of empty lines (worker/linemarks.mark_probe) runs once per run after the last recorded call: its
    ranges are no line's and no call's; each line gets its marks' count and their cost, within its time outside
    operators; a generator's steps marked one by one (settrace) are most of its line's time, and the insight and
    the hint say the line's own Python without them."""
    (tmp_path / "gen.py").write_text(GEN_SOURCE)
    run = profile(ProfileRequest(TargetSpec(str(tmp_path / "gen.py"), "gen"), iters=5, args="torch.randn(128, 128)",
                                 workspace=tmp_path))  # fmt: skip
    assert sorted(s.line for s in run.lines) == [5, 6, 7]  # the probe's lines are no line of the target
    for s in run.lines:
        assert s.marks >= 1 and 0 < s.marks_us <= s.outside_ops_us
    loop = next(s for s in run.lines if s.line == 5)
    lines_sum = sum(s.wall_us for s in run.lines)  # the probe ran outside the calls: the sums hold as before
    assert abs(lines_sum + run.totals.outside_lines_us - run.totals.call_wall_us) <= 0.001 * run.totals.call_wall_us
    first = next((i for i in run.insights if i.kind == "outside_operators"), None)
    if run.config.line_marks == "settrace":  # each step of the generator marked: 20,000 marks, a large part of the line
        assert loop.marks >= 20_000 and loop.marks_us >= 0.2 * loop.outside_ops_us
        assert "OpLens's line marks" in line_markdown(run, loop) and "OpLens's own line marks" in lines_wall_sentence(run)
        # the insight, where the line's own Python is still most of the call without the marks, says it less them
        assert first is None or (first.line == 5 and "about" in first.message and "line marks" in first.evidence)
    else:  # sys.monitoring marks a resumed generator's line once: its steps' callbacks are the line's, uncounted
        assert first is not None and first.line == 5


def test_a_run_without_the_probe_costs_its_lines_no_marks() -> None:
    """Runs older than the probe (and a compare's rounds) read (0, 0): their lines' time outside operators whole."""
    from oplens.analysis.attribution import mark_cost
    from oplens.analysis.columns import RawEvent, of

    ev = of([RawEvent(name="oplens.iter:0", start_ns=0, end_ns=1000, thread=1),
             RawEvent(name="oplens.line:3", start_ns=10, end_ns=900, thread=1)])  # fmt: skip
    assert mark_cost(ev) == (0.0, 0.0)


SLEEPY = """\
import time

import torch


def sleepy(x):
    time.sleep({s})
    return (x * 2).sum()
"""


@pytest.mark.timing
def test_a_diff_by_wall_time_judges_the_line_whose_time_is_outside_operators(tmp_path: Path) -> None:
    """Issue 39 part 5: a sleep made twice as long is no operator's change (by self time the line has none), but by
    wall time it is the line that got slower, about 2× (the edit measured beside the earlier version)."""
    from oplens.engine.diff import diff_runs
    from oplens.views.diff import diff_page

    path = tmp_path / "sleepy.py"
    runs = []
    for s in (0.02, 0.04):
        path.write_text(SLEEPY.replace("{s}", str(s)))
        runs.append(profile(ProfileRequest(TargetSpec(str(path), "sleepy"), iters=8, args="torch.randn(64, 64)",
                                           workspace=tmp_path)))  # fmt: skip
    by_wall = diff_runs(runs[0], runs[1], "wall")
    sleep = next(c for c in by_wall.lines if c.after_line == 7)
    assert by_wall.by == "wall" and sleep.verdict == "slower" and sleep.ratio is not None and 1.7 < sleep.ratio < 2.3
    by_device = diff_runs(runs[0], runs[1])
    assert next(c for c in by_device.lines if c.after_line == 7).verdict != "slower"  # no operator on it
    view = diff_page(runs[1], by_wall, []).view
    assert view is not None and view.label == "Wall" and view.lines_title.endswith("Wall time per call")
    assert [c.value for c in view.by_choices] == ["device", "wall"] and view.by == "wall"
