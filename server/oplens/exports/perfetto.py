"""A run as one Chrome trace (`.json.gz`) for Perfetto UI and chrome://tracing: every rank a process of its own
("OpLens <function> · rank R · <host>", sorted by rank) on one time base, its device activity (CUDA streams, a
device's own tracks) a process beside it, the target's lines as named slices (`L30 return x * w`, with the line,
file, source and per-call figures in `args`), the profiler's ops nested under them, its flows (launch → kernel)
kept, each rank's flow ids made distinct. Device work only the backend's own trace holds (a Neuron run's NeuronCore
executions: device_tracks.py) is a process of its own per rank, each execution a slice with a flow from the op that
launched it; where the vendor's tool also wrote its own traces of the run (Neuron Explorer's `.pftrace` files), the
export is a ZIP of them and OpLens's trace, with a `perfetto_manifest.json` naming each (Perfetto opens a ZIP of traces
as one timeline; the manifest's format: google/perfetto's trace processor, `perfetto_manifest` version 1, where an entry
with only a path leaves that file's clock alone: the vendor's clock is not asserted to be the profiler's).

The rules a viewer holds a Chrome trace to (Perfetto's JSON importer: slices on one thread nest strictly, a flow's
ends pair up, every process named) are checked by `problems`, which the tests and `oplens export` run.
"""

from __future__ import annotations

import json
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from oplens.exports.device_tracks import DeviceTracks, device_tracks
from oplens.exports.traces import Event, LineNames, RankTrace, rank_traces, write_gz
from oplens.records import jsonfile
from oplens.records.run import Run

RANK_PID = 1_000_000  # a rank's processes get pids of their own: RANK_PID × (rank + 1) + their index
DEVICE_PID = RANK_PID // 2  # its device tracks (device_tracks.py): RANK_PID × (rank + 1) + DEVICE_PID
FLOW_ID = 1 << 40  # and its flows ids of their own: FLOW_ID × (rank + 1) + the id
DEVICE_FLOW = 1 << 39  # its launches' flows to device tracks: FLOW_ID × (rank + 1) + DEVICE_FLOW + the slice's place
MANIFEST = "perfetto_manifest.json"


def export(run: Run, out: Path) -> tuple[Path, list[str]]:
    """`run` (stored) as a gzipped Chrome trace at `out`, or (where the vendor's tool wrote traces of its own) a ZIP
    of it and them beside `out` (`.zip` for `.json.gz`); the path written, and what its device tracks lack, why."""
    with tempfile.TemporaryDirectory(prefix="oplens-export-") as scratch:
        trace, files = _build(run, Path(scratch))
        data = jsonfile.dumps(trace)
        notes = [f"{who}: {p}" for who, d in trace["otherData"].get("device_tracks", {}).items() for p in d["problems"]]
        if not files:
            return write_gz(out, data), notes
        return _write_zip(out, f"{run.run_id}.oplens.json", data, files), notes


def build(run: Run) -> dict[str, Any]:
    """The trace object: `traceEvents`, `displayTimeUnit`, and OpLens's `otherData` (the run, its function, how its
    device tracks were placed)."""
    return _build(run, None)[0]


def _build(run: Run, scratch: Path | None) -> tuple[dict[str, Any], list[Path]]:
    events: list[Event] = []
    files: list[Path] = []
    device: dict[str, Any] = {}
    for rt in rank_traces(run):
        own = _rank_events(run, rt)
        pid, flows = RANK_PID * (rt.number + 1) + DEVICE_PID, FLOW_ID * (rt.number + 1) + DEVICE_FLOW
        tracks = device_tracks(rt.run, rt.origin_us, own, pid, flows, scratch / f"rank{rt.number}" if scratch else None)
        events += own + _device_events(run, rt, tracks, pid)
        if tracks.timeline is not None:
            files += tracks.timeline.files
            device[rt.label] = {"clock": tracks.timeline.clock, "slices": len(tracks.timeline.slices),
                                "problems": tracks.timeline.problems}  # fmt: skip
    other: dict[str, Any] = {"oplens_run": run.run_id, "function": run.target.qualname, "file": run.target.file,
                             "device": run.backend.device_label}  # fmt: skip
    if device:
        other["device_tracks"] = device
    return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": other}, files


def _device_events(run: Run, rt: RankTrace, tracks: DeviceTracks, pid: int) -> list[Event]:
    """The rank's device tracks (on `pid`) with their process's and threads' names."""
    if not tracks.events:
        return []
    where = f" · {rt.host}" if rt.host else ""
    whose = rt.label if rt.rank is not None else "device"
    title = f"OpLens {run.target.qualname} · {whose}{where} · {run.backend.device_label}"
    meta: list[Event] = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": title}},
                         {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}}]
    meta += [{"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}
             for tid, name in tracks.threads.items()]  # fmt: skip
    return meta + tracks.events


def _write_zip(out: Path, name: str, data: bytes, files: list[Path]) -> Path:
    """OpLens's trace (`name`) and the vendor's `files` in one ZIP with the manifest naming each, at `out` (its
    `.json.gz` made `.zip`)."""
    path = out.with_name(out.name.removesuffix(".gz").removesuffix(".json") + ".zip") if out.suffix != ".zip" else out
    path.parent.mkdir(parents=True, exist_ok=True)
    members = [name] + [f.name for f in files]
    manifest = {"perfetto_manifest": {"version": 1, "files": [{"path": m} for m in members]}}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=3) as z:
        z.writestr(MANIFEST, json.dumps(manifest, indent=1))
        z.writestr(name, data)
        for f in files:
            z.write(f, f.name)
    return path


def _rank_events(run: Run, rt: RankTrace) -> list[Event]:
    rank = rt.number
    line_names = LineNames(rt.run)
    named = line_names.names
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
                extra = line_names.line_args[raw]
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
