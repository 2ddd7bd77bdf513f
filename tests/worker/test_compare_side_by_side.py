"""`oplens compare` measures its variants side by side in one worker (issue 37): the real CLI, real torch, real
worker processes on this shared machine. The tests assert the method and the verdicts, never absolute times;
how often an A/A compare is clean over many runs is bench/verdicts.py's."""

from __future__ import annotations

import json
import os
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from oplens.analysis.chrome_trace import read_events
from oplens.engine.compare import MIN_EFFECT
from oplens.records import names
from support.cli import oplens_cli
from support.neuron import NAIVE_KNOWN, NAIVE_PER_LINE, NAIVE_TARGET, write_stand_in_explorer
from support.paths import DATA, EXAMPLE, STANDINS

# Two identical functions under two names (an A/A), one doing the same work twice (2× slower), and one that raises.
VARIANTS = (DATA / "variants.py").read_text()


def compare(ws: Path, *argv: str) -> tuple[Any, str]:
    proc = oplens_cli(ws, "compare", *argv, "--json", "-")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


@pytest.mark.timing
def test_an_a_a_compare_holds_1_and_a_doubled_variant_is_slower_all_in_one_worker(tmp_path: Path) -> None:
    (tmp_path / "variants.py").write_text(VARIANTS)
    for _ in range(2):  # a 95 % interval misses 1 in 20 A/As by design: a second run must not (the code would)
        data, _ = compare(tmp_path, "variants.py::same_a", "variants.py::same_b", "variants.py::twice", "--args",
                          "make_inputs()", "--warmup", "2", "--iters", "30")  # fmt: skip
        if data["summary"][1]["verdict"] == "no measurable difference":
            break
    rows = data["summary"]
    assert [r["variant"] for r in rows] == ["same_a", "same_b", "twice"]
    a_a, doubled = rows[1], rows[2]
    low, high = a_a["speedup_interval"]
    # what the user reads: no measurable difference (its interval holds 1x, or stays within the least difference
    # worth naming: beside a third variant, each follows another in the rotation)
    assert a_a["verdict"] == "no measurable difference" and low <= 1 + MIN_EFFECT and high >= 1 / (1 + MIN_EFFECT), a_a
    # about 0.5×: the verdict, and the median ratio (its interval's slow end is wide on a loaded machine: 0.96 once,
    # with two test suites beside it)
    assert doubled["verdict"] == "slower" and doubled["speedup"] < 0.8, doubled
    assert {r["method"] for r in rows[1:]} == {"interleaved_plain"}  # on the CPU: the plain rounds' calls
    assert all(len(r["config"]["side_by_side"]["plain_calls_us"]) == 30 for r in data["runs"])
    # one measurement: the runs share a group, each knows its calls in the shared trace
    places = [r["config"]["side_by_side"] for r in data["runs"]]
    assert len({p["group"] for p in places}) == 1 and [p["index"] for p in places] == [0, 1, 2]
    assert all(len(p["trace_calls"]) == 30 for p in places)
    # the calls alternate in the trace: every round calls each variant once, the order rotated each round
    run_dir = tmp_path / ".oplens" / "runs" / data["runs"][0]["run_id"]
    owner = _callers(run_dir / "trace.json", {r["target"]["def_line"]: i for i, r in enumerate(data["runs"])},
                     data["runs"])  # fmt: skip
    rounds = [owner[k : k + 3] for k in range(0, len(owner), 3)]
    assert len(rounds) == 30 and all(sorted(r) == [0, 1, 2] for r in rounds), rounds
    # rotated and reversed in turn (A B C, C B A, B C A, A C B, C A B, B A C): each variant after each other one
    assert len({tuple(r) for r in rounds}) == 6
    after = {(r[i - 1], r[i]) for r in rounds for i in (1, 2)}
    assert after == {(a, b) for a in range(3) for b in range(3) if a != b}
    # each run's own calls, and its lines, are its own function's
    for run in data["runs"]:
        first, last = run["target"]["first_line"], run["target"]["last_line"]
        assert run["lines"] and all(first <= s["line"] <= last for s in run["lines"])
        assert run["config"]["iters"] == 30 and len(run["totals"]["device_samples_us"]) == 30


def _callers(trace: Path, def_lines: dict[int, int], runs: list[Any]) -> list[int]:
    """Which variant each profiled call of the shared trace ran, in order (by the lines its markers name)."""
    events = read_events(trace)
    spans = sorted((e.start_ns, e.end_ns, int(e.name[len(names.ITER_RANGE):])) for e in events
                   if e.name.startswith(names.ITER_RANGE))  # fmt: skip
    ranges = [(r["target"]["first_line"], r["target"]["last_line"]) for r in runs]
    owner: dict[int, int] = {}
    for e in events:
        if not e.name.startswith(names.LINE_RANGE):
            continue
        line = int(e.name[len(names.LINE_RANGE):])
        for start, end, k in spans:
            if start <= e.start_ns <= end:
                owner[k] = next(i for i, (a, b) in enumerate(ranges) if a <= line <= b)
    return [owner[k] for k in sorted(owner)]


def test_a_failing_variant_is_named_and_the_others_still_compared(tmp_path: Path) -> None:
    (tmp_path / "variants.py").write_text(VARIANTS)
    data, _ = compare(tmp_path, "variants.py::same_a", "variants.py::broken", "variants.py::twice", "--args",
                      "make_inputs(64)", "--warmup", "1", "--iters", "5")  # fmt: skip
    assert [r["variant"] for r in data["summary"]] == ["same_a", "twice"]
    (failed,) = data["failed"]
    assert failed["variant"].endswith("variants.py::broken") and "this variant is broken" in failed["error"]["message"]
    proc = oplens_cli(tmp_path, "compare", "variants.py::same_a", "variants.py::broken", "--args", "make_inputs(64)",
                      "--warmup", "1", "--iters", "3")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "not compared" in proc.stdout and "this variant is broken" in proc.stdout


def test_a_package_module_beside_a_flat_file_each_with_its_own_args(tmp_path: Path) -> None:
    """A package with a relative import (laid out as projects are) beside a standalone script, each called on its
    own arguments."""
    pkg = tmp_path / "src" / "normlib"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text("def eps():\n    return 1e-6\n")
    (pkg / "norms.py").write_text(textwrap.dedent("""\
        import torch

        from .helpers import eps


        def rms(x, w):
            mean = (x * x).mean(-1, keepdim=True)
            return x * torch.rsqrt(mean + eps()) * w
        """))
    (tmp_path / "flat.py").write_text(textwrap.dedent("""\
        import torch


        def fused(x, weight):
            return torch.rms_norm(x, (x.shape[-1],), weight, 1e-6)
        """))
    data, _ = compare(tmp_path, "src/normlib/norms.py::rms", "flat.py::fused",
                      "--args", "torch.randn(8, 512), torch.ones(512)", "--args", "torch.randn(8, 512), torch.ones(512)",
                      "--warmup", "1")  # fmt: skip
    runs = data["runs"]
    # no --iters: as many rounds as take about FILL_S, at least the default 20 (these calls are short: the most)
    rounds = {r["config"]["iters"] for r in runs}
    assert len(rounds) == 1 and 20 <= rounds.pop() <= 200
    assert all(len(r["config"]["side_by_side"]["trace_calls"]) == r["config"]["iters"] for r in runs)
    assert [r["target"]["module"] for r in runs] == ["normlib.norms", "<script>"]
    assert [r["config"]["args"] for r in runs] == ["torch.randn(8, 512), torch.ones(512)"] * 2
    assert data["summary"][1]["method"] == "interleaved_plain"


@pytest.mark.timing
def test_the_fail_if_slower_gate(tmp_path: Path) -> None:
    (tmp_path / "variants.py").write_text(VARIANTS)
    common = ["--args", "make_inputs()", "--warmup", "1", "--iters", "20", "--fail-if-slower", "20"]
    slower = oplens_cli(tmp_path, "compare", "variants.py::same_a", "variants.py::twice", *common)
    assert slower.returncode == 1, slower.stderr
    assert re.search(r"twice .*slower", slower.stdout)
    faster = oplens_cli(tmp_path, "compare", "variants.py::twice", "variants.py::same_a", *common)
    assert faster.returncode == 0, faster.stderr


@pytest.mark.timing
def test_the_case_study_naive_fused_and_compiled(tmp_path: Path) -> None:
    """examples/rmsnorm.py's three variants: the compiled one compiles before the rounds (its compile reported apart);
    neither the fused nor the compiled one, both faster than the naive unprofiled (1.1-1.3x on this CPU), is ever
    reported slower (whether the small gain shows as "faster" is bench/verdicts.py's count)."""
    data, _ = compare(tmp_path, *(f"{EXAMPLE}::{v}" for v in ("rmsnorm_naive", "rmsnorm_fused", "rmsnorm_compiled")),
                      "--args", "make_inputs(4, 256, 1024)", "--warmup", "2", "--iters", "15")  # fmt: skip
    rows = data["summary"]
    assert rows[0]["verdict"] == "baseline" and all(r["verdict"] in ("faster", "no measurable difference")
                                                    for r in rows[1:]), rows  # fmt: skip
    compiled = data["runs"][2]
    assert compiled["compile"]["graphs"] >= 1 and compiled["compile"]["compile_us"] > 0


NEURON_VARIANTS = """\
import torch


def mul_then_mm():
    x = torch.ones(32, 32)
    y = x * x
    return (y @ x).sum()


def mm_only():
    x = torch.ones(32, 32)
    return (x @ x).sum()
"""


@pytest.mark.neuron
def test_on_the_neuron_stand_in_each_variant_has_its_own_device_time(tmp_path: Path) -> None:
    """The Neuron stand-in (tests/standins/torch_neuronx: known device time per op in the op table, as TorchNeuron's
    correlate_device_time gives it): each variant's calls are split out of the one session's op table too, and
    the speed-up is the profiled device time's (a device's own clock: no plain rounds)."""
    (tmp_path / "t.py").write_text(NEURON_VARIANTS)
    proc = oplens_cli(tmp_path, "compare", "t.py::mul_then_mm", "t.py::mm_only", "--backend", "neuron", "--warmup", "1",
                      "--iters", "6", "--json", "-", PYTHONPATH=str(STANDINS),
                      STANDIN_OP_DEVICE_US="aten::mul=7,aten::mm=30")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    totals = [r["totals"]["self_device_us"] for r in data["runs"]]
    assert totals == [pytest.approx(37.0), pytest.approx(30.0)]  # each its own ops' time, none of the other's
    row = data["summary"][1]
    assert row["method"] == "interleaved" and row["speedup"] == pytest.approx(37 / 30, rel=1e-3)
    assert row["verdict"] == "faster" and row["speedup_interval"] == [pytest.approx(37 / 30, rel=1e-3)] * 2  # known times


@pytest.mark.neuron
def test_on_the_neuron_stand_ins_documented_path_each_variant_has_its_own_system_trace_time(tmp_path: Path) -> None:
    """The documented NeuronConfig (no correlate_device_time: Neuron device time only from the system trace, read by a
    documented-only neuron-explorer; stand-ins, tests/standins/README.md): the session's one system trace holds
    both variants' executions, and each variant's run gets those its own calls launched, none of the other's."""
    path = f"{write_stand_in_explorer(tmp_path / 'bin').parent}{os.pathsep}{os.environ['PATH']}"
    (tmp_path / "rmsnorm.py").write_text(NAIVE_TARGET + "\n\ndef scale_only():\n    return X * W\n")
    proc = oplens_cli(tmp_path, "compare", "rmsnorm.py::rmsnorm_naive", "rmsnorm.py::scale_only", "--backend", "neuron",
                      "--warmup", "1", "--iters", "3", "--json", "-", timeout=300, PYTHONPATH=str(STANDINS),
                      STANDIN_EXEC_US=NAIVE_KNOWN, PATH=path, STANDIN_API="documented",
                      STANDIN_EXPLORER_DOCUMENTED_ONLY="1")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    naive, scale = data["runs"]
    assert [r["device_time"]["source"] for r in data["runs"]] == ["system_trace", "system_trace"]
    assert {s["line"]: s["self_device_us"] for s in naive["lines"] if s["self_device_us"]} == pytest.approx(NAIVE_PER_LINE)
    assert scale["totals"]["self_device_us"] == pytest.approx(7.0)  # its one aten::mul execution a call
    row = data["summary"][1]
    assert row["method"] == "interleaved" and row["speedup"] == pytest.approx(31.0 / 7.0, rel=1e-3)
    assert row["verdict"] == "faster"
