"""Where device time comes from (issue 20, item 1a): the op table's Self NEURON against Kineto's raw events.

TorchNeuron's early Kineto session hands Kineto no device activities ("The `processTrace()` callback is a
no-op. NRT writes directly to `profile_output_dir`", torch_neuronx/csrc/profiler/README.md in
parmoham-aws/test-repo-parmoham), while users pass `NeuronConfig(..., correlate_device_time=True)` and read
Self NEURON per op from `prof.key_averages()`. The stand-in (tests/standins/torch_neuronx/profiling.py)
puts known device time per op into the op table only, so it comes back per line only through the table.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.cli import oplens_cli
from support.paths import STANDINS

# TorchNeuron runs on Python 3.12+ only: `make test` runs these on 3.12 and 3.13
pytestmark = pytest.mark.neuron

FAST = ["--warmup", "1", "--iters", "2"]
TARGET = """\
import torch


def fn():
    x = torch.ones(32, 32)
    y = x * x
    return (y @ x).sum()
"""
KNOWN = "aten::mul=7,aten::mm=30"  # µs per call: line 6 (x * x) and line 7 (y @ x → aten::matmul → aten::mm)


def profile(tmp_path: Path, *argv: str, expect: int = 0, **env: str) -> dict[str, Any]:
    (tmp_path / "t.py").write_text(TARGET)
    proc: subprocess.CompletedProcess[str] = oplens_cli(tmp_path, "profile", "t.py::fn", *FAST, *argv, "--json", "-",
                                                        timeout=180, **env)  # fmt: skip
    assert proc.returncode == expect, proc.stderr
    if expect:
        assert "no Self NEURON time from any source" in proc.stderr and "system_trace" in proc.stderr, proc.stderr
    run: dict[str, Any] = json.loads(proc.stdout)
    return run


def lines(run: dict[str, Any]) -> dict[int, float]:
    return {s["line"]: s["self_device_us"] for s in run["lines"]}


def test_known_device_time_per_op_comes_back_per_line_from_the_op_table(tmp_path: Path) -> None:
    run = profile(tmp_path, "--backend", "neuron", PYTHONPATH=str(STANDINS), STANDIN_OP_DEVICE_US=KNOWN)
    per_line = lines(run)
    assert per_line[6] == pytest.approx(7.0) and per_line[7] == pytest.approx(30.0)
    assert per_line.get(5, 0.0) == 0.0  # torch.ones: no device time given
    # the op table's events carry the CPU side too: every line, its CPU time, its op calls
    assert set(per_line) >= {5, 6, 7} and all(s["self_cpu_us"] > 0 for s in run["lines"] if s["line"] in (5, 6, 7))
    assert {s["line"]: s["op_calls"] for s in run["lines"]}[6] == 1
    assert run["totals"]["self_device_us"] == pytest.approx(37.0)
    assert run["totals"]["unattributed_device_us"] == 0
    ops = {o["name"]: o["self_device_us"] for o in run["ops"]}
    assert ops["aten::mul"] == pytest.approx(7.0) and ops["aten::mm"] == pytest.approx(30.0)
    dt = run["device_time"]
    assert dt["source"] == "op_table"
    assert dt["totals_us"] == {"kineto_linked": 0.0, "op_table": pytest.approx(37.0)}  # both, per iteration
    assert "op table" in dt["note"] and "Kineto" in dt["note"] and "the larger was used" in dt["note"]


def test_without_device_time_anywhere_the_stand_in_run_says_none_and_exits_5_with_the_sources_tried(tmp_path: Path) -> None:
    """An older NeuronConfig (no correlate_device_time): the stand-in propagates nothing, Kineto holds no device time,
    and there is no neuron-explorer to read the system trace: the run says 'none' in words and names the fix, and
    `--backend neuron` exits 5 (issue 33: never 0 µs on every line with exit 0), the run still printed and kept."""
    run = profile(tmp_path, "--backend", "neuron", PYTHONPATH=str(STANDINS), STANDIN_OP_DEVICE_US=KNOWN,
                  STANDIN_NO_CORRELATE="1", expect=5)  # fmt: skip
    assert run["totals"]["self_device_us"] == 0 and set(lines(run).values()) == {0.0}
    dt = run["device_time"]
    assert dt["source"] == "none"
    assert dt["totals_us"] == {"kineto_linked": 0.0, "op_table": 0.0}
    assert "no Neuron device time" in dt["note"] and "system trace" in dt["note"]
    assert "Fix:" in dt["note"]


def test_on_the_cpu_device_time_is_cpu_time(tmp_path: Path) -> None:
    run = profile(tmp_path, "--backend", "cpu")
    dt = run["device_time"]
    assert dt["source"] == "cpu" and set(dt["totals_us"]) == {"cpu"}
    assert dt["totals_us"]["cpu"] == pytest.approx(run["totals"]["self_cpu_us"])


def test_an_old_run_without_the_record_reads_back_as_none() -> None:
    from oplens.records.run import DeviceTimeSources, Run

    assert Run.__dataclass_fields__["device_time"].default is None
    assert DeviceTimeSources(source="cpu").totals_us == {}
