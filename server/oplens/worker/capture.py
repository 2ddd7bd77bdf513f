"""The capture window inside the user's program (`oplens run`, worker side).

Each target's definition was decorated by `wrap(index)` when its file was compiled
(`worker/instrument.py`). The wrapper counts the target's calls and, call by call:

    calls 1 .. skip                    run untouched (they compile and warm caches); the last one
                                       records input shapes on the CPU, for the insights
    the next profiler_warmup calls     under the started profiler, dropped (its start-up cost)
    the next `calls`                   profiled by the loop `profile` runs (`worker/calls.py`): an
                                       iteration range per call, the lines marked, the device
                                       synchronised after each and before the profiler stops
    after the window                   untouched again

Only the outermost call on the thread that first called a target counts: a recursive call belongs
to the call around it, other threads and forked children (DataLoader workers) run untouched, and a
call met while torch.compile traces the function runs untouched (its lines never run in the compiled
graph: the graphs that fused them say so, `compiled_graphs`). Targets are captured one after another,
in the order given, each window its own profiler session. When a window completes, the run is
processed there and then, as `profile` processes its iterations (`profiling.finish`), and sent to the
parent; with `stop` the program ends once the last one is.

What a window is, is the capturer's one parameter, its `WindowKind`: `Lines` here (a line target), or
the overview's (`worker/overview.py`): `Steps` (a step function's calls, recorded whole) or
`TimeWindow` (a span of the program's time, opened and closed from a timer). The counting, the
window's `ProfiledCalls`, the runs sent and the end are the capturer's for all three.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, Protocol, TypeVar

import torch

from oplens.backends.device import Backend
from oplens.records.job import Ended, Finished, Job, Progress, WorkerMessage
from oplens.records.overview import AnyRun
from oplens.records.run import Capture as CaptureRecord
from oplens.records.run import Config, Run, Target
from oplens.worker import profiling
from oplens.worker.calls import ProfiledCalls, ShapesCall, shapes_call, work_of
from oplens.worker.compiled import FusedLines
from oplens.worker.instrument import ImportHook
from oplens.worker.linemarks import LineMarker

F = TypeVar("F", bound=Callable[..., Any])
Send = Callable[[WorkerMessage], None]

_ACTIVE: Capturer | None = None  # the capture of this process, while the program runs
WAITING_EVERY_S = 0.1


class StopProgram(BaseException):
    """Raised in the program's main thread on the parent's STOP_SIGNAL (records/job.py); it unwinds the
    program like KeyboardInterrupt."""


def wrap(index: int) -> Callable[[F], F]:
    """The decorator the instrumented source applies to target `index` (innermost)."""

    def decorate(fn: F) -> F:
        capture = _ACTIVE
        if capture is None or not hasattr(fn, "__code__"):
            return fn
        return capture.wrapper(index, fn)  # type: ignore[return-value]

    return decorate


@dataclass
class Window:
    """One target's calls and, once its window opens, its profile."""

    target: Target
    stage_dir: str
    seen: int = 0  # counted calls
    elsewhere: int = 0  # calls on other threads (not counted)
    busy: bool = False  # a counted call is running (a nested one is part of it)
    done: bool = False
    first_call_us: float = 0.0
    shapes: ShapesCall | None = None
    marker: LineMarker | None = None
    calls: ProfiledCalls | None = None  # the window's profiled calls, once it opens

    @property
    def started(self) -> int:
        """Window calls begun (the profiler's warm-up included)."""
        return self.calls.started if self.calls is not None else 0

    @property
    def wall_us(self) -> list[float]:
        """Per profiled call."""
        return self.calls.wall_us if self.calls is not None else []


class WindowKind(Protocol):
    """What a window is: how it opens, what its calls record and the run it makes."""

    shapes: bool  # the last skipped call records input shapes (the lines' insights)

    def begin(self, capture: Capturer) -> None:
        """The program is about to start."""

    def open(self, capture: Capturer, w: Window, fn: Callable[..., Any], args: tuple[Any, ...]) -> ProfiledCalls:
        """The window's profiled calls, at its first window call."""
        ...

    def calling(self, w: Window, frame: FrameType | None) -> None:
        """Before each window call (`frame`: the capture's, under the program's caller)."""

    def describe(self, capture: Capturer, w: Window, partial: str, stopped: bool) -> AnyRun:
        """The window's run (an overview's: its `OverviewRun`)."""
        ...

    def end(self, capture: Capturer) -> None:
        """The program ended: no window opens any more."""


class Capturer:
    """The windows of one program run, and what it sends the parent; `kind`: what a window is (`Lines`,
    a line target's, by default)."""

    def __init__(self, job: Job, backend: Backend[Any], hook: ImportHook, fused: FusedLines, send: Send,
                 kind: WindowKind | None = None) -> None:  # fmt: skip
        self.job, self.backend, self.hook, self.fused, self.send = job, backend, hook, fused, send
        self.kind: WindowKind = kind if kind is not None else Lines()
        targets = [(job.target, job.stage_dir)] + [(t.target, t.stage_dir) for t in job.more_targets]
        self.windows = [Window(t, d) for t, d in targets]
        self.skip, self.calls, self.warm = job.warmup, job.iters, job.profiler_warmup
        self.current = 0  # the window open now, or next
        self.thread: int | None = None  # the capturing thread: the first to call a target
        self.disabled = False  # in a forked child
        self._finishing = False
        self._finishing_lock = threading.Lock()
        self._waited_at = 0.0
        os.register_at_fork(after_in_child=self._forked)

    def __enter__(self) -> Capturer:
        global _ACTIVE
        _ACTIVE = self
        return self

    def __exit__(self, *exc: object) -> None:
        global _ACTIVE
        _ACTIVE = None

    def send_waiting(self) -> None:
        self.send(Progress("waiting", 0, self.skip))
        self.kind.begin(self)

    def _forked(self) -> None:
        self.disabled = True

    # -- the wrapper: cheap outside the window ----------------------------------------------

    def wrapper(self, index: int, fn: Callable[..., Any]) -> Callable[..., Any]:
        w = self.windows[index]
        w.target.module = w.target.module or str(getattr(fn, "__module__", "") or "")  # as the program imported it
        capture = self
        get_ident = threading.get_ident
        is_compiling = getattr(torch.compiler, "is_compiling", lambda: False)

        @functools.wraps(fn)
        def captured(*args: Any, **kwargs: Any) -> Any:
            if is_compiling():  # Dynamo tracing: no state touched (it would guard on it and recompile)
                return fn(*args, **kwargs)
            if w.busy or capture.disabled:
                return fn(*args, **kwargs)
            me = get_ident()
            if capture.thread != me:
                if capture.thread is not None:
                    w.elsewhere += 1
                    return fn(*args, **kwargs)
                capture.thread = me
            w.busy = True
            try:
                w.seen += 1
                if w.done or index != capture.current:
                    return fn(*args, **kwargs)
                return capture._call(w, fn, args, kwargs)
            finally:
                w.busy = False

        return captured

    def _call(self, w: Window, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if w.seen <= self.skip:
            try:
                if w.seen == 1:
                    t0 = time.perf_counter_ns()
                    try:
                        return fn(*args, **kwargs)
                    finally:
                        w.first_call_us = (time.perf_counter_ns() - t0) / 1000.0
                if w.seen == self.skip and self.kind.shapes:  # the last skipped call gives the insights their input shapes
                    return self._shapes_call(w, fn, args, kwargs)
                return fn(*args, **kwargs)
            finally:
                self._waiting(w)
        return self._window_call(w, fn, args, kwargs)

    def _waiting(self, w: Window) -> None:
        """Progress through the skipped calls, at most every WAITING_EVERY_S and on the last one: a
        message costs ~25 µs, which a long skip of a small function would pay on every call."""
        now = time.monotonic()
        if w.seen == self.skip or now - self._waited_at >= WAITING_EVERY_S:
            self._waited_at = now
            self.send(Progress("waiting", w.seen, self.skip))

    # -- inside the window ------------------------------------------------------------------

    def _marker(self, w: Window, fn: Callable[..., Any]) -> LineMarker:
        if w.marker is None:
            code = fn.__code__
            w.marker = LineMarker(code, self.hook.codes.get(os.path.realpath(code.co_filename), set()))
        return w.marker

    def _shapes_call(self, w: Window, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        w.shapes, result = shapes_call(self.backend, self._marker(w, fn), lambda: fn(*args, **kwargs), w.target.def_line)
        return result

    def _window_call(self, w: Window, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if w.calls is None:
            w.calls = self.kind.open(self, w, fn, args)
        self.kind.calling(w, sys._getframe(1))
        calls = w.calls
        recorded = len(calls.wall_us)
        try:
            # the arguments' shapes name its work: a longer sequence is other work, not a stalled call
            return calls.call(lambda: fn(*args, **kwargs), work_of(args, kwargs))
        finally:  # also when the call raised: it ran, and the program may go on
            if len(calls.wall_us) > recorded:
                self.send(Progress("capture", len(calls.wall_us), self.calls))
            if calls.done:
                self._complete(w)

    def _complete(self, w: Window) -> None:
        """The window is captured: its run to the parent, the next window opens (or the program ends)."""
        assert w.calls is not None
        w.calls.stop()
        w.done = True
        self.current += 1
        last = all(x.done for x in self.windows)
        self._send_run(w, partial="", stopped=last and self.job.stop)
        if last and self.job.stop:
            self.end(exit_code=0, stopped=True)

    # -- the end ----------------------------------------------------------------------------

    def compiled_graphs(self, w: Window) -> list[str]:
        """The torch.compile graphs that fused lines of `w`'s function."""
        t, real = w.target, os.path.realpath(w.target.file)
        return [
            name
            for name, refs in self.fused.regions.items()
            if any(t.first_line <= r.line <= t.last_line and os.path.realpath(r.file) == real for r in refs)
        ]

    def begin_finishing(self) -> bool:
        """True for the first caller only: the end is sent once (the program's thread, or the stop
        watcher's where that thread is stuck in native code)."""
        with self._finishing_lock:
            first, self._finishing = not self._finishing, True
            return first

    def finish_windows(self, exit_code: int | None, failure: Callable[[Window], Any] | None,
                       already_begun: bool = False) -> None:  # fmt: skip
        """The program ended (`exit_code`; None: OpLens stopped it): what each unfinished window
        captured goes out as a partial run, then `failure(window)`'s error for the first one."""
        self.kind.end(self)
        if not already_begun and not self.begin_finishing():
            threading.Event().wait()  # the stop watcher sends the end and exits the process
        unfinished = [w for w in self.windows if not w.done]
        for w in unfinished:
            if w.calls is not None:
                w.calls.stop()
            if w.wall_us:
                ended = "OpLens stopped the program" if exit_code is None else f"the program ended (exit status {exit_code})"
                reason = f"{ended} after {len(w.wall_us)} of {self.calls} profiled calls"
                self._send_run(w, partial=reason, stopped=exit_code is None)
        if unfinished and failure is not None:
            self.send(failure(unfinished[0]))

    def end(self, exit_code: int, stopped: bool) -> None:
        """`Ended` to the parent; with `stopped`, the program ends here (the result is kept)."""
        if stopped:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:
                    pass
        self.send(Ended(exit_code, [w.seen for w in self.windows]))
        if stopped:
            os._exit(0)

    def _send_run(self, w: Window, partial: str, stopped: bool) -> None:
        self.send(Progress("processing", 0, 1))
        self.send(Finished(self.describe(w, partial, stopped)))
        # The program goes on at its own speed: the profiles' events (hundreds of thousands of
        # objects) must not stay alive for the collector to walk on every full collection.
        if w.calls is not None:
            w.calls.release()  # its counts stay: what the end of the program reports reads them
        if w.marker is not None:
            w.marker.release()  # the program goes on untouched by the marks
        w.shapes = w.marker = None
        gc.collect()

    def describe(self, w: Window, partial: str, stopped: bool) -> AnyRun:
        """The window's run, as its kind makes it."""
        return self.kind.describe(self, w, partial, stopped)


class Lines:
    """A line target's window: its lines marked in every profiled call, input shapes from the last
    skipped call, the run processed as `profile` finishes its iterations."""

    shapes = True

    def begin(self, capture: Capturer) -> None:
        pass

    def open(self, capture: Capturer, w: Window, fn: Callable[..., Any], args: tuple[Any, ...]) -> ProfiledCalls:
        return ProfiledCalls(capture.backend, Path(w.stage_dir), capture._marker(w, fn), capture.calls, capture.warm)

    def calling(self, w: Window, frame: FrameType | None) -> None:
        pass

    def end(self, capture: Capturer) -> None:
        pass

    def describe(self, capture: Capturer, w: Window, partial: str, stopped: bool) -> Run:
        """The window's Run, as `profile` finishes its iterations, with the capture's record."""
        assert w.calls is not None
        job = dataclasses.replace(capture.job, target=w.target, stage_dir=w.stage_dir, more_targets=[])
        first = [w.first_call_us] if w.first_call_us else []
        fused = capture.fused
        measured = profiling.Measured(w.calls.prof, w.shapes, w.wall_us, first, fused.regions, fused.graphs,
                                      fused.work())  # fmt: skip
        run = profiling.finish(job, capture.backend, measured, capture=True,
                               progress=lambda stage, done, total: capture.send(Progress(stage, done, total)))  # fmt: skip
        iters = len(w.wall_us)
        run.run_id = run_id_of(w)
        run.config = Config(warmup=capture.skip, iters=iters, profiler_warmup=capture.warm, args="",
                            timeout_s=job.timeout_s, record_shapes=w.shapes is not None)  # fmt: skip
        program = job.program
        assert program is not None
        run.capture = CaptureRecord(
            program=str(program),
            argv=list(program.args),
            cwd=program.cwd,
            calls_seen=w.seen,
            calls_skipped=min(w.seen, capture.skip),
            calls_profiler_warmup=min(w.started, capture.warm),
            calls_profiled=iters,
            compiled_graphs=len(capture.compiled_graphs(w)),
            partial=bool(partial),
            reason=partial,
            stopped=stopped,
        )
        if partial:
            run.backend.warnings.append(f"partial capture: {partial}; the figures are over those calls only")
        return run


def run_id_of(w: Window) -> str:
    """The run's id: the parent named the staging directory by it (a rank writes into its ranks/<R>/)."""
    stage = Path(w.stage_dir)
    return stage.parent.parent.name if stage.parent.name == "ranks" else stage.name
