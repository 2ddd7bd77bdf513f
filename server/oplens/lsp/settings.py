"""A client's settings: the LSP `initializationOptions`, typed, with defaults.

On the wire (camelCase, every key optional):

    {"pathMappings": [{"local": "/Users/me/proj", "host": "/home/ubuntu/proj"}],
     "hintThreshold": 1.0, "backend": "auto", "warmup": 3, "iterations": 20, "timeoutSeconds": 300,
     "captureSkip": 3, "captureCalls": 10, "captureStop": true, "lenses": "all",
     "<backend>": {...},          # each registered backend's options under its name, camelCase
     "<settings key>": {...}}     # each backend command's settings under its settings key

e.g. `"neuron": {"modes": ["DEVICE"], "maxEventsPerNc": 2000000}` and
`"explorer": {"uiPort": 3001, "apiPort": 3002}`; both names come from the backend registry.

A bad value never stops the server: the client is shown a warning naming the setting and what it
takes, and the setting keeps its default (the habit of jedi-language-server). Backend options are
checked by the backend itself (`registry.parse_options`), once the workspace is known.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oplens.backends import registry
from oplens.engine.program import DEFAULT_CALLS, DEFAULT_SKIP
from oplens.engine.request import DEFAULT_ITERS, DEFAULT_TIMEOUT_S, DEFAULT_WARMUP
from oplens.lsp.convert import Invalid, camel, not_on_the_wire, snake, structure, wire_key
from oplens.lsp.paths import Mapping
from oplens.records.errors import OpLensError

log = logging.getLogger(__name__)
DEFAULT_HINT_THRESHOLD = 1.0  # % of device time below which a line gets no inlay hint
# Which functions get code lenses: every one (`▶ Profile` on each def), those with a run shown (their
# totals and `▶ Profile` to run again; the functions the latest overview saw keep its lens), or none.
LENS_MODES = ("all", "profiled", "off")


@dataclass
class Settings:
    path_mappings: list[Mapping] = field(default_factory=list)
    hint_threshold: float = DEFAULT_HINT_THRESHOLD
    backend: str = registry.DEFAULT  # a request's backend when it names none: the CLI's default, and the editor's (generated)
    warmup: int = DEFAULT_WARMUP
    iterations: int = DEFAULT_ITERS
    timeout_seconds: float = DEFAULT_TIMEOUT_S
    # A capture inside the user's program (`oplens.profile` with `program`), as `oplens run` takes them;
    # `capture_stop`: the program ends once captured, so the editor has the result at once (the CLI
    # runs it to its end unless told --stop).
    capture_skip: int = DEFAULT_SKIP
    capture_calls: int = DEFAULT_CALLS
    capture_stop: bool = True
    lenses: str = LENS_MODES[0]
    # Each backend's options by backend name, snake_case keys (what registry.parse_options reads).
    backend_options: dict[str, dict[str, Any]] = not_on_the_wire(default_factory=dict)
    # Each backend command's settings by its settings key, as sent (what its run_lsp reads).
    command_settings: dict[str, dict[str, Any]] = not_on_the_wire(default_factory=dict)


# What each setting takes, for the warning about a bad one.
WANTS = {
    "path_mappings": "a list of {local, host} objects, each a folder path on the client and on the host",
    "hint_threshold": "a number from 0 to 100 (a % of the function's device time)",
    "backend": f"one of {', '.join(registry.NAMES)}",
    "warmup": "a whole number, 0 or more",
    "iterations": "a whole number, 1 or more",
    "timeout_seconds": "a number of seconds above 0",
    "capture_skip": "a whole number, 0 or more (the calls a capture lets run before profiling)",
    "capture_calls": "a whole number, 1 or more (the calls a capture profiles)",
    "capture_stop": "true or false (end the program once the function is captured)",
    "lenses": "all (every function), profiled (the functions with a run) or off (no lenses)",
}


# The checks beyond its type. The editor's defaults and bounds of these settings are generated from
# `Settings` and `BOUNDS` (`make generate`: extension/shared/generated/settings.ts).
@dataclass(frozen=True)
class Bounds:
    """A number setting's range, in JSON Schema's words (the editor's manifest and its reader of the
    settings take them from here, through `oplens.codegen.generate`)."""

    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: float | None = None  # the value must be above it

    def admits(self, value: float) -> bool:
        return ((self.minimum is None or value >= self.minimum) and (self.maximum is None or value <= self.maximum)
                and (self.exclusive_minimum is None or value > self.exclusive_minimum))


BOUNDS = {
    "hint_threshold": Bounds(minimum=0, maximum=100),
    "warmup": Bounds(minimum=0),
    "iterations": Bounds(minimum=1),
    "timeout_seconds": Bounds(exclusive_minimum=0),
    "capture_skip": Bounds(minimum=0),
    "capture_calls": Bounds(minimum=1),
}
# A string setting's values (its `enum` in the editor's manifest, generated too).
CHOICES: dict[str, tuple[str, ...]] = {"backend": registry.NAMES, "lenses": LENS_MODES}
CHECKS: dict[str, Callable[[Any], bool]] = {
    **{name: allowed.__contains__ for name, allowed in CHOICES.items()},
    **{name: bounds.admits for name, bounds in BOUNDS.items()},
}


def parse(raw: Any) -> tuple[Settings, list[str]]:
    """Settings from `initializationOptions`, and a warning for each bad value (left at its default)."""
    if raw is None:
        return Settings(), []
    if not isinstance(raw, dict):
        return Settings(), [f"OpLens: initializationOptions must be an object (got {type(raw).__name__}); using the defaults."]
    warnings: list[str] = []
    good: dict[str, Any] = {}
    default = Settings()
    for f in dataclasses.fields(Settings):
        key = wire_key(f)
        if key is None or key not in raw:
            continue
        try:
            value = getattr(structure({key: raw[key]}, Settings), f.name)
        except Invalid as e:
            warnings.append(_warning(key, raw[key], WANTS[f.name], _default(default, f.name), e.problems))
            continue
        if f.name in CHECKS and not CHECKS[f.name](value):
            warnings.append(_warning(key, raw[key], WANTS[f.name], _default(default, f.name)))
            continue
        good[key] = raw[key]
    settings = structure(good, Settings)
    for name in registry.SPECS:  # e.g. "neuron": {"modes": [...], "maxEventsPerNc": ...}
        if name in raw:
            options = _object(raw, name, f"the {registry.get(name).title} options as an object", warnings)
            settings.backend_options[name] = {snake(k): v for k, v in options.items()}
    for _, cmd in registry.commands():  # e.g. "explorer": {"uiPort": 3001, "apiPort": 3002}
        if cmd.settings_key in raw:
            what = f"the settings of {cmd.lsp_command} as an object"
            settings.command_settings[cmd.settings_key] = _object(raw, cmd.settings_key, what, warnings)
    known = {wire_key(f) for f in dataclasses.fields(Settings)} | set(registry.SPECS)
    known |= {cmd.settings_key for _, cmd in registry.commands()}
    if unknown := sorted(set(raw) - known):
        log.info("initializationOptions not known to this server (ignored): %s", ", ".join(unknown))
    return settings, warnings


def check_backend_options(settings: Settings, workspace: Path) -> list[str]:
    """Check each backend's options as the backend does (`registry.parse_options`); a bad option is
    dropped (its default holds) with a warning. In place; returns the warnings."""
    warnings = []
    for name, options in settings.backend_options.items():
        for key, value in list(options.items()):
            try:
                registry.parse_options(name, {name: {key: value}}, workspace)
            except OpLensError as e:
                del options[key]
                reason = e.message + (f" ({e.detail})" if e.detail else "")
                warnings.append(f"OpLens: setting {name}.{camel(key)} = {_shown(value)} is not valid: {reason}. "
                                "Using its default.")
    return warnings


def _object(raw: dict[str, Any], key: str, want: str, warnings: list[str]) -> dict[str, Any]:
    value = raw[key]
    if isinstance(value, dict):
        return dict(value)
    warnings.append(_warning(key, value, want, "the defaults"))
    return {}


def _warning(key: str, value: Any, want: str, default: str, problems: list[str] | None = None) -> str:
    detail = [p for p in problems or [] if not p.startswith(f"{key} must be")]  # the type is in `want`
    where = f" ({'; '.join(detail)})" if detail else ""
    return f"OpLens: setting {key} = {_shown(value)} is not valid{where}: give {want}. Using {default}."


def _default(default: Settings, name: str) -> str:
    value = getattr(default, name)
    shown = ("true" if value else "false") if isinstance(value, bool) else _shown(value)  # as a client writes it
    return f"the default, {shown}"


def _shown(value: Any) -> str:
    if isinstance(value, list) and not value:
        return "none"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
