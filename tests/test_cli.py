"""`oplens profile` and `oplens compare` as a user runs them (the real CLI, piped)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import EXAMPLE, ROOT

FAST = ["--warmup", "1", "--iters", "3", "--args", "make_inputs(2, 64, 256)"]


def oplens(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "oplens", *argv, "--out", str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


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


def test_compare_json_is_the_runs_and_the_summary(tmp_path: Path) -> None:
    targets = [f"{EXAMPLE}::{name}" for name in ("rmsnorm_naive", "rmsnorm_fused")]
    proc = oplens(tmp_path, "compare", *targets, *FAST, "--json", "-")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert [r["target"]["qualname"] for r in data["runs"]] == ["rmsnorm_naive", "rmsnorm_fused"]
    rows = data["summary"]
    assert [r["op_calls"] for r in rows] == [6, 1] and rows[0]["speedup"] == 1.0
    assert all((tmp_path / r["run_id"] / "result.json").is_file() for r in rows)
