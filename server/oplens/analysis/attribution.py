"""Attribute every profiler event's self CPU and self device time to a line of the target.

Input: the profile's events, as columns (`columns.Events`: a fresh profile's, read in bulk by
worker/events.py) or as `RawEvent` records (a stored trace, chrome_trace.py; the op table; tests), in
which OpLens's own markers (records/names.py) appear as ranges named `oplens.iter:<k>`,
`oplens.line:<n>` (a line of the target) and `oplens.inner:<function>:<n>` (a line of a same-file
helper). Output: per-line and per-op records and the totals, and each line's ordered top-level ops
for the insights. The nesting (columns.nesting: the events nested per thread, each in its iteration
and line) is shared with the other views of a profile, as `Node`s (`nest`): each line's work
(work.line_work) and memory (memory.line_memory).

The rules, the same that `key_averages()` follows, so that the totals agree with it:
- CPU events nest by time on each thread; an event's self CPU time is its duration minus
  its children's. Async events and device events do not nest.
- A device event (kernel) belongs to the frontend CPU op whose correlation id it links to;
  that op's self device time is the sum of its kernels. Device time is summed over CPU ops
  only, so no kernel counts twice. (Legacy PrivateUse1 backends report it per CPU op.)
- Each op goes to the innermost enclosing `oplens.line` marker; an op on another thread
  (autograd's backward, a worker pool) goes to the line running on the profiled thread when
  it started. Ops inside an iteration but outside any line go to the `def` line; where the iteration
  is a statement that runs more than the function (a notebook's `%oplens`), they are not the function's:
  their time is counted apart (`Totals.outside_device_us`), in no line and no total.
- Before anything is summed, the calls that are outliers (the same work as the others, far slower: a
  stall; analysis/outliers.py) are decided, from each call's ops per line and its time; every µs figure
  is then a mean over the other calls, once (`Totals.outliers`). The per-call samples, spreads and
  shares keep every call.
The attribution works on columns: numpy (or its pure-Python stand-in, arrays.py) sums per line, op
and iteration over the nested events, its dicts filled in the order a loop over the events would fill
them (ties in the sorted tables keep that order). Pure (no torch), so it is tested on synthetic events too.
"""

from __future__ import annotations

import bisect
import itertools
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from oplens.analysis import outliers, stats
from oplens.analysis.arrays import np
from oplens.analysis.collectives import category
from oplens.analysis.columns import (
    COMPILED_REGION,
    INNER,
    ITER,
    LINE,
    PROBE,
    WORK,
    AnyEvents,
    Ctx,
    Events,
    Locator,
    Nesting,
    RawEvent,
    nesting,
    of,
)
from oplens.records.run import CompiledRegion, InnerLine, LineStat, OpStat, Outliers, SourceRef, Totals

if TYPE_CHECKING:
    from numpy.typing import NDArray

# The events' types and the markers' names are columns.py's; the views import them from here.
__all__ = ["COMPILED_REGION", "ITER", "NOT_OPERATOR_CALLS", "AnyEvents", "Attribution", "Ctx", "Locator", "Node",
           "OpSample", "RawEvent", "attribute", "locator", "nest"]  # fmt: skip

# Bookkeeping ranges that time real work but are not operator calls the user wrote.
NOT_OPERATOR_CALLS = frozenset({"TorchDynamo Cache Lookup"})


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
    wall: list[float] = field(default_factory=list)  # per iteration: its ranges' time (ns)
    op_wall: list[float] = field(default_factory=list)  # per iteration: its top-level ops' inclusive time (ns)
    wait: list[float] = field(default_factory=list)  # per iteration: its waits for the device (ns)
    marks: list[float] = field(default_factory=list)  # per iteration: its line marks, how many
    marks_ns: list[float] = field(default_factory=list)  # per iteration: what they cost inside its wall time (ns)


def attribute(
    events: AnyEvents,
    iters: int,
    def_line: int,
    device_time: str = "cpu",
    fused: dict[str, list[SourceRef]] | None = None,
    outside: bool = False,
) -> Attribution:
    """Aggregate `events` (from `iters` iterations) per line and per op; µs per iteration. On columns
    (`Events`; records are made columns first): one sweep nests them (columns.nesting), the rest is
    arrays, so a million events take seconds."""
    fused = fused or {}
    ev = of(events)
    nested = nesting(ev, def_line)
    dur = ev.end_ns - ev.start_ns
    it, line, inner, inner_line, region = nested.context_columns()
    marks = _work_marks(ev, nested, it, iters)
    # An op on another thread (autograd's) goes to the line running on the profiled thread when it started.
    lost = np.flatnonzero(~nested.marker & (it < 0))
    if len(lost):
        it[lost], line[lost] = nested.locator.many(ev.start_ns[nested.index[lost]])
        inner[lost], inner_line[lost], region[lost] = -1, 0, -1
    # outside the profiled iterations: OpLens's own synchronisation; a capture's unfinished call
    sel = np.flatnonzero(~nested.marker & (it >= 0) & (it < iters))
    outside_sel = np.zeros(0, np.int64)
    if outside:  # the statement's own work, around the function's calls: not the function's
        outside_sel, sel = sel[line[sel] == 0], sel[line[sel] != 0]
    rows = nested.index[sel]
    it, inner, inner_line, region = it[sel], inner[sel], inner_line[sel], region[sel]
    line = np.where(line[sel] == 0, def_line, line[sel])
    name = ev.name[rows].astype(np.int64)
    linked = device_time == "linked"
    self_cpu, self_dev = _self_ns(ev, nested, dur, sel, linked)
    outside_ns = int(_self_ns(ev, nested, dur, outside_sel, linked)[1].sum()) if len(outside_sel) else 0
    # device time no op claimed: neither the function's nor (ops that are not the function's) outside it
    unattributed = int(dur[ev.on_device].sum()) - int(self_dev.sum()) - outside_ns if linked else 0
    parent = nested.parent[sel]
    has_parent = parent >= 0
    merged = np.zeros(len(sel), np.bool_)  # Node.merged_into_parent: a dispatch duplicate counts no call
    p = parent[has_parent]
    merged[has_parent] = (nested.children[p] == 1) & (ev.name[nested.index[p]] == name[has_parent])
    calls = (~merged).astype(np.int64)
    top = nested.top_level[sel]

    line_keys, line_of = _groups(line)
    lines = _line_accs(line_keys, line_of, it, iters, self_cpu, self_dev)
    # Decide which calls are outliers, then sum once over the others (`kept`): every figure below is theirs.
    call_dev, call_cpu = (np.bincount(it, weights=x.astype(np.float64), minlength=iters)[:iters] / 1000.0
                          for x in (self_dev, self_cpu))  # fmt: skip
    work, works = _call_work(it, (line, inner, inner_line, name), iters, marks)
    stalled = outliers.find(call_dev.tolist(), call_cpu.tolist(), work)
    kept_calls = np.ones(iters, np.bool_)
    kept_calls[[c.call for c in stalled]] = False
    kept = kept_calls[it]
    not_call = np.fromiter((n in NOT_OPERATOR_CALLS for n in ev.names), np.bool_, len(ev.names))
    for acc, n in zip(lines.values(), _sums(line_of, len(line_keys), top & ~not_call[name] & kept), strict=True):
        acc.top_calls = n
    accs = list(lines.values())
    self_dev_all = self_dev
    calls, self_cpu, self_dev = calls * kept, self_cpu * kept, self_dev * kept
    keys, group = _groups(line_of, name)
    for (li, n), c, cpu, dev in zip(keys, *(_sums(group, len(keys), x) for x in (calls, self_cpu, self_dev)), strict=True):
        accs[li].ops[ev.names[n]] = [c, cpu, dev]
    has_inner = np.flatnonzero(inner >= 0)
    keys, group = _groups(line_of[has_inner], inner[has_inner], inner_line[has_inner])
    for (li, ctx, ln), cpu, dev in zip(keys, *(_sums(group, len(keys), x[has_inner]) for x in (self_cpu, self_dev)),
                                       strict=True):  # fmt: skip
        accs[li].inner[(nested.contexts[ctx][2], ln)] = [cpu, dev]
    is_region = np.fromiter((n.startswith(COMPILED_REGION) for n in ev.names), np.bool_, len(ev.names))
    for i in np.flatnonzero(kept & ((region >= 0) | (top & is_region[name]))).tolist():
        acc = accs[line_of[i]]
        if region[i] >= 0:
            acc.regions.setdefault(nested.contexts[region[i]][4], [0, 0])[1] += int(self_dev[i])
        if top[i] and is_region[name[i]]:
            acc.regions.setdefault(ev.names[name[i]], [0, 0])[0] += 1
    # Per line: the top-level ops in order of their first call in iteration 0, for insights.
    sequence: dict[int, list[OpSample]] = defaultdict(list)
    first = np.flatnonzero(top & (it == 0))
    for ln, n, e in zip(line[first].tolist(), name[first].tolist(), ev.rows_at(rows[first].tolist()), strict=True):
        sequence[ln].append(OpSample(ev.names[n], e))

    op_keys, op_of = _groups(name)
    op_acc = {ev.names[n]: [c, cpu, dev] for (n,), c, cpu, dev in
              zip(op_keys, *(_sums(op_of, len(op_keys), x) for x in (calls, self_cpu, self_dev)), strict=True)}  # fmt: skip
    per_iter = _sums(op_of * iters + it, len(op_keys) * iters, self_dev_all, ints=False)
    op_dev_iter = {n: per_iter[k * iters : (k + 1) * iters] for k, n in enumerate(op_acc)}
    record = outliers.record(stalled, call_dev.tolist(), call_cpu.tolist(), works)
    call_wall = _add_walls(lines, ev, nested, iters, def_line, device=linked)
    return _build(lines, op_acc, op_dev_iter, iters, unattributed, fused, dict(sequence), outside_ns, record, call_wall)


# What a wait for the device is named: the runtime's synchronisations (CUDA's cudaStreamSynchronize,
# cudaDeviceSynchronize, cudaEventSynchronize); where a device's runtime shows none (PrivateUse1: Neuron), the op
# that reads a device scalar back, which blocks until the device's queue has run (`.item()`)
SYNC_RUNTIME = "Synchronize"
SCALAR_READ = "aten::_local_scalar_dense"


def _add_walls(lines: dict[int, _LineAcc], ev: Events, nested: Nesting, iters: int, def_line: int,
               device: bool = False) -> list[float]:  # fmt: skip
    """Each line's wall time per iteration (its ranges' durations: a line in a loop runs many), its top-level ops'
    inclusive time and, on a `device`, its waits for it, into `lines` (a line that ran no op gets its accumulator
    here); each iteration's own wall time (its range), returned."""
    it, line, *_ = nested.context_columns()  # a range's own context: the one it opens
    names = ev.name[nested.index]
    is_line = np.fromiter((n.startswith(LINE) for n in ev.names), np.bool_, len(ev.names))[names]
    is_iter = np.fromiter((n.startswith(ITER) for n in ev.names), np.bool_, len(ev.names))[names]
    dur = (ev.end_ns - ev.start_ns)[nested.index]
    inside = (it >= 0) & (it < iters)
    call_wall = [0.0] * iters
    calls = is_iter & inside
    for k, d in zip(it[calls].tolist(), dur[calls].tolist(), strict=True):
        call_wall[k] += d

    def acc(ln: int) -> _LineAcc:
        a = lines.get(ln)
        if a is None:
            a = lines[ln] = _LineAcc(cpu=[0.0] * iters, dev=[0.0] * iters)
        if not a.wall:
            a.wall, a.op_wall = [0.0] * iters, [0.0] * iters
        return a

    ranges = is_line & inside
    for ln, k, d in zip(line[ranges].tolist(), it[ranges].tolist(), dur[ranges].tolist(), strict=True):
        acc(ln).wall[k] += d
    ops = nested.top_level & inside
    for ln, k, d in zip(line[ops].tolist(), it[ops].tolist(), dur[ops].tolist(), strict=True):
        acc(ln or def_line).op_wall[k] += d
    in_range, whole = mark_cost(ev)
    if whole > 0:  # a line's own ranges leave their in-range part in its wall, a helper's line under it the whole
        is_inner = np.fromiter((n.startswith(INNER) for n in ev.names), np.bool_, len(ev.names))[names]
        for mask, cost in ((ranges, in_range), (is_inner & inside, whole)):
            for ln, k in zip(line[mask].tolist(), it[mask].tolist(), strict=True):
                a = acc(ln or def_line)
                if not a.marks:
                    a.marks, a.marks_ns = [0.0] * iters, [0.0] * iters
                a.marks[k] += 1
                a.marks_ns[k] += cost
    if device:
        syncs = np.fromiter((SYNC_RUNTIME in n for n in ev.names), np.bool_, len(ev.names))
        if not syncs[names].any():  # no runtime event says it: the scalar reads are the waits
            syncs = np.fromiter((n == SCALAR_READ for n in ev.names), np.bool_, len(ev.names))
        waits = syncs[names] & inside
        for ln, k, d in zip(line[waits].tolist(), it[waits].tolist(), dur[waits].tolist(), strict=True):
            a = acc(ln or def_line)
            if not a.wait:
                a.wait = [0.0] * iters
            a.wait[k] += d
    return call_wall


def own_outside_us(ln: LineStat) -> float:
    """A line's time outside operators less OpLens's own line marks' part of it (`LineStat.marks_us`): its Python,
    waits and I/O, as a call the profiler does not watch would spend them."""
    return max(0.0, ln.outside_ops_us - ln.marks_us)


MARKS_SAID_SHARE = 0.05  # of a line's (or the call's) wall time: OpLens's line marks' part worth saying


def marks_matter(ln: LineStat) -> bool:
    """OpLens's own line marks are a part of the line's wall time worth saying (its figures say "about")."""
    return ln.wall_us > 0 and ln.marks_us >= MARKS_SAID_SHARE * ln.wall_us


def marks_total_us(lines: list[LineStat]) -> float:
    """What OpLens's line marks cost a call, over its lines (an estimate: `mark_cost`)."""
    return sum(ln.marks_us for ln in lines)


def mark_cost(ev: Events) -> tuple[float, float]:
    """What a line mark costs in this profile (ns), from the probe's ranges (worker/linemarks.mark_probe): what a
    line's own mark leaves inside its range (the probe's lines' durations), and what a helper's line costs the line
    that runs it (the period from one step of the probe's generator to the next, its frame's resume and yield
    included; where steps are not marked one by one, `sys.monitoring` marking a resumed line once, from one of
    the probe's lines to the next); (0, 0) where the run has no probe (older runs, a compare's rounds). Means of
    what is not far out (`stats.outlier_bar`): the profiler's periodic bookkeeping is part of a mark's cost, a
    stalled mark is not."""
    inner_prefix = PROBE + "inner:"
    kind = [2 if n.startswith(inner_prefix) else 1 if n.startswith(PROBE) else 0 for n in ev.names]
    probe = np.flatnonzero((np.fromiter(kind, np.int64, len(kind))[ev.name] > 0) & ~ev.on_device)
    lines: list[tuple[int, int]] = []  # (start, end) ns; a few hundred: plain Python
    steps: list[int] = []
    for n, start, end in zip(ev.name[probe].tolist(), ev.start_ns[probe].tolist(), ev.end_ns[probe].tolist(), strict=True):
        if kind[n] == 1:
            lines.append((start, end))
        else:
            steps.append(start)
    if len(lines) < 16:
        return 0.0, 0.0
    lines.sort()
    steps.sort()
    in_range = _kept_mean([end - start for start, end in lines])
    line_start = [start for start, _ in lines]
    # a period with one of the probe's lines starting inside it spans from one generator's end to the next's start
    step_periods = [b - a for a, b in itertools.pairwise(steps)
                    if bisect.bisect_right(line_start, a) == bisect.bisect_left(line_start, b)]  # fmt: skip
    if len(step_periods) >= 16:
        return in_range, _kept_mean(step_periods)
    return in_range, _kept_mean([b - a for a, b in itertools.pairwise(line_start)])


def _kept_mean(values: list[int]) -> float:
    bar, _ = stats.outlier_bar(values)
    kept = [v for v in values if v <= bar]
    return sum(kept) / len(kept) if kept else 0.0


def _work_marks(ev: Events, nested: Nesting, it: NDArray[np.int64], iters: int) -> NDArray[np.int64]:
    """Each call's argument marker (`oplens.work:<digest>`, worker/calls.py: its arguments' shapes, where
    a capture's calls may differ) as a number; 0 for a call without one."""
    code = np.fromiter((i + 1 if n.startswith(WORK) else 0 for i, n in enumerate(ev.names)), np.int64, len(ev.names))
    mark = code[ev.name[nested.index]]
    at = np.flatnonzero((mark > 0) & (it >= 0) & (it < iters))
    marks = np.zeros(iters, np.int64)
    marks[it[at]] = mark[at]
    return marks


def _call_work(it: NDArray[np.int64], keys: tuple[NDArray[np.int64], ...], iters: int,
               marks: NDArray[np.int64]) -> tuple[list[int], int]:  # fmt: skip
    """Each call's kind of work as a number, and how many kinds there are: calls share one where they ran
    the same ops as often on each line and helper line (`keys`, per event), with the same argument marker."""
    found, group = _groups(*keys)
    width = len(found)
    counts = np.bincount(it * width + group, minlength=iters * width)[: iters * width].tolist()
    kinds: dict[tuple[int, ...], int] = {}
    kind = [kinds.setdefault((*counts[c * width : (c + 1) * width], m), len(kinds)) for c, m in enumerate(marks.tolist())]
    return kind, len(kinds)


def _self_ns(ev: Events, nested: Nesting, dur: NDArray[np.int64], sel: NDArray[np.int64],
             linked: bool) -> tuple[NDArray[np.int64], NDArray[np.int64]]:  # fmt: skip
    """The self CPU and self device time (ns, all iterations) of the nested events at `sel`: an event's
    duration minus its children's; its linked kernels' (and legacy per-op device time) where device time
    is linked, else its self CPU time."""
    rows = nested.index[sel]
    self_cpu = dur[rows] - nested.child_ns[sel]
    if not linked:
        return self_cpu, self_cpu
    own = ev.linked_correlation_id[rows] == 0  # a runtime event claims no kernel
    return self_cpu, np.where(own, _device_ns(ev, dur, ev.correlation_id[rows]), 0) + ev.legacy_device_ns[rows]


def _device_ns(ev: Events, dur: NDArray[np.int64], correlation_id: NDArray[np.int64]) -> NDArray[np.int64]:
    """The device time of the kernels linked to each correlation id: a CPU op's self device time."""
    kernels = ev.on_device & (ev.linked_correlation_id > 0)
    keys, group = np.unique(ev.linked_correlation_id[kernels], return_inverse=True)
    if not len(keys):
        return np.zeros(len(correlation_id), np.int64)
    sums = np.bincount(group.reshape(-1), weights=dur[kernels].astype(np.float64)).astype(np.int64)
    pos = np.minimum(np.searchsorted(keys, correlation_id), len(keys) - 1)
    return np.where(keys[pos] == correlation_id, sums[pos], 0)


def _groups(*columns: NDArray[np.int64]) -> tuple[list[tuple[int, ...]], NDArray[np.int64]]:
    """The distinct rows of `columns` in order of first occurrence, and each row's group in it: what
    a dict filled in event order would hold (its keys' order is the order of ops with equal times)."""
    n = len(columns[0])
    code = np.zeros(n, np.int64)
    for c in columns:  # one code per distinct row so far, then combined with the next column
        values, dense = np.unique(c, return_inverse=True)
        code = code * max(len(values), 1) + dense.reshape(-1)
        code = np.unique(code, return_inverse=True)[1].reshape(-1)
    _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    firsts = first[order]
    keys: list[tuple[int, ...]] = list(zip(*(c[firsts].tolist() for c in columns), strict=True))
    return keys, rank[inverse.reshape(-1)]


def _sums(group: NDArray[np.int64], size: int, values: NDArray[Any], ints: bool = True) -> list[Any]:
    """Each group's sum of `values` (integers, so float64 sums them exactly), as Python ints or floats."""
    total = np.bincount(group, weights=values.astype(np.float64), minlength=size)
    sums: list[Any] = total.astype(np.int64).tolist() if ints else total.tolist()
    return sums


def _line_accs(keys: list[tuple[int, ...]], line_of: NDArray[np.int64], it: NDArray[np.int64], iters: int,
               self_cpu: NDArray[np.int64], self_dev: NDArray[np.int64]) -> dict[int, _LineAcc]:  # fmt: skip
    """One accumulator per line (in order of its first op), with its per-iteration times."""
    size = len(keys) * iters
    cpu = _sums(line_of * iters + it, size, self_cpu, ints=False)
    dev = _sums(line_of * iters + it, size, self_dev, ints=False)
    return {k[0]: _LineAcc(cpu=cpu[i * iters : (i + 1) * iters], dev=dev[i * iters : (i + 1) * iters])
            for i, k in enumerate(keys)}  # fmt: skip


def nest(events: AnyEvents, def_line: int) -> tuple[list[Node], Locator]:
    """The CPU events of `events` nested per thread (each with its context: iteration, line, ...),
    by start time within a thread, and a `Locator` of the marked thread: the nesting every view of
    a profile shares (the attribution here; work.line_work, memory.line_memory), as `Node`s."""
    ev = of(events)
    n = nesting(ev, def_line)
    rows = ev.records()
    nodes: list[Node] = []
    contexts = n.contexts
    for r, p, c, marker, top, child_ns, children in zip(n.index.tolist(), n.parent.tolist(), n.ctx.tolist(),
                                                        n.marker.tolist(), n.top_level.tolist(), n.child_ns.tolist(),
                                                        n.children.tolist(), strict=True):  # fmt: skip
        nodes.append(Node(rows[r], contexts[c], marker, top, nodes[p] if p >= 0 else None, child_ns, children))
    return nodes, n.locator


def locator(events: AnyEvents, def_line: int) -> Locator:
    """`nest`'s `Locator` alone (no `Node`s made): where each moment of the profiled thread was."""
    return nesting(of(events), def_line).locator


def _build(
    lines: dict[int, _LineAcc],
    op_acc: dict[str, list[float]],
    op_dev_iter: dict[str, list[float]],
    iters: int,
    unattributed_ns: int,
    fused: dict[str, list[SourceRef]],
    sequence: dict[int, list[OpSample]],
    outside_ns: int = 0,
    stalled: Outliers | None = None,
    call_wall: list[float] | None = None,
) -> Attribution:
    """The records, µs per call: the sums over the kept calls (all but the outliers) over their number;
    what no call owns (unattributed, outside) over every call."""
    o = stalled or Outliers(kept=iters, profiled=iters)
    kept = sorted(set(range(iters)) - {c.call for c in o.calls})
    per = 1.0 / (1000.0 * len(kept))  # ns over the kept iterations → µs per iteration
    per_all = 1.0 / (1000.0 * iters)
    total_cpu = sum(a.cpu[i] for a in lines.values() for i in kept) * per
    total_dev = sum(a.dev[i] for a in lines.values() for i in kept) * per
    # Shares come from trimmed means: one slow iteration (the profiler's own start-up lands on the
    # function's first op) must not move them; the µs figures stay means, so lines sum to totals.
    robust_cpu = {line: stats.trimmed_mean(a.cpu) for line, a in lines.items()}
    robust_dev = {line: stats.trimmed_mean(a.dev) for line, a in lines.items()}
    robust_cpu_total, robust_dev_total = sum(robust_cpu.values()), sum(robust_dev.values())

    def pct(x: float, total: float) -> float:
        return 100.0 * x / total if total > 0 else 0.0

    line_stats = []
    for line, a in sorted(lines.items()):
        cpu = sum(a.cpu[i] for i in kept) * per
        dev = sum(a.dev[i] for i in kept) * per
        ops = [
            OpStat(name=n, calls=op[0] / len(kept), self_cpu_us=op[1] * per, self_device_us=op[2] * per,
                   pct=pct(op[2] * per, total_dev), category=category(n))
            for n, op in a.ops.items()
        ]
        ops.sort(key=lambda o: (-o.self_device_us, -o.self_cpu_us))
        inner = [
            InnerLine(function=f, line=ln, self_cpu_us=v[0] * per, self_device_us=v[1] * per)
            for (f, ln), v in sorted(a.inner.items(), key=lambda kv: -kv[1][1])
        ]
        regions = [
            CompiledRegion(name=n, calls=v[0] / len(kept), self_device_us=v[1] * per, fused=fused.get(n, []))
            for n, v in a.regions.items()
        ]
        dev_us = [v / 1000.0 for v in a.dev]
        wall_us = [v / 1000.0 for v in a.wall]
        outside_us = max(0.0, sum(a.wall[i] - a.op_wall[i] for i in kept) * per) if a.wall else 0.0
        line_stats.append(
            LineStat(
                line=line,
                self_cpu_us=cpu,
                self_device_us=dev,
                pct_device=pct(robust_dev[line], robust_dev_total),
                pct_cpu=pct(robust_cpu[line], robust_cpu_total),
                op_calls=a.top_calls / len(kept),
                ops=ops,
                device_spread=stats.spread(dev_us),
                cpu_spread=stats.spread([v / 1000.0 for v in a.cpu]),
                noisy=stats.is_noisy(dev_us),
                inner=inner,
                compiled=regions,
                device_samples_us=dev_us,
                cpu_samples_us=[v / 1000.0 for v in a.cpu],
                collective_us=sum(o.self_device_us for o in ops if o.category),
                wall_us=sum(a.wall[i] for i in kept) * per if a.wall else 0.0,
                wall_spread=stats.spread(wall_us),
                outside_ops_us=outside_us,
                wall_samples_us=wall_us,
                wait_us=sum(a.wait[i] for i in kept) * per if a.wait else 0.0,
                marks=sum(a.marks[i] for i in kept) / len(kept) if a.marks else 0.0,
                marks_us=min(sum(a.marks_ns[i] for i in kept) * per, outside_us) if a.marks else 0.0,
            )
        )
    op_stats = [
        OpStat(
            name=n,
            calls=op[0] / len(kept),
            self_cpu_us=op[1] * per,
            self_device_us=op[2] * per,
            pct=pct(op[2] * per, total_dev),
            device_spread=stats.spread([v / 1000.0 for v in op_dev_iter[n]]),
            category=category(n),
        )
        for n, op in op_acc.items()
    ]
    op_stats.sort(key=lambda o: (-o.self_device_us, -o.self_cpu_us))
    device_samples = [sum(a.dev[i] for a in lines.values()) / 1000.0 for i in range(iters)]
    totals = Totals(
        self_cpu_us=total_cpu,
        self_device_us=total_dev,
        op_calls=sum(a.top_calls for a in lines.values()) / len(kept),
        unattributed_device_us=unattributed_ns * per_all,
        outside_device_us=outside_ns * per_all,
        device_samples_us=device_samples,
        noise_floor_pct=100.0 * stats.noise_floor(device_samples),
        cpu_samples_us=[sum(a.cpu[i] for a in lines.values()) / 1000.0 for i in range(iters)],
        collective_us=sum(s.collective_us for s in line_stats),
        outliers=o,
    )
    if call_wall and any(call_wall):
        totals.call_wall_us = sum(call_wall[i] for i in kept) * per
        totals.outside_lines_us = max(0.0, totals.call_wall_us - sum(ln.wall_us for ln in line_stats))
    return Attribution(line_stats, op_stats, totals, sequence)
