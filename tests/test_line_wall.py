"""Each line's host wall time and its time outside every operator (issue 39, part 1-3): a real program's function
profiled by the real CLI path (`engine.profile`, its worker), a line that sleeps, a pure-Python loop line, a line
calling a helper that writes a file, and operator lines."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from oplens.engine.profile import ProfileRequest, profile
from oplens.notebook.display import text as notebook_text
from oplens.records.job import TargetSpec
from oplens.views.editor import hint_label, line_markdown
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
    assert hint_label(sleep).endswith("outside ops") and hint_label(matmul).endswith("%")
    assert "Wall " in line_markdown(run, sleep) and "outside any operator" in line_markdown(run, sleep)
    page = run_page(run)
    row = page.lines[run.lines.index(sleep)]
    assert page.with_wall and row.wall and row.outside_ops == row.wall and "outside any operator" in row.wall_title
    assert page.insights[0].line == 12
    assert f"wall {row.wall:>10}" in notebook_text(run, run.run_dir)
