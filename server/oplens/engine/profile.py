"""`oplens profile`, parent side: profile one function in a worker and keep the run.

Resolves the target from the AST (`targets`), checks the request (`request.check`), stages a run
(`runs.Staging`), starts a worker process (or reuses a warm one, `process`), sends it the `Job`, and
stores what comes back as a run directory. `cli` and `lsp` call `profile`.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oplens.backends import registry
from oplens.engine import request, runs
from oplens.engine.earlier import Earlier, earlier_version
from oplens.engine.process import (
    ProgressFn,
    WorkerProcess,
    discard,
    remove_scratch,
    run_environment,
    run_job,
    run_side_by_side,
    serves,
)
from oplens.engine.request import (
    DEFAULT_ITERS,
    DEFAULT_PROFILER_WARMUP,
    DEFAULT_TIMEOUT_S,
    DEFAULT_WARMUP,
    FILL_S,
    MAX_ROUNDS,
)
from oplens.engine.targets import FunctionDef, resolve
from oplens.records.errors import bad_input
from oplens.records.job import Job, TargetSpec, Variant
from oplens.records.run import EarlierVersion, Run, Target


@dataclass
class ProfileRequest:
    target: TargetSpec
    args: str = ""
    backend: str = registry.DEFAULT
    warmup: int = DEFAULT_WARMUP
    iters: int = DEFAULT_ITERS
    timeout_s: float = DEFAULT_TIMEOUT_S
    profiler_warmup: int = DEFAULT_PROFILER_WARMUP
    workspace: Path = field(default_factory=Path.cwd)
    out: str | None = None  # runs directory; default <workspace>/.oplens/runs
    # Each backend's options record by name (registry.parse_options); missing ones take defaults.
    backend_options: dict[str, Any] = field(default_factory=dict)
    names: request.Names = request.PROFILE_FLAGS  # how the front end names the numbers in a bad one's message
    # A compare whose rounds the user did not count (`iters` is then the least): as many rounds as take about this
    # long, so that a small difference has the calls to show (0: exactly `iters`)
    fill_s: float = 0.0
    # After an edit, the function's earlier version measured beside it (engine/earlier.py); False: alone
    beside_earlier: bool = True

    def options(self) -> request.Options:
        """The request's settings as the one record `request.check` checks (its backend options the same dict)."""
        return request.Options(self.backend, self.warmup, self.iters, self.profiler_warmup, self.timeout_s,
                               self.backend_options, self.names)  # fmt: skip


def validate(req: ProfileRequest) -> None:
    """Check the request before any work is spent."""
    request.check(req.options())


def profile(
    req: ProfileRequest,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
    worker: WorkerProcess | None = None,
) -> Run:
    """Profile `req.target` in a worker (a new one, or `worker` if warm) and store the run."""
    validate(req)
    workspace = req.workspace.resolve()
    target, fn = resolved(req, workspace)
    root = runs.runs_root(workspace, req.out)
    earlier = earlier_version(root, target, req.backend) if req.beside_earlier else None
    text = earlier.snapshot.text if earlier is not None and earlier.snapshot is not None else None  # loadable
    with runs.Staging(root, req.options()) as staging:
        beside = staging.add(target.qualname) if text is not None else None
        staged = staging.add(target.qualname)  # after the earlier version's: the newer run of the two
        job = job_of(req, target, fn.signature, staged, workspace)
        worker = worker_for(req, staged, staging.root, workspace, worker)
        staging.log = worker.log  # the user's output: a failure keeps it in .failed/
        try:
            if earlier is not None and text is not None and beside is not None:
                job.side_by_side = [Variant(earlier.target(target), fn.signature, req.args, str(beside), text)]
                # as a compare's rounds: at least --iters, as many as take about FILL_S (a line's change must
                # show in paired rounds on a busy machine: 20 rounds missed a doubled line in 6 of 20 there)
                job.fill_s, job.max_rounds = FILL_S, MAX_ROUNDS
                run = _beside_earlier(worker, job, req, earlier, staging, beside, progress, cancel)
            else:
                run = run_job(worker, job, req.timeout_s, progress, cancel)
                if earlier is not None:
                    run.config.earlier = EarlierVersion(earlier.run.run_id, why_not=earlier.why_not)
        finally:
            remove_scratch(worker)  # a warm worker's NEFF cache: its NEFFs are in the run by now
        staging.store(staged, run, runs.keep_log(worker.log, staged / runs.WORKER_LOG))
    return run


def _beside_earlier(worker: WorkerProcess, job: Job, req: ProfileRequest, earlier: Earlier, staging: runs.Staging,
                    beside: Path, progress: ProgressFn | None, cancel: threading.Event | None) -> Run:  # fmt: skip
    """The edited function measured with its earlier version beside it (`job.side_by_side`), interleaved; the
    earlier version's run stored first, the new one returned to be stored, saying which it was measured beside
    (or why the earlier version could not be: the diff is then across two processes)."""
    new, old = run_side_by_side(worker, job, 2 * req.timeout_s, progress, cancel)
    if not isinstance(new, Run):
        raise new
    if isinstance(old, Run):
        assert old.config.side_by_side is not None  # a run of a side-by-side job says where it stood (process.py)
        old.config.side_by_side.earlier_of = earlier.run.run_id
        staging.store(beside, old, runs.copy_log(worker.log, beside / runs.WORKER_LOG))
        new.config.earlier = EarlierVersion(earlier.run.run_id, measured_run=old.run_id)
    else:
        new.config.earlier = EarlierVersion(earlier.run.run_id, why_not=f"the earlier version could not be measured "
                                            f"beside it: {old.message}")  # fmt: skip
    return new


def resolved(req: ProfileRequest, workspace: Path) -> tuple[Target, FunctionDef]:
    """`req`'s function found in its file (`targets.resolve`), with its arguments where it needs them."""
    file = Path(req.target.file)
    target, fn = resolve(file if file.is_absolute() else workspace / file, req.target.qualname, req.target.line)
    if fn.required_params and not req.args.strip():
        raise bad_input(
            f"{fn.signature} needs arguments",
            'pass them with --args, a Python expression evaluated in the module, e.g. --args "make_inputs()"'
            + (" (for a method, the instance comes first)" if fn.in_class else ""),
        )
    return target, fn


def job_of(req: ProfileRequest, target: Target, signature: str, staged: Path, workspace: Path) -> Job:
    """The worker's job for `req`'s function, its run staged in `staged`."""
    return Job(
        target=target,
        signature=signature,
        args=req.args,
        backend=req.backend,
        warmup=req.warmup,
        iters=req.iters,
        stage_dir=str(staged),
        workspace=str(workspace),
        backend_options={name: dataclasses.asdict(opts) for name, opts in req.backend_options.items()},
        timeout_s=req.timeout_s,
        profiler_warmup=req.profiler_warmup,
    )


def worker_for(req: ProfileRequest, staged: Path, root: Path, workspace: Path, worker: WorkerProcess | None) -> WorkerProcess:
    """`worker` (started ahead, warm) where it is alive and serves the run, else a fresh one. What a vendor module
    reads when `import torch` loads it is set as the worker starts (Neuron: its NEFF cache and compile-time debug
    info): a warm worker started without it is not used, a fresh one is started with it."""
    env = run_environment(req.backend_options, staged)
    if worker is not None and not (worker.alive() and serves(worker, req.backend_options, staged)):
        discard(worker)
        worker = None
    return worker or WorkerProcess(root / ".staging", cwd=workspace, env=env)
