"""`oplens compare`, parent side: several functions measured side by side in one worker, and their summary.

`compare` resolves and checks every variant before any runs, stages one run per variant, and sends one
job (`Job.side_by_side`) to one worker, which calls the variants interleaved round by round
(worker/sidebyside.py); each variant's run is stored as a profile's is. A variant that fails is named
(`Compared.failed`) and the others are still compared.

`compare_rows` is the side-by-side table (the case study's) for every front end: per variant its figures
and its speed-up against the first (the baseline), with the speed-up's interval and the verdict that the
interval allows (`analysis/stats.py`'s `median_ratio`: its rounds resampled together for runs measured side by
side, each run's calls on their own for runs of separate processes, each labelled with its method).
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field
from typing import Any

from oplens.analysis.stats import SPEEDUP_METHODS, median_ratio
from oplens.backends import registry
from oplens.engine import runs
from oplens.engine.process import ProgressFn, WorkerProcess, remove_scratch, run_side_by_side
from oplens.engine.profile import ProfileRequest, job_of, resolved, validate, worker_for
from oplens.engine.request import MAX_ROUNDS
from oplens.records.errors import OpLensError, bad_input
from oplens.records.job import Variant
from oplens.records.run import Run

FASTER, SLOWER, SAME, BASELINE = "faster", "slower", "no measurable difference", "baseline"
# The least speed-up worth naming: two identical functions side by side differ by up to about this much, their
# whole interval beyond 1× (bench/verdicts.py, 200 rounds of an A/A beside a third variant: 1.008-1.037, 1.002-1.022
# in 3 of 20 compares: each variant follows another in the rotation, and its code lies elsewhere in memory).
MIN_EFFECT = 0.02


@dataclass
class Compared:
    """A compare's outcome: the variants measured, in the order given, and those that could not be."""

    runs: list[Run]
    failed: list[tuple[str, OpLensError]] = field(default_factory=list)  # (FILE::QUALNAME, why)


def compare(
    reqs: list[ProfileRequest],
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
    worker: WorkerProcess | None = None,
) -> Compared:
    """Measure `reqs`' functions side by side in one worker (a new one, or `worker` if warm) and store each run.
    The first request's settings (backend, warm-up, iterations) are the compare's; each keeps its own arguments."""
    if len(reqs) < 2:
        raise bad_input("a compare needs two functions or more", "name the baseline first, then each variant")
    for req in reqs:
        validate(req)
    head = reqs[0]
    workspace = head.workspace.resolve()
    found = [resolved(req, workspace) for req in reqs]  # every variant checked before any runs
    with runs.Staging(runs.runs_root(workspace, head.out), head.options()) as staging:
        staged = [staging.add(target.qualname) for target, _ in found]
        (target, fn), others = found[0], zip(reqs[1:], found[1:], staged[1:], strict=True)
        job = dataclasses.replace(job_of(head, target, fn.signature, staged[0], workspace), fill_s=head.fill_s,
                                  max_rounds=MAX_ROUNDS,
                                  side_by_side=[Variant(t, f.signature, r.args, str(s)) for r, (t, f), s in others])  # fmt: skip
        worker = worker_for(head, staged[0], staging.root, workspace, worker)
        staging.log = worker.log
        try:
            results = run_side_by_side(worker, job, sum(r.timeout_s for r in reqs), progress, cancel)
        finally:
            remove_scratch(worker)
        done: list[Run] = []
        failed: list[tuple[str, OpLensError]] = []
        last = max((i for i, r in enumerate(results) if isinstance(r, Run)), default=-1)
        for i, (result, req, (target, _)) in enumerate(zip(results, reqs, found, strict=True)):
            if not isinstance(result, Run):
                failed.append((f"{req.target.file}::{target.qualname}", result))
                continue
            log = staged[i] / runs.WORKER_LOG
            if i == last:
                kept = runs.keep_log(worker.log, log)
            else:
                kept = runs.copy_log(worker.log, log)
            staging.store(staged[i], result, kept)
            done.append(result)
        if not done:
            name, error = failed[0]
            error.message = f"{name}: {error.message}"
            raise error
    return Compared(done, failed)


def compare_rows(runs: list[Run]) -> list[dict[str, Any]]:
    """One row per run; `speedup` is the first run's median call over this run's (`speedup_of`: which calls),
    `speedup_interval` its confidence interval, `verdict` what the interval allows, `method` how the two were
    measured (`analysis/stats.py`'s SPEEDUP_METHODS), `rounds` its profiled calls."""
    base = runs[0] if runs else None
    rows = []
    for i, r in enumerate(runs):
        speedup, low, high, method = 1.0, 1.0, 1.0, ""
        if i > 0 and base is not None:
            speedup, low, high, method = speedup_of(base, r)
        rows.append({
            "variant": r.target.qualname,
            "run_id": r.run_id,
            "device_label": r.backend.device_label,
            "self_device_us": r.totals.self_device_us,
            "self_cpu_us": r.totals.self_cpu_us,
            "op_calls": r.totals.op_calls,
            "wall_median_us": r.totals.wall_us.median,
            "compile_us": r.compile.compile_us,
            "rounds": r.config.iters,  # its profiled calls (measured side by side: the rounds)
            "speedup": speedup,
            "speedup_interval": [low, high],
            "verdict": BASELINE if i == 0 else verdict(speedup, low, high),
            "method": method,
        })  # fmt: skip
    return rows


def speedup_of(base: Run, other: Run) -> tuple[float, float, float, str]:
    """`base`'s time per call over `other`'s, its interval and the method: paired by round where the two were
    measured side by side (one compare), else as two samples. Side by side on the host (the CPU), the calls
    timed plainly before the profiler started (`SideBySide.plain_calls_us`): there the profiler's own work
    shares the function's cores and costs a function of many ops more than one of few; on a device, each
    profiled call's device time."""
    a, b = base.config.side_by_side, other.config.side_by_side
    xs, ys = _per_call(base), _per_call(other)
    if a is not None and b is not None and a.group == b.group:
        on_host = not registry.facts_of(base.backend.name).on_device and not registry.facts_of(other.backend.name).on_device
        if on_host and a.plain_calls_us and len(a.plain_calls_us) == len(b.plain_calls_us):
            return (*median_ratio(a.plain_calls_us, b.plain_calls_us, paired=True), "interleaved_plain")
        if len(xs) == len(ys):
            return (*median_ratio(xs, ys, paired=True), "interleaved")
    return (*median_ratio(xs, ys, paired=False), "separate")


def _per_call(run: Run) -> list[float]:
    """Each profiled call's self device time (all lines; none where the run has no device time)."""
    samples = run.totals.device_samples_us
    return samples if any(v > 0 for v in samples) else []


def verdict(speedup: float, low: float, high: float) -> str:
    """`faster` where the whole interval is above 1 + MIN_EFFECT, `slower` where it is below 1 / (1 + MIN_EFFECT),
    else no measurable difference (the interval holds 1×, or does not clear the least difference worth naming)."""
    if speedup <= 0:
        return SAME
    if low > 1.0 + MIN_EFFECT:
        return FASTER
    if high < 1.0 / (1.0 + MIN_EFFECT):
        return SLOWER
    return SAME


def method_words(method: str) -> str:
    return SPEEDUP_METHODS.get(method, "")
