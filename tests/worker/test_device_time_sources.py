"""Where each op's device time comes from, chosen once before the chain of derived views runs
(analysis/sources.py `choose`), and the chain run once per profile (issue 32, part 2).

The synthetic events are shaped as tests/unit/test_attribution_synthetic.py shapes a PrivateUse1 profile (CPU ops
with correlation ids, device events linked to them); the op table's events as `events.from_function_events`
makes them (each op's device time as one device event linked to it); the runtime's executions as
backends/neuron/runtime.py hands them over (`RuntimeTime`). The last tests profile on the Neuron stand-ins
(tests/standins/) and count the chain's runs in the worker's own `profiling.run`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from oplens.analysis import outliers, sources
from oplens.analysis.attribution import RawEvent
from oplens.analysis.derive import Inputs, derive
from oplens.backends.facts import CPU
from oplens.backends.neuron.facts import NEURON
from oplens.backends.spec import RuntimeTime
from oplens.records.run import BackendInfo, Config, DeviceTimeSources, Run, Target, Totals
from support.neuron import NAIVE_KNOWN, NAIVE_PER_LINE, NAIVE_TARGET, write_stand_in_explorer
from support.paths import STANDINS

T, DEF_LINE, ITERS = 1, 10, 2
TARGET = Target(file="t.py", qualname="fn", first_line=DEF_LINE, last_line=12, source_sha256="", def_line=DEF_LINE)


def cpu(name: str, start: int, end: int, corr: int = 0) -> RawEvent:
    return RawEvent(name=name, thread=T, start_ns=start, end_ns=end, correlation_id=corr)


def device(name: str, start: int, end: int, linked: int) -> RawEvent:
    return RawEvent(name=name, thread=99, start_ns=start, end_ns=end, linked_correlation_id=linked, on_device=True)


def profile(mul_ns: int = 0, add_ns: int = 0) -> list[RawEvent]:
    """Two calls: line 11 `aten::mul`, line 12 `aten::add`, each with a device event of the given length (0: none)."""
    out = []
    for it in range(ITERS):
        o = it * 100_000
        out += [cpu(f"oplens.iter:{it}", o, o + 50_000), cpu("oplens.line:11", o + 100, o + 2_000),
                cpu("aten::mul", o + 200, o + 1_000, corr=o + 1), cpu("oplens.line:12", o + 2_000, o + 4_000),
                cpu("aten::add", o + 2_100, o + 3_000, corr=o + 2)]  # fmt: skip
        out += [device("mul", o + 10_000, o + 10_000 + mul_ns, linked=o + 1)] if mul_ns else []
        out += [device("add", o + 20_000, o + 20_000 + add_ns, linked=o + 2)] if add_ns else []
    return out


def executions(mul_ns: int, add_ns: int) -> list[RawEvent]:
    """The runtime's executions, one per op and call, linked to the launching op (as runtime.py hands them)."""
    return [e for e in profile(mul_ns, add_ns) if e.on_device]


def runtime(mul_ns: int = 0, add_ns: int = 0, found: str = "2 execution(s) placed") -> RuntimeTime:
    per_iter = (mul_ns + add_ns) / 1000.0
    events = executions(mul_ns, add_ns) if per_iter else []
    return RuntimeTime("system_trace", events, per_iter, found, tables="tables" if per_iter else "")


def inputs(events: list[RawEvent], facts: Any = NEURON, **kw: Any) -> Inputs:
    return Inputs(events, ITERS, TARGET, facts, **kw)


def per_line(attribution: Any) -> dict[int, float]:
    return {s.line: s.self_device_us for s in attribution.lines}


@pytest.fixture
def attributions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many attributions of the profiled calls ran: each decides the outliers once (`outliers.find`)."""
    calls: list[int] = []
    find = outliers.find

    def counting(device_us: Any, cpu_us: Any, work: Any) -> Any:
        calls.append(len(device_us))
        return find(device_us, cpu_us, work)

    monkeypatch.setattr(outliers, "find", counting)
    return calls


def test_kineto_s_linked_device_time_is_used_and_the_chain_goes_on_from_its_attribution(attributions: list[int]) -> None:
    inp = inputs(profile(mul_ns=4_000, add_ns=1_000))
    chosen = sources.choose(inp)
    assert chosen.device_time is not None and chosen.device_time.source == "kineto_linked"
    assert chosen.device_time.totals_us == {"kineto_linked": pytest.approx(5.0)}
    assert "Kineto's device events" in chosen.device_time.note
    d = derive(chosen.inputs, attribution=chosen.attribution)
    assert d.attribution is chosen.attribution and attributions == [ITERS]  # attributed once, not again in the chain
    assert per_line(d.attribution) == pytest.approx({11: 4.0, 12: 1.0})
    assert per_line(d.attribution) == pytest.approx(per_line(derive(inp).attribution))  # as the chain alone makes it


def test_the_op_table_is_used_where_it_holds_more_and_both_totals_are_recorded(attributions: list[int]) -> None:
    chosen = sources.choose(inputs(profile()), op_table=profile(mul_ns=7_000, add_ns=2_000))
    dt = chosen.device_time
    assert dt is not None and dt.source == "op_table"
    assert dt.totals_us == {"kineto_linked": 0.0, "op_table": pytest.approx(9.0)}
    assert "9.0 µs per iteration there, 0.0 µs in Kineto's raw events; the larger was used" in dt.note
    assert per_line(chosen.attribution) == pytest.approx({11: 7.0, 12: 2.0})
    assert attributions == [ITERS]  # Kineto's events hold no device time: measured 0 without an attribution


def test_kineto_s_events_stand_where_the_table_holds_no_more() -> None:
    chosen = sources.choose(inputs(profile(mul_ns=4_000)), op_table=profile(mul_ns=4_000))
    dt = chosen.device_time
    assert dt is not None and dt.source == "kineto_linked"
    assert dt.totals_us == {"kineto_linked": pytest.approx(4.0), "op_table": pytest.approx(4.0)}
    assert per_line(chosen.attribution) == pytest.approx({11: 4.0, 12: 0.0})


def test_an_op_table_that_cannot_be_read_is_said_before_what_kineto_gave() -> None:
    chosen = sources.choose(inputs(profile()), op_table=RuntimeError("no table here"))
    dt = chosen.device_time
    assert dt is not None and dt.source == "none" and dt.totals_us == {"kineto_linked": 0.0}
    assert dt.note.startswith("the op table (prof.events()) could not be read (RuntimeError: no table here); "
                              "no Neuron device time: Kineto's linked device events held none")  # fmt: skip
    assert "Fix: " in dt.note


def test_where_no_source_held_device_time_the_runtime_s_executions_take_the_device_events_place(
    attributions: list[int],
) -> None:
    rt = runtime(mul_ns=3_000, add_ns=2_000)
    chosen = sources.choose(inputs(profile()), op_table=profile(), runtime=rt)
    dt = chosen.device_time
    assert dt is not None and dt.source == "system_trace"
    assert dt.totals_us == {"kineto_linked": 0.0, "op_table": 0.0, "system_trace": pytest.approx(5.0)}
    assert dt.found == {"system_trace": "2 execution(s) placed"}
    assert dt.note == "device time from the runtime's system trace: 2 execution(s) placed"
    assert per_line(chosen.attribution) == pytest.approx({11: 3.0, 12: 2.0})
    assert [e for e in chosen.inputs.events if e.on_device] == rt.device_events
    assert attributions == [ITERS]  # neither other source held device time: only the executions were attributed


def test_a_runtime_trace_without_executions_is_named_in_the_note() -> None:
    rt = runtime(found="neuron-explorer is not installed")
    dt = sources.choose(inputs(profile()), op_table=profile(), runtime=rt).device_time
    assert dt is not None and dt.source == "none" and dt.totals_us == {"kineto_linked": 0.0, "op_table": 0.0}
    assert "held none, nor the runtime's trace (neuron-explorer is not installed)" in dt.note
    assert dt.found == {"system_trace": "neuron-explorer is not installed"}


def test_the_runtime_s_total_is_compared_with_the_source_used() -> None:
    dt = sources.choose(inputs(profile(mul_ns=1_000)), runtime=runtime(mul_ns=3_000)).device_time
    assert dt is not None and dt.source == "kineto_linked"
    assert dt.totals_us == {"kineto_linked": pytest.approx(1.0), "system_trace": pytest.approx(3.0)}
    assert "1.0 µs per iteration from kineto_linked (used), 3.0 µs from system_trace" in dt.mismatch
    agree = sources.choose(inputs(profile(mul_ns=3_000)), runtime=runtime(mul_ns=3_000)).device_time
    assert agree is not None and agree.mismatch == ""


def test_without_a_device_device_time_is_cpu_time() -> None:
    chosen = sources.choose(inputs(profile(), CPU))
    dt = chosen.device_time
    assert dt is not None and dt.source == "cpu"
    assert dt.totals_us == {"cpu": pytest.approx(chosen.attribution.totals.self_cpu_us)}


def stored(source: str) -> Run:
    return Run(target=TARGET, backend=BackendInfo("neuron", "NEURON"), config=Config(1, ITERS), totals=Totals(0, 0, 0),
               lines=[], ops=[], device_time=DeviceTimeSources(source=source))  # fmt: skip


def test_a_stored_run_follows_its_stored_choice() -> None:
    trace = profile()  # trace.json holds Kineto's events: no device time here
    again = sources.choose(inputs(trace, stored=stored("system_trace")), runtime=runtime(mul_ns=3_000))
    assert per_line(again.attribution) == pytest.approx({11: 3.0, 12: 0.0}) and again.note == ""
    assert again.device_time is not None and again.device_time.source == "system_trace"  # as stored, not re-made
    unread = sources.choose(inputs(trace, stored=stored("system_trace")), runtime=runtime(found="no tables"))
    assert "was not read again (no tables): lines carry 0 device time" in unread.note
    table = sources.choose(inputs(trace, stored=stored("op_table")), runtime=runtime(mul_ns=3_000))
    assert table.note == sources.STORED_OP_TABLE and per_line(table.attribution) == {11: 0.0, 12: 0.0}


# ---- on the Neuron stand-ins: the worker's own profile, its chain's runs counted -------------------------

COUNTING = """\
import json, sys
from pathlib import Path
from oplens.analysis import derive, outliers
from oplens.engine.targets import resolve
from oplens.records.job import Job
from oplens.worker import profiling

folder, iters = Path(sys.argv[1]), int(sys.argv[2])
counts = {"chain": 0, "attributions": 0}
(first, step), *rest = derive.STEPS


def counted(d, inp):  # the chain's first step after the attribution: once per run of the chain
    counts["chain"] += 1
    step(d, inp)


derive.STEPS = ((first, counted), *rest)
find = outliers.find


def counting(device_us, cpu_us, work):  # each attribution of the profiled calls decides the outliers once
    counts["attributions"] += len(device_us) == iters
    return find(device_us, cpu_us, work)


outliers.find = counting
target, fn = resolve(folder / "rmsnorm.py", "rmsnorm_naive", None)
(folder / "stage").mkdir()
job = Job(target=target, signature=fn.signature, args="", backend="neuron", warmup=1, iters=iters,
          stage_dir=str(folder / "stage"), workspace=str(folder))
run = profiling.run(job, lambda stage, done, total: None)
print(json.dumps({**counts, "run": run.to_dict()}))
"""


def run_counting(tmp_path: Path, explorer: bool, **env: str) -> dict[str, Any]:
    (tmp_path / "rmsnorm.py").write_text(NAIVE_TARGET)
    full = {k: v for k, v in os.environ.items() if not k.startswith(("STANDIN_", "NEURON_RT_"))}
    if explorer:
        full["PATH"] = f"{write_stand_in_explorer(tmp_path / 'bin').parent}{os.pathsep}{full['PATH']}"
    full.update(env, PYTHONPATH=str(STANDINS), CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([sys.executable, "-c", COUNTING, str(tmp_path), "3"], cwd=tmp_path, env=full,
                          capture_output=True, text=True, timeout=240)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    out: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    return out


@pytest.mark.neuron
def test_a_neuron_run_whose_device_time_is_the_op_table_s_runs_the_chain_once(tmp_path: Path) -> None:
    """Before: once on Kineto's events, the op table attributed, the chain again on the table's (2 runs, 3 attributions)."""
    out = run_counting(tmp_path, explorer=False, STANDIN_OP_DEVICE_US=NAIVE_KNOWN)
    assert out["run"]["device_time"]["source"] == "op_table"
    assert {s["line"]: s["self_device_us"] for s in out["run"]["lines"] if s["self_device_us"]} == pytest.approx(NAIVE_PER_LINE)
    assert (out["chain"], out["attributions"]) == (1, 1)


@pytest.mark.neuron
def test_a_neuron_run_whose_device_time_is_the_system_trace_s_runs_the_chain_once(tmp_path: Path) -> None:
    """Before: once on Kineto's events, the op table attributed, the chain again on the executions (2 runs, 3 attributions)."""
    out = run_counting(tmp_path, explorer=True, STANDIN_NO_CORRELATE="1", STANDIN_EXEC_US=NAIVE_KNOWN)
    assert out["run"]["device_time"]["source"] == "system_trace"
    assert {s["line"]: s["self_device_us"] for s in out["run"]["lines"] if s["self_device_us"]} == pytest.approx(
        NAIVE_PER_LINE, rel=0.01
    )
    assert (out["chain"], out["attributions"]) == (1, 1)
