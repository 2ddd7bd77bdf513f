"""What an editor shows of a run on its function's text, every word written here (`lsp/views.py` sends it as LSP
lenses, inlay hints and hovers, so any LSP client gets it as it is): the lens's totals and the function's verdict
against the previous run, each line's hint and its tooltip, each line's hover (its time, spread, ranks, bound,
work, memory, ops, compiled regions, insights). The figures and the phrases the results page says too are
`views/lines.py`'s and `views/run.py`'s.

A run merged from several ranks (`oplens run --nproc-per-node N`, `oplens merge`) has headline figures that are
means over its ranks; its lines' hints say the median across ranks and the spread (`2.20 ms · 7.9 % · ranks
1.75–2.22 ms`, on a straggler's line `9.01 ms · 57.9 % · 9.0–27.0 ms · ⚠ rank 1`), their hovers a row per rank
(a bar, the time, the slowest and the straggler marked, the time in collectives)."""

from __future__ import annotations

from oplens.analysis.attribution import own_outside_us
from oplens.engine.diff import FunctionDiff, LineChange
from oplens.records.execution_words import execution_notes
from oplens.records.format import (
    bound_from_words,
    fmt_above,
    fmt_bytes,
    fmt_change,
    fmt_flops,
    fmt_measured,
    fmt_roofline_pct,
    fmt_us,
    fmt_us_range,
    fmt_us_span,
    outliers_sentence,
    text_bar,
    verdict_phrase,
)
from oplens.records.overview import AnyRun
from oplens.records.run import LineStat, OpStat, Run
from oplens.records.spread import RankSpread
from oplens.views.lines import (
    host_device_phrase,
    line_cells,
    memory_sentence,
    outside_story,
    spread_phrase,
    time_phrase,
    totals_cells,
    wait_phrase,
    wall_phrase,
)
from oplens.views.ranks import rank_numbers, stragglers
from oplens.views.roofline import bound_phrase
from oplens.views.run import op_row

HOVER_OPS = 12  # the ops a line's hover lists


# ---- the lens ---------------------------------------------------------------------------------


def totals_title(run: AnyRun) -> str:
    """`CPU 19.57 ms · 6 ops · 5 iters`: the run's totals per iteration (the host's CPU too on a device), and how
    many iterations (or captured calls) they are of."""
    cells = totals_cells(run)
    parts = [f"{cells.label} {cells.self_device}"]
    if cells.on_device:
        parts.append(f"CPU {cells.self_cpu}")
    c = run.capture
    counted = f"{run.config.iters} iters" if c is None else f"{c.calls_profiled} calls" + (" (partial)" if c.partial else "")
    parts += [f"{cells.op_calls} ops", counted]
    return " · ".join(parts)


def lens_title(run: Run, diff: FunctionDiff | None = None) -> str:
    """The totals, and the function's verdict against the previous run where there is a diff."""
    title = totals_title(run)
    return f"{title} · {verdict_phrase(diff.totals.verdict, diff.totals.ratio)}" if diff is not None else title


def stale_title(run: Run) -> str:
    """The lens of a run whose function was edited since it was profiled."""
    return f"stale: {totals_title(run)} (changed since profiled)"


# ---- a line's hint ----------------------------------------------------------------------------


def hint_label(stat: LineStat, change: LineChange | None = None, straggler: int | None = None,
               call_wall_us: float = 0.0) -> str:  # fmt: skip
    """`1,164.5 µs · 49.5 %`, and the line's change where the diff found one (`… · ▲ 2.1×`); a
    merged run's line: its median across ranks, its share and the spread (`rank_label`); a line whose time is
    outside its operators (`views.lines.outside_story`, against the call's wall time): `50.29 ms outside ops`."""
    cells = line_cells(stat)
    if outside_story(stat, call_wall_us):  # the line's time is outside its operators: that first, its operators' after
        own = f"{fmt_us(own_outside_us(stat))} outside ops" + (f" · {cells.self_device} in ops" if stat.op_calls else "")
    else:
        own = f"{cells.self_device} · {cells.share_device}"
    label = rank_label(stat, straggler) or own
    mark = fmt_change(change.verdict, change.ratio) if change is not None else ""
    return f"{label} · {mark}" if mark else label


def hint_tooltip(run: Run, stat: LineStat, change: LineChange | None = None, straggler: int | None = None) -> str:
    """What a line's hint is: `Self CPU per iteration over 5 iterations`, its change against the previous run and,
    for a merged run, its ranks (`rank_tooltip`)."""
    tooltip = f"Self {totals_cells(run).label} per iteration over {run.config.iters} iterations"
    wall = wall_phrase(stat)
    if wall:
        tooltip += f"; {wall}"
    if change is not None and change.verdict != "same":
        tooltip += f"; vs previous run: {change_sentence(change)}"
    ranks = rank_tooltip(stat, straggler)
    if ranks:
        tooltip += f"; {ranks}"
    return tooltip


def change_sentence(c: LineChange) -> str:
    """What the hover says of a line's change: before → after, the verdict and the test's p-value."""
    if c.verdict == "new":
        return f"new since the previous run: {fmt_us(c.after_us)}"
    mark = fmt_change(c.verdict, c.ratio)
    out = f"{fmt_us(c.before_us)} → {fmt_us(c.after_us)}"
    out += f", {mark} {c.verdict}" if mark else f", {c.verdict}"
    if c.p_value is not None:
        out += f" (p = {c.p_value:.2g})"
    if c.before_line is not None and c.before_line != c.after_line:
        out += f"; line {c.before_line} then"
    return out


# ---- a line's hover -----------------------------------------------------------------------------


def line_markdown(run: Run, stat: LineStat, change: LineChange | None = None) -> str:
    """The hover of a profiled line: its time and spread, ranks, stalled calls, change, bound, work and memory, its
    ops, its compiled regions, executions and helpers, its insights."""
    totals = totals_cells(run)
    label = totals.label
    cells = line_cells(stat)
    changed = [f"\n**vs previous run**: {change_sentence(change)}"] if change is not None and change.verdict in (
        "slower", "faster", "new") else []
    ranks = ranks_markdown(run, stat)
    out = [
        f"**OpLens** · {time_phrase(stat, label)}"
        + (f", self CPU {cells.self_cpu}" if totals.on_device else "")
        + f" · {spread_phrase(stat)}" + (" · **noisy**" if stat.noisy else ""),
        *(f"\n{phrase[:1].upper()}{phrase[1:]}" for phrase in (wall_phrase(stat), wait_phrase(stat, totals.on_device),
                                                                  host_device_phrase(stat, totals.on_device)) if phrase),
        *([f"\n{ranks}"] if ranks else []),  # after the headline: seen without scrolling the hover
        *([f"\n⚠ {outliers_sentence(run)}"] if outliers_sentence(run) else []),  # stalled calls: not in the figures
        *changed,
        *work_markdown(run, stat),
        "",
        f"| op | calls | Self {label} | Self CPU |",
        "|---|---:|---:|---:|",
    ]
    for op in stat.ops[:HOVER_OPS]:
        row = op_row(op)
        out.append(f"| `{op.name}` | {row.calls} | {row.self_device} | {row.self_cpu} |")
    if len(stat.ops) > HOVER_OPS:
        out.append(f"| … {len(stat.ops) - HOVER_OPS} more | | | |")
    for region in stat.compiled:
        fused = sorted({r.line for r in region.fused})
        if fused:
            out.append(f"\n{region.name} fuses lines {fused[0]}–{fused[-1]} of `{region.fused[0].function}`")
        if region.split:  # the device's own split of the region's time over those lines
            out += ["", f"| fused line | Self {label} | % |", "|---|---:|---:|"]
            out += [f"| {s.line}{f' `{s.function}`' if s.function else ''} | {fmt_us(s.self_device_us)} | {s.pct:.0f} % |"
                    for s in region.split]  # fmt: skip
        elif region.split_note:
            out.append(f"\n{region.split_note}")
    out += [f"\n{text}" for text in execution_notes(stat)]  # fused over several lines, run on the CPU (Neuron)
    if stat.inner:
        out.append("\nInside helpers: " + ", ".join(
            f"`{i.function}` line {i.line} {fmt_us(i.self_device_us)}" for i in stat.inner[:6]))
    for ins in run.insights:
        if ins.line == stat.line:
            out.append(f"\n💡 {ins.message}" + (f" — {ins.evidence}" if ins.evidence else ""))
    return "\n".join(out)


def bound_sentence(stat: LineStat) -> str:
    """The line against the device's ceilings: `memory-bound · 23 % of the roofline · floor 12.1 µs,
    40.2 µs to win` (the results page's words, `views.roofline.bound_phrase`, the bound in bold); a line above
    a ceiling says so instead of a % (`memory-bound · above the memory roofline: its data stays in cache ·
    floor 1.2 µs, 0.0 µs to win`); '' where the run had no ceilings."""
    if not stat.bound:
        return ""
    if stat.bound_from == "measured":  # the device's own MFU/MBU decided it (Neuron Explorer); the roofline's is an estimate
        parts = [f"**{bound_from_words(stat.bound, 'measured')}**"]
        if stat.roofline_pct is not None and not stat.above_ceiling:
            parts.append(f"estimated {fmt_roofline_pct(stat.roofline_pct)} of the roofline")
        elif stat.above_ceiling:
            parts.append(f"estimated: {fmt_above(stat.above_ceiling, stat.dtype)}")
        if stat.floor_us is not None:
            parts.append(f"estimated floor {fmt_us(stat.floor_us)}"
                         + (f", {fmt_us(stat.headroom_us)} to win" if stat.headroom_us is not None else ""))  # fmt: skip
        return " · ".join(parts)
    head, sep, rest = bound_phrase(stat).partition(" · ")
    if stat.bound != "unknown":
        head = f"**{head}**"
        if stat.measured is not None:  # measured figures, but too few for a bound of their own
            head += " (estimated)"
    return f"{head}{sep}{rest}"


def work_markdown(run: Run, stat: LineStat) -> list[str]:
    """The line's bound, work and memory in one call, where the run recorded them (older runs did not)."""
    out = []
    bound = bound_sentence(stat)
    if bound:
        out.append(f"\n{bound}")
    if stat.measured is not None:  # Neuron: Explorer's per framework op figures, weighted by the executions' time
        out.append(f"\nMeasured on the device: {fmt_measured(stat.measured)}")
    if stat.flops is not None:
        work = f"{fmt_flops(stat.flops)}, {fmt_bytes(stat.bytes or 0.0)} moved"
        if stat.intensity is not None:
            work += f", {stat.intensity:,.2f} FLOP/B"
        if stat.dtype:
            work += f" ({stat.dtype})"
        if stat.work_estimate:
            work += " (estimate: compiled graph)"
        out.append(f"\nWork in one call: {work}")
        if stat.work_unknown:
            out.append("\nNot counted (no rule): " + ", ".join(f"`{o}`" for o in stat.work_unknown[:8])
                       + (f" and {len(stat.work_unknown) - 8} more" if len(stat.work_unknown) > 8 else ""))  # fmt: skip
    if run.totals.memory and (stat.alloc_bytes or stat.freed_bytes or stat.peak_bytes):
        memory = memory_sentence(stat, run.totals.memory)
        out.append(f"\n{memory[:1].upper()}{memory[1:]}")
        t = stat.temporary
        if t is not None:
            freed = "when the function returned" if t.freed_line == run.target.def_line else f"on line {t.freed_line}"
            out.append(f"; its largest temporary {fmt_bytes(t.bytes)}, freed {freed}")
    if stat.engines:  # Neuron: the compiled graph's engines, from the processed profile
        shares = ", ".join(f"{e.engine} {fmt_us(e.active_us)} ({e.pct:.0f} %)" for e in stat.engines)
        out.append(f"\nEngines of {stat.engine_graph or 'its graph'} per call: {shares}")
    return out


# ---- a distributed run's lines: the median across ranks, the spread, a row per rank ---------


def _spread(stat: LineStat) -> RankSpread | None:
    """The line's figure per rank, where the run was merged from ranks (a rank's own run has none)."""
    return stat.ranks if stat.ranks is not None and stat.ranks.per_rank else None


def rank_label(stat: LineStat, straggler: int | None = None) -> str:
    """`4.89 ms · 18.8 % · ranks 4.75–9.17 ms`; on a straggler's line `9.01 ms · 57.9 % · 9.0–27.0 ms
    · ⚠ rank 1` (the mark names the ranks, and keeps the hint within the 43 characters VS Code
    shows of a line's hints by default); '' for a single process."""
    r = _spread(stat)
    if r is None:
        return ""
    span = fmt_us_span(r.min, r.max)
    tail = [f"ranks {span}"] if straggler is None else [span, f"⚠ rank {straggler}"]
    return " · ".join([fmt_us(r.median), line_cells(stat).share_device, *tail])


def rank_tooltip(stat: LineStat, straggler: int | None = None) -> str:
    """What a merged run's hint is: `the median across 3 ranks (mean 15.02 ms); rank 1 is the
    straggler` (or `rank 2 the slowest`); '' for a single process."""
    r = _spread(stat)
    if r is None:
        return ""
    head = f"the median across {len(r.per_rank)} ranks (mean {fmt_us(stat.self_device_us)})"
    if straggler is not None:
        return f"{head}; rank {straggler} is the straggler"
    return f"{head}; rank {r.slowest} the slowest" if r.slowest >= 0 and r.max > r.min else head


def collective_per_rank(ops: list[OpStat], count: int) -> list[float | None]:
    """Each rank's time in the line's collective ops (None where the line has none)."""
    collective = [o.ranks for o in ops if o.category == "collective" and o.ranks is not None]
    if not collective:
        return [None] * count
    return [sum(r.per_rank[i] if i < len(r.per_rank) else 0.0 for r in collective) for i in range(count)]


def ranks_markdown(run: Run, stat: LineStat) -> str:
    """The hover's ranks section of a merged run's line: the median and spread, a row per rank (bar
    against the slowest, time, its collective time, the slowest and the straggler marked), the
    line's time in collectives; '' for a single process."""
    r = _spread(stat)
    if r is None:
        return ""
    straggler = stragglers(run.insights).get(stat.line)
    numbers = rank_numbers(run.ranks, len(r.per_rank))
    top = max([0.0, *r.per_rank])
    slowest = r.slowest if r.slowest >= 0 or top not in r.per_rank else numbers[r.per_rank.index(top)]
    collective = collective_per_rank(stat.ops, len(r.per_rank))
    waits = any(c is not None and c > 0 for c in collective)
    names = [f"rank {n}" for n in numbers]
    times = [fmt_us(us) for us in r.per_rank]
    name_w, time_w = max(map(len, names)), max(map(len, times))
    rows = []
    for n, name, us, shown, c in zip(numbers, names, r.per_rank, times, collective, strict=True):
        marks = " ".join(m for m, on in (("◀ slowest", top > 0 and n == slowest and r.max > r.min),
                                         ("⚠ straggler", n == straggler)) if on)  # fmt: skip
        wait = f"  ({fmt_us(c)} in collectives)" if waits and c is not None else ""
        bar = text_bar(max(0.0, us) / top if top > 0 else 0.0)
        rows.append(f"{name.ljust(name_w)}  {bar}  {shown.rjust(time_w)}{wait}" + (f"  {marks}" if marks else ""))
    head = f"**Ranks** · median {fmt_us(r.median)} across {len(r.per_rank)} ranks, {fmt_us_range(r.min, r.max)}"
    if straggler is not None:
        head += f" · ⚠ rank {straggler} is the straggler"
    out = [head, "", "```text", *rows, "```"]
    if stat.collective_us > 0:
        out += ["", f"In collectives: {fmt_us(stat.collective_us)} per call (mean over ranks), "
                    f"of {fmt_us(stat.self_device_us)}"]  # fmt: skip
    return "\n".join(out)
