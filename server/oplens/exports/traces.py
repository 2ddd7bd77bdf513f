"""A stored run's traces as the exports read them: each rank's `trace.json` (a run of one process: its own), its
events on one time base shared by the ranks (each trace's `baseTimeNanoseconds` added, the earliest event at 0),
strictly nested per thread, and OpLens's ranges named as what they are (`oplens.line:30` → `L30 return x * w`).

Kineto's slices on one thread can overlap by a rounding step (a child ending a few ns after its parent); viewers
that build a stack (Perfetto, speedscope) refuse or misdraw such a trace, so a child is cut at its parent's end.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oplens.engine import runs
from oplens.records import jsonfile, names
from oplens.records.errors import bad_input
from oplens.records.run import LineStat, Run

Event = dict[str, Any]


@dataclass
class RankTrace:
    """One rank's (or a single process's) trace of the run."""

    rank: int | None  # None: a run of one process
    number: int  # its rank, or (a run of one process) its place among the traces: what a process or file is named by
    host: str
    run: Run  # the rank's own run (its lines' figures)
    events: list[Event]  # its events, `ts` on the shared time base (µs)
    meta: dict[str, Any] = field(default_factory=dict)  # the trace's other keys (deviceProperties, distributedInfo…)

    @property
    def label(self) -> str:
        return f"rank {self.rank}" if self.rank is not None else "the run"


def rank_traces(run: Run) -> list[RankTrace]:
    """Every rank's trace of `run` (stored: `run.run_dir` set), on one time base; bad input naming what is missing."""
    root = Path(run.run_dir)
    found: list[tuple[int | None, str, Run, dict[str, Any]]] = []
    if run.ranks and len(run.ranks) > 1:
        for info in run.ranks:
            if info.failed or not info.part:
                continue
            part = runs.load_run(root / info.part)
            found.append((info.rank, info.host, part, _read(root / info.part / (part.artifacts.trace_json or "trace.json"))))
    else:
        host = run.ranks[0].host if run.ranks else ""
        if not run.artifacts.trace_json:
            raise bad_input(f"run {run.run_id} kept no trace.json", "profile the function again: every run keeps its trace")
        found.append((run.ranks[0].rank if run.ranks else None, host, run, _read(root / run.artifacts.trace_json)))
    if not found:
        raise bad_input(f"run {run.run_id} has no rank with a trace", "every rank of it failed: capture it again")
    bases = [float(t.get("baseTimeNanoseconds", 0)) / 1000.0 for *_, t in found]
    starts = [min((float(e["ts"]) for e in t.get("traceEvents", []) if "ts" in e and e.get("ph") != "M"), default=0.0) + b
              for (*_, t), b in zip(found, bases, strict=True)]  # fmt: skip
    zero = min(starts)
    out = []
    for k, ((rank, host, part, trace), base) in enumerate(zip(found, bases, strict=True)):
        shift = base - zero
        events = []
        for e in trace.get("traceEvents", []):
            if "ts" in e:
                e["ts"] = float(e["ts"]) + shift
            events.append(e)
        meta = {k: v for k, v in trace.items() if k != "traceEvents"}
        out.append(RankTrace(rank, rank if rank is not None else k, host or str(trace.get("host_name", "")), part,
                             nest(events), meta))  # fmt: skip
    return out


def _read(path: Path) -> dict[str, Any]:
    try:
        data = jsonfile.loads(gzip.decompress(path.read_bytes())) if path.suffix == ".gz" else jsonfile.read(path)
    except (OSError, ValueError) as e:
        raise bad_input(f"cannot read the trace {path}: {e}", "profile the function again") from None
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise bad_input(f"{path} is not a Chrome trace (no traceEvents)", "profile the function again")
    return data


def nest(events: list[Event]) -> list[Event]:
    """`events` with every complete slice (`ph: X`) cut where it outlasts the slice it starts in on its thread, so the
    slices of each thread nest strictly; in place, returned."""
    by_thread: dict[tuple[Any, Any], list[Event]] = {}
    for e in events:
        if e.get("ph") == "X" and "dur" in e:
            by_thread.setdefault((e.get("pid"), e.get("tid")), []).append(e)
    for slices in by_thread.values():
        slices.sort(key=lambda e: (e["ts"], -float(e["dur"])))
        ends: list[float] = []
        for e in slices:
            start = e["ts"]
            while ends and start >= ends[-1]:
                ends.pop()
            end = start + float(e["dur"])
            if ends and end > ends[-1]:
                end = ends[-1]
                e["dur"] = max(0.0, end - start)
            ends.append(end)
    return events


class LineNames:
    """How the exports name OpLens's ranges: a line by its number and source text, with its figures (each distinct
    name worked out once: a trace repeats a few dozen names a million times)."""

    def __init__(self, run: Run) -> None:
        self.run = run
        t = run.target
        self._source = {t.first_line + i: text.strip() for i, text in enumerate(t.source.splitlines())}
        self._stats = {s.line: s for s in run.lines}
        self._names: dict[str, str | None] = {}
        self._args: dict[str, dict[str, Any]] = {}

    def source(self, line: int) -> str:
        return self._source.get(line, "")

    def stat(self, line: int) -> LineStat | None:
        return self._stats.get(line)

    def name(self, raw: str) -> str | None:
        """The slice's name in an export, '' to keep `raw`, None to drop it (the probe, a call's argument marker)."""
        found = self._names.get(raw, "?")
        if found == "?":
            found = self._names[raw] = self._name(raw)
        return found

    def _name(self, raw: str) -> str | None:
        if not raw.startswith(names.MARKER):
            return ""
        if raw.startswith(names.LINE_RANGE):
            n = int(raw[len(names.LINE_RANGE) :])
            text = self.source(n)
            return f"L{n} {text}" if text else f"L{n}"
        if raw.startswith(names.INNER_RANGE):
            fn, _, inner = raw[len(names.INNER_RANGE) :].rpartition(":")
            return f"{fn} L{inner}"
        if raw.startswith(names.ITER_RANGE):
            return f"{self.run.target.qualname} · call {raw[len(names.ITER_RANGE) :]}"
        if raw.startswith((names.PROBE_RANGE, names.WORK_RANGE)):
            return None
        return ""

    def args(self, raw: str) -> dict[str, Any]:
        """A line range's args: its line, file, source and per-call figures ({} for any other name)."""
        found = self._args.get(raw)
        if found is None:
            found = self._args[raw] = self._line_args(raw)
        return found

    def _line_args(self, raw: str) -> dict[str, Any]:
        if not raw.startswith(names.LINE_RANGE):
            return {}
        n = int(raw[len(names.LINE_RANGE) :])
        out: dict[str, Any] = {"line": n, "file": self.run.target.file, "source": self.source(n)}  # fmt: skip
        s = self.stat(n)
        if s is not None:
            out |= {"self_device_us_per_call": round(s.self_device_us, 3), "wall_us_per_call": round(s.wall_us, 3),
                    "share_pct": round(s.pct_device, 2)}  # fmt: skip
        return out


def iterations(events: list[Event]) -> Iterator[Event]:
    """The profiled calls' ranges (`oplens.iter:<i>`), in order."""
    calls = [e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith(names.ITER_RANGE)]
    yield from sorted(calls, key=lambda e: e["ts"])


def write_gz(path: Path, data: bytes) -> Path:
    """`data` gzipped at `path` (level 3: most of the size gone at a fraction of level 9's time)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data, compresslevel=3))
    return path
