"""TorchNeuron's device memory counters (worker side): what `worker/linememory.py` reads around each line.

TorchNeuron's allocator does not report to torch's profiler (its early source, parmoham-aws/test-repo-parmoham,
has no `reportMemoryUsageToProfiler`), so a profile's `[memory]` events on Neuron are the host's. The device's
own counters are the memory profiling guide's API (torch/guides/memory-profiling-guide.rst, Neuron 2.33:
"torch_neuronx.memory_* APIs ... memory_stats, memory_allocated"; "Always call torch.neuron.synchronize()
before you read any memory statistic"), read here as:

- `memory_stats(device)`: the layout of the early source's `torch_neuronx/memory.py`, `allocated_bytes` a
  dict of `current`, `peak` ("since last reset"), `allocated` ("historical total bytes increased") and
  `freed`; torch's CUDA layout (`allocated_bytes.all.current`, ...) is read as well, in case a later release
  follows torch's (an assumption: the 2.33 page shows no dict);
- else `memory_allocated(device)` and `max_memory_allocated(device)` (current and peak only);
- `reset_peak_memory_stats(device)` between two lines, where it exists (else each line's peak is the
  larger of its two readings).

"Allocated" is the blocks handed to tensors (the guidelines page's reserved >= allocated >= active), the
figure torch's `memory_allocated` gives on every device.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oplens.backends.device import DeviceMemory, MemoryReading

_STATS, _ALLOCATED, _MAX_ALLOCATED, _RESET = "memory_stats", "memory_allocated", "max_memory_allocated", "reset_peak_memory_stats"


class NeuronMemory(DeviceMemory):
    def __init__(self, module: Any, device_index: int) -> None:
        self._module, self._index = module, device_index
        self._stats = callable(getattr(module, _STATS, None))
        self.source = f"torch_neuronx.{_STATS if self._stats else _ALLOCATED}()"
        self._reset = getattr(module, _RESET, None)

    def read(self) -> MemoryReading:
        if self._stats:
            stats = self._module.memory_stats(self._index)
            found = from_stats(stats)
            if found is None:
                raise KeyError(f"no allocated_bytes in its dict (keys: {', '.join(sorted(map(str, stats))[:12])})")
            return found
        current = int(self._module.memory_allocated(self._index))
        peak_of = getattr(self._module, _MAX_ALLOCATED, None)
        return MemoryReading(current, int(peak_of(self._index)) if callable(peak_of) else current)

    def reset_peak(self) -> None:
        if callable(self._reset):
            self._reset(self._index)


def from_stats(stats: Mapping[str, Any]) -> MemoryReading | None:
    """`memory_stats()`'s allocated bytes in either layout (the module's docstring), None where neither holds."""
    nested = stats.get("allocated_bytes")
    if isinstance(nested, Mapping) and "current" in nested:
        current = int(nested["current"])
        return MemoryReading(current, int(nested.get("peak", current)), _int(nested.get("allocated")), _int(nested.get("freed")))
    flat = stats.get("allocated_bytes.all.current")
    if flat is not None:
        current = int(flat)
        flat_of = {k: stats.get(f"allocated_bytes.all.{k}") for k in ("peak", "allocated", "freed")}
        return MemoryReading(current, _int(flat_of["peak"]) or current, _int(flat_of["allocated"]), _int(flat_of["freed"]))
    return None


def _int(value: Any) -> int | None:
    return int(value) if value is not None else None


def device_memory(module: Any, device_index: int) -> tuple[DeviceMemory | None, str]:
    """The counters of `torch_neuronx` (`module`), or why there are none."""
    if callable(getattr(module, _STATS, None)) or callable(getattr(module, _ALLOCATED, None)):
        return NeuronMemory(module, device_index), ""
    version = getattr(module, "__version__", "?")
    return None, (f"host memory: torch_neuronx {version} has no {_STATS}() or {_ALLOCATED}() (the memory profiling guide's API, "
                  "Neuron 2.33), so the device's allocations cannot be read; a TorchNeuron of Neuron 2.33 or later "
                  "gives each line its device memory")  # fmt: skip
