"""Line marks on `sys.monitoring` (Python 3.12+, PEP 669): the same ranges as `linemarks.LineMarker`'s tracer opens,
from events of the marked code objects only.

On 3.12+ `sys.settrace` is built on `sys.monitoring` with its events on for all code (CPython's
`Python/legacy_tracing.c`): every Python call anywhere, torch's `nn.Module.__call__` included, would enter the
tracer, and a settrace tool displaces a debugger or coverage.py while it is on. Here the events are local: LINE,
PY_START, PY_RETURN, PY_YIELD and PY_RESUME set on the target's code object and its same-file helpers' alone
(`sys.monitoring.set_local_events`), so other code runs untouched; an exception that ends one of their frames
(PY_UNWIND, and PY_THROW into a generator: events CPython sets only globally) closes its open range.

The tool id is a free one, never the debugger's, coverage's, the profiler's or the optimizer's, so a debugger
or coverage.py (its sysmon core) keeps working meanwhile; it is taken at the first marked call and given back
by `release()` (the events removed). Between marked calls the events stay set and their callbacks return at
once (a warm-up call pays about a call per line); `release()` before calls that must run untouched (a compare's
plain rounds).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from types import CodeType
from typing import Any

from oplens.records import names

# The tool ids CPython names for other tools: never taken (sys.monitoring: DEBUGGER_ID 0, COVERAGE_ID 1,
# PROFILER_ID 2, OPTIMIZER_ID 5)
RESERVED = frozenset({0, 1, 2, 5})
TOOL_NAME = "oplens"


def available() -> bool:
    """This interpreter has `sys.monitoring` (3.12+)."""
    return hasattr(sys, "monitoring")


def free_tool() -> int | None:
    """A tool id no one holds, outside RESERVED (None: all taken)."""
    mon: Any = getattr(sys, "monitoring", None)
    if mon is None:
        return None
    for tool in range(6):
        if tool not in RESERVED and mon.get_tool(tool) is None:
            return tool
    return None


class MonitorMarks:
    """The ranges of `target`'s lines (`oplens.line:<n>`) and of its `helpers`' (`oplens.inner:<fn>:<n>`) while
    active, from local `sys.monitoring` events. `hook()` gives the marker's `on_target_line` at each event. Every
    marker of the process shares one tool id (`_TOOL`): a compare holds a marker per variant, one active at a time."""

    def __init__(self, target: CodeType, helpers: Iterable[CodeType], range_type: Any,
                 hook: Callable[[], Callable[[int | None], None] | None], line_prefix: str = names.LINE_RANGE,
                 inner_prefix: str = names.INNER_RANGE) -> None:  # fmt: skip
        self._target = target
        self.codes = [target, *(c for c in helpers if c is not target)]  # kept alive: their ids key what follows
        self.ids = frozenset(map(id, self.codes))  # by identity: a code object's hash reads its whole contents
        self._prefix = {id(c): line_prefix if c is target else f"{inner_prefix}{c.co_name}:" for c in self.codes}
        self._range = range_type
        self._hook = hook
        self._stacks: dict[int, list[Any]] = {}  # code's id → each of its running frames' open range (None: none yet)
        self._cached: dict[int, dict[int, Any]] = {id(c): {} for c in self.codes}  # outermost frames' ranges, reused

    def enter(self) -> bool:
        """Active from now (its events set at its first call); False where no tool id is free."""
        return _TOOL.activate(self)

    def exit(self) -> None:
        """Inactive; a range still open (a frame that never reported its end) closed."""
        _TOOL.deactivate(self)
        for stack in self._stacks.values():
            for open_range in stack:
                if open_range is not None:
                    open_range.__exit__(None, None, None)
        self._stacks.clear()

    def release(self) -> None:
        """Its events removed (set again at the next `enter`); the tool id given back once no marker holds any."""
        _TOOL.remove(self)

    def start(self, key: int) -> None:
        self._stacks.setdefault(key, []).append(None)

    def line(self, code: CodeType, key: int, line: int) -> None:
        stack = self._stacks.get(key)
        if not stack:  # a frame begun before the marks were active (a generator made earlier): from here on
            stack = self._stacks.setdefault(key, [])
            stack.append(None)
        current = stack[-1]
        if current is not None:
            current.__exit__(None, None, None)
        outermost = len(stack) == 1
        if outermost and code is self._target:
            hook = self._hook()
            if hook is not None:
                hook(line)
        # One range object per line of each code's outermost frame, reused from call to call (creating one is a
        # quarter of its cost); a recursive frame makes its own, as one object cannot be open twice.
        cached = self._cached[key] if outermost else {}
        current = cached.get(line)
        if current is None:
            current = cached[line] = self._range(self._prefix[key] + str(line))
        current.__enter__()
        stack[-1] = current

    def end(self, code: CodeType, key: int) -> None:
        stack = self._stacks.get(key)
        if not stack:
            return
        current = stack.pop()
        if current is not None:
            current.__exit__(None, None, None)
        if not stack and code is self._target:
            hook = self._hook()
            if hook is not None:
                hook(None)


class _Tool:
    """The process's one `sys.monitoring` tool id for line marks, taken while any marker has events set, and the
    callbacks that pass each event of an active marker's code to it."""

    def __init__(self) -> None:
        self.id: int | None = None
        self.active: MonitorMarks | None = None
        self.holders: dict[int, set[int]] = {}  # id of a code with events set → the markers (ids) that set them
        # the markers whose codes have their events set (held until released: their ids key `holders`)
        self.installed: set[MonitorMarks] = set()

    def activate(self, marks: MonitorMarks) -> bool:
        """`marks` the active marker, its codes' events set where they are not yet (at its first call after a
        release: each marked call only switches which marker is active)."""
        if marks in self.installed:
            self.active = marks
            return True
        if self.id is None and not self._take():
            return False
        mon: Any = sys.monitoring  # type: ignore[attr-defined]
        ev = mon.events
        local = ev.LINE | ev.PY_START | ev.PY_RETURN | ev.PY_YIELD | ev.PY_RESUME
        for code in marks.codes:
            holders = self.holders.setdefault(id(code), set())
            if not holders:
                mon.set_local_events(self.id, code, local)
            holders.add(id(marks))
        self.installed.add(marks)
        self.active = marks
        return True

    def deactivate(self, marks: MonitorMarks) -> None:
        if self.active is marks:
            self.active = None

    def remove(self, marks: MonitorMarks) -> None:
        self.deactivate(marks)
        self.installed.discard(marks)
        if self.id is None:
            return
        mon: Any = sys.monitoring  # type: ignore[attr-defined]
        for code in marks.codes:
            holders = self.holders.get(id(code))
            if holders is None or id(marks) not in holders:
                continue
            holders.discard(id(marks))
            if not holders:
                del self.holders[id(code)]
                mon.set_local_events(self.id, code, 0)
        if not self.holders:
            self._give_back()

    def _take(self) -> bool:
        tool = free_tool()
        if tool is None:
            return False
        mon: Any = sys.monitoring  # type: ignore[attr-defined]
        mon.use_tool_id(tool, TOOL_NAME)
        ev = mon.events
        for event, callback in self._callbacks():
            mon.register_callback(tool, getattr(ev, event), callback)
        mon.set_events(tool, ev.PY_UNWIND | ev.PY_THROW)  # CPython sets these only globally
        self.id = tool
        return True

    def _give_back(self) -> None:
        tool, self.id = self.id, None
        mon: Any = sys.monitoring  # type: ignore[attr-defined]
        mon.set_events(tool, 0)
        for event, _ in self._callbacks():
            mon.register_callback(tool, getattr(mon.events, event), None)
        mon.free_tool_id(tool)

    def _callbacks(self) -> list[tuple[str, Callable[..., None]]]:
        return [("LINE", self._line), ("PY_START", self._start), ("PY_RESUME", self._start), ("PY_RETURN", self._end),
                ("PY_YIELD", self._end), ("PY_UNWIND", self._end), ("PY_THROW", self._start)]  # fmt: skip

    # The callbacks: an event of code no active marker holds returns at once (a warm-up call between marked
    # calls; a global event of other code).
    def _start(self, code: CodeType, offset: int, *_: object) -> None:
        marks = self.active
        if marks is not None and id(code) in marks.ids:
            marks.start(id(code))

    def _line(self, code: CodeType, line: int) -> None:
        marks = self.active
        if marks is not None and id(code) in marks.ids:
            marks.line(code, id(code), line)

    def _end(self, code: CodeType, offset: int, *_: object) -> None:
        marks = self.active
        if marks is not None and id(code) in marks.ids:
            marks.end(code, id(code))


_TOOL = _Tool()
