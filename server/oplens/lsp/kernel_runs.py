"""The runs a notebook's kernel writes (the `%oplens` magic), found as they appear.

The magic runs in the user's kernel, not in this server: it stores its run in the runs folder beside the
notebook (`.oplens/runs`, the kernel's working folder), the server's own or another. Each such folder of a
notebook open in an editor is watched: one thread looks at the folders' modification times once a second
and reads only the run folders that were not there before (a run is moved into place whole, so a new
folder is a complete run). Beside a notebook every run is its kernel's, a function of a file's too (shown in
that file); in the server's own runs folder only a notebook's run is (the others are the server's own, heard
of already, or the CLI's): those go to `found`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from oplens.engine import runs
from oplens.records.overview import AnyRun

log = logging.getLogger(__name__)

POLL_S = 1.0


class KernelRuns:
    def __init__(self, found: Callable[[AnyRun], None], poll_s: float = POLL_S) -> None:
        self._found = found
        self._poll_s = poll_s
        self._lock = threading.Lock()
        self._folders: dict[Path, tuple[int, set[str]]] = {}  # runs folder → (its mtime, the run folders seen)
        self._own: set[Path] = set()  # the server's own runs folder: only notebooks' runs are the kernels'
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, folder: Path, own: bool = False) -> list[AnyRun]:
        """Watch `folder` (a runs folder; `own`: the server's, whose runs it read at start) from now on. The
        runs already stored there, oldest first, when it was not watched before and is not `own` (else
        none): they are not new."""
        folder = folder.resolve()
        with self._lock:
            if folder in self._folders or self._stop.is_set():
                return []
            self._folders[folder] = (_mtime(folder), _names(folder))
            names = self._folders[folder][1]
            if own:
                self._own.add(folder)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="oplens-kernel-runs", daemon=True)
                self._thread.start()
        return [] if own else [r for r in (_load(folder / n) for n in sorted(names)) if r is not None]

    def _run(self) -> None:
        while not self._stop.wait(self._poll_s):
            self.poll()

    def poll(self) -> None:
        """Look once: every new run of a kernel's to `found`, oldest first."""
        with self._lock:
            folders = dict(self._folders)
        for folder, (mtime, seen) in folders.items():
            now = _mtime(folder)
            if now == mtime:
                continue
            names = _names(folder)
            with self._lock:
                self._folders[folder] = (now, names)
            for name in sorted(names - seen):
                run = _load(folder / name)
                if run is not None and (run.target.notebook or folder not in self._own):
                    self._found(run)

    def close(self) -> None:
        self._stop.set()


def _mtime(folder: Path) -> int:
    try:
        return folder.stat().st_mtime_ns
    except OSError:
        return 0


def _names(folder: Path) -> set[str]:
    return {d.name for d in runs.list_runs(folder)}


def _load(run_dir: Path) -> AnyRun | None:
    try:
        return runs.load(run_dir)
    except Exception as e:  # a damaged run must not stop the watch
        log.warning("skipping run %s: %s", run_dir, e)
        return None
