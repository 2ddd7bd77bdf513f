"""The profiling engine: profile one function (or several) in a worker and keep the run.

Parent side only (never imports torch): resolve the target from the AST, start a worker,
send it the job, and store what comes back as a run directory. `cli` and `lsp` call this.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oplens.engine import neuron_checks, neuron_options, runs
from oplens.engine.errors import OpLensError, bad_input
from oplens.engine.jobs import ProgressFn, Worker, run_job
from oplens.engine.records import Run
from oplens.engine.target import resolve, split_target

BACKENDS = ("auto", "cpu", "cuda", "neuron")
DEFAULT_WARMUP = 3
DEFAULT_ITERS = 20
DEFAULT_TIMEOUT_S = 300.0


@dataclass
class ProfileRequest:
    target: str  # FILE::QUALNAME or FILE:LINE
    args: str = ""
    backend: str = "cpu"
    warmup: int = DEFAULT_WARMUP
    iters: int = DEFAULT_ITERS
    timeout_s: float = DEFAULT_TIMEOUT_S
    workspace: Path = field(default_factory=Path.cwd)
    out: str | None = None  # runs directory; default <workspace>/.oplens/runs
    backend_options: dict[str, Any] = field(default_factory=dict)


def validate(req: ProfileRequest) -> None:
    """Check the request (and normalise its Neuron options) before any work is spent."""
    if req.backend not in BACKENDS:
        raise bad_input(f"unknown backend {req.backend!r}", f"choose one of: {', '.join(BACKENDS)}")
    if req.warmup < 0:
        raise bad_input(f"--warmup must be 0 or more (got {req.warmup})")
    if req.iters < 1:
        raise bad_input(f"--iters must be 1 or more (got {req.iters})")
    if req.timeout_s <= 0:
        raise bad_input(f"--timeout must be positive (got {req.timeout_s:g})")
    req.backend_options = neuron_options.normalize(req.backend_options, req.workspace)


def profile(
    req: ProfileRequest,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
    worker: Worker | None = None,
) -> Run:
    """Profile `req.target` in a worker (a new one, or `worker` if warm) and store the run."""
    validate(req)
    file, qualname, line = split_target(req.target)
    workspace = req.workspace.resolve()
    target, fn = resolve(workspace / file if not Path(file).is_absolute() else file, qualname, line)
    if fn.required_params and not req.args.strip():
        raise bad_input(
            f"{fn.signature} needs arguments",
            'pass them with --args, a Python expression evaluated in the module, e.g. --args "make_inputs()"'
            + (" (for a method, the instance comes first)" if fn.in_class else ""),
        )
    root = runs.prepare(runs.runs_root(workspace, req.out))
    run_id = runs.new_run_id(target.qualname)
    staged = runs.stage(root, run_id)
    job = {
        "target": target.__dict__,
        "signature": fn.signature,
        "args": req.args,
        "backend": req.backend,
        "warmup": req.warmup,
        "iters": req.iters,
        "stage_dir": str(staged),
        "workspace": str(workspace),
        "backend_options": req.backend_options,
        "timeout_s": req.timeout_s,
    }
    worker = worker if worker is not None and worker.alive() else Worker(root / ".staging", cwd=workspace)
    try:
        data = run_job(worker, job, req.timeout_s, progress, cancel)
    except OpLensError as e:
        neuron_checks.explain_failure(e, req.backend, req.backend_options)
        runs.discard(staged)
        kept = runs.keep_failed_log(root, run_id, worker.log)
        if kept is not None:
            e.detail = (e.detail.rstrip() + f"\nfull worker log: {kept}").lstrip()
        raise
    _keep_log(worker, staged)
    run = Run.from_dict(data)
    run.backend.warnings += neuron_checks.run_warnings(
        run, req.backend_options, staged, _read(staged / "worker.log"), os.environ
    )
    run.run_id = run_id
    run.created = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    run.artifacts.worker_log = "worker.log"
    runs.commit(root, staged, run)
    return run


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _keep_log(worker: Worker, staged: Path) -> None:
    try:
        worker.log.replace(staged / "worker.log")
    except OSError:
        pass


__all__ = ["BACKENDS", "OpLensError", "ProfileRequest", "Run", "Worker", "profile", "validate"]
