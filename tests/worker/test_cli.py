"""`oplens profile` and `oplens compare` as a user runs them (the real CLI, piped)."""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from oplens.records.run import Run
from oplens.views.run import run_page
from support.cli import oplens_cli
from support.paths import DATA, EXAMPLE, ROOT

FAST = ["--warmup", "1", "--iters", "3", "--args", "make_inputs(2, 64, 256)"]


def oplens(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return oplens_cli(ROOT, *argv, "--out", str(tmp_path))


def test_profile_prints_the_listing_the_op_table_and_insights(tmp_path: Path) -> None:
    proc = oplens(tmp_path, "profile", f"{EXAMPLE}::rmsnorm_naive", *FAST)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "Self CPU" in out and "% CPU" in out  # the per-line listing's columns
    assert "x_sq = x * x" in out and "return x_norm * w" in out  # the source, line by line
    assert "aten::mul" in out and "Calls" in out  # the op table
    assert "Insights" in out and "torch.rms_norm" in out
    assert "6 operator calls" in out
    assert "profiling done" in proc.stderr  # plain progress lines when piped


@pytest.mark.timing
def test_a_run_says_its_noise_floor(tmp_path: Path) -> None:
    """The smallest change of the total a run tells from its own noise (issue 37, part 3): in result.json, on
    the total's line and in the run page's header."""
    proc = oplens(tmp_path, "profile", f"{EXAMPLE}::rmsnorm_naive", "--warmup", "1", "--iters", "8", "--args",
                  "make_inputs(2, 64, 256)", "--json", "-")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    floor = data["totals"]["noise_floor_pct"]
    assert floor > 0 and "totals.noise_floor_pct" in data["estimators"]
    shown = subprocess.run([sys.executable, "-m", "oplens", "analyze", data["run_id"], "--out", str(tmp_path)], cwd=ROOT,
                           capture_output=True, text=True, timeout=300)  # fmt: skip
    assert re.search(r"noise floor ±[\d.]+ %", " ".join(shown.stdout.split())), shown.stdout
    stats = {s.label: s for s in run_page(Run.from_dict(data)).stats}
    assert stats["Noise floor"].value.startswith("±")


def test_compare_json_is_the_runs_and_the_summary(tmp_path: Path) -> None:
    targets = [f"{EXAMPLE}::{name}" for name in ("rmsnorm_naive", "rmsnorm_fused")]
    proc = oplens(tmp_path, "compare", *targets, *FAST, "--json", "-")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert [r["target"]["qualname"] for r in data["runs"]] == ["rmsnorm_naive", "rmsnorm_fused"]
    rows = data["summary"]
    assert [r["op_calls"] for r in rows] == [6, 1] and rows[0]["speedup"] == 1.0
    assert all((tmp_path / r["run_id"] / "result.json").is_file() for r in rows)


# tests/data/stalls.py counts the block's calls: 1 warm-up, 2 under the profiler's warm-up, then the 10
# profiled iterations (calls 4-13): its 7th call is iteration 3
STALLS = [f"{DATA / 'stalls.py'}", "--warmup", "1", "--iters", "10"]
STALL_US = 50_000  # tests/data/stall_op.py's STALL_S, the injected stall


def stored(tmp_path: Path) -> dict[str, Any]:
    (found,) = tmp_path.glob("*/result.json")
    data: dict[str, Any] = json.loads(found.read_text())
    return data


@pytest.mark.timing
def test_a_stalled_call_is_reported_and_left_out_of_every_headline_figure(tmp_path: Path) -> None:
    target, *options = STALLS
    proc = oplens(tmp_path, "profile", f"{target}::mlp", *options, "--args", "make_inputs(stall_at=7)")
    assert proc.returncode == 0, proc.stderr
    run = stored(tmp_path)
    t = run["totals"]
    o = t["outliers"]
    # the injected stall; a call the machine itself stalled (another process on the core) is flagged as any stall is
    flagged = [c["call"] for c in o["calls"]]
    assert 3 in flagged and next(c for c in o["calls"] if c["call"] == 3)["slower"] > 10  # 50 ms in a ~0.3 ms call
    assert (o["kept"], o["profiled"], o["works"]) == (10 - len(flagged), 10, 1)
    typical = statistics.median(t["cpu_samples_us"])
    assert abs(t["self_cpu_us"] - typical) <= 0.2 * typical  # the headline is the typical call's ...
    # ... where the mean over every call is not: it carries the stall's share (50 ms over 10 calls), whatever a loaded
    # machine makes of the typical call (CI's load made it 1.4 ms, 5× its quiet time, and a ratio to it failed)
    assert o["all_cpu_us"] - t["self_cpu_us"] > 0.8 * STALL_US / 10
    assert sum(s["self_cpu_us"] for s in run["lines"]) == pytest.approx(t["self_cpu_us"])  # lines still sum to it
    assert sum(op["self_cpu_us"] for op in run["ops"]) == pytest.approx(t["self_cpu_us"])
    assert max(s["self_cpu_us"] for s in run["lines"]) < typical  # no line carries the stall
    assert "totals.outliers" in run["estimators"]
    said = " ".join(proc.stdout.split())
    outlier = "an outlier" if len(flagged) == 1 else "outliers"
    assert f"{len(flagged)} of 10 calls left out of the figures as {outlier}" in said and "call 4 (CPU" in said
    # derived again from the stored trace (`oplens analyze`): the same calls left out, the same figures
    again = oplens(tmp_path, "analyze", run["run_id"], "--json", "-")
    assert again.returncode == 0, again.stderr
    derived = json.loads(again.stdout)["totals"]
    assert [c["call"] for c in derived["outliers"]["calls"]] == flagged
    assert derived["self_cpu_us"] == pytest.approx(t["self_cpu_us"])


def test_a_data_dependent_branch_taken_once_counts_in_full(tmp_path: Path) -> None:
    target, *options = STALLS
    proc = oplens(tmp_path, "profile", f"{target}::mlp_branch", *options, "--args", "make_inputs(branch_at=7)")
    assert proc.returncode == 0, proc.stderr
    t = stored(tmp_path)["totals"]
    # the branch is other work (only a call the machine itself stalled is flagged, as any stall is) ...
    stalled = [c["call"] for c in t["outliers"]["calls"]]
    assert 3 not in stalled and t["outliers"]["works"] == 2
    assert t["cpu_samples_us"][3] > 3 * statistics.median(t["cpu_samples_us"])  # ... far slower: real cost
    kept = [v for i, v in enumerate(t["cpu_samples_us"]) if i not in stalled]
    assert t["self_cpu_us"] == pytest.approx(statistics.mean(kept))  # counted in full
    assert stalled or "left out of the figures" not in proc.stdout
