"""The device's ceilings (issue 14, part 2): the most FLOP/s per dtype and bytes/s it reaches.

`DeviceCeilings` is what a calibration measured on a device (`worker/calibrate.py`: a large matmul
per dtype, a large copy and a triad), with the vendor's published figures beside it (`spec`,
`analysis/peaks.py`) where the device is a known one; or, with `source: "spec"`, the vendor's figures
alone. A run's roofline is drawn against these. JSON through `dataclasses.asdict` and
`records.run.from_dict`, as the other records.

Calibrations are cached per host, backend and device (`cache_file`): `$OPLENS_CACHE_DIR/ceilings/`,
else `$XDG_CACHE_HOME/oplens/ceilings/`, else `~/.cache/oplens/ceilings/`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from oplens.records.atomic import write_json_atomic
from oplens.records.run import from_dict

SCHEMA = "oplens.ceilings/1"
Source = Literal["measured", "spec"]
MEASURED: Source = "measured"
SPEC: Source = "spec"

# The dtype keys of `dtype_peaks` (torch's names; "tf32" is float32 matmuls on TF32 tensor cores).
FLOAT32 = "float32"
TF32 = "tf32"
BFLOAT16 = "bfloat16"
FLOAT16 = "float16"
FLOAT8 = "float8"
# The memory kernels of a calibration (keys of `memory` and `spread`).
COPY = "copy"  # b = a: bytes read + bytes written
TRIAD = "triad"  # a = b + s·c: two arrays read, one written


@dataclass
class FigureSpread:
    """One measured figure over a calibration's timed repeats (FLOP/s or bytes/s)."""

    best: float = 0.0  # the figure kept: the fastest repeat
    median: float = 0.0
    worst: float = 0.0
    repeats: int = 0
    seconds: float = 0.0  # one repeat's time at the best
    size: list[int] = field(default_factory=list)  # matmul [M, N, K]; a memory kernel [elements]
    inner: int = 1  # calls per timed repeat (a fast device runs several between two synchronisations)


@dataclass
class SpecCeilings:
    """A vendor's published figures for a device, with where they are written."""

    name: str = ""  # "NVIDIA H200 SXM", "Trainium2 (NeuronCore-v3)"
    unit: str = ""  # what the figures are per: "GPU", "chip", "NeuronCore"
    dtype_peaks: dict[str, float] = field(default_factory=dict)  # dense FLOP/s per dtype
    bytes_per_s: float | None = None  # device memory bandwidth; None where the source gives none for `unit`
    source_url_or_doc: str = ""  # the datasheet's name, or the doc's path in its repository
    notes: str = ""  # how a figure was read (sparsity halved, "over 90 TFLOPS", ...)
    # Trainium: the physical NeuronCores in the logical one these figures are for (LNC; 0: not a
    # NeuronCore's figures), and where that came from (the runtime's variable, or the documented default).
    logical_cores: int = 0
    logical_cores_from: str = ""


@dataclass
class DeviceCeilings:
    name: str = ""  # the device as the backend names it: "NVIDIA H200", the CPU's model
    dtype_peaks: dict[str, float] = field(default_factory=dict)  # FLOP/s per dtype
    bytes_per_s: float = 0.0  # the best memory kernel's bytes read + written per second
    source: Source = "measured"
    measured_at: str = ""  # ISO 8601, UTC; empty for spec figures
    spec: SpecCeilings | None = None  # the vendor's figures beside the measured ones (a known device)
    spread: dict[str, FigureSpread] = field(default_factory=dict)  # per dtype and memory kernel
    memory: dict[str, float] = field(default_factory=dict)  # bytes/s per memory kernel (copy, triad)
    backend: str = ""  # cpu | cuda | neuron
    host: str = ""
    seconds: float = 0.0  # the calibration's wall time (its own work, without torch's import)
    details: dict[str, Any] = field(default_factory=dict)  # torch version, threads, what was skipped and why
    schema: str = SCHEMA

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DeviceCeilings:
        found = from_dict(cls, dict(data))
        spread = data.get("spread")  # from_dict keeps a dict's values as they are: these are records
        found.spread = {str(k): from_dict(FigureSpread, v) for k, v in spread.items()} if isinstance(spread, dict) else {}
        return found

    def ratios(self) -> dict[str, float]:
        """measured / spec per figure both have (dtype keys, and "bytes_per_s")."""
        if self.spec is None or self.source != MEASURED:
            return {}
        out = {k: v / self.spec.dtype_peaks[k] for k, v in self.dtype_peaks.items() if self.spec.dtype_peaks.get(k)}
        if self.spec.bytes_per_s and self.bytes_per_s:
            out["bytes_per_s"] = self.bytes_per_s / self.spec.bytes_per_s
        return out


# ---------------------------------------------------------------------------- the cache


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where calibrations are kept: `$OPLENS_CACHE_DIR/ceilings` (tests), else the XDG cache's."""
    env = os.environ if env is None else env
    if env.get("OPLENS_CACHE_DIR"):
        root = Path(env["OPLENS_CACHE_DIR"])
    else:
        xdg = env.get("XDG_CACHE_HOME")
        root = (Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache") / "oplens"
    return root / "ceilings"


def slug(text: str) -> str:
    """A file-name piece: lower case, runs of anything but [a-z0-9.] as one dash."""
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-.") or "unknown"


def cache_file(host: str, backend: str, device: str, env: Mapping[str, str] | None = None) -> Path:
    return cache_dir(env) / f"{slug(host)}-{slug(backend)}-{slug(device)}.json"


def load(path: Path) -> DeviceCeilings | None:
    """The cached calibration, or None where there is none or it cannot be used (damaged, another
    schema, no figures): the caller measures again."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            return None
        found = DeviceCeilings.from_dict(data)
        figures = [*found.dtype_peaks.values(), found.bytes_per_s]
        spreads = all(isinstance(found.spread.get(k), FigureSpread) for k in found.dtype_peaks)
    except (OSError, ValueError, TypeError, AttributeError, KeyError):
        return None
    if found.source != MEASURED or not found.measured_at or not found.dtype_peaks or not spreads:
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in figures):
        return None
    return found


def save(path: Path, ceilings: DeviceCeilings) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, ceilings.to_dict())
