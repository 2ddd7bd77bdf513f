"""Run directories: `.oplens/runs/<run-id>/` with `result.json` (a function's lines: a `Run`) or
`overview.json` (a program overview: an `OverviewRun`), `trace.json`, artifacts.

A run is built in `.staging/<run-id>/` and renamed into place only when complete, with
`result.json` written atomically, so a crashed or failed run never leaves half a run and
never touches an earlier one. `Staging` is that sequence, the one every entry point that makes
runs goes through (`profile`, `run`, `merge`, the notebook's `%oplens`); the rest reads runs back.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import time
from pathlib import Path
from types import TracebackType

from oplens.backends import registry
from oplens.engine.request import Options
from oplens.records import jsonfile
from oplens.records.atomic import write_json_atomic
from oplens.records.errors import OpLensError, bad_input
from oplens.records.overview import AnyRun, OverviewRun, read_run
from oplens.records.run import Run

RUNS_DIR = Path(".oplens") / "runs"
RESULT = "result.json"  # a function's run (`Run`)
OVERVIEW = "overview.json"  # a program overview (`OverviewRun`)
RECORDS = (RESULT, OVERVIEW)


def record_name(run: AnyRun) -> str:
    """The file of a run directory that holds `run`: `overview.json` for an overview, else `result.json`."""
    return OVERVIEW if isinstance(run, OverviewRun) else RESULT


def record_file(run_dir: Path) -> Path | None:
    """The record a run directory holds (`result.json` or `overview.json`); None where it holds neither."""
    for name in RECORDS:
        if (run_dir / name).is_file():
            return run_dir / name
    return None


def runs_root(workspace: Path, out: str | Path | None = None) -> Path:
    return Path(out).resolve() if out else (workspace / RUNS_DIR).resolve()


def prepare(root: Path) -> Path:
    """Create the runs directory and prove it writable, before any work is spent."""
    try:
        staging = root / ".staging"
        staging.mkdir(parents=True, exist_ok=True)
        probe = staging / f".probe-{os.getpid()}"
        probe.write_text("ok")
        probe.unlink()
    except OSError as e:
        raise bad_input(
            f"cannot write runs to {root}: {e.strerror or e}",
            "choose a writable directory with --out DIR (or fix its permissions)",
        ) from None
    return root


def _id_name(qualname: str) -> str:
    """The qualname as a run id carries it: anything but [A-Za-z0-9_.-] as `_`, at most 60 characters."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", qualname)[:60]


def new_run_id(qualname: str) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{_id_name(qualname)}-{secrets.token_hex(3)}"


def stage(root: Path, run_id: str) -> Path:
    path = root / ".staging" / run_id
    path.mkdir(parents=True)
    return path


def commit(root: Path, staged: Path, run: AnyRun) -> Path:
    """Write result.json (an overview: overview.json) into the staged run and move it into place; never
    overwrites."""
    final = root / run.run_id
    run.run_dir = str(final)
    write_json_atomic(staged / record_name(run), run.to_dict())
    if final.exists():  # run ids carry a random part; a clash means someone else's run
        raise FileExistsError(f"run directory {final} already exists")
    os.rename(staged, final)
    return final


WORKER_LOG = "worker.log"


def keep_log(log: Path, dest: Path) -> Path | None:
    """Move a worker's log (the user's stdout and stderr) to `dest`; None where there is none."""
    if not log.is_file():
        return None
    try:
        dest.parent.mkdir(exist_ok=True)
        log.replace(dest)
        return dest
    except OSError:
        return None


def copy_log(log: Path, dest: Path) -> Path | None:
    """A copy of the worker's log (several runs of one worker each keep it), or None where it cannot be made."""
    try:
        shutil.copyfile(log, dest)
        return dest
    except OSError:
        return None


def keep_failed_log(root: Path, run_id: str, log: Path) -> Path | None:
    """A failed run leaves no run directory, but its worker log is kept in `.failed/`."""
    return keep_log(log, root / ".failed" / f"{run_id}.log")


def discard(staged: Path) -> None:
    shutil.rmtree(staged, ignore_errors=True)


class Staging:
    """Runs assembled in `<root>/.staging/<run-id>/`, each stored whole or not at all:

        with runs.Staging(root, options) as staging:  # the runs directory made and proven writable
            staged = staging.add(qualname)            # a run id and its directory
            staging.log = worker.log                  # the user's output, for a failure to keep
            ...                                       # the work writes into `staged`
            staging.store(staged, run, log)           # completed by its backend, moved into place

    On leaving, whatever was staged and not stored is discarded and `log` removed. An `OpLensError` on the
    way out is explained by each backend the request could have run on (`options`: a merge has none) and
    names the runs stored before it (`runs kept: ...`), else the log, kept as `.failed/<run-id>.log` (`full
    worker log: ...`).
    """

    def __init__(self, root: Path, options: Options | None = None) -> None:
        self.root = prepare(root)
        self.options = options
        self.log: Path | None = None
        self.staged: list[Path] = []
        self.stored: list[AnyRun] = []

    def __enter__(self) -> Staging:
        return self

    def add(self, qualname: str) -> Path:
        """A new run's directory, `.staging/<run-id>/` (its name is the run's id)."""
        staged = stage(self.root, new_run_id(qualname))
        self.staged.append(staged)
        return staged

    def store(self, staged: Path, run: AnyRun, log: Path | None) -> Path:
        """Complete `run` (from the worker, staged in `staged`, its log at `log` inside it or None) with what
        only the parent knows (the backend's warnings from the run, its files, the log, the environment; the
        time; `complete_run`) and move it into place; its final directory."""
        spec = registry.get(run.backend.name)
        given = self.options.backend_options if self.options is not None else {}
        options = given.get(spec.name, spec.options_type())
        run.backend.warnings += spec.run_warnings(run, options, staged, _read(log), os.environ)
        run.run_id = staged.name
        run.created = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        if isinstance(run, Run):  # an overview has no lines for a backend to complete
            spec.complete_run(run, staged)
        run.artifacts.worker_log = WORKER_LOG if log else ""
        return self.commit(staged, run)

    def commit(self, staged: Path, run: AnyRun) -> Path:
        """`run` as it is (a merge's, complete already) moved into place; its final directory."""
        run.run_id = staged.name
        final = commit(self.root, staged, run)
        self.stored.append(run)
        return final

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        for staged in self.staged:
            discard(staged)  # a stored one was moved away: nothing there
        if isinstance(error, OpLensError):
            self._explain(error)
        if self.log is not None:
            self.log.unlink(missing_ok=True)

    def _explain(self, error: OpLensError) -> None:
        if self.options is not None:  # each backend the request could have run on (`auto` has several)
            backend, given = self.options.backend, self.options.backend_options
            for name in registry.candidates(backend):
                registry.get(name).explain_failure(error, backend, given[name])
        if self.stored:  # each has the user's output
            error.detail = (error.detail.rstrip() + f"\nruns kept: {', '.join(r.run_id for r in self.stored)}").lstrip()
            return
        kept = keep_failed_log(self.root, self.staged[0].name, self.log) if self.log and self.staged else None
        if kept is not None:
            error.detail = (error.detail.rstrip() + f"\nfull worker log: {kept}").lstrip()


def _read(path: Path | None) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace") if path else ""
    except OSError:
        return ""


def load(run_dir: Path) -> AnyRun:
    """The run a run directory holds: its `overview.json` (an `OverviewRun`) or its `result.json` (a `Run`; an
    older overview's, which carried it inside, converted: `records.overview.read_run`)."""
    found = record_file(run_dir)
    return read_run(jsonfile.read(found if found is not None else run_dir / RESULT))


def load_run(run_dir: Path) -> Run:
    """A function's run (`result.json`); ValueError where the directory holds a program overview."""
    run = load(run_dir)
    if not isinstance(run, Run):
        raise ValueError(f"{run_dir} holds a program overview, not a function's lines")
    return run


def list_runs(root: Path) -> list[Path]:
    """Completed runs, overviews included, oldest first (their ids start with a timestamp)."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and record_file(p) is not None)


def history_dirs(root: Path, qualname: str) -> list[Path]:
    """The completed runs whose id names `qualname` (`<stamp>-<name>-<hex>`), oldest first, without
    reading them: functions whose names differ only where a run id writes `_` share an id name, so
    a caller still checks each run's `target`. Runs of one second are ordered by when their
    result.json was written (the id's stamp has whole seconds, its hex part is random)."""
    if not root.is_dir():
        return []
    pattern = re.compile(rf"\d{{8}}-\d{{6}}-{re.escape(_id_name(qualname))}-[0-9a-f]+")
    found = []
    for p in root.iterdir():
        if pattern.fullmatch(p.name) and p.is_dir():
            found_file = record_file(p)
            if found_file is None:
                continue  # neither result.json nor overview.json: not a completed run
            try:
                written = found_file.stat().st_mtime_ns
            except OSError:
                continue
            found.append((p.name[:15], written, p.name, p))
    return [p for *_, p in sorted(found)]


def same_file(a: str, b: str) -> bool:
    return a == b or Path(a).resolve() == Path(b).resolve()


def history(root: Path, file: str, qualname: str) -> list[AnyRun]:
    """Every stored run of function `qualname` of `file` (its overviews with it as their step too), oldest
    first (a damaged one is skipped)."""
    found = []
    for run_dir in history_dirs(root, qualname):
        try:
            run = load(run_dir)
        except (OSError, ValueError, TypeError, KeyError):  # damaged: it must not hide the others
            continue
        if run.target.qualname == qualname and same_file(run.target.home(), file):
            run.run_dir = str(run_dir.resolve())
            found.append(run)
    return found


def find(root: Path, spec: str) -> AnyRun:
    """A stored run (or overview) by directory path, run id, unique id prefix, or `latest`; its `run_dir` is
    where it is now."""
    path = Path(spec).expanduser()
    if record_file(path) is not None:
        run_dir = path
    else:
        done = list_runs(root)
        if spec == "latest":
            matches = done[-1:]
        else:
            matches = [p for p in done if p.name == spec] or [p for p in done if p.name.startswith(spec)]
        if len(matches) != 1:
            recent = ", ".join(p.name for p in done[-3:]) or "none yet"
            what = "matches several runs" if matches else "is neither a run directory nor a run id"
            raise bad_input(
                f"{spec!r} {what} in {root}",
                f"give a run id or its directory (recent runs: {recent}), or `latest`; --out DIR for another runs directory",
            )
        run_dir = matches[0]
    try:
        run = load(run_dir)
    except (OSError, ValueError) as e:
        raise bad_input(f"cannot read {record_file(run_dir) or run_dir / RESULT}: {e}") from None
    run.run_dir = str(run_dir.resolve())
    return run


def find_run(root: Path, spec: str) -> Run:
    """`find`, for a command that reads a function's lines: a program overview is refused, saying so."""
    run = find(root, spec)
    if not isinstance(run, Run):
        raise bad_input(f"{spec!r} is a program overview ({run.run_id}), not a function's lines",
                        "give a run of a function (oplens profile, oplens run --target)")  # fmt: skip
    return run
