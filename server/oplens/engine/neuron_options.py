"""Neuron profiling options, checked in the parent before any work is spent (no torch here).

The keys are `NeuronConfig`'s own argument names, so the worker passes them on unchanged:
`modes`, `capture_enabled_for_nc`, `max_events_per_nc`, `neff_cache_dir`. Editor settings may
spell them in camelCase (`captureEnabledForNc`); `normalize` accepts both.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from oplens.engine.errors import bad_input

MODES = ("DEVICE", "RUNTIME", "CPU_UTIL", "HOST_MEMORY")
DEFAULT_MODES = ("DEVICE", "RUNTIME")
DEFAULT_MAX_EVENTS_PER_NC = 1_000_000  # the Neuron runtime's default
NEURON_KEYS = ("modes", "capture_enabled_for_nc", "max_events_per_nc", "neff_cache_dir")
_ALIASES = {
    "captureEnabledForNc": "capture_enabled_for_nc",
    "cores": "capture_enabled_for_nc",
    "maxEventsPerNc": "max_events_per_nc",
    "neffCacheDir": "neff_cache_dir",
}
_CORES = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")


def parse_modes(value: str | Sequence[str]) -> list[str]:
    """`"device,runtime"` or `["DEVICE", "RUNTIME"]` → `["DEVICE", "RUNTIME"]`."""
    items = value.split(",") if isinstance(value, str) else [str(v) for v in value]
    modes: list[str] = []
    for item in items:
        mode = item.strip().upper().removeprefix("PROFILEMODE.")
        if not mode:
            continue
        if mode not in MODES:
            raise bad_input(f"unknown Neuron profile mode {item.strip()!r}", f"choose from {', '.join(MODES)} (comma-separated)")
        if mode not in modes:
            modes.append(mode)
    if not modes:
        raise bad_input("no Neuron profile mode given", f"choose from {', '.join(MODES)}, e.g. DEVICE,RUNTIME")
    return modes


def parse_cores(spec: str) -> list[int]:
    """NeuronConfig's core list, `"0,1,2-5"` → `[0, 1, 2, 3, 4, 5]`."""
    text = spec.replace(" ", "")
    if not _CORES.match(text):
        raise bad_input(f"bad NeuronCore list {spec!r}", "write core numbers and ranges, e.g. 0 or 0,1 or 0-3,8")
    cores: set[int] = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        lo, hi = int(first), int(last or first)
        if hi < lo:
            raise bad_input(f"bad NeuronCore range {part!r} in {spec!r}", "write ranges low-high, e.g. 2-5")
        cores.update(range(lo, hi + 1))
    return sorted(cores)


def normalize(options: Mapping[str, Any], base: Path | None = None) -> dict[str, Any]:
    """Checked options with NeuronConfig's names; other keys (e.g. `device_index`) pass through.

    `neff_cache_dir` becomes absolute (relative to `base`, the workspace)."""
    out: dict[str, Any] = {}
    for key, value in options.items():
        out[_ALIASES.get(key, key)] = value
    if out.get("modes") is not None:
        out["modes"] = parse_modes(out["modes"])
    cores = out.get("capture_enabled_for_nc")
    if cores is not None and cores != "":
        spec = ",".join(str(c) for c in cores) if isinstance(cores, (list, tuple)) else str(cores)
        parse_cores(spec)
        out["capture_enabled_for_nc"] = spec.replace(" ", "")
    else:
        out.pop("capture_enabled_for_nc", None)
    events = out.get("max_events_per_nc")
    if events is not None:
        if isinstance(events, bool) or not isinstance(events, (int, str)) or not str(events).strip().isdigit() or int(events) < 1:
            raise bad_input(
                f"max events per NeuronCore must be a positive whole number (got {events!r})",
                f"the runtime's default is {DEFAULT_MAX_EVENTS_PER_NC:,}; raise it when events are dropped",
            )
        out["max_events_per_nc"] = int(events)
    cache = out.get("neff_cache_dir")
    if cache:
        path = Path(str(cache)).expanduser()
        path = path if path.is_absolute() or base is None else base / path
        if path.exists() and not path.is_dir():
            raise bad_input(f"--neff-cache-dir {cache} is a file", "give a directory (it is created if missing)")
        out["neff_cache_dir"] = str(path.resolve())
    else:
        out.pop("neff_cache_dir", None)
    return out


def modes_of(options: Mapping[str, Any]) -> list[str]:
    return list(options.get("modes") or DEFAULT_MODES)


def has_neuron_options(options: Mapping[str, Any]) -> bool:
    return any(options.get(k) not in (None, "", []) for k in (*NEURON_KEYS, *_ALIASES))
