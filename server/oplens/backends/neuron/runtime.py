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

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from oplens.analysis.attribution import COMPILED_REGION, RawEvent
from oplens.analysis.chrome_trace import read_events
from oplens.backends.neuron import efficiency, engines, explorer, schema, systrace
from oplens.backends.neuron import mapping as fwmap
from oplens.backends.neuron.artifacts import SYSTEM_PROFILE
from oplens.backends.neuron.fused import NO_DEBUG_FIX, neff_line_time, region_shares
from oplens.backends.neuron.options import MEASURED_ENV
from oplens.backends.spec import RuntimeTime
from oplens.records.atomic import write_json_atomic
from oplens.records.errors import OpLensError
from oplens.records.run import SYSTEM_TRACE, Artifacts, EngineTime, LineStat, MeasuredEfficiency, SourceRef

# <run>/neuron_system_trace: the ingest's --data-path, beside (not inside) the runtime's own output, which
# `oplens explorer` ingests as a whole
DATA_DIR = "neuron_system_trace"
DISPLAY_NAME = "system_trace"
TIMING_FLAGS = ("--ignore-dma-trace", "--ignore-event-trace")  # Tilebench's: the tables timing needs, no more
NO_INSTRUCTIONS = "--ignore-instruction-trace"
NO_DEVICE_PROFILE = "--ignore-device-profile"  # documented (get-started.rst, "Useful flags": "Skip device-level traces")
INGEST_RECORD = "ingest.json"  # in DATA_DIR: which ingest step processed the tables, and what the others said
# Where MEASURED_ENV is 1 (--neuron-measured), the system-trace ingest keeps the device profile, so Neuron
# Explorer's per framework op tables (FrameworkNode: MFU, HFU, MBU, HBM bytes) are there and each line gets its
# measured efficiency (efficiency.py); slower to process on large profiles.
NOT_MEASURED = (f"measured MFU/MBU: none, each line's bound is the roofline's estimate (the ingest left out the device "
                f"profile, where Neuron Explorer's per framework op tables are; --neuron-measured (or {MEASURED_ENV}=1 "
                "exported) keeps it, with DEVICE in --neuron-modes)")  # fmt: skip


@dataclass
class NeuronRuntimeTime(RuntimeTime):
    """The system trace's record, with each line's efficiency as the device measured it (efficiency.py)."""

    measured: dict[int, MeasuredEfficiency] = field(default_factory=dict)
    # line -> its engine breakdown per call and the graphs it came from (efficiency.line_engines)
    engines: dict[int, tuple[list[EngineTime], list[str]]] = field(default_factory=dict)

    def split(self, lines: list[LineStat]) -> None:
        """The compiled regions' split, then each line's measured figures, its bound from them, and its engines."""
        super().split(lines)
        for s in lines:
            m = self.measured.get(s.line)
            s.measured = m
            if m is not None and m.bound:
                s.bound, s.bound_from = m.bound, "measured"
            if s.line in self.engines:
                s.engines, graphs = self.engines[s.line]
                s.engine_graph = ", ".join(graphs)


@dataclass(frozen=True)
class IngestStep:
    """One way of running the system-trace ingest; tried in order until one leaves the processed tables."""

    name: str  # in words, for the run's device_time note
    flags: tuple[str, ...]
    documented: bool


def ingest_steps(device_profile: bool) -> list[IngestStep]:
    """The ingest's flags in the order tried. First Tilebench's (`--ignore-instruction-trace --ignore-dma-trace
    --ignore-event-trace`, seen in one trn2 user's code, documented nowhere: the fastest where the tool takes them);
    then the documented flags only (get-started.rst: `view -d DIR --ingest-only --display-name N` with
    `--ignore-device-profile`, and `--data-path` from how-to-analyze-profile-output.rst); then no optional flag at
    all. Where a compiled region's lines are to be split (`device_profile`), the instruction trace is kept: no
    `--ignore-instruction-trace`, no `--ignore-device-profile`."""
    steps = [
        IngestStep("Tilebench's flags (undocumented)", TIMING_FLAGS if device_profile else (NO_INSTRUCTIONS, *TIMING_FLAGS),
                   documented=False),
        IngestStep("the documented flags only", () if device_profile else (NO_DEVICE_PROFILE,), documented=True),
        IngestStep("no optional flags", (), documented=True),
    ]  # fmt: skip
    unique: list[IngestStep] = []
    for step in steps:
        if all(step.flags != u.flags for u in unique):
            unique.append(step)
    return unique


def tables_dir(run_dir: Path) -> Path:
    """Where the run's processed system trace is kept."""
    return engines.processed_dir(run_dir / DATA_DIR, DISPLAY_NAME)


def ingest_command(tool: Path, session: Path, data_path: Path, device_profile: bool, step: IngestStep | None = None) -> list[str]:
    flags = list((step or ingest_steps(device_profile)[0]).flags)
    return [str(tool), "view", "-d", str(session), "--ingest-only", "--data-path", str(data_path),
            "--display-name", DISPLAY_NAME, *flags]  # fmt: skip


def ingest_system_trace(tool: Path, session: Path, run_dir: Path, device_profile: bool) -> tuple[str, str]:
    """Process the session's system trace into `tables_dir(run_dir)`, each step of `ingest_steps` in turn until one
    leaves the tables; the record (which step, what the others said) is kept beside them (INGEST_RECORD) for
    `oplens analyze`. Returns (what was done in words, "") or ("", why nothing was processed, every step named)."""
    folder, tried = tables_dir(run_dir), []
    for step in ingest_steps(device_profile):
        cmd = ingest_command(tool, session, run_dir / DATA_DIR, device_profile, step)
        try:
            explorer.run_ingest(cmd, run_dir, "system trace", explorer.INGEST_TIMEOUT_S)
        except OpLensError as e:
            if e.kind == "timeout":  # a slow ingest is slow with any flags: not tried again
                tried.append(f"{step.name} ({' '.join(step.flags) or 'none'}): {e.message}")
                break
            said = explorer.tool_said(e)
            tried.append(f"{step.name} ({' '.join(step.flags) or 'none'}): {e.message}" + (f": {said}" if said else ""))
            continue
        if not folder.is_dir():
            tried.append(f"{step.name}: neuron-explorer left no processed profile at {folder}, where the docs put it")
            continue
        done = f"ingested by neuron-explorer view --ingest-only with {step.name} ({' '.join(step.flags) or 'none'})"
        if tried:
            done += " after " + "; ".join(tried)
        write_json_atomic(run_dir / DATA_DIR / INGEST_RECORD, {"step": step.name, "flags": list(step.flags),
                                                                "documented": step.documented, "note": done})  # fmt: skip
        return done, ""
    return "", "not read: neuron-explorer processed no system trace; tried, in order: " + "; ".join(tried)


def ingest_note(run_dir: Path) -> str:
    """How the run's kept tables were processed (INGEST_RECORD), "" for runs older than the record."""
    try:
        data = json.loads((run_dir / DATA_DIR / INGEST_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    return str(data.get("note", "")) if isinstance(data, dict) else ""


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
        keep = bool(fused) or os.environ.get(MEASURED_ENV) == "1"
        _, why = ingest_system_trace(tool, session, run_dir, device_profile=keep)
        if progress is not None:
            progress("ingesting", 1, 1)
        if why:
            return nothing(why)
    how = ingest_note(run_dir)
    read = placed_executions(run_dir, art, def_line)
    if isinstance(read, str):
        return nothing(read)
    st, _ = read
    tables = str(folder.relative_to(run_dir))
    region_lines, split_note = _splits(folder, st, fused)
    warned = explorer_warnings(folder) + schema_warnings(folder)
    version = schema.of(folder).label
    if not st.rule:  # no figure (tables ""): a 0 µs total here would be a zero read from what is not there
        return RuntimeTime(SYSTEM_TRACE, [], 0.0, "; ".join(st.problems) or "no execution placed", "",
                           region_lines, split_note, warned)  # fmt: skip
    measured, measured_note = _measured(folder, st)
    warned += [w for w in measured_note if w not in warned]
    per_line_engines: dict[int, tuple[list[EngineTime], list[str]]] = {}
    try:
        per_line_engines = efficiency.line_engines(folder, st.placed, st.iterations)
    except Exception as e:  # a table that is not the documented Parquet (pyarrow raises its own errors)
        warned.append(f"no engine breakdown per line: the device profile's tables do not read ({type(e).__name__}: {e})")
    found = ((f"{how}; " if how else "") + f"{st.executions} execution(s) in {tables} ({version}), "
             + (f"{st.pcores_per_execution} physical-core rows each merged, " if st.pcores_per_execution > 1 else "")
             + f"given to their ops by rule {st.rule}"
             + (f"; {st.outside_us:.1f} µs outside the profiled iterations left out" if st.outside_us else "")
             + (f" ({'; '.join(st.problems)})" if st.problems else ""))  # fmt: skip
    if measured:
        found += f"; measured MFU/MBU on {len(measured)} line(s)"
    elif engines.device_profiles(folder):  # the device profile was kept: the warnings name what it lacks
        found += ("; measured MFU/MBU: none, each line's bound is the roofline's estimate (the device profile holds no "
                  "framework op figures for the graphs the lines ran; see the warnings)")  # fmt: skip
    else:
        found += f"; {NOT_MEASURED}"
    return NeuronRuntimeTime(SYSTEM_TRACE, systrace.device_events(st), st.total_mean_us(), found, tables, region_lines,
                             split_note, warned, measured=measured, engines=per_line_engines)  # fmt: skip


def placed_executions(run_dir: Path, art: Artifacts, def_line: int) -> tuple[systrace.SysTraceTime, list[RawEvent]] | str:
    """The run's processed system trace read against its framework trace (each execution placed on its launching op
    by systrace's rules) with the framework's events; or why it cannot be."""
    folder = tables_dir(run_dir)
    trace = run_dir / art.trace_json if art.trace_json else None
    if trace is None or not trace.is_file():
        return "no framework trace (trace.json) in the run's profile to give the executions to their ops"
    try:
        framework = read_events(trace)
    except (OSError, ValueError, KeyError, TypeError) as e:
        return f"the framework trace {trace} does not read ({e})"
    # the early NeuronProfiler's framework_mapping_*.json (mapping.py), in its output dir: the mapping rule
    fm, fm_problem = None, ""
    found_map = fwmap.find(run_dir / art.profile_output_dir) if art.profile_output_dir else None
    if found_map is not None:
        fm, fm_problem = fwmap.read(found_map)
    st = systrace.line_device_time(folder, def_line, framework, fm, fwmap.sequence_numbers(trace) if fm else None)
    if fm_problem:
        st.problems.append(f"rule mapping: {fm_problem}")
    return st, framework


def _measured(folder: Path, st: systrace.SysTraceTime) -> tuple[dict[int, MeasuredEfficiency], list[str]]:
    """Each line's measured efficiency from the kept tables (efficiency.py), and the schema's warnings for the
    tables read (a device profile whose framework op table lacks a column is named, and that figure left out)."""
    try:
        m = efficiency.read(folder)
    except Exception as e:  # a table that is not the documented Parquet (pyarrow raises its own errors)
        return {}, [f"measured MFU/MBU: the device profile's framework op tables do not read ({type(e).__name__}: {e})"]
    has_device_profile = bool(engines.device_profiles(folder))
    warned = list(m.warnings)
    if not m.graphs and has_device_profile:  # a device profile without the per-op tables: say which are absent
        warned += [f"Neuron Explorer {schema.of(folder).label}: {w}" for w in m.missing]
    return efficiency.per_line(m, st.placed, st.iterations), warned


def schema_warnings(folder: Path) -> list[str]:
    """The processed system trace's schema warnings (schema.py): a major OpLens does not know, and each column it
    reads that a table lacks, with the version and the table/column."""
    try:
        return schema.warnings(folder, ["SystemProfileEvents", "Flow", "Warning"])
    except Exception as e:  # a Metadata table that is not the documented Parquet
        return [f"Neuron Explorer's Metadata table in {folder} does not read ({type(e).__name__}: {e})"]


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
