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


def from_function_events(prof: Any) -> list[RawEvent]:
    """The events of a stopped profile as its op table has them: `prof.events()`, the FunctionEvents
    that `key_averages()` sums. A vendor may put device time there and nowhere in Kineto's raw results
    (TorchNeuron's `correlate_device_time`); each CPU op carries its `self_device_time_total` (what the
    table shows as Self <DEVICE>) as one device event linked to it, so `attribute` reads it as it reads
    kernels. Device events that no op claimed stay device events (unattributed). Slow (50-90 µs an
    event to build the FunctionEvents): read only where the backend's facts say the table may have more.

    FunctionEvents have their times in µs from the profile's start: relative, as is all that
    attribution compares. torch drops a dispatch duplicate (a same-named only child) from the table:
    its time is its parent's there, as attribution would count it anyway."""
    fes = list(prof.events())
    cpu = DeviceType.CPU
    op_ids = {fe.id for fe in fes if fe.device_type == cpu}
    out: list[RawEvent] = []
    append = out.append
    for fe in fes:
        start = round(fe.time_range.start * 1000)
        end = round(fe.time_range.end * 1000)
        linked = getattr(fe, "linked_correlation_id", 0) or 0
        if fe.device_type != cpu:
            if linked not in op_ids:  # a claimed kernel's time is on its op's (self_device_time_total)
                append(RawEvent(name=fe.name, thread=fe.thread, start_ns=start, end_ns=end, on_device=True))
            continue
        e = RawEvent(name=fe.name, thread=fe.thread, start_ns=start, end_ns=end, correlation_id=fe.id,
                     linked_correlation_id=linked, is_async=bool(fe.is_async))  # fmt: skip
        append(e)
        device_ns = 0 if fe.is_async else max(0, round(fe.self_device_time_total * 1000))
        if not device_ns:
            continue
        if fe.id > 0 and linked == 0:
            append(RawEvent(name=fe.name, thread=fe.thread, start_ns=start, end_ns=start + device_ns,
                            linked_correlation_id=fe.id, on_device=True))  # fmt: skip
        else:
            e.legacy_device_ns = device_ns  # no id to link by: on the op itself
    return out
