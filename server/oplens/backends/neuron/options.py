"""Neuron profiling options as one typed record, checked in the parent before any work is spent.

The fields are `NeuronConfig`'s own argument names, so the worker passes them on unchanged:
`modes`, `capture_enabled_for_nc`, `max_events_per_nc`, `neff_cache_dir` (and `device_index`,
the NeuronCore the function runs on). Plain data from the CLI or the editor's settings (field
names in snake_case; the language server turns camelCase into them) becomes a `NeuronOptions`
through `parse`, which names the bad value and the fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from oplens.records.errors import bad_input

MODES = ("DEVICE", "RUNTIME", "CPU_UTIL", "HOST_MEMORY")
DEFAULT_MODES = ("DEVICE", "RUNTIME")
DEFAULT_MAX_EVENTS_PER_NC = 1_000_000  # the Neuron runtime's default
NEFF_CACHE_ENV = "TORCH_NEURONX_NEFF_CACHE_DIR"  # read by TorchNeuron when it compiles (how-to-profile-workload.rst)
# Set to 1 in the worker's environment (--neuron-measured, or exported): the system-trace ingest keeps the device
# profile (no --ignore-instruction-trace), where Neuron Explorer's per framework op tables are (runtime.py).
MEASURED_ENV = "OPLENS_NEURON_MEASURED"
# Where TorchNeuron's default NEFF cache is (its /tmp/neff_cache); tests point it at a folder of their own.
DEFAULT_NEFF_CACHE_ENV = "OPLENS_NEURON_DEFAULT_NEFF_CACHE"
_CORES = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")


@dataclass
class NeuronOptions:
    modes: list[str] = field(default_factory=lambda: list(DEFAULT_MODES))
    capture_enabled_for_nc: str | None = None  # "0,1,2-5"; None: every core
    max_events_per_nc: int | None = None  # None: the runtime's default
    neff_cache_dir: str | None = None  # absolute; None: the run's own (<run>/neuron_profile/neff_cache, device.py)
    precache_node_info: bool | None = None  # None: NeuronConfig's default (True: metadata during the warm-up)
    device_index: int = 0
    # Not NeuronConfig's: the compile-time debug info (XLA_IR_DEBUG, XLA_HLO_DEBUG, NEURON_FRAMEWORK_DEBUG) for the
    # compiled-region split (None: where the user exported one of them, environment.py), and torch.profiler's
    # with_stack for the profile Explorer opens (None: on, `file(line)` names on the framework events).
    debug_info: bool | None = None
    with_stack: bool | None = None
    # Not NeuronConfig's either: deterministic mode (torch.use_deterministic_algorithms(True)) around the profiled
    # calls, which disables Adaptive Eager Execution: one execution per op (adaptive.py). None/False: as the user runs.
    exact: bool | None = None
    # Keep the device profile in the system-trace ingest (MEASURED_ENV in the worker, runtime.py), so that Neuron
    # Explorer's per framework op tables give each line its measured MFU/MBU and bytes (efficiency.py); slower to
    # process on large profiles. None: where the user exported MEASURED_ENV=1.
    measured: bool | None = None

    def given(self) -> dict[str, Any]:
        """The NeuronConfig arguments the user set (besides modes)."""
        keys = ("capture_enabled_for_nc", "max_events_per_nc", "neff_cache_dir", "precache_node_info")
        return {k: getattr(self, k) for k in keys if getattr(self, k) is not None}


FIELDS = tuple(f.name for f in fields(NeuronOptions))


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


def parse(raw: Mapping[str, Any], base: Path | None = None) -> NeuronOptions:
    """Checked options from plain data; `None` or `""` leaves a field at its default.
    `neff_cache_dir` becomes absolute (relative to `base`, the workspace)."""
    unknown = sorted(set(raw) - set(FIELDS))
    if unknown:
        raise bad_input(f"unknown Neuron option {unknown[0]!r}", f"the Neuron options are: {', '.join(FIELDS)}")
    # An empty core list, cache dir or index means "not set"; empty modes are a mistake (no capture at all).
    given = {k: v for k, v in raw.items() if v is not None and (k == "modes" or v not in ("", []))}
    opts = NeuronOptions()
    if "modes" in given:
        opts.modes = parse_modes(given["modes"])
    cores = given.get("capture_enabled_for_nc")
    if cores is not None:
        spec = ",".join(str(c) for c in cores) if isinstance(cores, (list, tuple)) else str(cores)
        parse_cores(spec)
        opts.capture_enabled_for_nc = spec.replace(" ", "")
    events = given.get("max_events_per_nc")
    if events is not None:
        if isinstance(events, bool) or not isinstance(events, (int, str)) or not str(events).strip().isdigit() or int(events) < 1:
            raise bad_input(
                f"max events per NeuronCore must be a positive whole number (got {events!r})",
                f"the runtime's default is {DEFAULT_MAX_EVENTS_PER_NC:,}; raise it when events are dropped",
            )
        opts.max_events_per_nc = int(events)
    cache = given.get("neff_cache_dir")
    if cache is not None:
        path = Path(str(cache)).expanduser()
        path = path if path.is_absolute() or base is None else base / path
        if path.exists() and not path.is_dir():
            raise bad_input(f"--neff-cache-dir {cache} is a file", "give a directory (it is created if missing)")
        opts.neff_cache_dir = str(path.resolve())
    precache = given.get("precache_node_info")
    if precache is not None:
        if not isinstance(precache, bool):
            raise bad_input(f"precache_node_info must be true or false (got {precache!r})")
        opts.precache_node_info = precache
    for key in ("debug_info", "with_stack", "exact", "measured"):
        flag = given.get(key)
        if flag is not None:
            if not isinstance(flag, bool):
                raise bad_input(f"{key} must be true or false (got {flag!r})")
            setattr(opts, key, flag)
    index = given.get("device_index")
    if index is not None:
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise bad_input(f"the NeuronCore index must be 0 or more (got {index!r})")
        opts.device_index = index
    return opts
