"""The robust estimators and the two-sample test (pure Python, no torch)."""

from __future__ import annotations

import random

from oplens.analysis import stats


def test_trimmed_mean_ignores_one_outlier_iteration() -> None:
    values = [10.0] * 19 + [1000.0]  # the profiler's start-up on one iteration
    assert stats.trimmed_mean(values) == 10.0
    assert sum(values) / len(values) > 59  # what the mean makes of it
    assert stats.trimmed_mean([]) == 0.0
    assert stats.trimmed_mean([3.0]) == 3.0


def test_median_confidence_interval_holds_the_median_at_the_stated_level() -> None:
    rng = random.Random(1)
    hits = 0
    trials = 400
    for _ in range(trials):
        sample = sorted(rng.gauss(100.0, 10.0) for _ in range(20))
        low, high = stats.median_ci(sample)
        hits += low <= 100.0 <= high
    assert hits / trials >= 0.93  # nominal 95 % (order statistics give at least that)
    assert stats.median_ci([5.0]) == (5.0, 5.0)
    assert stats.median_ci([]) == (0.0, 0.0)


def test_spread_carries_the_interval() -> None:
    s = stats.spread([float(v) for v in range(1, 21)])
    assert s.min == 1 and s.max == 20 and s.median == 10.5
    assert s.ci_low <= s.median <= s.ci_high and s.ci_low > s.min and s.ci_high < s.max


def test_mann_whitney_tells_shifted_samples_from_equal_ones() -> None:
    rng = random.Random(2)
    a = [rng.gauss(100.0, 5.0) for _ in range(20)]
    b = [rng.gauss(100.0, 5.0) for _ in range(20)]
    slower = [v * 4 for v in b]
    assert stats.mann_whitney_p(a, b) > 0.05
    assert stats.mann_whitney_p(a, slower) < 1e-6
    assert stats.mann_whitney_p([1.0] * 5, [1.0] * 5) == 1.0  # all tied
    assert stats.mann_whitney_p([], [1.0]) == 1.0


def test_noise_flag_is_robust_to_one_outlier() -> None:
    assert not stats.is_noisy([10.0] * 19 + [1000.0])
    assert stats.is_noisy([5.0, 10.0, 15.0, 20.0, 25.0, 30.0])
