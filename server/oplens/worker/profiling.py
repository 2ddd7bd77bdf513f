"""One profile inside the worker, as named steps: prepare (backend, module, function, arguments),
warm up, profile the iterations with line markers, process (events → per-line attribution →
insights), and describe the run. `run` chains them; `bench/` calls the same steps.

Runs only in the worker process (imports torch and the user's code). Errors come out as
`OpLensError`s whose messages name the problem and the fix.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from oplens.analysis import insights, memory, roofline, work
from oplens.analysis.attribution import Attribution, attribute, line_memory, line_work
from oplens.analysis.stats import ESTIMATORS, spread
from oplens.backends.device import Backend
from oplens.backends.registry import get as backend_spec
from oplens.backends.resolve import BackendUnavailable, backend_class, resolve
from oplens.records import names
from oplens.records.errors import OpLensError
from oplens.records.job import Job
from oplens.records.run import Compile, Config, DeviceRoof, Insight, Run, SourceRef
from oplens.records.run import from_dict as record_from_dict
from oplens.worker import calibrate, events
from oplens.worker.compiled import FusedLines
from oplens.worker.linemarks import LineMarker, Range, code_objects
from oplens.worker.usercode import build_args, call, find_callable, find_code, load_module

Progress = Callable[[str, int, int], None]  # (stage, done, total)


@dataclass
class Prepared:
    """Everything a profile needs before its first call."""

    job: Job
    backend: Backend[Any]
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    marker: LineMarker  # the target's lines as profiler ranges (worker/linemarks.py)


@dataclass
class Measured:
    """What the calls gave: the profiles and the wall times, before any processing."""

    prof: Any  # the timed iterations' torch.profiler.profile
    shapes_prof: Any  # one CPU-only call with input shapes (for the insights)
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
    progress("processing", 0, 1)
    backend = prepared.backend
    result = process(
        measured.prof, measured.shapes_prof, job.iters, job.target.def_line,
        backend.device_time, measured.fused, legacy_privateuse1=backend.name == "neuron", graphs=measured.graph_work,
    )  # fmt: skip
    found = find_insights(result, backend, job.iters)
    clock.lap("processing_ms")
    run = describe(prepared, measured, result, found)
    roof(run, backend)
    export_trace(prepared, measured, run)
    clock.lap("export_ms")
    run.timings_ms = clock.laps
    run.estimators = dict(ESTIMATORS)
    return run


def prepare(job: Job, progress: Progress) -> Prepared:
    """The backend (with its options record), the user's module, function and arguments on the device."""
    backend = prepare_backend(job)
    progress("importing", 0, 1)
    module = load_module(Path(job.target.file), Path(job.workspace))
    fn = find_callable(module, job.target)
    marker = LineMarker(find_code(module, job.target), code_objects(module))
    args = build_args(module, job, fn)
    try:
        args = backend.place(args)
    except Exception as e:  # the device refuses the tensors: a backend problem, not the user's code nor ours
        raise OpLensError(
            "backend_unavailable",
            f"moving the arguments to the {backend.device_label} device failed: {type(e).__name__}: {e}",
            f"is the device usable here? oplens doctor --backend {backend.name} checks it",
        ) from None
    return Prepared(job, backend, fn, args, marker)


def prepare_backend(job: Job) -> Backend[Any]:
    """The backend with its options record, its environment set and its profiling configured."""
    options = {name: record_from_dict(backend_spec(name).options_type, data) for name, data in job.backend_options.items()}
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
    """Warm-up calls (unprofiled: the first ones compile), then the profiled iterations.

    Input shapes (for the insights) come from one call of their own, profiled on the CPU:
    recording them costs as much as a small op, so the timed iterations go without. That call
    is the last warm-up one where there are two or more (the first compiles and gives the
    first-call time), else one after the timed iterations."""
    job = p.job
    shapes_in_warmup = job.warmup >= 2
    shapes_prof: Any = None
    warmup_wall: list[float] = []
    with FusedLines() as fused:
        for i in range(job.warmup):
            if shapes_in_warmup and i == job.warmup - 1:
                shapes_prof = record_shapes(p)
            else:
                warmup_wall.append(timed_call(p))
            progress("warmup", i + 1, job.warmup)
        if clock is not None:
            clock.lap("warmup_ms")
        prof, wall = profile_iterations(p, job.iters, progress)
        if clock is not None:
            clock.lap("profile_ms")
        if shapes_prof is None:
            shapes_prof = record_shapes(p)
    return Measured(prof, shapes_prof, wall, warmup_wall, fused.regions, fused.graphs, fused.work())


def timed_call(p: Prepared) -> float:
    """One unprofiled call, synchronised: its wall time in µs."""
    t0 = time.perf_counter_ns()
    call(p.fn, p.args, p.job.target)
    p.backend.synchronize()
    return (time.perf_counter_ns() - t0) / 1000.0


def record_shapes(p: Prepared) -> Any:
    """One more call, on the CPU activity only, with input shapes and memory: what the insights and
    each line's work and memory read."""
    cpu = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(activities=cpu, record_shapes=True, profile_memory=True) as prof:
        with Range(f"{names.ITER_RANGE}0"), p.marker:
            result = call(p.fn, p.args, p.job.target)
        p.backend.synchronize()
    del result  # freed after the profile: what the function returns is its caller's, not a temporary
    return prof


def profile_iterations(p: Prepared, iters: int, progress: Progress) -> tuple[Any, list[float]]:
    """The timed iterations under the backend's profiler, each in its own iteration range, the
    target's lines marked. The device is synchronised after each call, outside its range (so the
    wait is no line's).

    The profiler's own start-up lands on the first iterations it records (0.3-4 ms on the CPU, on
    the function's first op), so a `schedule` runs `profiler_warmup` iterations under the started
    profiler first and records only the `iters` after them (torch.profiler's documented way, and
    `schedule` is supported with NeuronConfig). Their wall times are not kept either."""
    stage = Path(p.job.stage_dir)
    warm = p.job.profiler_warmup
    wall: list[float] = []
    options = p.backend.profiler_options(stage)
    if warm > 0:
        options["schedule"] = torch.profiler.schedule(wait=0, warmup=warm, active=iters, repeat=1)
    with torch.profiler.profile(activities=p.backend.activities(), record_shapes=False, **options) as prof:
        for step in range(warm + iters):
            i = step - warm  # the recorded iteration's index; negative while the profiler warms up
            t0 = time.perf_counter_ns()
            with Range(f"{names.ITER_RANGE}{max(i, 0)}"), p.marker:
                call(p.fn, p.args, p.job.target)
            p.backend.synchronize()
            elapsed_us = (time.perf_counter_ns() - t0) / 1000.0  # before step(): the last one stops the trace
            if warm > 0:
                prof.step()
            if i >= 0:
                wall.append(elapsed_us)
                progress("profile", i + 1, iters)
    return prof, wall


def process(
    prof: Any,
    shapes_prof: Any,
    iters: int,
    def_line: int,
    device_time: str = "cpu",
    fused: dict[str, list[SourceRef]] | None = None,
    legacy_privateuse1: bool = False,
    laps: dict[str, float] | None = None,
    graphs: dict[str, work.LineWork] | None = None,
) -> Attribution:
    """The profiles' events attributed to lines (analysis/attribution.py), with each line's op
    sequence, work and memory from the shapes call (`graphs`: compiled regions' work, counted from
    their graphs). `laps`, where given, gets each part's time in ms."""
    clock = _Clock()
    gc.disable()  # tens of thousands of small records: the collector alone took ~40 % of this step
    try:
        raw = events.from_profiler(prof, legacy_privateuse1=legacy_privateuse1)
        clock.lap("read_ms")
        result = attribute(raw, iters, def_line, device_time, fused or {})
        clock.lap("attribute_ms")
        if shapes_prof is not None:  # a capture that skipped no call has none
            shape_events = events.from_profiler(shapes_prof)
            result.sequence = attribute(shape_events, 1, def_line).sequence
            work.assign(result.lines, result.totals, line_work(shape_events, def_line, graphs))
            work.assign_memory(result.lines, result.totals, line_memory(shape_events, def_line))
        clock.lap("shapes_ms")
    finally:
        gc.enable()
    if laps is not None:
        laps.update(clock.laps)
    return result


def find_insights(result: Attribution, backend: Backend[Any], iters: int, capture: bool = False) -> list[Insight]:
    return insights.find_insights(result, backend.device_label, backend.device().type != "cpu", iters, capture)


def describe(p: Prepared, m: Measured, result: Attribution, found: list[Insight]) -> Run:
    """The Run record (without its id and directory, which the parent gives it)."""
    job, backend = p.job, p.backend
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
        insights=sorted(found + memory.temporary_insights(result.lines, result.totals, job.target), key=lambda i: i.line),
        artifacts=backend.artifacts(Path(job.stage_dir)),
        compile=Compile(
            first_call_us=first,
            compile_us=max(0.0, first - result.totals.wall_us.median) if m.graphs else 0.0,
            graphs=m.graphs,
        ),
    )


def roof(run: Run, backend: Backend[Any]) -> None:
    """Each line against the device's ceilings (analysis/roofline.py): calibrated once per host and
    device (worker/calibrate.py; ~2 s the first time, cached), the vendor's figures beside them."""
    if run.totals.flops is None:
        return  # no call recorded input shapes: no work to set against the ceilings
    try:
        c = calibrate.ceilings(backend).ceilings
    except Exception as e:  # the roofline is extra: a failed calibration must not lose the run
        run.backend.warnings.append(f"no roofline: calibrating the device failed ({type(e).__name__}: {e}); "
                                    "oplens calibrate --again tells more")  # fmt: skip
        return
    run.device = DeviceRoof(name=c.name, dtype_peaks=dict(c.dtype_peaks), bytes_per_s=c.bytes_per_s,
                            source=c.source, measured_at=c.measured_at)  # fmt: skip
    roofline.assign(run.lines, run.totals, run.device, on_device=backend.device().type != "cpu")
    run.insights = sorted(run.insights + roofline.headroom_insights(run.lines, run.totals), key=lambda i: i.line)


def export_trace(p: Prepared, m: Measured, run: Run) -> None:
    """The framework trace.json, where the backend's own export wrote none."""
    if not p.backend.writes_own_trace() or not run.artifacts.trace_json:
        m.prof.export_chrome_trace(str(Path(p.job.stage_dir) / "trace.json"))
        run.artifacts.trace_json = "trace.json"


class _Clock:
    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._t = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = (now - self._t) * 1000.0
        self._t = now
