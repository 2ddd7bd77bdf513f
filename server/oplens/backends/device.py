"""The worker side of a backend: the small interface every backend implements.

Imported only in the worker process (torch). The parent side of each backend (its options,
checks and commands) is its `BackendSpec` (`spec.py`), which names its class here by path;
`registry.resolve` picks and builds one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import torch
from torch.profiler import ProfilerActivity

from oplens.backends.facts import CPU, BackendFacts
from oplens.backends.spec import NoOptions
from oplens.records.run import Artifacts, BackendInfo

OptionsT = TypeVar("OptionsT")


@dataclass(frozen=True)
class MemoryReading:
    """The device allocator's counters at one moment, in bytes."""

    current: int  # allocated to tensors now
    peak: int  # the most allocated since the last `DeviceMemory.reset_peak`
    allocated: int | None = None  # bytes ever allocated (None: the device counts none; then from `current`)
    freed: int | None = None  # bytes ever freed


class DeviceMemory:
    """A device whose allocator the profiler's memory events do not see (they record the host's) but
    which reports its own counters: read around each line of one call (`worker/linememory.py`).
    `source` names the API in the run's words."""

    source = ""

    def read(self) -> MemoryReading:
        raise NotImplementedError

    def reset_peak(self) -> None:
        """Start the peak counter again from the current figure."""


class Backend(Generic[OptionsT]):
    facts: BackendFacts = CPU  # the same record as its spec's (facts.py)
    options_type: type[Any] = NoOptions

    def __init__(self, options: OptionsT | None = None) -> None:
        self.options: OptionsT = options if options is not None else self.options_type()
        self.note = ""
        self.warnings: list[str] = []  # traps met while configuring (shown with the result)
        self.details: dict[str, Any] = {}  # vendor configuration actually used

    @property
    def name(self) -> str:
        return self.facts.name

    @property
    def device_label(self) -> str:
        return self.facts.device_label

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """None when this backend can run here, else what is missing, then after "; " how to get it."""
        return None

    def device(self) -> torch.device:
        return torch.device("cpu")

    def activities(self) -> list[ProfilerActivity]:
        return [ProfilerActivity.CPU]

    def place(self, value: Any) -> Any:
        """Move tensors and modules (also inside tuples, lists and dicts) to this device."""
        device = self.device()
        if device.type == "cpu":
            return value
        return _place(value, device)

    def synchronize(self) -> None:
        """Wait for queued device work, so that a timed iteration holds all of its work."""

    def device_memory(self) -> tuple[DeviceMemory | None, str]:
        """The device allocator's own counters where the profiler's memory events miss them, with why
        none where this device should have them ("" otherwise). CUDA's allocator reports to the profiler
        itself, and the CPU is the host: both None."""
        return None, ""

    @classmethod
    def environment(cls, options: Any) -> dict[str, str]:
        """Variables the worker sets before this backend's vendor module is imported (anything that
        must be in place before it compiles), from the backend's options."""
        return {}

    def configure(self, run_dir: Path) -> None:
        """Set up vendor profiling before the warm-up calls (where the vendor documents that order)."""

    def profiler_options(self, run_dir: Path) -> dict[str, Any]:
        """Extra keyword arguments for `torch.profiler.profile` (vendor configuration)."""
        return {}

    def writes_own_trace(self) -> bool:
        """True where `on_trace_ready` writes the framework trace (then OpLens does not)."""
        return False

    def artifacts(self, run_dir: Path) -> Artifacts:
        return Artifacts()

    def info(self) -> BackendInfo:
        return BackendInfo(
            name=self.name,
            device_label=self.device_label,
            torch_version=torch.__version__,
            device_name=self.device_name(),
            note=self.note,
            details=dict(self.details),
            warnings=list(self.warnings),
        )

    def device_name(self) -> str:
        import platform

        return platform.processor() or platform.machine()


def _place(value: Any, device: torch.device) -> Any:
    if isinstance(value, (torch.Tensor, torch.nn.Module)):
        return value.to(device)
    if isinstance(value, tuple):
        placed = [_place(v, device) for v in value]
        return type(value)(*placed) if hasattr(value, "_fields") else tuple(placed)
    if isinstance(value, list):
        return [_place(v, device) for v in value]
    if isinstance(value, dict):
        return {k: _place(v, device) for k, v in value.items()}
    return value

