"""Each compiled graph's engine breakdown (Tensor, Vector, Scalar, GpSimd, Sync, DMA), read from the
vendor's *processed* device profile, never estimated (parent side, no torch).

Source: the AWS Neuron docs, `tools/neuron-explorer/how-to-analyze-profile-output.rst` and
`profile-schema-reference.rst` (schema 7.4.0, Neuron 2.31):

- `neuron-explorer view` processes a profile into a directory of Parquet tables, one file per table
  (a large one split as `<Table>_0.parquet`, `<Table>_1.parquet`, ...); with `--data-path` it lands
  in `<data-path>/profiles/global/<display-name>@latest/` (what `oplens explorer` ingests into).
  The raw NEFF/NTFF files OpLens captures hold no such figures.
- `ExecutionInfo {execution_index, neff_name, execution_start_ts, execution_end_ts}` (ns): which
  NEFF each execution in the profile ran, and when ("use execution_start_ts and execution_end_ts to
  correlate the time range of each execution's data (instructions, DMAs, etc.) with the NEFF").
- `ActiveTime {start_ts, end_ts, engine, pcore_idx, duration_ns}` (ns): when an engine processes at
  least one instruction (semaphore waits excluded), the engine's instructions merged.
- `DmaPacket {start_ts, end_ts, duration_ns, ...}` (ns): each DMA packet's transfer.
- `Summary {total_time, <engine>_engine_active_time, <engine>_engine_active_time_percent,
  dma_active_time, dma_active_time_percent}` (seconds, percent) over the whole profile;
  `NeffHeader {network_name, hash, ...}` names its NEFF.

Per graph: where ExecutionInfo gives each execution's window, an engine's active time is the union
of its ActiveTime intervals (of all physical cores) inside the graph's executions, DMA's the union of
its DmaPacket intervals (Summary's definition of `dma_active_time`), over the executions' summed
length. Where it does not (an NTFF older than v6), the profile's Summary is the graph's, if the
profile holds one NEFF. Anything else is a note, with the fix.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from oplens.backends.neuron import schema
from oplens.records.atomic import write_json_atomic
from oplens.records.run import EngineTime, GraphEngines, LineStat, Run

ENGINES = {"tensor": "Tensor", "vector": "Vector", "scalar": "Scalar", "gpsimd": "GpSimd", "sync": "Sync"}
DMA = "DMA"
DEVICE_TABLES = ("ExecutionInfo", "ActiveTime", "Summary")  # a directory with one of these is a device profile
PARQUET_HINT = "pip install pyarrow (in OpLens's environment: pip install 'oplens[neuron]')"



class Columns(dict[str, list[Any]]):
    """A table's columns by the names OpLens reads them by (schema.py maps them to the profile's schema version);
    `missing`: those the table's files lack, which read as None per row and from which no figure is computed."""

    missing: list[str]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.missing = []



def processed_dir(data_path: Path, display_name: str) -> Path:
    """Where `neuron-explorer view --data-path DATA --display-name NAME` puts the processed profile."""
    return data_path / "profiles" / "global" / f"{display_name}@latest"


def parquet_reader() -> bool:
    return importlib.util.find_spec("pyarrow") is not None


# ---------------------------------------------------------------------------- reading


def read_table(folder: Path, name: str, columns: Iterable[str]) -> Columns | None:
    """The listed columns of table `name` (all its split files), by the names of the profile's schema version
    (schema.py); a column the files lack is None per row and listed in `missing`. None where the profile has no
    such table ("a table is only written if the profile holds that kind of activity")."""
    import pyarrow.parquet as pq

    s = schema.of(folder)
    table_name = s.table(name)
    files = sorted(folder.glob(f"{table_name}.parquet")) + sorted(folder.glob(f"{table_name}_[0-9]*.parquet"))
    if not files:
        return None
    wanted = list(columns)
    physical = {c: s.column(name, c) for c in wanted}
    out = Columns({c: [] for c in wanted})
    for f in files:
        names = pq.read_schema(f).names
        present = [c for c in wanted if physical[c] in names]
        table = pq.read_table(f, columns=[physical[c] for c in present])
        for c in wanted:
            if c in present:
                out[c] += table.column(physical[c]).to_pylist()
            else:
                out[c] += [None] * table.num_rows
                if c not in out.missing:
                    out.missing.append(c)
    return out


def device_profiles(root: Path) -> list[Path]:
    """The directories under `root` (itself included) that hold a device profile's tables. Where a
    system profile puts its device profiles inside the processed directory is not documented, so every
    folder is looked in."""
    if not root.is_dir():
        return []
    found = {p.parent for name in DEVICE_TABLES for p in root.rglob(f"{name}*.parquet")}
    return sorted(found)


def read_graphs(folder: Path) -> tuple[list[GraphEngines], str]:
    """Each graph's breakdown in one processed device profile, or none and why."""
    execs = read_table(folder, "ExecutionInfo", ["neff_name", "execution_start_ts", "execution_end_ts"]) or Columns()
    windows: dict[str, list[tuple[int, int]]] = {}
    rows = zip(execs.get("neff_name", []), execs.get("execution_start_ts", []), execs.get("execution_end_ts", []), strict=True)
    for name, start, end in rows:
        if name and start is not None and end is not None and end > start:
            windows.setdefault(str(name), []).append((int(start), int(end)))
    active = read_table(folder, "ActiveTime", ["engine", "start_ts", "end_ts"])
    if active is not None and active.missing:  # no engine time from columns the schema lacks (schema.warnings)
        active = None
    if windows and active is not None:
        graphs = _from_windows(folder, windows, active)
        if any(e.active_us > 0 for g in graphs for e in g.engines) or not active["engine"]:
            return graphs, ""
        why = "its ActiveTime intervals fall outside every ExecutionInfo window"  # time bases differ: do not guess
    else:
        why = "it has no ExecutionInfo windows" if active is not None else "it has no ActiveTime table"
    names = sorted(windows) or _neff_names(folder) or [folder.name]
    if len(names) > 1:
        return [], f"{folder}: {len(names)} NEFFs in one profile, and {why}: not split per graph"
    summary = _from_summary(folder, names[0], max(1, len(windows.get(names[0], []))))
    return ([summary], "") if summary is not None else ([], f"{folder}: {why}, and no Summary table")


def _neff_names(folder: Path) -> list[str]:
    header = read_table(folder, "NeffHeader", ["network_name"])
    return sorted({str(n) for n in (header or Columns()).get("network_name", []) if n})


def _from_windows(folder: Path, windows: dict[str, list[tuple[int, int]]], active: Columns) -> list[GraphEngines]:
    by_engine: dict[str, list[tuple[int, int]]] = {}
    for engine, start, end in zip(active["engine"], active["start_ts"], active["end_ts"], strict=True):
        if engine is not None and start is not None and end is not None:
            by_engine.setdefault(engine_name(str(engine)), []).append((int(start), int(end)))
    dma = read_table(folder, "DmaPacket", ["start_ts", "end_ts"])
    if dma is not None and dma.missing:  # no DMA figure from a column the schema lacks (schema.warnings names it)
        dma = None
    if dma is not None:
        packets = zip(dma["start_ts"], dma["end_ts"], strict=True)
        by_engine[DMA] = [(int(s), int(e)) for s, e in packets if s is not None and e is not None]
    graphs = []
    for name, spans in sorted(windows.items()):
        device_ns = sum(end - start for start, end in spans)
        engines = []
        for engine in _ordered(by_engine):
            busy = sum(union_ns(by_engine[engine], start, end) for start, end in spans)
            engines.append(EngineTime(engine, busy / 1e3 / len(spans), 100.0 * busy / device_ns))
        tables = "ExecutionInfo, ActiveTime" + (", DmaPacket" if dma is not None else "")
        graphs.append(GraphEngines(name, len(spans), device_ns / 1e3 / len(spans), engines, source=f"{tables} in {folder}"))
    return graphs


def _from_summary(folder: Path, name: str, calls: int) -> GraphEngines | None:
    keys = [f"{e}_engine_active_time{s}" for e in ENGINES for s in ("", "_percent")]
    summary = read_table(folder, "Summary", ["total_time", "dma_active_time", "dma_active_time_percent", *keys])
    if summary is None or not summary["total_time"] or summary["total_time"][0] is None:
        return None  # no device time from a Summary without total_time (a missing column is no zero)
    row = {k: v[0] for k, v in summary.items()}  # "a metric computed across the whole profile": one row
    engines = []
    for key, label in [*ENGINES.items(), ("dma", DMA)]:
        prefix = "dma" if label == DMA else f"{key}_engine"
        seconds, pct = row.get(f"{prefix}_active_time"), row.get(f"{prefix}_active_time_percent")
        if seconds is not None and pct is not None:
            engines.append(EngineTime(label, float(seconds) * 1e6 / calls, float(pct)))
    device_us = float(row["total_time"]) * 1e6 / calls
    return GraphEngines(name, calls, device_us, engines, source=f"Summary in {folder}")


def union_ns(spans: list[tuple[int, int]], lo: int, hi: int) -> int:
    """How long at least one of `spans` is in progress between `lo` and `hi`."""
    clipped = sorted((max(s, lo), min(e, hi)) for s, e in spans if e > lo and s < hi)
    total, reach = 0, lo
    for s, e in clipped:
        if e > reach:
            total += e - max(s, reach)
            reach = e
    return total


def engine_name(raw: str) -> str:
    return ENGINES.get(raw.strip().lower(), raw.strip())


def _ordered(engines: Iterable[str]) -> list[str]:
    order = [*ENGINES.values(), DMA]
    return sorted(engines, key=lambda e: (order.index(e) if e in order else len(order), e))


# ---------------------------------------------------------------------------- onto the run


def calling_line(lines: list[LineStat]) -> LineStat | None:
    """The one line that can have launched the profile's one graph: the only line calling a compiled
    region, else the only one with device time, else the only one running ops at all. The framework
    trace does not name the NEFF an op ran (the docs tie them only in Explorer's system view), so
    with two candidates OpLens does not choose."""
    for test in (lambda s: bool(s.compiled), lambda s: s.self_device_us > 0, lambda s: s.op_calls > 0):
        found = [s for s in lines if test(s)]
        if found:
            return found[0] if len(found) == 1 else None
    return None


def attach(run: Run, graphs: list[GraphEngines], notes: list[str]) -> None:
    """Put the graphs on the run, each on the line that calls it where one line does, and say in
    `engine_note` what is missing."""
    run.engine_graphs = graphs
    for s in run.lines:
        s.engines, s.engine_graph = [], ""
    line = calling_line(run.lines) if len(graphs) == 1 else None
    if line is not None:
        graphs[0].line = line.line
        line.engines, line.engine_graph = list(graphs[0].engines), graphs[0].graph
    elif graphs:
        notes.append(
            f"{len(graphs)} graph(s) and no single line that calls them (the framework trace does not name "
            "the NEFF an op ran): listed with the run, per graph"
        )
    run.engine_note = "; ".join(notes)


def from_processed(run: Run, root: Path) -> list[str]:
    """Read the processed profile under `root` onto `run`; returns what to tell the user."""
    if not parquet_reader():
        run.engine_note = (
            f"no engine breakdown: the processed profile {root} is Parquet, and the Parquet reader is not "
            f"installed: {PARQUET_HINT}, then run `oplens explorer {run.run_id}` again (or read it in Neuron Explorer)"
        )
        return [run.engine_note]
    folders = device_profiles(root)
    if not folders:
        run.engine_note = (
            f"no engine breakdown: the processed profile {root} holds no device-profile tables "
            f"({', '.join(DEVICE_TABLES)}): was DEVICE mode on? Open it in Neuron Explorer"
        )
        attach(run, [], [run.engine_note])
        return [run.engine_note]
    graphs: list[GraphEngines] = []
    notes: list[str] = []
    for folder in folders:
        try:
            found, why = read_graphs(folder)
        except Exception as e:  # a table that is not the documented Parquet (pyarrow raises its own errors)
            found, why = [], f"{folder}: its tables do not read as the documented schema ({type(e).__name__}: {e})"
        graphs += found
        if why:
            notes.append(f"no engine breakdown from {why}; open it in Neuron Explorer")
        notes += [w for w in schema.warnings(folder, ["ExecutionInfo", "ActiveTime", "DmaPacket", "Summary"]) if w not in notes]
    attach(run, graphs, notes)
    said = [f"engine breakdown of {len(graphs)} graph(s) from {root}"] if graphs else []
    return said + ([run.engine_note] if run.engine_note else [])


def not_processed_note(run: Run, run_name: str, tool_installed: bool) -> str:
    """What a fresh Neuron run says: its device profile is raw (NEFF/NTFF); the breakdown comes from
    the processed one."""
    art = run.artifacts
    if not art.ntffs and not art.neff_ntff_pairs:
        return "no engine breakdown: the run has no device profile (NTFF); profile with DEVICE in --neuron-modes"
    how = (
        f"`oplens explorer {run_name}` processes it (neuron-explorer view ... --ingest-only --data-path DIR) "
        "and attaches each graph's Tensor/Vector/Scalar/GpSimd/Sync/DMA active time"
    )
    if not tool_installed:
        how += " where neuron-explorer is installed (package aws-neuronx-tools), or open the NEFF/NTFF in Neuron Explorer"
    if not parquet_reader():
        how += f"; reading it needs the Parquet reader: {PARQUET_HINT}"
    return f"no engine breakdown yet: the device profile is raw (NEFF/NTFF), not processed; {how}"


def save(run: Run) -> None:
    """Rewrite the stored run's result.json with the engine fields (only those), atomically."""
    path = Path(run.run_dir) / "result.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # not a stored run (a profile directory given to `oplens explorer`)
    data["engine_graphs"] = [dataclasses.asdict(g) for g in run.engine_graphs]
    data["engine_note"] = run.engine_note
    by_line = {s.line: s for s in run.lines}
    for entry in data.get("lines", []):
        stat = by_line.get(entry.get("line"))
        if stat is not None:
            entry["engines"] = [dataclasses.asdict(e) for e in stat.engines]
            entry["engine_graph"] = stat.engine_graph
    write_json_atomic(path, data)

