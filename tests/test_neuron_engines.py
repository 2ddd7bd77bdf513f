"""The Neuron engine breakdown, read from a STAND-IN processed profile (Neuron Explorer's Parquet tables).

No Neuron Explorer runs here, so the processed profile is written by the test with pyarrow, table by
table and column by column as `tools/neuron-explorer/profile-schema-reference.rst` (schema 7.4.0)
gives them: `ExecutionInfo`, `ActiveTime`, `DmaPacket`, `Summary`, `NeffHeader`. The end-to-end test
runs the stand-in `torch_neuronx` and the stand-in `neuron-explorer` (tests/standins/), whose ingest
copies that profile to where the docs put a processed profile (`<data-path>/profiles/global/<name>@latest/`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import STANDINS, stop_group
from oplens.backends.neuron import engines
from oplens.records.run import GraphEngines, LineStat, NtffFile, Run

I64, I32, F32, STR = pa.int64(), pa.int32(), pa.float32(), pa.string()


# --------------------------------------------------------------------------- the stand-in processed profile


def write_table(folder: Path, name: str, schema: list[tuple[str, pa.DataType]], rows: list[tuple[Any, ...]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    columns = {field: [row[i] for row in rows] for i, (field, _) in enumerate(schema)}
    pq.write_table(pa.table(columns, schema=pa.schema(schema)), folder / f"{name}.parquet")


def execution_info(folder: Path, runs: list[tuple[str, int, int]]) -> None:
    schema = [("execution_index", I32), ("neff_name", STR), ("execution_start_ts", I64), ("execution_end_ts", I64),
              ("num_subgraphs", I32), ("row_count", I64)]  # fmt: skip
    write_table(folder, "ExecutionInfo", schema, [(i, n, s, e, 1, 100) for i, (n, s, e) in enumerate(runs)])


def active_time(folder: Path, spans: list[tuple[str, int, int, int]]) -> None:
    """(engine, pcore_idx, start_ts, end_ts) rows, in ns."""
    schema = [("start_ts", I64), ("end_ts", I64), ("engine", STR), ("pcore_idx", I64), ("duration_ns", I64)]
    write_table(folder, "ActiveTime", schema, [(s, e, engine, core, e - s) for engine, core, s, e in spans])


def dma_packets(folder: Path, spans: list[tuple[int, int]]) -> None:
    schema = [("start_ts", I64), ("end_ts", I64), ("duration_ns", I64), ("pcore_idx", I64), ("id", I64), ("packet_idx", I32),
              ("packet_aggregation_id", I64), ("engine_idx", I64), ("read_bytes", I64), ("write_bytes", I64),
              ("transfer_bytes", I64), ("throughput", F32), ("queue_type", STR), ("crc", I64)]  # fmt: skip
    rows = [(s, e, e - s, 0, i, 0, i, 0, 4096, 4096, 4096, 4096 / (e - s) * 1e9, "input", 0) for i, (s, e) in enumerate(spans)]
    write_table(folder, "DmaPacket", schema, rows)


def summary(folder: Path, total_s: float, active_s: dict[str, float], dma_s: float) -> None:
    schema: list[tuple[str, pa.DataType]] = [("total_time", F32), ("dma_active_time", F32), ("dma_active_time_percent", F32)]
    row: list[Any] = [total_s, dma_s, 100 * dma_s / total_s]
    for engine, seconds in active_s.items():
        schema += [(f"{engine}_engine_active_time", F32), (f"{engine}_engine_active_time_percent", F32)]
        row += [seconds, 100 * seconds / total_s]
    write_table(folder, "Summary", schema, [tuple(row)])


def neff_header(folder: Path, names: list[str]) -> None:
    schema = [("network_name", STR), ("uuid", STR), ("hash", STR)]
    write_table(folder, "NeffHeader", schema, [(n, "ae5a8d94", "6879b275") for n in names])


def two_calls_of_one_graph(folder: Path) -> None:
    """neff_395760075800974.neff run twice (0-10 µs, 20-30 µs): the Tensor engine busy 6 µs a call, on
    two physical cores that overlap (union, not sum), Vector 2 µs, DMA packets overlapping each other."""
    neff = "neff_395760075800974_vnc_0.neff"
    execution_info(folder, [(neff, 0, 10_000), (neff, 20_000, 30_000)])
    active_time(folder, [
        ("tensor", 0, 1_000, 5_000), ("tensor", 1, 3_000, 7_000),  # union 1-7 µs: 6 µs
        ("Vector", 0, 8_000, 10_000),
        ("tensor", 0, 21_000, 27_000), ("Vector", 0, 28_000, 30_000),
        ("gpsimd", 0, 12_000, 18_000),  # between the executions: no graph's
    ])  # fmt: skip
    dma_packets(folder, [(0, 2_000), (1_000, 3_000), (20_000, 23_000)])  # 3 µs in each call


# --------------------------------------------------------------------------- reading


def test_union_clips_to_the_window_and_counts_overlaps_once() -> None:
    assert engines.union_ns([(0, 10), (5, 15), (20, 30)], 0, 100) == 25
    assert engines.union_ns([(0, 10), (5, 15), (20, 30)], 8, 22) == 9
    assert engines.union_ns([(0, 10)], 10, 20) == 0


def test_one_graph_called_twice_from_a_stand_in_processed_profile(tmp_path: Path) -> None:
    two_calls_of_one_graph(tmp_path)
    (graph,), why = engines.read_graphs(tmp_path)
    assert why == "" and (graph.graph, graph.calls, graph.device_us) == ("neff_395760075800974_vnc_0.neff", 2, 10.0)
    figures = {e.engine: (e.active_us, e.pct) for e in graph.engines}
    assert figures == {"Tensor": (6.0, 60.0), "Vector": (2.0, 20.0), "GpSimd": (0.0, 0.0), "DMA": (3.0, 30.0)}
    assert graph.source.startswith("ExecutionInfo, ActiveTime, DmaPacket in ")


def test_a_session_profile_is_split_per_graph_by_its_execution_windows_with_a_stand_in_processed_profile(tmp_path: Path) -> None:
    execution_info(tmp_path, [("a.neff", 0, 4_000), ("b.neff", 4_000, 12_000)])
    active_time(tmp_path, [("tensor", 0, 1_000, 3_000), ("scalar", 0, 3_000, 10_000)])  # scalar spans both
    graphs, why = engines.read_graphs(tmp_path)
    assert why == "" and [g.graph for g in graphs] == ["a.neff", "b.neff"]
    a, b = ({e.engine: e.active_us for e in g.engines} for g in graphs)
    assert a == {"Tensor": 2.0, "Scalar": 1.0} and b == {"Tensor": 0.0, "Scalar": 6.0}
    assert [g.device_us for g in graphs] == [4.0, 8.0]


def test_without_execution_windows_the_summary_of_a_one_neff_profile_is_its_graph_with_a_stand_in_processed_profile(
    tmp_path: Path,
) -> None:
    summary(tmp_path, 50e-6, {"tensor": 20e-6, "vector": 5e-6, "scalar": 1e-6, "gpsimd": 0.0, "sync": 2e-6}, 10e-6)
    neff_header(tmp_path, ["file.neff"])
    (graph,), why = engines.read_graphs(tmp_path)
    assert why == "" and (graph.graph, graph.calls) == ("file.neff", 1) and graph.device_us == pytest.approx(50.0)
    figures = {e.engine: (round(e.active_us, 3), round(e.pct, 3)) for e in graph.engines}
    assert figures == {"Tensor": (20.0, 40.0), "Vector": (5.0, 10.0), "Scalar": (1.0, 2.0), "GpSimd": (0.0, 0.0),
                       "Sync": (2.0, 4.0), "DMA": (10.0, 20.0)}  # fmt: skip
    assert graph.source.startswith("Summary in ")


def test_several_neffs_without_execution_windows_are_not_split_by_guess_with_a_stand_in_processed_profile(tmp_path: Path) -> None:
    summary(tmp_path, 50e-6, {"tensor": 20e-6}, 0.0)
    neff_header(tmp_path, ["a.neff", "b.neff"])
    graphs, why = engines.read_graphs(tmp_path)
    assert graphs == [] and "2 NEFFs in one profile" in why and "not split per graph" in why


def test_intervals_outside_every_window_are_not_forced_in_with_a_stand_in_processed_profile(tmp_path: Path) -> None:
    execution_info(tmp_path, [("a.neff", 0, 1_000)])
    active_time(tmp_path, [("tensor", 0, 5_000_000, 6_000_000)])  # another time base: say so, fall back to Summary
    summary(tmp_path, 1e-6, {"tensor": 0.5e-6}, 0.0)
    (graph,), why = engines.read_graphs(tmp_path)
    assert why == "" and graph.source.startswith("Summary") and graph.engines[0].pct == pytest.approx(50.0)
    (tmp_path / "Summary.parquet").unlink()
    graphs, why = engines.read_graphs(tmp_path)
    assert graphs == [] and "fall outside every ExecutionInfo window" in why and "no Summary table" in why


# --------------------------------------------------------------------------- onto the run


def line(n: int, ops: float = 1.0, device: float = 0.0) -> LineStat:
    return LineStat(n, 1.0, device, 0.0, 0.0, ops)


def test_the_graph_goes_on_the_one_line_that_can_call_it() -> None:
    assert engines.calling_line([line(5, ops=0), line(6)]).line == 6  # type: ignore[union-attr]
    assert engines.calling_line([line(5, device=3.0), line(6)]).line == 5  # type: ignore[union-attr]
    assert engines.calling_line([line(5), line(6)]) is None  # two candidates: OpLens does not choose


def test_no_processed_profile_or_no_parquet_reader_gives_a_note_not_an_estimate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = {"target": {"file": "t.py", "qualname": "fn", "first_line": 1, "last_line": 3, "source_sha256": ""},
           "backend": {"name": "neuron", "device_label": "NEURON"}, "config": {"warmup": 3, "iters": 5},
           "totals": {"self_cpu_us": 0, "self_device_us": 0, "op_calls": 0}, "lines": [], "ops": []}  # fmt: skip
    run = Run.from_dict(old)
    assert (run.engine_graphs, run.engine_note) == ([], "")  # an old run loads with the defaults
    note = engines.not_processed_note(run, "r1", tool_installed=False)
    assert "no engine breakdown" in note and "has no device profile" in note and "DEVICE" in note
    run.artifacts.ntffs = [NtffFile("a.ntff", "session")]
    note = engines.not_processed_note(run, "r1", tool_installed=False)
    assert "not processed" in note and "oplens explorer r1" in note and "aws-neuronx-tools" in note
    two_calls_of_one_graph(tmp_path / "p")
    monkeypatch.setattr(engines, "parquet_reader", lambda: False)
    (message,) = engines.from_processed(run, tmp_path / "p")
    assert "Parquet reader is not installed" in message and "pip install" in message and run.engine_graphs == []


# --------------------------------------------------------------------------- end to end


def _cli(cwd: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NEURON_RT_NUM_CORES") and not k.startswith("STANDIN_")}
    full.update(env, PYTHONUNBUFFERED="1", CUDA_VISIBLE_DEVICES="")
    return subprocess.run([sys.executable, "-m", "oplens", *argv], cwd=cwd, env=full, capture_output=True, text=True, timeout=180)


def test_engines_reach_the_calling_line_with_stand_in_torch_neuronx_explorer_and_processed_profile(
    tmp_path: Path, ports: tuple[int, int]
) -> None:
    """profile → note (not processed) → `oplens explorer` processes it (stand-in) → the line that
    calls the graph carries its engines, in result.json and in the explorer's answer."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "neuron-explorer"
    exe.write_text(f"#!{sys.executable}\n" + (STANDINS / "neuron_explorer.py").read_text())
    exe.chmod(0o755)
    record = tmp_path / "explorer.jsonl"
    two_calls_of_one_graph(tmp_path / "processed")
    (tmp_path / "t.py").write_text("import torch\n\n\ndef fn():\n    return (torch.ones(8, 8) @ torch.ones(8, 8)).sum()\n")
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "STANDIN_EXPLORER_RECORD": str(record)}
    profiled = _cli(tmp_path, "profile", "t.py::fn", "--backend", "neuron", "--warmup", "1", "--iters", "2", "--json", "-",
                    PYTHONPATH=str(STANDINS), **env)  # fmt: skip
    assert profiled.returncode == 5, profiled.stderr  # no device time: exit 5 (issue 33)
    run = json.loads(profiled.stdout)
    assert run["engine_graphs"] == [] and "not processed" in run["engine_note"]
    assert f"oplens explorer {run['run_id']}" in run["engine_note"]
    ui, api = ports
    try:
        opened = _cli(tmp_path, "explorer", run["run_id"], "--ui-port", str(ui), "--api-port", str(api), "--json", "-",
                      STANDIN_EXPLORER_PROCESSED=str(tmp_path / "processed"), **env)  # fmt: skip
    finally:
        for call in (json.loads(r) for r in record.read_text().splitlines()) if record.is_file() else []:
            if "serving" in call:
                stop_group(call["pid"])
    assert opened.returncode == 0, opened.stderr
    assert any(m.startswith("engine breakdown of 1 graph(s)") for m in json.loads(opened.stdout)["messages"])
    stored = json.loads((Path(run["run_dir"]) / "result.json").read_text())
    (graph,) = stored["engine_graphs"]
    assert (graph["graph"], graph["calls"], graph["device_us"], graph["line"]) == ("neff_395760075800974_vnc_0.neff", 2, 10.0, 5)
    (on_line,) = [s for s in stored["lines"] if s["engines"]]
    assert on_line["line"] == 5 and on_line["engine_graph"] == graph["graph"]
    assert {e["engine"]: e["active_us"] for e in on_line["engines"]} == {"Tensor": 6.0, "Vector": 2.0, "GpSimd": 0.0, "DMA": 3.0}
    assert stored["engine_note"] == ""
    again = Run.from_dict(stored)
    assert isinstance(again.engine_graphs[0], GraphEngines)
    assert [s.engines[0].pct for s in again.lines if s.line == 5] == [60.0]
    # the CLI's listing shows it under the lines
    from oplens.cli.render import engine_lines

    (text,) = engine_lines(again)
    assert "line 5: graph neff_395760075800974_vnc_0.neff, 10.0 µs on the device per call" in text
    assert "Tensor 6.0 µs (60%)" in text and "DMA 3.0 µs (30%)" in text
