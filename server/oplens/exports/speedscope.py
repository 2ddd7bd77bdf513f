"""A run as a speedscope file (https://www.speedscope.app/file-format-schema.json): per rank, an evented profile of
the host's time (each profiled call → its lines → the ops under them, from the trace's main thread), and a sampled
profile weighted by self device time (function → line → op, from the run's own figures, per call). Frames carry
the file and line where they have one, so a viewer that knows files (the extension's flame graph) opens the line.

speedscope refuses a file whose frames do not close last-opened-first or whose times go back ("Something went
wrong"); the events come from strictly nested slices (traces.nest), opened and closed in order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from oplens import __version__
from oplens.exports.traces import Event, LineNames, RankTrace, iterations, rank_traces
from oplens.records import jsonfile, names
from oplens.records.run import Run

SCHEMA = "https://www.speedscope.app/file-format-schema.json"


class _Frames:
    """The file's shared frames, one per distinct (name, file, line)."""

    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []
        self._index: dict[tuple[str, str, int], int] = {}

    def of(self, name: str, file: str = "", line: int = 0) -> int:
        key = (name, file, line)
        if key not in self._index:
            self._index[key] = len(self.frames)
            frame: dict[str, Any] = {"name": name}
            if file:
                frame["file"] = file
            if line:
                frame["line"] = line
            self.frames.append(frame)
        return self._index[key]


def export(run: Run, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(jsonfile.dumps(build(run)))
    return out


def build(run: Run) -> dict[str, Any]:
    frames = _Frames()
    profiles: list[dict[str, Any]] = []
    for rt in rank_traces(run):
        profiles.append(_host_profile(run, rt, frames))
        profiles.append(_device_profile(run, rt, frames))
    return {
        "$schema": SCHEMA,
        "shared": {"frames": frames.frames},
        "profiles": [p for p in profiles if p is not None],
        "name": f"OpLens {run.target.qualname} ({run.run_id})",
        "activeProfileIndex": 0,
        "exporter": f"oplens {__version__}",
    }


def _host_profile(run: Run, rt: RankTrace, frames: _Frames) -> dict[str, Any]:
    """The profiled calls on the thread that ran them: an `O` at each slice's start, a `C` at its end."""
    line_names = LineNames(rt.run)
    target = rt.run.target
    calls = list(iterations(rt.events))
    thread = (calls[0].get("pid"), calls[0].get("tid")) if calls else None
    slices = [e for e in rt.events if e.get("ph") == "X" and (e.get("pid"), e.get("tid")) == thread and "dur" in e]
    slices.sort(key=lambda e: (e["ts"], -float(e["dur"])))
    windows = [(c["ts"], c["ts"] + float(c["dur"])) for c in calls]
    events: list[dict[str, Any]] = []
    stack: list[tuple[float, int]] = []  # (end, frame)
    last = 0.0

    def close_until(t: float) -> None:
        nonlocal last
        while stack and stack[-1][0] <= t:
            end, frame = stack.pop()
            last = max(last, end)
            events.append({"type": "C", "frame": frame, "at": last})

    for e in slices:
        start = float(e["ts"])
        if not any(a <= start < b for a, b in windows):
            continue
        close_until(start)
        frame = _frame_of(e, line_names, target, frames)
        if frame is None:
            continue
        end = start + float(e["dur"])
        if stack:
            end = min(end, stack[-1][0])
        last = max(last, start)
        events.append({"type": "O", "frame": frame, "at": last})
        stack.append((end, frame))
    close_until(float("inf"))
    t0 = events[0]["at"] if events else 0.0
    for ev in events:
        ev["at"] = round(ev["at"] - t0, 3)
    return {"type": "evented", "name": f"{rt.label} · host time ({len(calls)} calls)", "unit": "microseconds",
            "startValue": 0, "endValue": events[-1]["at"] if events else 0, "events": events}  # fmt: skip


def _frame_of(e: Event, line_names: LineNames, target: Any, frames: _Frames) -> int | None:
    raw = str(e.get("name", ""))
    if raw.startswith(names.ITER_RANGE):
        return frames.of(target.qualname, target.file, target.def_line or target.first_line)
    if raw.startswith(names.LINE_RANGE):
        n = int(raw[len(names.LINE_RANGE) :])
        return frames.of(line_names.name(raw) or raw, target.file, n)
    if raw.startswith(names.INNER_RANGE):
        _, _, inner = raw[len(names.INNER_RANGE) :].rpartition(":")
        return frames.of(line_names.name(raw) or raw, target.file, int(inner))
    if line_names.name(raw) is None:
        return None
    return frames.of(raw)


def _device_profile(run: Run, rt: RankTrace, frames: _Frames) -> dict[str, Any]:
    """Self device time per call as samples: function → line → op, each weighted by its time (µs per call)."""
    t = rt.run.target
    fn = frames.of(t.qualname, t.file, t.def_line or t.first_line)
    line_names = LineNames(rt.run)
    samples: list[list[int]] = []
    weights: list[float] = []
    for s in rt.run.lines:
        line = frames.of(line_names.name(f"{names.LINE_RANGE}{s.line}") or f"L{s.line}", t.file, s.line)
        for op in s.ops:
            if op.self_device_us > 0:
                samples.append([fn, line, frames.of(op.name)])
                weights.append(round(op.self_device_us, 3))
    total = round(sum(weights), 3)
    label = rt.run.backend.device_label or "device"
    return {"type": "sampled", "name": f"{rt.label} · self {label} time per call", "unit": "microseconds",
            "startValue": 0, "endValue": total, "samples": samples, "weights": weights}  # fmt: skip
