"""Memory insights (pure): a line that allocates a large temporary, a block the same call frees again.

A temporary raises the call's peak memory for nothing it returns: what a fused kernel, an in-place
op or a chunked loop would not have materialised. `attribution.line_memory` pairs each allocation
with its free by address; a line keeps its largest (`LineStat.temporary`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from oplens.records.format import fmt_bytes
from oplens.records.run import Insight, LineStat, Target, Totals

TEMP_MIN_BYTES = 1 << 20  # a temporary at least this large ...
TEMP_PEAK_SHARE = 0.25  # ... and this share of the call's peak memory

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
