"""The extension's fixtures are the Python side's own output: regenerating them changes nothing.

`extension/test/fixtures/make_fixtures.py` writes the JSON files the TypeScript unit tests compare
against (shared names, the functions of a document, a full Run, each record field's required or
default status as `Run.from_dict` has it, number formats). This runs it into
a temporary folder and fails, naming the file, when a committed fixture drifted from the Python
code: regenerate with `.venv/bin/python extension/test/fixtures/make_fixtures.py` and commit.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from types import ModuleType

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "extension" / "test" / "fixtures"
REGENERATE = ".venv/bin/python extension/test/fixtures/make_fixtures.py"


def load_make_fixtures() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES / "make_fixtures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> tuple[ModuleType, Path]:
    make_fixtures = load_make_fixtures()
    out = tmp_path_factory.mktemp("fixtures")
    make_fixtures.main(["--out", str(out)])
    return make_fixtures, out


def test_writes_every_fixture_it_names(regenerated: tuple[ModuleType, Path]) -> None:
    make_fixtures, out = regenerated
    assert sorted(p.name for p in out.iterdir()) == sorted(make_fixtures.OUTPUTS)


@pytest.mark.parametrize("name", load_make_fixtures().OUTPUTS)
def test_committed_fixture_matches_the_python_side(regenerated: tuple[ModuleType, Path], name: str) -> None:
    _, out = regenerated
    committed = FIXTURES / name
    assert committed.is_file(), f"extension/test/fixtures/{name} is missing: run {REGENERATE}"
    fresh = (out / name).read_text(encoding="utf-8")
    if committed.read_text(encoding="utf-8") != fresh:
        # name the first difference, not only the file
        was, now = json.loads(committed.read_text(encoding="utf-8")), json.loads(fresh)
        where = first_difference(was, now)
        if not where:
            return  # the same figures but for the last bits of a float (3.12's statistics sum in another order)
        pytest.fail(f"extension/test/fixtures/{name} drifted from the Python side ({where}): run {REGENERATE}")


def first_difference(was: object, now: object, where: str = "$") -> str:
    if isinstance(was, dict) and isinstance(now, dict):
        for key in [*was, *(k for k in now if k not in was)]:
            if key not in now:
                return f"{where}.{key} is gone"
            if key not in was:
                return f"{where}.{key} is new"
            if was[key] != now[key] and (found := first_difference(was[key], now[key], f"{where}.{key}")):
                return found
        return ""
    elif isinstance(was, list) and isinstance(now, list):
        for i, (a, b) in enumerate(zip(was, now, strict=False)):
            if a != b and (found := first_difference(a, b, f"{where}[{i}]")):
                return found
        if len(was) != len(now):
            return f"{where} had {len(was)} items, now {len(now)}"
        return ""
    elif isinstance(was, float) and isinstance(now, float) and math.isclose(was, now, rel_tol=1e-12, abs_tol=1e-12):
        return ""
    elif was != now:
        return f"{where}: committed {was!r}, now {now!r}"
    return ""
