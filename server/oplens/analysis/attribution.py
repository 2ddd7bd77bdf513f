"""Attribute every profiler event's self CPU and self device time to a line of the target.

Input: flat `RawEvent`s (one per Kineto event, read by worker/events.py, or from a stored trace by
chrome_trace.py), in which OpLens's own markers (records/names.py) appear as ranges named
`oplens.iter:<k>`, `oplens.line:<n>` (a line of the target) and `oplens.inner:<function>:<n>` (a line
of a same-file helper). Output: per-line and per-op records and the totals, and each line's ordered
top-level ops for the insights. `nest` (the events nested per thread, each in its iteration and
line) is shared with the other views of a profile: each line's work (work.line_work) and memory
(memory.line_memory).

The rules, the same that `key_averages()` follows, so that the totals agree with it:
- CPU events nest by time on each thread; an event's self CPU time is its duration minus
  its children's. Async events and device events do not nest.
- A device event (kernel) belongs to the frontend CPU op whose correlation id it links to;
  that op's self device time is the sum of its kernels. Device time is summed over CPU ops
  only, so no kernel counts twice. (Legacy PrivateUse1 backends report it per CPU op.)
- Each op goes to the innermost enclosing `oplens.line` marker; an op on another thread
  (autograd's backward, a worker pool) goes to the line running on the profiled thread when
  it started. Ops inside an iteration but outside any line go to the `def` line.
This module is pure Python (no torch), so it is tested on synthetic events too.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from oplens.analysis import stats
from oplens.analysis.collectives import category
from oplens.records import names
from oplens.records.run import CompiledRegion, InnerLine, LineStat, OpStat, SourceRef, Totals

ITER = names.ITER_RANGE
LINE = names.LINE_RANGE
INNER = names.INNER_RANGE
COMPILED_REGION = "Torch-Compiled Region"

# Names torch.profiler itself drops from its tables (torch.autograd.profiler_util._filter_name).
FILTERED_NAMES = frozenset(
    {
        "[memory]",
        "[OutOfMemory]",
        "profiler::_record_function_enter",
        "profiler::_record_function_enter_new",
        "profiler::_record_function_exit",
        "aten::is_leaf",
        "aten::output_nr",
        "aten::_version",
    }
)
# Bookkeeping ranges that time real work but are not operator calls the user wrote.
NOT_OPERATOR_CALLS = frozenset({"TorchDynamo Cache Lookup"})


@dataclass(slots=True)
class RawEvent:
    name: str
    thread: int
    start_ns: int
    end_ns: int
    correlation_id: int = 0
    linked_correlation_id: int = 0
    on_device: bool = False  # a kernel / device activity, not a CPU event
    is_async: bool = False
    legacy_device_ns: int = 0  # device time reported on the CPU op itself (legacy PrivateUse1)
    nbytes: int = 0  # a "[memory]" event: bytes allocated (> 0) or freed (< 0)
    device_memory: bool = False  # a "[memory]" event of the device's allocator (not the host's)
    addr: int = 0  # a "[memory]" event: the block's address (pairs an allocation with its free; 0: unknown)
    shapes: list[list[int]] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    source: Any = None  # the profiler's own event: its input shapes are read only when needed

    def inputs(self) -> tuple[list[list[int]], list[str]]:
        """Input shapes and dtypes (read lazily: ~8 µs an event, wanted for a few dozen)."""
        if self.shapes or self.source is None:
            return self.shapes, self.dtypes
        return self.source.shapes(), self.source.dtypes()


# The context an event runs in: (iteration, target line, inner function, inner line, region).
Ctx = tuple[int, int, str, int, str]
_NO_CTX: Ctx = (-1, 0, "", 0, "")


@dataclass(slots=True)
class Node:
    """A CPU event nested on its thread: the context it runs in, its parent, its children's time."""

    ev: RawEvent
    ctx: Ctx
    is_marker: bool
    top_level: bool  # an op whose parent is a marker or nothing
    parent: Node | None = None
    child_ns: int = 0
    children: int = 0

    def merged_into_parent(self) -> bool:
        """key_averages() folds an op into a same-named parent of which it is the only child
        (a dispatch duplicate): its time counts, as the parent's call, not as a call of its own."""
        p = self.parent
        return p is not None and p.children == 1 and p.ev.name == self.ev.name


@dataclass
class OpSample:
    """The first occurrence of a top-level op on a line, for insights. Its input shapes are read
    when an insight asks: most samples are never looked at (and the worker's timed profile has
    no shapes to read; its samples are replaced by those of the shapes call)."""

    name: str
    event: RawEvent

    @cached_property
    def inputs(self) -> tuple[list[list[int]], list[str]]:
        return self.event.inputs()

    @property
    def shapes(self) -> list[list[int]]:
        return self.inputs[0]

    @property
    def dtypes(self) -> list[str]:
        return self.inputs[1]


@dataclass
class Attribution:
    lines: list[LineStat]
    ops: list[OpStat]
    totals: Totals
    # Per line: the top-level ops in order of their first call in iteration 0, for insights.
    sequence: dict[int, list[OpSample]]


@dataclass
class _LineAcc:
    cpu: list[float]
    dev: list[float]
    top_calls: int = 0
    ops: dict[str, list[float]] = field(default_factory=dict)  # name → [calls, cpu_ns, dev_ns]
    inner: dict[tuple[str, int], list[float]] = field(default_factory=dict)
    regions: dict[str, list[float]] = field(default_factory=dict)  # name → [calls, dev_ns]


def attribute(
    events: list[RawEvent],
    iters: int,
    def_line: int,
    device_time: str = "cpu",
    fused: dict[str, list[SourceRef]] | None = None,
) -> Attribution:
    """Aggregate `events` (from `iters` iterations) per line and per op; µs per iteration."""
    fused = fused or {}
    cpu_events: list[RawEvent] = []
    device_ns_by_corr: dict[int, int] = defaultdict(int)
    device_total_ns = 0
    for e in events:
        if e.on_device:
            if e.linked_correlation_id > 0:
                device_ns_by_corr[e.linked_correlation_id] += e.end_ns - e.start_ns
            device_total_ns += e.end_ns - e.start_ns
        elif not e.is_async and e.name not in FILTERED_NAMES:
            cpu_events.append(e)

    nodes, locate = _nodes(cpu_events, def_line)

    linked = device_time == "linked"
    lines: dict[int, _LineAcc] = {}
    op_acc: dict[str, list[float]] = {}  # name → [calls, cpu_ns, dev_ns]
    op_dev_iter: dict[str, list[float]] = {}
    claimed_device_ns = 0
    iteration_of_sequence: dict[int, list[OpSample]] = defaultdict(list)
    for node in nodes:
        if node.is_marker:
            continue
        e = node.ev
        ctx = node.ctx if node.ctx[0] >= 0 else locate(e.start_ns)
        if ctx[0] < 0 or ctx[0] >= iters:
            continue  # outside the profiled iterations (OpLens's own synchronisation; a capture's unfinished call)
        it, line, inner_fn, inner_line, region = ctx
        if line == 0:
            line = def_line
        self_cpu = e.end_ns - e.start_ns - node.child_ns
        if linked:
            self_dev = (device_ns_by_corr.get(e.correlation_id, 0) if e.linked_correlation_id == 0 else 0)
            self_dev += e.legacy_device_ns
            claimed_device_ns += self_dev
        else:
            self_dev = self_cpu

        acc = lines.get(line)
        if acc is None:
            acc = lines[line] = _LineAcc(cpu=[0.0] * iters, dev=[0.0] * iters)
        acc.cpu[it] += self_cpu
        acc.dev[it] += self_dev
        call = 0 if node.merged_into_parent() else 1
        o = acc.ops.get(e.name)
        if o is None:
            o = acc.ops[e.name] = [0, 0, 0]
        o[0] += call
        o[1] += self_cpu
        o[2] += self_dev
        if inner_fn:
            i = acc.inner.setdefault((inner_fn, inner_line), [0, 0])
            i[0] += self_cpu
            i[1] += self_dev
        if region:
            r = acc.regions.setdefault(region, [0, 0])
            r[1] += self_dev
        if node.top_level:
            if e.name not in NOT_OPERATOR_CALLS:
                acc.top_calls += 1
            if e.name.startswith(COMPILED_REGION):
                acc.regions.setdefault(e.name, [0, 0])[0] += 1
            if it == 0:
                iteration_of_sequence[line].append(OpSample(e.name, e))

        g = op_acc.get(e.name)
        if g is None:
            g = op_acc[e.name] = [0, 0, 0]
            op_dev_iter[e.name] = [0.0] * iters
        g[0] += call
        g[1] += self_cpu
        g[2] += self_dev
        op_dev_iter[e.name][it] += self_dev

    unattributed = (device_total_ns - claimed_device_ns) if linked else 0
    return _build(lines, op_acc, op_dev_iter, iters, unattributed, fused, dict(iteration_of_sequence))


def nest(events: list[RawEvent], def_line: int) -> tuple[list[Node], Locator]:
    """The CPU events of `events` nested per thread (each with its context: iteration, line, ...),
    by start time within a thread, and a `Locator` of the marked thread: the nesting every view of
    a profile shares (the attribution here; work.line_work, memory.line_memory)."""
    cpu = [e for e in events if not e.on_device and not e.is_async and e.name not in FILTERED_NAMES]
    return _nodes(cpu, def_line)


def _nodes(cpu_events: list[RawEvent], def_line: int) -> tuple[list[Node], Locator]:
    """The CPU events nested per thread, and where each moment of the marked thread was: ops on other
    threads (autograd's) are placed by time in the iteration and line running then."""
    # A runtime event (e.g. cudaLaunchKernel) nests on the thread of the op it serves.
    thread_of_op = {e.correlation_id: e.thread for e in cpu_events if e.linked_correlation_id == 0}
    by_thread: dict[int, list[RawEvent]] = defaultdict(list)
    for e in cpu_events:
        thread = thread_of_op.get(e.linked_correlation_id, e.thread) if e.linked_correlation_id else e.thread
        by_thread[thread].append(e)
    nodes: list[Node] = []
    main_thread_nodes: list[Node] = []
    for thread_events in by_thread.values():
        thread_nodes = _nest(thread_events)
        nodes.extend(thread_nodes)
        if any(n.is_marker and n.ctx[0] >= 0 for n in thread_nodes):
            main_thread_nodes = thread_nodes
    return nodes, Locator(main_thread_nodes, def_line)


def _nest(events: list[RawEvent]) -> list[Node]:
    """Nest one thread's events by time (as FunctionEvent.populate_cpu_children does)."""
    events.sort(key=lambda e: (e.start_ns, -e.end_ns))
    stack: list[Node] = []
    out: list[Node] = []
    for e in events:
        while stack and (e.start_ns >= stack[-1].ev.end_ns or e.end_ns > stack[-1].ev.end_ns):
            stack.pop()
        parent = stack[-1] if stack else None
        ctx = parent.ctx if parent else _NO_CTX
        name = e.name
        is_marker = name.startswith("oplens.")
        if is_marker:
            ctx = _marker_ctx(name, ctx)
        elif name.startswith(COMPILED_REGION) and not ctx[4]:
            ctx = (ctx[0], ctx[1], ctx[2], ctx[3], name)
        node = Node(e, ctx, is_marker, top_level=not is_marker and (parent is None or parent.is_marker), parent=parent)
        if parent is not None:
            parent.child_ns += e.end_ns - e.start_ns
            parent.children += 1
        stack.append(node)
        out.append(node)
    return out


def _marker_ctx(name: str, ctx: Ctx) -> Ctx:
    if name.startswith(LINE):
        return (ctx[0], int(name[len(LINE) :]), "", 0, ctx[4])
    if name.startswith(INNER):
        function, _, line = name[len(INNER) :].rpartition(":")
        return (ctx[0], ctx[1], function, int(line), ctx[4])
    if name.startswith(ITER):
        return (int(name[len(ITER) :]), 0, "", 0, "")
    return ctx


class Locator:
    """The context running on the profiled thread at a given time (for ops on other threads)."""

    def __init__(self, main_nodes: list[Node], def_line: int) -> None:
        iters = [n for n in main_nodes if n.ev.name.startswith(ITER)]
        lines = [n for n in main_nodes if n.ev.name.startswith(LINE)]
        self._iter_starts = [n.ev.start_ns for n in iters]
        self._iters = iters
        self._line_starts = [n.ev.start_ns for n in lines]
        self._lines = lines
        self._def_line = def_line

    def __call__(self, t: int) -> Ctx:
        i = bisect.bisect_right(self._iter_starts, t) - 1
        if i < 0 or t >= self._iters[i].ev.end_ns:
            return _NO_CTX
        it = self._iters[i].ctx[0]
        j = bisect.bisect_right(self._line_starts, t) - 1
        # The line started before t and still ran (or was the last to run) in this iteration.
        if j >= 0 and self._lines[j].ctx[0] == it:
            return (it, self._lines[j].ctx[1], "", 0, "")
        return (it, self._def_line, "", 0, "")


def _build(
    lines: dict[int, _LineAcc],
    op_acc: dict[str, list[float]],
    op_dev_iter: dict[str, list[float]],
    iters: int,
    unattributed_ns: int,
    fused: dict[str, list[SourceRef]],
    sequence: dict[int, list[OpSample]],
) -> Attribution:
    per = 1.0 / (1000.0 * iters)  # ns over all iterations → µs per iteration
    total_cpu = sum(sum(a.cpu) for a in lines.values()) * per
    total_dev = sum(sum(a.dev) for a in lines.values()) * per
    # Shares come from trimmed means: one slow iteration (the profiler's own start-up lands on the
    # function's first op) must not move them; the µs figures stay means, so lines sum to totals.
    robust_cpu = {line: stats.trimmed_mean(a.cpu) for line, a in lines.items()}
    robust_dev = {line: stats.trimmed_mean(a.dev) for line, a in lines.items()}
    robust_cpu_total, robust_dev_total = sum(robust_cpu.values()), sum(robust_dev.values())

    def pct(x: float, total: float) -> float:
        return 100.0 * x / total if total > 0 else 0.0

    line_stats = []
    for line, a in sorted(lines.items()):
        cpu = sum(a.cpu) * per
        dev = sum(a.dev) * per
        ops = [
            OpStat(name=n, calls=o[0] / iters, self_cpu_us=o[1] * per, self_device_us=o[2] * per,
                   pct=pct(o[2] * per, total_dev), category=category(n))
            for n, o in a.ops.items()
        ]
        ops.sort(key=lambda o: (-o.self_device_us, -o.self_cpu_us))
        inner = [
            InnerLine(function=f, line=ln, self_cpu_us=v[0] * per, self_device_us=v[1] * per)
            for (f, ln), v in sorted(a.inner.items(), key=lambda kv: -kv[1][1])
        ]
        regions = [
            CompiledRegion(name=n, calls=v[0] / iters, self_device_us=v[1] * per, fused=fused.get(n, []))
            for n, v in a.regions.items()
        ]
        dev_us = [v / 1000.0 for v in a.dev]
        line_stats.append(
            LineStat(
                line=line,
                self_cpu_us=cpu,
                self_device_us=dev,
                pct_device=pct(robust_dev[line], robust_dev_total),
                pct_cpu=pct(robust_cpu[line], robust_cpu_total),
                op_calls=a.top_calls / iters,
                ops=ops,
                device_spread=stats.spread(dev_us),
                cpu_spread=stats.spread([v / 1000.0 for v in a.cpu]),
                noisy=stats.is_noisy(dev_us),
                inner=inner,
                compiled=regions,
                device_samples_us=dev_us,
                cpu_samples_us=[v / 1000.0 for v in a.cpu],
                collective_us=sum(o.self_device_us for o in ops if o.category),
            )
        )
    op_stats = [
        OpStat(
            name=n,
            calls=o[0] / iters,
            self_cpu_us=o[1] * per,
            self_device_us=o[2] * per,
            pct=pct(o[2] * per, total_dev),
            device_spread=stats.spread([v / 1000.0 for v in op_dev_iter[n]]),
            category=category(n),
        )
        for n, o in op_acc.items()
    ]
    op_stats.sort(key=lambda o: (-o.self_device_us, -o.self_cpu_us))
    totals = Totals(
        self_cpu_us=total_cpu,
        self_device_us=total_dev,
        op_calls=sum(a.top_calls for a in lines.values()) / iters,
        unattributed_device_us=unattributed_ns * per,
        device_samples_us=[sum(a.dev[i] for a in lines.values()) / 1000.0 for i in range(iters)],
        cpu_samples_us=[sum(a.cpu[i] for a in lines.values()) / 1000.0 for i in range(iters)],
        collective_us=sum(s.collective_us for s in line_stats),
    )
    return Attribution(line_stats, op_stats, totals, sequence)
