"""A compare in one worker: every variant measured side by side, their calls interleaved (`oplens compare`).

Two variants profiled by two processes at two moments are compared with the machine's moment as much as
with the code (a shared machine's speed moves several times from one minute to the next; one process's
state can slow one line for its whole life). So a compare is one job:

    prepare     the backend once; each variant's module, function and arguments (`profiling.prepare_target`)
    warm up     each variant in turn (its compiles: `torch.compile` variants compile here, their first call
                reported apart as a profile's is), then its call with input shapes (`profiling.record_shapes`)
    rounds      one profiler session (`calls.ProfiledCalls`); each round calls every variant once, the order
                rotated and reversed in turn (A B C, C B A, B C A, A C B, ...): the k-th call of every variant
                ran in the same round, at the same moment of the machine, and each variant follows each other one
                as often. The first `profiler_warmup` rounds are dropped.
    split       the session's events read once; each variant's calls taken out (`analysis/sidebyside.py`)
                and attributed as a profile of that function alone (`profiling.process_events`, `describe`)
    report      one `Finished` per variant (its run records `Config.side_by_side`), a `Dropped` for a
                variant that failed (the others still compared), then `Ended`

The shared trace (every variant's calls, interleaved) is each run's trace.json. The speed-ups and their
intervals are computed on the parent side from the runs' per-call samples (engine/compare.py).
"""

from __future__ import annotations

import functools
import os
import shutil
import uuid
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from oplens.analysis import sidebyside
from oplens.analysis.columns import Events
from oplens.backends.device import Backend
from oplens.backends.spec import RuntimeTime
from oplens.records.errors import OpLensError
from oplens.records.job import Dropped, Ended, Finished, Job, WorkerMessage
from oplens.records.run import Run, SideBySide
from oplens.worker import calibrate, events
from oplens.worker.calls import ProfiledCalls, ShapesCall
from oplens.worker.compiled import FusedLines
from oplens.worker.profiling import (
    Measured,
    Prepared,
    Progress,
    collector_paused,
    described,
    keep_module,
    op_table,
    prepare_backend,
    prepare_target,
    process_events,
    read_runtime,
    record_shapes,
    timed_call,
)
from oplens.worker.usercode import call, user_error


@dataclass
class _Variant:
    index: int
    job: Job
    prepared: Prepared | None = None
    warmup_wall_us: list[float] = field(default_factory=list)
    shapes: ShapesCall | None = None
    fused: FusedLines = field(default_factory=FusedLines)
    trace_calls: list[int] = field(default_factory=list)  # its calls' iteration numbers in the session
    wall_us: list[float] = field(default_factory=list)
    plain_us: list[float] = field(default_factory=list)  # its plain rounds' calls (no profiler, no marks)


def run(job: Job, progress: Progress, send: Callable[[WorkerMessage], None]) -> None:
    """The compare of `job.variants()`, each variant's run or why it has none sent as it is known."""
    backend = prepare_backend(job)
    progress("importing", 0, 1)
    variants = [_Variant(i, v) for i, v in enumerate(job.variants())]
    live: list[_Variant] = []
    for v in variants:
        try:
            v.prepared = prepare_target(v.job, backend)
            live.append(v)
        except OpLensError as e:
            send(Dropped(v.index, e))
    warm: list[_Variant] = []
    steps = job.warmup * len(live)
    for n, v in enumerate(live):
        try:
            _warm_up(v, functools.partial(_warmed, progress, n * job.warmup, steps))
            warm.append(v)
        except OpLensError as error:
            send(Dropped(v.index, error))
    if not warm:
        send(Ended(1, [0] * len(variants)))
        return
    _plain_rounds(job, warm, rounds_for(job, warm))
    prof, dropped = _rounds(job, backend, warm, progress)
    for v, why in dropped:
        send(Dropped(v.index, why))
    out = {d.index for d, _ in dropped}
    measured = [v for v in warm if v.index not in out]
    progress("processing", 0, 1)
    for v, made in _runs(job, backend, prof, measured, variants):
        send(Finished(made) if isinstance(made, Run) else Dropped(v.index, made))
    send(Ended(0, [len(v.wall_us) for v in variants]))


def _warmed(progress: Progress, before: int, steps: int, done: int) -> None:
    progress("warmup", before + done, steps)


def _warm_up(v: _Variant, done: Callable[[int], None]) -> None:
    """The variant's warm-up calls (its compiles among them), then its call with input shapes."""
    p = v.prepared
    assert p is not None
    with v.fused:
        for i in range(v.job.warmup):
            v.warmup_wall_us.append(timed_call(p))
            done(i + 1)
        v.shapes = record_shapes(p)


def rounds_for(job: Job, live: list[_Variant]) -> int:
    """`job.iters`, or where the job fills its time (`fill_s`), as many rounds as take about that long by the
    variants' warm-up calls (each one's last: the first compiles), the plain and the profiled rounds half of it
    each, from `job.iters` up to `job.max_rounds`."""
    if job.fill_s <= 0:
        return job.iters
    per_round_us = sum(v.warmup_wall_us[-1] if v.warmup_wall_us else 0.0 for v in live)
    if per_round_us <= 0:
        return job.iters
    return max(job.iters, min(job.max_rounds, int(job.fill_s / 2 * 1e6 / per_round_us)))


def rotated(variants: list[_Variant], r: int) -> list[_Variant]:
    """Round `r`'s order: the variants rotated every other round, each rotation then run backwards (A B C, C B A,
    B C A, A C B, C A B, B A C, ...), so that none is always first and none always follows the same other one.
    Rotation alone gives every variant one fixed predecessor (A after C, B after A, ...); with a variant that
    leaves the caches and the allocator in another state (twice the work), two identical functions beside it
    read 1-4 % apart, the one after it the slower (bench/verdicts.py, 200 rounds)."""
    if not variants:
        return []
    k = (r // 2) % len(variants)
    order = variants[k:] + variants[:k]
    return order[::-1] if r % 2 else order


def _plain_rounds(job: Job, live: list[_Variant], rounds: int) -> None:
    """The rounds timed plainly, before the profiler starts: each variant called once a round, the order rotated,
    no profiler and no line marks, the device synchronised after each call. On the CPU the profiler's own work
    runs on the cores the function runs on, and it costs a function of many ops more than one of few (measured
    with one core busy: naive against compiled RMSNorm read 3.6-5.5x profiled, 1.0-1.4x timed plainly), so a
    speed-up on the host is these calls' (engine/compare.py). A variant that raises here is left to the profiled
    rounds, which name it."""
    if len(live) < 2:
        return
    for v in live:
        assert v.prepared is not None
        v.prepared.marker.release()  # the warm-up's marks off: these calls run untouched
    for r in range(rounds):
        for v in rotated(live, r):
            p = v.prepared
            assert p is not None
            try:
                v.plain_us.append(timed_call(p))
            except Exception:
                return  # the profiled rounds meet it again, and name it; no plain figure for anyone
    # every variant has one call a round: the k-th calls ran in the same round


def _rounds(job: Job, backend: Backend[Any], live: list[_Variant],
            progress: Progress) -> tuple[Any, list[tuple[_Variant, OpLensError]]]:  # fmt: skip
    """`rounds_for` rounds (after `job.profiler_warmup` dropped ones), each calling every variant once, the order
    rotated each round, under one profiler session. A variant that raises leaves the rounds (named)."""
    dropped: list[tuple[_Variant, OpLensError]] = []
    active = list(live)
    total = rounds_for(job, live)
    with ProfiledCalls(backend, Path(job.stage_dir), nullcontext(), total * len(live), job.profiler_warmup * len(live)) as calls:
        for r in range(job.profiler_warmup + total):
            for v in rotated(active, r):
                p = v.prepared
                assert p is not None
                recorded = len(calls.wall_us)
                try:
                    calls.call(functools.partial(_marked, p))
                except Exception as e:  # the user's code raised in this round: the variant is out, the others go on
                    dropped.append((v, _as_error(e, p)))
                    active.remove(v)
                    continue
                if len(calls.wall_us) > recorded:
                    v.trace_calls.append(calls.started - calls.warm - 1)
                    v.wall_us.append(calls.wall_us[-1])
            if r >= job.profiler_warmup:
                progress("profile", r - job.profiler_warmup + 1, total)
            if not active:
                break
    return calls.prof, dropped


def _marked(p: Prepared) -> Any:
    """One call of the variant with its own lines marked."""
    with p.marker:
        return call(p.fn, p.args, p.job.target)


def _as_error(e: Exception, p: Prepared) -> OpLensError:
    if isinstance(e, OpLensError):
        return e
    return user_error(e, p.job.target, f"{p.job.target.qualname} raised")


def _runs(job: Job, backend: Backend[Any], prof: Any, measured: list[_Variant],
          variants: list[_Variant]) -> list[tuple[_Variant, Run | OpLensError]]:  # fmt: skip
    """Each measured variant's run, from its own calls of the one session."""
    facts = backend.facts
    with collector_paused():
        raw = events.columns(prof, per_op_device_time=facts.per_op_device_time)
        table = op_table(prof) if facts.on_device and facts.op_table_device_time else None
    shared_stage = Path(job.stage_dir)
    warnings: list[str] = []
    artifacts = backend.artifacts(shared_stage)
    fused = {name: refs for v in measured for name, refs in v.fused.regions.items()}
    rt = read_runtime(backend, shared_stage, artifacts, job.target.def_line, fused, warnings) if facts.on_device else None
    trace = shared_stage / "trace.json"
    if not backend.writes_own_trace() or not artifacts.trace_json:
        prof.export_chrome_trace(str(trace))
    group = uuid.uuid4().hex[:12]
    names = [f"{v.job.target.file}::{v.job.target.qualname}" + (" (earlier version)" if v.job.module_source else "")
             for v in variants]  # fmt: skip
    out: list[tuple[_Variant, Run | OpLensError]] = []
    plain = len({len(v.plain_us) for v in measured}) == 1  # every variant timed in every plain round
    for v in measured:
        place = SideBySide(group, names, v.index, v.trace_calls, v.plain_us if plain else [])
        try:
            with collector_paused():
                out.append((v, _run_of(v, raw, table, rt, facts, trace, warnings, backend, place)))
        except OpLensError as e:
            out.append((v, e))
    return out


def _run_of(v: _Variant, raw: Events, table: Any, rt: RuntimeTime | None, facts: Any, trace: Path,
            warnings: list[str], backend: Backend[Any], place: SideBySide) -> Run:  # fmt: skip
    own = sidebyside.calls_of(raw, v.trace_calls)
    own_table = list(sidebyside.calls_of(table, v.trace_calls).records()) if isinstance(table, list) else table
    own_rt = None
    if rt is not None:
        dev = sidebyside.device_events_of(rt.device_events, own)
        iters = max(1, len(v.trace_calls))
        own_rt = replace(rt, device_events=dev, total_us=sum((e.end_ns - e.start_ns) / 1000.0 for e in dev) / iters)
    job = v.job
    graphs = v.fused.work()
    derived = process_events(own, own_table, v.shapes,
                             len(v.trace_calls), job.target, facts, v.fused.regions, graphs=graphs,
                             ceilings=functools.partial(calibrate.roof, backend, warnings),
                             runtime=lambda: own_rt)  # fmt: skip
    measured = Measured(None, v.shapes, v.wall_us, v.warmup_wall_us, v.fused.regions, v.fused.graphs, graphs)
    stage = Path(job.stage_dir)
    assert v.prepared is not None
    keep_module(v.prepared)
    artifacts = backend.artifacts(stage)  # a device's own profile is in the baseline's folder, where the session wrote it
    run = described(job, backend, measured, derived, artifacts, warnings)
    run.config.side_by_side = place
    run.config.line_marks = v.prepared.marker.mechanism
    run.config.iters = len(v.trace_calls)  # the rounds it ran (a compare that fills its time: more than asked)
    if stage != trace.parent and trace.is_file():
        _link(trace, stage / "trace.json")
    run.artifacts.trace_json = "trace.json" if (stage / "trace.json").is_file() else run.artifacts.trace_json
    return run


def _link(src: Path, dst: Path) -> None:
    """The shared trace in another run's folder: a hard link where the file system allows, else a copy."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)
