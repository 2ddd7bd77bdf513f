"""Targets from the AST, and result records through JSON (fast; no worker)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oplens.engine.targets import resolve, source_sha256
from oplens.records.errors import OpLensError
from oplens.records.job import TargetSpec
from oplens.records.run import BackendInfo, Config, LineStat, OpStat, Run, Spread, Target, Totals
from support.paths import DATA

MODELS = DATA / "models.py"


def test_target_spec_parse() -> None:
    assert TargetSpec.parse("a/b.py::Cls.fn") == TargetSpec("a/b.py", qualname="Cls.fn")
    assert TargetSpec.parse("a/b.py:12") == TargetSpec("a/b.py", line=12)
    assert str(TargetSpec.parse("a/b.py:12")) == "a/b.py:12"
    with pytest.raises(OpLensError) as e:
        TargetSpec.parse("a/b.py")
    assert e.value.exit_code == 2 and "FILE::FUNCTION" in e.value.detail


@pytest.mark.parametrize(
    ("qualname", "required", "in_class"),
    [("with_helper", 1, False), ("Block.forward", 2, True), ("outer.inner", 1, False), ("no_args", 0, False)],
)
def test_resolve_qualnames(qualname: str, required: int, in_class: bool) -> None:
    target, fn = resolve(MODELS, qualname)
    assert target.qualname == qualname
    assert fn.required_params == required and fn.in_class == in_class
    assert target.first_line <= target.def_line <= target.last_line


def test_locals_spelling_and_decorators() -> None:
    target, _ = resolve(MODELS, "outer.<locals>.inner")
    assert target.qualname == "outer.inner"
    target, _ = resolve(MODELS, "decorated")
    assert target.first_line == target.def_line - 1  # the decorator line is part of the function


def test_line_picks_the_innermost_function() -> None:
    src = MODELS.read_text().splitlines()
    line = next(i for i, t in enumerate(src, 1) if "z = y.cos()" in t)
    target, _ = resolve(MODELS, line=line)
    assert target.qualname == "outer.inner"


def test_source_hash_changes_only_with_the_function(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("def a():\n    return 1\n\n\ndef b():\n    return 2\n")
    ta, _ = resolve(f, "a")
    f.write_text("def a():\n    return 1\n\n\ndef b():\n    return 3\n")
    assert resolve(f, "a")[0].source_sha256 == ta.source_sha256
    assert resolve(f, "b")[0].source_sha256 == source_sha256(f.read_text(), 5, 6)
    f.write_text("def a():\n    return 10\n")
    assert resolve(f, "a")[0].source_sha256 != ta.source_sha256


def test_run_round_trips_through_json() -> None:
    run = Run(
        target=Target("f.py", "fn", 1, 3, "abc", 1),
        backend=BackendInfo("cpu", "CPU"),
        config=Config(3, 20),
        totals=Totals(10.0, 10.0, 2, Spread(5, 4, 6)),
        lines=[LineStat(2, 10.0, 10.0, 100.0, 100.0, 2, [OpStat("aten::mul", 2, 10.0, 10.0, 100.0)])],
        ops=[OpStat("aten::mul", 2, 10.0, 10.0, 100.0)],
    )
    again = Run.from_dict(json.loads(json.dumps(run.to_dict())))
    assert again == run
    data = run.to_dict()
    data["future_field"] = {"x": 1}  # a newer writer's extra field is ignored
    assert Run.from_dict(data) == run


def test_inlay_hints_respect_the_threshold_and_hide_when_stale() -> None:
    from oplens.lsp import views

    source = "def f(x):\n    a = x * 2\n    return a + 1\n"
    target = Target("f.py", "f", 1, 3, source_sha256(source, 1, 3), 1)
    lines = [LineStat(2, 90.0, 90.0, 90.0, 90.0, 1), LineStat(3, 10.0, 10.0, 10.0, 10.0, 1)]
    run = Run(target, BackendInfo("cpu", "CPU"), Config(3, 20), Totals(100.0, 100.0, 2), lines, [])
    placed = views.place([run], source, views.functions_in(source, "f.py"))
    assert [h.label for h in views.inlay_hints(source, placed, 50.0, 1, 3)] == ["90.0 µs · 90.0 %"]
    assert len(views.inlay_hints(source, placed, 0.0, 1, 3)) == 2
    changed = source.replace("x * 2", "x * 3")
    placed = views.place([run], changed, views.functions_in(changed, "f.py"))
    assert views.inlay_hints(changed, placed, 0.0, 1, 3) == []


def test_the_hover_names_a_lines_largest_temporary_and_its_engines() -> None:
    from oplens.lsp import views
    from oplens.records.run import EngineTime, Temporary

    source = "def f(x):\n    a = x * 2\n    return a + 1\n"
    target = Target("f.py", "f", 1, 3, source_sha256(source, 1, 3), 1)
    line = LineStat(2, 90.0, 90.0, 90.0, 90.0, 1, alloc_bytes=64 << 20, freed_bytes=64 << 20, peak_bytes=64 << 20)
    line.temporary = Temporary(64 << 20, 3)
    line.engines, line.engine_graph = [EngineTime("Tensor", 60.0, 60.0), EngineTime("DMA", 30.0, 30.0)], "neff_abc"
    run = Run(target, BackendInfo("cpu", "CPU"), Config(3, 20), Totals(100.0, 100.0, 2, memory="host"), [line], [])
    text = "".join(views.work_markdown(run, line))
    assert "Host memory in one call: allocated 64.0 MiB" in text and "its largest temporary 64.0 MiB, freed on line 3" in text
    assert "Engines of neff_abc per call: Tensor 60.0 µs (60 %), DMA 30.0 µs (30 %)" in text
    line.temporary = Temporary(1 << 20, 1)
    assert "freed when the function returned" in "".join(views.work_markdown(run, line))
