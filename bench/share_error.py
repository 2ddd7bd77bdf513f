"""Share error: how far each line's share, as OpLens shows it after one run with default settings,
is from the steady-state ground truth, before and after the start-up fix.

Functions: `tests/data/steady.py` (50 µs to 1 ms a call on a CPU). Ground truth per function:
one run of 200 iterations without a profiler warm-up, the first profiled iteration discarded,
per-line means as shares. Then, `--reps` times each:
  - before: what OpLens showed before (no profiler warm-up; shares of per-line means over all
    iterations, the first included), recomputed from the run's per-iteration samples;
  - after: the defaults (2 profiler warm-up iterations; shares from trimmed means, `pct_device`).
The figure is the largest |shown - truth| over the function's lines, in points, and whether the
hot line agrees where the truth's hot line leads by 10 points or more. Every run is a real worker.

    .venv/bin/python bench/share_error.py [--reps 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path

from oplens.engine.profile import ProfileRequest, profile
from oplens.records.job import TargetSpec
from oplens.records.run import Run

ROOT = Path(__file__).resolve().parents[1]
STEADY = ROOT / "tests" / "data" / "steady.py"
FUNCTIONS = ("front_loaded", "elementwise_chain", "one_heavy_line")


def run(qualname: str, out: Path, **kw: int) -> Run:
    return profile(ProfileRequest(TargetSpec(str(STEADY), qualname=qualname), workspace=ROOT, out=str(out), **kw))  # type: ignore[arg-type]


def shares(values: dict[int, float]) -> dict[int, float]:
    total = sum(values.values())
    return {k: 100.0 * v / total if total > 0 else 0.0 for k, v in values.items()}


def error(shown: dict[int, float], truth: dict[int, float]) -> float:
    return max(abs(shown.get(k, 0.0) - truth.get(k, 0.0)) for k in set(shown) | set(truth))


def hot_agrees(shown: dict[int, float], truth: dict[int, float]) -> bool | None:
    ranked = sorted(truth.items(), key=lambda kv: -kv[1])
    if len(ranked) < 2 or ranked[0][1] - ranked[1][1] < 10.0:
        return None  # no clear hot line to agree on
    return max(shown, key=lambda k: shown[k]) == ranked[0][0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    opts = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        for fn in FUNCTIONS:
            t = run(fn, out, iters=200, profiler_warmup=0)
            truth = shares({s.line: statistics.fmean(s.device_samples_us[1:]) for s in t.lines})
            before_err, after_err, before_hot, after_hot = [], [], [], []
            for _ in range(opts.reps):
                b = run(fn, out, profiler_warmup=0)
                before = shares({s.line: statistics.fmean(s.device_samples_us) for s in b.lines})
                a = run(fn, out)
                after = {s.line: s.pct_device for s in a.lines}
                before_err.append(error(before, truth))
                after_err.append(error(after, truth))
                before_hot.append(hot_agrees(before, truth))
                after_hot.append(hot_agrees(after, truth))
            rows[fn] = {
                "per_call_us": t.totals.wall_us.median,
                "before_max_error_points": before_err,
                "after_max_error_points": after_err,
                "before_hot_line_agrees": before_hot,
                "after_hot_line_agrees": after_hot,
            }
            print(
                f"{fn:<20} {t.totals.wall_us.median:>7.0f} µs/call  largest share error, points: "
                f"before {max(before_err):5.1f} (median {statistics.median(before_err):4.1f})  "
                f"after {max(after_err):5.1f} (median {statistics.median(after_err):4.1f})  "
                f"hot line agrees: before {before_hot}, after {after_hot}"
            )
    results = ROOT / "bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / "share_error.json").write_text(json.dumps(rows, indent=2))
    print(f"wrote {(results / 'share_error.json').relative_to(ROOT)}")


if __name__ == "__main__":
    main()
