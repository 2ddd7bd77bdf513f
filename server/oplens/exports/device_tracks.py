"""The device work a backend's own trace holds (not the profiler's: a Neuron run's NeuronCore executions, which
TorchNeuron's Kineto session does not return) as tracks of a Chrome trace: one process per rank beside its host's,
a thread per core, each execution a complete slice with a flow from the op that launched it (on the host's thread,
inside its line's slice), and the vendor tool's own trace files of the run for the archive beside it.

Complete slices on a thread of their own, not async slices: Perfetto's JSON importer binds a flow's end to a slice on
a thread track, and one core's executions never overlap (systrace merges a core's rows).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oplens.backends import registry
from oplens.backends.spec import DeviceTimeline
from oplens.records.run import Run

Event = dict[str, Any]
LAUNCH = "oplens.launch"  # the flows' category


@dataclass
class DeviceTracks:
    events: list[Event] = field(default_factory=list)  # the slices and their flows, on `pid`
    threads: dict[int, str] = field(default_factory=dict)  # tid → its track's name ("NeuronCore 0")
    timeline: DeviceTimeline | None = None  # what the backend said: its clock, its files, its problems


def device_tracks(run: Run, origin_us: float, host_events: list[Event], pid: int, flow_base: int, scratch: Path | None,
                  ) -> DeviceTracks:  # fmt: skip
    """`run`'s (one rank's) device work on process `pid`, on the export's time base (`origin_us`: the absolute µs at
    its 0), each slice's flow from the host op in `host_events` (already on that time base) that launched it; flow
    ids from `flow_base` up; the vendor tool's own files written under `scratch` (None: not asked for). Nothing where
    the backend has no trace of its own (the profiler's holds the device's)."""
    out = DeviceTracks()
    out.timeline = registry.get(run.backend.name).device_timeline(run, Path(run.run_dir), scratch)
    if out.timeline is None or not out.timeline.slices:
        return out
    wanted = {s.launched_by for s in out.timeline.slices if s.launched_by}
    launches: dict[int, Event] = {}
    for e in host_events:
        if e.get("ph") == "X":
            ext = (e.get("args") or {}).get("External id")
            if ext in wanted and ext not in launches:
                launches[ext] = e
    tids: dict[str, int] = {}
    for k, s in enumerate(out.timeline.slices):
        tid = tids.setdefault(s.track, len(tids))
        out.threads[tid] = s.track
        ts = round(s.start_us - origin_us, 3)
        out.events.append({"ph": "X", "cat": "device", "name": s.name, "pid": pid, "tid": tid, "ts": ts,
                           "dur": round(s.dur_us, 3), "args": {**s.args, "clock": out.timeline.clock}})  # fmt: skip
        op = launches.get(s.launched_by)
        if op is not None:
            fid = flow_base + k
            out.events += [{"ph": "s", "cat": LAUNCH, "name": "launch", "id": fid, "pid": op["pid"], "tid": op["tid"],
                            "ts": op["ts"]},
                           {"ph": "f", "bp": "e", "cat": LAUNCH, "name": "launch", "id": fid, "pid": pid, "tid": tid,
                            "ts": ts}]  # fmt: skip
    return out
