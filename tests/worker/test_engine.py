"""The engine end to end: a real worker process, real torch, the example of the case study."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oplens.engine.profile import ProfileRequest, profile
from oplens.engine.runs import list_runs, load
from oplens.records.job import TargetSpec
from oplens.records.run import Run
from support.paths import DATA, EXAMPLE, ROOT

SMALL = "make_inputs(2, 64, 256)"
NAIVE = TargetSpec.parse(f"{EXAMPLE}::rmsnorm_naive")


def run(target: str, out: Path, args: str = "", **kw: object) -> Run:
    req = ProfileRequest(target=TargetSpec.parse(target), args=args, warmup=2, iters=5, workspace=ROOT, out=str(out), **kw)  # type: ignore[arg-type]
    return profile(req)


def body_lines(r: Run) -> list[int]:
    return [s.line for s in r.lines if s.op_calls]


def test_case_study_shape_on_cpu(tmp_path: Path) -> None:
    stages: list[str] = []
    naive = profile(
        ProfileRequest(NAIVE, SMALL, warmup=2, iters=5, workspace=ROOT, out=str(tmp_path)),
        progress=lambda stage, done, total: stages.append(stage),
    )
    assert {"warmup", "profile", "processing"} <= set(stages)
    assert naive.totals.op_calls == 6
    assert len(body_lines(naive)) == 6 and all(s.op_calls == 1 for s in naive.lines if s.op_calls)
    assert naive.backend.device_label == "CPU" and naive.backend.name == "cpu"
    kinds = {i.kind for i in naive.insights}
    assert "fusable_chain" in kinds
    chain = next(i for i in naive.insights if i.kind == "fusable_chain")
    assert "torch.rms_norm" in chain.message and "intermediate" in chain.evidence

    fused = run(f"{EXAMPLE}::rmsnorm_fused", tmp_path, SMALL)
    assert fused.totals.op_calls == 1

    compiled = run(f"{EXAMPLE}::rmsnorm_compiled", tmp_path, SMALL)
    assert compiled.totals.op_calls == 1
    (line,) = [s for s in compiled.lines if s.op_calls]
    (region,) = line.compiled
    assert region.name.startswith("Torch-Compiled Region")
    naive_lines = set(body_lines(naive))
    assert {r.line for r in region.fused} == naive_lines  # the graph fused exactly the naive lines
    assert compiled.compile.graphs >= 1 and compiled.compile.compile_us > 0
    # compile time is not in the steady state
    assert compiled.totals.wall_us.max < compiled.compile.first_call_us


@pytest.mark.parametrize("warmup", [0, 1])
def test_input_shapes_without_a_second_warmup_call(tmp_path: Path, warmup: int) -> None:
    # Shapes come from the last of two or more warm-up calls, else from one call after the
    # timed iterations (the timed ones record none): the insights have their sizes either way.
    req = ProfileRequest(NAIVE, SMALL, warmup=warmup, iters=3, workspace=ROOT, out=str(tmp_path))
    r = profile(req)
    chain = next(i for i in r.insights if i.kind == "fusable_chain")
    assert "intermediate" in chain.evidence and "KiB" in chain.evidence
    assert r.totals.op_calls == 6


def test_run_directory_is_complete_and_nothing_is_overwritten(tmp_path: Path) -> None:
    first = run(f"{DATA / 'models.py'}::no_args", tmp_path)
    second = run(f"{DATA / 'models.py'}::no_args", tmp_path)
    assert first.run_id != second.run_id
    runs = list_runs(tmp_path)
    assert [p.name for p in runs] == sorted([first.run_id, second.run_id])
    for r in (first, second):
        d = Path(r.run_dir)
        data = json.loads((d / "result.json").read_text())
        for key in ("schema", "run_id", "target", "backend", "config", "totals", "lines", "ops", "insights", "artifacts"):
            assert key in data
        assert data["target"]["source_sha256"] and data["target"]["qualname"] == "no_args"
        assert (d / "trace.json").is_file() and json.loads((d / "trace.json").read_text())["traceEvents"]
        assert (d / "worker.log").is_file()
        assert load(d).totals == r.totals
    assert not any((tmp_path / ".staging").iterdir())


@pytest.mark.parametrize(
    ("target", "args", "expect_op"),
    [
        ("Block.forward", "Block(16), torch.randn(4, 16)", "aten::linear"),
        ("outer.inner", "torch.randn(8)", "aten::cos"),
        ("decorated", "torch.randn(8)", "aten::exp"),
    ],
)
def test_methods_nested_and_decorated_functions(tmp_path: Path, target: str, args: str, expect_op: str) -> None:
    r = run(f"{DATA / 'models.py'}::{target}", tmp_path, args)
    assert expect_op in {o.name for s in r.lines for o in s.ops}
    assert r.target.qualname == target


def test_file_line_names_the_enclosing_function(tmp_path: Path) -> None:
    src = (DATA / "models.py").read_text().splitlines()
    line = next(i for i, text in enumerate(src, 1) if "x = x + 1" in text)
    r = run(f"{DATA / 'models.py'}:{line}", tmp_path, "torch.randn(4)")
    assert r.target.qualname == "loop"
    assert {s.line: s.op_calls for s in r.lines}[line] == 3
