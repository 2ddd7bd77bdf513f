"""One profile inside the worker, as named steps: prepare (backend, module, function, arguments),
warm up, profile the iterations (`calls.py`: the loop the capture runs too), then `finish`: process
(events → the events each op's device time comes from, chosen once → the chain of derived views, run
once: attribution, work and memory, insights, roofline), describe the run, export the trace. `run`
chains them; the capture and the notebook end in the same `finish`; `bench/` calls the same steps.

Runs only in the worker process (imports torch and the user's code). Errors come out as
`OpLensError`s whose messages name the problem and the fix.
"""

from __future__ import annotations

import functools
import gc
import importlib.util
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oplens.analysis import sources, work
from oplens.analysis.attribution import RawEvent
from oplens.analysis.columns import Events
from oplens.analysis.derive import Derived, Inputs, derive
from oplens.analysis.stats import ESTIMATORS, spread
from oplens.backends.device import Backend
from oplens.backends.facts import CPU, BackendFacts
from oplens.backends.registry import BackendUnavailable, backend_class, resolve
from oplens.backends.registry import get as backend_spec
from oplens.backends.spec import RuntimeTime
from oplens.records.errors import OpLensError
from oplens.records.job import RUN_DIR_ENV, Job
from oplens.records.run import Artifacts, Compile, Config, DeviceRoof, Run, SourceRef, Target
from oplens.records.run import from_dict as record_from_dict
from oplens.worker import calibrate, events, snapshot
from oplens.worker.calls import ProfiledCalls, ShapesCall, shapes_call
from oplens.worker.compiled import FusedLines
from oplens.worker.linemarks import LineMarker, code_objects
from oplens.worker.usercode import build_args, call, find_callable, find_code, load_earlier, load_module

Progress = Callable[[str, int, int], None]  # (stage, done, total)


@dataclass
class Prepared:
    """Everything a profile needs before its first call."""

    job: Job
    backend: Backend[Any]
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    marker: LineMarker  # the target's lines as profiler ranges (worker/linemarks.py)
    module_text: str = ""  # the module's text as imported, for a later edit's diff (worker/snapshot.py)


@dataclass
class Measured:
    """What the calls gave: the profiles and the wall times, before any processing."""

    prof: Any  # the timed iterations' torch.profiler.profile
    shapes: ShapesCall | None  # one CPU-only call with input shapes and memory (None: the capture skipped none)
    wall_us: list[float]  # per timed iteration
    warmup_wall_us: list[float]  # per warm-up call (the first compiles)
    fused: dict[str, list[SourceRef]] = field(default_factory=dict)  # compiled region → lines its graph fused
    graphs: int = 0  # graphs compiled during the calls
    graph_work: dict[str, work.LineWork] = field(default_factory=dict)  # compiled region → its graph's work


def run(job: Job, progress: Progress) -> Run:
    clock = _Clock()
    prepared = prepare(job, progress)
    clock.lap("import_ms")
    measured = measure(prepared, progress, clock)
    prepared.marker.release()
    progress("processing", 0, 1)
    keep_module(prepared)
    run = finish(job, prepared.backend, measured, clock, progress=progress)
    run.config.line_marks = prepared.marker.mechanism
    return run


def finish(job: Job, backend: Backend[Any], measured: Measured, clock: _Clock | None = None, capture: bool = False,
           progress: Progress | None = None, statement: bool = False) -> Run:  # fmt: skip
    """The measured calls as a Run: the backend's files found, processed (`process`: the device-time
    source chosen, with the device runtime's own trace where the backend has one, then the chain of
    derived views once), described, the trace exported. `profile` and the capture's windows both end
    here, and a notebook's `%oplens`, whose calls are a `statement`'s that reaches the function."""
    clock = clock or _Clock()
    warnings: list[str] = []
    stage = Path(job.stage_dir)
    artifacts = backend.artifacts(stage)  # first: the runtime's trace is read from them; their notes are warnings

    runtime = functools.partial(read_runtime, backend, stage, artifacts, job.target.def_line, measured.fused, warnings,
                                progress)  # fmt: skip
    derived = process(measured.prof, measured.shapes, len(measured.wall_us), job.target, backend.facts,
                      measured.fused, graphs=measured.graph_work, ceilings=functools.partial(calibrate.roof, backend, warnings),
                      capture=capture, runtime=runtime, statement=statement)  # fmt: skip
    clock.lap("processing_ms")
    run = described(job, backend, measured, derived, artifacts, warnings)
    export_trace(job, backend, measured.prof, run)
    clock.lap("export_ms")
    run.timings_ms = clock.laps
    return run


def read_runtime(backend: Backend[Any], stage: Path, artifacts: Artifacts, def_line: int, fused: dict[str, list[SourceRef]],
                 warnings: list[str], progress: Progress | None = None) -> RuntimeTime | None:  # fmt: skip
    """The device runtime's own trace of the calls staged in `stage` (None where the backend has none): its
    processed tables kept in `artifacts`, what its tool warned of added to `warnings`."""
    rt = backend_spec(backend.name).runtime_time(stage, artifacts, def_line, ingest=True, fused=fused, progress=progress)
    if rt is not None and rt.tables:
        artifacts.processed_system_trace = rt.tables
    if rt is not None:
        warnings.extend(rt.warnings)
    return rt


def described(job: Job, backend: Backend[Any], m: Measured, derived: Derived, artifacts: Artifacts,
              warnings: list[str]) -> Run:  # fmt: skip
    """`describe`'s Run with the run's warnings (and the device-time sources' disagreement) and its estimators."""
    run = describe(job, backend, m, derived, artifacts)
    run.backend.warnings += warnings
    if derived.device_time is not None and derived.device_time.mismatch:
        run.backend.warnings.append(derived.device_time.mismatch)
    run.estimators = dict(ESTIMATORS)
    return run


def prepare(job: Job, progress: Progress) -> Prepared:
    """The backend (with its options record), the user's module, function and arguments on the device."""
    backend = prepare_backend(job)
    progress("importing", 0, 1)
    return prepare_target(job, backend)


def prepare_target(job: Job, backend: Backend[Any]) -> Prepared:
    """The user's module, function and arguments on the device of a backend already prepared."""
    if job.module_source:  # an edited function's earlier version, measured beside it
        module, name = load_earlier(Path(job.target.file), Path(job.workspace), job.module_source)
        text = job.module_source
    else:
        module, name = load_module(Path(job.target.file), Path(job.workspace))
        text = _text_of(Path(job.target.file))
    job.target.module = name
    fn = find_callable(module, job.target)
    marker = LineMarker(find_code(module, job.target, fn), code_objects(module))
    args = build_args(module, job, fn)
    try:
        args = backend.place(args)
    except Exception as e:  # the device refuses the tensors: a backend problem, not the user's code nor ours
        raise OpLensError(
            "backend_unavailable",
            f"moving the arguments to the {backend.device_label} device failed: {type(e).__name__}: {e}",
            f"is the device usable here? oplens doctor --backend {backend.name} checks it",
        ) from None
    return Prepared(job, backend, fn, args, marker, text)


def _text_of(file: Path) -> str:
    """The file's text as the import read it (its encoding declaration honoured); "" where it cannot be read."""
    try:
        return importlib.util.decode_source(file.read_bytes())
    except (OSError, UnicodeDecodeError, SyntaxError):
        return ""


def keep_module(p: Prepared) -> None:
    """The module's text and the user's files it imported, in the run's folder (worker/snapshot.py)."""
    if p.module_text:
        snapshot.keep(Path(p.job.stage_dir), p.job.target.file, p.module_text, p.job.target.module, p.job.workspace)


def prepare_backend(job: Job) -> Backend[Any]:
    """The backend with its options record, its environment set and its profiling configured."""
    options = {name: record_from_dict(backend_spec(name).options_type, data) for name, data in job.backend_options.items()}
    os.environ[RUN_DIR_ENV] = job.stage_dir  # the run's own folder, for environment() (Neuron: its NEFF cache)
    for name, opts in options.items():  # before any vendor module is imported (and compiles)
        os.environ.update(backend_class(name).environment(opts))
    try:
        backend = resolve(job.backend, options)
    except BackendUnavailable as e:
        raise OpLensError("backend_unavailable", str(e)) from None
    backend.configure(Path(job.stage_dir))  # vendor profiling set up before the warm-up, as documented
    backend.note = backend.note or ("" if job.backend == backend.name else f"{job.backend} chose {backend.name}")
    return backend


def measure(p: Prepared, progress: Progress, clock: _Clock | None = None) -> Measured:
    """Warm-up calls (unprofiled: the first ones compile), then the profiled iterations
    (`worker/calls.py`, the loop the capture runs too).

    Input shapes (for the insights) come from one call of their own, profiled on the CPU:
    recording them costs as much as a small op, so the timed iterations go without. That call
    is the last warm-up one where there are two or more (the first compiles and gives the
    first-call time), else one after the timed iterations."""
    job = p.job
    shapes_in_warmup = job.warmup >= 2
    shapes: ShapesCall | None = None
    warmup_wall: list[float] = []
    with FusedLines() as fused:
        if job.warmup:
            progress("warmup", 0, job.warmup)  # said before the first call: it compiles, where the device does
        for i in range(job.warmup):
            if shapes_in_warmup and i == job.warmup - 1:
                shapes = record_shapes(p)
            else:
                warmup_wall.append(timed_call(p))
            progress("warmup", i + 1, job.warmup)
        if clock is not None:
            clock.lap("warmup_ms")
        prof, wall = profile_iterations(p, job.iters, progress)
        if clock is not None:
            clock.lap("profile_ms")
        if shapes is None:
            shapes = record_shapes(p)
    return Measured(prof, shapes, wall, warmup_wall, fused.regions, fused.graphs, fused.work())


def timed_call(p: Prepared) -> float:
    """One unprofiled call, synchronised: its wall time in µs."""
    t0 = time.perf_counter_ns()
    call(p.fn, p.args, p.job.target)
    p.backend.synchronize()
    return (time.perf_counter_ns() - t0) / 1000.0


def record_shapes(p: Prepared) -> ShapesCall:
    """One more call with input shapes and memory (`calls.shapes_call`); its result freed after the profile."""
    shapes, _ = shapes_call(p.backend, p.marker, functools.partial(call, p.fn, p.args, p.job.target), p.job.target.def_line)
    return shapes


def profile_iterations(p: Prepared, iters: int, progress: Progress) -> tuple[Any, list[float]]:
    """The timed iterations: `profiler_warmup` dropped ones, then `iters` recorded (`ProfiledCalls`)."""
    with ProfiledCalls(p.backend, Path(p.job.stage_dir), p.marker, iters, p.job.profiler_warmup) as calls:
        while not calls.done:
            calls.call(functools.partial(call, p.fn, p.args, p.job.target))  # the user's function, called from calls.py
            if calls.wall_us and calls.started > calls.warm:
                progress("profile", len(calls.wall_us), iters)
    return calls.prof, calls.wall_us


def process(
    prof: Any,
    shapes: ShapesCall | None,
    iters: int,
    target: Target,
    facts: BackendFacts = CPU,
    fused: dict[str, list[SourceRef]] | None = None,
    laps: dict[str, float] | None = None,
    graphs: dict[str, work.LineWork] | None = None,
    ceilings: Callable[[], DeviceRoof | None] = lambda: None,
    capture: bool = False,
    runtime: Callable[[], RuntimeTime | None] = lambda: None,
    statement: bool = False,
) -> Derived:
    """The profiles' events read (worker/events.py; the op table's too where the backend's facts say the
    vendor may put device time there only), the events each op's device time comes from chosen among
    them and the device runtime's own trace (`runtime`, read once), measured and recorded
    (analysis/sources.py), then the chain of derived views run once on those (analysis/derive.py:
    attribution, each line's work and memory from the shapes call, insights, roofline). `laps`, where
    given, gets each part's time in ms (`attribute_ms`: the sources measured and the chosen attributed)."""
    t0 = time.perf_counter()
    with collector_paused():
        raw = events.columns(prof, per_op_device_time=facts.per_op_device_time)  # in bulk: up to millions
        table = op_table(prof) if facts.on_device and facts.op_table_device_time else None
        if laps is not None:
            laps["read_ms"] = (time.perf_counter() - t0) * 1000.0
        return process_events(raw, table, shapes, iters, target, facts, fused, laps, graphs, ceilings, capture, runtime,
                              statement)  # fmt: skip


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's garbage collector off for the block: processing makes tens of thousands of small records, and the
    collector alone took ~40 % of it."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def process_events(
    raw: Events,
    table: list[RawEvent] | Exception | None,
    shapes: ShapesCall | None,
    iters: int,
    target: Target,
    facts: BackendFacts = CPU,
    fused: dict[str, list[SourceRef]] | None = None,
    laps: dict[str, float] | None = None,
    graphs: dict[str, work.LineWork] | None = None,
    ceilings: Callable[[], DeviceRoof | None] = lambda: None,
    capture: bool = False,
    runtime: Callable[[], RuntimeTime | None] = lambda: None,
    statement: bool = False,
) -> Derived:
    """`process` on events already read (a compare reads its session's once and gives each variant its own calls,
    analysis/sidebyside.py): the device-time source chosen, then the chain of derived views once."""
    # None: a capture that skipped no call has no shapes call
    shape_events = events.columns(shapes.prof, inputs=True) if shapes is not None else None
    rt = runtime() if facts.on_device else None
    inputs = Inputs(raw, iters, target, facts, fused or {}, shape_events, graphs, ceilings=ceilings, capture=capture,
                    statement=statement, device_memory=shapes.device_memory if shapes is not None else None)  # fmt: skip
    t1 = time.perf_counter()
    chosen = sources.choose(inputs, op_table=table, runtime=rt)
    if laps is not None:
        laps["attribute_ms"] = (time.perf_counter() - t1) * 1000.0
    derived = derive(chosen.inputs, laps, chosen.attribution)
    derived.device_time = chosen.device_time
    return derived


def op_table(prof: Any) -> list[RawEvent] | Exception:
    """The op table's events (`events.from_function_events`: a vendor may propagate device time into the
    FunctionEvents only, TorchNeuron's correlate_device_time), or why they cannot be read (a torch
    without the table, trace_only): Kineto's events then stand."""
    try:
        return events.from_function_events(prof)
    except Exception as e:
        return e


def describe(job: Job, backend: Backend[Any], m: Measured, derived: Derived, artifacts: Artifacts) -> Run:
    """The Run record (without its id and directory, which the parent gives it)."""
    result = derived.attribution
    result.totals.wall_us = spread(m.wall_us)
    first = m.warmup_wall_us[0] if m.warmup_wall_us else 0.0
    info = backend.info()
    info.requested = job.backend
    return Run(
        target=job.target,
        backend=info,
        config=Config(
            warmup=job.warmup, iters=job.iters, profiler_warmup=job.profiler_warmup, args=job.args, timeout_s=job.timeout_s
        ),
        totals=result.totals,
        lines=result.lines,
        ops=result.ops,
        insights=derived.insights,
        artifacts=artifacts,
        compile=Compile(
            first_call_us=first,
            compile_us=max(0.0, first - result.totals.wall_us.median) if m.graphs else 0.0,
            graphs=m.graphs,
        ),
        device=derived.device,
        device_time=derived.device_time,
    )


def export_trace(job: Job, backend: Backend[Any], prof: Any, run: Run) -> None:
    """The framework trace.json, where the backend's own export wrote none."""
    if not backend.writes_own_trace() or not run.artifacts.trace_json:
        prof.export_chrome_trace(str(Path(job.stage_dir) / "trace.json"))
        run.artifacts.trace_json = "trace.json"


class _Clock:
    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._t = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = (now - self._t) * 1000.0
        self._t = now
