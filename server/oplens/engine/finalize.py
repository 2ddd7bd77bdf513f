"""The last step of `oplens profile` and `oplens run` alike, parent side: a run the worker sent is
completed with what only the parent knows and stored; a failure is explained and its log kept.

`store` takes the run's staged directory (`.staging/<run-id>/`, its name the run's id) with the
worker's log already in it: the backend's warnings for the run (from the run, its files, the log,
the environment) are added, the backend completes it (`complete_run`), and it is committed
(`runs.commit`). `failed` lets each candidate backend explain the error (`explain_failure`) and
keeps the worker's log in `.failed/`, naming it in the error's detail.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from oplens.backends import registry
from oplens.engine import runs
from oplens.records.errors import OpLensError
from oplens.records.run import Run


def store(root: Path, staged: Path, run: Run, log: Path | None, backend_options: dict[str, Any]) -> Path:
    """Complete `run` (from the worker, staged in `staged`, its log at `log` inside it or None) and
    move it into place under `root`; its final directory."""
    spec = registry.get(run.backend.name)
    options = backend_options.get(spec.name, spec.options_type())
    run.backend.warnings += spec.run_warnings(run, options, staged, _read(log), os.environ)
    run.run_id = staged.name
    run.created = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    spec.complete_run(run, staged)
    run.artifacts.worker_log = runs.WORKER_LOG if log else ""
    return runs.commit(root, staged, run)


def failed(
    error: OpLensError,
    backend: str,
    backend_options: dict[str, Any],
    root: Path,
    run_id: str,
    log: Path | None,
) -> None:
    """`error` explained by each backend the request could have run on (`backend` as asked:
    `auto` has several) and, where `log` is a file, that log kept as `.failed/<run_id>.log`
    and named in the error's detail (`full worker log: PATH`)."""
    for name in registry.candidates(backend):
        registry.get(name).explain_failure(error, backend, backend_options[name])
    kept = runs.keep_failed_log(root, run_id, log) if log is not None else None
    if kept is not None:
        error.detail = (error.detail.rstrip() + f"\nfull worker log: {kept}").lstrip()


def _read(path: Path | None) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace") if path else ""
    except OSError:
        return ""
