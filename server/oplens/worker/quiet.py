"""Torch's profiler chatter into the run's worker.log, off the user's terminal.

Every start and stop of a `torch.profiler` session makes Kineto (libkineto, linked into
libtorch_cpu.so) write a line to `std::cerr`, file descriptor 2, from C++:

    USDT:2026-12-02 21:38:25 16920:16920 SyncActivityProfilerHandler.cpp:52] profiler_start
    USDT:2026-12-02 21:38:25 16920:16920 SyncActivityProfilerHandler.cpp:59] profiler_stop

(kineto's `libkineto/src/Logger.h`: `USDT_EMIT_START_TRACE()` is `LOG(USDT)`, its `Logger` writes
`LIBKINETO_DBG_STREAM`, `std::cerr`). Python's `sys.stderr` never sees those writes, and no setting
silences them alone: USDT (5) ranks above ERROR (4), so only `KINETO_LOG_LEVEL=6` hides them, and
Kineto's real errors with them (torch 2.13, measured: unset, 4 and 5 print them; 6 prints nothing).

So `to_log()` points file descriptor 2 at the program's log for the length of one of OpLens's own
profiler calls (start, step, stop: `worker/calls.py`), never around the user's code: anything
written there meanwhile (Kineto's lines, an error of its, a Python warning torch gives) ends up in
worker.log, appended beside what the parent copies from the program's pipes, and the call's
exception still reaches its caller, fd 2 restored first. The log's path comes from the parent in
`LOG_ENV` (`engine/process.py`); through torchrun every rank appends to it. Where fd 2 already is
that log (`oplens profile`: the worker's stderr is the log file) or there is none, it does nothing.
For those few milliseconds another thread's writes to fd 2 go to worker.log too, not the terminal.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from oplens.records.job import LOG_ENV

_lock = threading.RLock()  # one redirection at a time; a nested one keeps the outer
_depth = 0
_log_fd: int | None = None  # the log, opened once for appending (-1: none to open)


def _log() -> int:
    global _log_fd
    if _log_fd is None:
        path = os.environ.get(LOG_ENV, "")
        try:
            _log_fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC) if path else -1
        except OSError:  # gone or unwritable: the chatter stays where it was
            _log_fd = -1
    return _log_fd


def _already_there(log: int) -> bool:
    """fd 2 is the log itself (or cannot be read): nothing to move."""
    try:
        ours, err = os.fstat(log), os.fstat(2)
    except OSError:
        return True
    return (ours.st_dev, ours.st_ino) == (err.st_dev, err.st_ino)


@contextmanager
def to_log() -> Iterator[None]:
    """File descriptor 2 into the program's log for the block (see the module's doc)."""
    global _depth
    with _lock:
        log = _log()
        if _depth or log < 0 or _already_there(log):
            _depth += 1
            try:
                yield
            finally:
                _depth -= 1
            return
        _flush()  # what the user wrote before, to the terminal
        saved = os.dup(2)
        try:
            os.dup2(log, 2)
            _depth += 1
            try:
                yield
            finally:
                _depth -= 1
                _flush()  # what was written meanwhile, to the log
        finally:
            os.dup2(saved, 2)
            os.close(saved)


@contextmanager
def logging_to(path: Path) -> Iterator[None]:
    """`to_log()` writes to `path` (created) for the block, where no parent names a log: a profile in a
    notebook's kernel, whose fd 2 is the Jupyter server's log, keeps Kineto's lines in its run's log."""
    global _log_fd
    with _lock:
        before = _log_fd
        _log_fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        yield
    finally:
        with _lock:
            os.close(_log_fd)
            _log_fd = before


def _flush() -> None:
    try:
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # closed or replaced by the program
        pass
