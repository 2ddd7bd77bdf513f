"""The robust estimators and the two-sample test (pure Python, no torch)."""

from __future__ import annotations

import random

import pytest

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


# ---- the outlier rule (stats.outlier_bar; analysis/outliers.find groups the calls by their work) ---------------


def test_a_stalled_call_is_an_outlier_and_ordinary_noise_never_is() -> None:
    from oplens.analysis import outliers

    calls = [430.0, 425.0, 441.0, 433.0, 46_000.0, 428.0, 436.0, 431.0, 429.0, 440.0]  # the MLP block
    found = outliers.find(calls, calls, [0] * 10)
    assert [c.call for c in found] == [4] and found[0].slower == pytest.approx(46_000 / 432.0, rel=0.01)
    # a busy machine's jitter (30 % either way, a few calls 60 % slower): thousands of runs, never flagged
    rng = random.Random(3)
    for _ in range(2000):
        noisy = [100.0 * rng.uniform(0.7, 1.3) * (1.6 if rng.random() < 0.1 else 1.0) for _ in range(rng.randint(5, 40))]
        assert outliers.find(noisy, noisy, [0] * len(noisy)) == []


def test_a_call_of_other_work_is_never_an_outlier_and_each_kind_is_judged_on_its_own() -> None:
    from oplens.analysis import outliers

    # call 3 took a data-dependent branch (work 1): ten times slower, but other work, real cost
    times = [100.0, 101.0, 99.0, 1000.0, 100.0, 102.0, 98.0, 100.0]
    assert outliers.find(times, times, [0, 0, 0, 1, 0, 0, 0, 0]) == []
    # two kinds, a long and a short sequence: the long one's stall is judged against the long calls only
    long_, short = [5000.0, 5100.0, 4900.0, 5050.0, 16_000.0], [500.0, 510.0, 490.0, 505.0, 495.0]
    found = outliers.find(long_ + short, long_ + short, [1] * 5 + [0] * 5)
    assert [c.call for c in found] == [4]


def test_too_few_calls_of_a_kind_or_too_many_slow_ones_make_no_outlier() -> None:
    from oplens.analysis import outliers

    four = [100.0, 100.0, 100.0, 5000.0]  # fewer than OUTLIER_MIN_CALLS: the median and MAD are too weak
    assert len(four) < stats.OUTLIER_MIN_CALLS and outliers.find(four, four, [0] * 4) == []
    # three slow calls in ten: a slow path this work takes (above OUTLIER_MAX_SHARE), real cost
    regime = [100.0] * 7 + [900.0] * 3
    assert outliers.find(regime, regime, [0] * 10) == []
    # a stall in the host's time alone (a device backend's CPU) is one too; its device time is kept beside it
    device, cpu = [50.0] * 8, [200.0] * 7 + [9000.0]
    (c,) = outliers.find(device, cpu, [0] * 8)
    assert (c.call, c.device_us, c.cpu_us, c.slower) == (7, 50.0, 9000.0, 45.0)


def test_the_noise_floor_is_what_a_run_tells_from_its_own_noise() -> None:
    steady = [100.0, 101.0, 99.0, 100.5, 99.5, 100.0, 100.2, 99.8] * 3
    assert 0 < stats.noise_floor(steady) < 0.01  # 1 % of jitter: a change of 1 % is seen
    drifting = [100.0] * 10 + [120.0] * 10  # the machine got slower halfway: its halves disagree by 20 %
    assert stats.noise_floor(drifting) == pytest.approx(0.2 / 1.1, rel=0.01)
    stalls = [100.0, 400.0] * 10  # half the calls stalled: the median's interval is wide
    assert stats.noise_floor(stalls) > 0.5
    assert stats.noise_floor([1.0, 2.0, 3.0]) == 0.0  # too few calls to say
    assert stats.noise_floor([0.0] * 8) == 0.0


def test_a_speed_up_s_interval_holds_the_ratio_and_pairs_rounds_that_share_a_moment() -> None:
    rng = random.Random(3)
    load = [rng.choice([1.0, 3.0]) for _ in range(30)]  # each round's moment of the machine: quiet or 3x slower
    base = [200.0 * m * rng.uniform(0.97, 1.03) for m in load]
    other = [100.0 * m * rng.uniform(0.97, 1.03) for m in load]
    ratio, low, high = stats.median_ratio(base, other, paired=True)
    assert low <= 2.0 <= high and 1.6 < ratio < 2.5
    assert stats.median_ratio(base, other, paired=True) == (ratio, low, high)  # a fixed seed: the same interval
    same, low, high = stats.median_ratio(base, base[::-1], paired=False)
    assert low <= 1.0 <= high
    assert stats.median_ratio([], other, paired=False) == (0.0, 0.0, 0.0)
    assert stats.holm([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])
