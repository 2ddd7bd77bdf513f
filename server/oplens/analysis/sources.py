"""Where each op's device time comes from: chosen once, before the chain of derived views runs (pure).

A device backend may report device time in three places (docs/design.md, "Facts about the Neuron side"):

    kineto_linked  Kineto's device events linked to their launching op by correlation id (and a
                   PrivateUse1 device's time on the op itself): the profile's events as read
    op_table       the op table (`prof.events()`, what `key_averages()` sums as Self <DEVICE>), read by the
                   worker where the backend's facts say the vendor may propagate device time there only
                   (TorchNeuron's correlate_device_time), handed here as events
    system_trace   the device runtime's own trace of its executions (`RuntimeTrace`; Neuron: the system
                   trace as neuron-explorer processes it), handed here as one device event per execution

`choose` measures each source as the lines would show it: by its events' attribution (attribution.py,
whose outlier rule decides on that source's calls), except that a source whose events hold no device
time at all measures 0 without one. It picks Kineto's events unless the op table holds more; where neither
holds any, the runtime's executions take the place of the profile's device events; where one does, the
runtime's total is recorded beside it and a gap of more than `SOURCES_AGREE_WITHIN` is said. Either way
each compiled region's device time is split over the lines it fused, where the runtime's device profile
says how. The choice is recorded as `DeviceTimeSources`; the chain then runs once, on the chosen events,
from the attribution made while measuring them (`derive(chosen.inputs, laps, chosen.attribution)`):
`profile`, the capture and the notebook (worker/profiling.py `process`) and `oplens analyze`
(engine/analyze.py) call the same two steps.

A stored run derived again follows its stored choice (its trace holds Kineto's events only): the
runtime's executions where it used them and they are read again, else the trace's events, with a note
where that is not what the stored lines were made of.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Protocol

from oplens.analysis.attribution import AnyEvents, Attribution, RawEvent, attribute
from oplens.analysis.columns import of
from oplens.analysis.derive import Device, Inputs
from oplens.records.run import (
    HOST_CPU,
    KINETO_LINKED,
    NO_SOURCE,
    OP_TABLE,
    SOURCES_AGREE_WITHIN,
    DeviceTimeSources,
    LineStat,
)

STORED_OP_TABLE = ("this run's device time came from the op table, which trace.json does not hold: the lines "
                   "re-derived here carry the trace's device time only (the stored run keeps the op table's)")  # fmt: skip


class RuntimeTrace(Protocol):
    """A device runtime's own record of a run's executions (backends/spec.py `RuntimeTime`)."""

    source: str  # its DeviceTimeSources name
    device_events: list[RawEvent]  # one device event per execution in the profiled iterations, linked to its op
    total_us: float  # device time per profiled iteration
    found: str  # in words: what was read and by which rule, or why nothing (with the fix)
    tables: str  # the processed tables kept with the run ("": no figure was read)

    def split(self, lines: list[LineStat]) -> None: ...


@dataclass
class Chosen:
    """The events each op's device time comes from, their attribution, and the record of the choice."""

    inputs: Inputs  # the chain's inputs, their events the chosen ones
    attribution: Attribution  # of those events: the chain's first step, made while measuring them
    device_time: DeviceTimeSources | None  # the record (a stored run: as stored, None in runs older than it)
    note: str = ""  # a stored run derived again: where its lines cannot be made as they were, in words


def choose(inp: Inputs, op_table: AnyEvents | Exception | None = None, runtime: RuntimeTrace | None = None) -> Chosen:
    """The events of `inp` or of another source, chosen and recorded (the module's rules). `op_table`: the
    op table's events where the backend's facts say to read them, or why they could not be read;
    `runtime`: the device runtime's own trace where the backend has one."""
    if inp.stored is not None:
        return _as_stored(inp, runtime)
    kineto = _Source(inp)
    if not inp.device.on_device:
        a = kineto.attribution()
        return Chosen(inp, a, DeviceTimeSources(source=HOST_CPU, totals_us={HOST_CPU: a.totals.self_cpu_us},
                                                note="no device: each line's device time is its self CPU time"))  # fmt: skip
    used, totals = kineto, {KINETO_LINKED: kineto.device_us()}
    if isinstance(op_table, Exception):  # the table cannot be built (a torch without it, trace_only): Kineto's stands
        dt = _found_in(inp.device, totals)
        dt.note = f"the op table (prof.events()) could not be read ({type(op_table).__name__}: {op_table}); " + dt.note
    elif op_table is not None:
        table = _Source(dataclasses.replace(inp, events=op_table))
        kineto_us = totals[KINETO_LINKED]
        table_us = totals[OP_TABLE] = table.device_us()
        if table_us > kineto_us:
            used = table
            dt = DeviceTimeSources(source=OP_TABLE, totals_us=totals, note=(
                f"device time from the op table (prof.events(), what key_averages() shows as Self "
                f"{inp.device.device_label}): {table_us:.1f} µs per iteration there, {kineto_us:.1f} µs in "
                "Kineto's raw events; the larger was used"))  # fmt: skip
        else:
            dt = _found_in(inp.device, totals)
    else:
        dt = _found_in(inp.device, totals)
    if runtime is not None:
        used, dt = _with_runtime(used, dt, runtime)
    a = used.attribution()
    if runtime is not None:
        runtime.split(a.lines)
    return Chosen(used.inputs, a, dt)


def _with_runtime(used: _Source, dt: DeviceTimeSources, rt: RuntimeTrace) -> tuple[_Source, DeviceTimeSources]:
    """The runtime's trace recorded beside the other sources; where they held no device time, its
    executions as the device events (the profile's own left out); where one did, the totals compared."""
    if rt.tables:  # a figure read (else `found` says why there is none)
        dt.totals_us[rt.source] = rt.total_us
    dt.found[rt.source] = rt.found
    if dt.source == NO_SOURCE:
        if not rt.device_events:
            dt.note = dt.note.replace(" held none", f" held none, nor the runtime's trace ({rt.found})", 1)
            return used, dt
        note = f"device time from the runtime's system trace: {rt.found}"
        executions = _Source(dataclasses.replace(used.inputs, events=_executions(used.inputs.events, rt)))
        return executions, DeviceTimeSources(source=rt.source, totals_us=dt.totals_us, note=note, found=dt.found)
    taken = dt.totals_us.get(dt.source, 0.0)
    if rt.total_us > 0 and taken > 0 and abs(taken - rt.total_us) > SOURCES_AGREE_WITHIN * max(taken, rt.total_us):
        dt.mismatch = (f"device time disagrees between sources: {taken:.1f} µs per iteration from {dt.source} (used), "
                       f"{rt.total_us:.1f} µs from {rt.source}, apart by more than {SOURCES_AGREE_WITHIN:.0%}; "
                       "the system trace times each execution on the device, so a larger gap means time the "
                       "other source misses or counts twice")  # fmt: skip
    return used, dt


def _found_in(device: Device, measured: dict[str, float]) -> DeviceTimeSources:
    """The record where Kineto's events are used: their device time, or none found (naming the fix)."""
    totals = dict(measured)
    if totals.get(KINETO_LINKED, 0.0) > 0:
        return DeviceTimeSources(source=KINETO_LINKED, totals_us=totals,
                                 note="device time from Kineto's device events linked to their launching ops")  # fmt: skip
    tried = "Kineto's linked device events" + (" and the op table (prof.events())" if OP_TABLE in totals else "")
    note = (f"no {device.title} device time: {tried} held none, so every line shows 0 µs {device.device_label}. "
            f"Fix: {device.no_device_time_fix}")  # fmt: skip
    return DeviceTimeSources(source=NO_SOURCE, totals_us=totals, note=note)


def _as_stored(inp: Inputs, rt: RuntimeTrace | None) -> Chosen:
    """A stored run derived again: its stored choice followed where its trace and kept tables allow."""
    stored = inp.stored.device_time if inp.stored is not None else None
    source = stored.source if stored is not None else ""
    used, note = inp, ""
    if rt is not None and source == rt.source:
        if rt.device_events:
            used = dataclasses.replace(inp, events=_executions(inp.events, rt))
        else:
            note = f"the runtime's trace the device time came from was not read again ({rt.found}): lines carry 0 device time"
    elif source == OP_TABLE:
        note = STORED_OP_TABLE
    a = _Source(used).attribution()
    if rt is not None:
        rt.split(a.lines)
    return Chosen(used, a, stored, note)


def _executions(events: AnyEvents, rt: RuntimeTrace) -> AnyEvents:
    """The profile's events with its own device events left out and the runtime's executions in their place."""
    return [e for e in events if not e.on_device] + rt.device_events


class _Source:
    """One source's events, attributed once, where measuring or using them first needs it."""

    def __init__(self, inputs: Inputs) -> None:
        events = of(inputs.events)  # columns once: records (a stored trace, the op table) would be made columns per use
        self.inputs = inputs if events is inputs.events else dataclasses.replace(inputs, events=events)
        self._attribution: Attribution | None = None

    def attribution(self) -> Attribution:
        if self._attribution is None:
            inp = self.inputs
            self._attribution = attribute(inp.events, inp.iters, inp.target.def_line, inp.device.device_time,
                                          dict(inp.fused), outside=inp.statement)  # fmt: skip
        return self._attribution

    def device_us(self) -> float:
        """Its device time per iteration as the lines would show it (0 without attributing where its
        events hold none: no device event, no device time on an op)."""
        if self._attribution is None and self.inputs.device.device_time == "linked":
            ev = of(self.inputs.events)  # the same columns
            if not (ev.on_device.any() or ev.legacy_device_ns.any()):
                return 0.0
        return self.attribution().totals.self_device_us
