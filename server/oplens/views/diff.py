"""The results page's "vs previous run" view: one function's run against an earlier run of it, line
by line (before line → line now, both times, the change, the verdict, the source), the function's
verdict in the words of the totals lens, the picker of earlier runs, and what besides the edit may
explain a difference. The verdicts themselves are `engine.diff`'s."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from oplens.engine.compare import MIN_EFFECT as LEAST
from oplens.engine.diff import DEVICE, WALL, FunctionDiff, LineChange
from oplens.records.format import device_label, fmt_change, fmt_p, fmt_ratio, fmt_us, verdict_phrase, when
from oplens.records.run import Run


@dataclass(frozen=True)
class DiffRow:
    """One line of the "vs previous run" table, ready to draw."""

    before_line: int | None  # the line as the earlier run profiled it; null for a new line
    after_line: int | None  # the line as the shown run profiled it (a click goes there); null for a removed line
    # times per iteration, written; '' where the line is not in that run
    before: str
    after: str
    change: str  # `▲ 2.1×`, `▼ 40 %`, `new`; for a `same` line its small change (`+3 %`), muted
    verdict: str  # slower, faster, same, new or removed (`engine.diff.VERDICTS`)
    text: str
    title: str  # the tooltip: before → after, the ratio, the test's p-value


@dataclass(frozen=True)
class DiffTotals:
    """The function's totals before and after, written, and its verdict in the words of the lens."""

    before: str
    after: str
    change: str
    verdict: str
    phrase: str
    p_value: str


@dataclass(frozen=True)
class EarlierChoice:
    """An earlier run of the function as the picker lists it."""

    run_id: str
    label: str


@dataclass(frozen=True)
class DiffBy:
    """A measure the diff can be of, as the page's picker lists it."""

    value: str  # `device`, `wall`
    label: str  # `Self CPU`, `Wall time`


@dataclass(frozen=True)
class DiffView:
    """The shown run against an earlier run of its function."""

    after_run_id: str
    before_run_id: str
    qualname: str
    label: str  # `CPU`, `NEURON`, ...: the time columns' label
    against: str  # `previous run`, or `the run of 2026-12-01 10:30:00` for another pick
    rows: list[DiffRow]
    totals: DiffTotals
    # when and with what each run ran, for the header
    runs_before: str
    runs_after: str
    earlier: list[EarlierChoice]  # the picker: every earlier run of the function, newest first
    notes: list[str]  # what may explain a difference besides the edit (other arguments, the same text)
    method: str  # the rule behind the verdicts, in words
    measured: str  # how the two runs were measured (side by side, or across two processes and why), in words
    by: str = "device"  # what the figures and verdicts are of: `device` (self device time) or `wall` (engine/diff)
    by_choices: list[DiffBy] = dataclasses.field(default_factory=list)  # the measures to pick from ([]: one)
    lines_title: str = ""  # `Lines · vs previous run · Self CPU per iteration` (`· Wall time per call`)


@dataclass(frozen=True)
class DiffPage:
    """The `view` of an `oplens.diff` answer: the view, or (the function's first run) why there is none."""

    view: DiffView | None = None
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def diff_page(after: Run, diff: FunctionDiff | None, earlier: Sequence[Mapping[str, Any]]) -> DiffPage:
    """The page of `diff` (None: `after` is the function's first run), with `earlier` the function's runs
    before `after`, newest first (`{run_id, created, self_device_us, device_label, args}` each)."""
    if diff is None:
        return DiffPage(message=f"{after.target.qualname} has no earlier run to compare with. Edit it and profile "
                                "it again: this view then shows what changed, line by line.")  # fmt: skip
    before, totals = diff.before, diff.totals
    own = device_label(after.backend.device_label)
    label = "Wall" if diff.by == WALL else own
    walls = all(any(s.wall_samples_us for s in r.lines) for r in (before, after))  # both runs recorded wall times
    first = earlier[0]["run_id"] if earlier else None
    against = "previous run" if first == before.run_id else f"the run of {when(before.created)}"
    change = fmt_change(totals.verdict, totals.ratio) or (fmt_ratio(totals.ratio) if totals.ratio is not None else "")
    view = DiffView(
        after_run_id=after.run_id,
        before_run_id=before.run_id,
        qualname=after.target.qualname,
        label=label,
        against=against,
        rows=[_row(c) for c in diff.lines],
        totals=DiffTotals(before=fmt_us(totals.before_us), after=fmt_us(totals.after_us), change=change,
                          verdict=totals.verdict, phrase=verdict_phrase(totals.verdict, totals.ratio, against),
                          p_value=fmt_p(totals.p_value) if totals.p_value is not None else ""),
        runs_before=_run_label(before),
        runs_after=_run_label(after),
        earlier=[_earlier(e, i == 0) for i, e in enumerate(earlier)],
        notes=_notes(before, after),
        method=_method(diff.method, after.config.iters, before.config.iters),
        measured=measured_words(diff),
        by=diff.by,
        by_choices=[DiffBy(DEVICE, f"Self {own}"), DiffBy(WALL, "Wall time")] if walls else [],
        lines_title=f"Lines · vs {against} · " + ("Wall time per call" if diff.by == WALL else f"Self {own} per iteration"),
    )
    return DiffPage(view=view)


def _row(c: LineChange) -> DiffRow:
    before = "" if c.verdict == "new" else fmt_us(c.before_us)
    after = "" if c.verdict == "removed" else fmt_us(c.after_us)
    change = fmt_change(c.verdict, c.ratio) or (fmt_ratio(c.ratio) if c.verdict == "same" and c.ratio is not None else "")
    where = f"line {_or_dash(c.before_line)} → {_or_dash(c.after_line)}"
    figures = ", ".join(part for part in (
        f"{before} → {after}" if before and after else before or after,
        f"×{c.ratio:.2f}" if c.ratio is not None and c.verdict != "removed" else "",
        f"p = {fmt_p(c.p_value)}" if c.p_value is not None else "",
        f"wall {fmt_us(c.wall_before_us)} → {fmt_us(c.wall_after_us)} per call" if c.wall_before_us and c.wall_after_us else "",
    ) if part)  # fmt: skip
    return DiffRow(before_line=c.before_line, after_line=c.after_line, before=before, after=after, change=change,
                   verdict=c.verdict, text=c.text, title=f"{where}: {figures} ({c.verdict})")


def _or_dash(line: int | None) -> str:
    return "–" if line is None else str(line)


def _earlier(e: Mapping[str, Any], previous: bool) -> EarlierChoice:
    figure = f"{device_label(str(e.get('device_label', '')))} {fmt_us(float(e.get('self_device_us', 0)))}"
    parts = [when(str(e.get("created", ""))) or str(e["run_id"]), figure, str(e.get("args", ""))]
    label = " · ".join(p for p in parts if p)
    return EarlierChoice(run_id=str(e["run_id"]), label=f"{label} (previous run)" if previous else label)


def _run_label(run: Run) -> str:
    args = f"args {run.config.args}" if run.config.args else ""
    parts = [when(run.created), args, f"{run.config.iters} iterations", run.run_id]
    return " · ".join(p for p in parts if p)


def _notes(before: Run, after: Run) -> list[str]:
    found = []
    if before.config.args != after.config.args:
        found.append(f"The runs had different arguments ({before.config.args or 'none'}, then {after.config.args or 'none'}): "
                     "the inputs, not only the edit, may explain a change.")  # fmt: skip
    if before.target.source and before.target.source == after.target.source:
        found.append("The function’s text is the same in both runs: a difference comes from the machine or the inputs, "
                     "not from an edit.")  # fmt: skip
    return found


def measured_words(diff: FunctionDiff) -> str:
    """How the two runs were measured, in words: side by side in one worker, or across two processes (and, where
    the earlier version could not be measured beside an edit, why)."""
    before, after = diff.before, diff.after
    if diff.method.get("measured", "separate") != "separate":
        beside = before.config.side_by_side
        if beside is not None and beside.earlier_of:
            return (f"Measured side by side in one worker: the earlier version (the module as run {beside.earlier_of} "
                    "imported it) and the edit called in turn, round by round, so both met the machine's same "
                    "moments.")  # fmt: skip
        return "Measured side by side in one worker (one compare): the two called in turn, round by round."
    earlier = after.config.earlier
    why = earlier.why_not if earlier is not None and earlier.run_id == before.run_id else ""
    return ("Measured across two processes at two moments: the machine's state can decide a small difference."
            + (f" The earlier version was not measured beside the edit: {why}." if why else ""))  # fmt: skip


def _method(m: Mapping[str, Any], after_iters: int, before_iters: int) -> str:
    def num(key: str, fallback: float) -> float:
        value = m.get(key)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else fallback

    alpha = num("alpha", 0.01)
    min_effect = round(num("min_effect", 0.1) * 100)
    drift = num("drift", 1)
    beyond = drift ** num("drift_margin", 1)
    share = num("effect_share_pct", 2)
    tested = f" ({m['correction']}-corrected for {int(num('lines_tested', 0))} lines)" if m.get("correction") else ""
    if m.get("measured", "separate") != "separate":
        return (f"A line is slower or faster where the Wilcoxon signed-rank test over its {after_iters} paired rounds "
                f"gives p < {alpha:g}{tested} and its median call changed by more than {min_effect} % and {share:g} % "
                f"of the function's time. The total's verdict needs its median call's 95 % interval beyond {LEAST:.0%}. "
                "Otherwise it is the same.")  # fmt: skip
    return (f"A line is slower or faster where the Mann-Whitney test over its per-iteration times ({before_iters} and "
            f"{after_iters} iterations) gives p < {alpha:g}{tested} and the change is beyond {min_effect} % "
            f"({share:g} % of the function's time), twice the line’s own spread, and the drift between the two runs: "
            f"here ×{beyond:.2f}, from the largest move of an unchanged line "
            f"(×{drift:.2f}) with a margin. Otherwise it is the same.")  # fmt: skip
