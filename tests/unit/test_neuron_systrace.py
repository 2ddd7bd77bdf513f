"""Each line's device time from a STAND-IN processed system profile (issue 20, source (b)).

No Neuron Explorer runs here, so the test writes the processed system profile with pyarrow, column by
column as `aws-neuron/aws-neuron-sdk` `tools/neuron-explorer/profile-schema-reference.rst` (schema 7.4.0)
gives `SystemProfileEvents` (`id, name, start_ts, end_ts, duration_ns, trace_event_source` framework /
neuron_rt / neuron_hw, `instance_id, process_id, thread_id, nc_idx, pcore_idx, worker_gid, flow_id`
("array of string ... linking a framework dispatch event to the corresponding runtime execution event"),
`framework_stream_id, extra_attributes_json`) and `Flow` (`in_id, out_id, in_table, out_table,
dependency_type, gap_time`). The hardware rows follow what Tilebench read on trn2
(`Deep-Learning-Profiling-Tools/Tilebench`, `tilebench/core/nki_timer.py`): one `nc_exec_running` row per
physical core at LNC=2 ("merged into [min start, max end]"), `model_id` in `extra_attributes_json`, and
flow ids that are "small per-model counters" (`tilebench/neuron_diag/native_device.py`): here each model's
flow id is its execution count, so two graphs share flow id "0".

The workload: the RMSNorm example's naive form, one op and one graph a line on lines 25-30, two
profiled iterations, known device durations.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from oplens.analysis.chrome_trace import events_of
from oplens.backends.neuron import systrace

I64, STR = pa.int64(), pa.string()
SCHEMA: list[tuple[str, pa.DataType]] = [
    ("id", I64), ("name", STR), ("start_ts", I64), ("end_ts", I64), ("duration_ns", I64), ("trace_event_source", STR),
    ("instance_id", STR), ("process_id", I64), ("thread_id", I64), ("nc_idx", I64), ("pcore_idx", I64), ("worker_gid", I64),
    ("flow_id", pa.list_(STR)), ("framework_stream_id", STR), ("extra_attributes_json", STR),
]  # fmt: skip
FLOW_SCHEMA: list[tuple[str, pa.DataType]] = [
    ("in_id", I64), ("out_id", I64), ("in_table", STR), ("out_table", STR), ("dependency_type", STR), ("gap_time", I64)
]  # fmt: skip

DEF_LINE = 24
# line -> (op, model id, device µs): the naive RMSNorm's six executions per iteration.
NAIVE = {
    25: ("aten::pow", "1001", 12.0),
    26: ("aten::mean", "1002", 30.5),
    27: ("aten::add", "1003", 4.25),
    28: ("aten::rsqrt", "1004", 6.0),
    29: ("aten::mul", "1005", 11.0),
    30: ("aten::mul", "1006", 9.5),
}
ITERS = 2
HOST_T0 = 1_778_711_290_599_971_590  # the runtime's ns epoch (the session folder's name in Pidem/equiformer-trainium)
DEVICE_T0 = 5_000_000_000_000  # the device rows on their own timebase (the order rule never compares clocks)
TID = 4242


class Profile:
    """Rows of SystemProfileEvents (and Flow), built as a run of the workload would leave them."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.flow: list[tuple[int, int]] = []

    def add(self, name: str, source: str, start: int, end: int, *, thread: int = TID, flows: list[str] | None = None,
            model: str | None = None, pcore: int | None = None, nc: int | None = None) -> int:  # fmt: skip
        rid = len(self.rows) + 1
        self.rows.append({
            "id": rid, "name": name, "start_ts": start, "end_ts": end, "duration_ns": end - start, "trace_event_source": source,
            "instance_id": "i-0b1ea78ca2865fd32", "process_id": 1765325, "thread_id": thread, "nc_idx": nc, "pcore_idx": pcore,
            "worker_gid": 0 if nc is not None else None, "flow_id": flows, "framework_stream_id": None,
            "extra_attributes_json": json.dumps({"model_id": model}) if model is not None else None,
        })  # fmt: skip
        return rid

    def write(self, folder: Path, drop: tuple[str, ...] = ()) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        schema = [(n, t) for n, t in SCHEMA if n not in drop]
        cols = {n: [r[n] for r in self.rows] for n, _ in schema}
        pq.write_table(pa.table(cols, schema=pa.schema(schema)), folder / f"{systrace.TABLE}.parquet")
        if self.flow:
            rows = [(a, b, "system_profile_events", "system_profile_events", "FLOW_DEPENDENCE", 0) for a, b in self.flow]
            cols = {n: [r[i] for r in rows] for i, (n, _) in enumerate(FLOW_SCHEMA)}
            pq.write_table(pa.table(cols, schema=pa.schema(FLOW_SCHEMA)), folder / f"{systrace.FLOW_TABLE}.parquet")
        return folder


def naive_run(*, links: str = "flow_id", framework_rows: bool = True, warmup: bool = False,
              models: dict[tuple[int, int], str] | None = None, extra_execution: bool = False) -> Profile:  # fmt: skip
    """links: "flow_id" (shared flow ids, as the docs give), "table" (Flow edges), or "" (none)."""
    p = Profile()
    models = models or {}
    counters: dict[str, int] = {}
    device_t = DEVICE_T0 if not links else None

    def execution(model: str, us: float, launch: int) -> None:
        nonlocal device_t
        flow = str(counters.get(model, 0))
        counters[model] = int(flow) + 1
        d = round(us * 1000)
        start = device_t if device_t is not None else launch + 2_000
        rt = p.add(
            "nrt_execute", systrace.RT, launch, launch + 1_500, flows=[flow] if links == "flow_id" else None, model=model, nc=0
        )
        # LNC=2: one row per physical core, each shorter than the execution; their merged span is `d`.
        a = p.add(systrace.HW_EXEC_EVENT, systrace.HW, start, start + d - 300, thread=0, flows=[flow], model=model, pcore=0, nc=0)
        b = p.add(systrace.HW_EXEC_EVENT, systrace.HW, start + 200, start + d, thread=0, flows=[flow], model=model, pcore=1, nc=0)
        if links == "table":
            p.flow += [(rt, a), (rt, b)]
        if device_t is not None:
            device_t += d + 7_000

    t = HOST_T0
    if warmup:  # a call before the profiled iterations (OpLens's warm-up): outside every iteration
        if framework_rows:
            p.add("aten::pow", systrace.FRAMEWORK, t, t + 8_000)
        execution("1001", 12.0, t + 1_000)
        t += 100_000
    for k in range(ITERS):
        it_start = t
        t += 1_000
        for line, (op, model, us) in NAIVE.items():
            model = models.get((k, line), model)
            if framework_rows:
                p.add(f"oplens.line:{line}", systrace.FRAMEWORK, t, t + 40_000)
                p.add(op, systrace.FRAMEWORK, t + 1_000, t + 39_000)
            execution(model, us, t + 5_000)
            t += 41_000
        if extra_execution and k == 1:
            execution("1007", 3.0, t - 30_000)
        if framework_rows:
            p.add(f"oplens.iter:{k}", systrace.FRAMEWORK, it_start, t + 1_000)
        t += 10_000
    return p


def chrome_trace_events(shift_us: float = 0.0) -> list[Any]:
    """The run's trace.json framework events (Kineto's Chrome trace: µs, `cat` user_annotation / cpu_op)."""
    ev: list[dict[str, Any]] = []
    t = 1_000.0 + shift_us
    for k in range(ITERS):
        start = t
        t += 1.0
        for line, (op, _, _) in NAIVE.items():
            ev.append({"ph": "X", "cat": "user_annotation", "name": f"oplens.line:{line}", "ts": t, "dur": 40.0, "tid": 7})
            ev.append(
                {
                    "ph": "X",
                    "cat": "cpu_op",
                    "name": op,
                    "ts": t + 1.0,
                    "dur": 38.0,
                    "tid": 7,
                    "args": {"External id": 100 * k + line},
                }
            )
            t += 41.0
        ev.append(
            {"ph": "X", "cat": "user_annotation", "name": f"oplens.iter:{k}", "ts": start, "dur": t + 1.0 - start, "tid": 7}
        )
        t += 10.0
    return events_of(ev)


def assert_naive(result: systrace.SysTraceTime) -> None:
    assert result.iterations == ITERS
    assert result.pcores_per_execution == 2
    for line, (_, _, us) in NAIVE.items():
        per = result.per_line_us[line]
        assert len(per) == ITERS
        for value in per:
            assert value == pytest.approx(us, rel=0.01), (line, per)
    total = sum(us for _, _, us in NAIVE.values())
    assert result.per_iteration_us == pytest.approx([total] * ITERS, rel=0.01)
    assert result.per_op_us["aten::mul"] == pytest.approx([11.0 + 9.5] * ITERS, rel=0.01)


# --------------------------------------------------------------------------- the rules


def test_flow_links_give_each_execution_to_its_line(tmp_path: Path) -> None:
    folder = naive_run(warmup=True).write(tmp_path / "p")
    result = systrace.line_device_time(folder, DEF_LINE)
    assert result.rule == systrace.RULE_FLOW, result.problems
    assert result.executions == 1 + 6 * ITERS  # per-core rows merged, per-model flow counters kept apart
    assert_naive(result)
    assert result.outside_us == pytest.approx(12.0, rel=0.01)  # the warm-up call's execution
    assert result.problems == []


def test_flow_table_edges_link_too(tmp_path: Path) -> None:
    folder = naive_run(links="table").write(tmp_path / "p")
    result = systrace.line_device_time(folder, DEF_LINE)
    assert result.rule == systrace.RULE_FLOW, result.problems
    assert_naive(result)


def test_without_links_the_clock_free_order_is_used(tmp_path: Path) -> None:
    folder = naive_run(links="").write(tmp_path / "p")
    result = systrace.line_device_time(folder, DEF_LINE)
    assert result.rule == systrace.RULE_ORDER
    assert_naive(result)
    assert any("rule flow" in p and "no flow link" in p for p in result.problems)


def test_framework_events_from_trace_json_on_another_clock(tmp_path: Path) -> None:
    """The run's trace.json (µs, Kineto's clock) with a linked system trace (ns, the runtime's clock):
    the links' times fall outside every iteration, so the flow rule says so and the order rule is used."""
    folder = naive_run(framework_rows=False).write(tmp_path / "p")
    result = systrace.line_device_time(folder, DEF_LINE, framework=chrome_trace_events())
    assert result.rule == systrace.RULE_ORDER, result.problems
    assert_naive(result)
    assert any("another clock" in p for p in result.problems)


def test_a_different_multiset_of_graphs_between_iterations_is_refused(tmp_path: Path) -> None:
    folder = naive_run(links="", models={(1, 27): "2003"}).write(tmp_path / "p")
    result = systrace.line_device_time(folder, DEF_LINE)
    assert result.rule == ""
    assert result.per_line_us == {} and result.per_iteration_us == []
    (why,) = [p for p in result.problems if p.startswith("rule order")]
    assert "multiset of executed graphs (model ids) differs between iterations" in why
    assert "'1003': 1" in why and "'2003': 1" in why


def test_more_executions_than_launches_is_refused(tmp_path: Path) -> None:
    folder = naive_run(links="", extra_execution=True).write(tmp_path / "p")
    result = systrace.line_device_time(folder, DEF_LINE)
    assert result.rule == ""
    assert any("13 executions" in p and "12 launches" in p for p in result.problems)


# --------------------------------------------------------------------------- missing tables and columns


def test_missing_table_is_named(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    result = systrace.line_device_time(tmp_path / "p", DEF_LINE)
    assert result.rule == "" and result.executions == 0
    (why,) = result.problems
    assert "no SystemProfileEvents table" in why


def test_missing_required_column_is_named(tmp_path: Path) -> None:
    folder = naive_run().write(tmp_path / "p", drop=("start_ts",))
    result = systrace.line_device_time(folder, DEF_LINE)
    assert result.rule == ""
    (why,) = result.problems
    assert "table SystemProfileEvents has no column start_ts" in why


def test_missing_flow_id_column_merges_cores_by_overlap(tmp_path: Path) -> None:
    folder = naive_run(links="").write(tmp_path / "p", drop=("flow_id",))
    result = systrace.line_device_time(folder, DEF_LINE)
    assert result.rule == systrace.RULE_ORDER
    assert_naive(result)
    assert any("has no column flow_id" in p for p in result.problems)


def test_no_iterations_in_the_framework_events(tmp_path: Path) -> None:
    folder = naive_run(framework_rows=False).write(tmp_path / "p")
    result = systrace.line_device_time(folder, DEF_LINE)
    assert result.rule == ""
    assert any("oplens.iter:<k>" in p for p in result.problems)
