"""What the parent side knows of a backend (no torch): `BackendSpec`, the commands a backend may
offer, and the options records of the simple backends.

A spec gives a backend's facts (`facts.py`: its name, device label, how device time is found), its
options as a typed record (parsed and checked before a worker starts), the traps it reads from a
finished run, the hint it adds to a failure, what it says about its artifacts, and the extra
commands it offers. The worker-side class that
profiles (torch) is named by `device_class` and imported only in the worker (`backends/registry.py`: `resolve`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Generic, TypeVar

from oplens.analysis.attribution import RawEvent
from oplens.backends.facts import CPU, BackendFacts
from oplens.records.doctor import Check
from oplens.records.errors import OpLensError, bad_input
from oplens.records.overview import AnyRun
from oplens.records.run import Artifacts, FusedLineTime, LineStat, Run, RuntimeFusion, SourceRef

OptionsT = TypeVar("OptionsT")


@dataclass
class NoOptions:
    """The options of a backend that has none."""


@dataclass
class CudaOptions:
    device_index: int = 0  # which GPU (torch.device("cuda", index))


@dataclass(frozen=True)
class CommandOutput:
    """What a backend's command gives back: `data` for `--json` and the LSP answer, `text` for people
    (the first line is the headline)."""

    data: dict[str, Any]
    text: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class CommandContext:
    workspace: Path
    runs_root: Path
    find_run: Callable[[str], Run]  # a stored run by id, id prefix, `latest` or directory (bad_input if none)
    settings: Mapping[str, Any] = field(default_factory=dict)  # the editor's settings under `settings_key`


@dataclass(frozen=True)
class BackendCommand:
    """An extra command a backend offers on a target (a stored run, or what the backend also takes,
    e.g. a profile directory): on the CLI `oplens <name> TARGET [flags]`, over LSP `lsp_command` with
    `{run_id, ...}`. The front ends own `TARGET`/`run_id`, `--out`, `--workspace` and `--json`, and
    give the command a `find_run` for stored runs; its own flags or LSP arguments are its own."""

    name: str
    lsp_command: str
    help: str
    settings_key: str  # the LSP initializationOptions key that holds this command's settings
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run_cli: Callable[[str, argparse.Namespace, CommandContext], CommandOutput]
    # Blocking (it may run a tool for minutes): the language server calls it off its event loop.
    run_lsp: Callable[[str, Mapping[str, Any], CommandContext], CommandOutput]


@dataclass
class RuntimeTime:
    """A device runtime's own record of a run's executions, read after the profile (Neuron: the system
    trace as neuron-explorer processes it): a source of device time beside Kineto's and the op table's."""

    source: str  # its DeviceTimeSources name (records/run.py)
    device_events: list[RawEvent]  # one device event per execution in the profiled iterations, linked to its op
    total_us: float  # device time per profiled iteration
    found: str  # in words: what was read and by which rule, or why nothing (with the fix)
    tables: str = ""  # the processed tables kept with the run (run-relative): `oplens analyze` re-reads them
    # compiled region → {(file, line, function): its fraction of the region's device time}, from the device profile
    region_lines: dict[str, dict[tuple[str, int, str], float]] = field(default_factory=dict)
    split_note: str = ""  # why a region has no split (and how to get one)
    warnings: list[str] = field(default_factory=list)  # what the runtime's tool warned of while processing it
    fused: list[RuntimeFusion] = field(default_factory=list)  # executions the runtime fused over several ops
    cpu_fallback: list[str] = field(default_factory=list)  # ops that ran on the CPU on a device tensor (no kernel)

    def split(self, lines: list[LineStat]) -> None:
        """Each compiled region's device time over the lines its graph fused (in place); each line's fused
        executions (on every line they covered) and its ops that ran on the CPU."""
        fallback = set(self.cpu_fallback)
        for s in lines:
            s.runtime_fused = [f for f in self.fused if s.line in f.lines]
            s.cpu_fallback = sorted({o.name for o in s.ops} & fallback)
            for region in s.compiled:
                shares = self.region_lines.get(region.name)
                if not shares:
                    region.split, region.split_note = [], self.split_note
                    continue
                region.split = sorted((FusedLineTime(f, ln, fn, region.self_device_us * share, 100.0 * share)
                                       for (f, ln, fn), share in shares.items()), key=lambda t: (t.file, t.line))  # fmt: skip
                region.split_note = "split by the device profile's instructions that name each line"


@dataclass(frozen=True)
class DoctorContext:
    """What `oplens doctor` hands a backend's own checks (`BackendSpec.doctor_checks`)."""

    facts: Mapping[str, Any]  # what the backend's `doctor_probe` reported in a worker-side process ({}: none)
    env: Mapping[str, str]  # the environment profiles run with (the worker inherits it)
    torch_version: str  # "" where torch does not import


@dataclass(frozen=True)
class InterpreterAdvice:
    """Interpreters of this host that can run a backend the server's own cannot, for want of the vendor's
    module, and the sentence offering them (an editor offers to switch)."""

    backend: str
    message: str
    pythons: list[str]  # best first


@dataclass
class DeviceSlice:
    """One stretch of device work for a timeline export: where a backend's own trace (not the profiler's) has it."""

    track: str  # the device's track it is drawn on ("NeuronCore 0")
    name: str
    start_us: float  # on the profiler's clock: µs since the epoch, as Kineto's `baseTimeNanoseconds` + `ts`
    dur_us: float
    launched_by: int  # the correlation id of the framework op that launched it (0: none known)
    args: dict[str, Any] = field(default_factory=dict)


@dataclass
class DeviceTimeline:
    """A run's device work from the backend's own trace, for the exports' timelines, and the vendor tool's own
    trace files of the same run; `clock` says how the times were put on the profiler's clock, `problems` why some or
    all are missing."""

    slices: list[DeviceSlice] = field(default_factory=list)
    clock: str = ""
    files: list[Path] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class BackendSpec(Generic[OptionsT]):
    """The parent side of one backend. Subclasses override what their backend adds."""

    facts: BackendFacts = CPU
    device_class = ""  # "module:Class" of the worker-side Backend
    options_type: type[Any] = NoOptions
    commands: tuple[BackendCommand, ...] = ()
    # "module:function" of a worker-side function (torch allowed) that returns what `oplens doctor`
    # should know of this backend on the host, as JSON-able data; "" for none. Never imported here.
    doctor_probe = ""

    @property
    def name(self) -> str:
        return self.facts.name

    @property
    def title(self) -> str:
        return self.facts.title

    @property
    def device_label(self) -> str:
        return self.facts.device_label

    def parse_options(self, raw: Mapping[str, Any], workspace: Path) -> OptionsT:
        """This backend's options record from plain data (CLI flags, editor settings), checked:
        an unknown key or a wrong type is bad input naming the option."""
        known = {f.name: f for f in fields(self.options_type)}
        values: dict[str, Any] = {}
        for key, value in raw.items():
            if key not in known:
                names = ", ".join(known) or "none"
                raise bad_input(f"unknown {self.title} option {key!r}", f"the {self.title} options are: {names}")
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise bad_input(f"the {self.title} option {key} must be a whole number, 0 or more (got {value!r})")
            values[key] = value
        result: OptionsT = self.options_type(**values)
        return result

    def add_cli_options(self, parser: argparse.ArgumentParser) -> None:
        """Flags of this backend for `profile` and `compare` (their values come back by `cli_options`)."""

    def cli_options(self, args: argparse.Namespace) -> dict[str, Any]:
        """The options given by this backend's flags, as plain data for `parse_options` (only those given)."""
        return {}

    def cli_flags(self) -> str:
        """How this backend's flags are named, for a message: `--neuron-*`."""
        return ""

    def worker_environment(self, options: OptionsT, run_dir: Path, env: Mapping[str, str]) -> dict[str, str]:
        """Variables the worker of a run must have from its start, before `import torch` (which may load the
        vendor's module by itself, reading them then), from this backend's options; `env`: what the worker would
        inherit. The parent sets them when it starts the worker (`engine/process.py`). Default: none."""
        return {}

    def warm_worker_environment(self, cache_root: Path, env: Mapping[str, str],
                                options: OptionsT | None = None) -> dict[str, str]:  # fmt: skip
        """Variables a worker started ahead of any run (the editor's warm one) begins with, so that the runs that
        need some there can take it (`engine/process.warm_environment`), `options` the editor's settings for this
        backend where known; files under `cache_root`, which does not exist yet (made where a backend puts files
        there). Default: none."""
        return {}

    def run_warnings(self, run: AnyRun, options: OptionsT, run_dir: Path, log_text: str, env: Mapping[str, str]) -> list[str]:
        """The traps a finished run of this backend fell into, each naming the fix."""
        return []

    def complete_run(self, run: Run, run_dir: Path) -> None:
        """Add what this backend knows of a finished run to its record (in place), before it is stored."""

    def runtime_time(
        self, run_dir: Path, artifacts: Artifacts, def_line: int, *, ingest: bool,
        fused: Mapping[str, list[SourceRef]] | None = None, progress: Callable[[str, int, int], None] | None = None,
    ) -> RuntimeTime | None:  # fmt: skip
        """The device runtime's own trace of a run as a device-time source; None where the backend has
        none. `ingest`: process the raw trace with the vendor's tool where it is not processed yet (the
        worker, once per run); else only read tables kept with the run (`oplens analyze`).
        `fused`: the run's compiled regions and the lines each fused, whose device time is split over them
        where the device profile says how (it is then processed too)."""
        return None

    def device_timeline(self, run: Run, run_dir: Path, scratch: Path | None) -> DeviceTimeline | None:
        """The run's device work from the backend's own trace, placed on the profiler's clock, and the vendor tool's
        own trace files (written under `scratch`; none asked for where it is None), for `oplens export`; None where the
        profiler's trace already holds the device's activity (CUDA's kernels) or the backend has no trace of its own."""
        return None

    def explain_failure(self, error: OpLensError, requested: str, options: OptionsT) -> None:
        """Add to a failed run's error what this backend knows of its cause (in place)."""

    def doctor_checks(self, context: DoctorContext) -> list[Check]:
        """`oplens doctor`'s checks of this backend beyond its availability (drivers, tools, the
        environment), judged here from `context.facts`; each names the fix. Default: none."""
        return []

    def describe_artifacts(self, run: Run) -> list[str]:
        """Lines about the device profile a run of this backend left (the CLI's listing)."""
        return []

    def interpreter_advice(self, python: str, root: Path) -> InterpreterAdvice | None:
        """Where `python` (the server's interpreter, whose environment the workers share) lacks this
        backend's vendor module and another interpreter of the host (under `root`) has it: the offer to
        switch. Default: none."""
        return None
