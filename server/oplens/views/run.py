"""The results page of one run: its header (where and how it ran, its figures, what they leave out), each
profiled line's cells (time, share, op calls, memory, bound, the bar's tooltip), the roofline chart
(`views/roofline.py`), a distributed run's rank selector and ranks × lines strip (`views/ranks.py`), each
operator's cells and its artifacts, every word written here once. The webview draws it
(`webview/runPage.ts`): bars, order, sorting and the filter from the run's numbers, the words from this
page. The figures are the run's.

A distributed run's page is the merged run's (all ranks: its figures are means over the ranks) or one
rank's own run (its part), as `oplens.runPage {run_id, rank}` asks."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from oplens.records.execution_words import execution_notes
from oplens.records.format import (
    bound_from_words,
    fmt_bytes,
    fmt_count,
    fmt_measured,
    fmt_share,
    fmt_us,
    fmt_us_range,
    outliers_sentence,
)
from oplens.records.run import Artifacts, LineStat, OpStat, Run
from oplens.records.spread import RankSpread
from oplens.views.cells import PageStat
from oplens.views.insights import insight_label
from oplens.views.lines import (
    host_device_phrase,
    iterations_phrase,
    line_cells,
    memory_sentence,
    spread_phrase,
    time_phrase,
    totals_cells,
    wait_phrase,
    wall_phrase,
)
from oplens.views.ranks import RanksView, is_merged, ranks_view, stragglers
from oplens.views.roofline import RooflineView, bound_phrase, roofline_view

OPS_IN_TOOLTIP = 5  # a line's bar tooltip lists its largest ops
PAIRS_LISTED = 8  # NEFF/NTFF pairs the artifacts list
COLLECTIVE_TITLE = "a collective op: time spent with the other ranks, waiting for the slowest as much as moving data"


@dataclass(frozen=True)
class InsightRow:
    """One insight as the page lists it (`Run.insights`, in the same order)."""

    line: int  # a click goes there
    kind: str
    where: str  # `L25`
    tag: str  # the kind's tag, `host→device copy` (`views/insights.py`)
    rank_tag: str  # `rank 1`: a distributed run's insight about one rank; ''
    message: str
    evidence: str


@dataclass(frozen=True)
class LineRow:
    """One profiled line's cells (`Run.lines`, in the same order)."""

    line: int
    time: str  # self time per iteration: the device's, or the CPU's where the run has no device time
    share: str
    ops: str  # `3 ops`
    mark: str  # `⚠ rank 1 `: the line's straggler; '' for none
    memory: str  # `16.0 MiB / 20.0 MiB` (allocated / peak); '' where the line allocated nothing and saw no peak
    memory_title: str
    bound: str  # `memory 12 %`, `memory, in cache`; '' where the run had no ceilings
    bound_title: str  # `memory-bound · 12 % of the roofline · floor 2.09 ms, 14.89 ms to win`
    wall: str  # the line's host wall time per call; '' where the run did not record it
    outside_ops: str  # of it, outside every operator; '' where that is small (views.lines.LineCells)
    wall_title: str  # `wall 51.10 ms per call, 51.10 ms of it outside any operator (Python, a wait or I/O)`
    tooltip: str  # the bar's: its times, spread, ranks, bound and largest ops, a line each


@dataclass(frozen=True)
class OpRow:
    """One operator's cells (`Run.ops`, in the same order)."""

    calls: str
    self_cpu: str
    self_device: str
    share: str
    category_title: str  # the category tag's tooltip; '' without a category
    line: int | None  # the profiled line where it spends the most time (a click goes there); null: none
    title: str  # the row's tooltip; '' where there is nothing to say beyond its name


@dataclass(frozen=True)
class ArtifactRow:
    """A file the run left: what it is, its path, a note; with no path, a note alone (`… 3 more pairs`)."""

    label: str
    path: str
    note: str


@dataclass(frozen=True)
class RunPage:
    """The `page` of an `oplens.runPage` answer: one run's results page, every word and figure written."""

    run_id: str
    label: str  # `CPU`, `NEURON`, ...: the device time's label
    with_cpu: bool  # a device apart from the host: the host's CPU time is a figure and a column too
    use_device: bool  # the lines' figures are device time (else the CPU's: the run has no device time)
    merged: bool  # all ranks of a distributed run: the figures are means over the ranks
    ranks_badge: str  # `4 ranks`, `rank 1`; '' for a single process
    where_line: int  # the function's `def` line (the header's link)
    sub: str  # how it ran: the backend's device and torch, the capture or the iterations
    args: str  # the arguments it ran with ('' for none)
    created: str  # `2026-12-01 10:30:00 UTC`
    note: str  # the backend's note (why auto chose it)
    warnings: list[str]  # the backend's warnings, one notice each
    stats: list[PageStat]
    stalled: str  # the calls left out of every figure as stalled, in a sentence; '' for none
    unattributed: str  # device time in no line, in a sentence; ''
    outside: str  # a notebook statement's own work around the calls, in a sentence; ''
    insights: list[InsightRow]
    lines_title: str  # `Lines · Self CPU per iteration`
    time_head: str  # the lines' time column: `Self NEURON`
    with_memory: bool
    memory_head_title: str
    with_bound: bool
    with_wall: bool  # each line's wall time and what of it is outside operators (older runs: none)
    wall_head_title: str
    lines: list[LineRow]
    roofline: RooflineView
    ranks: RanksView | None  # a distributed run's selector and strip; null for a single process
    ops_device_head: str  # the op table's device time column: `Self NEURON`
    ops_share_head: str  # its share column: `% NEURON`
    ops_filter: str  # the filter's placeholder: `Filter 42 operators`
    ops: list[OpRow]
    run_dir: str  # `<run id> · <its directory>`
    artifacts: list[ArtifactRow]
    timings: str  # `Worker time: import 120 ms · profile 1.2 s`; ''

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def across_ranks(r: RankSpread) -> str:
    """`9.01–27.04 ms, slowest rank 1`: a figure's spread over the ranks."""
    slowest = f", slowest rank {r.slowest}" if r.max > r.min and r.slowest >= 0 else ""
    return f"{fmt_us_range(r.min, r.max)}{slowest}"


def hottest_line_of_ops(run: Run) -> dict[str, int]:
    """For each op name, the profiled line where it spends the most (device, else CPU) time."""
    best: dict[str, tuple[int, float]] = {}
    for ln in run.lines:
        for o in ln.ops:
            us = o.self_device_us or o.self_cpu_us
            if o.name not in best or us > best[o.name][1]:
                best[o.name] = (ln.line, us)
    return {name: line for name, (line, _) in best.items()}


def run_page(run: Run, distributed: Run | None = None, rank: int | None = None) -> RunPage:
    """The page of `run`: a single process's, a merged run's (`distributed` defaults to it) or rank `rank`'s own
    run within the merged run `distributed`."""
    if distributed is None and rank is None and is_merged(run):
        distributed = run
    merged = distributed is not None and rank is None
    cells = totals_cells(run)
    label, with_cpu = cells.label, cells.on_device
    use_device = run.totals.self_device_us > 0
    t = run.totals
    slow = stragglers(run.insights)
    with_memory = t.memory != ""
    what = f"Self {label}" if use_device else "Self CPU (no device time in this run)"
    created = run.created.replace("T", " ", 1)
    created = f"{created[:-5]} UTC" if created.endswith("+0000") else created
    ops_lines = hottest_line_of_ops(run)
    return RunPage(
        run_id=run.run_id,
        label=label,
        with_cpu=with_cpu,
        use_device=use_device,
        merged=merged,
        ranks_badge="" if distributed is None else f"rank {rank}" if rank is not None else f"{len(distributed.ranks)} ranks",
        where_line=run.target.def_line or run.target.first_line,
        sub=_sub(run),
        args=run.config.args,
        created=created,
        note=run.backend.note,
        warnings=list(run.backend.warnings),
        stats=_stats(run, merged),
        stalled=outliers_sentence(run),
        unattributed=f"{fmt_us(t.unattributed_device_us)} of device time had no launching op and is in no line."
        if t.unattributed_device_us > 0 else "",
        outside=f"The statement's own work around {run.target.qualname}'s calls, {fmt_us(t.outside_device_us)} per "
                "iteration, is not the function's: in no line and no total."
        if t.outside_device_us > 0.01 * t.self_device_us else "",
        insights=[InsightRow(line=i.line, kind=i.kind, where=f"L{i.line}", tag=insight_label(i.kind),
                             rank_tag=f"rank {i.rank}" if i.rank is not None else "", message=i.message,
                             evidence=i.evidence) for i in run.insights],
        lines_title=f"Lines · {what} per iteration{', mean over ranks' if merged else ''}",
        time_head=f"Self {label if use_device else 'CPU'}",
        with_memory=with_memory,
        memory_head_title=(f"{t.memory} memory in one call: allocated by the line's ops / the most allocated while it ran"
                           + (f" ({t.memory_note})" if t.memory_note else "")),  # fmt: skip
        with_bound=any(ln.bound != "" for ln in run.lines),
        with_wall=any(ln.wall_us > 0 for ln in run.lines),
        wall_head_title=("each line's host wall time per call (from its start to the next line's start), and what of it no "
                         "operator ran in: Python, a wait or I/O"),  # fmt: skip
        lines=[_line_row(run, ln, label, with_cpu, use_device, slow.get(ln.line)) for ln in run.lines],
        roofline=roofline_view(run),
        ranks=ranks_view(distributed, f"Self {label}", rank) if distributed is not None else None,
        ops_device_head=f"Self {label}",
        ops_share_head=f"% {label}",
        ops_filter=f"Filter {len(run.ops)} operators",
        ops=[op_row(o, ops_lines.get(o.name)) for o in run.ops],
        run_dir=f"{run.run_id} · {run.run_dir}",
        artifacts=_artifacts(run.artifacts),
        timings=_timings(run.timings_ms),
    )  # fmt: skip


def _sub(run: Run) -> str:
    b = run.backend
    bits = " · ".join(x for x in (b.device_name, f"torch {b.torch_version}" if b.torch_version else "") if x)
    c = run.capture
    if c is not None:
        how = f"{c.calls_profiled} calls of {c.calls_seen} in {c.program}, {c.calls_skipped} skipped"
        how += f" · partial: {c.reason}" if c.partial else ""
    else:
        how = iterations_phrase(run)
    return " · ".join(x for x in (bits, how) if x)


def _stats(run: Run, merged: bool) -> list[PageStat]:
    t = run.totals
    cells = totals_cells(run)
    per = "per iteration, mean over ranks" if merged else "per iteration"
    found = [PageStat(f"Self {cells.label}", cells.self_device, per)]
    if cells.on_device:
        found.append(PageStat("Self CPU", cells.self_cpu, per))
    if merged and t.ranks is not None:
        slowest = f" · slowest rank {t.ranks.slowest}" if t.ranks.max > t.ranks.min and t.ranks.slowest >= 0 else ""
        found.append(PageStat("Ranks", str(len(t.ranks.per_rank)), f"{fmt_us_range(t.ranks.min, t.ranks.max)}{slowest}"))
    if t.collective_us > 0:
        found.append(PageStat("In collectives", fmt_us(t.collective_us), per))
    found.append(PageStat("Operator calls", cells.op_calls, "per iteration"))
    found.append(PageStat("Wall", cells.wall_median, f"median; {cells.wall_min} – {cells.wall_max}"))
    if t.call_wall_us > 0 and t.outside_lines_us >= 0.01 * t.call_wall_us:  # the call's own entry and exit, where they show
        found.append(PageStat("Outside its lines", fmt_us(t.outside_lines_us), "per call: the call's entry and exit, "
                              f"of its {fmt_us(t.call_wall_us)}"))  # fmt: skip
    if cells.noise_floor:
        found.append(PageStat("Noise floor", cells.noise_floor, "the smallest change of the total these calls tell "
                              "from their own noise"))  # fmt: skip
    earlier = earlier_words(run)
    if earlier:
        found.append(PageStat("After an edit", "beside the earlier version" if run.config.earlier and
                              run.config.earlier.measured_run else "alone", earlier))  # fmt: skip
    if run.compile.compile_us > 0:
        found.append(PageStat("First call", fmt_us(run.compile.first_call_us), f"{fmt_us(run.compile.compile_us)} compiling"))
    if t.floor_us is not None and t.headroom_us is not None:
        total = t.self_device_us
        within = total > 0 and t.headroom_us < t.noise_floor_pct / 100.0 * total
        win = f"{fmt_us(t.headroom_us)}: within this run's noise floor" if within else f"{fmt_us(t.headroom_us)} to win"
        call = t.call_wall_us
        of_call = f" of the call's {fmt_us(call)} wall time" if call > 1.1 * total else ""  # its time outside operators
        found.append(PageStat("At the roofline", fmt_us(t.floor_us), f"{win}{of_call}, per call"))
    if t.memory and t.peak_bytes > 0:
        found.append(PageStat("Peak memory", fmt_bytes(t.peak_bytes), f"{t.memory}, in one call"))
    m = t.measured  # Neuron: Explorer's per framework op figures, over the measured lines
    if m is not None and (m.mfu_pct is not None or m.mbu_pct is not None):
        value = " · ".join(f"{n} {v:.1f} %" for n, v in (("MFU", m.mfu_pct), ("MBU", m.mbu_pct)) if v is not None)
        note = f"{bound_from_words(m.bound, 'measured')}; " if m.bound else ""
        found.append(PageStat("Measured on the device", value, f"{note}{fmt_measured(m)}"))
    return found


def measured_phrase(ln: LineStat) -> str:
    """`memory-bound (measured) · measured on the device: MFU 36.8 %, …`: a line's figures as the device measured
    them (Neuron Explorer) and its bound from them; '' for a line the device did not measure."""
    if ln.measured is None:
        return ""
    head = bound_from_words(ln.bound, "measured") if ln.bound_from == "measured" else "no bound measured"
    return f"{head} · measured on the device: {fmt_measured(ln.measured)}"


def _bound_title(ln: LineStat) -> str:
    """The bound cell's title: the measured phrase first where there is one, the roofline's words as the estimate."""
    estimate = bound_phrase(ln)
    if ln.measured is None:
        return estimate
    return " · ".join(x for x in (measured_phrase(ln), f"estimated: {estimate}" if estimate else "") if x)


def _line_row(run: Run, ln: LineStat, label: str, with_cpu: bool, use_device: bool, straggler: int | None) -> LineRow:
    c = line_cells(ln)
    return LineRow(
        line=ln.line,
        time=c.self_device if use_device else c.self_cpu,
        share=c.share_device if use_device else c.share_cpu,
        ops=c.ops,
        mark=f"⚠ rank {straggler} " if straggler is not None else "",
        memory=c.memory,
        memory_title=memory_sentence(ln, run.totals.memory),
        bound=c.bound,
        bound_title=_bound_title(ln),
        wall=c.wall,
        outside_ops=c.outside_ops,
        wall_title=wall_phrase(ln),
        tooltip=_line_tooltip(ln, label, with_cpu, straggler),
    )


def _line_tooltip(ln: LineStat, label: str, with_cpu: bool, straggler: int | None) -> str:
    parts = [time_phrase(ln, label)]
    if with_cpu:
        parts.append(f"Self CPU {fmt_us(ln.self_cpu_us)} ({fmt_share(ln.pct_cpu)})")
    parts.append(f"{spread_phrase(ln)}{' — noisy' if ln.noisy else ''}")
    if wall := wall_phrase(ln):
        parts.append(wall)
    if wait := wait_phrase(ln, with_cpu):
        parts.append(wait)
    if host := host_device_phrase(ln, with_cpu):
        parts.append(host)
    if ln.ranks is not None:
        blame = f" — ⚠ rank {straggler} is the straggler" if straggler is not None else ""
        parts.append(f"across {len(ln.ranks.per_rank)} ranks: median {fmt_us(ln.ranks.median)}, {across_ranks(ln.ranks)}{blame}")
    if ln.collective_us > 0:
        parts.append(f"in collectives {fmt_us(ln.collective_us)}")
    if bound := _bound_title(ln):
        parts.append(bound)
    parts.extend(execution_notes(ln))  # executions fused over several lines, ops run on the CPU (Neuron)
    top = sorted(ln.ops, key=lambda o: (-o.self_device_us, -o.self_cpu_us))[:OPS_IN_TOOLTIP]
    parts.extend(f"{o.name} ×{fmt_count(o.calls)} {fmt_us(o.self_device_us)}" for o in top)
    return "\n".join(parts)


def op_row(o: OpStat, line: int | None = None) -> OpRow:
    """An operator's cells (its calls, self CPU and device time, share, titles): the page's op table, the CLI's,
    the notebook's and a hover's."""
    category = f" ({o.category})" if o.category else ""
    across = f"; across {len(o.ranks.per_rank)} ranks {across_ranks(o.ranks)}" if o.ranks is not None else ""
    if line is not None:
        title = f"{o.name}{category}: mostly on line {line} (click to go there){across}"
    elif across or o.category:
        title = f"{o.name}{category}{across}"
    else:
        title = ""
    return OpRow(
        calls=fmt_count(o.calls), self_cpu=fmt_us(o.self_cpu_us), self_device=fmt_us(o.self_device_us), share=fmt_share(o.pct),
        category_title=(COLLECTIVE_TITLE if o.category == "collective" else o.category), line=line, title=title,
    )  # fmt: skip


def _artifacts(a: Artifacts) -> list[ArtifactRow]:
    found: list[ArtifactRow] = []

    def add(label: str, path: str, note: str = "") -> None:
        if path:
            found.append(ArtifactRow(label, path, note))

    pairs = a.neff_ntff_pairs
    add("Framework trace", a.trace_json, "(Chrome trace)")
    add("Device profile", a.device_profile_dir, f"({len(pairs)} NEFF/NTFF pair{'' if len(pairs) == 1 else 's'})" if pairs else "")
    if a.profile_output_dir != a.device_profile_dir:
        add("Profile output", a.profile_output_dir, "(what Neuron Explorer ingests)")
    for p in pairs[:PAIRS_LISTED]:
        add(f"NEFF {p.hash}", p.neff)
        size = "(empty: this NeuronCore ran nothing)" if p.ntff_bytes == 0 else f"({p.ntff_bytes / 2**20:.1f} MiB)"
        add(f"NTFF {p.hash}", p.ntff, size)
    if len(pairs) > PAIRS_LISTED:
        found.append(ArtifactRow("", "", f"… {len(pairs) - PAIRS_LISTED} more pairs"))
    add("Worker log", a.worker_log, "(your function’s stdout and stderr)")
    for f in a.system_trace_files[:10]:
        add("System trace", f)
    for f in a.files[:20]:
        add("File", f)
    return found


def _timings(timings_ms: dict[str, float]) -> str:
    def took(ms: float) -> str:
        return f"{ms / 1000:.1f} s" if ms >= 1000 else f"{ms:.0f} ms"

    parts = [f"{k.removesuffix('_ms')} {took(v)}" for k, v in timings_ms.items()]
    return f"Worker time: {' · '.join(parts)}" if parts else ""


def earlier_words(run: Run) -> str:
    """A run profiled after an edit: which run its earlier version was measured in beside it, and how to see the
    diff, or why it was not ("" for a run that was not profiled after an edit)."""
    e = run.config.earlier
    if e is None:
        return ""
    if e.measured_run:
        return (f"the function's earlier version (as run {e.run_id} profiled it) was measured beside it, interleaved, "
                f"as run {e.measured_run}: oplens diff {e.measured_run} {run.run_id} shows each line's change")
    return (f"its earlier version (run {e.run_id}) was not measured beside it: {e.why_not}; a diff against it is "
            "across two processes")
