"""Line marks on `sys.monitoring` (Python 3.12+, issue 38 part 2): the same per-line op tables as the settrace
tracer gives, only the marked code's events, a free tool id given back, a debugger's tracer and coverage.py's
sysmon core left working, the last range closed when the function raises. Real torch, real profiler; the
worker's and a user's interpreter (run on 3.12 and 3.13 by `make test`; skipped on 3.10/3.11, where settrace
is the mechanism)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from support.cli import oplens_cli

pytestmark = pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring is Python 3.12+")

TARGET = """\
import torch


def helper(y):
    return torch.tanh(y) + 1.0


def step(x):
    y = x * 2.0
    z = helper(y)
    w = torch.relu(z) @ x
    return w.sum()


def make():
    return (torch.randn(64, 64),)
"""


def per_line(run: dict[str, object]) -> dict[int, dict[str, float]]:
    return {s["line"]: {o["name"]: o["calls"] for o in s["ops"]} for s in run["lines"]}  # type: ignore[index, attr-defined]


def test_monitoring_marks_give_the_per_line_op_tables_the_tracer_gives(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(TARGET)
    found = {}
    for marks in ("monitoring", "settrace"):
        proc = oplens_cli(tmp_path, "profile", "t.py::step", "--args", "make()", "--warmup", "1", "--iters", "4",
                          "--json", "-", OPLENS_LINE_MARKS=marks)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        run = json.loads(proc.stdout)
        assert run["config"]["line_marks"] == marks
        found[marks] = per_line(run)
    assert found["monitoring"] == found["settrace"]
    assert set(found["monitoring"]) == {9, 10, 11, 12}
    assert "aten::tanh" in found["monitoring"][10]  # the helper's ops on the line that called it


IN_PROCESS = """\
import sys, torch
from torch.profiler import profile, ProfilerActivity
sys.path.insert(0, {folder!r})
import t
from oplens.worker.linemarks import LineMarker, code_objects
from oplens.worker import linemonitor

marker = LineMarker(t.step.__code__, code_objects(t))
seen = []
def tracer(frame, event, arg):  # a debugger's tracer (pdb, debugpy's settrace mode): it must keep seeing lines
    if frame.f_code.co_filename == t.__file__:
        seen.append((event, frame.f_lineno))
    return tracer
sys.settrace(tracer)
with profile(activities=[ProfilerActivity.CPU]) as prof:
    with marker:
        t.step(*t.make())
    with marker:
        try:
            t.raises(*t.make())
        except ValueError:
            pass
        left = [r for stack in marker._monitor._stacks.values() for r in stack]  # the raising frame's range closed
sys.settrace(None)
tool = linemonitor._TOOL.id
held = sys.monitoring.get_tool(tool)
marker.release()
ranges = sorted({{e.name for e in prof.events() if e.name.startswith("oplens.")}})
print(repr((marker.mechanism, tool, held, sys.monitoring.get_tool(tool), ranges,
            sorted({{n for e, n in seen if e == "line"}}), left)))
"""
RAISES = """

def raises(x):
    y = x * 2.0
    raise ValueError("stop")
"""


def test_only_the_marked_code_is_monitored_and_a_debuggers_tracer_keeps_its_lines(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(TARGET + RAISES)
    proc = subprocess.run([sys.executable, "-c", IN_PROCESS.format(folder=str(tmp_path))], capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    mechanism, tool, held, after, ranges, traced, left = eval(proc.stdout.strip().splitlines()[-1])
    assert mechanism == "monitoring" and tool not in (0, 1, 2, 5) and held == "oplens" and after is None
    # every executed line of the target and of its same-file helpers opened its range, the raising one too, and
    # the raise closed it (PY_UNWIND)
    assert {"oplens.line:9", "oplens.line:10", "oplens.line:11", "oplens.line:12", "oplens.inner:helper:5"} <= set(ranges)
    assert {"oplens.inner:raises:20", "oplens.inner:raises:21"} <= set(ranges) and left == []
    # the tracer set before the marks saw the same lines (on 3.11 the marks would have displaced it)
    assert {9, 10, 11, 12, 5, 20, 21} <= set(traced)


COVERED = """\
import sys
sys.path.insert(0, {folder!r})
import t
from oplens.worker.linemarks import LineMarker, code_objects
marker = LineMarker(t.step.__code__, code_objects(t))
import torch
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CPU]) as prof:
    with marker:
        t.step(*t.make())
marker.release()
print(sorted({{e.name for e in prof.events() if e.name.startswith("oplens.line")}}))
"""


def test_coverage_sysmon_core_measures_the_lines_run_while_oplens_marks_them(tmp_path: Path) -> None:
    pytest.importorskip("coverage")
    (tmp_path / "t.py").write_text(TARGET)
    (tmp_path / "run.py").write_text(COVERED.format(folder=str(tmp_path)))
    env = {"COVERAGE_CORE": "sysmon", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "coverage", "run", "--include", str(tmp_path / "t.py"), "run.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "oplens.line:9" in proc.stdout and "oplens.line:12" in proc.stdout
    report = subprocess.run([sys.executable, "-m", "coverage", "json", "-o", "-"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=120, env=env)  # fmt: skip
    data = json.loads(report.stdout)
    (covered,) = [f for name, f in data["files"].items() if name.endswith("t.py")]
    assert {5, 9, 10, 11, 12} <= set(covered["executed_lines"])  # coverage saw the marked lines run


def test_a_nested_function_and_a_generator_are_marked_as_helpers(tmp_path: Path) -> None:
    (tmp_path / "g.py").write_text(textwrap.dedent("""\
        import torch


        def gen(x):
            for k in range(2):
                yield x * k


        def step(x):
            parts = list(gen(x))
            return torch.stack(parts).sum()


        def make():
            return (torch.ones(8),)
        """))
    proc = oplens_cli(tmp_path, "profile", "g.py::step", "--args", "make()", "--warmup", "1", "--iters", "3", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    run = json.loads(proc.stdout)
    assert run["config"]["line_marks"] == "monitoring"
    lines = per_line(run)
    assert lines[10].get("aten::mul") == 2  # the generator's two multiplies, on the line that consumed it
