"""Shares a user can act on after one run with default settings: every line's share within 10
points of the steady-state ground truth, and the same hot line wherever the truth's leads by 10.

The ground truth is the line-marker method over many iterations with the first profiled
iteration discarded (where the profiler's start-up lands), as a mean of each line's samples less the
far-out ones (`stats.outlier_bar`): in a 200-call profile one line takes a 30-70 µs spike every ~21
calls (seen at calls 21, 42, 64, 88, 106, 128, 149, 170, 192 of elementwise_chain's line 22 on the
2-core machine; the function's work is the same every call, so it is the profiler's or the allocator's
own, periodic in the number of events recorded), which moved that line's truth from 21 % to 27-30 %
while a 20-call run holds one such spike or none. Real worker, real torch.
Where a line misses, the truth is measured again after the shown run: a shared machine's load
moves between runs, and the shown run must match the steady state of its own time.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from oplens.analysis import stats
from oplens.engine.profile import ProfileRequest, profile
from oplens.records.job import TargetSpec
from oplens.records.run import Run
from support.paths import DATA, ROOT

pytestmark = pytest.mark.timing
STEADY = DATA / "steady.py"


def run(qualname: str, out: Path, **kw: object) -> Run:
    req = ProfileRequest(target=TargetSpec(str(STEADY), qualname=qualname), workspace=ROOT, out=str(out), **kw)  # type: ignore[arg-type]
    return profile(req)


def steady_mean(samples: list[float]) -> float:
    """The mean of the samples at or below the outlier bar (all of them where there is none)."""
    bar, _ = stats.outlier_bar(samples)
    kept = [v for v in samples if v <= bar]
    return sum(kept) / len(kept)


def truth_shares(r: Run) -> dict[int, float]:
    """Per line: the steady mean of its per-iteration samples without the first iteration, as a share."""
    means = {line.line: steady_mean(line.device_samples_us[1:]) for line in r.lines}
    total = sum(means.values())
    return {line: 100.0 * v / total for line, v in means.items()}


@pytest.fixture(autouse=True)
def one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # torch's idle pool spinning is not what is measured


@pytest.mark.parametrize("qualname", ["front_loaded", "elementwise_chain", "one_heavy_line"])
def test_default_run_shares_match_the_steady_state(qualname: str, tmp_path: Path) -> None:
    truth = truth_shares(run(qualname, tmp_path, iters=200, profiler_warmup=0))
    shown = run(qualname, tmp_path)  # what a user gets from one run with the defaults
    per_call = shown.totals.wall_us.median
    assert 20 <= per_call <= 5000, f"{qualname} is not the size this test is about: {per_call:.0f} µs a call"
    misses = [s for s in shown.lines if abs(s.pct_device - truth.get(s.line, 0.0)) > 10.0]
    if misses:  # the machine's load may have moved between the runs: the steady state after the shown run too
        after = truth_shares(run(qualname, tmp_path, iters=200, profiler_warmup=0))
        for s in misses:
            assert min(abs(s.pct_device - t.get(s.line, 0.0)) for t in (truth, after)) <= 10.0, (
                f"{qualname}, line {s.line}: shown {s.pct_device:.1f} %, steady state {truth.get(s.line, 0.0):.1f} % "
                f"before and {after.get(s.line, 0.0):.1f} % after"
            )
    ranked = sorted(truth.items(), key=lambda kv: -kv[1])
    if len(ranked) >= 2 and ranked[0][1] - ranked[1][1] >= 10.0:
        hot = [i.line for i in shown.insights if i.kind == "hot_line"]
        top = max(shown.lines, key=lambda s: s.pct_device).line
        assert top == ranked[0][0] and hot in ([], [ranked[0][0]]), f"{qualname}: hot line {top}, truth {ranked[0][0]}"


def test_samples_and_estimators_are_in_the_result(tmp_path: Path) -> None:
    r = run("front_loaded", tmp_path, iters=7)
    assert r.config.profiler_warmup == 2
    assert len(r.totals.device_samples_us) == 7 and all(len(line.device_samples_us) == 7 for line in r.lines)
    assert abs(sum(r.totals.device_samples_us) / 7 - r.totals.self_device_us) < 1e-6 * max(1.0, r.totals.self_device_us)
    assert "pct_device, pct_cpu" in r.estimators and "trimmed mean" in r.estimators["pct_device, pct_cpu"]
    assert os.path.isfile(os.path.join(r.run_dir, "result.json"))
