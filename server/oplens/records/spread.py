"""One figure across the ranks of a distributed run: a record both a run's lines and an overview's
functions carry (`records/run.py`, `records/overview.py`)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RankSpread:
    """One figure across the ranks of a distributed capture (`oplens run --nproc-per-node`), µs per call."""

    per_rank: list[float] = field(default_factory=list)  # in the order of Run.ranks
    median: float = 0.0
    min: float = 0.0
    max: float = 0.0
    slowest: int = -1  # the rank (its global number) with the max
