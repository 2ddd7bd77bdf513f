"""A profile inside the notebook's kernel: the statement's calls run in the kernel's own process, on its live
objects, through the one pipeline `oplens profile` runs in a worker.

The worker's steps, in order and unchanged (`worker/profiling.py`): the backend prepared (its environment
and vendor profiling configured before the warm-up), `measure` (warm-up calls, the profiler's own warm-up
dropped, the timed iterations with the function's lines marked, the one shapes call), `finish` (the chain
of derived views, the backend's artifacts, the trace exported), staged and stored as the engine stores
every run (`runs.Staging`): in the runs directory, so `oplens diff`, `analyze` and the editor read it.
What differs is only what a worker gets from a file and an `--args` expression: here the statement, a
callable of the kernel, and the function it reaches (`notebook/target.py`).
"""

from __future__ import annotations

import dataclasses
import os
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oplens.backends import registry
from oplens.engine import request, runs
from oplens.engine.request import DEFAULT_ITERS, DEFAULT_PROFILER_WARMUP, DEFAULT_WARMUP
from oplens.notebook.target import Live
from oplens.records.errors import OpLensError
from oplens.records.job import Job
from oplens.records.run import Run
from oplens.worker import calls, profiling
from oplens.worker.linemarks import LineMarker


@dataclass
class Settings:
    """A `%oplens` run's settings (the magic's options)."""

    iters: int = DEFAULT_ITERS
    warmup: int = DEFAULT_WARMUP
    profiler_warmup: int = DEFAULT_PROFILER_WARMUP
    backend: str = registry.DEFAULT  # `auto`: the best device present, as the CLI and the editor
    out: str = ""  # the runs directory ("": <the notebook's folder>/.oplens/runs)
    notebook: str = ""  # the notebook's path ("": as the kernel tells it, `notebook_path`)

    def options(self) -> request.Options:
        """The settings as the one record `request.check` checks (named by the magic's own flags, profile's)."""
        return request.Options(self.backend, self.warmup, self.iters, self.profiler_warmup)


class StatementRaised(Exception):  # noqa: N818 (it carries the user's exception, not an error of OpLens's)
    """The statement raised: `error` is the user's exception, its traceback from the statement down."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def profile_statement(run_once: Callable[[], Any], live: Live, helpers: Iterable[types.CodeType], statement: str,
                      settings: Settings, progress: Callable[[str, int, int], None] | None = None) -> Run:  # fmt: skip
    """Profile `live`'s lines while `run_once()` (the statement) runs warm-up + iterations times; the stored run."""
    options = settings.options()
    request.check(options)
    workspace = Path.cwd()
    raised: list[BaseException] = []

    def call() -> Any:
        try:
            return run_once()
        except BaseException as e:  # the user's: told as theirs, not as an error of OpLens's
            raised.append(e)
            raise

    # The statement runs more than the function (its arguments, `-f`'s caller): that is not the function's.
    # A compiled function's lines never run (its graph does, outside them): all of it stays its own.
    apart = not live.compiled
    # No log for a failure to keep (`staging.log`): the statement's output went to the cell.
    with runs.Staging(runs.runs_root(workspace, settings.out or None), options) as staging:
        staged = staging.add(live.target.qualname)
        job = Job(target=live.target, signature=live.definition.signature, args=statement, backend=settings.backend,
                  warmup=settings.warmup, iters=settings.iters, stage_dir=str(staged), workspace=str(workspace),
                  profiler_warmup=settings.profiler_warmup)  # fmt: skip
        log = staged / runs.WORKER_LOG  # the profiler's own lines (Kineto's), not the kernel's stderr
        saved_env = dict(os.environ)
        try:
            with calls.logging_to(log):
                backend = profiling.prepare_backend(job)
                marker = LineMarker(live.fn.__code__, helpers)
                prepared = profiling.Prepared(job, backend, call, (), marker)
                try:
                    measured = profiling.measure(prepared, progress or _quiet)
                finally:
                    marker.release()  # the kernel's code runs untouched by the marks from now on
                run = profiling.finish(job, backend, measured, progress=progress, statement=apart)
        except OpLensError:
            if raised:
                raise StatementRaised(raised[0]) from None
            raise
        finally:
            _restore_env(saved_env)  # the backend's variables were the profile's, not the kernel's from now on
        run.config = dataclasses.replace(run.config, args=statement, statement=apart, line_marks=marker.mechanism)
        if not log.stat().st_size:
            log.unlink()
        staging.store(staged, run, log if log.exists() else None)
    return run


def notebook_path(namespace: dict[str, Any], given: str = "") -> str:
    """The notebook this kernel runs (its path, "" where nothing tells): `given` (`--notebook`), else what
    the front end told the kernel: VS Code's Jupyter extension defines `__vsc_ipynb_file__`, Jupyter
    Server (2.x) sets `JPY_SESSION_NAME`; else the one notebook in the kernel's folder."""
    for told in (given, namespace.get("__vsc_ipynb_file__"), os.environ.get("JPY_SESSION_NAME")):
        if isinstance(told, str) and told.endswith(".ipynb"):
            path = Path(told).expanduser()
            for candidate in (path, Path.cwd() / path, Path.cwd() / path.name):  # a server's path may be its root's
                if candidate.is_file():
                    return str(candidate.resolve())
    found = sorted(Path.cwd().glob("*.ipynb"))
    return str(found[0].resolve()) if len(found) == 1 else ""


def in_cell(target: Live, notebook: str) -> Live:
    """`target` as a run of `notebook`'s, where a cell defines it (its file is the kernel's, not on disk)."""
    if not notebook or Path(target.target.file).is_file():
        return target
    return dataclasses.replace(target, target=dataclasses.replace(target.target, notebook=notebook))


def _quiet(stage: str, done: int, total: int) -> None:
    return None


def _restore_env(saved: dict[str, str]) -> None:
    for k in [k for k in os.environ if k not in saved]:
        del os.environ[k]
    os.environ.update(saved)


def user_traceback(error: BaseException) -> BaseException:
    """`error` with the frames before the user's statement left out (OpLens's calls into it)."""
    tb = error.__traceback__
    ours = str(Path(__file__).resolve().parent.parent)
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith(ours):
        tb = tb.tb_next
    return error.with_traceback(tb)

