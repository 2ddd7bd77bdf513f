"""The engine breakdown (`backends/neuron/engines.py`) read from a STAND-IN processed profile (the documented
Parquet tables, tests/support/neuron.py's writers): engine time as a union clipped to each execution's window,
session profiles split per graph, no split by guess, the graph on the line that can call it, and a note, never
an estimate, where there is no profile or no Parquet reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from oplens.backends.neuron import engines
from oplens.records.run import LineStat, NtffFile, Run
from support.neuron import F32, STR, active_time, execution_info, two_calls_of_one_graph, write_table

# --------------------------------------------------------------------------- the stand-in processed profile


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
