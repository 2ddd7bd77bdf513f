"""The program overview's window (`oplens run --step FILE::QUALNAME`, worker side).

The step function is instrumented and counted as a capture's target is (`worker/capture.py`: its first
`skip` calls untouched, the profiler's warm-up dropped, then `calls` steps), but each profiled step is
recorded whole, with the user's frames and no line marks: each call of a user function in a range of its
own (`worker/userframes.py`, its code swapped for the window only), or, in a program that has used
torch.compile, torch's Python tracer (`with_stack=True`, every Python call); and every `nn.Module` call in
it gets a range named by the module's attribute path (global forward hooks, installed for the window
only). The profile is then attributed to the user's functions, files and modules
(`analysis/functions.py`) and sent as an `OverviewRun` (records/overview.py).

Both overview windows are kinds of the capture's one window (`WindowKind`, the capturer's parameter):
`Steps` (a step function's calls) and `TimeWindow` (a span of the program's time, opened and closed from
a timer: one span of the same `ProfiledCalls`); what they record beside the ops and the run they make is
their `Recording`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
import sysconfig
import threading
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch._C._autograd import DeviceType

import oplens
from oplens.analysis.functions import OpTime, Profile, PyFrame, Span, attribute
from oplens.records import names
from oplens.records.job import Job, Progress
from oplens.records.overview import OverviewRun
from oplens.records.run import Capture as CaptureRecord
from oplens.records.run import Config, Spread, Totals
from oplens.worker import userframes
from oplens.worker.calls import ProfiledCalls
from oplens.worker.capture import Capturer, Window, run_id_of
from oplens.worker.linemarks import Range, recording
from oplens.worker.userframes import UserFrames


class Recording:
    """What an overview's window records beside the ops, and the run it makes of them: the module ranges, the
    user's frames (or torch's Python tracer), their attribution to the user's functions."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.modules = ModuleRanges()
        self.frames: UserFrames | None = None  # None: torch's Python tracer

    @functools.cached_property
    def roots(self) -> list[str]:
        """The folders of the user's code: the workspace, the program's folder and its script's."""
        program = self.job.program
        assert program is not None
        return user_roots(self.job.workspace, program.cwd, program.program if not program.module else "")

    @functools.cached_property
    def is_user(self) -> Callable[[str], str | None]:
        """The absolute path of a file of the user's code (under `roots`), else None."""
        roots = self.roots
        return functools.lru_cache(maxsize=None)(lambda f: user_file(f, roots))

    def open(self, capture: Capturer, w: Window, calls: int, warm: int, running: Any = None) -> ProfiledCalls:
        """The modules' ranges on, the user's frames as ranges from now on (their code swapped, where this
        process allows it), and the window's profiled calls: no line marks, Python stacks where the frames
        are not swapped. `running`: the module whose forward is running now."""
        self.modules.install(threading.get_ident(), running)
        if userframes.usable():
            self.frames = UserFrames(self.is_user)
            self.frames.swap()
        return ProfiledCalls(capture.backend, Path(w.stage_dir), contextlib.nullcontext(), calls, warm,
                             stacks=self.frames is None)  # fmt: skip

    def describe(self, capture: Capturer, w: Window, partial: str, stopped: bool) -> OverviewRun:
        self.modules.remove()
        if self.frames is not None:
            self.frames.restore()
        assert w.calls is not None
        job = self.job
        t0 = time.perf_counter()
        capture.send(Progress("processing", 0, 1))
        backend = capture.backend
        info = backend.info()
        profile = read_profile(w.calls.prof, backend.facts.on_device, backend.facts.per_op_device_time)
        if self.frames is not None:
            around_steps(profile, self.frames.running)
        profile.module_types = dict(self.modules.types)
        program = job.program
        assert program is not None
        overview = attribute(profile, self.is_user)
        t = w.target
        overview.step = f"{t.file}::{t.qualname}" if t.qualname else ""
        if not t.qualname:
            overview.per = "window"
            overview.window_s = job.window_s
            overview.delay_s = job.window_delay_s
        overview.step_wall_us = list(w.wall_us)
        overview.device_label = info.device_label
        overview.user_roots = self.roots
        if overview.steps != len(w.wall_us):
            overview.note = f"{overview.steps} step ranges in the profile for {len(w.wall_us)} profiled steps"
        iters = len(w.wall_us)
        wall = sorted(w.wall_us)
        skip, warm = capture.skip, capture.warm
        run = OverviewRun(
            target=t,
            backend=info,
            config=Config(warmup=skip, iters=iters, profiler_warmup=warm, timeout_s=job.timeout_s,
                          record_shapes=False),  # fmt: skip
            totals=Totals(self_cpu_us=overview.total_cpu_us, self_device_us=overview.total_device_us,
                          op_calls=len(profile.ops) / max(1, iters),
                          wall_us=Spread(median=wall[len(wall) // 2], min=wall[0], max=wall[-1]) if wall else Spread()),
            overview=overview,
            run_id=run_id_of(w),
        )  # fmt: skip
        run.capture = CaptureRecord(program=str(program), argv=list(program.args), cwd=program.cwd, calls_seen=w.seen,
                                    calls_skipped=min(w.seen, skip), calls_profiler_warmup=min(w.started, warm),
                                    calls_profiled=iters, partial=bool(partial), reason=partial, stopped=stopped)  # fmt: skip
        if partial:
            run.backend.warnings.append(f"partial overview: {partial}; the figures are over those steps only")
        if overview.total_cpu_us == 0 and overview.total_device_us == 0:  # not one op inside the steps
            what = f"{iters} profiled step{'s' if iters != 1 else ''} of {t.qualname}" if t.qualname else "the time window"
            run.backend.warnings.append(
                f"the overview saw no PyTorch ops in {what} ({len(profile.frames)} Python frames): the step runs none "
                "itself; give --step the function that does (the training step, or the model's forward), or a time "
                "window (--delay, --duration) where the program computes")  # fmt: skip
        run.timings_ms["processing"] = (time.perf_counter() - t0) * 1000.0
        return run


class Steps:
    """The overview's window over a step function's calls (`--step`), counted as a line target's are, each
    profiled step recorded whole (no line marks, no input shapes)."""

    shapes = False

    def __init__(self, job: Job) -> None:
        self.recording = Recording(job)

    def begin(self, capture: Capturer) -> None:
        pass

    def open(self, capture: Capturer, w: Window, fn: Callable[..., Any], args: tuple[Any, ...]) -> ProfiledCalls:
        return self.recording.open(capture, w, capture.calls, capture.warm, args[0] if args else None)

    def calling(self, w: Window, frame: types.FrameType | None) -> None:
        frames = self.recording.frames
        if frames is not None and w.calls is not None and w.calls.started == w.calls.warm:  # the first recorded step
            frames.note_running(frame)

    def describe(self, capture: Capturer, w: Window, partial: str, stopped: bool) -> OverviewRun:
        return self.recording.describe(capture, w, partial, stopped)

    def end(self, capture: Capturer) -> None:
        pass


POSTPONE_S = 0.05  # a timer that met the program importing tries again this much later


def _importing(frame: types.FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


class TimeWindow:
    """The overview's window over whatever the program runs from `window_delay_s` after its start for
    `window_s` seconds (no step function named): a real-time timer (SIGALRM) opens and closes it in the main
    thread, where torch.profiler records the program's ops (started from another thread it would record that
    thread's only); it is one span of the window's `ProfiledCalls`, its one "step"."""

    shapes = False

    def __init__(self, job: Job) -> None:
        self.recording = Recording(job)
        self.capture: Capturer | None = None
        self._opened_at = 0.0

    def begin(self, capture: Capturer) -> None:
        self.capture = capture
        self._opened_at = time.monotonic()
        signal.signal(signal.SIGALRM, self._alarm)
        signal.setitimer(signal.ITIMER_REAL, max(capture.job.window_delay_s, 0.001))

    def _alarm(self, signum: int, frame: types.FrameType | None) -> None:
        capture = self.capture
        assert capture is not None
        w = capture.windows[0]
        if w.done or capture.disabled:
            return
        if _importing(frame):  # the profiler's start imports too: begun inside a half-done import, that one breaks
            signal.setitimer(signal.ITIMER_REAL, POSTPONE_S)
            return
        if w.calls is None:
            w.calls = self.recording.open(capture, w, calls=1, warm=0)
            w.calls.begin_span()
            if self.recording.frames is not None:
                self.recording.frames.note_running(frame)  # the program's frames running now (under this handler)
            capture.send(Progress("capture", 0, 1))
            signal.setitimer(signal.ITIMER_REAL, capture.job.window_s)
            return
        capture.send(Progress("capture", 1, 1))
        capture._complete(w)

    def open(self, capture: Capturer, w: Window, fn: Callable[..., Any], args: tuple[Any, ...]) -> ProfiledCalls:
        raise AssertionError("a time window has no calls")  # nothing is instrumented

    def calling(self, w: Window, frame: types.FrameType | None) -> None:
        pass

    def describe(self, capture: Capturer, w: Window, partial: str, stopped: bool) -> OverviewRun:
        return self.recording.describe(capture, w, partial, stopped)

    def end(self, capture: Capturer) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)

    def elapsed_s(self) -> float:
        return time.monotonic() - self._opened_at if self._opened_at else 0.0


def read_profile(prof: Any, on_device: bool, per_op_device_time: bool) -> Profile:
    """The stopped profile's Python frames, ops (with their linked device time), steps and module ranges."""
    cpu = DeviceType.CPU
    frames: list[PyFrame] = []
    ops: list[tuple[OpTime, int]] = []
    steps: list[Span] = []
    modules: list[Span] = []
    device: dict[int, int] = {}
    step_prefix, module_prefix, frame_prefix = names.ITER_RANGE, names.MODULE_RANGE, names.FRAME_RANGE
    for k in prof.profiler.kineto_results.events():
        start = k.start_ns()
        end = start + k.duration_ns()
        thread = k.start_thread_id()
        if k.is_python_function():
            frames.append(PyFrame(k.name(), thread, start, end))
            continue
        if k.device_type() != cpu:
            linked = k.linked_correlation_id()
            device[linked] = device.get(linked, 0) + (end - start)
            continue
        name = k.name()
        if name.startswith(frame_prefix):
            frames.append(PyFrame(name[len(frame_prefix) :], thread, start, end))
        elif name.startswith(step_prefix):
            steps.append(Span(name[len(step_prefix) :], thread, start, end))
        elif name.startswith(module_prefix):
            modules.append(Span(name[len(module_prefix) :], thread, start, end))
        elif name == "[memory]" or name.startswith("ProfilerStep#") or k.is_async() or thread != k.end_thread_id():
            continue
        else:
            legacy = max(0, int(k.privateuse1_elapsed_us() * 1000)) if per_op_device_time else 0
            ops.append((OpTime(thread, start, end, legacy), k.correlation_id()))
    for op, correlation in ops:
        op.device_ns += device.get(correlation, 0) if correlation else 0
    steps.sort(key=lambda s: s.start_ns)
    return Profile(frames, [op for op, _ in ops], steps, modules, on_device=on_device)


def around_steps(profile: Profile, running: list[str]) -> None:
    """The user frames that were running when the steps began (outermost first) as frames around them all,
    on the steps' thread, each a nanosecond outside the next so they nest in order."""
    if not running or not profile.steps:
        return
    first, last = profile.steps[0], profile.steps[-1]
    n = len(running)
    profile.frames[:0] = [PyFrame(name, first.thread, first.start_ns - (n - i), last.end_ns + (n - i))
                          for i, name in enumerate(running)]  # fmt: skip


def user_roots(workspace: str, cwd: str, script: str) -> list[str]:
    """The folders whose files are the user's: the workspace, the program's folder and its script's."""
    roots = [workspace, cwd, os.path.dirname(script) if script else ""]
    out: list[str] = []
    for r in roots:
        if r and (real := os.path.realpath(r)) not in out:
            out.append(real)
    return out


def _library_dirs() -> list[str]:
    dirs = {sysconfig.get_paths().get(k, "") for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    dirs |= {os.path.dirname(os.path.dirname(torch.__file__)), os.path.dirname(oplens.__file__)}
    return sorted({os.path.realpath(d) for d in dirs if d})


def user_file(name: str, roots: list[str]) -> str | None:
    """The absolute path of the profiler's file `name` where it is the user's code, else None. The profiler
    writes some paths relative to the sys.path entry they were found in ("torch/nn/modules/module.py")."""
    if name.startswith("<"):
        return None
    candidates = [name] if os.path.isabs(name) else [os.path.join(p or os.getcwd(), name) for p in sys.path]
    for c in candidates:
        if os.path.isfile(c):
            real = os.path.realpath(c)
            break
    else:
        return None
    if any(real.startswith(lib + os.sep) for lib in _LIBRARIES()) or "site-packages" in real or "dist-packages" in real:
        return None
    return real if any(real.startswith(r + os.sep) for r in roots) else None


_LIBRARIES = functools.cache(_library_dirs)


class ModuleRanges:
    """A profiler range per `nn.Module` call on the capturing thread, named by the module's path from the
    outermost module called (`model.blocks.3.attn`): global forward hooks, only while installed."""

    def __init__(self) -> None:
        self.thread = 0
        self.stack: list[tuple[torch.nn.Module, Any]] = []
        self.paths: dict[int, str] = {}
        self.descendants: dict[int, dict[int, str]] = {}  # a parent's submodules' names, by id
        self.types: dict[str, str] = {}
        self.handles: list[Any] = []

    def install(self, thread: int, running: Any = None) -> None:
        """The hooks on, for `thread`'s module calls; `running`: the module whose forward is running now (a
        step that is a module's forward: its pre hook has passed), its children named from it."""
        from torch.nn.modules import module as nn_module

        self.thread = thread
        if isinstance(running, torch.nn.Module) and id(running) not in self.paths:
            path = self.paths[id(running)] = _root_name(running)
            self.types[path] = type(running).__name__
            self.stack.append((running, None))
        self.handles = [
            nn_module.register_module_forward_pre_hook(self._pre),
            nn_module.register_module_forward_hook(self._post, always_call=True),
        ]

    def remove(self) -> None:
        for h in self.handles:
            h.remove()
        self.handles = []
        while self.stack:
            r = self.stack.pop()[1]
            if r is not None:
                r.__exit__(None, None, None)

    def _pre(self, module: torch.nn.Module, args: Any) -> None:
        if threading.get_ident() != self.thread or torch.compiler.is_compiling():
            return
        path = self.paths.get(id(module))
        if path is None:
            path = self.paths[id(module)] = self._path(module)
            self.types[path] = type(module).__name__
        r = Range(names.MODULE_RANGE + path) if recording() else None  # not across the schedule's warm-up
        if r is not None:
            r.__enter__()
        self.stack.append((module, r))

    def _post(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        if threading.get_ident() != self.thread or torch.compiler.is_compiling():
            return
        if not any(m is module for m, _ in self.stack):
            return
        while self.stack:  # a child whose forward raised never saw its post hook: closed with it
            m, r = self.stack.pop()
            if r is not None:
                r.__exit__(None, None, None)
            if m is module:
                return

    def _path(self, module: torch.nn.Module) -> str:
        if self.stack:
            parent = self.stack[-1][0]
            parent_path = self.paths.get(id(parent), type(parent).__name__)
            names_in = self.descendants.get(id(parent))
            if names_in is None:  # a container (ModuleList, ModuleDict) is iterated, not called: its children's
                names_in = self.descendants[id(parent)] = {id(m): n for n, m in parent.named_modules() if n}
            name = names_in.get(id(module))
            return f"{parent_path}.{name if name is not None else type(module).__name__}"
        return _root_name(module)


def _root_name(module: torch.nn.Module) -> str:
    """What the program calls the outermost module it is seen calling: the name bound to it in the outermost
    of the program's frames that binds it (`model` in `main`, rather than a step function's parameter), else
    `<Owner>.<attribute>` where an object's method holds it (a module entered before a time window opened:
    its parent's call began outside it), else its class name."""
    found = ""
    frame = sys._getframe(1)
    torch_dir = os.path.dirname(torch.__file__)
    while frame is not None:
        if not frame.f_code.co_filename.startswith(torch_dir) and frame.f_code.co_filename != __file__:
            for name, value in frame.f_locals.items():
                if value is module:
                    found = name
                    break
            else:
                owner = frame.f_locals.get("self")
                attrs = getattr(owner, "__dict__", None)
                if isinstance(attrs, dict):
                    for name, value in {**attrs, **attrs.get("_modules", {})}.items():
                        if value is module:
                            found = f"{type(owner).__name__}.{name}"
                            break
        frame = frame.f_back  # type: ignore[assignment]
    return found or type(module).__name__
