"""The views derived from a profile's events, in one order (pyinstrument's processors are the model):

    attribute   the profiled calls' ops to lines and ops, µs per call (attribution.py), once the calls
                that stalled are decided and left out (outliers.py): every step after reads its means
    shapes      each line's op sequence, work and memory, from the one call recorded with input
                shapes and memory (work.py, memory.py); a stored run re-derived keeps its own
    insights    what the figures say in words (insights.py) and the large temporaries (memory.py)
    roofline    each line against the device's ceilings, and what is left to win (roofline.py)

`derive` runs them, once per profile; each step reads what the steps before it gave. Which events
each op's device time comes from is chosen before (sources.py `choose`, which attributes the events it
measures: the chain goes on from the chosen ones' attribution). `profile`, the capture's windows and
the notebook (worker/profiling.py `process`) derive a fresh profile; `oplens analyze` (engine/analyze.py)
a stored run's trace, whose work, memory and ceilings are the stored ones (a trace holds no input
shapes). A better rule here applies to both, and to old runs.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from oplens.analysis import insights, memory, outliers, roofline, work
from oplens.analysis.attribution import AnyEvents, Attribution, attribute
from oplens.records.run import DeviceRoof, DeviceTimeSources, Insight, LineStat, Run, SourceRef, Target, Totals

# The fields of a line and of the totals that the attribution and the roofline give: a stored run
# derived again gets these anew and keeps every other field as stored (work, memory, engines, ranks,
# and whatever a newer field adds). tests/unit/test_analysis_derive.py checks them against what the
# steps really set.
ATTRIBUTED_LINE = frozenset({"line", "self_cpu_us", "self_device_us", "pct_device", "pct_cpu", "op_calls", "ops",
                             "device_spread", "cpu_spread", "noisy", "inner", "compiled", "device_samples_us",
                             "cpu_samples_us", "collective_us", "wall_us", "wall_spread", "outside_ops_us",
                             "wall_samples_us", "wait_us", "marks", "marks_us"})  # fmt: skip
ATTRIBUTED_TOTALS = frozenset({"self_cpu_us", "self_device_us", "op_calls", "unattributed_device_us",
                               "device_samples_us", "cpu_samples_us", "collective_us", "outliers",
                               "noise_floor_pct", "call_wall_us", "outside_lines_us"})  # fmt: skip
ROOFLINE_LINE = frozenset({"bound", "bound_from", "above_ceiling", "roofline_pct", "floor_us", "headroom_us", "flop_per_s",
                           "bytes_per_s"})  # fmt: skip
ROOFLINE_TOTALS = frozenset({"floor_us", "headroom_us"})


class Device(Protocol):
    """What the chain and the choice of device-time source (sources.py) need to know of the backend
    (its `BackendFacts`)."""

    @property
    def title(self) -> str: ...
    @property
    def device_label(self) -> str: ...
    @property
    def on_device(self) -> bool: ...
    @property
    def device_time(self) -> str: ...
    @property
    def no_device_time_fix(self) -> str: ...


@dataclass
class Inputs:
    events: AnyEvents  # the profiled calls: columns (a fresh profile's) or records (a stored trace's)
    iters: int
    target: Target
    device: Device
    fused: Mapping[str, list[SourceRef]] = field(default_factory=dict)  # compiled region → lines its graph fused
    shape_events: AnyEvents | None = None  # the call recorded with input shapes and memory
    graphs: Mapping[str, work.LineWork] | None = None  # compiled region → its graph's work
    stored: Run | None = None  # re-deriving a stored run: its work, memory and ceilings as stored
    # The device's ceilings, asked for only where a line has work to set against them (calibrating takes seconds).
    ceilings: Callable[[], DeviceRoof | None] = lambda: None
    capture: bool = False  # the calls are a program's (`oplens run`): the insights say --calls
    device_memory: memory.DeviceLineMemory | None = None  # that call's lines read from the device's counters
    statement: bool = False  # each call is a notebook statement that reaches the function: outside its lines, not its


@dataclass
class Derived:
    attribution: Attribution  # lines, ops, totals, op sequence
    insights: list[Insight] = field(default_factory=list)
    device: DeviceRoof | None = None  # the ceilings the lines were set against
    device_time: DeviceTimeSources | None = None  # which events' device time the lines have (sources.py)


def derive(inp: Inputs, laps: dict[str, float] | None = None, attribution: Attribution | None = None) -> Derived:
    """Every step, in order; from `attribution` where the events' attribution is made already (by
    sources.choose). `laps`, where given, gets each step's time in ms (`attribute_ms`, ...)."""
    t = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal t
        now = time.perf_counter()
        if laps is not None:
            laps[f"{name}_ms"] = (now - t) * 1000.0
        t = now

    if attribution is None:
        attribution = attribute(inp.events, inp.iters, inp.target.def_line, inp.device.device_time, dict(inp.fused),
                                outside=inp.statement)  # fmt: skip
        lap("attribute")
    d = Derived(attribution)
    totals = d.attribution.totals
    if totals.outliers is not None:
        totals.outliers.note = outliers.note(totals.outliers, inp.device.device_label, totals.self_device_us)
    for name, step in STEPS:
        step(d, inp)
        lap(name)
    d.insights.sort(key=lambda i: i.line)
    return d


def shapes(d: Derived, inp: Inputs) -> None:
    a = d.attribution
    if inp.shape_events is not None:
        a.sequence = attribute(inp.shape_events, 1, inp.target.def_line, outside=inp.statement).sequence
        work.assign(a.lines, a.totals, work.line_work(inp.shape_events, inp.target.def_line, inp.graphs))
        found, note = memory.chosen(memory.line_memory(inp.shape_events, inp.target.def_line), inp.device_memory)
        memory.assign(a.lines, a.totals, found, note)
    elif inp.stored is not None:
        keep_stored(inp.stored, d)


def keep_stored(run: Run, d: Derived) -> None:
    """A re-derived run keeps, of each line and of the totals, every figure that the trace does not
    hold from the stored run: only what the attribution (and then the roofline) gives is new."""
    a = d.attribution
    stored = {s.line: s for s in run.lines}
    line_kept = [f.name for f in dataclasses.fields(LineStat) if f.name not in ATTRIBUTED_LINE | ROOFLINE_LINE]
    for i, s in enumerate(a.lines):
        old = stored.get(s.line)
        if old is not None:
            a.lines[i] = dataclasses.replace(s, **{name: getattr(old, name) for name in line_kept})
    totals_kept = [f.name for f in dataclasses.fields(Totals) if f.name not in ATTRIBUTED_TOTALS | ROOFLINE_TOTALS]
    a.totals = dataclasses.replace(a.totals, **{name: getattr(run.totals, name) for name in totals_kept})


def find_insights(d: Derived, inp: Inputs) -> None:
    a = d.attribution
    d.insights += insights.find_insights(a, inp.device.device_label, inp.device.on_device, inp.iters, inp.capture)
    d.insights += memory.temporary_insights(a.lines, a.totals, inp.target)


def set_roofline(d: Derived, inp: Inputs) -> None:
    a = d.attribution
    a.totals.measured = roofline.measured_totals(a.lines)  # the device's own figures, with or without ceilings
    if a.totals.flops is None:
        return  # no call recorded input shapes: no work to set against the ceilings
    device = inp.stored.device if inp.stored is not None else inp.ceilings()
    if device is None:
        return
    d.device = device
    roofline.assign(a.lines, a.totals, device, on_device=inp.device.on_device)
    d.insights += roofline.headroom_insights(a.lines, a.totals)


STEPS: tuple[tuple[str, Callable[[Derived, Inputs], None]], ...] = (
    ("shapes", shapes),
    ("insights", find_insights),
    ("roofline", set_roofline),
)
