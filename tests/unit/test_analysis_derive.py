"""The chain of derived views (analysis/derive.py) on a stored run and its trace: what each step
sets is what the chain says it sets, and a stored run derived again keeps every other field."""

from __future__ import annotations

import dataclasses

from oplens.analysis import roofline
from oplens.analysis.derive import (
    ATTRIBUTED_LINE,
    ATTRIBUTED_TOTALS,
    ROOFLINE_LINE,
    ROOFLINE_TOTALS,
    STEPS,
    Inputs,
    derive,
)
from oplens.backends.facts import CPU
from oplens.records.run import DeviceRoof, EngineTime, LineStat, Run, Temporary, Totals
from support.stored import stored_events, stored_run

CEILINGS = DeviceRoof(name="test", dtype_peaks={"float32": 1e11}, bytes_per_s=1e10, source="measured")


def stored() -> tuple[Run, list]:  # type: ignore[type-arg]
    return Run.from_dict(stored_run()), stored_events()


def changed(fresh: object, default: object) -> set[str]:
    return {f.name for f in dataclasses.fields(fresh) if getattr(fresh, f.name) != getattr(default, f.name)}  # type: ignore[arg-type]


def test_the_attribution_sets_only_the_fields_the_chain_says_it_does() -> None:
    run, events = stored()
    d = derive(Inputs(events, run.config.iters, run.target, CPU))
    assert d.attribution.lines and d.insights
    blank = LineStat(line=0, self_cpu_us=0, self_device_us=0, pct_device=0, pct_cpu=0, op_calls=0)
    set_by_attribution = set().union(*(changed(s, blank) for s in d.attribution.lines))
    assert set_by_attribution <= ATTRIBUTED_LINE, set_by_attribution - ATTRIBUTED_LINE
    assert changed(d.attribution.totals, Totals(0, 0, 0)) <= ATTRIBUTED_TOTALS


def test_the_roofline_sets_only_its_own_fields() -> None:
    run, events = stored()
    d = derive(Inputs(events, run.config.iters, run.target, CPU))
    before = [dataclasses.replace(s) for s in d.attribution.lines]
    for s in d.attribution.lines:
        s.flops, s.bytes, s.intensity, s.dtype = 1e6, 1e6, 1.0, "float32"
    totals_before = dataclasses.replace(d.attribution.totals)
    roofline.assign(d.attribution.lines, d.attribution.totals, CEILINGS, on_device=False)
    moved = set().union(*(changed(after, b) for after, b in zip(d.attribution.lines, before, strict=True)))
    assert moved - {"flops", "bytes", "intensity", "dtype"} <= ROOFLINE_LINE
    assert changed(d.attribution.totals, totals_before) <= ROOFLINE_TOTALS


def test_a_stored_run_derived_again_keeps_every_field_the_trace_does_not_hold() -> None:
    run, events = stored()
    line = run.lines[0]
    # figures only the shapes call or the vendor's processed profile give, on the stored run
    line.flops, line.bytes, line.intensity, line.dtype, line.alloc_bytes = 2e6, 4e6, 0.5, "float32", 4096
    line.temporary = Temporary(bytes=1 << 21, freed_line=line.line)
    line.engines = [EngineTime(engine="Tensor", active_us=1.5, pct=40.0)]
    line.engine_graph = "neff_1"
    run.totals.flops, run.totals.bytes, run.totals.peak_bytes, run.totals.memory = 2e6, 4e6, 8192, "host"
    run.device = CEILINGS
    d = derive(Inputs(events, run.config.iters, run.target, CPU, stored=run))
    again = next(s for s in d.attribution.lines if s.line == line.line)
    for name in ("flops", "bytes", "intensity", "dtype", "alloc_bytes", "temporary", "engines", "engine_graph"):
        assert getattr(again, name) == getattr(line, name), name
    assert (d.attribution.totals.flops, d.attribution.totals.peak_bytes, d.attribution.totals.memory) == (2e6, 8192, "host")
    assert d.attribution.totals.wall_us == run.totals.wall_us
    # and the roofline was set again, against the stored ceilings, with the new times
    assert d.device == CEILINGS and again.bound in ("compute", "memory", "overhead", "host")


def test_the_steps_run_in_the_documented_order_and_lap_each() -> None:
    run, events = stored()
    laps: dict[str, float] = {}
    derive(Inputs(events, run.config.iters, run.target, CPU), laps)
    assert [name for name, _ in STEPS] == ["shapes", "insights", "roofline"]
    assert list(laps) == ["attribute_ms", "shapes_ms", "insights_ms", "roofline_ms"]
