"""A/A false positives of `oplens diff`: profile the same, unchanged function again and again, diff
each run against the one before it, and count the lines (with more than 1 % of the time) that the
diff calls `slower` or `faster`: every such verdict is a false positive. Also counts how often a
line made ~4x slower is caught (`slower`), as the power beside the false-positive rate.

Functions: `tests/data/steady.py` (50 µs to 1 ms a call) and `tests/data/diff_step.py`'s `step`.
Every run is a real worker with the default settings. Ratios and rates only; the machine is shared.

    .venv/bin/python bench/diff_aa.py [--pairs 20]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from oplens.engine.diff import diff_runs
from oplens.engine.profile import ProfileRequest, profile
from oplens.records.job import TargetSpec
from oplens.records.run import Run

ROOT = Path(__file__).resolve().parents[1]
STEP = (ROOT / "tests" / "data" / "diff_step.py").read_text()  # the step tests/worker/test_diff.py edits
SLOWER = STEP.replace("    b = a @ X\n", "    b = (((a @ X) @ X) @ X) @ X\n")


def run(file: Path, qualname: str, out: Path) -> Run:
    return profile(ProfileRequest(TargetSpec(str(file), qualname=qualname), workspace=file.parent, out=str(out)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=20)
    opts = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "model.py").write_text(STEP)
        targets = [(ROOT / "tests" / "data" / "steady.py", q) for q in ("front_loaded", "elementwise_chain", "one_heavy_line")]
        targets.append((work / "model.py", "step"))
        per_target = max(1, opts.pairs // len(targets))
        pairs = judged = flagged = totals_flagged = 0
        examples: list[str] = []
        for file, qualname in targets:
            previous = run(file, qualname, work / "runs")
            for _ in range(per_target):
                current = run(file, qualname, work / "runs")
                d = diff_runs(previous, current)
                pairs += 1
                totals_flagged += d.totals.verdict != "same"
                for c in d.lines:
                    if max(c.before_us, c.after_us) > 0.01 * max(previous.totals.self_device_us, current.totals.self_device_us):
                        judged += 1
                        if c.verdict != "same":
                            flagged += 1
                            examples.append(f"{qualname}:{c.after_line} {c.verdict} ×{c.ratio:.2f} p={c.p_value:.1g}")
                previous = current
        caught = 0
        power_runs = 5
        for _ in range(power_runs):
            (work / "model.py").write_text(STEP)
            before = run(work / "model.py", "step", work / "runs")
            (work / "model.py").write_text(SLOWER)
            after = run(work / "model.py", "step", work / "runs")
            edited = next(c for c in diff_runs(before, after).lines if "@ X) @ X" in c.text)
            caught += edited.verdict == "slower"
    result = {
        "aa_pairs": pairs,
        "lines_judged": judged,
        "lines_flagged": flagged,
        "false_positive_rate_lines": flagged / judged if judged else 0.0,
        "totals_flagged": totals_flagged,
        "examples": examples,
        "four_times_slower_caught": f"{caught}/{power_runs}",
    }
    print(json.dumps(result, indent=1))
    results = ROOT / "bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / "diff_aa.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
