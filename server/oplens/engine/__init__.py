"""The profiling engine's parent side: profile one function in a worker and keep the run.

Never imports torch: resolve the target from the AST (`targets`), check the options through the
backend registry, start a worker process (`process`), send it the `Job`, and store what comes back
as a run directory (`runs`). `cli` and `lsp` call `profile`; `compare` lays runs side by side.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oplens.backends import registry
from oplens.engine import runs
from oplens.engine.process import ProgressFn, WorkerProcess, run_job
from oplens.engine.targets import resolve
from oplens.records.errors import OpLensError, bad_input
from oplens.records.job import Job, TargetSpec
from oplens.records.run import Run

BACKENDS = registry.NAMES
DEFAULT_WARMUP = 3
DEFAULT_ITERS = 20
DEFAULT_PROFILER_WARMUP = 2  # profiled-but-dropped iterations: the profiler's start-up lands on them
DEFAULT_TIMEOUT_S = 300.0


@dataclass
class ProfileRequest:
    target: TargetSpec
    args: str = ""
    backend: str = "cpu"
    warmup: int = DEFAULT_WARMUP
    iters: int = DEFAULT_ITERS
    timeout_s: float = DEFAULT_TIMEOUT_S
    profiler_warmup: int = DEFAULT_PROFILER_WARMUP
    workspace: Path = field(default_factory=Path.cwd)
    out: str | None = None  # runs directory; default <workspace>/.oplens/runs
    # Each backend's options record by name (registry.parse_options); missing ones take defaults.
    backend_options: dict[str, Any] = field(default_factory=dict)


def validate(req: ProfileRequest) -> None:
    """Check the request before any work is spent."""
    if req.backend not in BACKENDS:
        raise bad_input(f"unknown backend {req.backend!r}", f"choose one of: {', '.join(BACKENDS)}")
    if req.warmup < 0:
        raise bad_input(f"--warmup must be 0 or more (got {req.warmup})")
    if req.iters < 1:
        raise bad_input(f"--iters must be 1 or more (got {req.iters})")
    if req.profiler_warmup < 0:
        raise bad_input(f"--profiler-warmup must be 0 or more (got {req.profiler_warmup})")
    if req.timeout_s <= 0:
        raise bad_input(f"--timeout must be positive (got {req.timeout_s:g})")
    for name in registry.candidates(req.backend):
        req.backend_options.setdefault(name, registry.get(name).options_type())


def profile(
    req: ProfileRequest,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
    worker: WorkerProcess | None = None,
) -> Run:
    """Profile `req.target` in a worker (a new one, or `worker` if warm) and store the run."""
    validate(req)
    workspace = req.workspace.resolve()
    file = Path(req.target.file)
    target, fn = resolve(file if file.is_absolute() else workspace / file, req.target.qualname, req.target.line)
    if fn.required_params and not req.args.strip():
        raise bad_input(
            f"{fn.signature} needs arguments",
            'pass them with --args, a Python expression evaluated in the module, e.g. --args "make_inputs()"'
            + (" (for a method, the instance comes first)" if fn.in_class else ""),
        )
    root = runs.prepare(runs.runs_root(workspace, req.out))
    run_id = runs.new_run_id(target.qualname)
    staged = runs.stage(root, run_id)
    job = Job(
        target=target,
        signature=fn.signature,
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
    worker = worker if worker is not None and worker.alive() else WorkerProcess(root / ".staging", cwd=workspace)
    try:
        run = run_job(worker, job, req.timeout_s, progress, cancel)
    except OpLensError as e:
        for name in registry.candidates(req.backend):
            registry.get(name).explain_failure(e, req.backend, req.backend_options[name])
        runs.discard(staged)
        kept = runs.keep_failed_log(root, run_id, worker.log)
        if kept is not None:
            e.detail = (e.detail.rstrip() + f"\nfull worker log: {kept}").lstrip()
        raise
    log = runs.keep_log(worker.log, staged / runs.WORKER_LOG)
    spec = registry.get(run.backend.name)
    run.backend.warnings += spec.run_warnings(
        run, req.backend_options.get(spec.name, spec.options_type()), staged, _read(log), os.environ
    )
    run.run_id = run_id
    run.created = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    spec.complete_run(run, staged)
    run.artifacts.worker_log = runs.WORKER_LOG if log else ""
    runs.commit(root, staged, run)
    return run


def _read(path: Path | None) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace") if path else ""
    except OSError:
        return ""


__all__ = ["BACKENDS", "OpLensError", "ProfileRequest", "Run", "TargetSpec", "WorkerProcess", "profile", "validate"]
