"""Run directories: `.oplens/runs/<run-id>/` with `result.json`, `trace.json`, artifacts.

A run is built in `.staging/<run-id>/` and renamed into place only when complete, with
`result.json` written atomically, so a crashed or failed run never leaves half a run and
never touches an earlier one.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import time
from pathlib import Path

from oplens.records import jsonfile
from oplens.records.atomic import write_json_atomic
from oplens.records.errors import bad_input
from oplens.records.run import Run

RUNS_DIR = Path(".oplens") / "runs"
RESULT = "result.json"


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


def commit(root: Path, staged: Path, run: Run) -> Path:
    """Write result.json into the staged run and move it into place; never overwrites."""
    final = root / run.run_id
    run.run_dir = str(final)
    write_json_atomic(staged / RESULT, run.to_dict())
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


def keep_failed_log(root: Path, run_id: str, log: Path) -> Path | None:
    """A failed run leaves no run directory, but its worker log is kept in `.failed/`."""
    return keep_log(log, root / ".failed" / f"{run_id}.log")


def discard(staged: Path) -> None:
    shutil.rmtree(staged, ignore_errors=True)


def load(run_dir: Path) -> Run:
    return Run.from_dict(jsonfile.read(run_dir / RESULT))


def list_runs(root: Path) -> list[Path]:
    """Completed runs, oldest first (their ids start with a timestamp)."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / RESULT).is_file())


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
            try:
                written = (p / RESULT).stat().st_mtime_ns
            except OSError:
                continue  # no result.json: not a completed run
            found.append((p.name[:15], written, p.name, p))
    return [p for *_, p in sorted(found)]


def same_file(a: str, b: str) -> bool:
    return a == b or Path(a).resolve() == Path(b).resolve()


def history(root: Path, file: str, qualname: str) -> list[Run]:
    """Every stored run of function `qualname` of `file`, oldest first (a damaged one is skipped)."""
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


def find(root: Path, spec: str) -> Run:
    """A stored run by directory path, run id, unique id prefix, or `latest`; its `run_dir` is where it is now."""
    path = Path(spec).expanduser()
    if (path / RESULT).is_file():
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
        raise bad_input(f"cannot read {run_dir / RESULT}: {e}") from None
    run.run_dir = str(run_dir.resolve())
    return run
