"""Read the profiler's raw Kineto events into `RawEvent`s (worker side; imports torch).

This reads `kineto_results.events()` directly instead of `prof.events()`: building
`FunctionEvent`s costs 50-90 µs per event, reading the fields needed here ~17 µs, and input
shapes are read later only for the few ops that insights look at (see docs/benchmarks.md).
"""

from __future__ import annotations

from typing import Any

from torch._C._autograd import DeviceType

from oplens.analysis.attribution import RawEvent


def from_profiler(prof: Any, per_op_device_time: bool = False) -> list[RawEvent]:
    """The events of a stopped `torch.profiler.profile`; `per_op_device_time` (the backend's fact):
    read the device time a PrivateUse1 device reports on the CPU op itself too."""
    results = prof.profiler.kineto_results
    cpu = DeviceType.CPU
    out: list[RawEvent] = []
    append = out.append
    for k in results.events():
        on_device = k.device_type() != cpu
        start = k.start_ns()
        is_async = k.is_async() or k.start_thread_id() != k.end_thread_id()
        legacy = 0
        if per_op_device_time and not on_device and not is_async:
            # -1 where the op has no device time of its own: count only positive times, as key_averages does
            legacy = max(0, int(k.privateuse1_elapsed_us() * 1000))
        name = k.name()
        memory = name == "[memory]"
        append(
            RawEvent(
                name=name,
                thread=k.start_thread_id(),
                start_ns=start,
                end_ns=start + k.duration_ns(),
                correlation_id=k.correlation_id(),
                linked_correlation_id=k.linked_correlation_id(),
                on_device=on_device,
                is_async=is_async,
                legacy_device_ns=legacy,
                nbytes=k.nbytes() if memory else 0,
                device_memory=memory and on_device,
                source=k,
            )
        )
    if any(e.nbytes for e in out):
        addrs = _addresses(results)
        for e in out:
            if e.nbytes:
                e.addr = addrs.get((e.start_ns, e.nbytes), 0)
    return out


def _addresses(results: Any) -> dict[tuple[int, int], int]:
    """Each memory event's block address, by (time, bytes): Kineto's events do not carry it, the
    profiler's event tree does (its allocation records, at the same timestamps). Empty where this
    torch has no such tree: allocations then go unpaired (no temporaries)."""
    try:
        from torch._C._profiler import _EventType

        found: dict[tuple[int, int], int] = {}
        stack = list(results.experimental_event_tree())
        while stack:
            node = stack.pop()
            if node.tag == _EventType.Allocation:
                f = node.extra_fields
                found[(node.start_time_ns, f.alloc_size)] = f.ptr
            stack.extend(node.children)
        return found
    except Exception:
        return {}
