"""`oplens analyze`: a stored run attributed again from its trace.json, without running it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from oplens.cli import main as cli_main
from oplens.engine.analyze import reanalyze
from oplens.engine.profile import ProfileRequest, profile
from oplens.records.errors import OpLensError
from oplens.records.job import TargetSpec
from support.paths import EXAMPLE, ROOT


def test_reanalysis_from_the_trace_equals_the_stored_attribution(tmp_path: Path) -> None:
    run = profile(ProfileRequest(TargetSpec(str(EXAMPLE), qualname="rmsnorm_naive"), "make_inputs(2, 64, 256)",
                                 iters=5, workspace=ROOT, out=str(tmp_path)))  # fmt: skip
    again = reanalyze(run)
    assert [s.line for s in again.lines] == [s.line for s in run.lines]
    for a, b in zip(again.lines, run.lines, strict=True):
        assert a.self_device_us == pytest.approx(b.self_device_us, rel=1e-3, abs=1e-3)
        assert a.op_calls == b.op_calls and [o.name for o in a.ops] == [o.name for o in b.ops]
    assert again.totals.self_device_us == pytest.approx(run.totals.self_device_us, rel=1e-3)
    assert {i.kind for i in again.insights} >= {"fusable_chain"}
    assert "re-analysed" in again.backend.note
    stored = json.loads((Path(run.run_dir) / "result.json").read_text())
    assert stored["backend"]["note"] == run.backend.note  # nothing rewritten


def test_cli_analyze_and_a_run_without_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = profile(ProfileRequest(TargetSpec(str(EXAMPLE), qualname="rmsnorm_fused"), "make_inputs(2, 64, 256)",
                                 iters=3, workspace=ROOT, out=str(tmp_path)))  # fmt: skip
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert cli_main(["analyze", run.run_id, "--out", ".", "--json", "-"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["run_id"] == run.run_id and data["totals"]["op_calls"] == run.totals.op_calls
        (Path(run.run_dir) / "trace.json").unlink()
        assert cli_main(["analyze", run.run_id, "--out", "."]) == 2
        assert "has no trace.json" in capsys.readouterr().err
    finally:
        os.chdir(cwd)
    with pytest.raises(OpLensError, match="no trace.json"):
        reanalyze(run)
