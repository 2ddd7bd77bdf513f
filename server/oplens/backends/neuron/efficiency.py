"""Each line's efficiency as the NeuronCore measured it (issue 33, part 8), from Neuron Explorer's per framework op
tables in the run's processed profile (parent side, no torch).

Source: aws-neuron-sdk, `tools/neuron-explorer/profile-schema-reference.rst` (schema 7.4.0; the columns and units are
quoted in schema.py's MEASURED, read by its map per schema major). `FrameworkNode` gives per framework op (its leaves:
no `children_names`) `mfu` and `hfu` in percent, `mbu_per_interval` in percent per interval of `time_intervals` (ns),
and `hbm_read_bytes` + `hbm_write_bytes`; `FrameworkInstruction` the bytes where the nodes have none; a device
profile's `Summary` its `mm_arithmetic_intensity` and `peak_flops_bandwidth_ratio`, its `ThrottleSummary` the
`throttle_active_time_percent`. These are device-profile tables (Explorer's "Hierarchical aggregation ... Framework ->
HLO -> Penguin -> BIR -> Instruction"): an ingest that leaves out the instruction trace or the device profile
(runtime.py's first, fastest step) has none of them, and every line's bound stays estimated.

How a figure reaches a line: as its device time does. Each framework op row goes to the graph (NEFF) whose
`ExecutionInfo` window holds its start (the one graph of its folder where there are no windows); each execution the
system trace placed on a line (systrace.py) ran the graph whose name holds its model id (`neff_<model_id>_vnc_<n>.neff`,
as fused.py pairs them). A graph's MFU, HFU and MBU are its ops' weighted by their time; a line's are its executions'
graphs' weighted by the executions' device time; its HBM bytes in one call are its executions' graphs' bytes per
execution, summed over the executions of the profiled iterations over the iterations. A figure no table holds is left
out (None) and named in `missing`, never 0.

Bound from measurement: `analysis/roofline.measured_bound` (OpLens's rule, not the vendor's, an assumption in
docs/trainium-checklist.md): compute where MFU reaches 50 % and MBU does not exceed it, memory where MBU does and
exceeds MFU, neither where both were measured below it, else none (the roofline's estimate stands).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oplens.analysis.roofline import measured_bound
from oplens.backends.neuron import engines, schema
from oplens.backends.neuron.engines import Columns, read_table
from oplens.backends.neuron.systrace import Placed
from oplens.records.run import EngineTime, GraphEngines, MeasuredEfficiency

NODE, INSTRUCTION, SUMMARY, THROTTLE = "FrameworkNode", "FrameworkInstruction", "Summary", "ThrottleSummary"
TABLES = (NODE, INSTRUCTION, SUMMARY, THROTTLE)


@dataclass
class _Weighted:
    """A figure weighted by time: the sum of figure x weight, and of the weights that had a figure."""

    total: float = 0.0
    weight: float = 0.0

    def add(self, value: float | None, weight: float) -> None:
        if value is not None and weight > 0:
            self.total += value * weight
            self.weight += weight

    @property
    def value(self) -> float | None:
        return self.total / self.weight if self.weight > 0 else None


@dataclass
class GraphFigures:
    """One graph's (NEFF's) measured figures, from its framework ops."""

    name: str
    executions: int = 0  # its ExecutionInfo windows (at least 1 where it has ops)
    mfu: _Weighted = field(default_factory=_Weighted)
    hfu: _Weighted = field(default_factory=_Weighted)
    mbu: _Weighted = field(default_factory=_Weighted)
    hbm_bytes: float | None = None  # over all its ops and executions in the profile
    intensity: float | None = None
    ridge: float | None = None
    throttled_pct: float | None = None
    ops: list[str] = field(default_factory=list)

    def bytes_per_execution(self) -> float | None:
        return self.hbm_bytes / max(1, self.executions) if self.hbm_bytes is not None else None


@dataclass
class Measured:
    """What the processed profile measured, per graph, and why a figure is missing."""

    graphs: dict[str, GraphFigures] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)  # figure: why (the table or column absent)
    warnings: list[str] = field(default_factory=list)  # schema.py's, for the tables read


def _list(raw: Any) -> list[Any]:
    """A `[...]` column as a list (the 7.4.0 page types these as strings of a JSON-like array, or as arrays)."""
    if raw is None:
        return []
    if isinstance(raw, (list, tuple)):
        return list(raw)
    text = str(raw).strip()
    if not text:
        return []
    try:
        value = json.loads(text)
    except ValueError:
        value = [v.strip() for v in text.strip("[]").split(",") if v.strip()]
    return value if isinstance(value, list) else [value]


def _intervals(raw: Any, start: Any, end: Any) -> list[tuple[int, int]]:
    spans = []
    for item in _list(raw):
        pair = _list(item)
        if len(pair) == 2 and pair[0] is not None and pair[1] is not None and int(pair[1]) > int(pair[0]):
            spans.append((int(pair[0]), int(pair[1])))
    if not spans and start is not None and end is not None and int(end) > int(start):
        spans = [(int(start), int(end))]
    return spans


def _num(raw: Any) -> float | None:
    try:
        return None if raw is None else float(raw)
    except (TypeError, ValueError):
        return None


def folders(root: Path) -> list[Path]:
    """The folders under `root` (itself included) holding a framework op table."""
    if not root.is_dir():
        return []
    return sorted({p.parent for name in (NODE, INSTRUCTION) for p in root.rglob(f"{name}*.parquet")})


def _windows(folder: Path) -> list[tuple[int, int, str]]:
    execs = read_table(folder, "ExecutionInfo", ["neff_name", "execution_start_ts", "execution_end_ts"])
    if execs is None:
        return []
    rows = zip(execs["neff_name"], execs["execution_start_ts"], execs["execution_end_ts"], strict=True)
    return sorted((int(s), int(e), str(n)) for n, s, e in rows if n and s is not None and e is not None and e > s)


def _graph_of(windows: list[tuple[int, int, str]], start: Any, default: str) -> str:
    if start is not None:
        for s, e, name in windows:
            if s <= int(start) < e:
                return name
    names = {n for _, _, n in windows}
    return next(iter(names)) if len(names) == 1 else default


def read(root: Path) -> Measured:
    """The measured figures per graph in the processed profile under `root`; none (and why) where it has no
    framework op table."""
    out = Measured()
    found = folders(root)
    if not found:
        out.missing.append(f"MFU, HFU, MBU and HBM bytes: the processed profile holds no {NODE} or {INSTRUCTION} "
                           "table (device-profile tables: the ingest left them out)")  # fmt: skip
        return out
    for folder in found:
        windows = _windows(folder)
        default = folder.name
        nodes = read_table(folder, NODE, list(schema.MEASURED[NODE]))
        present = [t for t in TABLES if read_table(folder, t, []) is not None]
        out.warnings += [w for w in schema.measured_warnings(folder, present) if w not in out.warnings]
        per_graph: dict[str, GraphFigures] = {}

        def graph(name: str, per_graph: dict[str, GraphFigures] = per_graph) -> GraphFigures:
            return per_graph.setdefault(name, out.graphs.setdefault(name, GraphFigures(name)))

        node_bytes = False
        if nodes is None:
            out.missing.append(f"MFU, HFU and MBU: no {NODE} table in {folder}")
        else:
            node_bytes = "hbm_read_bytes" not in nodes.missing and "hbm_write_bytes" not in nodes.missing
            for row in _rows(nodes):
                if _list(row["children_names"]):
                    continue  # an inner node: its leaves are counted (its figures roll them up)
                spans = _intervals(row["time_intervals"], row["start_ts"], row["end_ts"])
                g = graph(_graph_of(windows, spans[0][0] if spans else row["start_ts"], default))
                ns = float(sum(e - s for s, e in spans))
                g.mfu.add(_num(row["mfu"]), ns)
                g.hfu.add(_num(row["hfu"]), ns)
                per = [_num(v) for v in _list(row["mbu_per_interval"])]
                if len(per) == len(spans):  # each interval's MBU weighted by its length
                    for v, (s, e) in zip(per, spans, strict=True):
                        g.mbu.add(v, float(e - s))
                if node_bytes and row["hbm_read_bytes"] is not None and row["hbm_write_bytes"] is not None:
                    g.hbm_bytes = (g.hbm_bytes or 0.0) + float(row["hbm_read_bytes"]) + float(row["hbm_write_bytes"])
                if row["node_name"]:
                    g.ops.append(str(row["node_name"]))
        if not node_bytes:
            inst = read_table(folder, INSTRUCTION, list(schema.MEASURED[INSTRUCTION]))
            if inst is not None and not {"hbm_read_bytes", "hbm_write_bytes"} & set(inst.missing):
                for row in _rows(inst):
                    if row["hbm_read_bytes"] is None or row["hbm_write_bytes"] is None:
                        continue
                    g = graph(_graph_of(windows, row["start_ts"], default))
                    g.hbm_bytes = (g.hbm_bytes or 0.0) + float(row["hbm_read_bytes"]) + float(row["hbm_write_bytes"])
                    if row["framework_name"] and not nodes:
                        g.ops.append(str(row["framework_name"]))
        for name, g in per_graph.items():
            g.executions = sum(1 for _, _, n in windows if n == name) or 1
        if len(per_graph) == 1:  # a device profile's Summary and ThrottleSummary are its one graph's
            (g,) = per_graph.values()
            _summary(folder, g)
    return out


def _rows(cols: Columns) -> list[dict[str, Any]]:
    names = list(cols)
    return [dict(zip(names, values, strict=True)) for values in zip(*cols.values(), strict=True)]


def _summary(folder: Path, g: GraphFigures) -> None:
    summary = read_table(folder, SUMMARY, list(schema.MEASURED[SUMMARY]))
    if summary is not None and summary["mm_arithmetic_intensity"]:
        g.intensity = _num(summary["mm_arithmetic_intensity"][0])
        g.ridge = _num(summary["peak_flops_bandwidth_ratio"][0])
    throttle = read_table(folder, THROTTLE, list(schema.MEASURED[THROTTLE]))
    if throttle is not None and "throttle_active_time_percent" not in throttle.missing:
        rows = list(zip(throttle["throttle_type"], throttle["throttle_active_time_percent"], strict=True))
        chosen = [p for t, p in rows if t == "all" and p is not None] or [p for _, p in rows if p is not None]
        g.throttled_pct = max(float(p) for p in chosen) if chosen else None


def match(graphs: Iterable[str], model_id: str) -> str | None:
    """The graph an execution of `model_id` ran: the one whose name holds the model id, else the only graph."""
    names = list(graphs)
    chosen = [n for n in names if model_id and model_id in n]
    if len(chosen) == 1:
        return chosen[0]
    return names[0] if len(names) == 1 and not chosen else None


def per_line(measured: Measured, placed: list[Placed], iterations: int) -> dict[int, MeasuredEfficiency]:
    """Each line's measured figures from its placed executions (module docstring); only lines with at least one
    execution whose graph has a figure."""
    total_ns: dict[int, float] = defaultdict(float)
    by_line: dict[int, list[tuple[GraphFigures, float]]] = defaultdict(list)
    for p in placed:
        ns = float(p.execution.duration_ns)
        total_ns[p.line] += ns
        name = match(measured.graphs, p.execution.model_id)
        if name is not None:
            by_line[p.line].append((measured.graphs[name], ns))
    out = {}
    for line, runs in by_line.items():
        out[line] = combine([(g, ns, g.bytes_per_execution()) for g, ns in runs], total_ns[line], iterations, measured.missing)
    return out


def combine(runs: list[tuple[GraphFigures, float, float | None]], total_ns: float, iterations: int,
            missing: list[str]) -> MeasuredEfficiency:  # fmt: skip
    """The figures of (graph, its device time, its bytes) runs weighted by their time; bytes summed per call."""
    mfu, hfu, mbu, intensity, ridge, throttled = (_Weighted() for _ in range(6))
    covered, hbm, bytes_seen, ops = 0.0, 0.0, True, []
    for g, ns, b in runs:
        covered += ns
        mfu.add(g.mfu.value, ns)
        hfu.add(g.hfu.value, ns)
        mbu.add(g.mbu.value, ns)
        intensity.add(g.intensity, ns)
        ridge.add(g.ridge, ns)
        throttled.add(g.throttled_pct, ns)
        if b is None:
            bytes_seen = False
        else:
            hbm += b
        ops += [o for o in g.ops if o not in ops]
    why = list(missing)
    for label, w in (("MFU", mfu), ("MBU", mbu)):
        if w.value is None:
            why.append(f"{label}: none of the line's graphs has it")
    e = MeasuredEfficiency(mfu.value, hfu.value, mbu.value, hbm / max(1, iterations) if bytes_seen and runs else None,
                           intensity.value, ridge.value, throttled.value, measured_bound(mfu.value, mbu.value),
                           100.0 * covered / total_ns if total_ns > 0 else 0.0, ops, why)  # fmt: skip
    if e.hbm_bytes is None:
        e.missing.append("HBM bytes: not measured for every execution of the line")
    return e


def line_engines(root: Path, placed: list[Placed], iterations: int) -> dict[int, tuple[list[EngineTime], list[str]]]:
    """Each line's engine breakdown per call where the device profile has one for the graphs its executions ran
    (engines.read_graphs: an engine's ActiveTime inside each graph's ExecutionInfo windows, per execution): an
    engine's time is its graphs' per execution, summed over the line's executions of the profiled iterations over
    the iterations; its % of the device time of the line's executions whose graph has a breakdown. With the graphs
    (NEFFs) it came from. Nothing for a line none of whose graphs has one."""
    graphs: dict[str, GraphEngines] = {}
    for folder in engines.device_profiles(root):
        try:
            found, _ = engines.read_graphs(folder)
        except Exception:  # a table that is not the documented Parquet: the engine reader's own note says so elsewhere
            continue
        graphs.update({g.graph: g for g in found if g.engines})
    active: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    covered: dict[int, float] = defaultdict(float)
    names: dict[int, list[str]] = defaultdict(list)
    for p in placed:
        name = match(graphs, p.execution.model_id)
        if name is None:
            continue
        covered[p.line] += p.execution.duration_ns / 1e3
        names[p.line] += [name] if name not in names[p.line] else []
        for e in graphs[name].engines:
            active[p.line][e.engine] += e.active_us
    n = max(1, iterations)
    return {line: ([EngineTime(engine, us / n, 100.0 * us / covered[line] if covered[line] > 0 else 0.0)
                    for engine, us in per.items()], names[line]) for line, per in active.items()}  # fmt: skip

