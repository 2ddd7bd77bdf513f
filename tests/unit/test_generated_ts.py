"""The extension's TypeScript records and readers are generated from the Python dataclasses, and fresh.

`oplens.codegen.generate` (`make generate`) writes extension/shared/generated/ with
`oplens.codegen.typescript`: each record as an interface and a reader in which a field is required
exactly where `from_dict` refuses its absence, and otherwise takes the default `from_dict` gives it.
These tests regenerate the files in memory (a stale one fails, naming `make generate`), check that
each field's status in the readers is the Python reader's own, and that a field added to a record
reaches the TypeScript with its status and its default.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import re
import typing
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

import pytest

from oplens.backends import registry
from oplens.codegen import typescript as ts
from oplens.lsp import settings
from oplens.records.run import BackendInfo, Run, from_dict
from support.paths import ROOT


def load_generator() -> ModuleType:
    return importlib.import_module("oplens.codegen.generate")


@pytest.fixture(scope="module")
def rendered() -> dict[str, str]:
    files: dict[str, str] = load_generator().render()
    return files


def test_the_committed_typescript_is_what_the_python_generates(rendered: dict[str, str]) -> None:
    names = ("run.ts", "views.ts", "settings.ts", "errors.ts", "backends.ts")
    assert sorted(rendered) == sorted(f"extension/shared/generated/{n}" for n in names)
    for path, text in rendered.items():
        committed = ROOT / path
        assert committed.is_file(), f"{path} is missing: run `make generate`"
        if committed.read_text(encoding="utf-8") != text:
            was, now = committed.read_text(encoding="utf-8").splitlines(), text.splitlines()
            first = next((i for i, (a, b) in enumerate(zip(was, now, strict=False)) if a != b), min(len(was), len(now)))
            pytest.fail(f"{path} is stale (line {first + 1}: the Python it is generated from changed): run `make generate`")


def test_check_mode_names_a_stale_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    generator = load_generator()
    monkeypatch.setattr(generator, "ROOT", tmp_path)
    assert generator.main(["--check"]) == 1  # none written yet
    assert len(capsys.readouterr().err.splitlines()) == 5  # one line per generated file
    assert generator.main([]) == 0
    assert generator.main(["--check"]) == 0
    (tmp_path / "extension/shared/generated/errors.ts").write_text("// edited by hand\n", encoding="utf-8")
    capsys.readouterr()
    assert generator.main(["--check"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "extension/shared/generated/errors.ts is stale (the Python it is generated from changed): run `make generate`"]


# ---- each field's status is the Python reader's ------------------------------------------------------


def minimal(cls: type) -> dict[str, Any]:
    """`cls` as JSON with only the fields it requires (records in it built the same way)."""
    hints = typing.get_type_hints(cls)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            out[f.name] = value_of(hints[f.name])
    return out


def value_of(tp: Any) -> Any:
    _, tp = ts.nullable(tp)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return minimal(tp)
    return {bool: True, int: 1, float: 1.5, str: "x"}.get(tp, [] if typing.get_origin(tp) is list else {})


@pytest.mark.parametrize("rec", ts.records([Run]), ids=lambda r: r.name)
def test_a_field_is_required_in_the_readers_exactly_where_from_dict_refuses_its_absence(rec: ts.Record) -> None:
    given = minimal(rec.cls)
    built = from_dict(rec.cls, given)  # takes what it requires, fills the rest with the defaults
    for f in rec.fields:
        if f.required:
            broken = copy.deepcopy(given)
            del broken[f.name]
            with pytest.raises(TypeError):
                from_dict(rec.cls, broken)
        else:  # the default the TypeScript reader fills in is what from_dict gives
            assert f.default == ts.as_json(getattr(built, f.name)), f"{rec.name}.{f.name}"
    for f in rec.fields:  # and the reader reads a required field without a fallback, an optional one with its default
        can_be_null, tp = ts.nullable(f.type)
        plain = ts.read_present(tp, f.name, f.name)
        expression = ts.read_field(f, f.name)
        if f.required:
            assert expression == (f"r.isNull('{f.name}') ? null : {plain}" if can_be_null else plain)
        elif expression.startswith("r.objOrDefaults("):  # a record at its own defaults: those its reader fills in
            assert expression == f"r.objOrDefaults('{f.name}', {ts.reader_name(tp)})" and f.default == ts.as_json(tp())
        else:
            assert expression != plain and (ts.literal(f.default, "    ") in expression or f.default in ([], {})), expression


# ---- a field added to a record reaches the TypeScript with its status -----------------------------


@dataclass
class Firmware:
    """A made-up record, held by a made-up field of the backend."""

    version: str
    patches: list[str] = field(default_factory=lambda: ["a", "b"])


@dataclass
class NewerBackendInfo(BackendInfo):
    """`BackendInfo` with fields added later."""

    cores: int = 2  # NeuronCores visible to the run
    # what the device runs, where it says
    firmware: Firmware | None = None
    serial: str = field(kw_only=True)  # required: a reader without it must fail
    clock_mhz: dict[str, float] = field(default_factory=dict)
    mode: Literal["fast", "exact"] = "exact"


@dataclass
class NewerRun(Run):
    backend: NewerBackendInfo


def generated(*roots: type) -> str:
    return ts.records_module(list(roots), generator="tests", reader_import="../reader")


def test_an_added_field_is_declared_and_read_with_its_status_and_default() -> None:
    text = generated(NewerRun)
    interface = text.split("export interface NewerBackendInfo {", 1)[1].split("\n}", 1)[0]
    assert "  cores: number;" in interface and "@default 2" in interface
    assert "NeuronCores visible to the run" in interface  # the field's comment is its TSDoc
    assert "  firmware: Firmware | null;" in interface and "what the device runs, where it says" in interface
    assert "  serial: string;" in interface
    assert re.search(r"/\*\* required: a reader without it must fail \*/\n  serial", interface), interface
    assert "  mode: 'fast' | 'exact';" in interface
    reader = text.split("export function readNewerBackendInfo(r: Reader): NewerBackendInfo {", 1)[1].split("\n}", 1)[0]
    assert "    name: r.str('name')," in reader  # inherited, still required
    assert "/** cpu | cuda | neuron */\n  name: string;" in interface  # with its comment
    assert "    cores: r.num('cores', 2)," in reader
    assert "    firmware: r.has('firmware') ? r.obj('firmware', readFirmware) : null," in reader
    assert "    serial: r.str('serial')," in reader
    assert "    clock_mhz: r.record('clock_mhz', isNumber)," in reader
    assert "    mode: r.has('mode') ? r.oneOf('mode', ['fast', 'exact']) : 'exact'," in reader
    assert "    patches: r.has('patches') ? r.strings('patches', false) : ['a', 'b']," in text  # a default other than []
    assert "    backend: r.obj('backend', readNewerBackendInfo)," in text  # the run reads the newer record
    assert "/** A `NewerBackendInfo` from its JSON: requires name, device_label, serial;" in text
    assert "import { Reader, isJson, isNumber, isString } from '../reader';" in text


def test_the_other_statuses_a_field_may_have() -> None:
    @dataclass
    class Odd:
        at: float | None  # required, and may be null
        since: int | None = 3  # null stays null; absent, 3
        flags: list[bool] = field(default_factory=list)

    rec = ts.record(Odd)
    at, since, _ = rec.fields
    assert ts.read_field(at, "Odd.at") == "r.isNull('at') ? null : r.num('at')"
    assert ts.read_field(since, "Odd.since") == "r.isNull('since') ? null : r.has('since') ? r.num('since') : 3"
    with pytest.raises(ts.Untranslatable, match=r"Odd.flags: a list of <class 'bool'>"):
        ts.reader(rec)


@dataclass
class Inner:
    n: int = 0
    s: str = ""


@dataclass
class Outer:
    plain: Inner = field(default_factory=Inner)  # its defaults are Inner's: read from an empty object
    other: Inner = field(default_factory=lambda: Inner(n=3))  # a default of its own: written here


def test_a_record_field_at_the_records_own_defaults_is_written_once_in_its_reader() -> None:
    plain, other = ts.record(Outer).fields
    assert ts.read_field(plain, "Outer.plain") == "r.objOrDefaults('plain', readInner)"
    assert ts.read_field(other, "Outer.other") == "r.obj('other', readInner, () => ({ n: 3, s: '' }))"


def test_a_type_with_no_typescript_names_its_field() -> None:
    @dataclass
    class Pairs:
        pair: tuple[int, int] = (0, 0)

    with pytest.raises(ts.Untranslatable, match=r"Pairs.pair: no TypeScript for tuple\[int, int\]"):
        ts.interface(ts.record(Pairs))


def test_literals() -> None:
    assert ts.literal("it's a \\ path\n") == "'it\\'s a \\\\ path\\n'"
    assert ts.literal([0.0, 1.5, None, True, {"a b": 1, "x": "y"}]) == "[0, 1.5, null, true, { 'a b': 1, x: 'y' }]"
    long = ts.literal({f"key_{i}": i for i in range(20)}, indent="  ")
    assert long.startswith("{\n    key_0: 0,\n") and long.endswith("\n  }")


# ---- the settings both sides read ------------------------------------------------------------------


def test_the_generated_settings_are_the_servers_defaults_and_bounds(rendered: dict[str, str]) -> None:
    text = rendered["extension/shared/generated/settings.ts"]
    defaults = settings.Settings()
    backend = f"backend: {{ type: 'string', default: {ts.literal(defaults.backend)}, enum: {ts.literal(list(registry.NAMES))} }}"
    assert backend in text
    assert "lenses: { type: 'string', default: 'all', enum: ['all', 'profiled', 'off'] }" in text  # a string's values too
    assert defaults.backend == "auto" == registry.DEFAULT  # the CLI's and the notebook's too: one default everywhere
    assert "timeoutSeconds: { type: 'number', default: 300, exclusiveMinimum: 0 }" in text
    assert settings.CHECKS["timeout_seconds"](0.5) and not settings.CHECKS["timeout_seconds"](0)
    assert "hintThreshold: { type: 'number', default: 1, minimum: 0, maximum: 100 }" in text
