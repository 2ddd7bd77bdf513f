"""The program overview's attribution: each op's self time to the user's functions on its Python stack.

Pure Python on plain records (the worker reads them from the profile: `worker/overview.py`). On each
thread the profile's Python frames (torch.profiler's `with_stack=True` python_function events), its ops
and OpLens's ranges (the steps, the module calls) nest by time; one sweep in start order keeps the open
frames, ops and modules on stacks:

    an op's self time   its duration less its child ops' (as key_averages' Self CPU); its device
                        time is the kernels linked to it (or, on the CPU, its self CPU time)
    self                the innermost *user* frame enclosing the op (the user's code: `is_user`)
    total               every user function enclosing it, each once per op (recursion counts once)
    module              the innermost `oplens.module:<path>` range enclosing it (total: every one)
    step                the step range its start falls in; ops outside every step are not counted

A thread with no Python frames of its own (an autograd or a runtime thread) has its ops placed on the
stack the thread with the most frames had at that moment: what the program was waiting in.
"""

from __future__ import annotations

import ast
import bisect
import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from oplens.records.overview import FileStat, FrameStat, FunctionStat, ModuleStat, Overview

# torch.profiler's python_function event names: "path/to/file.py(42): forward"
_FRAME_NAME = re.compile(r"^(?P<file>.+)\((?P<line>\d+)\): (?P<func>.+)$")

FunctionKey = tuple[str, str, int]  # (absolute file, qualname, def line)


@dataclass(slots=True)
class PyFrame:
    name: str  # the event's name, "file(line): func"
    thread: int
    start_ns: int
    end_ns: int


@dataclass(slots=True)
class OpTime:
    thread: int
    start_ns: int
    end_ns: int
    device_ns: int  # the kernels linked to it (0 on a host-only backend: its self CPU time is used)
    child_ns: int = 0


@dataclass(slots=True)
class Span:
    """One of OpLens's own ranges: a step (`label` its index) or a module call (`label` its path)."""

    label: str
    thread: int
    start_ns: int
    end_ns: int


@dataclass
class Profile:
    frames: list[PyFrame]
    ops: list[OpTime]
    steps: list[Span]  # in order, not overlapping
    modules: list[Span] = field(default_factory=list)
    module_types: dict[str, str] = field(default_factory=dict)  # path -> class name
    on_device: bool = False  # ops' device time is their kernels'; else their self CPU time


def parse_frame(name: str) -> tuple[str, int, str] | None:
    """(file as the profiler wrote it, line, function) of a python_function event; None for a builtin."""
    m = _FRAME_NAME.match(name)
    if m is None:
        return None
    return m["file"], int(m["line"]), m["func"]


@functools.cache
def _definitions(path: str) -> tuple[tuple[int, int, str, str], ...]:
    """Every function of a file: (first line, last line, name, qualname), sorted by first line."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return ()
    out: list[tuple[int, int, str, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qual = f"{prefix}{child.name}"
                out.append((child.lineno, child.end_lineno or child.lineno, child.name, qual))
                visit(child, qual + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return tuple(sorted(out))


def function_at(path: str, line: int, func: str) -> tuple[str, int]:
    """(qualname, def line) of function `func` of `path` whose `def` is at `line` or, for a frame the
    profiler met already running (it reports the current line), the innermost one around `line`.
    `<module>` and unknown functions keep their name and line."""
    defs = _definitions(path)
    best: tuple[str, int] | None = None
    for first, last, name, qual in defs:
        if first > line:
            break
        if name == func and line <= last:
            best = (qual, first)  # later (inner) matches override outer ones
    return best if best is not None else (func, line)


def attribute(profile: Profile, is_user: Callable[[str], str | None]) -> Overview:
    """The overview of `profile`; `is_user(file)` is the absolute path of a user file, None otherwise."""
    frame_keys = _frame_keys(profile.frames, is_user)
    threads: dict[int, list[tuple[int, int, int, object]]] = {}
    frames_on: dict[int, int] = {}
    for f in profile.frames:
        frames_on[f.thread] = frames_on.get(f.thread, 0) + 1
    main = max(frames_on, key=lambda t: frames_on[t]) if frames_on else 0
    # (start, order, -end, item): frames open before the op that starts with them; ranges likewise
    for f in profile.frames:
        threads.setdefault(f.thread, []).append((f.start_ns, 0, -f.end_ns, f))
    for s in profile.modules:
        threads.setdefault(s.thread, []).append((s.start_ns, 1, -s.end_ns, s))
    for op in profile.ops:
        home = op.thread if op.thread in frames_on else main
        threads.setdefault(home, []).append((op.start_ns, 2, -op.end_ns, op))
    acc = _Sums(profile, frame_keys)
    for items in threads.values():
        items.sort(key=lambda x: (x[0], x[1], x[2]))
        acc.sweep(items)
    return acc.overview()


def _frame_keys(frames: Iterable[PyFrame], is_user: Callable[[str], str | None]) -> dict[str, FunctionKey | None]:
    keys: dict[str, FunctionKey | None] = {}
    for f in frames:
        if f.name in keys:
            continue
        parsed = parse_frame(f.name)
        path = is_user(parsed[0]) if parsed else None
        if parsed is None or path is None:
            keys[f.name] = None
            continue
        qual, def_line = function_at(path, parsed[1], parsed[2])
        keys[f.name] = (path, qual, def_line)
    return keys


class _Sums:
    def __init__(self, profile: Profile, frame_keys: dict[str, FunctionKey | None]) -> None:
        self.profile, self.keys = profile, frame_keys
        self.step_starts = [s.start_ns for s in profile.steps]
        n = max(1, len(profile.steps))
        self.n = n
        self.self_dev: dict[FunctionKey, int] = {}
        self.total_dev: dict[FunctionKey, int] = {}
        self.self_cpu: dict[FunctionKey, int] = {}
        self.total_cpu: dict[FunctionKey, int] = {}
        self.calls: dict[FunctionKey, int] = {}
        self.mod_self_dev: dict[str, int] = {}
        self.mod_total_dev: dict[str, int] = {}
        self.mod_self_cpu: dict[str, int] = {}
        self.mod_total_cpu: dict[str, int] = {}
        self.mod_calls: dict[str, int] = {}
        # op, step, chain, modules, path
        self.ops: list[tuple[OpTime, int, tuple[FunctionKey, ...], tuple[str, ...], tuple[FunctionKey, ...]]] = []

    def _step(self, t: int) -> int:
        steps = self.profile.steps
        if not steps:
            return 0
        i = bisect.bisect_right(self.step_starts, t) - 1
        return i if i >= 0 and t < steps[i].end_ns else -1

    def sweep(self, items: list[tuple[int, int, int, object]]) -> None:
        # (end, the user chain innermost first and each function once, the user path outermost first)
        frames: list[tuple[int, tuple[FunctionKey, ...], tuple[FunctionKey, ...]]] = []
        modules: list[tuple[int, tuple[str, ...]]] = []
        op_stacks: dict[int, list[OpTime]] = {}  # per thread the op ran on (a borrowed stack is not its own)
        for start, _, _, item in items:
            while frames and frames[-1][0] <= start:
                frames.pop()
            while modules and modules[-1][0] <= start:
                modules.pop()
            if isinstance(item, PyFrame):
                chain, path = (frames[-1][1], frames[-1][2]) if frames else ((), ())
                key = self.keys.get(item.name)
                if key is not None:
                    chain = (key, *(k for k in chain if k != key))
                    path = (*path, key)
                    if self._step(start) >= 0:
                        self.calls[key] = self.calls.get(key, 0) + 1
                frames.append((item.end_ns, chain, path))
            elif isinstance(item, Span):
                outer = modules[-1][1] if modules else ()
                modules.append((item.end_ns, (item.label, *outer)))
                if self._step(start) >= 0:
                    self.mod_calls[item.label] = self.mod_calls.get(item.label, 0) + 1
            else:
                assert isinstance(item, OpTime)
                ops = op_stacks.setdefault(item.thread, [])
                while ops and ops[-1].end_ns <= start:
                    ops.pop()
                if ops:
                    ops[-1].child_ns += item.end_ns - item.start_ns
                ops.append(item)
                step = self._step(start)
                if step >= 0:
                    chain, path = (frames[-1][1], frames[-1][2]) if frames else ((), ())
                    self.ops.append((item, step, chain, modules[-1][1] if modules else (), path))

    def overview(self) -> Overview:
        on_device = self.profile.on_device
        total_dev = total_cpu = outside = 0
        samples: dict[FunctionKey, list[int]] = {}
        paths: dict[tuple[FunctionKey, ...], list[int]] = {}  # path → [self device, self CPU] ns
        for op, step, chain, mods, path in self.ops:
            cpu = max(0, op.end_ns - op.start_ns - op.child_ns)
            dev = op.device_ns if on_device else cpu
            total_dev += dev
            total_cpu += cpu
            if not chain:
                outside += dev
            else:
                here = paths.get(path)
                if here is None:
                    here = paths[path] = [0, 0]
                here[0] += dev
                here[1] += cpu
                inner = chain[0]
                self.self_dev[inner] = self.self_dev.get(inner, 0) + dev
                per_step = samples.get(inner)
                if per_step is None:
                    per_step = samples[inner] = [0] * self.n
                per_step[step] += dev
                self.self_cpu[inner] = self.self_cpu.get(inner, 0) + cpu
                for k in chain:
                    self.total_dev[k] = self.total_dev.get(k, 0) + dev
                    self.total_cpu[k] = self.total_cpu.get(k, 0) + cpu
            if mods:
                self.mod_self_dev[mods[0]] = self.mod_self_dev.get(mods[0], 0) + dev
                self.mod_self_cpu[mods[0]] = self.mod_self_cpu.get(mods[0], 0) + cpu
                for m in mods:
                    self.mod_total_dev[m] = self.mod_total_dev.get(m, 0) + dev
                    self.mod_total_cpu[m] = self.mod_total_cpu.get(m, 0) + cpu
        n = self.n

        def us(ns: int) -> float:
            return ns / 1000.0 / n

        def pct(ns: int) -> float:
            return 100.0 * ns / total_dev if total_dev else 0.0

        keys = set(self.total_dev) | set(self.calls)
        functions = [
            FunctionStat(file=k[0], qualname=k[1], def_line=k[2],
                         self_device_us=us(self.self_dev.get(k, 0)), total_device_us=us(self.total_dev.get(k, 0)),
                         self_cpu_us=us(self.self_cpu.get(k, 0)), total_cpu_us=us(self.total_cpu.get(k, 0)),
                         calls=self.calls.get(k, 0) / n, pct_self=pct(self.self_dev.get(k, 0)),
                         pct_total=pct(self.total_dev.get(k, 0)),
                         self_samples_us=[ns / 1000.0 for ns in samples.get(k, [0] * n)])
            for k in keys
        ]  # fmt: skip
        functions.sort(key=lambda f: (-f.self_device_us, -f.total_device_us, f.file, f.def_line))
        modules = [
            ModuleStat(path=m, type=self.profile.module_types.get(m, ""),
                       self_device_us=us(self.mod_self_dev.get(m, 0)), total_device_us=us(self.mod_total_dev.get(m, 0)),
                       self_cpu_us=us(self.mod_self_cpu.get(m, 0)), total_cpu_us=us(self.mod_total_cpu.get(m, 0)),
                       calls=self.mod_calls.get(m, 0) / n, pct_total=pct(self.mod_total_dev.get(m, 0)))
            for m in set(self.mod_total_dev) | set(self.mod_calls)
        ]  # fmt: skip
        modules.sort(key=lambda m: (-m.total_device_us, m.path))
        return Overview(
            frames=call_tree({p: [us(dev), us(cpu)] for p, (dev, cpu) in paths.items()}, functions),
            total_device_us=us(total_dev),
            total_cpu_us=us(total_cpu),
            outside_user_device_us=us(outside),
            functions=functions,
            files=file_stats(functions, us(total_dev)),
            modules=modules,
            steps=len(self.profile.steps),
        )


def file_stats(functions: list[FunctionStat], total_device_us: float) -> list[FileStat]:
    """Per file: its functions' self time, hottest first."""
    files: dict[str, FileStat] = {}
    for f in functions:
        fs = files.setdefault(f.file, FileStat(f.file))
        fs.self_device_us += f.self_device_us
        fs.self_cpu_us += f.self_cpu_us
        fs.functions += 1
    for fs in files.values():
        fs.pct = 100.0 * fs.self_device_us / total_device_us if total_device_us else 0.0
    return sorted(files.values(), key=lambda f: -f.self_device_us)


def frame_paths(o: Overview) -> dict[tuple[FunctionKey, ...], list[float]]:
    """The call tree's nodes by their path of functions from the top: [self device, self CPU] µs."""
    keys = [(f.file, f.qualname, f.def_line) for f in o.functions]
    paths: list[tuple[FunctionKey, ...]] = []
    out: dict[tuple[FunctionKey, ...], list[float]] = {}
    for node in o.frames:  # a parent before its children
        path = (*(paths[node.parent] if node.parent >= 0 else ()), keys[node.function])
        paths.append(path)
        out[path] = [node.self_device_us, node.self_cpu_us]
    return out


def call_tree(paths: dict[tuple[FunctionKey, ...], list[float]], functions: list[FunctionStat]) -> list[FrameStat]:
    """The user paths (each with its own [device, CPU] µs per step) as a tree of `FrameStat`s pointing into
    `functions` (every prefix of a path is a node), a parent before its children, siblings by total
    device time (highest first)."""
    index = {(f.file, f.qualname, f.def_line): i for i, f in enumerate(functions)}
    totals: dict[tuple[FunctionKey, ...], list[float]] = {}
    for path, (dev, cpu) in paths.items():
        for i in range(1, len(path) + 1):
            t = totals.setdefault(path[:i], [0.0, 0.0])
            t[0] += dev
            t[1] += cpu
    children: dict[tuple[FunctionKey, ...], list[tuple[FunctionKey, ...]]] = {}
    for path in totals:
        children.setdefault(path[:-1], []).append(path)
    out: list[FrameStat] = []
    todo = [(root, -1) for root in sorted(children.get((), []), key=lambda p: totals[p][0])]
    while todo:  # depth first, a stack (a deep recursion must not hit Python's own limit)
        path, parent = todo.pop()
        own = paths.get(path, [0.0, 0.0])
        out.append(FrameStat(function=index[path[-1]], parent=parent, self_device_us=own[0],
                             total_device_us=totals[path][0], self_cpu_us=own[1], total_cpu_us=totals[path][1]))
        me = len(out) - 1
        todo.extend((child, me) for child in sorted(children.get(path, []), key=lambda p: totals[p][0]))
    return out
