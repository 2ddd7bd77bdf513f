"""Line markers: a `record_function` range per executed line of the target (worker side).

`with_stack=True` knows functions, not lines, and operator syntax (`x * x`) carries no line
at all, so OpLens marks lines itself: limited to the code objects of the target's file, a range
`oplens.line:<n>` opens when the target starts a line (closing the previous one) and
`oplens.inner:<function>:<n>` for lines of same-file helpers it calls. Every op then nests under
the line that issued it. Code of other files (torch's own Python included) is never marked, so
`nn.Linear`'s ops land on the user's line that called it.

Two mechanisms give the same ranges: on Python 3.12+ local `sys.monitoring` events on those code
objects alone (linemonitor.py: other code runs untouched, a debugger or coverage keeps its own
hooks); on 3.10/3.11 `sys.settrace`, with a call hook that traces only those code objects.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Callable, Iterable
from types import CodeType, FrameType
from typing import Any

import torch

from oplens.records import names
from oplens.worker import linemonitor

TraceFn = Any  # the signature sys.settrace expects


class _SlowRange:
    """`record_function`'s own ops: on every torch OpLens supports, but a close costs ~25 µs
    (most of it a failed `__torch_function__` lookup on the handle)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._handle: Any = None

    def __enter__(self) -> None:
        self._handle = torch.ops.profiler._record_function_enter_new(self._name, None)

    def __exit__(self, *exc: object) -> None:
        with torch._C.DisableTorchFunctionSubclass():
            torch.ops.profiler._record_function_exit._RecordFunction(self._handle)


# A profiler range, opened by __enter__ and closed by __exit__. The fast one (~1.6 µs a pair,
# what torch.compile's own ranges use) is private torch API, hence the fallback.
Range: Any = getattr(getattr(torch._C, "_profiler", None), "_RecordFunctionFast", None) or _SlowRange

# Whether the profiler records now. A fast range opened while it does not (a schedule's warm-up) and closed
# once it does trips torch's guard ("exit an active record_function_fast context but no guard is set"): a
# range that may span the schedule's step (a module, a user function around the step) opens only while it
# records.
recording: Callable[[], bool] = torch._C._autograd._profiler_enabled


# How lines are marked: `monitoring` (Python 3.12+: local sys.monitoring events, worker/linemonitor.py) where the
# interpreter has it, else `settrace`; this variable forces `settrace` (a comparison, a bench).
MARKS_ENV = "OPLENS_LINE_MARKS"


class LineMarker:
    """Context manager: while active, the target's lines open profiler ranges. On Python 3.12+ from local
    `sys.monitoring` events on the target's and its same-file helpers' code alone (linemonitor.py), else from
    `sys.settrace` with a call hook that traces only those. `release()` once no marked call follows (a compare's
    plain rounds, the end of a capture's window): the events removed."""

    def __init__(self, target_code: CodeType, file_codes: Iterable[CodeType], line_prefix: str = names.LINE_RANGE,
                 inner_prefix: str = names.INNER_RANGE) -> None:  # fmt: skip
        """`line_prefix`, `inner_prefix`: the ranges' names (the probe's are its own: `mark_probe`)."""
        self._target = target_code
        self._line_prefix, self._inner_prefix = line_prefix, inner_prefix
        # Only the original code objects: torch.compile runs *transformed* copies of a
        # function's code, and those lines belong to the compiled region, not to markers.
        self._helpers = {c for c in file_codes if c is not target_code}
        self._previous: TraceFn = None
        self._ranges: dict[CodeType, dict[int, Any]] = {}  # code → line → its range
        self._depth: dict[CodeType, int] = {}  # code → frames of it running now
        # Called where the target's outermost frame starts a line (its number) or returns (None), between
        # two lines' ranges: the device memory's readings (linememory.py) in the one call that takes them.
        self.on_target_line: Callable[[int | None], None] | None = None
        monitored = linemonitor.available() and os.environ.get(MARKS_ENV, "") != "settrace"
        self._monitor = (linemonitor.MonitorMarks(target_code, self._helpers, Range, self._hook, line_prefix, inner_prefix)
                         if monitored else None)  # fmt: skip
        self._tracing = False  # this call marked by settrace (no monitoring, or no free tool id)

    def _hook(self) -> Callable[[int | None], None] | None:
        return self.on_target_line

    @property
    def mechanism(self) -> str:
        """`monitoring` or `settrace`: what marks the lines (what the next call will use)."""
        return "monitoring" if self._monitor is not None else "settrace"

    def __enter__(self) -> LineMarker:
        if self._monitor is not None and self._monitor.enter():
            return self
        self._monitor = None  # no tool id free: settrace from now on
        self._tracing = True
        self._previous = sys.gettrace()
        sys.settrace(self._on_call)
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._tracing:
            if self._monitor is not None:
                self._monitor.exit()
            return
        self._tracing = False
        sys.settrace(self._previous)
        self._depth.clear()  # a frame still running when tracing stops never reports its return

    def release(self) -> None:
        """No marks until the next call: the monitoring events removed (settrace: nothing is left on)."""
        if self._monitor is not None:
            self._monitor.release()

    def _on_call(self, frame: FrameType, event: str, arg: object) -> TraceFn:
        code = frame.f_code
        if code is self._target:
            prefix = self._line_prefix
        elif code in self._helpers:
            prefix = f"{self._inner_prefix}{code.co_name}:"
        else:
            return None
        # One range object per line of each code object, reused from call to call: a range
        # costs ~0.75 µs in a profile, a quarter of it creating the object. A recursive call
        # (the code already running) makes its own, as one object cannot be open twice.
        depth = self._depth
        depth[code] = depth.get(code, 0) + 1
        cached = self._ranges.setdefault(code, {}) if depth[code] == 1 else {}
        current: Any = None  # the open range of this frame's current line
        hook = self.on_target_line if code is self._target and depth[code] == 1 else None

        def on_line(frame: FrameType, event: str, arg: object) -> TraceFn:
            nonlocal current
            if event == "line":
                if current is not None:
                    current.__exit__(None, None, None)
                line = frame.f_lineno
                if hook is not None:
                    hook(line)
                current = cached.get(line)
                if current is None:
                    current = cached[line] = Range(prefix + str(line))
                current.__enter__()
            elif event == "return":  # also when the frame ends by an exception
                if current is not None:
                    current.__exit__(None, None, None)
                    current = None
                if hook is not None:
                    hook(None)
                depth[code] -= 1
            return on_line

        return on_line


def _probe() -> None:  # lines as cheap as Python has: what is left of each range is the mark's own cost
    a = 0
    a = 1
    a = 2
    a = 3
    a = 4
    a = 5
    a = sum(0 for _ in range(48))  # a helper's frame (a generator), resumed and its line marked at each step
    del a


PROBE_INNER = names.PROBE_RANGE + "inner:"
PROBE_CALLS = 2  # of `_probe` after each recorded call (~110 marks, ~0.2 ms): spread over the run, at its moments


def mark_probe() -> None:
    """The lines of `_probe` marked as a target's are (`oplens.probe:<n>`, the same mechanism), its generator's as a
    helper's (`oplens.probe:inner:<genexpr>:<n>`), `PROBE_CALLS` times, while the profiler records: a line's range
    is what its mark leaves inside its wall time; the period from one step's range to the next, what a helper's
    line costs its caller's line, its frame's start and end included (analysis/attribution.py reads them). Run after
    each recorded call (worker/calls.py), so a machine busy at some moments weighs in the cost as in the calls."""
    if not recording():
        return
    code = _probe.__code__
    helpers = [c for c in code.co_consts if isinstance(c, CodeType)]
    marker = LineMarker(code, helpers, line_prefix=names.PROBE_RANGE, inner_prefix=PROBE_INNER)
    try:
        for _ in range(PROBE_CALLS):
            with marker:
                _probe()
    finally:
        marker.release()


def code_objects(module: types.ModuleType) -> set[CodeType]:
    """Every code object defined in `module`'s file: functions, methods, nested functions."""
    return codes_in(vars(module), getattr(module, "__file__", None), module.__name__)


def codes_in(namespace: dict[str, Any], filename: str | None, module_name: str) -> set[CodeType]:
    """Every code object of file `filename` that `namespace` (a module's, or a notebook kernel's, whose
    classes say `module_name`) reaches: functions, methods, nested functions."""
    found: set[CodeType] = set()
    seen: set[int] = set()

    def add_code(code: CodeType) -> None:
        if code in found or code.co_filename != filename:
            return
        found.add(code)
        for const in code.co_consts:
            if isinstance(const, CodeType):
                add_code(const)

    def add(obj: object, depth: int = 0) -> None:
        if id(obj) in seen or depth > 4:
            return
        seen.add(id(obj))
        if isinstance(obj, (staticmethod, classmethod)):
            obj = obj.__func__
        if isinstance(obj, property):
            for f in (obj.fget, obj.fset, obj.fdel):
                if f is not None:
                    add(f, depth + 1)
            return
        code = _attr(obj, "__code__")
        if isinstance(code, CodeType):
            add_code(code)
            for cell in getattr(obj, "__closure__", None) or ():  # a decorator's wrapper holds the function it wraps
                try:
                    held = cell.cell_contents
                except ValueError:  # an empty cell
                    continue
                if callable(held):
                    add(held, depth + 1)
        for attr in ("__wrapped__", "_torchdynamo_orig_callable", "__func__", "func"):  # functools.wraps and
            inner = _attr(obj, attr) if not isinstance(obj, types.ModuleType) else None  # lru_cache,
            if inner is not None and callable(inner):  # torch.compile, bound methods, functools.partial
                add(inner, depth + 1)
        if isinstance(obj, type):
            if getattr(obj, "__module__", None) == module_name:
                for value in vars(obj).values():
                    add(value, depth + 1)
        elif not isinstance(obj, (types.FunctionType, types.ModuleType)) and callable(obj):
            # an object the name holds (a decorator that returns an nn.Module or a callable class's instance):
            # what calling it runs, and the functions it keeps
            for attr in ("forward", "__call__"):
                add(_attr(type(obj), attr), depth + 1)
            for value in list((_attr(obj, "__dict__") or {}).values()):
                if callable(value):
                    add(value, depth + 1)

    for value in list(namespace.values()):
        add(value)
    return found


def _attr(obj: object, name: str) -> Any:
    """`obj.name`, or None where reading it fails (a lazy proxy's `__getattr__` may raise anything)."""
    try:
        return getattr(obj, name, None)
    except Exception:
        return None
