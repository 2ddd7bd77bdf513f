"""Adaptive Eager Execution and CPU fallback on Neuron (issue 33, part 4), against STAND-INS of torch_neuronx and
neuron-explorer (tests/standins/): with STANDIN_FUSE=N the stand-in TorchNeuron fuses each run of N consecutive
queued ops of an iteration into one execution and flushes the queue's rest at the synchronize after the iteration
(`profiling._fuse` cites what it follows and what it assumes), off under deterministic mode as the 2.33 docs say;
STANDIN_CPU_FALLBACK names ops that ran on the CPU (`torch_neuronx.get_fallback_ops()`).

The rule OpLens states (systrace.fusions): a fused execution's time is on the line whose op launched it (its first
op), and every other line it covered names it ("fused by the runtime"); never split, never silently lumped.

ASSUMED (no public page shows it; docs/trainium-checklist.md asks a trn2 owner to check): a fused execution keeps a
flow link from each op it carried (each op's dispatch submitted it) and the queue's rest is launched on the profiled
thread by the synchronize.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from oplens.cli import render
from oplens.lsp import views
from oplens.records.run import LineStat, Run
from oplens.views import run as run_view
from support.cli import oplens_cli
from support.neuron import NAIVE_KNOWN, NAIVE_PER_LINE, NAIVE_TARGET, profile_on_stand_ins, write_stand_in_explorer
from support.paths import STANDINS

# TorchNeuron runs on Python 3.12+ only: `make test` runs these on 3.12 and 3.13
pytestmark = pytest.mark.neuron

FAST = ["--warmup", "1", "--iters", "3"]
TOTAL = sum(NAIVE_PER_LINE.values())  # 31 µs per iteration, 6 executions one op each


def profile(tmp_path: Path, *argv: str, target: str = NAIVE_TARGET, **env: str) -> dict[str, Any]:
    return profile_on_stand_ins(tmp_path, target, "rmsnorm.py::rmsnorm_naive", *FAST, *argv, STANDIN_EXEC_US=NAIVE_KNOWN,
                                STANDIN_NO_CORRELATE="1", **env)[0]  # fmt: skip


def analyze(tmp_path: Path, run: dict[str, Any]) -> dict[str, Any]:
    proc = oplens_cli(tmp_path, "analyze", run["run_id"], "--json", "-", PYTHONPATH=str(STANDINS))
    assert proc.returncode == 0, proc.stderr
    again: dict[str, Any] = json.loads(proc.stdout)
    return again


def per_line(run: dict[str, Any]) -> dict[int, float]:
    return {s["line"]: s["self_device_us"] for s in run["lines"] if s["self_device_us"]}


def stat(run: Run, n: int) -> LineStat:
    return next(s for s in run.lines if s.line == n)


def cli_text(run: Run) -> str:
    console = Console(record=True, width=400)
    render.profile(console, run)
    return console.export_text()


def line(run: dict[str, Any], n: int) -> dict[str, Any]:
    return next(s for s in run["lines"] if s["line"] == n)


def test_stand_in_fused_execution_is_shown_on_every_line_it_covered(tmp_path: Path) -> None:
    """STANDIN_FUSE=4: lines 8-11's four ops are one execution (17 µs, launched by line 8's op when the fourth op
    queued), lines 12-13's two the queue's rest (14 µs), flushed by the synchronize after the iteration's range."""
    run = profile(tmp_path, STANDIN_FUSE="4")
    assert run["backend"]["details"]["adaptive_eager"]["active"] is True
    assert per_line(run) == pytest.approx({8: 17.0, 12: 14.0}, rel=0.01)
    assert sum(per_line(run).values()) == pytest.approx(TOTAL, rel=0.01)  # the executions' total, within 1 %
    assert run["totals"]["self_device_us"] == pytest.approx(TOTAL, rel=0.01)
    assert "outside the profiled iterations" not in run["device_time"]["found"]["system_trace"]
    for n in (8, 9, 10, 11):
        (f,) = line(run, n)["runtime_fused"]
        assert f["launched_by"] == 8 and f["lines"] == [8, 9, 10, 11]
        assert f["ops"] == ["aten::mul", "aten::mean", "aten::add", "aten::rsqrt"]
        assert f["executions"] == pytest.approx(1.0) and f["device_us"] == pytest.approx(17.0, rel=0.01)
    for n in (12, 13):  # the flushed one: counted in its iteration, on its launching line
        (f,) = line(run, n)["runtime_fused"]
        assert f["launched_by"] == 12 and f["lines"] == [12, 13] and f["device_us"] == pytest.approx(14.0, rel=0.01)
    # the words, from the server: the hover of the launching line and of a covered one, and the CLI
    r = Run.from_dict(run)
    hover8, hover9 = views.line_markdown(r, stat(r, 8)), views.line_markdown(r, stat(r, 9))
    assert "fused by the runtime" in hover8 and "of lines 9, 10, 11" in hover8 and "shown on this line" in hover8
    assert "fused by the runtime" in hover9 and "line 8's execution" in hover9
    text = cli_text(r)
    assert "line 9: fused by the runtime: this line's ops ran in line 8's execution" in text
    assert "line 12: fused by the runtime" in text
    rows = {row.line: row.tooltip for row in run_view.run_page(r).lines}  # the results page's bar
    assert "fused by the runtime: this line's ops ran in line 8's execution" in rows[10]
    # oplens analyze derives them again from the kept tables (no neuron-explorer on its PATH)
    again = analyze(tmp_path, run)
    assert per_line(again) == pytest.approx({8: 17.0, 12: 14.0}, rel=0.01)
    assert [line(again, n)["runtime_fused"] for n in (8, 9, 12)] == [line(run, n)["runtime_fused"] for n in (8, 9, 12)]


def test_stand_in_neuron_exact_gives_one_op_one_execution(tmp_path: Path) -> None:
    """--neuron-exact: torch.use_deterministic_algorithms(True) around the profiled calls, which turns Adaptive Eager
    Execution off (the stand-in then fuses nothing): each line its own executions again; the setting recorded."""
    run = profile(tmp_path, "--neuron-exact", STANDIN_FUSE="4")
    aee = run["backend"]["details"]["adaptive_eager"]
    assert aee["active"] is False and aee["exact"] is True and aee["deterministic_algorithms"] is True
    assert "--neuron-exact" in aee["decided_by"]
    assert per_line(run) == pytest.approx(NAIVE_PER_LINE, rel=0.01)
    assert all(not s["runtime_fused"] for s in run["lines"])
    assert "18 execution(s)" in run["device_time"]["found"]["system_trace"]  # 6 per iteration, 3 iterations


def test_stand_in_flushed_at_sync_counts_in_its_iteration_without_framework_links(tmp_path: Path) -> None:
    """Only the runtime's launch row carries the flow (STANDIN_SYSTRACE_FLOWS=runtime): the queue's rest is launched
    after the iteration's range closed, with no op running; it is that iteration's (not "outside")."""
    run = profile(tmp_path, STANDIN_FUSE="4", STANDIN_SYSTRACE_FLOWS="runtime", STANDIN_EXEC_BEFORE="2")
    dt = run["device_time"]
    assert dt["source"] == "system_trace" and "rule flow" in dt["found"]["system_trace"]
    # the warm-up's two executions (before the first iteration) stay outside; the flushed ones do not
    assert "22.0 µs outside the profiled iterations" in dt["found"]["system_trace"], dt["found"]["system_trace"]
    assert dt["totals_us"]["system_trace"] == pytest.approx(TOTAL, rel=0.01)
    # launched by no op (only the runtime's row links): the iteration's, no line's; the other one on its last op's line
    assert run["totals"]["unattributed_device_us"] == pytest.approx(14.0, rel=0.01)
    assert per_line(run) == pytest.approx({11: 17.0}, rel=0.01)


def test_stand_in_cpu_fallback_op_is_named_on_its_line(tmp_path: Path) -> None:
    """aten::rsqrt "fell back to CPU" (torch_neuronx.get_fallback_ops()): no execution, and line 11 says why."""
    run = profile(tmp_path, STANDIN_CPU_FALLBACK="aten::rsqrt")
    assert run["backend"]["details"]["cpu_fallback"] == ["aten::rsqrt"]
    assert line(run, 11)["cpu_fallback"] == ["aten::rsqrt"]
    assert line(run, 11)["self_device_us"] == 0
    assert all(not line(run, n)["cpu_fallback"] for n in (8, 9, 10, 12, 13))
    r = Run.from_dict(run)
    assert "ran on the CPU: no Neuron kernel for aten::rsqrt" in views.line_markdown(r, stat(r, 11))
    assert "line 11: ran on the CPU: no Neuron kernel for aten::rsqrt" in cli_text(r)
    assert "ran on the CPU (no Neuron kernel): aten::rsqrt" in cli_text(r)  # with the run's Neuron profile
    assert "Adaptive Eager Execution: on" in cli_text(r)
    assert line(analyze(tmp_path, run), 11)["cpu_fallback"] == ["aten::rsqrt"]  # kept with the run


def test_stand_in_fused_execution_through_the_early_framework_mapping(tmp_path: Path) -> None:
    """The early API, no flow links, the runtime on another clock: TorchNeuron's framework mapping lists every op a
    fused execution carried (RecordProfilerMapping); the executions take the launches in order, as many as their ops,
    and each shows on its launching line and is named on the others, as by the flow links."""
    run = profile(tmp_path, STANDIN_FUSE="4", STANDIN_API="early", STANDIN_SYSTRACE_FLOWS="none",
                  STANDIN_SYSTRACE_CLOCK_NS=str(10**12), STANDIN_SYSTRACE_NRTA_SEQ="1", STANDIN_EXEC_BEFORE="2",
                  STANDIN_MAPPING_WARMUP="1")  # fmt: skip
    found = run["device_time"]["found"]["system_trace"]
    assert "rule mapping" in found and "22.0 µs outside the profiled iterations" in found, found
    assert per_line(run) == pytest.approx({8: 17.0, 12: 14.0}, rel=0.01)
    assert [f["lines"] for f in line(run, 10)["runtime_fused"]] == [[8, 9, 10, 11]]
    assert [f["launched_by"] for f in line(run, 13)["runtime_fused"]] == [12]


def test_stand_in_neuron_exact_holds_in_every_window_of_a_capture(tmp_path: Path) -> None:
    """`oplens run --neuron-exact` with two targets on the stand-ins: each window has its own NeuronConfig (its
    profile in its own run: a second NeuronProfiler writing into the first window's folder raised "Trace is already
    saved" into the user's program), and the first window's end gives the user's setting back while the second
    window's profiler start takes deterministic mode again, so neither window's executions are fused."""
    path = f"{write_stand_in_explorer(tmp_path / 'bin').parent}{os.pathsep}{os.environ['PATH']}"
    second = NAIVE_TARGET.split("def rmsnorm_naive():")[1]
    (tmp_path / "rmsnorm.py").write_text(NAIVE_TARGET + "\n\ndef rmsnorm_again():" + second)
    (tmp_path / "prog.py").write_text("from rmsnorm import rmsnorm_again, rmsnorm_naive\n\n"
                                      "for _ in range(12):\n    rmsnorm_naive()\n    rmsnorm_again()\n")  # fmt: skip
    proc = oplens_cli(
        tmp_path, "run", "--target", "rmsnorm.py::rmsnorm_naive", "--target", "rmsnorm.py::rmsnorm_again", "--skip", "1",
        "--calls", "3", "--backend", "neuron", "--neuron-exact", "--json", str(tmp_path / "result.json"), "--", "prog.py",
        timeout=300, PYTHONPATH=str(STANDINS), STANDIN_EXEC_US=NAIVE_KNOWN, PATH=path, STANDIN_NO_CORRELATE="1",
        STANDIN_FUSE="4",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    runs = json.loads((tmp_path / "result.json").read_text())
    assert [r["target"]["qualname"] for r in runs] == ["rmsnorm_naive", "rmsnorm_again"]
    for r in runs:
        aee = r["backend"]["details"]["adaptive_eager"]
        assert aee["active"] is False and aee["exact"] is True, (r["target"]["qualname"], aee)
        assert all(not s["runtime_fused"] for s in r["lines"]), r["target"]["qualname"]
        assert sorted(per_line(r).values()) == pytest.approx(sorted(NAIVE_PER_LINE.values()), rel=0.01)
