"""A run as a speedscope file (https://www.speedscope.app/file-format-schema.json): per rank, an evented profile of
the host's time (each profiled call → its lines → the ops under them, from the trace's main thread), and a sampled
profile weighted by self device time (function → line → op, from the run's own figures, per call). Frames carry
the file and line where they have one, so a viewer that knows files (the extension's flame graph) opens the line.

speedscope refuses a file whose frames do not close last-opened-first or whose times go back ("Something went
wrong"); the events come from strictly nested slices (traces.rank_traces), opened and closed in order.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from oplens import __version__
from oplens.analysis.arrays import NUMPY, np
from oplens.exports.traces import Event, LineNames, Memo, RankTrace, iterations, paused_gc, rank_traces, stacked
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
    with paused_gc():
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
    calls = list(iterations(rt.events))
    slices = stacked(rt, (calls[0].get("pid"), calls[0].get("tid"))) if calls else []
    opened = _opened(slices, [(c["ts"], c["ts"] + float(c["dur"])) for c in calls])
    line_names, target = LineNames(rt.run), rt.run.target
    kinds, shown, times = _marks(opened, Memo(lambda raw: _frame_of(str(raw), line_names, target, frames)))
    ats = _rounded(times, times[0] if times else 0.0)
    events = [{"type": kind, "frame": frame, "at": at} for kind, frame, at in zip(kinds, shown, ats, strict=True)]
    return {"type": "evented", "name": f"{rt.label} · host time ({len(calls)} calls)", "unit": "microseconds",
            "startValue": 0, "endValue": events[-1]["at"] if events else 0, "events": events}  # fmt: skip


def _opened(slices: list[Event], windows: list[tuple[float, float]]) -> Iterator[Event]:
    """The slices (in order) that start inside a window (a profiled call): each call's are a run of `slices`."""
    starts = [e["ts"] for e in slices]
    at = 0
    for a, b in _union(windows):
        at = max(at, bisect_left(starts, a))
        end = bisect_left(starts, b)
        yield from slices[at:end]
        at = end


def _union(windows: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The half-open intervals `windows` cover, in order, none overlapping or touching."""
    out: list[tuple[float, float]] = []
    for a, b in sorted(w for w in windows if w[0] < w[1]):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _marks(opened: Iterable[Event], frame_of: Memo) -> tuple[list[str], list[int], array[float]]:
    """Each slice opened and closed, as columns: `O` or `C`, its frame, the time; last opened first closed, the times
    never going back (a slice ends at its parent's end at the latest)."""
    kinds: list[str] = []
    shown: list[int] = []
    times = array("d")  # numpy reads them where they lie
    stack: list[tuple[float, int]] = [(math.inf, -1)]  # (end, frame), innermost last; the sentinel never closes
    top = math.inf  # the innermost open slice's end
    last = 0.0
    for e in opened:
        start = e["ts"]
        while top <= start:
            frame = stack.pop()[1]
            if top > last:
                last = top
            kinds.append("C")
            shown.append(frame)
            times.append(last)
            top = stack[-1][0]
        found = frame_of[e.get("name", "")]
        if found is None:
            continue
        if start > last:
            last = start
        kinds.append("O")
        shown.append(found)
        times.append(last)
        end = start + e["dur"]
        if end < top:
            top = end
        stack.append((top, found))
    while len(stack) > 1:
        top, frame = stack.pop()
        if top > last:
            last = top
        kinds.append("C")
        shown.append(frame)
        times.append(last)
    return kinds, shown, times


def _rounded(times: array[float], t0: float) -> list[float]:
    """`round(t - t0, 3)` of each time, the same floats, with numpy at a fraction of the time: the nearest integer
    to 1000·(t - t0), in thousandths (an exact division), wherever that integer is clear of a half-way point by more
    than the product's rounding; `round` itself for the rest (a few in a thousand)."""
    if not NUMPY or not times:
        return [round(t - t0, 3) for t in times]
    scaled = (np.frombuffer(times, dtype=np.float64) - t0) * 1000.0  # below 2**40, rounded by at most 2**-13
    near = np.rint(scaled)
    out: list[float] = (near / 1000.0).tolist()
    for i in np.flatnonzero(~((np.abs(scaled - near) <= 0.499) & (np.abs(scaled) < 2.0**40))).tolist():  # NaN too
        out[i] = round(times[i] - t0, 3)
    return out


def _frame_of(raw: str, line_names: LineNames, target: Any, frames: _Frames) -> int | None:
    """A slice's frame by its name (None: not shown, the probe's)."""
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
