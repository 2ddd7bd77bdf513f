"""The client's settings (`initializationOptions`): typed, camelCase on the wire, defaults, and a
warning naming a bad setting (which keeps its default) instead of a failed start."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from oplens.backends import registry
from oplens.engine.request import DEFAULT_ITERS, DEFAULT_TIMEOUT_S, DEFAULT_WARMUP
from oplens.lsp import settings
from oplens.lsp.paths import Mapping
from oplens.lsp.settings import DEFAULT_HINT_THRESHOLD, Settings
from support.paths import ROOT


def test_nothing_given_is_every_default() -> None:
    for raw in (None, {}):
        parsed, warnings = settings.parse(raw)
        assert warnings == []
        assert parsed == Settings(path_mappings=[], hint_threshold=DEFAULT_HINT_THRESHOLD, backend="auto",
                                  warmup=DEFAULT_WARMUP, iterations=DEFAULT_ITERS, timeout_seconds=DEFAULT_TIMEOUT_S)


def test_camel_case_settings_are_read() -> None:
    parsed, warnings = settings.parse({
        "pathMappings": [{"local": "/Users/me/p", "host": "/home/u/p"}],
        "hintThreshold": 0, "backend": "auto", "warmup": 0, "iterations": 5, "timeoutSeconds": 30,
    })
    assert warnings == []
    assert parsed.path_mappings == [Mapping("/Users/me/p", "/home/u/p")]
    assert (parsed.hint_threshold, parsed.backend, parsed.warmup, parsed.iterations, parsed.timeout_seconds) == (
        0.0, "auto", 0, 5, 30.0)


@pytest.mark.parametrize(
    ("key", "value", "want"),
    [
        ("hintThreshold", "high", "a number from 0 to 100"),
        ("hintThreshold", 250, "a number from 0 to 100"),
        ("hintThreshold", True, "a number from 0 to 100"),  # JSON true is not a number
        ("backend", "tpu", "one of auto, cpu, cuda, neuron"),
        ("backend", 3, "one of auto"),
        ("warmup", -1, "a whole number, 0 or more"),
        ("warmup", 2.5, "a whole number, 0 or more"),
        ("iterations", 0, "a whole number, 1 or more"),
        ("iterations", "20", "a whole number, 1 or more"),  # never coerced
        ("timeoutSeconds", 0, "a number of seconds above 0"),
        ("pathMappings", "nope", "a list of {local, host} objects"),
        ("lenses", "some", "all (every function), profiled (the functions with a run) or off (no lenses)"),
        ("lenses", True, "all (every function)"),
    ],
)
def test_a_bad_setting_is_named_with_its_fix_and_keeps_its_default(key: str, value: Any, want: str) -> None:
    parsed, warnings = settings.parse({key: value, "warmup" if key != "warmup" else "iterations": 7})
    (warning,) = warnings
    assert warning.startswith(f"OpLens: setting {key} = {value!r} is not valid") and f"give {want}" in warning
    assert "Using the default, " in warning
    default = Settings()
    assert parsed == Settings(**{**default.__dict__, ("warmup" if key != "warmup" else "iterations"): 7})


def test_backend_options_and_command_settings_go_under_the_registry_names(tmp_path: Path) -> None:
    (name, options_type), = [(n, s.options_type) for n, s in registry.SPECS.items() if n == "neuron"]
    (_, cmd), = registry.commands()
    raw = {name: {"modes": ["DEVICE"], "maxEventsPerNc": 5000, "captureEnabledForNc": "0-1"},
           cmd.settings_key: {"uiPort": 4001, "apiPort": 4002}}
    parsed, warnings = settings.parse(raw)
    assert warnings == []
    assert parsed.backend_options == {name: {"modes": ["DEVICE"], "max_events_per_nc": 5000, "capture_enabled_for_nc": "0-1"}}
    assert parsed.command_settings == {cmd.settings_key: {"uiPort": 4001, "apiPort": 4002}}
    assert settings.check_backend_options(parsed, tmp_path) == []
    typed = registry.parse_options(name, parsed.backend_options, tmp_path)[name]
    assert isinstance(typed, options_type) and typed.max_events_per_nc == 5000


def test_the_neuron_flags_of_the_cli_are_editor_settings_too(tmp_path: Path) -> None:
    """`oplens.neuron.exact`, `.measured`, `.debugInfo` and `.withStack` (package.json) reach the same NeuronOptions
    fields as --neuron-exact, --neuron-measured, --neuron-debug-info and --no-neuron-with-stack."""
    raw = {"neuron": {"exact": True, "measured": True, "debugInfo": True, "withStack": False}}
    parsed, warnings = settings.parse(raw)
    assert warnings == [] and settings.check_backend_options(parsed, tmp_path) == []
    typed = registry.parse_options("neuron", parsed.backend_options, tmp_path)["neuron"]
    assert (typed.exact, typed.measured, typed.debug_info, typed.with_stack) == (True, True, True, False)
    manifest = json.loads((ROOT / "package.json").read_text())["contributes"]["configuration"]
    declared = {k for section in manifest for k in section["properties"]}
    assert {"oplens.neuron.exact", "oplens.neuron.measured", "oplens.neuron.debugInfo", "oplens.neuron.withStack"} <= declared


def test_a_bad_backend_option_is_dropped_with_the_backends_own_message(tmp_path: Path) -> None:
    parsed, warnings = settings.parse({"neuron": {"modes": ["DEVICE", "WARP"], "maxEventsPerNc": 10, "color": "red"},
                                       "explorer": [3001]})
    assert warnings == ["OpLens: setting explorer = [3001] is not valid: give the settings of oplens.openExplorer "
                        "as an object. Using the defaults."]
    checked = settings.check_backend_options(parsed, tmp_path)
    assert len(checked) == 2
    assert checked[0].startswith("OpLens: setting neuron.modes = ['DEVICE', 'WARP'] is not valid: unknown Neuron profile "
                                 "mode 'WARP'")
    assert checked[1].startswith("OpLens: setting neuron.color = 'red' is not valid: unknown Neuron option 'color'")
    assert all(w.endswith("Using its default.") for w in checked)
    assert parsed.backend_options == {"neuron": {"max_events_per_nc": 10}}  # the good one stays


def test_settings_that_are_not_an_object() -> None:
    parsed, warnings = settings.parse(["backend", "cuda"])
    assert parsed == Settings() and warnings == [
        "OpLens: initializationOptions must be an object (got list); using the defaults."]


def test_unknown_settings_are_ignored() -> None:
    assert settings.parse({"heat": "gutter", "pythonPath": "/usr/bin/python3"}) == (Settings(), [])
