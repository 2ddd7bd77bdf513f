"""The parent side's face of the Neuron backend: options, checks, artifacts, commands (no torch)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from oplens.backends.neuron import (
    adaptive,
    checks,
    commands,
    doctor,
    engines,
    environment,
    explorer,
    runtime,
    systrace,
    timeline,
    venvs,
)
from oplens.backends.neuron.facts import NEURON
from oplens.backends.neuron.options import DEFAULT_MAX_EVENTS_PER_NC, MODES, NeuronOptions, parse
from oplens.backends.spec import BackendSpec, DeviceTimeline, DoctorContext, InterpreterAdvice, RuntimeTime
from oplens.records.doctor import Check
from oplens.records.errors import OpLensError
from oplens.records.format import fmt_bytes, fmt_us
from oplens.records.overview import AnyRun
from oplens.records.run import Artifacts, EngineTime, Run, SourceRef

PAIR_ROWS = 5  # NEFF/NTFF pairs listed by name; the rest are counted


class NeuronSpec(BackendSpec[NeuronOptions]):
    facts = NEURON
    device_class = "oplens.backends.neuron.device:NeuronBackend"
    options_type = NeuronOptions
    commands = (commands.EXPLORER,)
    doctor_probe = "oplens.backends.neuron.host:facts"

    def parse_options(self, raw: Mapping[str, Any], workspace: Path) -> NeuronOptions:
        return parse(raw, workspace)

    def add_cli_options(self, parser: argparse.ArgumentParser) -> None:
        n = parser.add_argument_group("Neuron (with --backend neuron or auto)")
        n.add_argument("--neuron-modes", metavar="MODES",
                       help=f"profile modes, comma-separated: {', '.join(MODES)} (default: DEVICE,RUNTIME; "
                            "DEVICE reserves ~5 GB of HBM on Trn2)")  # fmt: skip
        n.add_argument("--neuron-cores", metavar="LIST", help="NeuronCores to capture, e.g. 0 or 0,1 or 0-3 (default: all)")
        n.add_argument("--neuron-max-events", type=int, metavar="N",
                       help=f"trace events kept per NeuronCore (runtime default {DEFAULT_MAX_EVENTS_PER_NC:,}); "
                            "raise it when events are dropped")  # fmt: skip
        n.add_argument("--neff-cache-dir", metavar="DIR",
                       help="where the compiled NEFFs are kept and copied into the profile (set before any compile)")  # fmt: skip
        n.add_argument("--neuron-precache-node-info", action=argparse.BooleanOptionalAction, default=None,
                       help="NeuronConfig's precache_node_info: NEFF metadata during the warm-up (default: on)")  # fmt: skip
        n.add_argument("--neuron-debug-info", action=argparse.BooleanOptionalAction, default=None,
                       help="compile with source locations (XLA_IR_DEBUG=1, XLA_HLO_DEBUG=1, and NEURON_FRAMEWORK_DEBUG=1 "
                            "for older releases): a compiled region's device time split over its lines (default: "
                            "where you exported one of them)")  # fmt: skip
        n.add_argument("--neuron-with-stack", action=argparse.BooleanOptionalAction, default=None,
                       help="torch.profiler's with_stack, so that Neuron Explorer names framework events file(line) "
                            "(default: on)")  # fmt: skip
        n.add_argument("--neuron-exact", action="store_true", default=None,
                       help="deterministic mode around the profiled calls (torch.use_deterministic_algorithms), which "
                            "turns off Adaptive Eager Execution: one device execution per op, each on its own line "
                            "(slower; see docs/benchmarks.md)")  # fmt: skip
        n.add_argument("--neuron-measured", action="store_true", default=None,
                       help="keep the device profile in the system trace's ingest, so each line gets its measured "
                            "MFU, MBU and HBM bytes from Neuron Explorer's per-op tables (slower to process)")  # fmt: skip

    def cli_options(self, args: argparse.Namespace) -> dict[str, Any]:
        given = {
            "modes": args.neuron_modes,
            "capture_enabled_for_nc": args.neuron_cores,
            "max_events_per_nc": args.neuron_max_events,
            "neff_cache_dir": args.neff_cache_dir,
            "precache_node_info": args.neuron_precache_node_info,
            "debug_info": args.neuron_debug_info,
            "with_stack": args.neuron_with_stack,
            "exact": args.neuron_exact,
            "measured": args.neuron_measured,
        }
        return {k: v for k, v in given.items() if v is not None}

    def cli_flags(self) -> str:
        return "--neuron-*/--neff-cache-dir"

    def worker_environment(self, options: NeuronOptions, run_dir: Path, env: Mapping[str, str]) -> dict[str, str]:
        return environment.before_import(options, run_dir, env)

    def warm_worker_environment(self, cache_root: Path, env: Mapping[str, str],
                                options: NeuronOptions | None = None) -> dict[str, str]:  # fmt: skip
        return environment.warm_worker(cache_root, env, options)

    def run_warnings(
        self, run: AnyRun, options: NeuronOptions, run_dir: Path, log_text: str, env: Mapping[str, str]
    ) -> list[str]:
        return checks.run_warnings(run, options, run_dir, log_text, env)

    def complete_run(self, run: Run, run_dir: Path) -> None:
        if run.backend.name == "neuron":  # where the engine breakdown comes from (never estimated)
            run.engine_note = engines.not_processed_note(run, run.run_id or run_dir.name, explorer.tool_installed())

    def doctor_checks(self, context: DoctorContext) -> list[Check]:
        return doctor.doctor_checks(context)

    def runtime_time(
        self, run_dir: Path, artifacts: Artifacts, def_line: int, *, ingest: bool,
        fused: Mapping[str, list[SourceRef]] | None = None, progress: Callable[[str, int, int], None] | None = None,
    ) -> RuntimeTime | None:  # fmt: skip
        rt = runtime.runtime_time(run_dir, artifacts, def_line, ingest=ingest, fused=fused, progress=progress)
        st = systrace.last(runtime.tables_dir(run_dir)) if rt.tables else None  # this read's, where it gave figures
        if st is not None and st.rule:  # the executions the runtime fused, named on every line they covered
            rt.fused = systrace.fusions(st)
        rt.cpu_fallback = adaptive.read_fallback(run_dir)
        return rt

    def device_timeline(self, run: Run, run_dir: Path, scratch: Path | None) -> DeviceTimeline | None:
        return timeline.device_timeline(run, run_dir, scratch)

    def explain_failure(self, error: OpLensError, requested: str, options: NeuronOptions) -> None:
        checks.explain_failure(error, requested, options)

    def describe_artifacts(self, run: Run) -> list[str]:
        art = run.artifacts
        if not (art.profile_output_dir or art.ntffs or art.neff_ntff_pairs):
            return []
        config = run.backend.details.get("neuron_config", {})
        modes = ", ".join(config.get("modes", [])) if isinstance(config, dict) else ""
        lines = [f"Neuron profile {art.device_profile_dir or art.profile_output_dir}" + (f"  (modes {modes})" if modes else "")]
        if art.system_trace_files:
            lines.append(f"  system traces: {', '.join(sorted({Path(f).name for f in art.system_trace_files}))}")
        for kind, files in (("NEFF", art.neffs), ("NTFF", art.ntffs)):
            names = [Path(f.path).name + (" (empty)" if kind == "NTFF" and getattr(f, "bytes", 1) == 0 else "") for f in files]
            more = f" … {len(names) - PAIR_ROWS} more (see --json)" if len(names) > PAIR_ROWS else ""
            lines.append(f"  {kind}s: {', '.join(names[:PAIR_ROWS]) + more or 'none'}")
        for pair in art.neff_ntff_pairs[:PAIR_ROWS]:
            size = fmt_bytes(pair.ntff_bytes) if pair.ntff_bytes else "empty"
            lines.append(f"  NEFF/NTFF {pair.hash}: {Path(pair.neff).name} ↔ {Path(pair.ntff).name} ({size})")
        if art.trace_json:
            lines.append(f"  framework trace: {art.trace_json}")
        if run.backend.details.get("api"):  # which generation of TorchNeuron's profiling API, by its signatures
            lines.append(f"  profiling API: {run.backend.details['api']} ({run.backend.details.get('api_detected_by', '')})")
        aee = run.backend.details.get("adaptive_eager")
        if isinstance(aee, dict):  # whether one execution may have carried several lines' ops (adaptive.py)
            lines.append(f"  Adaptive Eager Execution: {'on' if aee.get('active') else 'off'} ({aee.get('decided_by', '')})")
        fallback = run.backend.details.get("cpu_fallback")
        if isinstance(fallback, list) and fallback:
            lines.append(f"  ran on the CPU (no Neuron kernel): {', '.join(fallback)}")
        elif isinstance(fallback, str):  # why the list was not read
            lines.append(f"  CPU fallback {fallback}")
        lines.append(f"  open in Neuron Explorer: oplens {commands.EXPLORER.name} {run.run_id}")
        for g in run.engine_graphs:  # those on a line are shown with the lines
            if g.line is None:
                per_call = f"{g.calls} call(s), {fmt_us(g.device_us)} per call"
                lines.append(f"  graph {g.graph} (calling line unknown, {per_call}): {engine_text(g.engines)}")
        if run.engine_note:
            lines.append(f"  {run.engine_note}")
        return lines

    def interpreter_advice(self, python: str, root: Path) -> InterpreterAdvice | None:
        return venvs.advice(python, root)


def engine_text(times: list[EngineTime]) -> str:
    return ", ".join(f"{e.engine} {fmt_us(e.active_us)} ({e.pct:.0f}%)" for e in times) or "no engine activity"
