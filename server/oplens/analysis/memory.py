"""Each line's memory (pure): what its ops allocate and free in one call, the peak while it ran, and
the insight of a line that allocates a large temporary, a block the same call frees again.

`line_memory` reads the `[memory]` events of the shapes call (recorded with `profile_memory`),
placed in their line as the attribution places ops (`attribution.locator`); `assign` puts them in the
run's records. A block allocated and freed within the call, paired by its address, is a temporary.
A temporary raises the call's peak memory for nothing it returns: what a fused kernel, an in-place
op or a chunked loop would not have materialised. A line keeps its largest (`LineStat.temporary`);
`temporary_insights` names the large ones.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from oplens.analysis.attribution import AnyEvents, locator
from oplens.records.format import fmt_bytes
from oplens.records.run import Insight, LineStat, Target, Temporary, Totals

MEMORY = "[memory]"  # the profiler's name of an allocation (nbytes > 0) or a free (< 0)
TEMP_MIN_BYTES = 1 << 20  # a temporary at least this large ...
TEMP_PEAK_SHARE = 0.25  # ... and this share of the call's peak memory


@dataclass
class LineMemory:
    """A line's memory in one call: bytes its ops allocated and freed, and the peak while it ran."""

    alloc: int = 0
    freed: int = 0
    peak: int = 0
    temp_bytes: int = 0  # the largest block it allocated that the call freed again
    temp_freed_line: int = 0  # the line that freed it


@dataclass
class DeviceLineMemory:
    """Each line's memory from the device allocator's own counters, read around each line of the call
    that records input shapes (worker/linememory.py), where the profiler's memory events are the host's;
    `lines` None where they could not be read (`note` says why)."""

    lines: dict[int, LineMemory] | None
    peak: int
    note: str  # where the figures were read, or why they were not, in words


def chosen(
    events: tuple[dict[int, LineMemory], int, str], device: DeviceLineMemory | None
) -> tuple[tuple[dict[int, LineMemory], int, str], str]:
    """The memory the lines show, and where it was read ("": the profiler's memory events): the device's
    allocations from the events where they have any, else from the device's counters where they were
    read, else the host's from the events. Host and device figures are never mixed."""
    if events[2] == "device" or device is None:
        return events, ""
    if device.lines is None:
        return events, device.note
    return (device.lines, device.peak, "device"), device.note


def line_memory(events: AnyEvents, def_line: int) -> tuple[dict[int, LineMemory], int, str]:
    """Each line's allocations in the first iteration of a profile recorded with `profile_memory`:
    bytes allocated and freed by its ops, and the peak of the memory allocated since the call began
    while it ran; with the call's peak and which allocator ("device" where the device's reported
    any, else "host"). A block allocated and freed within the call (paired by its address) is a
    temporary: each line keeps its largest and the line that freed it."""
    memory = [e for e in events if e.name == MEMORY]
    device = any(e.device_memory for e in memory)
    memory = sorted((e for e in memory if e.device_memory == device), key=lambda e: e.start_ns)
    locate = locator(events, def_line)
    found: dict[int, LineMemory] = {}
    live: dict[int, tuple[int, int]] = {}  # address → (line, bytes) of a block allocated in the call
    level = peak = 0
    for e in memory:
        it, line, *_ = locate(e.start_ns)
        if it != 0:
            continue
        line = line or def_line
        acc = found.setdefault(line, LineMemory())
        level += e.nbytes
        if e.nbytes > 0:
            acc.alloc += e.nbytes
            if e.addr:
                live[e.addr] = (line, e.nbytes)
        else:
            acc.freed -= e.nbytes
            born = live.pop(e.addr, None) if e.addr else None
            if born is not None and born[1] == -e.nbytes:
                owner = found[born[0]]
                if born[1] > owner.temp_bytes:
                    owner.temp_bytes, owner.temp_freed_line = born[1], line
        acc.peak = max(acc.peak, level)
        peak = max(peak, level)
    return found, peak, "device" if device else "host"


def assign(lines: list[LineStat], totals: Totals, memory: tuple[Mapping[int, LineMemory], int, str], note: str = "") -> None:
    """Each line's memory (`line_memory`) into the run's records; a line that only frees (`del x`)
    or allocates without an op of its own joins the lines, with no time."""
    by_line, peak, kind = memory
    have = {s.line for s in lines}
    for n, m in by_line.items():
        if n not in have and (m.alloc or m.freed):
            zeros = [0.0] * len(totals.device_samples_us)  # per call, as every line has them
            lines.append(LineStat(line=n, self_cpu_us=0.0, self_device_us=0.0, pct_device=0.0, pct_cpu=0.0, op_calls=0.0,
                                  device_samples_us=zeros, cpu_samples_us=list(zeros)))  # fmt: skip
    lines.sort(key=lambda s: s.line)
    for s in lines:
        m = by_line.get(s.line, LineMemory())
        s.alloc_bytes, s.freed_bytes, s.peak_bytes = m.alloc, m.freed, m.peak
        s.temporary = Temporary(m.temp_bytes, m.temp_freed_line) if m.temp_bytes else None
    totals.peak_bytes, totals.memory, totals.memory_note = peak, kind, note


_ASSIGNED = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*(?::[^=]*)?=(?!=)")


def _name(code: str) -> str:
    """What the line assigns (`x_sq = ...` → "x_sq"), else ""."""
    m = _ASSIGNED.match(code)
    return m.group(1) if m else ""


def _where(freed: int, allocated: int, target: Target) -> str:
    if freed == target.def_line or freed < allocated:
        return "freed when the function returned"
    if freed == allocated:
        return "freed on the same line"
    n = freed - allocated
    return f"freed {n} line{'s' if n > 1 else ''} later (line {freed})"


def temporary_insights(lines: Sequence[LineStat], totals: Totals, target: Target) -> list[Insight]:
    """A line whose largest temporary is at least TEMP_MIN_BYTES and TEMP_PEAK_SHARE of the peak."""
    source = target.source.splitlines()
    found = []
    for s in lines:
        t = s.temporary
        if t is None or t.bytes < TEMP_MIN_BYTES or t.bytes < TEMP_PEAK_SHARE * totals.peak_bytes:
            continue
        i = s.line - target.first_line
        name = _name(source[i]) if 0 <= i < len(source) else ""
        what = f"{name}: a" if name else "a"
        share = f", {100 * t.bytes / totals.peak_bytes:.0f} % of the call's peak" if totals.peak_bytes else ""
        found.append(Insight(
            line=s.line,
            kind="temporary",
            message=(f"{what} {fmt_bytes(t.bytes)} intermediate {_where(t.freed_line, s.line, target)}{share}: "
                     "fuse its producer and consumer (torch.compile), compute it in place or in chunks, "
                     "so it is never held whole"),
            evidence=(f"{fmt_bytes(t.bytes)} allocated on line {s.line} and freed on line {t.freed_line} in the same call; "
                      f"the call's peak {fmt_bytes(totals.peak_bytes)} ({totals.memory or 'host'} memory)"),
        ))  # fmt: skip
    return found
