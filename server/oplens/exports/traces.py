"""A stored run's traces as the exports read them: each rank's `trace.json` (a run of one process: its own), its
events on one time base shared by the ranks (each trace's `baseTimeNanoseconds` added, the earliest event at 0),
strictly nested per thread, and OpLens's ranges named as what they are (`oplens.line:30` → `L30 return x * w`).

Kineto's slices on one thread can overlap by a rounding step (a child ending a few ns after its parent); viewers
that build a stack (Perfetto, speedscope) refuse or misdraw such a trace, so a child is cut at its parent's end.
"""

from __future__ import annotations

import gc
import gzip
import math
import os
import struct
import time
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import compress, islice
from operator import eq, itemgetter
from pathlib import Path
from typing import Any

from oplens.engine import runs
from oplens.records import jsonfile, names
from oplens.records.errors import bad_input
from oplens.records.run import LineStat, Run

Event = dict[str, Any]
Thread = tuple[Any, Any]  # (pid, tid)

_TS = itemgetter("ts")
GZ_LEVEL = 3
GZ_PIECE = 16 << 20  # bytes a thread compresses at a time
GZ_WINDOW = 32 << 10  # deflate's window: what a piece is primed with


@dataclass
class RankTrace:
    """One rank's (or a single process's) trace of the run."""

    rank: int | None  # None: a run of one process
    number: int  # its rank, or (a run of one process) its place among the traces: what a process or file is named by
    host: str
    run: Run  # the rank's own run (its lines' figures)
    events: list[Event]  # its events, `ts` on the shared time base (µs)
    meta: dict[str, Any] = field(default_factory=dict)  # the trace's other keys (deviceProperties, distributedInfo…)
    threads: dict[Thread, list[Event]] = field(default_factory=dict)  # each thread's complete slices, in the trace's order
    stacked: dict[Thread, list[Event]] = field(default_factory=dict)  # and as they stack (`by_start`, before the cut)
    origin_us: float = 0.0  # the shared time base's 0: µs since the epoch (each trace's `baseTimeNanoseconds` + `ts`)

    @property
    def label(self) -> str:
        return f"rank {self.rank}" if self.rank is not None else "the run"


def rank_traces(run: Run, nested: bool = True) -> list[RankTrace]:
    """Every rank's trace of `run` (stored: `run.run_dir` set), on one time base; bad input naming what is missing.
    `nested`: each thread's slices cut to nest strictly (Perfetto, speedscope); else only moved (TensorBoard and HTA
    read Kineto's own overlaps), without the grouping and sorting that costs."""
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
    # nested: the complete slices by thread (to be cut), the rest aside; else every event is only moved
    grouped = [_group(t["traceEvents"]) if nested else ({}, t["traceEvents"]) for *_, t in found]
    zero = min(_first_start(*g) + b for g, b in zip(grouped, bases, strict=True))
    out = []
    for k, ((rank, host, part, trace), base, (threads, others)) in enumerate(zip(found, bases, grouped, strict=True)):
        shift = base - zero  # the events are changed in place: the trace was read for this export
        for e in others:
            if "ts" in e:
                e["ts"] = float(e["ts"]) + shift
        stacked = {thread: _shift_and_nest(slices, shift) for thread, slices in threads.items()}
        meta = {key: v for key, v in trace.items() if key != "traceEvents"}
        out.append(RankTrace(rank, rank if rank is not None else k, host or str(trace.get("host_name", "")), part,
                             trace["traceEvents"], meta, threads, stacked, zero))  # fmt: skip
    return out


def _group(events: list[Event]) -> tuple[dict[Thread, list[Event]], list[Event]]:
    """The complete slices (`ph: X` with a `dur`) by thread, in the trace's order, and the other events."""
    threads: dict[Thread, list[Event]] = {}
    others: list[Event] = []
    thread: Thread | None = None
    group: list[Event] = []
    for e in events:
        if e.get("ph") == "X" and "dur" in e:
            key = (e.get("pid"), e.get("tid"))
            if key != thread:  # a thread's slices mostly come in runs: one lookup a run
                thread = key
                group = threads.setdefault(key, [])
            group.append(e)
        else:
            others.append(e)
    return threads, others


def _first_start(threads: dict[Thread, list[Event]], others: list[Event]) -> float:
    """The earliest event's time (µs, the trace's own base); metadata (`ph: M`) is stamped before the trace starts."""
    firsts = [min(map(_TS, slices)) for slices in threads.values() if slices]
    firsts += [e["ts"] for e in others if "ts" in e and e.get("ph") != "M"]
    return float(min(firsts, default=0.0))


def _shift_and_nest(slices: list[Event], shift: float) -> list[Event]:
    """One thread's complete slices moved by `shift` (onto the shared time base), each cut (`dur`) where it outlasts
    the slice it starts in, so they nest strictly; returned in the order they stack (`by_start`)."""
    order = sorted(slices, key=_TS)  # on the trace's own times: adding `shift` keeps the order (ties aside)
    starts = [ts + shift for ts in map(_TS, order)]
    if _tied(starts):  # two start together: the longer first
        for e, start in zip(order, starts, strict=True):
            e["ts"] = start
        order = by_start(slices)
        starts = list(map(_TS, order))
    ends = [math.inf]  # the open slices' ends, innermost last (the sentinel never closes)
    for e, start in zip(order, starts, strict=True):
        e["ts"] = start
        while start >= ends[-1]:
            ends.pop()
        end = start + e["dur"]
        if end > ends[-1]:
            end = ends[-1]
            e["dur"] = max(0.0, end - start)
        ends.append(end)
    return order


def _read(path: Path) -> dict[str, Any]:
    try:
        data = jsonfile.loads(gzip.decompress(path.read_bytes())) if path.suffix == ".gz" else jsonfile.read(path)
    except (OSError, ValueError) as e:
        raise bad_input(f"cannot read the trace {path}: {e}", "profile the function again") from None
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise bad_input(f"{path} is not a Chrome trace (no traceEvents)", "profile the function again")
    return data


def by_start(slices: list[Event]) -> list[Event]:
    """`slices` in the order a viewer stacks them: by start, the longer first where two start together (it holds
    the other); a new list, ties in the order given."""
    order = sorted(slices, key=_TS)  # Kineto's slices come nearly in order: a C key, a few compares
    if _tied(list(map(_TS, order))):  # two start together (rare): their durations decide
        order.sort(key=lambda e: (e["ts"], -float(e["dur"])))
    return order


def stacked(rt: RankTrace, thread: Thread) -> list[Event]:
    """A thread's complete slices as cut, in the order they stack (`by_start`)."""
    order = rt.stacked.get(thread, [])
    if _tied(list(map(_TS, order))):  # the order of slices starting together came from their durations before the cut
        order = by_start(rt.threads[thread])
    return order


def _tied(starts: list[float]) -> bool:
    """Whether two of the (sorted) `starts` are the same."""
    return any(map(eq, starts, islice(starts, 1, None)))


class Memo(dict[Any, Any]):
    """`fn`'s answers by argument, each worked out at its first lookup (`memo[x]`), a dict lookup after: a trace repeats
    a few dozen names a million times."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        super().__init__()
        self.fn = fn

    def __missing__(self, key: Any) -> Any:
        found = self[key] = self.fn(key)
        return found


class LineNames:
    """How the exports name OpLens's ranges: a line by its number and source text, with its figures. `names` and
    `line_args` answer by the raw name, each distinct name worked out once (the writers' loops index them directly)."""

    def __init__(self, run: Run) -> None:
        self.run = run
        t = run.target
        self._source = {t.first_line + i: text.strip() for i, text in enumerate(t.source.splitlines())}
        self._stats = {s.line: s for s in run.lines}
        self.names = Memo(lambda raw: self._name(str(raw)))
        self.line_args = Memo(lambda raw: self._line_args(str(raw)))

    def source(self, line: int) -> str:
        return self._source.get(line, "")

    def stat(self, line: int) -> LineStat | None:
        return self._stats.get(line)

    def name(self, raw: str) -> str | None:
        """The slice's name in an export, '' to keep `raw`, None to drop it (the probe, a call's argument marker)."""
        return self.names[raw]  # type: ignore[no-any-return]

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
        return self.line_args[raw]  # type: ignore[no-any-return]

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
    raw = [e.get("name", "") for e in events]
    wanted = {n for n in set(raw) if str(n).startswith(names.ITER_RANGE)}  # a few dozen names, each tested once
    calls = [e for e in compress(events, map(wanted.__contains__, raw)) if e.get("ph") == "X"]
    yield from sorted(calls, key=_TS)


@contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic garbage collector paused: an export makes no cycles, and each collection would walk the trace's
    million dicts again (a third of an export's time)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def write_gz(path: Path, data: bytes) -> Path:
    """`data` gzipped at `path` (level 3: most of the size gone at a fraction of level 9's time), one gzip member
    compressed in pieces on all the cores at once (zlib lets go of the GIL), as pigz does."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if len(data) <= GZ_PIECE:
        path.write_bytes(gzip.compress(data, compresslevel=GZ_LEVEL))
        return path
    view = memoryview(data)
    with ThreadPoolExecutor(min(os.cpu_count() or 1, 1 + len(data) // GZ_PIECE)) as pool, path.open("wb") as f:
        crc = pool.submit(zlib.crc32, view)
        pieces = [pool.submit(_deflate, view, at) for at in range(0, len(data), GZ_PIECE)]
        f.write(b"\x1f\x8b\x08\x00" + struct.pack("<I", int(time.time())) + b"\x00\xff")  # deflate, mtime, unknown OS
        for piece in pieces:
            f.write(piece.result())
        f.write(struct.pack("<II", crc.result(), len(data) & 0xFFFFFFFF))
    return path


def _deflate(data: memoryview, at: int) -> bytes:
    """The raw deflate of `data[at : at + GZ_PIECE]`, primed with the 32 KiB before it (so it compresses as well as
    one stream would); the last piece ends the stream, the others end on a byte (a sync flush) for the next to follow."""
    window = [data[max(0, at - GZ_WINDOW) : at].tobytes()] if at else []
    z = zlib.compressobj(GZ_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS, 9, zlib.Z_DEFAULT_STRATEGY, *window)
    last = at + GZ_PIECE >= len(data)
    return z.compress(data[at : at + GZ_PIECE]) + z.flush(zlib.Z_FINISH if last else zlib.Z_SYNC_FLUSH)
