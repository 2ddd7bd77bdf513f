"""One function across an edit (`engine/diff.py` on stored figures): lines mapped as difflib maps them, and the
verdicts: a slower edit not hidden by faster lines, machine drift not taken for an edit, a wide spread that its
quartiles clear, the calls the figures are made of rather than one stalled call."""

from __future__ import annotations

import pytest

from oplens.engine.diff import Drift, _compare, diff_runs, map_lines
from oplens.records.run import Run


def by_text(d: object, needle: str) -> dict[str, object]:
    lines = [c for c in d.to_dict()["lines"] if needle in c["text"]]  # type: ignore[attr-defined]
    assert len(lines) == 1, lines
    return lines[0]  # type: ignore[no-any-return]


def test_line_mapping_follows_difflib() -> None:
    old = ["def f():", "    a = 1", "    b = 2", "    return a"]
    new = ["def f():", "    a = 1", "    x = 0", "    b = 2", "    return a + b"]
    assert map_lines(old, new) == [(0, 0), (1, 1), (None, 2), (2, 3), (3, 4)]


def synthetic_run(source: str, *line_us: float) -> Run:
    """A run of `source` whose line 2, 3, ... took `line_us` each iteration (1 % apart over ten)."""
    from oplens.records.run import BackendInfo, Config, LineStat, Target, Totals

    samples = [[us * (1 + 0.01 * i) for i in range(10)] for us in line_us]
    lines = [LineStat(2 + k, us, us, 50.0, 50.0, 1, device_samples_us=samples[k], cpu_samples_us=samples[k])
             for k, us in enumerate(line_us)]  # fmt: skip
    per_call = [sum(column) for column in zip(*samples, strict=True)]
    totals = Totals(sum(line_us), sum(line_us), len(line_us), device_samples_us=per_call)
    target = Target("m.py", "f", 1, 1 + len(line_us), "", 1, source)
    return Run(target, BackendInfo("cpu", "CPU"), Config(2, 10), totals, lines, [])


def test_unchanged_lines_that_got_faster_do_not_hide_a_slower_edit() -> None:
    """The edit made line 2 ten times slower while the unchanged line 3 got 3× faster (the first
    run's was slow): a machine that got faster cannot explain a slowdown."""
    before = synthetic_run("def f(x):\n    a = x * x\n    return a + 1\n", 10.0, 90.0)
    after = synthetic_run("def f(x):\n    a = sum(x * x for _ in range(64)) / 64\n    return a + 1\n", 100.0, 30.0)
    d = diff_runs(before, after)
    assert by_text(d, "range(64)")["verdict"] == "slower"
    assert d.totals.verdict == "slower"  # 100 → 130 µs, while the unchanged code moved the other way
    assert d.method["drift"] == pytest.approx(3.0, rel=0.05) and d.method["drift_direction"] == "faster"


def test_an_edit_that_slows_the_lines_around_it_is_slower_but_machine_drift_is_not() -> None:
    # the edited line 10× slower, and the unchanged line after it 4× (its caches): the total's 7× is
    # under the unchanged code's move to the power 1.5 (8×), but the edit made most of it
    before = synthetic_run("def f(x):\n    a = x * x\n    return a + 1\n", 20.0, 20.0)
    after = synthetic_run("def f(x):\n    a = sum(x * x for _ in range(64)) / 64\n    return a + 1\n", 200.0, 80.0)
    d = diff_runs(before, after)
    assert by_text(d, "range(64)")["verdict"] == "slower" and d.totals.verdict == "slower"
    # a 1 µs line inserted while the machine slowed everything 1.6×: the total's move is not the edit's
    before = synthetic_run("def f(x):\n    a = x * x\n    return a + 1\n", 50.0, 50.0)
    after = synthetic_run("def f(x):\n    a = x * x\n    b = x + 0\n    return a + 1\n", 80.0, 1.0, 80.0)
    d = diff_runs(before, after)
    assert by_text(d, "b = x + 0")["verdict"] == "new" and d.totals.verdict == "same"


def test_a_wide_spread_in_one_run_cannot_hide_a_move_its_quartiles_clear() -> None:
    """The e2e's edit on a loaded CI machine: the run before had a bimodal spread (its interquartile range
    twice its median), the edited line 5x slower in every iteration. The ratio alone does not beat
    2 x that spread, but the quartiles lie apart: an edited line and the totals are `slower`; an
    untouched line keeps the stricter bar."""
    before = [100.0, 100.0, 105.0, 110.0, 110.0, 600.0, 650.0, 700.0, 700.0, 720.0]
    after = [1000.0, 1010.0, 1020.0, 1040.0, 1050.0, 1060.0, 1100.0, 1200.0, 1300.0, 2000.0]
    none = Drift(0.0, 0.0)
    assert _compare(before, after, 400.0, 1180.0, none, apart=True)[3] == "slower"
    assert _compare(after, before, 1180.0, 400.0, none, apart=True)[3] == "faster"
    assert _compare(before, after, 400.0, 1180.0, none)[3] == "same"  # untouched: the spread's bar alone
    # the drift still counts: quartiles apart by less than the unchanged code's joint move are no verdict
    assert _compare(before, after, 400.0, 1180.0, Drift(1.0, 1.0), apart=True)[3] == "same"


def test_the_verdicts_judge_the_calls_the_figures_are_made_of_not_a_stalled_one() -> None:
    """Before: three of twelve calls stalled inside line 3 (left out of its figures, `totals.outliers`);
    after: line 3 twice as slow in every call. Judged on the calls the figures are made of, line 3 and
    the totals are slower; with the stalls among its samples, the run before's spread (its interquartile
    range reaches a stall) would hide the change."""
    from oplens.records.run import OutlierCall, Outliers

    before = synthetic_run("def f(x):\n    a = x * x\n    return a + 1\n", 10.0, 90.0)
    after = synthetic_run("def f(x):\n    a = x * x\n    return (a + 1).clone()\n", 10.0, 180.0)
    for run in (before, after):
        for s in run.lines:
            s.device_samples_us = s.device_samples_us + s.device_samples_us[:2]  # 12 calls
        run.totals.device_samples_us = [sum(c) for c in zip(*(s.device_samples_us for s in run.lines), strict=True)]
    stalled = [2, 5, 9]
    for k in stalled:
        before.lines[1].device_samples_us[k] *= 30
        before.totals.device_samples_us[k] += 29 * 90.0
    before.totals.outliers = Outliers(calls=[OutlierCall(k, 2800.0, 2800.0, 30.0) for k in stalled], kept=9, profiled=12)
    d = diff_runs(before, after)
    assert by_text(d, "clone")["verdict"] == "slower" and d.totals.verdict == "slower"
    assert by_text(d, "x * x")["verdict"] == "same" and "outlier calls" in d.method["test"]
    before.totals.outliers = None  # the same samples, the stalls taken for the work
    assert diff_runs(before, after).totals.verdict == "same"
