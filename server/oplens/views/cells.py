"""What several pages write alike: a figure of a page's header (`PageStat`), and the figures `records/format.py`
does not write (a mean count of calls and a speed-up), each in one way for every front end that shows a page
(the webview draws them as written)."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class PageStat:
    """One figure of a page's header: `Self NEURON`, `1.16 ms`, `per iteration`."""

    label: str
    value: str
    note: str


def fmt_count(n: float) -> str:
    """Call counts are means per iteration: `3` → `3`, `1200` → `1,200`, `1.5` → `1.5`, `0.333…` → `0.33`."""
    if not math.isfinite(n):
        return "–"
    if float(n).is_integer():
        return f"{int(n):,}"
    rounded = float(f"{n:.2f}")  # two decimals at most, no trailing zero (as JavaScript's Number(n.toFixed(2)))
    return str(int(rounded)) if rounded.is_integer() else repr(rounded)


def fmt_speedup(x: float) -> str:
    """`6.0` → `6.00×`, `12.34` → `12.3×`; no speed-up to give (0: no device time) → `–`."""
    if not math.isfinite(x) or x <= 0:
        return "–"
    return f"{x:.1f}×" if x >= 10 else f"{x:.2f}×"
