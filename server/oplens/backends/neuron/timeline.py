"""A Neuron run's device work for the exports' timelines (issue 41): each NeuronCore execution of the run's system
trace (systrace.py's rules place it on the op that launched it) on the profiler's clock, and Neuron Explorer's own
Perfetto traces of the same session (explorer.perfetto_traces).

The clock. Rule flow links each execution to its launch through the runtime's own events, on the framework's clock
(systrace checks every link's time against the iterations): the device times are used as they are. Rules mapping and
order are clock-free ("no wall-clock is ever compared against the trace's timebase", Tilebench): each iteration's
executions keep their own spacing and are shifted together by the least amount that starts none of them before its
launching op. The timeline says which (`DeviceTimeline.clock`), and each slice carries its device-clock start.
"""

from __future__ import annotations

from pathlib import Path

from oplens.backends.neuron import explorer, runtime, systrace
from oplens.backends.neuron.artifacts import SYSTEM_PROFILE
from oplens.backends.spec import DeviceSlice, DeviceTimeline
from oplens.records.run import Run

SAME_CLOCK = "the system trace's own times: rule flow linked every execution to its launch on the framework's clock"
ALIGNED = ("aligned per call: rule {rule} places executions without a shared clock, so each call's executions keep "
           "their spacing and start no earlier than the ops that launched them")  # fmt: skip


def device_timeline(run: Run, run_dir: Path, scratch: Path | None) -> DeviceTimeline:
    out = DeviceTimeline()
    art = run.artifacts
    session = run_dir / art.device_profile_dir if art.device_profile_dir else None
    if session is None or not all((session / name).is_file() for name in SYSTEM_PROFILE):
        out.problems.append(f"no system trace in the run's Neuron profile ({' + '.join(SYSTEM_PROFILE)}): profile with "
                            "RUNTIME in --neuron-modes (the default DEVICE,RUNTIME) for the NeuronCore executions")  # fmt: skip
        return out
    if not art.processed_system_trace:
        out.problems.append("the run keeps no processed system trace (neuron-explorer was not found when it ran): no "
                            "NeuronCore executions on the timeline")  # fmt: skip
    else:
        _place(run, run_dir, out)
    if scratch is None:
        return out
    out.files, why = explorer.perfetto_traces(session, scratch)
    if why:
        out.problems.append(f"no Neuron Explorer trace beside it: {why}")
    return out


def _place(run: Run, run_dir: Path, out: DeviceTimeline) -> None:
    read = runtime.placed_executions(run_dir, run.artifacts, run.target.def_line or run.target.first_line)
    if isinstance(read, str):
        out.problems.append(read)
        return
    st, framework = read
    if not st.rule:
        out.problems.append("the NeuronCore executions were not placed on their ops: " + "; ".join(st.problems))
        return
    launched_at = {e.correlation_id: e.start_ns for e in framework if e.correlation_id and not e.on_device}
    shift = _shifts(st, launched_at)
    out.clock = SAME_CLOCK if st.rule == systrace.RULE_FLOW else ALIGNED.format(rule=st.rule)
    for p in st.placed:
        e = p.execution
        core = e.nc_idx if e.nc_idx is not None else 0
        args = {"model_id": e.model_id, "line": p.line, "op": p.op, "call": p.iteration, "device_start_ns": e.start_ns,
                "physical_cores": e.pcores}  # fmt: skip
        if p.covered_ops:
            args["covered_ops"] = list(p.covered_ops)
        out.slices.append(DeviceSlice(f"NeuronCore {core}", f"model {e.model_id} · L{p.line} {p.op}",
                                      (e.start_ns + shift.get(p.iteration, 0)) / 1e3, e.duration_ns / 1e3, p.correlation_id,
                                      args))  # fmt: skip


def _shifts(st: systrace.SysTraceTime, launched_at: dict[int, int]) -> dict[int, int]:
    """Per call, the ns added to its executions' device times (absent: 0): none on one clock (rule flow), else the
    least that starts none before its launching op."""
    need: dict[int, int] = {}
    if st.rule == systrace.RULE_FLOW:
        return need
    for p in st.placed:
        at = launched_at.get(p.correlation_id)
        if at is not None:
            late = at - p.execution.start_ns
            need[p.iteration] = max(need.get(p.iteration, late), late)
    return need
