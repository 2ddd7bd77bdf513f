"""What several pages write alike: a figure of a page's header (`PageStat`). The figures themselves are written by
`records/format.py`, the one place a formatting rule lives."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PageStat:
    """One figure of a page's header: `Self NEURON`, `1.16 ms`, `per iteration`."""

    label: str
    value: str
    note: str
