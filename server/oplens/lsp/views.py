"""Runs → LSP: code lenses, inlay hints, hovers, diagnostics and the `oplens/document`
notification for one document.

Pure functions of the document's current text and the runs of its functions. A run is shown
only while the function's text is what was profiled (same source hash); if the function only
moved (lines added above it), its lines shift with it. Otherwise its lens says `stale` and its
hints, hovers and diagnostics are hidden rather than pointing at the wrong lines.

A shown run that has a diff against the function's previous run (`Placed.diff`, attached by
`documents` from `diffs`) also says what changed: its lens the function's verdict, each changed
line's hint its mark (`▲ 2.1×`, `▼ 40 %`, `new`), the hover of a changed line before → after.

A run merged from several ranks (`oplens run --nproc-per-node N`, `oplens merge`) has headline
figures that are means over its ranks; its lines' hints say the median across ranks and the spread
(`2.20 ms · 7.9 % · ranks 1.75–2.22 ms`, on a straggler's line `9.01 ms · 57.9 % · 9.0–27.0 ms ·
⚠ rank 1`), their hovers a row per rank (a bar, the time, the slowest and the straggler marked, the
time in collectives). Every LSP client gets these words as they are.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from oplens.backends import registry
from oplens.engine.diff import FunctionDiff, LineChange
from oplens.engine.targets import FunctionDef, list_functions, source_sha256
from oplens.records.errors import OpLensError
from oplens.records.execution_words import execution_notes
from oplens.records.format import (
    bound_from_words,
    fmt_above,
    fmt_bytes,
    fmt_change,
    fmt_flops,
    fmt_measured,
    fmt_roofline_pct,
    fmt_share,
    fmt_us,
    fmt_us_range,
    fmt_us_span,
    outliers_sentence,
    text_bar,
    verdict_phrase,
)
from oplens.records.names import CELL_QUALNAME, PROFILE_COMMAND, SHOW_RUN_COMMAND
from oplens.records.run import LineStat, OpStat, RankInfo, Run
from oplens.records.spread import RankSpread
from oplens.views.diff import diff_page
from oplens.views.ranks import stragglers


@dataclass(frozen=True)
class Placed:
    """A run laid over the document: `shift` maps profiled line numbers to current ones."""

    run: Run
    fresh: bool
    shift: int = 0
    diff: FunctionDiff | None = None  # the run against the function's previous run, where there is one

    def line(self, profiled_line: int) -> int:
        return profiled_line + self.shift

    def change(self, profiled_line: int) -> LineChange | None:
        """What the diff says of the run's (after) line `profiled_line`."""
        if self.diff is None:
            return None
        return next((c for c in self.diff.lines if c.after_line == profiled_line), None)

    @property
    def state(self) -> str:
        """`fresh` (as profiled), `moved` (the same text on other lines) or `stale` (edited since)."""
        if not self.fresh:
            return "stale"
        return "moved" if self.shift else "fresh"


def parse_functions(source: str, file: str) -> tuple[list[FunctionDef], str | None]:
    """The functions of `source`, and why there are none while it does not parse ("line 3: invalid syntax")."""
    try:
        return list_functions(source, Path(file)), None
    except (OpLensError, ValueError, RecursionError):  # a syntax error while the user types: no lenses until it parses
        return [], parse_error(source)


def functions_in(source: str, file: str) -> list[FunctionDef]:
    """The functions of `source`; none while it does not parse."""
    return parse_functions(source, file)[0]


def parse_error(source: str) -> str:
    """Where and why `source` does not parse (on the error path only: the engine's message names the file)."""
    try:
        ast.parse(source)
    except SyntaxError as e:
        return f"line {e.lineno}: {e.msg}" if e.lineno else e.msg
    except (ValueError, RecursionError) as e:  # null bytes; nesting too deep
        return str(e) or type(e).__name__
    return "the file does not parse"


def place(runs: list[Run], source: str, functions: list[FunctionDef]) -> list[Placed]:
    """Each run over its function's current text, in source order."""
    by_name = {f.qualname: f for f in functions}  # a name defined twice: the last (what Python keeps)
    placed = []
    for run in runs:
        fn = by_name.get(run.target.qualname)
        if fn is None:
            continue  # the function is gone or renamed: nothing to draw on
        fresh = source_sha256(source, fn.first_line, fn.last_line) == run.target.source_sha256
        placed.append(Placed(run, fresh, fn.first_line - run.target.first_line if fresh else 0))
    return sorted(placed, key=lambda p: by_name[p.run.target.qualname].first_line)


def _range(line: int, col: int = 0) -> lsp.Range:
    pos = lsp.Position(line=max(line - 1, 0), character=col)
    return lsp.Range(start=pos, end=pos)


def totals_title(run: Run) -> str:
    label = run.backend.device_label
    t = run.totals
    parts = [f"{label} {fmt_us(t.self_device_us)}"]
    if registry.facts_of(run.backend.name).on_device:
        parts.append(f"CPU {fmt_us(t.self_cpu_us)}")
    c = run.capture
    counted = f"{run.config.iters} iters" if c is None else f"{c.calls_profiled} calls" + (" (partial)" if c.partial else "")
    parts += [f"{t.op_calls:g} ops", counted]
    return " · ".join(parts)


def lensed(functions: list[FunctionDef], placed: list[Placed], mode: str) -> list[FunctionDef]:
    """The functions that get a lens row under the `lenses` setting: `all` every one, `profiled` those with a
    run shown here (fresh or stale), `off` none. The extension's own lens (`▶ Profile in Program…`) follows
    the same rule through `oplens/document`'s `lens` flag."""
    if mode == "off":
        return []
    if mode == "profiled":
        runs = {p.run.target.qualname for p in placed}
        return [fn for fn in functions if fn.qualname in runs]
    return list(functions)


def code_lenses(uri: str, source: str, functions: list[FunctionDef], placed: list[Placed],
                mode: str = "all") -> list[lsp.CodeLens]:  # fmt: skip
    lenses = []
    by_name = {p.run.target.qualname: p for p in placed}
    for fn in lensed(functions, placed, mode):
        where = _range(fn.first_line)
        if fn.qualname != CELL_QUALNAME:  # a `%%oplens` cell profiles itself when it runs
            profile = lsp.Command(title="▶ Profile", command=PROFILE_COMMAND, arguments=[{"uri": uri, "qualname": fn.qualname}])
            lenses.append(lsp.CodeLens(range=where, command=profile))
        p = by_name.get(fn.qualname)
        if p is not None:
            title = lens_title(p) if p.fresh else f"stale: {totals_title(p.run)} (changed since profiled)"
            show = lsp.Command(title=title, command=SHOW_RUN_COMMAND, arguments=[{"run_id": p.run.run_id}])
            lenses.append(lsp.CodeLens(range=where, command=show))
    return lenses


def lens_title(p: Placed) -> str:
    """The totals, and the function's verdict against the previous run where there is a diff."""
    title = totals_title(p.run)
    return f"{title} · {verdict_phrase(p.diff.totals.verdict, p.diff.totals.ratio)}" if p.diff is not None else title




def hint_label(stat: LineStat, change: LineChange | None = None, straggler: int | None = None) -> str:
    """`1,164.5 µs · 49.5 %`, and the line's change where the diff found one (`… · ▲ 2.1×`); a
    merged run's line: its median across ranks, its share and the spread (`rank_label`)."""
    label = rank_label(stat, straggler) or f"{fmt_us(stat.self_device_us)} · {fmt_share(stat.pct_device)}"
    mark = fmt_change(change.verdict, change.ratio) if change is not None else ""
    return f"{label} · {mark}" if mark else label


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


def inlay_hints(source: str, placed: list[Placed], threshold_pct: float, first: int, last: int) -> list[lsp.InlayHint]:
    """Hints at the end of each line (1-based `first`..`last`) that spent ≥ threshold of the device time."""
    lines = source.splitlines()
    hints = []
    for p in placed:
        if not p.fresh:
            continue
        slow = stragglers(p.run.insights)
        for stat in p.run.lines:
            n = p.line(stat.line)
            if not first <= n <= last or n > len(lines) or stat.pct_device < threshold_pct:
                continue
            change = p.change(stat.line)
            tooltip = f"Self {p.run.backend.device_label} per iteration over {p.run.config.iters} iterations"
            if change is not None and change.verdict != "same":
                tooltip += f"; vs previous run: {change_sentence(change)}"
            ranks = rank_tooltip(stat, slow.get(stat.line))
            if ranks:
                tooltip += f"; {ranks}"
            hints.append(
                lsp.InlayHint(
                    position=lsp.Position(line=n - 1, character=len(lines[n - 1])),
                    label=hint_label(stat, change, slow.get(stat.line)),
                    padding_left=True,
                    tooltip=tooltip,
                )
            )
    return hints


def hover(placed: list[Placed], line: int) -> lsp.Hover | None:
    """The op breakdown of the 1-based `line`, its drill-down and its insights."""
    for p in placed:
        if not p.fresh:
            continue
        for stat in p.run.lines:
            if p.line(stat.line) == line:
                value = line_markdown(p.run, stat, p.change(stat.line))
                return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=value))
    return None


def line_markdown(run: Run, stat: LineStat, change: LineChange | None = None) -> str:
    label = run.backend.device_label
    changed = [f"\n**vs previous run**: {change_sentence(change)}"] if change is not None and change.verdict in (
        "slower", "faster", "new") else []
    ranks = ranks_markdown(run, stat)
    out = [
        f"**OpLens** · line {stat.line}: Self {label} {fmt_us(stat.self_device_us)} ({fmt_share(stat.pct_device)})"
        + (f", self CPU {fmt_us(stat.self_cpu_us)}" if registry.facts_of(run.backend.name).on_device else "")
        + f" · median {fmt_us(stat.device_spread.median)}, min {fmt_us(stat.device_spread.min)}, "
        f"max {fmt_us(stat.device_spread.max)}" + (" · **noisy**" if stat.noisy else ""),
        *([f"\n{ranks}"] if ranks else []),  # after the headline: seen without scrolling the hover
        *([f"\n⚠ {outliers_sentence(run)}"] if outliers_sentence(run) else []),  # stalled calls: not in the figures
        *changed,
        *work_markdown(run, stat),
        "",
        f"| op | calls | Self {label} | Self CPU |",
        "|---|---:|---:|---:|",
    ]
    for op in stat.ops[:12]:
        out.append(f"| `{op.name}` | {op.calls:g} | {fmt_us(op.self_device_us)} | {fmt_us(op.self_cpu_us)} |")
    if len(stat.ops) > 12:
        out.append(f"| … {len(stat.ops) - 12} more | | | |")
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
    40.2 µs to win`; a line above a ceiling says so instead of a % (`memory-bound · above the memory
    roofline: its data stays in cache · floor 1.2 µs, 0.0 µs to win`); '' where the run had no ceilings."""
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
    parts = ["bound unknown" if stat.bound == "unknown" else f"**{stat.bound}-bound**"]
    if stat.measured is not None and stat.bound != "unknown":  # measured figures, but too few for a bound of their own
        parts[0] += " (estimated)"
    if stat.above_ceiling:
        parts.append(fmt_above(stat.above_ceiling, stat.dtype))  # no % of a roofline it beats
    elif stat.roofline_pct is not None:
        parts.append(f"{fmt_roofline_pct(stat.roofline_pct)} of the roofline")
    if stat.floor_us is not None:
        parts.append(f"floor {fmt_us(stat.floor_us)}"
                     + (f", {fmt_us(stat.headroom_us)} to win" if stat.headroom_us is not None else ""))  # fmt: skip
    return " · ".join(parts)


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
        out.append(f"\n{run.totals.memory.capitalize()} memory in one call: allocated {fmt_bytes(stat.alloc_bytes)}, "
                   f"freed {fmt_bytes(stat.freed_bytes)}, peak {fmt_bytes(stat.peak_bytes)}")  # fmt: skip
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
    return " · ".join([fmt_us(r.median), fmt_share(stat.pct_device), *tail])


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


def rank_numbers(ranks: list[RankInfo], count: int) -> list[int]:
    """The rank of each of `count` per-rank figures: the run's ranks in order, those with a part where
    a failed rank (no part, no figure) is listed too, else 0..count-1."""
    if len(ranks) == count:
        return [r.rank for r in ranks]
    with_parts = [r.rank for r in ranks if not r.failed]
    return with_parts if len(with_parts) == count else list(range(count))


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


def diagnostics(placed: list[Placed], error: OpLensError | None, file: str) -> list[lsp.Diagnostic]:
    found = []
    for p in placed:
        if not p.fresh:
            continue
        for ins in p.run.insights:
            found.append(
                lsp.Diagnostic(
                    range=_range(p.line(ins.line)),
                    message=f"{ins.message}" + (f" ({ins.evidence})" if ins.evidence else ""),
                    severity=lsp.DiagnosticSeverity.Hint if ins.kind == "noisy" else lsp.DiagnosticSeverity.Information,
                    source="OpLens",
                    code=ins.kind,
                )
            )
    if error is not None and error.location.get("file") == file:
        found.append(
            lsp.Diagnostic(
                range=_range(int(error.location.get("line", 1))),
                message=f"{error.message}\n{error.detail}".strip(),
                severity=lsp.DiagnosticSeverity.Information,
                source="OpLens",
                code=error.kind,
            )
        )
    return found


# ---- the oplens/document notification (and the oplens.functions answer) --------------------


def document(uri: str, version: int | None, parse_error: str | None, functions: list[FunctionDef],
             placed: list[Placed], lens_mode: str = "all") -> dict[str, Any]:
    """`{uri, version, parseError, functions, runs}`: a file's functions in source order (lines
    1-based), each with `lens`: whether it has a lens row (the `lenses` setting), and where the latest
    shown run of each sits in the current text."""
    with_lens = {id(fn) for fn in lensed(functions, placed, lens_mode)}
    return {
        "uri": uri,
        "version": version,
        "parseError": parse_error,
        "functions": [function_entry(fn, id(fn) in with_lens) for fn in functions],
        "runs": [run_entry(p) for p in placed],
    }


def function_entry(fn: FunctionDef, lens: bool = True) -> dict[str, Any]:
    return {
        "qualname": fn.qualname,
        "name": fn.qualname.rsplit(".", 1)[-1],
        "firstLine": fn.first_line,
        "defLine": fn.def_line,
        "lastLine": fn.last_line,
        "signature": fn.signature,
        "params": fn.params,
        "requiredParams": fn.required_params,
        "inClass": fn.in_class,
        "lens": lens,
    }


def result_params(uri: str, run: Run, reveal: bool = False) -> dict[str, Any]:
    """`oplens/result`: `{uri, run}`, the run shown on `uri`; `reveal`: a run the client did not ask for (a
    notebook kernel's) that it should show as if it had (its results panel)."""
    params: dict[str, Any] = {"uri": uri, "run": run.to_dict()}
    if reveal:
        params["reveal"] = True
    return params


def run_entry(p: Placed) -> dict[str, Any]:
    """`shift`: add it to the run's line numbers to get the current ones (0 unless moved)."""
    return {"runId": p.run.run_id, "qualname": p.run.target.qualname, "state": p.state, "shift": p.shift}


# ---- the oplens.diff answer -------------------------------------------------------------------


def diff_answer(uri: str, after: Run, diff: FunctionDiff | None, earlier: list[dict[str, Any]]) -> dict[str, Any]:
    """`{before, after, lines, totals, method}` of `diff` (with no diff: `before` and `totals` null,
    `lines` empty), `earlier` (the function's runs before `after`, newest first), `uri`, and `page`, the
    results page's "vs previous run" view of it (`views.diff.DiffPage`: every word written)."""
    found = diff.to_dict() if diff is not None else {"before": None, "after": after.to_dict(), "lines": [],
                                                     "totals": None, "method": {}}
    return {**found, "earlier": earlier, "uri": uri, "page": diff_page(after, diff, earlier).to_dict()}
