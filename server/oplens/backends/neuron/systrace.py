"""Each line's device time per iteration from the Neuron Runtime's *system trace*, as Neuron Explorer
processes it into Parquet (parent side, no torch): issue 20, source (b).

Why this source. TorchNeuron's Kineto session returns no device activities: "NRT writes directly to
`profile_output_dir` rather than returning a buffer we post-process" (TorchNeuron's early source,
`torch_neuronx/csrc/profiler/README.md`). Users who measured device time on trn2 read the runtime's
system trace instead (`Deep-Learning-Profiling-Tools/Tilebench`, `tilebench/core/nki_timer.py`):

- the session is ingested with `neuron-explorer view -d SESSION --ingest-only --data-path DP
  --display-name N --ignore-instruction-trace --ignore-dma-trace --ignore-event-trace` ("Only the system
  trace is needed for timing ... identical execution table") and read from
  `DP/profiles/global/N@latest/SystemProfileEvents.parquet` (`engines.processed_dir`);
- the trace holds "one `nc_exec_running` hardware event per execution", read as the columns
  `name, start_ts, end_ts, flow_id, pcore_idx, extra_attributes_json` (`model_id` in the JSON); "LNC>1 emits
  one `nc_exec_running` row per physical core; they are merged into `[min start, max end]`", and
  since "flow ids are small per-model counters: key by model too" (`tilebench/neuron_diag/native_device.py`)
  the merge key here is (model id, flow id);
- "no wall-clock is ever compared against the trace's timebase": executions are ordered by device start
  and sliced per iteration, and "every window covers the SAME multiset of model_ids (a differing pattern
  means dropped trace events or a graph structure that changes between calls — either way no single
  number describes the operator)".

The AWS docs (`aws-neuron/aws-neuron-sdk`, `tools/neuron-explorer/profile-schema-reference.rst`, schema
7.4.0): `SystemProfileEvents {id, name, start_ts, end_ts, duration_ns (ns), trace_event_source ("neuron_rt"
means Neuron Runtime running on CPU produced this event ... "neuron_hw" means a Neuron Device produced
this event ... "framework" means the Python application or framework code produced this event),
instance_id, process_id, thread_id, nc_idx, pcore_idx, worker_gid, flow_id ("array of string ... Only
present on events that participate in a flow (e.g. linking a framework dispatch event to the
corresponding runtime execution event)"), framework_stream_id, extra_attributes_json}`, and
`Flow {in_id, out_id, in_table, out_table, dependency_type, gap_time}` ("dependency information for rows
in different or same table"). `overview-system-profiles.rst`: "When you click a system profile event
containing a `flow-id`, the viewer draws arrows indicating the dependency relationship between events
... between framework events (from PyTorch profiler), `neuron_rt`, and `neuron_hw` events".

The rules here, in order:
1. **flow**: an execution is linked through the events that share one of its flow ids (or a `Flow` edge
   between `SystemProfileEvents` ids) to the framework dispatch or `neuron_rt` event that launched it
   (same model id where that event names one); the framework op enclosing that event on its thread
   (else the line running on the profiled thread then) is the launching op, and its `oplens.iter:<k>` /
   `oplens.line:<n>` ranges give the iteration and line. Used when every execution links to one
   iteration and line, and every link's time falls inside the framework's iterations (same clock).
   An execution linked to several ops of one iteration carried their work (Adaptive Eager Execution fuses queued
   ops): it goes to the earliest (the launching op), the others named (`Placed.covered_lines`, `fusions`), its
   time never split. A launch after an iteration's range closed, before the next opens, with no op of the user's
   running, is the queue flushed by that iteration's synchronize: that iteration's (`_Framework.flushed_into`).
2. **mapping** (clock-free; where the early NeuronProfiler wrote `framework_mapping_*.json`, mapping.py): each
   execution's `nrta_seq_id` (in `extra_attributes_json`) names the framework op's `seq_nr` (torch's autograd
   counter, the Chrome trace's `"Sequence number"`); executions sharing one value go to the launches sharing it,
   in launch order (executions by `nrta_seq_id`, the runtime's strictly ordered sequence); where an execution is
   mapped to several ops (fused: TorchNeuron records it under each), executions take the launches in order, as
   many as their ops (`_by_mapping_fused`). Executions launched
   while the mapping was off, and the earliest of a value's executions beyond its launches (the profiler's own
   warm-up, inside the mapping's window), are outside the profiled iterations. Refused, with the reason, where
   executions carry no `nrta_seq_id`, the launches no sequence number, several threads mapped, or a value has
   fewer executions than launches.
3. **order** (clock-free, Tilebench's): executions sorted by device start, matched one to one to the
   launching ops in launch order per iteration (the framework's runtime calls where its trace has them,
   else each iteration's top-level ops), refused with the reason where the numbers differ or the
   multiset of model ids differs between iterations.
Where neither holds, the record says why, per rule, and holds no per-line figures.
"""

from __future__ import annotations

import bisect
import functools
import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oplens.analysis import attribution
from oplens.analysis.attribution import Node, RawEvent
from oplens.backends.neuron import mapping as fwmap
from oplens.backends.neuron import schema
from oplens.backends.neuron.engines import PARQUET_HINT, Columns, parquet_reader, read_table
from oplens.records.run import RuntimeFusion

TABLE = "SystemProfileEvents"
FLOW_TABLE = "Flow"
HW_EXEC_EVENT = "nc_exec_running"  # Tilebench: "one per execution in the system trace"
HW, RT, FRAMEWORK = "neuron_hw", "neuron_rt", "framework"
COLUMNS = ("id", "name", "start_ts", "end_ts", "trace_event_source", "thread_id", "nc_idx", "pcore_idx",
           "flow_id", "extra_attributes_json")  # fmt: skip
REQUIRED = ("name", "start_ts", "end_ts")  # without these no execution can be timed
RULE_FLOW, RULE_MAPPING, RULE_ORDER = "flow", "mapping", "order"


@dataclass
class Execution:
    """One device execution: its per-physical-core `nc_exec_running` rows merged (ns, trace timebase)."""

    model_id: str
    flow_ids: tuple[str, ...]
    start_ns: int
    end_ns: int
    pcores: int = 1
    nc_idx: int | None = None
    nrta_seq_id: int | None = None  # the runtime's async sequence id, where its rows carry one (mapping.py)

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass
class Placed:
    """One execution given to the framework op that launched it (in a profiled iteration)."""

    execution: Execution
    iteration: int
    line: int
    op: str  # the top-level op's name
    correlation_id: int  # the launching op's (Kineto's correlation id, trace.json's External id; 0: none)
    # A fused execution (Adaptive Eager Execution): the lines and top-level ops whose work it carried, in launch order,
    # the launching line's first; empty where it carried one op. Its time stays on `line` (the launching line's).
    covered_lines: tuple[int, ...] = ()
    covered_ops: tuple[str, ...] = ()
    flushed: bool = False  # launched after its iteration's range closed (by the synchronize OpLens runs then)


@dataclass
class SysTraceTime:
    """What the system trace says about each line's device time (µs per iteration)."""

    source: str  # the processed profile's folder
    rule: str = ""  # RULE_FLOW, RULE_MAPPING, RULE_ORDER, or "" (no per-line figures)
    iterations: int = 0
    executions: int = 0  # merged executions in the trace
    pcores_per_execution: int = 0  # the most physical-core rows one execution had (2 at LNC=2)
    per_iteration_us: list[float] = field(default_factory=list)  # device time of each iteration
    per_line_us: dict[int, list[float]] = field(default_factory=dict)  # line -> µs in each iteration
    per_op_us: dict[str, list[float]] = field(default_factory=dict)  # launching op -> µs in each iteration
    outside_us: float = 0.0  # executions linked to no profiled iteration (the warm-up's)
    problems: list[str] = field(default_factory=list)  # why a rule was refused; missing tables / columns
    placed: list[Placed] = field(default_factory=list)  # each execution inside a profiled iteration, placed

    def line_mean_us(self, line: int) -> float:
        per = self.per_line_us.get(line, [])
        return sum(per) / len(per) if per else 0.0

    def total_mean_us(self) -> float:
        return sum(self.per_iteration_us) / len(self.per_iteration_us) if self.per_iteration_us else 0.0


# ---------------------------------------------------------------------------- reading the tables


def read_events(folder: Path) -> tuple[Columns | None, list[str]]:
    """SystemProfileEvents' columns, or None and a message naming the table or column missing."""
    if not parquet_reader():
        return None, [
            f"{folder}: the processed system profile is Parquet, and the Parquet reader is not installed: {PARQUET_HINT}"
        ]
    if not folder.is_dir():
        return None, [
            f"{folder}: no processed system profile (no such folder); ingest the session with neuron-explorer view --ingest-only"
        ]
    import pyarrow.parquet as pq

    s = schema.of(folder)
    name = s.table(TABLE)
    files = sorted(folder.glob(f"{name}.parquet")) + sorted(folder.glob(f"{name}_[0-9]*.parquet"))
    if not files:
        return None, [f"{folder}: no {name} table ({name}.parquet): the profile holds no system trace (was RUNTIME mode on?)"]
    present = set(pq.read_schema(files[0]).names)
    missing = [s.column(TABLE, c) for c in REQUIRED if s.column(TABLE, c) not in present]
    if missing:  # no figure from a column that is absent: no execution is timed at all
        return None, [f"{folder}: Neuron Explorer {s.label}: table {name} has no column {', '.join(missing)}: no execution "
                      "can be timed"]  # fmt: skip
    problems = [f"{s.label}: table {name} has no column {s.column(TABLE, c)}: {why}" for c, why in (
        ("flow_id", "the per-core rows are merged by overlap, and no execution links to its launch"),
        ("extra_attributes_json", "executions carry no model_id: graphs cannot be told apart"),
    ) if s.column(TABLE, c) not in present]  # fmt: skip
    return read_table(folder, TABLE, COLUMNS), problems


def _attrs(raw: Any) -> dict[str, Any]:
    """A row's `extra_attributes_json`, decoded once per distinct text (the rows of one flow are looked up
    once for each execution that shares it: a quarter of the reader's time decoded again; read only)."""
    return _decoded(raw) if isinstance(raw, str) and raw else {}


@functools.lru_cache(maxsize=1 << 16)
def _decoded(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _flows(raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str):
        return (raw,)
    return tuple(str(v) for v in raw)


def _rows(cols: Columns) -> list[dict[str, Any]]:
    names = list(cols)
    return [dict(zip(names, values, strict=True)) for values in zip(*cols.values(), strict=True)]


def is_execution(row: dict[str, Any]) -> bool:
    return row["name"] == HW_EXEC_EVENT and row.get("trace_event_source") in (None, HW)


def executions(rows: list[dict[str, Any]]) -> list[Execution]:
    """The `nc_exec_running` rows merged per execution by (model id, flow id), sorted by device start.
    Rows without flow ids are merged with the overlapping rows of the same model on the same core."""
    by_key: dict[tuple[str, tuple[str, ...]], Execution] = {}
    loose: list[Execution] = []
    for r in rows:
        if not is_execution(r) or r["start_ts"] is None or r["end_ts"] is None:
            continue
        attrs = _attrs(r.get("extra_attributes_json"))
        model, flows, seq = str(attrs.get("model_id", "")), _flows(r.get("flow_id")), fwmap.nrta_seq_id(attrs)
        nc = r.get("nc_idx")
        if not flows:
            loose.append(Execution(model, (), int(r["start_ts"]), int(r["end_ts"]), 1, nc, seq))
            continue
        e = by_key.get((model, flows))
        if e is None:
            by_key[(model, flows)] = Execution(model, flows, int(r["start_ts"]), int(r["end_ts"]), 1, nc, seq)
        else:
            e.start_ns, e.end_ns, e.pcores = min(e.start_ns, int(r["start_ts"])), max(e.end_ns, int(r["end_ts"])), e.pcores + 1
            e.nrta_seq_id = e.nrta_seq_id if e.nrta_seq_id is not None else seq
    merged: list[Execution] = []
    for e in sorted(loose, key=lambda x: (x.model_id, x.nc_idx if x.nc_idx is not None else -1, x.start_ns)):
        last = merged[-1] if merged else None
        if last is not None and (last.model_id, last.nc_idx) == (e.model_id, e.nc_idx) and e.start_ns < last.end_ns \
                and e.nrta_seq_id in (None, last.nrta_seq_id):  # fmt: skip
            last.end_ns, last.pcores = max(last.end_ns, e.end_ns), last.pcores + 1
            last.nrta_seq_id = last.nrta_seq_id if last.nrta_seq_id is not None else e.nrta_seq_id
        else:
            merged.append(e)
    return sorted([*by_key.values(), *merged], key=lambda x: (x.start_ns, x.end_ns))


def framework_events(rows: list[dict[str, Any]]) -> list[RawEvent]:
    """The table's own framework rows (`trace_event_source` = framework) as OpLens's raw events."""
    out = []
    for r in rows:
        if r.get("trace_event_source") == FRAMEWORK and r["start_ts"] is not None and r["end_ts"] is not None:
            thread = r.get("thread_id")
            out.append(RawEvent(str(r["name"]), int(thread) if thread is not None else 0, int(r["start_ts"]), int(r["end_ts"])))
    return out


# ---------------------------------------------------------------------------- the framework side


@dataclass
class _Framework:
    nodes: list[Node]
    locate: attribution.Locator
    iterations: int
    iter_spans: list[tuple[int, int]]
    def_line: int
    by_thread: dict[int, tuple[list[int], list[Node]]] = field(default_factory=dict)

    def ctx_at(self, thread: int | None, t: int) -> tuple[int, int, str, int]:
        """(iteration, line, top-level op, the innermost op's correlation id) of the innermost framework
        op on `thread` running at `t`, else of the line running on the profiled thread then (no op, id 0)."""
        if not self.by_thread:
            for n in sorted((n for n in self.nodes if not n.is_marker), key=lambda n: n.ev.start_ns):
                starts, nodes = self.by_thread.setdefault(n.ev.thread, ([], []))
                starts.append(n.ev.start_ns)
                nodes.append(n)
        starts, nodes = self.by_thread.get(thread if thread is not None else 0, ([], []))
        best: Node | None = None
        for i in range(bisect.bisect_right(starts, t) - 1, -1, -1):  # the latest start that still runs: the innermost
            if t < max(nodes[i].ev.end_ns, nodes[i].ev.start_ns + 1):
                best = nodes[i]
                break
        op, corr = "", 0
        ctx = self.locate(t)
        if best is not None:
            top = best
            while top.parent is not None and not top.parent.is_marker:
                top = top.parent
            op, ctx, corr = top.ev.name, (best.ctx if best.ctx[0] >= 0 else ctx), best.ev.correlation_id
        return ctx[0], ctx[1] or self.def_line, op, corr

    def flushed_into(self, t: int) -> int:
        """The iteration whose synchronize a launch at `t` outside every iteration belongs to: OpLens synchronises
        right after each iteration's range closes (worker/calls.py), and queued work (Adaptive Eager Execution's
        fused ops) is launched there. A launch between iteration k's end and k+1's start is k's; after the last
        iteration, within the longest gap seen between two (else the last iteration's own length). -1: none."""
        spans = self.iter_spans
        if not spans or t < spans[0][1]:
            return -1
        gaps = [b[0] - a[1] for a, b in zip(spans, spans[1:], strict=False)]
        for k, (_, end) in enumerate(spans):
            until = spans[k + 1][0] if k + 1 < len(spans) else end + max(gaps or [spans[-1][1] - spans[-1][0]])
            if end <= t < until:
                return k
        return -1

    def launches(self) -> tuple[list[list[tuple[int, str, int]]], str]:
        """Per iteration, the (line, op, op's correlation id) of each launch in launch order, and what a
        launch was."""
        runtime = [n for n in self.nodes if n.ev.linked_correlation_id and n.ev.correlation_id]
        is_runtime = bool(runtime)
        chosen, what = (
            (runtime, "the framework's runtime calls")
            if runtime
            else ([n for n in self.nodes if n.top_level and n.ev.name not in attribution.NOT_OPERATOR_CALLS], "the top-level ops")
        )
        per: list[list[tuple[int, int, str, int]]] = [[] for _ in range(self.iterations)]
        ops = {n.ev.correlation_id: n for n in self.nodes if not n.ev.linked_correlation_id and n.ev.correlation_id}
        for n in chosen:
            it = n.ctx[0]
            if 0 <= it < self.iterations:
                op = ops.get(n.ev.linked_correlation_id, n) if is_runtime else n
                while op.parent is not None and not op.parent.is_marker:
                    op = op.parent
                per[it].append((n.ev.start_ns, n.ctx[1] or self.def_line, op.ev.name, op.ev.correlation_id))
        return [[(line, op, corr) for _, line, op, corr in sorted(p)] for p in per], what


def _framework(events: list[RawEvent], def_line: int) -> _Framework:
    nodes, locate = attribution.nest(events, def_line)
    iters = sorted((n for n in nodes if n.is_marker and n.ev.name.startswith(attribution.ITER)), key=lambda n: n.ctx[0])
    count = max((n.ctx[0] for n in iters), default=-1) + 1
    return _Framework(nodes, locate, count, [(n.ev.start_ns, n.ev.end_ns) for n in iters], def_line)


# ---------------------------------------------------------------------------- the rules


def _link_points(
    rows: list[dict[str, Any]], execs: list[Execution], flow_edges: list[tuple[int, int]]
) -> list[list[dict[str, Any]]]:
    """Per execution, the framework / neuron_rt events it is linked to (shared flow id, or a Flow edge)."""
    by_flow: dict[str, list[dict[str, Any]]] = defaultdict(list)
    by_id: dict[int, dict[str, Any]] = {}
    for r in rows:
        if r.get("trace_event_source") in (RT, FRAMEWORK) or (r.get("trace_event_source") is None and r["name"] != HW_EXEC_EVENT):
            for f in _flows(r.get("flow_id")):
                by_flow[f].append(r)
        if r.get("id") is not None:
            by_id[int(r["id"])] = r
    exec_ids: dict[tuple[str, tuple[str, ...]], set[int]] = defaultdict(set)
    for r in rows:
        if is_execution(r) and r.get("id") is not None:
            exec_ids[(str(_attrs(r.get("extra_attributes_json")).get("model_id", "")), _flows(r.get("flow_id")))].add(
                int(r["id"])
            )
    neighbours: dict[int, set[int]] = defaultdict(set)
    for a, b in flow_edges:
        neighbours[a].add(b)
        neighbours[b].add(a)
    out = []
    for e in execs:
        linked = [r for f in e.flow_ids for r in by_flow.get(f, [])]
        for i in exec_ids.get((e.model_id, e.flow_ids), set()):
            linked += [by_id[j] for j in neighbours.get(i, set()) if j in by_id and not is_execution(by_id[j])]
        same_model = [r for r in linked if str(_attrs(r.get("extra_attributes_json")).get("model_id", e.model_id)) == e.model_id]
        # one hop further: the runtime's launch row's other flows reach the framework op that dispatched it
        mine = set(e.flow_ids)
        same_model += [f for r in same_model if r.get("trace_event_source") == RT for fid in _flows(r.get("flow_id"))
                       if fid not in mine for f in by_flow.get(fid, []) if f.get("trace_event_source") == FRAMEWORK]  # fmt: skip
        out.append(same_model)
    return out


def _by_flow(result: SysTraceTime, rows: list[dict[str, Any]], execs: list[Execution], fw: _Framework,
             edges: list[tuple[int, int]]) -> bool:  # fmt: skip
    links = _link_points(rows, execs, edges)
    unlinked = sum(1 for ls in links if not ls)
    if unlinked:
        result.problems.append(
            f"rule flow: {unlinked} of {len(execs)} executions have no flow link to a framework or neuron_rt event"
        )
        return False
    placed: list[Placed] = []
    for e, ls in zip(execs, links, strict=True):
        p = _placed_by_links(e, ls, fw)
        if isinstance(p, str):
            result.problems.append(f"rule flow: {p}: not chosen")
            return False
        placed.append(p)
    if fw.iterations and all(p.iteration < 0 for p in placed):
        result.problems.append(
            "rule flow: no linked runtime event falls inside the framework's oplens.iter ranges "
            "(the framework events are on another clock than the system trace's): not used"
        )
        return False
    for p in placed:
        if not 0 <= p.iteration < fw.iterations:
            result.outside_us += p.execution.duration_ns / 1e3
            continue
        _add(result, p)
    result.rule = RULE_FLOW
    return True


def _placed_by_links(e: Execution, links: list[dict[str, Any]], fw: _Framework) -> Placed | str:
    """One execution placed by the events it links to, or why it cannot be. The framework ops it links to (the
    dispatch inside each op) come first, else the runtime's launch. Several ops of one iteration: an execution that
    carried their work (Adaptive Eager Execution fuses queued ops, pytorch-native-overview.rst), placed at the
    earliest (the launching op), the others named (`covered_lines`, `covered_ops`), never split: no trace says how
    its time divides. Ops in different iterations: refused. A launch outside every iteration with no op running
    (the queue flushed by the iteration's synchronize, after its range): in that iteration, launched by no op (its
    time is the iteration's, no line's: the run's unattributed device time)."""
    fw_rows = [r for r in links if r.get("trace_event_source") == FRAMEWORK] or links
    if len(fw_rows) == 1 and fw_rows[0]["start_ts"] is not None:  # the common case, one launching row: no sorting
        at = [(int(fw_rows[0]["start_ts"]), fw_rows[0].get("thread_id"))]
    else:
        at = sorted({(int(r["start_ts"]), r.get("thread_id")) for r in fw_rows if r["start_ts"] is not None}, key=lambda x: x[0])
    ctxs = [fw.ctx_at(thread, t) for t, thread in at]
    if not ctxs:
        return f"an execution of model {e.model_id!r} links to no timed event"
    if len(ctxs) == 1 and ctxs[0][0] >= 0:
        return Placed(e, *ctxs[0])
    if len({it for it, _, _, _ in ctxs}) != 1:
        return f"an execution of model {e.model_id!r} links to ops in {len({it for it, _, _, _ in ctxs})} iterations"
    it, line, op, corr = ctxs[0]
    if it < 0:  # no op of an iteration running (at most the profiler's own step range): flushed by a synchronize?
        k = fw.flushed_into(at[0][0])
        if k >= 0:
            return Placed(e, k, fw.def_line, "", 0, flushed=True)
    distinct = list(dict.fromkeys(ctxs))
    if len(distinct) == 1:
        return Placed(e, it, line, op, corr)
    lines = tuple(dict.fromkeys(ln for _, ln, _, _ in distinct))
    return Placed(e, it, line, op, corr, covered_lines=lines, covered_ops=tuple(o for _, _, o, _ in distinct))


def _by_mapping(result: SysTraceTime, execs: list[Execution], fw: _Framework, fm: fwmap.Mapping,
                seq_by_corr: dict[int, int]) -> bool:  # fmt: skip
    """The framework mapping's rule (mapping.py says what its join key can tell): clock-free, by the
    runtime's sequence ids and torch's sequence numbers, never by the two clocks."""
    name = Path(fm.path).name
    with_seq = [e for e in execs if e.nrta_seq_id is not None]
    if not with_seq:
        result.problems.append(f"rule mapping: {name} is there, but the system trace's executions carry no nrta_seq_id "
                               "(extra_attributes_json) to look up in it")  # fmt: skip
        return False
    mapped = [e for e in with_seq if e.nrta_seq_id in fm.by_seq]
    if not mapped:
        result.problems.append(f"rule mapping: none of the {len(with_seq)} executions' nrta_seq_id is in {name}")
        return False
    threads = {f.th_id for e in mapped for f in fm.by_seq[e.nrta_seq_id or 0]}
    if len(threads) > 1:
        result.problems.append(f"rule mapping: {name} names {len(threads)} framework threads (th_id {sorted(threads)}), "
                               "which the Chrome trace does not show: not used")  # fmt: skip
        return False
    units = {(e.nrta_seq_id or 0) >> fwmap.SEQ_NUM_BITS for e in mapped}
    if len(units) > 1:
        result.problems.append(f"rule mapping: executions on {len(units)} execution units, whose sequence ids are not "
                               "ordered against each other: not used")  # fmt: skip
        return False
    launches, what = fw.launches()
    flat = [(it, line, op, corr) for it, per in enumerate(launches) for line, op, corr in per]
    keyless = [op for _, _, op, corr in flat if corr not in seq_by_corr]
    if keyless:
        result.problems.append(f"rule mapping: {len(keyless)} of {len(flat)} launches ({what}, e.g. {keyless[0]}) carry "
                               f"no {fwmap.SEQUENCE_ARG!r} in the framework trace (torch records it with grad mode on)")
        return False
    if any(len(fm.by_seq[e.nrta_seq_id or 0]) > 1 for e in mapped):
        return _by_mapping_fused(result, execs, mapped, fw, fm, seq_by_corr, flat, what)
    by_key_execs: dict[int, list[Execution]] = defaultdict(list)
    for e in sorted(mapped, key=lambda x: x.nrta_seq_id or 0):
        by_key_execs[fm.by_seq[e.nrta_seq_id or 0][0].seq_nr].append(e)  # several ops (concatenated): the first's
    by_key_launches: dict[int, list[tuple[int, int, str, int]]] = defaultdict(list)
    for x in flat:
        by_key_launches[seq_by_corr[x[3]]].append(x)
    placed: list[tuple[Execution, tuple[int, int, str, int]]] = []
    in_map = {id(e) for e in mapped}
    outside = [e for e in execs if id(e) not in in_map]  # launched while the mapping was off
    for key in sorted(set(by_key_execs) | set(by_key_launches)):
        es, ls = by_key_execs.get(key, []), by_key_launches.get(key, [])
        if len(es) < len(ls):
            result.problems.append(f"rule mapping: sequence number {key} has {len(ls)} launches ({what}) in the profiled "
                                   f"iterations but {len(es)} mapped executions: they cannot be matched one to one")  # fmt: skip
            return False
        extra = len(es) - len(ls)  # the earliest: launched before the profiled iterations, inside the mapping's window
        outside += es[:extra]
        placed += list(zip(es[extra:], ls, strict=True))
    patterns = [Counter(e.model_id for e, (it, _, _, _) in placed if it == k) for k in range(fw.iterations)]
    if any(p != patterns[0] for p in patterns):
        result.problems.append("rule mapping refused: the multiset of executed graphs (model ids) differs between iterations")
        return False
    result.outside_us += sum(e.duration_ns for e in outside) / 1e3
    for e, (it, line, op, corr) in placed:
        _add(result, Placed(e, it, line, op, corr))
    result.rule = RULE_MAPPING
    return True


def _by_mapping_fused(result: SysTraceTime, execs: list[Execution], mapped: list[Execution], fw: _Framework,
                      fm: fwmap.Mapping, seq_by_corr: dict[int, int], flat: list[tuple[int, int, str, int]],
                      what: str) -> bool:  # fmt: skip
    """The mapping rule where an execution carried several framework ops (TorchNeuron records a fused execution under
    each op it carried: `RecordProfilerMapping`, `GetCascadingOperations()`): executions in `nrta_seq_id` order take
    the launches in launch order, as many as the ops each names, each launch's sequence number checked against its
    op's; the earliest executions beyond the launches (the warm-up's) are outside. Placed at its first op's launch,
    the others named (`covered_lines`, `covered_ops`); refused where a number does not fit or one execution's ops
    fall in two iterations."""
    ordered = sorted(mapped, key=lambda x: x.nrta_seq_id or 0)
    ops_of = [fm.by_seq[e.nrta_seq_id or 0] for e in ordered]
    extra, skip = sum(len(o) for o in ops_of) - len(flat), 0
    while extra > 0 and skip < len(ordered) and len(ops_of[skip]) <= extra:
        extra -= len(ops_of[skip])
        skip += 1
    if extra:
        result.problems.append(f"rule mapping: {Path(fm.path).name} names {sum(len(o) for o in ops_of)} framework ops for "
                               f"{len(ordered)} executions (fused), but {len(flat)} launches ({what}) in the profiled "
                               "iterations: they cannot be matched in order")  # fmt: skip
        return False
    placed, at = [], 0
    for e, ops in zip(ordered[skip:], ops_of[skip:], strict=True):
        taken = flat[at : at + len(ops)]
        at += len(ops)
        if [seq_by_corr[corr] for _, _, _, corr in taken] != [o.seq_nr for o in ops] or len({t[0] for t in taken}) != 1:
            result.problems.append(f"rule mapping: an execution (nrta_seq_id {e.nrta_seq_id}) carried {len(ops)} ops whose "
                                   "sequence numbers or iterations do not fit the launches in order: not used")  # fmt: skip
            return False
        it, line, op, corr = taken[0]
        lines, names = tuple(dict.fromkeys(t[1] for t in taken)), tuple(t[2] for t in taken)
        placed.append(Placed(e, it, line, op, corr, lines if len(taken) > 1 else (), names if len(taken) > 1 else ()))
    patterns = [Counter(p.execution.model_id for p in placed if p.iteration == k) for k in range(fw.iterations)]
    if any(p != patterns[0] for p in patterns):
        result.problems.append("rule mapping refused: the multiset of executed graphs (model ids) differs between iterations")
        return False
    in_map = {id(e) for e in ordered[skip:]}
    result.outside_us += sum(e.duration_ns for e in execs if id(e) not in in_map) / 1e3
    for p in placed:
        _add(result, p)
    result.rule = RULE_MAPPING
    return True


def _by_order(result: SysTraceTime, execs: list[Execution], fw: _Framework) -> bool:
    """Tilebench's clock-free rule: executions by device start, sliced by each iteration's launches."""
    launches, what = fw.launches()
    counts = [len(p) for p in launches]
    if sum(counts) != len(execs):
        result.problems.append(
            f"rule order: {len(execs)} executions in the system trace, but {sum(counts)} launches ({what}) "
            f"in {fw.iterations} iteration(s) ({counts}): they cannot be matched one to one"
            + (" (fewer executions than launches: the runtime fused ops, Adaptive Eager Execution; --neuron-exact "
               "gives one execution per op)" if len(execs) < sum(counts) else "")
        )
        return False
    windows, start = [], 0
    for c in counts:
        windows.append(execs[start : start + c])
        start += c
    patterns = [Counter(e.model_id for e in w) for w in windows]
    if any(p != patterns[0] for p in patterns):
        k = next(i for i, p in enumerate(patterns) if p != patterns[0])
        result.problems.append(
            f"rule order refused: the multiset of executed graphs (model ids) differs between iterations "
            f"(iteration 0: {dict(sorted(patterns[0].items()))}, iteration {k}: {dict(sorted(patterns[k].items()))}): "
            "trace events dropped (raise NEURON_RT_INSPECT_SYS_TRACE_MAX_EVENTS_PER_NC) or a graph that changes between "
            "calls; no per-line figure is given"
        )
        return False
    for it, (window, launch) in enumerate(zip(windows, launches, strict=True)):
        for e, (line, op, corr) in zip(window, launch, strict=True):
            _add(result, Placed(e, it, line, op, corr))
    result.rule = RULE_ORDER
    return True


def _add(result: SysTraceTime, p: Placed) -> None:
    n, it, us = result.iterations, p.iteration, p.execution.duration_ns / 1e3
    result.per_line_us.setdefault(p.line, [0.0] * n)[it] += us
    result.per_op_us.setdefault(p.op, [0.0] * n)[it] += us
    result.per_iteration_us[it] += us
    result.placed.append(p)


def _flow_edges(folder: Path) -> list[tuple[int, int]]:
    """`Flow` rows that join two system-profile events (a table name naming the system profile, or none)."""
    flow = read_table(folder, FLOW_TABLE, ["in_id", "out_id", "in_table", "out_table"])
    if flow is None:
        return []
    edges = []
    for a, b, ta, tb in zip(flow["in_id"], flow["out_id"], flow["in_table"], flow["out_table"], strict=True):
        if a is not None and b is not None and all(t is None or "system" in str(t).lower() for t in (ta, tb)):
            edges.append((int(a), int(b)))
    return edges


# ---------------------------------------------------------------------------- the entry point


def line_device_time(folder: Path, def_line: int, framework: list[RawEvent] | None = None,
                     framework_mapping: fwmap.Mapping | None = None, seq_by_corr: dict[int, int] | None = None,
                     ) -> SysTraceTime:  # fmt: skip
    """Each line's device time per iteration from the processed system profile in `folder`
    (`engines.processed_dir(DP, N)`). `framework`: the run's framework events (its trace.json through
    `oplens.analysis.chrome_trace.read_events`); None: the table's own framework rows. `framework_mapping`: the
    early NeuronProfiler's framework_mapping_*.json, with `seq_by_corr` (each op's "Sequence number" by its
    correlation id, `mapping.sequence_numbers`): the mapping rule between flow and order."""
    result = SysTraceTime(source=str(folder))
    _LAST.clear()
    _LAST[str(folder)] = result
    cols, problems = read_events(folder)
    result.problems += problems
    if cols is None:
        return result
    try:
        rows = _rows(cols)
        edges = _flow_edges(folder)
    except Exception as e:  # a table that is not the documented Parquet (pyarrow raises its own errors)
        result.problems.append(
            f"{folder}: table {TABLE} or {FLOW_TABLE} does not read as the documented schema ({type(e).__name__}: {e})"
        )
        return result
    execs = executions(rows)
    result.executions = len(execs)
    result.pcores_per_execution = max((e.pcores for e in execs), default=0)
    if not execs:
        result.problems.append(
            f"table {TABLE} holds no {HW_EXEC_EVENT} rows (trace_event_source {HW}): no device execution was traced"
        )
        return result
    events = framework if framework is not None else framework_events(rows)
    fw = _framework(events, def_line)
    if fw.iterations == 0:
        where = "the framework events given" if framework is not None else f"table {TABLE}'s framework rows"
        result.problems.append(f"{where} hold no {attribution.ITER}<k> range: executions cannot be given to iterations or lines")
        return result
    result.iterations = fw.iterations
    result.per_iteration_us = [0.0] * fw.iterations

    def reset() -> None:
        result.per_line_us, result.per_op_us, result.outside_us, result.placed = {}, {}, 0.0, []
        result.per_iteration_us = [0.0] * fw.iterations

    if _by_flow(result, rows, execs, fw, edges):
        return result
    reset()
    if framework_mapping is not None:
        if _by_mapping(result, execs, fw, framework_mapping, seq_by_corr or {}):
            return result
        reset()
    if not _by_order(result, execs, fw):
        result.per_line_us, result.per_op_us, result.placed = {}, {}, []
        result.per_iteration_us = []
    return result


def fusions(result: SysTraceTime) -> list[RuntimeFusion]:
    """The placed executions that carried several ops (`Placed.covered_ops`), one record per launching line, lines and
    ops covered, each with its executions and device time per iteration. The rule, stated once: a fused execution's
    time is its launching line's (where its first op is: the framework op whose dispatch began it), and each other
    line it covered names it; its time is never split, as no trace says how it divides between the ops."""
    groups: dict[tuple[int, tuple[int, ...], tuple[str, ...]], list[float]] = {}
    for p in result.placed:
        if len(p.covered_ops) > 1:
            acc = groups.setdefault((p.line, p.covered_lines, p.covered_ops), [0.0, 0.0])
            acc[0] += 1
            acc[1] += p.execution.duration_ns / 1e3
    n = max(result.iterations, 1)
    return [RuntimeFusion(line, list(lines), list(ops), count / n, us / n) for (line, lines, ops), (count, us) in groups.items()]


_LAST: dict[str, SysTraceTime] = {}  # the latest result per tables folder, in this process (`last`)


def last(folder: Path) -> SysTraceTime | None:
    """The result `line_device_time` gave last for `folder` in this process: what the runtime's record (runtime.py)
    keeps as device events, read again for the fused executions (spec.py) without reading the tables twice."""
    return _LAST.get(str(folder))


def device_events(result: SysTraceTime) -> list[RawEvent]:
    """Each placed execution as a device event linked to the op that launched it, as Kineto links a
    kernel: added to the run's events (without device events of their own), the attribution gives each
    op and line its executions' time. An execution whose launch fell between ops (no op to link to)
    stays a device event of its own: the run's unattributed device time. Executions outside the
    profiled iterations are left out."""
    out = []
    for p in result.placed:
        e = p.execution
        out.append(RawEvent(HW_EXEC_EVENT, 0, e.start_ns, e.end_ns, linked_correlation_id=p.correlation_id, on_device=True))
    return out
