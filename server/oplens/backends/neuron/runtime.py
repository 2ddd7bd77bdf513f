"""A Neuron run's device time from the runtime's system trace (issue 20, source (b)), parent side, no torch.

The worker calls this once per run, after the profile: the run's session folder (`<instance>_pid_<pid>/<ts>/`,
with `ntrace.pb` + `trace_info.pb`) is processed by `neuron-explorer view -d SESSION --ingest-only
--data-path DP --display-name N --ignore-instruction-trace --ignore-dma-trace --ignore-event-trace`, the
command users on trn2 time with ("Only the system trace is needed for timing",
`Deep-Learning-Profiling-Tools/Tilebench`, `tilebench/core/nki_timer.py`); the instruction trace is kept
only where a compiled graph's device time is to be split over its lines (item 2). The processed tables stay
with the run (`<run>/neuron_system_trace/profiles/global/system_trace@latest/`), so `oplens analyze`
reads them again without neuron-explorer. `systrace.py` gives each execution to its launching op (by flow
links, by the early NeuronProfiler's framework mapping where the run holds one, `mapping.py`, else by order); its
framework side is the run's trace.json as TorchNeuron wrote it (the trace Explorer merges with the
runtime's: same threads, same clock), linked back to the profile's ops by correlation id.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from oplens.analysis.attribution import COMPILED_REGION
from oplens.analysis.chrome_trace import read_events
from oplens.backends.neuron import engines, explorer, systrace
from oplens.backends.neuron import mapping as fwmap
from oplens.backends.neuron.artifacts import SYSTEM_PROFILE
from oplens.backends.neuron.fused import NO_DEBUG_FIX, neff_line_time, region_shares
from oplens.backends.spec import RuntimeTime
from oplens.records.errors import OpLensError
from oplens.records.run import SYSTEM_TRACE, Artifacts, SourceRef

# <run>/neuron_system_trace: the ingest's --data-path, beside (not inside) the runtime's own output, which
# `oplens explorer` ingests as a whole
DATA_DIR = "neuron_system_trace"
DISPLAY_NAME = "system_trace"
TIMING_FLAGS = ("--ignore-dma-trace", "--ignore-event-trace")  # Tilebench's: the tables timing needs, no more
NO_INSTRUCTIONS = "--ignore-instruction-trace"


def tables_dir(run_dir: Path) -> Path:
    """Where the run's processed system trace is kept."""
    return engines.processed_dir(run_dir / DATA_DIR, DISPLAY_NAME)


def ingest_command(tool: Path, session: Path, data_path: Path, device_profile: bool) -> list[str]:
    flags = [*TIMING_FLAGS] if device_profile else [NO_INSTRUCTIONS, *TIMING_FLAGS]
    return [str(tool), "view", "-d", str(session), "--ingest-only", "--data-path", str(data_path),
            "--display-name", DISPLAY_NAME, *flags]  # fmt: skip


def runtime_time(
    run_dir: Path, art: Artifacts, def_line: int, *, ingest: bool, fused: Mapping[str, list[SourceRef]] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> RuntimeTime:  # fmt: skip
    """Each execution in the run's system trace as a device event linked to its launching op, and each
    compiled region's split over its fused lines; or why none."""
    fused = fused or {}

    def nothing(why: str) -> RuntimeTime:
        return RuntimeTime(SYSTEM_TRACE, [], 0.0, why)

    session = run_dir / art.device_profile_dir if art.device_profile_dir else None
    if session is None or not all((session / name).is_file() for name in SYSTEM_PROFILE):
        return nothing(f"no system trace in the run's Neuron profile ({' + '.join(SYSTEM_PROFILE)}): "
                       "profile with RUNTIME in --neuron-modes (the default DEVICE,RUNTIME)")  # fmt: skip
    folder = tables_dir(run_dir)
    if not folder.is_dir():
        if not ingest:
            return nothing(f"the run keeps no processed system trace ({folder}): it was not ingested when it ran")
        if not engines.parquet_reader():
            return nothing(f"not read: the processed system trace is Parquet and {engines.PARQUET_HINT}")
        try:
            tool = explorer.find_tool()
        except OpLensError as e:
            return nothing(f"not read: {e.message}; {e.detail}")
        if progress is not None:
            progress("ingesting", 0, 1)
        cmd = ingest_command(tool, session, run_dir / DATA_DIR, device_profile=bool(fused))
        try:
            explorer.run_ingest(cmd, run_dir, "system trace", explorer.INGEST_TIMEOUT_S)
        except OpLensError as e:
            return nothing(f"not read: {e.message} ({e.detail.splitlines()[0] if e.detail else 'no output'})")
        if progress is not None:
            progress("ingesting", 1, 1)
        if not folder.is_dir():
            return nothing(f"neuron-explorer left no processed profile at {folder}, where the docs put it")
    trace = run_dir / art.trace_json if art.trace_json else None
    if trace is None or not trace.is_file():
        return nothing("no framework trace (trace.json) in the run's profile to give the executions to their ops")
    try:
        framework = read_events(trace)
    except (OSError, ValueError, KeyError, TypeError) as e:
        return nothing(f"the framework trace {trace} does not read ({e})")
    # the early NeuronProfiler's framework_mapping_*.json (mapping.py), in its output dir: the mapping rule
    fm, fm_problem = None, ""
    found_map = fwmap.find(run_dir / art.profile_output_dir) if art.profile_output_dir else None
    if found_map is not None:
        fm, fm_problem = fwmap.read(found_map)
    st = systrace.line_device_time(folder, def_line, framework, fm, fwmap.sequence_numbers(trace) if fm else None)
    if fm_problem:
        st.problems.append(f"rule mapping: {fm_problem}")
    tables = str(folder.relative_to(run_dir))
    region_lines, split_note = _splits(folder, st, fused)
    warned = explorer_warnings(folder)
    if not st.rule:
        return RuntimeTime(SYSTEM_TRACE, [], 0.0, "; ".join(st.problems) or "no execution placed", tables,
                           region_lines, split_note, warned)  # fmt: skip
    found = (f"{st.executions} execution(s) in {tables}, "
             + (f"{st.pcores_per_execution} physical-core rows each merged, " if st.pcores_per_execution > 1 else "")
             + f"given to their ops by rule {st.rule}"
             + (f"; {st.outside_us:.1f} µs outside the profiled iterations left out" if st.outside_us else "")
             + (f" ({'; '.join(st.problems)})" if st.problems else ""))  # fmt: skip
    return RuntimeTime(SYSTEM_TRACE, systrace.device_events(st), st.total_mean_us(), found, tables, region_lines,
                       split_note, warned)  # fmt: skip


def explorer_warnings(folder: Path) -> list[str]:
    """The processed profile's `Warning` table (profile-schema-reference.rst: "Warnings produced during
    profile processing. Used to communicate the possibility of missing or unexpected data", `message`,
    `category`), as the run's warnings; none where the table is absent (written only when there are some)."""
    try:
        table = engines.read_table(folder, "Warning", ["message", "category"])
    except Exception:  # a table that is not the documented Parquet (pyarrow raises its own errors)
        return []
    if table is None:
        return []
    return [f"Neuron Explorer, processing the system trace: {c or 'Warning'}: {m}"
            for m, c in zip(table["message"], table["category"], strict=False) if m]  # fmt: skip


def _splits(folder: Path, st: systrace.SysTraceTime, fused: Mapping[str, list[SourceRef]]
            ) -> tuple[dict[str, dict[tuple[str, int, str], float]], str]:  # fmt: skip
    """Each compiled region's lines as fractions of its graph's device time (fused.py): its graphs are the
    models its executions ran, where the system trace placed them."""
    if not fused:
        return {}, ""
    models: dict[str, set[str]] = {name: set() for name in fused}
    for p in st.placed:
        if p.op.startswith(COMPILED_REGION):
            models.setdefault(p.op, set()).add(p.execution.model_id)
    try:
        per_neff, why = neff_line_time(folder, [r for refs in fused.values() for r in refs])
    except Exception as e:  # a table that is not the documented Parquet (pyarrow raises its own errors)
        return {}, f"no per-line split of compiled graphs: the device profile's tables do not read ({type(e).__name__}: {e})"
    shares = region_shares(per_neff, models)
    missing = [name for name in fused if name not in shares]
    if missing and not why:
        why = f"no per-line split of {', '.join(missing)}: none of its graphs' instructions name a line; {NO_DEBUG_FIX}"
    return shares, why
