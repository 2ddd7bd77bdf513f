"""The profiled calls: the one loop that `profile`'s iterations and the capture's window both run.

`ProfiledCalls` owns one profiler session over a target's calls, call by call:

    the first call          starts torch.profiler with the backend's activities and options
    every call              in its own iteration range (`oplens.iter:<i>`), the target's lines marked,
                            then the device synchronised, outside the range (the wait is no line's),
                            then `step()`; a call given its arguments' digest (`work_of`, the capture's
                            calls, whose arguments may differ) names it in an empty range
                            `oplens.work:<digest>` first, so that calls on other shapes are never
                            taken for the same work (analysis/outliers.py)
    the first `warm` calls  fall on the schedule's warm-up (torch.profiler's documented way to keep
                            its own start-up, 0.3-4 ms on the first op, out of the recorded calls)
    `stop()`                synchronises once more, then stops the profiler (idempotent)

`profile` drives it from a loop (`worker/profiling.py`); the capture from the decorated target,
one call of the user's program at a time (`worker/capture.py`); the overview's time window opens
it as one span (`begin_span()`, ended by `stop()`) from a timer. None writes its own.

`start_profiler` is the one place the worker builds a torch.profiler session (calibration aside).

`shapes_call` is the one call recorded with input shapes and memory on the CPU activity, what the
insights and each line's work and memory read (recording them costs as much as a small op, so the
timed calls go without). On a device whose allocator the profiler does not see (Neuron), that call
also reads the device's memory counters around each line (`worker/linememory.py`).

Torch's profiler chatter goes into the run's worker.log, off the user's terminal (`to_log`): every
profiler call here runs under it.

Every start and stop of a `torch.profiler` session makes Kineto (libkineto, linked into
libtorch_cpu.so) write a line to `std::cerr`, file descriptor 2, from C++:

    USDT:2026-12-02 21:38:25 16920:16920 SyncActivityProfilerHandler.cpp:52] profiler_start
    USDT:2026-12-02 21:38:25 16920:16920 SyncActivityProfilerHandler.cpp:59] profiler_stop

(kineto's `libkineto/src/Logger.h`: `USDT_EMIT_START_TRACE()` is `LOG(USDT)`, its `Logger` writes
`LIBKINETO_DBG_STREAM`, `std::cerr`). Python's `sys.stderr` never sees those writes, and no setting
silences them alone: USDT (5) ranks above ERROR (4), so only `KINETO_LOG_LEVEL=6` hides them, and
Kineto's real errors with them (torch 2.13, measured: unset, 4 and 5 print them; 6 prints nothing).

So `to_log()` points file descriptor 2 at the program's log for the length of one of OpLens's own
profiler calls (start, step, stop: the ones above), never around the user's code: anything
written there meanwhile (Kineto's lines, an error of its, a Python warning torch gives) ends up in
worker.log, appended beside what the parent copies from the program's pipes, and the call's
exception still reaches its caller, fd 2 restored first. The log's path comes from the parent in
`LOG_ENV` (`engine/process.py`); through torchrun every rank appends to it. Where fd 2 already is
that log (`oplens profile`: the worker's stderr is the log file) or there is none, it does nothing.
For those few milliseconds another thread's writes to fd 2 go to worker.log too, not the terminal.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import torch

from oplens.analysis.memory import DeviceLineMemory
from oplens.backends.device import Backend
from oplens.records import names
from oplens.records.job import LOG_ENV
from oplens.worker.linemarks import LineMarker, Range, mark_probe
from oplens.worker.linememory import LineDeviceMemory

T = TypeVar("T")


class ProfiledCalls:
    """`calls` recorded calls after `warm` dropped ones, under one profiler session."""

    def __init__(self, backend: Backend[Any], stage_dir: Path, marker: AbstractContextManager[Any], calls: int, warm: int,
                 stacks: bool = False) -> None:  # fmt: skip
        """`marker`: the target's line marks (the overview's steps: none); `stacks`: record Python stacks
        (the overview's attribution to functions)."""
        self.backend, self.stage_dir, self.marker = backend, stage_dir, marker
        self.calls, self.warm, self.stacks = calls, warm, stacks
        self.prof: Any = None  # the torch.profiler.profile, once started
        self.started = 0  # calls begun (the profiler's warm-up included)
        self.wall_us: list[float] = []  # per recorded call, synchronised
        self._running = False
        self._span: Range | None = None  # the time window's one recorded span, while open
        self._span_t0 = 0

    @property
    def done(self) -> bool:
        """Every recorded call has run."""
        return len(self.wall_us) >= self.calls

    def call(self, fn: Callable[[], T], work: str = "") -> T:
        """One call of the target, profiled. Also when it raises, it counts (it ran; a program may go
        on), and the device is synchronised and the profiler stepped. `work`: its arguments' digest."""
        if self.prof is None:
            self.prof = self._start()
        i = self.started - self.warm  # the recorded call's index; negative while the profiler warms up
        self.started += 1
        t0 = time.perf_counter_ns()
        try:
            with Range(f"{names.ITER_RANGE}{max(i, 0)}"):
                if work:
                    with Range(f"{names.WORK_RANGE}{work}"):
                        pass
                with self.marker:
                    return fn()
        finally:
            self.backend.synchronize()
            elapsed_us = (time.perf_counter_ns() - t0) / 1000.0  # before step(): the last one ends the trace
            if i >= 0 and isinstance(self.marker, LineMarker):
                mark_probe()  # after each recorded call, outside it: what a line mark costs in this profile
            if self.warm > 0:
                with to_log():  # Kineto's profiler_start/stop lines come from the schedule's steps
                    self.prof.step()
            if i >= 0:
                self.wall_us.append(elapsed_us)

    def begin_span(self) -> None:
        """The profiler started, and one recorded "call" begun that is no call: a time window, from now
        until `stop()` (opened and closed from a timer). It is the one step the figures are per."""
        self.prof = self._start()
        self.started += 1
        self._span = Range(f"{names.ITER_RANGE}0")
        self._span.__enter__()
        self._span_t0 = time.perf_counter_ns()

    def stop(self) -> Any:
        """The device synchronised (its queued work inside the trace), then the profiler stopped; the
        profile (None where no call started it). An open span ends first, its wall time recorded."""
        if self._span is not None:
            span, self._span = self._span, None
            span.__exit__(None, None, None)
            try:
                self.backend.synchronize()
            finally:
                self.wall_us.append((time.perf_counter_ns() - self._span_t0) / 1000.0)
        if self._running:
            self._running = False
            try:
                self.backend.synchronize()
            finally:
                with to_log():
                    self.prof.stop()
        return self.prof

    def release(self) -> None:
        """Drop the profile (hundreds of thousands of event objects once processed), keeping the counts."""
        self.stop()
        self.prof = None

    def _start(self) -> Any:
        options = self.backend.profiler_options(self.stage_dir)
        if self.warm > 0:
            options["schedule"] = torch.profiler.schedule(wait=0, warmup=self.warm, active=self.calls, repeat=1)
        if self.stacks:
            options["with_stack"] = True
        prof = start_profiler(self.backend.activities(), record_shapes=False, **options)
        self._running = True
        return prof

    def __enter__(self) -> ProfiledCalls:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_profiler(activities: list[Any], **options: Any) -> Any:
    """A torch.profiler session, started: the one place the worker builds one (calibration aside), with
    Kineto's start line to the program's log."""
    prof = torch.profiler.profile(activities=activities, **options)
    with to_log():
        prof.start()
    return prof


def work_of(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
    """A digest of a call's tensor arguments' shapes and dtypes (also inside lists, tuples and dicts, two
    levels down), by position and keyword: two calls with different digests ran on other shapes. Other
    values (a module, a number) are not in it: a step counter would make every call a kind of its own."""
    parts: list[str] = []

    def add(where: str, value: Any, depth: int) -> None:
        if isinstance(value, torch.Tensor):
            parts.append(f"{where}:{value.dtype}{tuple(value.shape)}")
        elif depth < 2 and isinstance(value, (list, tuple)):
            for k, v in enumerate(value[:64]):
                add(f"{where}.{k}", v, depth + 1)
        elif depth < 2 and isinstance(value, Mapping):
            for k, v in list(value.items())[:64]:
                add(f"{where}.{k}", v, depth + 1)

    for k, v in enumerate(args):
        add(str(k), v, 0)
    for name, v in kwargs.items():
        add(name, v, 0)
    return hashlib.blake2b(";".join(parts).encode(), digest_size=8).hexdigest() if parts else ""


@dataclass
class ShapesCall:
    """The call recorded with input shapes and memory."""

    prof: Any  # its torch.profiler.profile (CPU activity)
    device_memory: DeviceLineMemory | None = None  # its lines read from the device's counters (None: not that device)


def shapes_call(backend: Backend[Any], marker: LineMarker, fn: Callable[[], T], def_line: int) -> tuple[ShapesCall, T]:
    """One call on the CPU activity with input shapes and memory, the device synchronised before the
    profiler stops: (the profile, what the call returned). What it returns is freed by its caller,
    after the profile: it is the caller's, not a temporary of the call. Where the backend reads its
    device memory itself, the call's lines are read too, between their ranges."""
    memory, why_not = backend.device_memory()
    lines = LineDeviceMemory(memory, backend.synchronize, def_line) if memory is not None else None
    prof = start_profiler([torch.profiler.ProfilerActivity.CPU], record_shapes=True, profile_memory=True)
    try:
        if lines is not None:
            lines.start()
            marker.on_target_line = lines.at
        with Range(f"{names.ITER_RANGE}0"), marker:
            result = fn()
    finally:
        marker.on_target_line = None
        try:
            backend.synchronize()
        finally:
            with to_log():
                prof.stop()
    if lines is not None:
        return ShapesCall(prof, lines.finish()), result
    return ShapesCall(prof, DeviceLineMemory(None, 0, why_not) if why_not else None), result


# Torch's profiler chatter into the run's log (the module's doc says why and how).
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
