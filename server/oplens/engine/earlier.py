"""A function profiled after an edit: its earlier version found, and whether it can be measured beside the edit.

Two runs made by two processes at two moments differ by the machine's moment as much as by the code (issue 37:
the same unchanged function diffed against itself read a line 62 % faster). So when a function is profiled
and its latest stored run profiled other text, the profile measures that earlier version beside the new one in
the same worker, interleaved, as a compare measures two functions (engine/profile.py, worker/sidebyside.py),
and the diff of the two is paired round by round (engine/diff.py).

The earlier version is the earlier run's module as that worker imported it (`records.job.ModuleSnapshot`,
kept in its run folder), loaded as a module of its own under the same package (worker/usercode.py:
`load_earlier`), called on the new run's arguments. It cannot be measured, and the diff falls back to the two
runs (labelled so, with why) where:

- the earlier run kept no module (a capture, a notebook's run, a run of an older OpLens);
- a file of the user's code it imported changed or is gone since (it would run today's code, not its own);
- it ran on another backend than the one asked for now;
- loading it or calling it fails in the worker (it needs a name that is gone, its arguments no longer fit).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from oplens.engine import runs
from oplens.records import jsonfile
from oplens.records.job import MODULE_SNAPSHOT, ModuleSnapshot, file_sha256
from oplens.records.run import Run, Target, from_dict

CHANGED_SHOWN = 3  # changed files named in the reason, at most


@dataclass
class Earlier:
    """The function's earlier version: its stored run, and its module where it can be measured beside the edit,
    else `why_not` (in words)."""

    run: Run
    snapshot: ModuleSnapshot | None
    why_not: str = ""

    def target(self, now: Target) -> Target:
        """The earlier version's target, in the file as it is named now."""
        return dataclasses.replace(self.run.target, file=now.file, notebook="", module="")


def earlier_version(root: Path, target: Target, backend: str) -> Earlier | None:
    """The latest stored run of `target`'s function where it profiled other text than `target`'s now; None where
    there is none, or where the function did not change since its latest run (not an edit)."""
    stored = [r for r in runs.history(root, target.home(), target.qualname) if isinstance(r, Run)]
    if not stored or not stored[-1].target.source or _same(stored[-1].target.source, target.source):
        return None
    run = stored[-1]
    snapshot = _snapshot(Path(run.run_dir))
    if snapshot is None:
        return Earlier(run, None, f"run {run.run_id} kept no copy of its module (a capture, a notebook's run, or "
                                  "a run of an older OpLens)")  # fmt: skip
    if backend not in ("auto", run.backend.name):
        return Earlier(run, None, f"run {run.run_id} ran on {run.backend.name}, this profile on {backend}")
    changed = _changed(snapshot)
    if changed:
        more = f" and {len(changed) - CHANGED_SHOWN} more" if len(changed) > CHANGED_SHOWN else ""
        return Earlier(run, None, f"{', '.join(changed[:CHANGED_SHOWN])}{more} changed since run {run.run_id}, "
                                  "which imported it: the earlier version would run today's code")  # fmt: skip
    return Earlier(run, snapshot)


def _same(a: str, b: str) -> bool:
    """The same code: equal but for trailing spaces and blank lines (what an editor's save may change)."""
    return [line.rstrip() for line in a.strip().splitlines()] == [line.rstrip() for line in b.strip().splitlines()]


def _snapshot(run_dir: Path) -> ModuleSnapshot | None:
    try:
        found = from_dict(ModuleSnapshot, jsonfile.read(run_dir / MODULE_SNAPSHOT))
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return found if found.text else None


def _changed(snapshot: ModuleSnapshot) -> list[str]:
    """The imported files whose bytes differ from the snapshot's (or are gone), by name."""
    changed = []
    for name, digest in sorted(snapshot.imports.items()):
        now = file_sha256(Path(name))
        if now != digest:
            changed.append(Path(name).name + ("" if now else " (gone)"))
    return changed
