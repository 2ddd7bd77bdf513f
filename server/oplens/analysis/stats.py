"""Per-iteration statistics: robust estimates of a figure, its spread and confidence, whether it is
noisy, and whether two sets of samples differ.

The headline µs figures are means over the calls that did not stall (so lines sum exactly to the
totals; `outlier_bar` says which stalled, analysis/outliers.py applies it per kind of work); what
decides (shares, the hot line, noise, a before/after verdict) uses estimates that one outlier
iteration cannot move: the trimmed mean (TRIM of the iterations cut at each end), the median with a
distribution-free confidence interval, and the Mann-Whitney U test. Pure Python.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from oplens.records.run import Spread

# A line is noisy when its interquartile range exceeds this share of its median.
NOISE_IQR_RATIO = 0.25
TRIM = 0.2  # the trimmed mean cuts this share of the iterations at each end
CONFIDENCE = 0.95

# A stalled call (outlier_bar): far above the median of the calls of its kind of work. Why these:
# - OUTLIER_SLOWER: the stalls that move a mean add many times a call (46 ms on a 0.43 ms call was seen);
#   the jitter of a busy machine moves a call by tens of percent (a line is noisy from an interquartile
#   range of NOISE_IQR_RATIO of its median), and its slow calls stay within twice the median: three
#   times it is beyond ordinary noise, and a call below it moves a mean of ten calls by 20 % at most.
# - OUTLIER_SIGMAS: where a kind of work varies widely of itself, the bar rises with it; five robust
#   standard deviations (MAD_SCALE × the median absolute deviation: the standard deviation would be
#   widened by the outlier itself) is far in the tail of any ordinary spread.
# - OUTLIER_MIN_CALLS: with fewer calls of one kind, their median and MAD are too weak to call one out.
# - OUTLIER_MAX_SHARE: a stall is rare; where more calls than that are as slow, the slowness is how the
#   work runs (a slow path taken every few calls): real cost, so none is an outlier.
OUTLIER_SLOWER = 3.0
OUTLIER_SIGMAS = 5.0
MAD_SCALE = 1.4826  # the MAD of a normal distribution times this is its standard deviation
OUTLIER_MIN_CALLS = 5
OUTLIER_MAX_SHARE = 0.25
OUTLIER_RULE = (
    f"a call is an outlier where its self device or self CPU time (all lines) is above both {OUTLIER_SLOWER:g}× the "
    f"median of the calls of the same work (the same ops as often on the same lines, the same argument shapes) "
    f"and that median + {OUTLIER_SIGMAS:g} × {MAD_SCALE} × their median absolute deviation, among at least "
    f"{OUTLIER_MIN_CALLS} such calls of which at most {OUTLIER_MAX_SHARE:.0%} are that far out; a call of other work "
    "is never one (it is real cost)"
)

# What each figure of a run is, written into result.json (`estimators`).
ESTIMATORS = {
    "self_cpu_us, self_device_us": (
        "mean over the profiled iterations less the outlier calls (totals.outliers), so lines sum exactly to the "
        "totals; the same for ops, op calls, the roofline and the insights' figures, which are made of them"
    ),
    "totals.outliers": f"the calls left out of those means: {OUTLIER_RULE}; all_*_us: the mean over every call",
    "pct_device, pct_cpu": (
        f"the line's {TRIM:.0%}-trimmed mean over the iterations, as a share of the sum of all lines' trimmed "
        "means (one outlier iteration cannot move it)"
    ),
    "*_spread": f"median, min and max over the iterations; ci_low/ci_high: {CONFIDENCE:.0%} confidence interval of the median",
    "noisy": f"interquartile range over {NOISE_IQR_RATIO:.0%} of the median",
    "*_samples_us": "the figure in each profiled iteration, in order",
    "totals.noise_floor_pct": (
        "the smallest change of the total per call these calls tell from their own noise, as a % of the median "
        f"call: the larger of the half-width of the median's {CONFIDENCE:.0%} interval and the gap between the "
        "medians of the first and the second half of the calls (0: fewer than 4 calls)"
    ),
}


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    pos = (len(sorted_values) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def median_ci(sorted_values: Sequence[float], level: float = CONFIDENCE) -> tuple[float, float]:
    """A distribution-free confidence interval of the median: the order statistics j and n-1-j
    (0-based), which hold it with probability 1 - 2·P(Binomial(n, 1/2) <= j); the narrowest with at
    least `level`. Fewer samples than that allows: (min, max)."""
    n = len(sorted_values)
    if n == 0:
        return 0.0, 0.0
    best = 0
    below = 0.0  # P(X <= j)
    for j in range(n // 2):
        below += math.comb(n, j) / 2**n
        if 1 - 2 * below < level:
            break
        best = j
    return sorted_values[best], sorted_values[n - 1 - best]


def spread(values_us: Sequence[float]) -> Spread:
    s = sorted(values_us)
    if not s:
        return Spread()
    low, high = median_ci(s)
    return Spread(median=_quantile(s, 0.5), min=s[0], max=s[-1], ci_low=low, ci_high=high)


def noise_floor(samples: Sequence[float]) -> float:
    """The smallest change of a figure per call that these calls (in order) tell from their own noise, as a
    fraction of their median: the larger of the half-width of the median's CONFIDENCE interval and the gap
    between the medians of their two halves (an A/A inside the run); 0 with fewer than 4 calls or a zero median."""
    if len(samples) < 4:
        return 0.0
    s = sorted(samples)
    mid = _quantile(s, 0.5)
    if mid <= 0:
        return 0.0
    low, high = median_ci(s)
    half = len(samples) // 2
    gap = abs(_quantile(sorted(samples[:half]), 0.5) - _quantile(sorted(samples[half:]), 0.5))
    return max((high - low) / 2, gap) / mid


def median(sorted_values: Sequence[float]) -> float:
    return _quantile(sorted_values, 0.5)


def iqr(values: Sequence[float]) -> float:
    """The interquartile range."""
    s = sorted(values)
    return _quantile(s, 0.75) - _quantile(s, 0.25)


def trimmed_mean(values: Sequence[float], cut: float = TRIM) -> float:
    """The mean of the values left after cutting `cut` of them at each end."""
    s = sorted(values)
    if not s:
        return 0.0
    k = int(len(s) * cut)
    kept = s[k : len(s) - k] or s
    return sum(kept) / len(kept)


def outlier_bar(values: Sequence[float]) -> tuple[float, float]:
    """The time above which one of `values` (calls of one kind of work) is an outlier (inf where none
    can be: too few calls, a zero median), and their median."""
    s = sorted(values)
    median = _quantile(s, 0.5)
    if len(s) < OUTLIER_MIN_CALLS or median <= 0:
        return math.inf, median
    mad = _quantile(sorted(abs(v - median) for v in s), 0.5)
    return max(OUTLIER_SLOWER * median, median + OUTLIER_SIGMAS * MAD_SCALE * mad), median


def is_noisy(values_us: Sequence[float]) -> bool:
    s = sorted(values_us)
    if len(s) < 4:
        return False
    median = _quantile(s, 0.5)
    if median <= 0:
        return False
    return iqr(s) / median > NOISE_IQR_RATIO


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of the Mann-Whitney U test that `a` and `b` come from one distribution
    (normal approximation with the tie correction; 1.0 where either side is empty or all are tied)."""
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        return 1.0
    pooled = sorted([(v, 0) for v in a] + [(v, 1) for v in b])
    ranks_a = 0.0
    ties = 0.0
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        rank = (i + j) / 2 + 1  # the average rank of a run of ties
        t = j - i + 1
        ties += t**3 - t
        ranks_a += rank * sum(1 for k in range(i, j + 1) if pooled[k][1] == 0)
        i = j + 1
    u = ranks_a - n1 * (n1 + 1) / 2
    n = n1 + n2
    variance = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1))) if n > 1 else 0.0
    if variance <= 0:
        return 1.0
    z = (abs(u - n1 * n2 / 2) - 0.5) / math.sqrt(variance)  # with continuity correction
    return max(0.0, min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2))))


def signed_rank_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of the Wilcoxon signed-rank test that paired samples `a[k]`, `b[k]` (the same round of
    an interleaved measurement) do not differ: normal approximation with the tie correction, zero differences
    dropped; 1.0 where fewer than 6 pairs differ (too few for the approximation to mean anything)."""
    diffs = [y - x for x, y in zip(a, b, strict=False) if y != x]
    n = len(diffs)
    if n < 6:
        return 1.0
    ordered = sorted(range(n), key=lambda k: abs(diffs[k]))
    plus = 0.0
    ties = 0.0
    i = 0
    while i < n:
        j = i
        while j + 1 < n and abs(diffs[ordered[j + 1]]) == abs(diffs[ordered[i]]):
            j += 1
        rank = (i + j) / 2 + 1
        t = j - i + 1
        ties += t**3 - t
        plus += rank * sum(1 for k in range(i, j + 1) if diffs[ordered[k]] > 0)
        i = j + 1
    mean = n * (n + 1) / 4
    variance = n * (n + 1) * (2 * n + 1) / 24 - ties / 48
    if variance <= 0:
        return 1.0
    z = (abs(plus - mean) - 0.5) / math.sqrt(variance)  # with continuity correction
    return max(0.0, min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2))))


# A speed-up (engine/compare.py): the baseline's median call over a variant's median call, with its CONFIDENCE
# interval by the bootstrap (BOOTSTRAP resamples, a fixed seed: the same runs give the same interval). The median
# call, not the mean less the stalls: a stall moves neither, and a median holds where up to half of one
# variant's calls stall (on a busy machine a third of a small function's calls can), where a ratio per round
# would break as soon as either of its two calls did.
# Measured side by side (one worker, one call of each per round): the rounds are resampled, each variant's
# call of a round with the other's, so the moments the calls shared stay paired.
# From two processes (a diff of two stored runs): each run's calls are resampled on their own, and the
# machine's state in each process is part of what is measured.
BOOTSTRAP = 2000
SPEEDUP_METHODS = {
    "interleaved_plain": (
        "measured side by side in one worker, one call of each variant per round, the order rotated and reversed by "
        "turns; "
        "speed-up: the baseline's median call over the variant's, timed plainly (no profiler: on the host its own "
        "work shares the function's cores) in the rounds before the profiled ones, its "
        f"{CONFIDENCE:.0%} interval from {BOOTSTRAP:,} bootstrap resamples of the rounds"
    ),
    "interleaved": (
        "measured side by side in one worker, one call of each variant per round, the order rotated and reversed by "
        "turns; "
        "speed-up: the baseline's median call over the variant's, its "
        f"{CONFIDENCE:.0%} interval from {BOOTSTRAP:,} bootstrap resamples of the rounds"
    ),
    "separate": (
        "measured in two processes at two moments: speed-up: the baseline's median call over the variant's, its "
        f"{CONFIDENCE:.0%} interval from {BOOTSTRAP:,} bootstrap resamples of each run's calls; the machine's state "
        "in each process can decide a small difference"
    ),
}


def median_ratio(base: Sequence[float], other: Sequence[float], paired: bool) -> tuple[float, float, float]:
    """median(base) / median(other) and its CONFIDENCE interval (percentile bootstrap; `paired`: `base[k]` and
    `other[k]` are resampled together); (0, 0, 0) where a side has no positive value."""
    rounds = min(len(base), len(other)) if paired else None  # paired: round k of each, as many as both have
    b_all, o_all = list(base[:rounds]), list(other[:rounds])
    if not b_all or not o_all or median(sorted(o_all)) <= 0 or median(sorted(b_all)) <= 0:
        return 0.0, 0.0, 0.0
    estimate = median(sorted(b_all)) / median(sorted(o_all))
    rng = random.Random(0)
    n, m = len(b_all), len(o_all)
    ratios = []
    for _ in range(BOOTSTRAP):
        if paired:
            picks = [rng.randrange(n) for _ in range(n)]
            bs, os_ = sorted(b_all[i] for i in picks), sorted(o_all[i] for i in picks)
        else:
            bs = sorted(b_all[rng.randrange(n)] for _ in range(n))
            os_ = sorted(o_all[rng.randrange(m)] for _ in range(m))
        mo = median(os_)
        if mo > 0:
            ratios.append(median(bs) / mo)
    ratios.sort()
    tail = (1 - CONFIDENCE) / 2
    return estimate, _quantile(ratios, tail), _quantile(ratios, 1 - tail)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of `p_values` for testing them together (the family-wise error held at the
    level whatever their dependence): each adjusted p, in the given order."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [1.0] * len(p_values)
    running = 0.0
    m = len(p_values)
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted
