"""Re-derive a stored run's attribution and insights from its `trace.json`, without running the
function again: a better rule applies to old runs too (`oplens analyze RUN`). Nothing is rewritten.

Parent side, no torch: the trace is read as JSON (analysis/chrome_trace.py). What the trace does not
hold stays as stored: the input shapes of the insights' call (so the intermediate-tensor sizes are
not re-derived), the wall times and the compile figures.
"""

from __future__ import annotations

import copy
from pathlib import Path

from oplens.analysis import memory, roofline
from oplens.analysis.attribution import attribute
from oplens.analysis.chrome_trace import read_events
from oplens.analysis.insights import find_insights
from oplens.analysis.stats import ESTIMATORS
from oplens.records.errors import bad_input
from oplens.records.run import LineStat, Run, SourceRef, Totals

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
        events = read_events(trace)
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise bad_input(f"cannot read {trace}: {e}", "is the file complete? profile again for a fresh trace") from None
    fused: dict[str, list[SourceRef]] = {}
    for line in run.lines:
        for region in line.compiled:
            fused.setdefault(region.name, region.fused)
    # On the CPU the "device" time is the op's own CPU time; elsewhere kernels link to their op.
    device_time = "cpu" if run.backend.device_label == "CPU" else "linked"
    result = attribute(events, run.config.iters, run.target.def_line, device_time, fused)
    if not result.lines:
        raise bad_input(
            f"the trace of run {run.run_id} holds no OpLens line markers",
            "it was not written by an OpLens profile of a function; profile again",
        )
    again = copy.deepcopy(run)
    result.totals.wall_us = run.totals.wall_us
    _keep_work_and_memory(run, result.lines, result.totals)
    again.totals, again.lines, again.ops = result.totals, result.lines, result.ops
    found = find_insights(result, run.backend.device_label, run.backend.device_label != "CPU", run.config.iters)
    found += memory.temporary_insights(result.lines, result.totals, run.target)
    if run.device is not None:
        found += roofline.headroom_insights(result.lines, result.totals)
    again.insights = sorted(found, key=lambda i: i.line)
    again.estimators = dict(ESTIMATORS)
    again.backend.note = (run.backend.note + "; " if run.backend.note else "") + NOTE
    return again


def _keep_work_and_memory(run: Run, lines: list[LineStat], totals: Totals) -> None:
    """Work and memory come from the call recorded with input shapes and memory, which the trace
    does not hold: as stored."""
    stored = {s.line: s for s in run.lines}
    for s in lines:
        old = stored.get(s.line)
        if old is not None:
            s.flops, s.bytes, s.intensity, s.work_unknown = old.flops, old.bytes, old.intensity, old.work_unknown
            s.work_estimate, s.dtype = old.work_estimate, old.dtype
            s.alloc_bytes, s.freed_bytes, s.peak_bytes = old.alloc_bytes, old.freed_bytes, old.peak_bytes
            s.temporary = old.temporary
            s.engines, s.engine_graph = old.engines, old.engine_graph  # from Neuron's processed profile
    totals.flops, totals.bytes = run.totals.flops, run.totals.bytes
    totals.peak_bytes, totals.memory = run.totals.peak_bytes, run.totals.memory
    if run.device is not None:  # the bounds again, against the ceilings the run used, with the new times
        roofline.assign(lines, totals, run.device, on_device=run.backend.device_label != "CPU")
