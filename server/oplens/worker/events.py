"""Read the profiler's raw Kineto events as columns (`analysis.columns.Events`; worker side; imports torch).

This reads `kineto_results.events()` directly instead of `prof.events()`: building
`FunctionEvent`s costs 50-90 µs per event. It reads one field at a time over all the events, in C
(`map` over the event type's own accessor; no Python loop, no object per event), straight into
numpy arrays (or lists, analysis/arrays.py's stand-in, where numpy is missing), names as codes into
the distinct names: ~2.5 µs an event for the eleven fields with numpy, where a record per event
(`RawEvent`, the accessors called in a loop) cost ~6 (docs/benchmarks.md). Input shapes are read
later only for the few ops that insights look at, and only from a profile that recorded them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from itertools import count
from typing import Any

from torch._C._autograd import DeviceType

from oplens.analysis.arrays import np
from oplens.analysis.attribution import RawEvent
from oplens.analysis.columns import Events


def columns(prof: Any, per_op_device_time: bool = False, inputs: bool = False) -> Events:
    """The events of a stopped `torch.profiler.profile`; `per_op_device_time` (the backend's fact):
    read the device time a PrivateUse1 device reports on the CPU op itself too; `inputs`: keep each
    Kineto event for its input shapes (a profile with `record_shapes`; the timed calls record none)."""
    results = prof.profiler.kineto_results
    kineto = results.events()
    if not kineto:
        return _empty()
    k = type(kineto[0])  # torch._C._autograd._KinetoEvent
    if getattr(prof, "with_stack", False):  # Python frames (a Neuron run's, for Explorer's `file(line)` names): no ops
        kineto = [e for e, frame in zip(kineto, map(k.is_python_function, kineto), strict=True) if not frame]
    n = len(kineto)
    if not n:
        return _empty()

    def column(accessor: Callable[[Any], Any], dtype: Any) -> Any:
        return np.fromiter(map(accessor, kineto), dtype, n)

    codes: defaultdict[str, int] = defaultdict(count().__next__)
    name = np.fromiter(map(codes.__getitem__, map(k.name, kineto)), np.int32, n)
    names = list(codes)
    start = column(k.start_ns, np.int64)
    thread = column(k.start_thread_id, np.int64)
    on_device = _on_device(kineto, k)
    is_async = column(k.is_async, np.bool_) | (thread != column(k.end_thread_id, np.int64))
    legacy = np.zeros(n, np.int64)
    if per_op_device_time:
        # -1 where the op has no device time of its own: count only positive times, as key_averages does
        own = column(k.privateuse1_elapsed_us, np.float64) * 1000
        legacy = np.where(~on_device & ~is_async & (own > 0), np.trunc(own), 0).astype(np.int64)
    memory = name == codes["[memory]"] if "[memory]" in codes else np.zeros(n, np.bool_)
    nbytes = np.where(memory, column(k.nbytes, np.int64), 0) if memory.any() else np.zeros(n, np.int64)
    addr = np.zeros(n, np.int64)
    if nbytes.any():
        addrs = _addresses(results)
        for i in np.flatnonzero(nbytes).tolist():
            addr[i] = addrs.get((int(start[i]), int(nbytes[i])), 0)
    return Events(names=names, name=name, thread=thread, start_ns=start, end_ns=start + column(k.duration_ns, np.int64),
                  correlation_id=column(k.correlation_id, np.int64),
                  linked_correlation_id=column(k.linked_correlation_id, np.int64), on_device=on_device,
                  is_async=is_async, legacy_device_ns=legacy, nbytes=nbytes, device_memory=memory & on_device, addr=addr,
                  sources=kineto if inputs else None)  # fmt: skip


# Activity types whose events are on the host whatever the profile (torch's Result::deviceType: an op or a
# record_function range is on the CPU; Kineto's deviceTypeFromActivity: so are these two activities).
# Reading the type is cheaper than the device (an enum made per call), so the device is read for the rest.
HOST_ACTIVITIES = frozenset({"cpu_op", "user_annotation"})


def _on_device(kineto: list[Any], k: Any) -> Any:
    activity_type = getattr(k, "activity_type", None)  # not on torch 2.11's _KinetoEvent: every device read then
    if activity_type is None:
        host = np.zeros(len(kineto), np.bool_)
    else:
        host = np.fromiter(map(HOST_ACTIVITIES.__contains__, map(activity_type, kineto)), np.bool_, len(kineto))
    on_device = np.zeros(len(kineto), np.bool_)
    rest = np.flatnonzero(~host).tolist()
    cpu = DeviceType.CPU
    on_device[rest] = np.fromiter((kineto[i].device_type() != cpu for i in rest), np.bool_, len(rest))
    return on_device


def _empty() -> Events:
    none = np.zeros(0, np.int64)
    flags = np.zeros(0, np.bool_)
    return Events([], np.zeros(0, np.int32), none, none, none, none, none, flags, flags, none, none, flags, none)


def from_profiler(prof: Any, per_op_device_time: bool = False) -> list[RawEvent]:
    """`columns` as records, with input shapes read lazily (a small profile: the shapes call's)."""
    return list(columns(prof, per_op_device_time, inputs=True).records())


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
    fes = [fe for fe in prof.events() if not getattr(fe, "is_python_function", False)]  # frames (with_stack): no ops
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
