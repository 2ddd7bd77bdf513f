"""Every generation of TorchNeuron's profiling API (issue 20 item 3), against the STAND-IN torch_neuronx and
neuron-explorer (tests/standins/): the generation is detected from the installed signatures (api.py), recorded in
the run (`backend.details["api"]`), and a profile of examples/rmsnorm.py's `rmsnorm_naive` gives the known per-line
Self NEURON through each.

Real material followed: the early `NeuronProfiler(pytorch_activities=..., record_shapes=..., pytorch_trace_file=...,
neuron_output_dir="./output", event_filters=...)` context manager and its `framework_mapping_<ts>.json`
(parmoham-aws/test-repo-parmoham, torch_neuronx/profiling.py, tests/profiler/); the documented NeuronConfig +
torch.profiler form (how-to-profile-workload.rst); NeuronConfig's correlate_device_time.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from oplens.backends.neuron import api
from support.neuron import NAIVE_KNOWN, NAIVE_PER_LINE, NAIVE_TARGET, profile_on_stand_ins

# TorchNeuron runs on Python 3.12+ only: `make test` runs these on 3.12 and 3.13
pytestmark = pytest.mark.neuron

FAST = ["--warmup", "1", "--iters", "3"]
TARGET, KNOWN, PER_LINE = NAIVE_TARGET, NAIVE_KNOWN, NAIVE_PER_LINE
SKEW = str(10**12)  # the runtime's clock 1000 s off the framework's


def profile(tmp_path: Path, **env: str) -> dict[str, Any]:
    return profile_on_stand_ins(tmp_path, TARGET, "rmsnorm.py::rmsnorm_naive", *FAST, STANDIN_EXEC_US=KNOWN, **env)[0]


def per_line(run: dict[str, Any]) -> dict[int, float]:
    return {s["line"]: s["self_device_us"] for s in run["lines"] if s["self_device_us"]}


# --------------------------------------------------------------------------- detection, by signature only


class _Early:
    def __init__(self, pytorch_activities: Any = None, record_shapes: bool = False, pytorch_trace_file: Any = None,
                 neuron_output_dir: str = "./output", event_filters: Any = None) -> None: ...  # fmt: skip

    def __enter__(self) -> _Early:
        return self

    def __exit__(self, *exc: object) -> None: ...


class _Profiler:
    def __init__(self, config: Any) -> None: ...

    def export_trace(self, prof: Any) -> None: ...


def _config(correlate: bool) -> Any:
    if correlate:
        return lambda modes, profile_output_dir="./profile_output", correlate_device_time=False: None
    return lambda modes, profile_output_dir="./profile_output": None


def test_each_generation_is_told_apart_by_its_signatures_alone() -> None:
    early, _ = api.detect(SimpleNamespace(NeuronProfiler=_Early, __version__="99.0"))
    config, _ = api.detect(SimpleNamespace(NeuronProfiler=_Profiler, NeuronConfig=_config(False)))
    correlate, _ = api.detect(SimpleNamespace(NeuronProfiler=_Profiler, NeuronConfig=_config(True)))
    assert early is not None and early.name == api.EARLY and "pytorch_activities" in early.evidence
    assert config is not None and config.name == api.CONFIG
    assert correlate is not None and correlate.name == api.CORRELATE
    none, why = api.detect(SimpleNamespace(NeuronProfiler=_Profiler))  # no NeuronConfig, not a context manager
    assert none is None and "neither" in why


# --------------------------------------------------------------------------- each generation, end to end


def test_the_early_context_manager_of_the_stand_in_gives_the_known_lines_through_the_system_trace(tmp_path: Path) -> None:
    record = tmp_path / "calls.jsonl"
    run = profile(tmp_path, STANDIN_API="early", STANDIN_RECORD=str(record))
    backend = run["backend"]
    assert backend["details"]["api"] == api.EARLY
    assert any("early profiling API" in w for w in backend["warnings"])
    assert backend["details"]["neuron_profiler"]["pytorch_activities"] == []  # NRT only: OpLens runs torch.profiler
    assert per_line(run) == pytest.approx(PER_LINE, rel=0.01)
    assert run["device_time"]["source"] == "system_trace"
    art = run["artifacts"]
    assert art["trace_json"] == "neuron_profile/pytorch_trace.json"  # where the early profiler writes its own
    assert art["device_profile_dir"].startswith("neuron_profile/i-0standin0000000_pid_")
    run_dir = Path(run["run_dir"])
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    early = next(c for c in calls if c["event"] == "NeuronProfiler.early")
    assert early["neuron_output_dir"].endswith("neuron_profile") and early["pytorch_activities"] == []
    switches = [c["enabled"] for c in calls if c["event"] == "profiler_mapping"]
    assert switches[:2] == [False, True] and switches[-1] is False  # the early profiler's NRT-only off, then OpLens's on
    assert next(c for c in calls if c["event"] == "get_profiler_mappings")["entries"] == 18  # 6 executions x 3 iterations
    assert not any(c["event"] in ("NeuronConfig", "export_trace") for c in calls)
    assert len(list(run_dir.glob("neuron_profile/framework_mapping_*.json"))) == 1


def test_the_documented_neuron_config_of_the_stand_in_gives_the_known_lines(tmp_path: Path) -> None:
    run = profile(tmp_path, STANDIN_API="config")
    assert run["backend"]["details"]["api"] == api.CONFIG
    assert "correlate_device_time" not in run["backend"]["details"]["neuron_config"]
    assert per_line(run) == pytest.approx(PER_LINE, rel=0.01)
    assert run["device_time"]["source"] == "system_trace"


def test_neuron_config_with_correlate_device_time_of_the_stand_in_gives_the_known_lines(tmp_path: Path) -> None:
    run = profile(tmp_path, STANDIN_API="correlate", STANDIN_OP_DEVICE_US=KNOWN)
    assert run["backend"]["details"]["api"] == api.CORRELATE
    assert run["backend"]["details"]["neuron_config"]["correlate_device_time"] is True
    assert per_line(run) == pytest.approx(PER_LINE, rel=0.01)
    assert run["device_time"]["source"] == "op_table"


# --------------------------------------------------------------------------- the framework mapping rule


@pytest.mark.parametrize("warm_in_mapping", ["0", "1"])
def test_the_stand_in_s_framework_mapping_gives_the_lines_without_flows_on_a_skewed_clock(
    tmp_path: Path, warm_in_mapping: str
) -> None:
    """No flow links, the runtime on another clock, and warm-up executions before the profiled ones (which the order
    rule cannot match one to one): the mapping's nrta_seq_id → seq_nr places every execution; the warm-up's, outside
    the mapping's window or beyond the launches of their sequence number, are left out."""
    run = profile(tmp_path, STANDIN_API="early", STANDIN_SYSTRACE_FLOWS="none", STANDIN_SYSTRACE_CLOCK_NS=SKEW,
                  STANDIN_SYSTRACE_NRTA_SEQ="1", STANDIN_EXEC_BEFORE="4", STANDIN_MAPPING_WARMUP=warm_in_mapping)  # fmt: skip
    found = run["device_time"]["found"]["system_trace"]
    assert "rule mapping" in found and "44.0 µs outside the profiled iterations" in found, found
    assert per_line(run) == pytest.approx(PER_LINE, rel=0.01)
    assert run["totals"]["self_device_us"] == pytest.approx(31.0, rel=0.01)


def test_without_sequence_ids_in_the_stand_in_s_tables_the_mapping_says_why_and_order_decides(tmp_path: Path) -> None:
    run = profile(tmp_path, STANDIN_API="early", STANDIN_SYSTRACE_FLOWS="none", STANDIN_SYSTRACE_CLOCK_NS=SKEW)
    found = run["device_time"]["found"]["system_trace"]
    assert "rule order" in found and "carry no nrta_seq_id" in found, found
    assert per_line(run) == pytest.approx(PER_LINE, rel=0.01)
