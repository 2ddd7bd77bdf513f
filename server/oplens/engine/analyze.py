"""Re-derive a stored run's attribution and insights from its `trace.json`, without running the
function again: a better rule applies to old runs too (`oplens analyze RUN`). Nothing is rewritten.

Parent side, no torch: the trace is read as JSON (analysis/chrome_trace.py) and runs through the
chain of derived views `profile` runs (analysis/derive.py). What the trace does not hold stays as
stored: each line's work and memory (from the call recorded with input shapes), the ceilings, the
wall times and the compile figures.
"""

from __future__ import annotations

import copy
from pathlib import Path

from oplens.analysis.chrome_trace import read_events
from oplens.analysis.derive import Inputs, derive
from oplens.analysis.stats import ESTIMATORS
from oplens.backends import registry
from oplens.backends.spec import RuntimeTime
from oplens.records.errors import OpLensError, bad_input
from oplens.records.run import OP_TABLE, SYSTEM_TRACE, Run, SourceRef

NOTE = "re-analysed from the stored trace.json (nothing rewritten); intermediate-tensor sizes are not re-derived"
OP_TABLE_NOTE = ("this run's device time came from the op table, which trace.json does not hold: the lines "
                 "re-derived here carry the trace's device time only (the stored run keeps the op table's)")  # fmt: skip


def reanalyze(run: Run) -> Run:
    """A copy of `run` with its lines, ops, totals and insights derived again from its trace."""
    trace = Path(run.run_dir) / run.artifacts.trace_json if run.artifacts.trace_json else None
    if trace is None or not trace.is_file():
        raise bad_input(
            f"run {run.run_id} has no trace.json to analyse ({trace or 'none recorded'})",
            "profile the function again: every run keeps its trace",
        )
    try:
        events = read_events(trace)
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise bad_input(f"cannot read {trace}: {e}", "is the file complete? profile again for a fresh trace") from None
    fused: dict[str, list[SourceRef]] = {}
    for line in run.lines:
        for region in line.compiled:
            fused.setdefault(region.name, region.fused)
    facts = registry.facts_of(run.backend.name)
    rt, runtime_note = _runtime_time(run, fused)
    if rt is not None and run.device_time is not None and run.device_time.source == SYSTEM_TRACE:
        if rt.device_events:
            events = [e for e in events if not e.on_device] + rt.device_events
        else:
            runtime_note = (f"the runtime's trace the device time came from was not read again ({rt.found}): "
                            "lines carry 0 device time")  # fmt: skip
    derived = derive(Inputs(events, run.config.iters, run.target, facts, fused, stored=run, statement=run.config.statement))
    if rt is not None:
        rt.split(derived.attribution.lines)
    if not derived.attribution.lines:
        raise bad_input(
            f"the trace of run {run.run_id} holds no OpLens line markers",
            "it was not written by an OpLens profile of a function; profile again",
        )
    again = copy.deepcopy(run)
    a = derived.attribution
    again.totals, again.lines, again.ops, again.insights = a.totals, a.lines, a.ops, derived.insights
    again.estimators = dict(ESTIMATORS)
    again.backend.note = (run.backend.note + "; " if run.backend.note else "") + NOTE
    if run.device_time is not None and run.device_time.source == OP_TABLE:
        again.backend.note += f"; {OP_TABLE_NOTE}"
    if runtime_note:
        again.backend.note += f"; {runtime_note}"
    return again


def _runtime_time(run: Run, fused: dict[str, list[SourceRef]]) -> tuple[RuntimeTime | None, str]:
    """The device runtime's own trace of a run that kept one, read again from its processed tables (no
    vendor tool runs here): its executions and its compiled regions' per-line split."""
    if not run.artifacts.processed_system_trace:
        return None, ""
    try:
        spec = registry.get(run.backend.name)
    except OpLensError:
        return None, f"backend {run.backend.name!r} is unknown here: its runtime's trace was not read again"
    return spec.runtime_time(Path(run.run_dir), run.artifacts, run.target.def_line, ingest=False, fused=fused), ""
