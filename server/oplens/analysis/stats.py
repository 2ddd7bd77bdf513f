"""Per-iteration statistics: a figure's median, min and max, and whether it is noisy."""

from __future__ import annotations

from collections.abc import Sequence

from oplens.records.run import Spread

# A line is noisy when its interquartile range exceeds this share of its median.
NOISE_IQR_RATIO = 0.25


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    pos = (len(sorted_values) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def spread(values_us: Sequence[float]) -> Spread:
    s = sorted(values_us)
    if not s:
        return Spread()
    return Spread(median=_quantile(s, 0.5), min=s[0], max=s[-1])


def is_noisy(values_us: Sequence[float]) -> bool:
    s = sorted(values_us)
    if len(s) < 4:
        return False
    median = _quantile(s, 0.5)
    if median <= 0:
        return False
    return (_quantile(s, 0.75) - _quantile(s, 0.25)) / median > NOISE_IQR_RATIO
