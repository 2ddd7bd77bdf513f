"""Each line's device memory from the device allocator's own counters (worker side).

The profiler's `[memory]` events carry the allocations of allocators that report to torch's profiler:
the host's, and CUDA's. TorchNeuron's does not (its early source has no call to
`reportMemoryUsageToProfiler`), so on Neuron those events are host memory. There the call that
records input shapes reads the device's counters around each line of the target instead
(`Backend.device_memory`): the device synchronised first, as the memory profiling guide says
("The Neuron allocator is asynchronous. Always call torch.neuron.synchronize() before you read any
memory statistic", torch/guides/memory-profiling-guide.rst), then the counters, then the peak reset
for the next line. The readings are taken between two lines' ranges, outside both.

Each line gets the bytes allocated and freed while it ran and the peak above the call's start, as
`analysis.memory.LineMemory` records (what the events give elsewhere). The synchronise after each
line stops the runtime from fusing across lines in this one call (Adaptive Eager Execution): the
figures are each line's own, unfused, which the run says. Blocks are not paired (counters carry no
address), so no line gets a temporary from them.
"""

from __future__ import annotations

from collections.abc import Callable

from oplens.analysis.memory import DeviceLineMemory, LineMemory
from oplens.backends.device import DeviceMemory, MemoryReading


class LineDeviceMemory:
    """Readings of `memory` at each line boundary of one call of the target (`LineMarker.on_target_line`)."""

    def __init__(self, memory: DeviceMemory, synchronize: Callable[[], None], def_line: int) -> None:
        self._memory = memory
        self._synchronize = synchronize
        self._def_line = def_line
        self._found: dict[int, LineMemory] = {}
        self._line: int | None = None  # the line running since the last reading (None: none of the target's)
        self._prev: MemoryReading | None = None
        self._base = 0  # allocated when the call began
        self._peak = 0
        self._failed = ""
        self._counters = True  # the device counts bytes allocated and freed (else: from `current`)

    def start(self) -> None:
        """Before the call: the base the lines' peaks are measured from."""
        r = self._read()
        if r is not None:
            self._base, self._prev, self._line = r.current, r, self._def_line  # the call's entry: its `def` line

    def at(self, line: int | None) -> None:
        """The target's frame starts `line`, or returns (None): the running line's share ends here."""
        if self._prev is None:
            return
        r = self._read()
        if r is None:
            return
        self._close(r)
        self._line = line

    def finish(self) -> DeviceLineMemory:
        """Each line's memory, the call's peak above its start and the source in words; no lines (the
        note saying why) where the counters could not be read."""
        if self._failed or self._prev is None:
            why = self._failed or "the target was not called"
            return DeviceLineMemory(None, 0, f"host memory: {why}")
        how = "" if self._counters else "; it counts no bytes allocated and freed, so each line's are its net change"
        note = (f"device memory from {self._memory.source}, read after each line with the device synchronised (the "
                f"runtime fuses no work across lines in that call){how}; the host's allocations are not in these "
                "figures")  # fmt: skip
        return DeviceLineMemory(dict(self._found), self._peak, note)

    def _read(self) -> MemoryReading | None:
        # Called from the tracer: an exception there would end tracing and surface in the user's code.
        if self._failed:
            return None
        try:
            self._synchronize()
            r = self._memory.read()
            self._memory.reset_peak()
        except Exception as e:  # noqa: BLE001  # the vendor's counters failed: the run goes on with host memory
            self._failed = f"reading {self._memory.source} failed: {type(e).__name__}: {e}"
            return None
        return r

    def _close(self, r: MemoryReading) -> None:
        prev = self._prev
        assert prev is not None
        line = self._line or self._def_line
        acc = self._found.setdefault(line, LineMemory())
        if r.allocated is not None and r.freed is not None and prev.allocated is not None and prev.freed is not None:
            acc.alloc += max(r.allocated - prev.allocated, 0)
            acc.freed += max(r.freed - prev.freed, 0)
        else:
            self._counters = False
            change = r.current - prev.current
            acc.alloc += max(change, 0)
            acc.freed += max(-change, 0)
        high = max(r.peak, r.current, prev.current) - self._base
        acc.peak = max(acc.peak, high)
        self._peak = max(self._peak, high)
        self._prev = r
