"""A run as the folder TensorBoard's PyTorch profiler plugin (torch-tb-profiler) and Holistic Trace Analysis read:
one `rank<R>.pt.trace.json.gz` per rank (the plugin's run is the folder, each file a worker; HTA takes a flat folder
of traces), each the rank's own Kineto trace on the run's shared time base with `distributedInfo` saying its rank.

HTA reads a trace's rank from the first `"rank": <n>` in the file, written with a space after the colon (compact
JSON reads as rank 0 for every file), so the trace is written with json's default separators and
`distributedInfo` first. OpLens's line ranges keep their names (`oplens.line:<n>`: what HTA's and the plugin's
tables group by) and gain `args` with the line's source and figures.
"""

from __future__ import annotations

import json
from itertools import compress
from pathlib import Path
from typing import Any

from oplens.exports.traces import Event, LineNames, rank_traces, write_gz
from oplens.records import jsonfile
from oplens.records.run import Run


def export(run: Run, out: Path) -> Path:
    """`run` (stored) as the folder `out` (made; files of an earlier export of the same ranks replaced)."""
    out.mkdir(parents=True, exist_ok=True)
    traces = rank_traces(run, nested=False)  # Kineto's own slices: what the plugin and HTA read
    world = max(len(traces), max((r.world_size for r in run.ranks), default=1))
    for rt in traces:
        rank = rt.number
        events = _with_line_args(rt.events, LineNames(rt.run))
        backend = str((rt.meta.get("distributedInfo") or {}).get("backend", "")) or ("nccl" if _has_cuda(rt.meta) else "gloo")
        info = {"rank": rank, "world_size": world, "backend": backend}
        rest = {k: v for k, v in rt.meta.items() if k != "distributedInfo"} | {"traceEvents": events}
        # distributedInfo first, with json's default separators (`"rank": 0`, as HTA reads it), then the rest compact
        body = jsonfile.dumps(rest)
        data = b'{"distributedInfo": ' + json.dumps(info).encode() + b", " + body[1:]
        write_gz(out / f"rank{rank}.pt.trace.json.gz", data)
    return out


def _with_line_args(events: list[Event], names: LineNames) -> list[Event]:
    """`events` less the probe's and a call's argument marker's slices (no time of the run), each line range's
    `args` with its line's (in place); the few distinct names looked at once each, the events picked by C loops."""
    raw = [e.get("name", "") for e in events]
    drop: set[Any] = set()
    extra: dict[Any, dict[str, Any]] = {}
    for name in set(raw):
        if names.name(str(name)) is None:
            drop.add(name)
        elif names.args(str(name)):
            extra[name] = names.args(str(name))
    for e in compress(events, map(extra.__contains__, raw)):
        if e.get("ph") == "X":
            e["args"] = {**(e.get("args") or {}), **extra[e["name"]]}
    if drop:
        events = [e for e, name in zip(events, raw, strict=True) if not (name in drop and e.get("ph") == "X")]
    return events


def _has_cuda(meta: dict[str, Any]) -> bool:
    return bool(meta.get("deviceProperties"))
