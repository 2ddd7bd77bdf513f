"""Self NEURON from the runtime's system trace (issue 20, source (b)), against STAND-INS of torch_neuronx and
neuron-explorer (tests/standins/): the stand-in TorchNeuron writes a system trace of known executions
(`STANDIN_EXEC_US`, per call of a named op; `_system_trace` there cites what it imitates), the stand-in
neuron-explorer turns it into the documented `SystemProfileEvents` table, and OpLens gives each execution
to its launching op and line. The known per-line figures must come back exactly.

Real material followed: TorchNeuron's Kineto session returns no device activities ("NRT writes directly to
`profile_output_dir`", torch_neuronx/csrc/profiler/README.md, parmoham-aws/test-repo-parmoham); users on trn2
read device time from `nc_exec_running` rows of the ingested system trace
(Deep-Learning-Profiling-Tools/Tilebench, tilebench/core/nki_timer.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from oplens.lsp import views
from oplens.records.run import Run
from support.cli import oplens_cli
from support.neuron import NAIVE_KNOWN, NAIVE_PER_LINE, NAIVE_TARGET, profile_on_stand_ins, write_stand_in_explorer
from support.paths import STANDINS

# TorchNeuron runs on Python 3.12+ only: `make test` runs these on 3.12 and 3.13
pytestmark = pytest.mark.neuron

FAST = ["--warmup", "1", "--iters", "3"]
TARGET, KNOWN, PER_LINE = NAIVE_TARGET, NAIVE_KNOWN, NAIVE_PER_LINE


def profile(tmp_path: Path, *argv: str, explorer: bool = True, expect: int = 0, **env: str) -> dict[str, Any]:
    # expect 5: no device time from any source (issue 33), the run printed
    return profile_on_stand_ins(tmp_path, TARGET, "rmsnorm.py::rmsnorm_naive", *FAST, *argv, expect=expect, explorer=explorer,
                                **{"STANDIN_EXEC_US": KNOWN, "STANDIN_NO_CORRELATE": "1", **env})[0]  # fmt: skip


def per_line(run: dict[str, Any]) -> dict[int, float]:
    return {s["line"]: s["self_device_us"] for s in run["lines"] if s["self_device_us"]}


@pytest.mark.parametrize("lnc", ["1", "2"])
def test_known_executions_come_back_per_line_through_the_system_trace_stand_in(tmp_path: Path, lnc: str) -> None:
    """No op-table propagation (an older NeuronConfig), no Kineto device events: the system trace is the one
    source, by its flow links; at LNC=2 each execution's two per-core rows are merged, not summed."""
    run = profile(tmp_path, STANDIN_LNC=lnc)
    assert per_line(run) == pytest.approx(PER_LINE, rel=0.01)
    assert run["totals"]["self_device_us"] == pytest.approx(31.0, rel=0.01)
    ops = {o["name"]: o["self_device_us"] for o in run["ops"] if o["self_device_us"]}
    assert ops == pytest.approx({"aten::mul": 21.0, "aten::mean": 5.0, "aten::add": 2.0, "aten::rsqrt": 3.0}, rel=0.01)
    dt = run["device_time"]
    assert dt["source"] == "system_trace"
    assert dt["totals_us"]["system_trace"] == pytest.approx(31.0, rel=0.01)
    assert dt["totals_us"]["kineto_linked"] == 0 and dt["totals_us"]["op_table"] == 0
    assert "rule flow" in dt["found"]["system_trace"] and "18 execution(s)" in dt["found"]["system_trace"]
    if lnc == "2":
        assert "2 physical-core rows each merged" in dt["found"]["system_trace"]
    # the processed tables are kept with the run: analyze re-reads them, without neuron-explorer
    tables = Path(run["run_dir"]) / run["artifacts"]["processed_system_trace"]
    assert (tables / "SystemProfileEvents.parquet").is_file()


def test_the_ingest_asks_for_the_system_trace_only(tmp_path: Path) -> None:
    record = tmp_path / "calls.jsonl"
    profile(tmp_path, STANDIN_EXPLORER_RECORD=str(record))
    argvs = [json.loads(line)["argv"] for line in record.read_text().splitlines() if "argv" in line]
    assert len(argvs) == 1, argvs  # once per run
    argv = argvs[0]
    assert argv[:2] == ["view", "-d"] and "--ingest-only" in argv
    assert {"--ignore-instruction-trace", "--ignore-dma-trace", "--ignore-event-trace"} <= set(argv)
    assert argv[argv.index("-d") + 1].split(os.sep)[-2].startswith("i-0standin")  # the session folder: <instance>_pid_<pid>/<ts>


def test_without_flow_links_the_clock_free_order_rule_places_them(tmp_path: Path) -> None:
    run = profile(tmp_path, STANDIN_SYSTRACE_FLOWS="none")
    assert per_line(run) == pytest.approx(PER_LINE, rel=0.01)
    assert "rule order" in run["device_time"]["found"]["system_trace"]


def test_a_runtime_clock_apart_from_the_framework_s_still_links_through_the_framework_rows(tmp_path: Path) -> None:
    run = profile(tmp_path, STANDIN_SYSTRACE_CLOCK_NS=str(10**12))
    assert per_line(run) == pytest.approx(PER_LINE, rel=0.01)
    assert "rule flow" in run["device_time"]["found"]["system_trace"]


def test_runtime_links_only_on_another_clock_fall_back_to_the_order_rule(tmp_path: Path) -> None:
    run = profile(tmp_path, STANDIN_SYSTRACE_FLOWS="runtime", STANDIN_SYSTRACE_CLOCK_NS=str(10**12))
    assert per_line(run) == pytest.approx(PER_LINE, rel=0.01)
    found = run["device_time"]["found"]["system_trace"]
    assert "rule order" in found


def test_op_table_first_and_the_system_trace_recorded_beside_it_with_a_warning_where_they_disagree(tmp_path: Path) -> None:
    """Where the op table has device time (correlate_device_time) it is used (the issue's order), the system
    trace's total recorded; the stand-in's table says 3x the trace here: both figures in a warning."""
    run = profile(tmp_path, STANDIN_NO_CORRELATE="0", STANDIN_OP_DEVICE_US="aten::mul=21,aten::mean=15,aten::add=6,aten::rsqrt=9")
    dt = run["device_time"]
    assert dt["source"] == "op_table"
    assert dt["totals_us"]["op_table"] == pytest.approx(93.0, rel=0.01)
    assert dt["totals_us"]["system_trace"] == pytest.approx(31.0, rel=0.01)
    assert "93.0 µs" in dt["mismatch"] and "31.0 µs" in dt["mismatch"]
    assert dt["mismatch"] in run["backend"]["warnings"]
    agree = profile(tmp_path / "agree", STANDIN_NO_CORRELATE="0", STANDIN_OP_DEVICE_US=KNOWN)
    assert agree["device_time"]["source"] == "op_table" and agree["device_time"]["mismatch"] == ""
    assert agree["device_time"]["totals_us"]["system_trace"] == pytest.approx(31.0, rel=0.01)


def test_warm_up_executions_outside_the_profiled_iterations_are_left_out_and_said(tmp_path: Path) -> None:
    run = profile(tmp_path, STANDIN_EXEC_BEFORE="4")
    assert per_line(run) == pytest.approx(PER_LINE, rel=0.01)
    assert "44.0 µs outside the profiled iterations left out" in run["device_time"]["found"]["system_trace"]


def test_no_neuron_explorer_says_which_sources_were_tried_and_the_fix(tmp_path: Path) -> None:
    run = profile(tmp_path, explorer=False, expect=5)
    dt = run["device_time"]
    assert dt["source"] == "none" and run["totals"]["self_device_us"] == 0
    assert "neuron-explorer is not installed" in dt["found"]["system_trace"]
    assert "nor the runtime's trace" in dt["note"] and "aws-neuronx-tools" in dt["note"]


def test_a_missing_column_is_named(tmp_path: Path) -> None:
    run = profile(tmp_path, STANDIN_SYSTRACE_DROP="end_ts", expect=5)
    assert run["device_time"]["source"] == "none"
    assert "has no column end_ts" in run["device_time"]["found"]["system_trace"]


def test_analyze_re_reads_the_kept_tables_without_neuron_explorer(tmp_path: Path) -> None:
    run = profile(tmp_path)
    env = {"PYTHONPATH": str(STANDINS)}  # PATH without the stand-in neuron-explorer
    proc = oplens_cli(tmp_path, "analyze", run["run_id"], "--json", "-", **env)
    assert proc.returncode == 0, proc.stderr
    again = json.loads(proc.stdout)
    assert per_line(again) == pytest.approx(PER_LINE, rel=0.01)


COMPILED = """\
import torch

X, W, EPS = torch.randn(1, 8, 16), torch.ones(16), 1e-6


def naive(x, w):
    x_sq = x * x
    mean_sq = x_sq.mean(dim=-1, keepdim=True)
    mean_eps = mean_sq + EPS
    inv_rms = torch.rsqrt(mean_eps)
    x_norm = x * inv_rms
    return x_norm * w


compiled = torch.compile(naive, backend="eager", fullgraph=True)


def rmsnorm_compiled():
    return compiled(X, W)
"""


def profile_compiled(tmp_path: Path, **env: str) -> dict[str, Any]:
    """The compiled variant: one NEFF, one execution of 50 µs per call, its instructions naming lines 7-12
    (8 and 9 fused into one instruction) where compiled with framework debug info."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "c.py").write_text(COMPILED)
    f = str(tmp_path / "c.py")
    frames = f"{f}:naive:7=0.2;{f}:naive:8+{f}:naive:9=0.3;{f}:naive:10=0.1;{f}:naive:11=0.2;{f}:naive:12=0.2"
    path = f"{write_stand_in_explorer(tmp_path / 'bin').parent}{os.pathsep}{os.environ['PATH']}"
    proc = oplens_cli(tmp_path, "profile", "c.py::rmsnorm_compiled", "--backend", "neuron", *FAST, "--json", "-",
                      timeout=300, PYTHONPATH=str(STANDINS), PATH=path, STANDIN_NO_CORRELATE="1",
                      STANDIN_EXEC_US="Torch-Compiled Region*=50", STANDIN_NEFF_FRAMES=frames, **env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    run: dict[str, Any] = json.loads(proc.stdout)
    return run


def test_a_compiled_graph_s_device_time_is_split_over_the_lines_it_fused(tmp_path: Path) -> None:
    run = profile_compiled(tmp_path, NEURON_FRAMEWORK_DEBUG="1")
    assert per_line(run) == pytest.approx({19: 50.0}, rel=0.01)  # the call line holds the graph's time
    (line,) = [s for s in run["lines"] if s["line"] == 19]
    (region,) = line["compiled"]
    split = {s["line"]: s["self_device_us"] for s in region["split"]}
    assert split == pytest.approx({7: 10.0, 8: 7.5, 9: 7.5, 10: 5.0, 11: 10.0, 12: 10.0}, rel=0.01)
    assert {s["function"] for s in region["split"]} == {"naive"}
    assert sum(s["pct"] for s in region["split"]) == pytest.approx(100.0)
    assert "instructions" in region["split_note"]
    proc = oplens_cli(tmp_path, "analyze", run["run_id"], "--json", "-", PYTHONPATH=str(STANDINS))
    assert proc.returncode == 0, proc.stderr
    (again,) = [s for s in json.loads(proc.stdout)["lines"] if s["line"] == 19]
    assert {s["line"]: s["self_device_us"] for s in again["compiled"][0]["split"]} == pytest.approx(split, rel=0.01)


def test_without_framework_debug_info_the_region_says_how_to_get_the_split(tmp_path: Path) -> None:
    run = profile_compiled(tmp_path)
    (line,) = [s for s in run["lines"] if s["line"] == 19]
    (region,) = line["compiled"]
    note = region["split_note"]
    assert region["split"] == [] and "--neuron-debug-info" in note and "before the first compile" in note, note
    assert "XLA_IR_DEBUG=1 and XLA_HLO_DEBUG=1" in note and "NEURON_FRAMEWORK_DEBUG=1 for older releases" in note
    text = oplens_cli(tmp_path, "analyze", run["run_id"], PYTHONPATH=str(STANDINS))
    assert text.returncode == 0 and "--neuron-debug-info" in " ".join(text.stdout.split())


def test_the_compiled_split_is_printed_by_the_cli(tmp_path: Path) -> None:
    run = profile_compiled(tmp_path, NEURON_FRAMEWORK_DEBUG="1")
    proc = oplens_cli(tmp_path, "analyze", run["run_id"], PYTHONPATH=str(STANDINS))
    assert proc.returncode == 0, proc.stderr
    (printed,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("line 19: Torch-Compiled Region")]
    assert "line 7 (naive) 10.0 µs, 20 %" in " ".join(proc.stdout.split()), printed
    # and the editor's hover on the call line (the language server's markdown) lists each fused line
    stored = Run.from_dict(run)
    (stat,) = [s for s in stored.lines if s.line == 19]
    hover = views.line_markdown(stored, stat)
    assert "| fused line | Self NEURON | % |" in hover and "| 7 `naive` | 10.0 µs | 20 % |" in hover


FUSED = """\
import torch

X, W, EPS = torch.randn(1, 8, 16), torch.ones(16), 1e-6


def rmsnorm_fused():
    return torch.rms_norm(X, (X.shape[-1],), W, EPS)
"""


def test_the_fused_builtin_s_one_execution_comes_back_on_its_line(tmp_path: Path) -> None:
    """examples/rmsnorm.py's rmsnorm_fused: one device execution per call (TorchNeuron's fused kernel)."""
    (tmp_path / "f.py").write_text(FUSED)
    path = f"{write_stand_in_explorer(tmp_path / 'bin').parent}{os.pathsep}{os.environ['PATH']}"
    proc = oplens_cli(tmp_path, "profile", "f.py::rmsnorm_fused", "--backend", "neuron", *FAST, "--json", "-",
                      timeout=240, PYTHONPATH=str(STANDINS), PATH=path, STANDIN_NO_CORRELATE="1",
                      STANDIN_EXEC_US="aten::rms_norm=40")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    run = json.loads(proc.stdout)
    assert run["device_time"]["source"] == "system_trace"
    assert per_line(run) == pytest.approx({7: 40.0}, rel=0.01)


def test_neuron_explorer_s_processing_warnings_become_the_run_s(tmp_path: Path) -> None:
    message = "Current NEFF is missing compiler metrics. Please re-compile using latest version of the compiler."
    run = profile(tmp_path, STANDIN_EXPLORER_WARNING=f"Missing Data: {message}")  # the schema reference's example
    assert per_line(run) == pytest.approx(PER_LINE, rel=0.01)
    assert f"Neuron Explorer, processing the system trace: Missing Data: {message}" in run["backend"]["warnings"]
