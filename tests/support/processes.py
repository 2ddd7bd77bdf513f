"""Processes the tests start and end by PID, and what a killed OpLens leaves behind."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path


def stop_group(pid: int) -> None:
    """End a detached process group (a viewer the test or OpLens started) and wait for its leader."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def processes_with(text: str) -> list[int]:
    """The pids of live processes (not zombies) whose command line holds `text`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if text in cmdline and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def killed_parent_leaves_nothing(argv: list[str], cwd: Path, marker: str, ready: str, within_s: float = 30) -> list[int]:
    """Start OpLens (`argv`), wait for the output line `ready`, kill it with SIGKILL, and return the
    processes with `marker` in their command line (its workers, the program's) still there after
    `within_s`: none, when the workers see their parent gone and end the program."""
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if ready in line:
            break
    else:
        raise AssertionError("OpLens ended before the program got going:\n" + "".join(seen[-40:]))
    assert processes_with(marker), "no worker found to watch"
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + within_s
    while (left := processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.5)
    for pid in left:  # what a failure leaves must not outlive the test
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left
