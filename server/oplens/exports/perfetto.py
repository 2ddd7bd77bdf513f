"""A run as one Chrome trace (`.json.gz`) for Perfetto UI and chrome://tracing: every rank a process of its own
("OpLens <function> · rank R · <host>", sorted by rank) on one time base, its device activity (CUDA streams, a
device's own tracks) a process beside it, the target's lines as named slices (`L30 return x * w`, with the line,
file, source and per-call figures in `args`), the profiler's ops nested under them, its flows (launch → kernel)
kept, each rank's flow ids made distinct.

The rules a viewer holds a Chrome trace to (Perfetto's JSON importer: slices on one thread nest strictly, a flow's
ends pair up, every process named) are checked by `problems`, which the tests and `oplens export` run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from oplens.exports.traces import Event, LineNames, RankTrace, rank_traces, write_gz
from oplens.records import jsonfile
from oplens.records.run import Run

RANK_PID = 1_000_000  # a rank's processes get pids of their own: RANK_PID × (rank + 1) + their index
FLOW_ID = 1 << 40  # and its flows ids of their own: FLOW_ID × (rank + 1) + the id


def export(run: Run, out: Path) -> Path:
    """`run` (stored) as a gzipped Chrome trace at `out`; the path written."""
    return write_gz(out, jsonfile.dumps(build(run)))


def build(run: Run) -> dict[str, Any]:
    """The trace object: `traceEvents`, `displayTimeUnit`, and OpLens's `otherData` (the run, its function)."""
    events: list[Event] = []
    for rt in rank_traces(run):
        events += _rank_events(run, rt)
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {"oplens_run": run.run_id, "function": run.target.qualname, "file": run.target.file,
                      "device": run.backend.device_label},  # fmt: skip
    }


def _rank_events(run: Run, rt: RankTrace) -> list[Event]:
    rank = rt.number
    named = _Named(LineNames(rt.run))
    pids = _Pids(rank)
    labels: dict[Any, str] = {}
    out: list[Event] = []
    threads: dict[tuple[int, Any], str] = {}
    for e in rt.events:  # one pass: renamed, moved to the rank's pids, its flows' ids made the rank's, in place
        pid = e.get("pid")
        ph = e.get("ph")
        if ph == "M":
            name = e.get("name")
            if name == "process_name":  # the trace's own process names say which pid is the host's and which a device's
                labels[pid] = str((e.get("args") or {}).get("name", ""))
            elif name == "thread_name" and isinstance(pid, int):
                threads[(pids[pid], e.get("tid"))] = str((e.get("args") or {}).get("name", ""))
            continue
        if not isinstance(pid, int):
            continue  # Kineto's own bookkeeping ("Spans", "Traces"): no process of the run
        if ph == "X":
            raw = e.get("name", "")
            new = named[raw]
            if new is None:
                continue
            if new:
                e["name"] = new
                extra = named.line_names.args(str(raw))
                if extra:
                    e["args"] = {**(e.get("args") or {}), "oplens": extra}
                    e["cat"] = "oplens.line"
        elif ph in ("s", "t", "f") and "id" in e:
            e["id"] = FLOW_ID * (rank + 1) + int(e["id"]) if str(e["id"]).isdigit() else f"r{rank}:{e['id']}"
        e["pid"] = pids[pid]
        out.append(e)
    fn = run.target.qualname
    where = f" · {rt.host}" if rt.host else ""
    meta: list[Event] = []
    for original, pid in pids.items():
        own = labels.get(original, "")
        device = own and own.lower() not in ("python", "") and not own.lower().startswith("python")
        title = f"OpLens {fn} · {rt.label if rt.rank is not None else 'host'}{where}" + (f" · {own}" if device else "")
        meta += [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": title}},
                 {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}}]  # fmt: skip
    for (pid, tid), name in threads.items():
        meta.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})
    return meta + out


class _Pids(dict[Any, int]):
    """A rank's pids by the trace's own, each given the next of the rank's own at its first sight."""

    def __init__(self, rank: int) -> None:
        super().__init__()
        self.rank = rank

    def __missing__(self, original: Any) -> int:
        pid = self[original] = RANK_PID * (self.rank + 1) + len(self)
        return pid


class _Named(dict[Any, "str | None"]):
    """A slice's name in the export by its own (`LineNames.name`), each distinct name looked up once."""

    def __init__(self, line_names: LineNames) -> None:
        super().__init__()
        self.line_names = line_names

    def __missing__(self, raw: Any) -> str | None:
        found = self[raw] = self.line_names.name(str(raw))
        return found


def problems(trace: dict[str, Any]) -> list[str]:
    """What breaks Perfetto's rules for a JSON trace, in words ([]: none): slices on one thread that overlap
    without nesting, a flow whose start or end is missing, an unnamed process."""
    found: list[str] = []
    events = trace.get("traceEvents", [])
    named = {e.get("pid") for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    used = {e.get("pid") for e in events if e.get("ph") != "M"}
    found += [f"process {pid} has no process_name" for pid in sorted(used - named, key=str)]
    by_thread: dict[tuple[Any, Any], list[Event]] = {}
    for e in events:
        if e.get("ph") == "X":
            by_thread.setdefault((e.get("pid"), e.get("tid")), []).append(e)
    for (pid, tid), slices in by_thread.items():
        slices.sort(key=lambda e: (e["ts"], -float(e.get("dur", 0))))
        ends: list[tuple[float, str]] = []
        for e in slices:
            start, end = float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))
            while ends and start >= ends[-1][0] - 1e-6:
                ends.pop()
            if ends and end > ends[-1][0] + 1e-6:
                found.append(f"pid {pid} tid {tid}: {e.get('name')!r} at {start:.3f} ends after {ends[-1][1]!r} it starts in")
                if len(found) > 20:
                    return found
            ends.append((end, str(e.get("name"))))
    flows: dict[tuple[Any, Any], set[str]] = {}
    for e in events:
        if e.get("ph") in ("s", "f"):
            flows.setdefault((e.get("cat"), e.get("id")), set()).add(str(e["ph"]))
    found += [f"flow {key[1]} ({key[0]}) has only its {''.join(sorted(ends))}"
              for key, ends in flows.items() if ends != {"s", "f"}]  # fmt: skip
    return found
