"""The worker's link to the OpLens process that started it: its messages to it (`ToParent`), its end,
with the program's processes, when that process is gone (`watch_parent`), and the bundle it inherits put
after the environment's packages (`environment_first`): what every worker process sets up first.

`ToParent` writes the messages of `records/job.py` (Ready, Progress, Finished, Failed, Ended) as JSON lines
on the file descriptor the parent gave; `progress` is what a profile reports its stages with.

A worker runs in a session of its own: its process group holds the program's child processes and,
for a distributed capture, torchrun and the local ranks. So when the parent dies without stopping
it (SIGKILL, the OOM killer, an editor server killed with its window), no signal reaches any of
them, and the program would run on, holding the machine's devices. The parent gives its pid in the
environment (`PARENT_ENV`); a daemon thread checks once a second that this pid is still the same
process (its start time in /proc, so a reused pid does not count) and not a zombie. When it is gone,
the worker's process group gets SIGTERM (torchrun forwards it to its ranks), then SIGKILL.

The environment's packages before the extension's (`environment_first`, at the worker's start): the
extension starts the language server with its bundled pure-Python libraries (`bundled/libs`: OpLens, pygls,
attrs, rich, ...) first on PYTHONPATH, and names that folder in `OPLENS_BUNDLED_LIBS`; the worker inherits
both. The user's imports must find what the environment has, as the program alone would (its attrs, its
typing_extensions, torch's own), not the extension's copies. So once `oplens` itself is imported from the
bundle, the worker moves that folder to the end of `sys.path`: OpLens's modules keep coming from the bundle
(through the package's `__path__`, so the server and its worker are one version), everything else from the
environment first, and a package only the bundle has still imports. Processes the user's code starts
inherit PYTHONPATH as it is (one of them may unpickle OpLens's objects).

No torch here: `environment_first` runs before the worker imports it.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import IO

from oplens.records.job import PARENT_ENV, Progress, WorkerMessage, encode

POLL_S = 1.0
GRACE_S = 5.0  # for SIGTERM to end the group before SIGKILL does
_PROC = os.path.exists("/proc/self/stat")
BUNDLED_LIBS_ENV = "OPLENS_BUNDLED_LIBS"


def environment_first() -> None:
    """Move the bundled libraries' folder (`OPLENS_BUNDLED_LIBS`) to the end of `sys.path`, if it is on it."""
    libs = os.environ.get(BUNDLED_LIBS_ENV, "")
    if not libs:
        return
    key = os.path.normcase(os.path.abspath(libs))
    found = [p for p in sys.path if p and os.path.normcase(os.path.abspath(p)) == key]
    for p in found:
        sys.path.remove(p)
    if found:
        sys.path.append(found[0])


class ToParent:
    """Messages to the parent, one JSON line each, flushed at once."""

    def __init__(self, out: IO[str]) -> None:
        self._out = out

    def send(self, message: WorkerMessage) -> None:
        self._out.write(encode(message))
        self._out.flush()

    def progress(self, stage: str, done: int, total: int) -> None:
        self.send(Progress(stage, done, total))


def watch_parent() -> None:
    """Start watching the parent named in the environment (nothing to watch where it names none)."""
    try:
        pid = int(os.environ.get(PARENT_ENV, ""))
    except ValueError:
        return
    birth = _start_time(pid)
    threading.Thread(target=_watch, args=(pid, birth), name="oplens-parent-watch", daemon=True).start()


def _watch(pid: int, birth: str | None) -> None:
    while _alive(pid, birth):
        time.sleep(POLL_S)
    group = os.getpgrp()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(group, sig)
        except OSError:
            return
        time.sleep(GRACE_S)


def _alive(pid: int, birth: str | None) -> bool:
    if _PROC:
        return birth is not None and _start_time(pid) == birth
    try:  # no /proc (macOS): whether the pid exists at all
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _start_time(pid: int) -> str | None:
    """The process's start time (field 22 of /proc/PID/stat), None where it is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()  # after the command name, which may hold spaces and ')'
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return fields[19]
