"""Re-derive a stored run's attribution and insights from its `trace.json`, without running the
function again: a better rule applies to old runs too (`oplens analyze RUN`). Nothing is rewritten.

Parent side, no torch: the trace is read as JSON (analysis/chrome_trace.py) and goes through the two
steps `profile` takes: the events each op's device time comes from (analysis/sources.py, following the
run's stored choice: the runtime's executions where it used them, read again from the tables kept with
it), then the chain of derived views, once (analysis/derive.py). What the trace does not hold stays as
stored: each line's work and memory (from the call recorded with input shapes), the ceilings, the
wall times, the compile figures and the record of the device-time sources.
"""

from __future__ import annotations

import copy
from pathlib import Path

from oplens.analysis import sources
from oplens.analysis.chrome_trace import read_events
from oplens.analysis.columns import AnyEvents
from oplens.analysis.derive import Inputs, derive
from oplens.analysis.sidebyside import calls_of
from oplens.analysis.stats import ESTIMATORS
from oplens.backends import registry
from oplens.backends.spec import RuntimeTime
from oplens.records.errors import OpLensError, bad_input
from oplens.records.run import Run, SourceRef

NOTE = "re-analysed from the stored trace.json (nothing rewritten); intermediate-tensor sizes are not re-derived"


def reanalyze(run: Run) -> Run:
    """A copy of `run` with its lines, ops, totals and insights derived again from its trace."""
    trace = Path(run.run_dir) / run.artifacts.trace_json if run.artifacts.trace_json else None
    if trace is None or not trace.is_file():
        raise bad_input(
            f"run {run.run_id} has no trace.json to analyse ({trace or 'none recorded'})",
            "profile the function again: every run keeps its trace",
        )
    try:
        events: AnyEvents = read_events(trace)
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise bad_input(f"cannot read {trace}: {e}", "is the file complete? profile again for a fresh trace") from None
    if run.config.side_by_side is not None:  # a compare's shared trace: this variant's calls only
        events = calls_of(events, run.config.side_by_side.trace_calls)
    fused: dict[str, list[SourceRef]] = {}
    for line in run.lines:
        for region in line.compiled:
            fused.setdefault(region.name, region.fused)
    facts = registry.facts_of(run.backend.name)
    rt, runtime_note = _runtime_time(run, fused)
    inputs = Inputs(events, run.config.iters, run.target, facts, fused, stored=run, statement=run.config.statement)
    chosen = sources.choose(inputs, runtime=rt)
    derived = derive(chosen.inputs, attribution=chosen.attribution)
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
    if chosen.note:
        again.backend.note += f"; {chosen.note}"
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
