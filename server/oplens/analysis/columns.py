"""A profile's events as columns, and their nesting per thread (pure: numpy or its stand-in, arrays.py; no torch).

A profile holds up to millions of events, so they travel as `Events`: one array per field, names
as codes into one list of the distinct names (worker/events.py reads them so from Kineto in bulk).
`RawEvent` is the same event as a record, one at a time: what a stored trace (chrome_trace.py), the
op table, a device runtime's trace and the tests give, and what `Events` hands out where a view
wants records (a few sampled ops; `nest`'s nodes). `of` makes columns of either.

`nesting` nests the CPU events by time on each thread, as `FunctionEvent.populate_cpu_children`
does (sorted by start, the longer first; an event is a child of the innermost open one that
contains it), and gives each the context it runs in: its iteration, target line, inner helper line
and compiled region, from the innermost OpLens marker (records/names.py) around it. One sweep in
start order keeps the open events on a stack; everything else is arrays. `Locator` places, by
time, the events of other threads (autograd's) in the profiled thread's iteration and line.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, fields
from itertools import count
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from oplens.analysis.arrays import np
from oplens.records import names

if TYPE_CHECKING:
    from numpy.typing import NDArray

ITER = names.ITER_RANGE
WORK = names.WORK_RANGE  # a marker: it opens no context, attribution reads each call's
LINE = names.LINE_RANGE
INNER = names.INNER_RANGE
PROBE = names.PROBE_RANGE  # a marker: the lines of a function of empty lines, what a mark costs (attribution reads it)
MARKER = names.MARKER
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

if TYPE_CHECKING:  # annotations only: the arrays may be purearrays' (arrays.py)
    Ints = NDArray[np.int64]
    Flags = NDArray[np.bool_]


@dataclass(slots=True)
class RawEvent:
    """One profiler event as a record."""

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


# RawEvent's fields that are columns of `Events` (the rest: its inputs, read per event)
COLUMNS = tuple(f.name for f in fields(RawEvent) if f.name not in ("name", "shapes", "dtypes", "source"))
_INT_COLUMNS = ("thread", "start_ns", "end_ns", "correlation_id", "linked_correlation_id", "legacy_device_ns",
                "nbytes", "addr")  # fmt: skip


@dataclass(slots=True, eq=False)
class Events:
    """Events as columns: row i of every array is event i; `name` indexes `names`. `rows`: the records
    they were made of, where they were (handed out as they are); `sources`: the profiler's own event
    of each row, for its input shapes (only where the profile recorded them)."""

    names: list[str]
    name: NDArray[np.int32]
    thread: Ints
    start_ns: Ints
    end_ns: Ints
    correlation_id: Ints
    linked_correlation_id: Ints
    on_device: Flags
    is_async: Flags
    legacy_device_ns: Ints
    nbytes: Ints
    device_memory: Flags
    addr: Ints
    rows: Sequence[RawEvent] | None = None
    sources: Sequence[Any] | None = None
    # each view of a profile nests the same events (attribution, work, memory): once, per `def` line
    nested: dict[int, Nesting] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.name)

    def __iter__(self) -> Iterator[RawEvent]:
        return iter(self.records())

    def row(self, i: int) -> RawEvent:
        """Event `i` as a record."""
        return self.rows[i] if self.rows is not None else self.rows_at([i])[0]

    def rows_at(self, index: Sequence[int]) -> list[RawEvent]:
        """The events at `index` as records (the records made, or new ones for these alone)."""
        if self.rows is not None:
            rows = self.rows
            return [rows[i] for i in index]
        at = np.asarray(index, dtype=np.intp)
        names, sources = self.names, self.sources
        picked = [None] * len(at) if sources is None else [sources[i] for i in index]
        columns = (getattr(self, c)[at].tolist() for c in COLUMNS)
        return [RawEvent(names[n], *values, source=source)  # type: ignore[misc]
                for n, *values, source in zip(self.name[at].tolist(), *columns, picked, strict=True)]

    def records(self) -> Sequence[RawEvent]:
        """Every event as a record, made once (for a small profile, the shapes call's: a record costs
        ~1 µs and ~250 bytes); `row` and iteration hand these out from then on."""
        if self.rows is None:
            self.rows = self.rows_at(range(len(self)))
        return self.rows


AnyEvents = Events | Sequence[RawEvent]  # what the views take: columns, or records


def of(events: AnyEvents) -> Events:
    """`events` as columns (the same object where it is)."""
    if isinstance(events, Events):
        return events
    n = len(events)
    codes: defaultdict[str, int] = defaultdict(count().__next__)
    name = np.fromiter(map(codes.__getitem__, map(attrgetter("name"), events)), np.int32, n)
    cols: dict[str, Any] = {c: np.fromiter(map(attrgetter(c), events), np.int64, n) for c in _INT_COLUMNS}
    for c in ("on_device", "is_async", "device_memory"):
        cols[c] = np.fromiter(map(attrgetter(c), events), np.bool_, n)
    return Events(names=list(codes), name=name, rows=events, **cols)


# What a name does to the context of the events inside it (`nesting`).
_OP, _ITER, _LINE, _INNER, _OTHER_MARKER, _REGION = range(6)


@dataclass(slots=True, eq=False)
class NameTable:
    """Per distinct name: whether torch's tables drop it, whether it is one of OpLens's markers (and
    which), a compiled region."""

    kind: list[int]
    number: list[int]  # an iteration's index, a line's number, an inner line's number
    function: list[str]  # an inner line's function
    filtered: Flags
    marker: Flags

    @classmethod
    def of(cls, all_names: Sequence[str]) -> NameTable:
        kind, number, function = [], [], []
        for n in all_names:
            k, num, fn = _OP, 0, ""
            if n.startswith(MARKER):
                k = _OTHER_MARKER
                if n.startswith(LINE):
                    k, num = _LINE, int(n[len(LINE) :])
                elif n.startswith(INNER):
                    fn, _, line = n[len(INNER) :].rpartition(":")
                    k, num = _INNER, int(line)
                elif n.startswith(ITER):
                    k, num = _ITER, int(n[len(ITER) :])
            elif n.startswith(COMPILED_REGION):
                k = _REGION
            kind.append(k)
            number.append(num)
            function.append(fn)
        filtered = np.fromiter((n in FILTERED_NAMES for n in all_names), np.bool_, len(all_names))
        marker = np.fromiter((k not in (_OP, _REGION) for k in kind), np.bool_, len(kind))
        return cls(kind, number, function, filtered, marker)


# The context an event runs in: (iteration, target line, inner function, inner line, region).
Ctx = tuple[int, int, str, int, str]
NO_CTX: Ctx = (-1, 0, "", 0, "")


@dataclass(slots=True, eq=False)
class Nesting:
    """The CPU events nested per thread, as nodes in nesting order: thread by thread (in the order
    of their first event), by start time within one (the longer first), so a parent comes before
    its children. Arrays per node."""

    index: NDArray[np.intp]  # the node's row in the events
    parent: NDArray[np.intp]  # its parent node, -1 at the top of its thread
    ctx: NDArray[np.intp]  # its context, an index into `contexts`
    contexts: list[Ctx]
    marker: Flags  # one of OpLens's ranges
    top_level: Flags  # an op whose parent is a marker or nothing
    child_ns: Ints  # its children's time
    children: Ints  # how many children it has
    locator: Locator

    def context_columns(self) -> tuple[Ints, Ints, NDArray[np.intp], Ints, NDArray[np.intp]]:
        """Per node: (iteration, line, inner function, inner line, region), the strings as indices
        into `contexts` of a context that holds them (-1: none)."""
        cs = self.contexts
        it = np.fromiter((c[0] for c in cs), np.int64, len(cs))[self.ctx]
        line = np.fromiter((c[1] for c in cs), np.int64, len(cs))[self.ctx]
        inner_line = np.fromiter((c[3] for c in cs), np.int64, len(cs))[self.ctx]
        inner = _first_holding(cs, 2)[self.ctx]
        region = _first_holding(cs, 4)[self.ctx]
        return it, line, inner, inner_line, region


def _first_holding(contexts: list[Ctx], slot: int) -> NDArray[np.intp]:
    """Per context: the first context with the same string in `slot` (-1 where it is empty)."""
    first: dict[str, int] = {"": -1}
    return np.fromiter((first.setdefault(str(c[slot]), i) for i, c in enumerate(contexts)), np.intp, len(contexts))


def nesting(events: Events, def_line: int) -> Nesting:
    """The CPU events of `events` (not on the device, not async, not a name torch's tables drop)
    nested per thread, with their contexts, and the `Locator` of the thread that ran the markers;
    made once per events and `def` line."""
    found = events.nested.get(def_line)
    if found is None:
        found = events.nested[def_line] = _nesting(events, def_line)
    return found


def _nesting(events: Events, def_line: int) -> Nesting:
    table = NameTable.of(events.names)
    rows = np.flatnonzero(~events.on_device & ~events.is_async & ~table.filtered[events.name])
    thread = _threads(events, rows)
    # threads in the order of their first event; within one by start, the longer first (lexsort is stable)
    uniq, first, inverse = np.unique(thread, return_index=True, return_inverse=True)
    rank = np.argsort(np.argsort(first, kind="stable"), kind="stable")[inverse.reshape(-1)]
    start, end = events.start_ns[rows], events.end_ns[rows]
    order = np.lexsort((-end, start, rank))
    index = rows[order]
    start, end, rank = start[order], end[order], rank[order]
    code = events.name[index]
    kinds = np.asarray(table.kind, dtype=np.int8)[code]
    bounds = np.flatnonzero(np.diff(rank)) + 1
    parent, ctx, contexts = _sweep(start.tolist(), end.tolist(), kinds.tolist(), code.tolist(),
                                   [0, *bounds.tolist(), len(index)], table, events.names)  # fmt: skip
    par = np.asarray(parent, dtype=np.intp)
    ctx_arr = np.asarray(ctx, dtype=np.intp)
    marker = table.marker[code]
    has_parent = par >= 0
    in_marker = np.zeros(len(par), np.bool_)
    in_marker[has_parent] = marker[par[has_parent]]
    top_level = ~marker & (~has_parent | in_marker)
    slot = par + 1
    n = len(index)
    child_ns = np.bincount(slot, weights=(end - start).astype(np.float64), minlength=n + 1)[1:].astype(np.int64)
    children = np.bincount(slot, minlength=n + 1)[1:].astype(np.int64)
    locator = _locator(events, table, index, ctx_arr, contexts, marker, rank, def_line)
    return Nesting(index, par, ctx_arr, contexts, marker, top_level, child_ns, children, locator)


def _threads(events: Events, rows: NDArray[np.intp]) -> Ints:
    """Each CPU event's thread; a runtime event (cudaLaunchKernel) nests on the thread of the op it
    serves (of the last op with that correlation id)."""
    thread: Ints = events.thread[rows].copy()
    linked = events.linked_correlation_id[rows]
    runtime = np.flatnonzero(linked != 0)
    if not len(runtime):
        return thread
    ops = np.flatnonzero(linked == 0)[::-1]  # the last op of a correlation id wins
    keys, first = np.unique(events.correlation_id[rows[ops]], return_index=True)
    if not len(keys):
        return thread
    op_thread = thread[ops[first]]
    pos = np.minimum(np.searchsorted(keys, linked[runtime]), len(keys) - 1)
    hit = keys[pos] == linked[runtime]
    thread[runtime[hit]] = op_thread[pos[hit]]
    return thread


def _sweep(start: list[int], end: list[int], kind: list[int], code: list[int], bounds: list[int],
           table: NameTable, all_names: list[str]) -> tuple[list[int], list[int], list[Ctx]]:  # fmt: skip
    """One pass in nesting order, a stack per thread: each node's parent (the innermost open event
    that contains it) and context (its parent's, or the one its own marker or compiled region opens).
    The hot loop of processing (one step per CPU event), so written for speed: one tuple per open
    event, a bottom that is never popped."""
    parent: list[int] = []
    ctx: list[int] = []
    add_parent, add_ctx = parent.append, ctx.append
    contexts: list[Ctx] = [NO_CTX]
    number, function = table.number, table.function
    bottom = (1 << 63, -1, 0)  # (end, node, context): contains every event
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        stack = [bottom]
        push, pop = stack.append, stack.pop
        top_end, top, c = bottom
        i = lo
        for s, e, k in zip(start[lo:hi], end[lo:hi], kind[lo:hi], strict=True):
            while s >= top_end or e > top_end:
                pop()
                top_end, top, c = stack[-1]
            add_parent(top)
            if k:
                p = contexts[c]
                n = code[i]
                if k == _LINE:
                    c = len(contexts)
                    contexts.append((p[0], number[n], "", 0, p[4]))
                elif k == _INNER:
                    c = len(contexts)
                    contexts.append((p[0], p[1], function[n], number[n], p[4]))
                elif k == _ITER:
                    c = len(contexts)
                    contexts.append((number[n], 0, "", 0, ""))
                elif k == _REGION and not p[4]:
                    c = len(contexts)
                    contexts.append((p[0], p[1], p[2], p[3], all_names[n]))
            add_ctx(c)
            push((e, i, c))
            top_end, top = e, i
            i += 1
    return parent, ctx, contexts


def _locator(events: Events, table: NameTable, index: NDArray[np.intp], ctx: NDArray[np.intp], contexts: list[Ctx],
             marker: Flags, rank: NDArray[np.intp], def_line: int) -> Locator:  # fmt: skip
    """The Locator of the last thread with a marker inside an iteration (the profiled thread)."""
    if not len(index):
        return Locator.empty(def_line)
    ctx_iter = np.fromiter((c[0] for c in contexts), np.int64, len(contexts))
    marked = marker & (ctx_iter[ctx] >= 0)
    if not marked.any():
        return Locator.empty(def_line)
    main = rank == rank[np.flatnonzero(marked)].max()
    kinds = np.asarray(table.kind, dtype=np.int8)[events.name[index]]
    iters = np.flatnonzero(main & (kinds == _ITER))
    lines = np.flatnonzero(main & (kinds == _LINE))
    line_numbers = np.fromiter((c[1] for c in contexts), np.int64, len(contexts))
    return Locator(iter_starts=events.start_ns[index[iters]], iter_ends=events.end_ns[index[iters]],
                   iter_index=ctx_iter[ctx[iters]], line_starts=events.start_ns[index[lines]],
                   line_iter=ctx_iter[ctx[lines]], line_number=line_numbers[ctx[lines]], def_line=def_line)  # fmt: skip


@dataclass(slots=True, eq=False)
class Locator:
    """The context running on the profiled thread at a given time (for ops on other threads): the
    iteration whose range holds it, and the line that started last before it in that iteration
    (the `def` line where none did). Its iterations and lines by start time."""

    iter_starts: Ints
    iter_ends: Ints
    iter_index: Ints
    line_starts: Ints
    line_iter: Ints
    line_number: Ints
    def_line: int
    _lists: tuple[list[int], list[int]] = field(default=([], []), repr=False)  # the starts, for `__call__`

    def __post_init__(self) -> None:
        self._lists = (self.iter_starts.tolist(), self.line_starts.tolist())

    @classmethod
    def empty(cls, def_line: int) -> Locator:
        none = np.zeros(0, np.int64)
        return cls(none, none, none, none, none, none, def_line)

    def __call__(self, t: int) -> Ctx:
        iter_starts, line_starts = self._lists
        i = bisect.bisect_right(iter_starts, t) - 1
        if i < 0 or t >= self.iter_ends[i]:
            return NO_CTX
        it = int(self.iter_index[i])
        j = bisect.bisect_right(line_starts, t) - 1
        # The line started before t and still ran (or was the last to run) in this iteration.
        if j >= 0 and self.line_iter[j] == it:
            return (it, int(self.line_number[j]), "", 0, "")
        return (it, self.def_line, "", 0, "")

    def many(self, t: Ints) -> tuple[Ints, Ints]:
        """`__call__` for each of the times `t`: (iteration, line), -1 and 0 outside every iteration."""
        it = np.full(len(t), -1, np.int64)
        line = np.zeros(len(t), np.int64)
        if not len(self.iter_starts) or not len(t):
            return it, line
        i = np.searchsorted(self.iter_starts, t, side="right") - 1
        inside = (i >= 0) & (t < self.iter_ends[np.maximum(i, 0)])
        it[inside] = self.iter_index[i[inside]]
        line[inside] = self.def_line
        if len(self.line_starts):
            j = np.searchsorted(self.line_starts, t, side="right") - 1
            jj = np.maximum(j, 0)
            same = inside & (j >= 0) & (self.line_iter[jj] == it)
            line[same] = self.line_number[jj[same]]
        return it, line
