"""Terminal rendering of runs: the per-line listing, the op table, insights, comparisons."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from oplens.backends import registry
from oplens.engine.diff import WALL, FunctionDiff
from oplens.engine.overview_diff import OverviewDiff
from oplens.records.errors import OpLensError
from oplens.records.execution_words import execution_notes
from oplens.records.format import (
    bound_from_words,
    device_time_sources,
    fmt_above,
    fmt_bound_cell,
    fmt_bytes,
    fmt_count,
    fmt_flops,
    fmt_measured,
    fmt_us,
    fused_split,
    outliers_sentence,
    outside_sentence,
)
from oplens.records.overview import OverviewRun
from oplens.records.run import HOST_CPU, LineStat, Run
from oplens.views.compare import ComparePage
from oplens.views.diff import measured_words
from oplens.views.lines import bound_cell, iterations_phrase, line_cells, lines_wall_sentence, totals_cells
from oplens.views.run import earlier_words, op_row

BAR_WIDTH = 20
OP_ROWS = 15


def _bar(share: float) -> Text:
    filled = share / 100.0 * BAR_WIDTH
    full = int(filled)
    text = "█" * full + ("▌" if filled - full >= 0.5 else "")
    style = "red" if share >= 30 else "yellow" if share >= 10 else "green"
    return Text(text.ljust(BAR_WIDTH), style=style)


def _source_lines(run: Run) -> list[str]:
    try:
        return Path(run.target.file).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []


VIEWS = ("time", "work", "memory", "bound")  # --view: what the per-line listing shows beside the source


def profile(console: Console, run: Run, view: str = "time") -> None:
    label = run.backend.device_label
    has_device = registry.facts_of(run.backend.name).on_device
    t = run.target
    console.print(
        f"[bold]{escape(t.qualname)}[/]  {escape(_rel(t.file))}:{t.first_line}-{t.last_line}  ·  "
        + (f"{escape(t.imported_as())}  ·  " if t.module else "")
        + f"{label} ({run.backend.name}, torch {run.backend.torch_version})  ·  "
        + _runs_what(run),
        highlight=False,
    )
    if run.backend.note:
        console.print(f"[dim]{escape(run.backend.note)}[/]")
    if len(run.ranks) == 1:  # one rank's own part of a distributed run
        r = run.ranks[0]
        console.print(f"rank {r.rank} of {r.world_size} on {r.host}: this rank's own figures", highlight=False)
    elif run.ranks:
        hosts = sorted({r.host for r in run.ranks})
        console.print(
            f"{len(run.ranks)} ranks ({', '.join(str(r.rank) for r in run.ranks)}) on {', '.join(hosts)}: "
            "figures are means over the ranks; --rank R shows one",
            highlight=False,
        )
    if view == "work":
        console.print(work_table(run))
    elif view == "memory":
        console.print(memory_table(run))
        if run.totals.memory_note:  # where the figures were read (Neuron: the device's own counters)
            console.print(f"[dim]{escape(run.totals.memory_note)}[/]", highlight=False)
    elif view == "bound":
        console.print(bound_table(run))
        for text in measured_lines(run):
            console.print(escape(text), highlight=False)
    else:
        console.print(line_table(run, has_device))
        for text in engine_lines(run):
            console.print(text, highlight=False)
        for text in measured_lines(run):
            console.print(escape(text), highlight=False)
    if view == "time" and any(s.noisy for s in run.lines):
        console.print("[dim]  ~ noisy: the line's time varies widely between iterations (median/min/max in --json)[/]")
    console.print(op_table(run, has_device))
    if run.insights:
        console.print("[bold]Insights[/]")
        for i in run.insights:
            console.print(f"  line {i.line}: {escape(i.message)}", highlight=False)
            if i.evidence:
                console.print(f"    [dim]{escape(i.evidence)}[/]", highlight=False)
    tot = run.totals
    cells = totals_cells(run)
    console.print(
        f"Total per iteration: Self {label} {cells.self_device}"
        + (f", self CPU {cells.self_cpu}" if has_device else "")
        + f", {cells.op_calls} operator calls; wall median {cells.wall_median} "
        f"(min {cells.wall_min}, max {cells.wall_max})"
        + (f"; noise floor {cells.noise_floor} (a smaller change of the total is not told from noise)"
           if cells.noise_floor else ""),
        highlight=False,
    )
    if outliers_sentence(run):  # stalled calls, left out of every figure above
        console.print(f"[yellow]{escape(outliers_sentence(run))}[/]", highlight=False)
    if lines_wall_sentence(run):
        console.print(f"[dim]{escape(lines_wall_sentence(run))}[/]", highlight=False)
    if run.compile.graphs:
        console.print(
            f"First call {fmt_us(run.compile.first_call_us)}, of which ~{fmt_us(run.compile.compile_us)} "
            f"compiling {run.compile.graphs} graph(s) (not in the figures above)",
            highlight=False,
        )
    if tot.unattributed_device_us > 0:
        console.print(f"[dim]{fmt_us(tot.unattributed_device_us)} of device time had no launching op[/]")
    if outside_sentence(run):  # a notebook run's (`oplens analyze` of one)
        console.print(f"[dim]{escape(outside_sentence(run))}[/]", highlight=False)
    device_time(console, run)
    for text in compiled_lines(run):
        console.print(escape(text), highlight=False)
    for s in run.lines:  # executions fused over several lines, ops run on the CPU (Neuron)
        for text in execution_notes(s):
            console.print(escape(f"line {s.line}: {text}"), highlight=False)
    if view == "bound" and run.device is not None:
        d = run.device
        peaks = ", ".join(f"{k} {v / 1e9:,.1f} GFLOP/s" for k, v in sorted(d.dtype_peaks.items()))
        console.print(f"[dim]ceilings ({d.source}{', ' + d.measured_at if d.measured_at else ''}): {escape(peaks)}; "
                      f"memory {d.bytes_per_s / 1e9:,.1f} GB/s. Floor {fmt_us(tot.floor_us or 0.0)}, "
                      f"headroom {fmt_us(tot.headroom_us or 0.0)} per call[/]", highlight=False)  # fmt: skip
    artifacts(console, run)
    warnings(console, run)
    earlier = earlier_words(run)
    if earlier:
        console.print(f"[dim]After an edit: {escape(earlier)}[/]", highlight=False)
    console.print(f"[dim]run {run.run_id} → {escape(_rel(run.run_dir))}[/]", highlight=False)


def engine_lines(run: Run) -> list[str]:
    """Each line's compiled graph by engine (Neuron: from the vendor's processed profile), per call."""
    device = {g.line: g.device_us for g in run.engine_graphs}
    return [
        f"  line {s.line}: {'graphs' if ', ' in s.engine_graph else 'graph'} {s.engine_graph}, "
        f"{fmt_us(device.get(s.line, s.self_device_us))} on the device per call: "
        + ", ".join(f"{e.engine} {fmt_us(e.active_us)} ({e.pct:.0f}%)" for e in s.engines)
        for s in run.lines
        if s.engines
    ]


def measured_lines(run: Run) -> list[str]:
    """Each line's efficiency as the device measured it (Neuron: Explorer's per framework op MFU, MBU and HBM bytes)
    and its bound from them, then the function's; nothing where no line was measured (the bound is estimated)."""
    out = []
    for s in run.lines:
        m = s.measured
        if m is not None:
            bound = bound_from_words(s.bound, s.bound_from) if s.bound_from == "measured" else "no bound measured"
            out.append(f"  line {s.line}: measured {fmt_measured(m)}: {bound}")
    m = run.totals.measured
    if m is not None:
        bound = f": {bound_from_words(m.bound, 'measured')}" if m.bound else ""
        out.append(f"  function: measured {fmt_measured(m)}{bound}; other figures and bounds are estimates")
    return out


def compiled_lines(run: Run) -> list[str]:
    """Each compiled region's device time over the lines it fused (Neuron: from the device profile's
    instructions), or how to get that split."""
    out = []
    for s in run.lines:
        for region in s.compiled:
            split = fused_split(region)
            if split:
                out.append(f"line {s.line}: {region.name}, {fmt_us(region.self_device_us)} on the device: " + "; ".join(split))
    return out


def device_time(console: Console, run: Run) -> None:
    """Where Self <DEVICE> came from, each source tried with its figure (a device backend's runs only)."""
    dt = run.device_time
    if dt is None or dt.source == HOST_CPU:
        return
    console.print(f"Self {run.backend.device_label} from: {escape(dt.note)}", highlight=False)
    for line in device_time_sources(dt):
        console.print(f"[dim]  {escape(line)}[/]", highlight=False)


def warnings(console: Console, run: Run | OverviewRun) -> None:
    for w in run.backend.warnings:
        console.print(f"[yellow]warning:[/] {escape(w)}", highlight=False)


def artifacts(console: Console, run: Run) -> None:
    """The device profile a run left, as its backend describes it (Neuron: the profile directory,
    its system traces and NEFF/NTFF pairs, and how to open it)."""
    spec = registry.SPECS.get(run.backend.name)
    lines = spec.describe_artifacts(run) if spec is not None else []
    for i, line in enumerate(lines):
        console.print(f"[bold]{escape(line)}[/]" if i == 0 else escape(line), highlight=False)


def command_output(console: Console, lines: list[str]) -> None:
    """A backend command's answer: the headline in bold, the rest as written."""
    for i, line in enumerate(lines):
        console.print(f"[bold]{escape(line)}[/]" if i == 0 else escape(line), highlight=False, soft_wrap=True)


def line_table(run: Run, has_device: bool) -> Table:
    label = run.backend.device_label
    ranked = any(s.ranks is not None for s in run.lines)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    table.add_column("Line", justify="right", style="dim", no_wrap=True, min_width=4)
    table.add_column(f"Self {label}", justify="right", no_wrap=True, min_width=11)
    if has_device:
        table.add_column("Self CPU", justify="right", no_wrap=True, min_width=10)
    table.add_column(f"% {label}", justify="right", no_wrap=True, min_width=len(label) + 3)
    table.add_column("", no_wrap=True, min_width=BAR_WIDTH)
    walls = any(s.wall_us for s in run.lines)  # each line's host wall time (runs before it: none)
    if walls:
        table.add_column("Wall", justify="right", no_wrap=True, min_width=9)
        table.add_column("outside ops", justify="right", no_wrap=True, min_width=11)
    marks = walls and any(line_cells(s).marks for s in run.lines)  # OpLens's own line marks, where worth a column
    if marks:
        table.add_column("of it marks", justify="right", no_wrap=True, min_width=11)
    if ranked:  # a distributed run: the headline is the mean over ranks; here their spread
        table.add_column("Ranks min … max (slowest)", no_wrap=True, min_width=26)
    # capped, and cut with an ellipsis: a long source line must not squeeze the figures out
    table.add_column("Source", no_wrap=True, overflow="ellipsis", max_width=100 if not ranked else 72)
    by_line: dict[int, LineStat] = {s.line: s for s in run.lines}
    source = _source_lines(run)
    stragglers = {i.line: i.rank for i in run.insights if i.kind == "straggler"}
    for n in range(run.target.first_line, run.target.last_line + 1):
        code = source[n - 1] if n - 1 < len(source) else ""
        s = by_line.get(n)
        row: list[str | Text]
        if s is None:
            row = [str(n), "", *([""] if has_device else []), "", Text(""), *(["", ""] if walls else []),
                   *([""] if marks else []),
                   *([""] if ranked else []), Text(code)]  # fmt: skip
        else:
            c = line_cells(s)
            row = [
                str(n),
                c.self_device + (" ~" if s.noisy else ""),
                *([c.self_cpu] if has_device else []),
                c.share_device,
                _bar(s.pct_device),
                *([c.wall, c.outside_ops] if walls else []),
                *([c.marks] if marks else []),
                *([_rank_cell(s, stragglers.get(n))] if ranked else []),
                Text(code),
            ]
        table.add_row(*row)
    return table


def _source_table(run: Run, columns: list[str], cells: Any) -> Table:
    """The function's source with `columns` of figures per line (`cells(line_stat)`, None: blank)."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    table.add_column("Line", justify="right", style="dim", no_wrap=True, min_width=4)
    for c in columns:
        table.add_column(c, justify="right", no_wrap=True, min_width=max(len(c), 9))
    table.add_column("Source", no_wrap=True, overflow="ellipsis", max_width=64)
    by_line = {s.line: s for s in run.lines}
    source = _source_lines(run)
    for n in range(run.target.first_line, run.target.last_line + 1):
        code = source[n - 1] if n - 1 < len(source) else ""
        s = by_line.get(n)
        values = cells(s) if s is not None else [""] * len(columns)
        table.add_row(str(n), *values, Text(code))
    return table


def work_table(run: Run) -> Table:
    """`--view work`: each line's FLOPs, bytes moved and intensity in one call (analysis/work.py);
    `~` marks a compiled graph's work, an estimate counted from the graph's ops."""
    label = run.backend.device_label

    def cells(s: LineStat) -> list[str]:
        if s.flops is None:
            return [fmt_us(s.self_device_us), "", "", "", ""]
        unknown = ", ".join(o.removeprefix("aten::") for o in s.work_unknown)
        mark = " ~" if s.work_estimate else ""  # a compiled graph's, counted from its ops
        return [fmt_us(s.self_device_us), fmt_flops(s.flops) + mark, fmt_bytes(s.bytes or 0.0) + mark,
                f"{s.intensity:.2f}" if s.intensity is not None else "", unknown]  # fmt: skip

    return _source_table(run, [f"Self {label}", "FLOPs", "Bytes", "FLOP/B", "Not counted"], cells)


def memory_table(run: Run) -> Table:
    """`--view memory`: each line's allocations in one call (the device's allocator, else the host's),
    and its largest temporary (a block the call freed again) with the line that freed it."""

    def cells(s: LineStat) -> list[str]:
        net = s.alloc_bytes - s.freed_bytes
        shown = [s.alloc_bytes, s.freed_bytes, abs(net), s.peak_bytes]
        text = [fmt_bytes(v) if v else "" for v in shown]
        if net < 0:
            text[2] = "-" + text[2]
        t = s.temporary
        return [*text, f"{fmt_bytes(t.bytes)} → line {t.freed_line}" if t is not None else ""]

    kind = run.totals.memory or "host"
    return _source_table(run, [f"Alloc ({kind})", "Freed", "Net", "Peak", "Temporary (freed on)"], cells)


def bound_table(run: Run) -> Table:
    """`--view bound`: each line against the device's ceilings: its bound, how close to the
    roofline, the time there and what is left (analysis/roofline.py)."""
    label = run.backend.device_label

    def cells(s: LineStat) -> list[str]:
        if not s.bound:
            return [fmt_us(s.self_device_us), "", "", "", "", ""]
        # the bound with its % of the roofline, or the ceiling it beats (never over 100 %); `measured memory` where
        # the device's MFU/MBU decided it (the roofline % is still the estimate's)
        bound = bound_cell(s)
        floor = fmt_us(s.floor_us) if s.floor_us is not None else ""
        headroom = fmt_us(s.headroom_us) if s.headroom_us is not None else ""
        intensity = f"{s.intensity:.2f}" if s.intensity is not None else ""
        achieved = (f"{fmt_flops(s.flop_per_s)}/s · {s.bytes_per_s / 1e9:,.2f} GB/s"
                    if s.flop_per_s is not None and s.bytes_per_s is not None else "")  # fmt: skip
        return [fmt_us(s.self_device_us), bound, floor, headroom, intensity, achieved]

    measured = any(s.measured is not None for s in run.lines)

    def with_measured(s: LineStat) -> list[str]:
        m = s.measured  # the column's cell is short (the sentence under the table has every figure)
        figures = [f"{v:.1f}" if v is not None else "–" for v in ((m.mfu_pct, m.mbu_pct) if m is not None else ())]
        return [*cells(s), " · ".join(figures)]

    columns = [f"Self {label}", "Bound · roofline", "Floor", "Headroom", "FLOP/B", "Achieved"]
    table = (_source_table(run, [*columns, "MFU · MBU %"], with_measured) if measured
             else _source_table(run, columns, cells))  # fmt: skip
    # a line above a ceiling has no roofline %: the caption says why
    above = sorted({(s.bound, s.above_ceiling, s.dtype) for s in run.lines if s.above_ceiling})
    notes = [f"{fmt_bound_cell(b, None, a)} — {fmt_above(a, dtype)}" for b, a, dtype in above]
    if measured:
        notes.append("measured: the bound from the device's own MFU and MBU (Neuron Explorer, MFU · MBU %; – not "
                     "measured); the others, and every roofline %, floor and headroom, are estimates from the work "
                     "counted and the ceilings")  # fmt: skip
    if notes:
        table.caption = "; ".join(notes)
        table.caption_justify = "left"
    return table


def _rank_cell(s: LineStat, straggler: int | None) -> Text:
    r = s.ranks
    if r is None or not r.per_rank:
        return Text("")
    text = Text(f"{fmt_us(r.min)} … {fmt_us(r.max)} ({r.slowest})")
    if straggler is not None:
        text.stylize("bold red")
    return text


def op_table(run: Run, has_device: bool) -> Table:
    label = run.backend.device_label
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, title_justify="left")
    table.add_column("Name", no_wrap=True, overflow="ellipsis", max_width=60)
    table.add_column("Calls", justify="right")
    table.add_column("Self CPU", justify="right")
    if has_device:
        table.add_column(f"Self {label}", justify="right")
    table.add_column(f"% {label}", justify="right")
    for o in run.ops[:OP_ROWS]:
        row = op_row(o)
        table.add_row(
            escape(o.name) + (f" [cyan]{o.category}[/]" if o.category else ""),
            row.calls,
            row.self_cpu,
            *([row.self_device] if has_device else []),
            row.share,
        )
    if len(run.ops) > OP_ROWS:
        table.add_row(f"[dim]… {len(run.ops) - OP_ROWS} more (see --json)[/]", "", "", *([""] if has_device else []), "")
    return table


def compare_table(console: Console, page: ComparePage) -> None:
    """The comparison page (`views.compare.ComparePage`) as a table, the first variant the baseline."""
    label = page.label
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    table.add_column("Variant")
    table.add_column(f"{label} time", justify="right")
    if page.with_cpu:
        table.add_column("Self CPU", justify="right")
    table.add_column("Operator calls", justify="right")
    table.add_column("Wall (median)", justify="right")
    table.add_column(f"Speed-up vs {page.rows[0].variant}" if page.rows else "Speed-up", justify="right")
    table.add_column("95 % interval", justify="right")
    table.add_column("Verdict")
    for row in page.rows:
        style = VERDICT_STYLE.get(row.verdict, "")
        table.add_row(
            escape(row.variant),
            row.self_device,
            *([row.self_cpu] if page.with_cpu else []),
            row.op_calls,
            row.wall,
            row.speedup,
            row.interval,
            f"[{style}]{row.verdict}[/]" if style else row.verdict,
        )
    console.print(f"[bold]Comparison[/] (per iteration, {label})")
    console.print(table)
    for row in page.rows:
        if row.compile:
            console.print(f"[dim]{escape(row.variant)}: {escape(row.compile)}[/]")
    if page.summary:
        console.print(escape(page.summary))
    if page.method:
        console.print(f"[dim]{escape(page.method)}[/]")
    for f in page.failed:
        console.print(f"[red]not compared[/] {escape(f.variant)}: {escape(f.message)}")


VERDICT_STYLE = {"slower": "red", "faster": "green", "new": "cyan", "removed": "dim", "same": "", "baseline": "dim"}


def diff(console: Console, d: FunctionDiff) -> None:
    """One function before and after an edit: each line's change and its verdict."""
    by_wall = d.by == WALL  # the figures and verdicts are of each line's wall time: no separate wall columns
    label = "Wall" if by_wall else d.after.backend.device_label
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    walls = not by_wall and any(c.wall_before_us or c.wall_after_us for c in d.lines)  # runs with each line's wall time
    for name, justify in (("Before", "right"), ("After", "right"), (f"{label} before", "right"),
                          (f"{label} after", "right"), ("Change", "right"), ("Verdict", "left"),
                          *((("Wall before", "right"), ("Wall after", "right")) if walls else ()), ("Source", "left")):
        table.add_column(name, justify=justify, no_wrap=name != "Source")
    for c in d.lines:
        style = VERDICT_STYLE.get(c.verdict, "")
        table.add_row(
            str(c.before_line or ""),
            str(c.after_line or ""),
            fmt_us(c.before_us) if c.before_line else "",
            fmt_us(c.after_us) if c.after_line else "",
            change_text(c.ratio) if c.verdict in ("slower", "faster", "same") else "",
            Text(c.verdict, style=style),
            *((fmt_us(c.wall_before_us) if c.wall_before_us else "", fmt_us(c.wall_after_us) if c.wall_after_us else "")
              if walls else ()),
            escape(c.text),
        )
    t = d.totals
    console.print(
        f"[bold]{escape(d.after.target.qualname)}[/]: run {d.before.run_id} → {d.after.run_id} "
        f"({'each line’s wall time per call' if by_wall else f'per iteration, {label}'})",
        highlight=False,
    )
    console.print(table)
    console.print(
        f"Total: {fmt_us(t.before_us)} → {fmt_us(t.after_us)}"
        + (f" ({change_text(t.ratio)})" if t.ratio is not None else "")
        + f": [{VERDICT_STYLE.get(t.verdict, '') or 'bold'}]{t.verdict}[/]"
        + (f" (p = {t.p_value:.2g})" if t.p_value is not None else "")
        + (f"; median call ×{t.median_ratio:.2f}, 95 % interval ×{t.ratio_interval[0]:.2f}–×{t.ratio_interval[1]:.2f}"
           if t.median_ratio > 0 else ""),
        highlight=False,
    )
    console.print(f"[dim]{escape(measured_words(d))}[/]")


def overview_diff(console: Console, d: OverviewDiff) -> None:
    """Two overviews: each function's self time per step before and after, and its verdict."""
    label = d.device_label
    console.print(f"[bold]overview[/]: run {d.before_run} → {d.after_run} (self {label} per step)", highlight=False)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for name, justify in (("function", "left"), ("where", "left"), ("before", "right"), ("after", "right"),
                          ("change", "right"), ("verdict", "left")):  # fmt: skip
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for c in d.functions[:OVERVIEW_ROWS]:
        table.add_row(escape(c.qualname), escape(f"{_rel(c.file)}:{c.def_line}"),
                      fmt_us(c.before_us) if c.before_us is not None else "",
                      fmt_us(c.after_us) if c.after_us is not None else "",
                      change_text(c.ratio) if c.ratio is not None else "",
                      Text(c.verdict, style=VERDICT_STYLE.get(c.verdict, "")))  # fmt: skip
    console.print(table)
    console.print(f"Total: {fmt_us(d.before_total_us)} → {fmt_us(d.after_total_us)}"
                  + (f" ({change_text(d.total_ratio)})" if d.total_ratio is not None else ""), highlight=False)  # fmt: skip


def change_text(ratio: float | None) -> str:
    """`2.1×` slower, `-40 %` faster, as a user reads a change."""
    if ratio is None:
        return "new"
    if ratio >= 1.5:
        return f"{ratio:.1f}×"
    return f"{(ratio - 1) * 100:+.0f} %"


OVERVIEW_ROWS = 15  # functions and modules listed; result.json has them all


def overview(console: Console, run: OverviewRun) -> None:
    """A program overview: its hot functions (with `file:line` to go to), files and modules, per step."""
    o = run.overview
    label = o.device_label
    c = run.capture
    where = f"{c.program}" if c else ""
    per = "window" if o.per == "window" else "step"
    what = (f"a {o.window_s:g} s window from {o.delay_s:g} s after its start" if per == "window" else
            f"{o.steps} steps of {escape(run.target.qualname)} ({escape(_rel(run.target.file))}:{run.target.def_line})"
            + (f", after {c.calls_skipped} skipped" if c else ""))  # fmt: skip
    console.print(
        f"[bold]overview[/] of {escape(where)}  ·  {label} ({run.backend.name}, torch {run.backend.torch_version})  ·  "
        + what + (f"  ·  [bold yellow]partial[/]: {escape(c.reason)}" if c and c.partial else ""),
        highlight=False,
    )
    on_device = registry.facts_of(run.backend.name).on_device
    per_step = f"per {per}: {label} {fmt_us(o.total_device_us)}" + (f", CPU {fmt_us(o.total_cpu_us)}" if on_device else "")
    if o.step_wall_us and per == "step":
        wall = sorted(o.step_wall_us)
        per_step += f", wall {fmt_us(wall[len(wall) // 2])} (median)"
    console.print(per_step, highlight=False)
    ranked = any(f.ranks is not None for f in o.functions)  # a distributed run: figures are means over ranks
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for col, justify in [("function", "left"), ("where", "left"), (f"self {label}", "right"), ("share", "right"),
                         (f"total {label}", "right"), ("total %", "right"), (f"calls/{per}", "right")]:  # fmt: skip
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    if ranked:
        table.add_column("self: ranks median, min … max (slowest)", no_wrap=True)
    for f in o.functions[:OVERVIEW_ROWS]:
        r = f.ranks
        spread = [f"{fmt_us(r.median)}, {fmt_us(r.min)} … {fmt_us(r.max)} ({r.slowest})" if r and r.per_rank else ""]
        table.add_row(escape(f.qualname), escape(f"{_rel(f.file)}:{f.def_line}"), fmt_us(f.self_device_us),
                      Text.assemble(_bar(f.pct_self), f" {f.pct_self:4.1f} %"), fmt_us(f.total_device_us),
                      f"{f.pct_total:.1f} %", fmt_count(f.calls), *(spread if ranked else []))  # fmt: skip
    console.print(table)
    if ranked:
        console.print(f"[dim]{len(run.ranks)} ranks: each figure is the mean over the ranks; the last column the "
                      "spread of a function's self time across them[/]")  # fmt: skip
    if len(o.functions) > OVERVIEW_ROWS:
        console.print(f"[dim]… {len(o.functions) - OVERVIEW_ROWS} more functions in result.json[/]")
    if o.outside_user_device_us:
        share = 100.0 * o.outside_user_device_us / o.total_device_us if o.total_device_us else 0.0
        console.print(f"[dim]{fmt_us(o.outside_user_device_us)} ({share:.1f} %) ran under none of your functions[/]")
    if o.modules:
        mods = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        for col, justify in [("module", "left"), ("type", "left"), (f"total {label}", "right"), ("total %", "right"),
                             (f"self {label}", "right"), (f"calls/{per}", "right")]:  # fmt: skip
            mods.add_column(col, justify=justify)  # type: ignore[arg-type]
        for m in o.modules[:OVERVIEW_ROWS]:
            mods.add_row(escape(m.path), escape(m.type), fmt_us(m.total_device_us), f"{m.pct_total:.1f} %",
                         fmt_us(m.self_device_us), fmt_count(m.calls))  # fmt: skip
        console.print(mods)
    if o.functions:
        top = o.functions[0]
        console.print(
            f"next: oplens run --target {escape(_rel(top.file))}::{escape(top.qualname)} -- … "
            "(its lines, in this program)",
            highlight=False,
        )
    if o.note:
        console.print(f"[dim]{escape(o.note)}[/]")
    warnings(console, run)


def _runs_what(run: Run) -> str:
    c = run.capture
    if c is None:
        return iterations_phrase(run)
    what = f"{c.calls_profiled} calls of {c.calls_seen} in {c.program}, after {c.calls_skipped} skipped"
    return what + (f"  ·  [bold yellow]partial[/]: {escape(c.reason)}" if c.partial else "")


def error(console: Console, e: OpLensError) -> None:
    console.print(f"[bold red]oplens: error:[/] {escape(e.message)}", highlight=False)
    if e.detail:
        console.print(escape(e.detail.rstrip()), highlight=False)



def _rel(path: str) -> str:
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path
