"""Before/after of one function across an edit: which lines got slower or faster, and is it real.

Lines are mapped across the edit by difflib on the function's source text as each run profiled it
(`target.source`): unchanged lines map one to one, a block of edited lines maps pairwise (a line
changed in place keeps its before/after figures), inserted lines are `new`, deleted ones `removed`.
Each mapped line's verdict comes from its per-iteration samples: `slower` or `faster` only where the
Mann-Whitney test says the samples differ (p < ALPHA) *and* the change (a ratio of trimmed means) is
larger than the minimum effect, else `same` (and `same` for a line under MIN_SHARE of the time in
both runs: too small to measure between runs, and nothing to act on). The minimum effect is the
largest of MIN_EFFECT, the line's own spread between iterations, and the drift between the two
runs, raised to DRIFT_MARGIN (for an edited line and the totals the spread is also beaten where the
two runs' interquartile ranges lie apart by more than the minimum effect and the drift): for
an edited line, the factor by which the lines whose text did not change moved together (the ratio
of their summed trimmed means) in the direction of its own change (unchanged lines that got faster
cannot explain a slowdown); for a line the user did not touch,
also the largest factor by which any other untouched line (of DRIFT_SHARE of the time or more) moved.
Two runs of the same code on a busy machine differ by more than their iterations do; the unchanged
lines measure by how much. The totals get the same test against how far the unchanged lines moved
together in the totals' direction (the ratio of their summed trimmed means), since the total is
their sum plus the edit's; where the edited lines made most of the total's move and moved beyond
that drift themselves, the change is the edit's and only the total's own noise is the bar (an edit
can slow the lines around it too, through the caches and the allocator).
Times are self device time per iteration (self CPU on the CPU), means as everywhere: over each run's
calls less its outliers (`totals.outliers`, analysis/outliers.py), and the verdicts judge the same
calls (each run's per-call samples less its outlier calls), so a stalled call moves neither. Parent
side, no torch: it reads two stored runs.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from oplens.analysis.stats import holm, mann_whitney_p, median_ratio, signed_rank_p, trimmed_mean
from oplens.engine.compare import FASTER, SLOWER, speedup_of
from oplens.engine.compare import verdict as compare_verdict
from oplens.records.errors import bad_input
from oplens.records.run import LineStat, Run

# What a diff judges (`diff_runs(by=)`): each line's self device time, or its host wall time (a line whose time is
# Python, a wait or I/O: the figure its user sorts by)
DEVICE, WALL = "device", "wall"
MEASURES = (DEVICE, WALL)
ALPHA = 0.01  # the test's significance level
MIN_EFFECT = 0.10  # a change smaller than this share is `same`, however significant
NOISE_FACTOR = 2.0  # ... and smaller than this many times the line's relative interquartile range
DRIFT_SHARE = 2.0  # % of the time from which an unchanged line's move counts as the runs' drift
MIN_SHARE = 1.0  # % of the function's time under which (in both runs) a line is too small to judge: `same`
DRIFT_MARGIN = 1.5  # a change must exceed the largest such move by this power (in log terms) to count

VERDICTS = ("slower", "faster", "same", "new", "removed")


@dataclass
class LineChange:
    before_line: int | None  # None: a new line
    after_line: int | None  # None: a removed line
    before_us: float
    after_us: float
    ratio: float | None  # after / before; None where before is 0
    verdict: str  # one of VERDICTS
    p_value: float | None  # None for new and removed lines
    text: str = ""  # the line's source (after the edit; before it for a removed line)
    # the line's host wall time per call before and after (LineStat.wall_us; 0: not recorded, or no such line)
    wall_before_us: float = 0.0
    wall_after_us: float = 0.0


@dataclass
class TotalsChange:
    before_us: float
    after_us: float
    ratio: float | None
    verdict: str
    p_value: float | None
    # after's median call over before's, with its 95 % interval (analysis/stats.py: median_ratio; [0, 0]: no calls):
    # what `oplens diff --fail-if-slower` judges
    median_ratio: float = 0.0
    ratio_interval: list[float] = field(default_factory=lambda: [0.0, 0.0])


@dataclass
class FunctionDiff:
    before: Run
    after: Run
    lines: list[LineChange]
    totals: TotalsChange
    method: dict[str, Any] = field(default_factory=dict)  # the test and thresholds used
    by: str = DEVICE  # what the figures and verdicts are of: self device time (DEVICE) or each line's WALL time

    def to_dict(self) -> dict[str, Any]:
        return {
            "before": self.before.to_dict(),
            "after": self.after.to_dict(),
            "lines": [asdict(c) for c in self.lines],
            "totals": asdict(self.totals),
            "method": self.method,
            "by": self.by,
        }


def diff_runs(before: Run, after: Run, by: str = DEVICE) -> FunctionDiff:
    """The line-by-line change of one function from `before` to `after`, of each line's self device time or (`by`
    WALL) its wall time: the same tests on the lines' per-call wall samples (`as_wall`)."""
    if by not in MEASURES:
        raise bad_input(f"a diff by {by!r} is not one OpLens makes", f"diff by one of: {', '.join(MEASURES)}")
    for run in (before, after):
        if not run.target.source:
            raise bad_input(
                f"run {run.run_id} keeps no source text of {run.target.qualname} (it was profiled by an older OpLens)",
                "profile the function again; runs made since keep their source",
            )
    if before.target.qualname != after.target.qualname:
        raise bad_input(
            f"the runs profile different functions ({before.target.qualname} and {after.target.qualname})",
            "diff two runs of the same function (oplens diff OLD_RUN NEW_RUN)",
        )
    if before.backend.name != after.backend.name:
        raise bad_input(
            f"the runs ran on different backends ({before.backend.name} and {after.backend.name})",
            "compare runs of one backend: their times are not the same kind of figure",
        )
    if by == WALL:
        old = [r.run_id for r in (before, after) if not any(s.wall_samples_us for s in r.lines)]
        if old:
            raise bad_input(f"run {', '.join(old)} recorded no line wall times (made by an older OpLens)",
                            "profile the function again, or diff by self time")  # fmt: skip
    a, b = (as_wall(before), as_wall(after)) if by == WALL else (before, after)
    d = _diff_side_by_side(a, b) if measured_together(a, b) else _diff_apart(a, b)
    d.before, d.after, d.by = before, after, by
    walls_before, walls_after = ({s.line: s.wall_us for s in r.lines} for r in (before, after))
    for c in d.lines:
        c.wall_before_us = walls_before.get(c.before_line, 0.0) if c.before_line is not None else 0.0
        c.wall_after_us = walls_after.get(c.after_line, 0.0) if c.after_line is not None else 0.0
    return d


def _diff_apart(before: Run, after: Run) -> FunctionDiff:
    """The diff of two runs measured apart (two processes at two moments)."""
    keep_before, keep_after = _kept_calls(before), _kept_calls(after)
    old_totals, new_totals = keep_before(before.totals.device_samples_us), keep_after(after.totals.device_samples_us)
    mapped = _mapped(before, after, keep_before, keep_after)
    untouched_line = _untouched(before, after)
    unchanged = {
        nl: (o, n) for ol, nl, o, n, _ in mapped
        if o is not None and n is not None and nl is not None and untouched_line(ol, nl)
    }  # fmt: skip
    moves = {nl: _move(o, n) for nl, (o, n) in unchanged.items() if max(o.pct_device, n.pct_device) >= DRIFT_SHARE}
    joint = _aggregate_move(list(unchanged.values()))  # how far the unchanged code moved as a whole, signed
    # An edited line and the totals must beat the unchanged code's joint move in their own direction:
    # a machine that got faster cannot explain a slowdown. A line the user did not touch must also beat
    # the move of every other untouched line, either way (it most likely did not change: a stricter bar).
    edited = Drift(up=max(joint, 0.0), down=max(-joint, 0.0))

    def untouched(nl: int) -> Drift:
        return Drift.both(max([abs(joint), *[m for line, m in moves.items() if line != nl]]))

    changes = [
        _line_change(ol, nl, o, n, text, edited if nl not in unchanged else untouched(nl), apart=nl not in unchanged)
        for ol, nl, o, n, text in mapped
    ]
    changes += _unplaced(before, after, {c.before_line for c in changes}, {c.after_line for c in changes})
    tested = _corrected(changes, before.totals.self_device_us)
    edit_before = sum(trimmed_mean(o.device_samples_us) for _, nl, o, _, _ in mapped if nl not in unchanged and o is not None)
    edit_after = sum(trimmed_mean(n.device_samples_us) for _, nl, _, n, _ in mapped if nl not in unchanged and n is not None)
    totals_drift = _totals_drift(old_totals, new_totals, edit_before, edit_after, edited)
    t = _compare(old_totals, new_totals, before.totals.self_device_us, after.totals.self_device_us, totals_drift,
                 apart=True)  # fmt: skip
    middle, low, high = median_ratio(new_totals, old_totals, paired=False)
    return FunctionDiff(
        before=before,
        after=after,
        lines=changes,
        totals=TotalsChange(t[0], t[1], t[2], t[3], t[4], middle, [low, high]),
        method={
            "measured": "separate",  # two runs, two processes, two moments (stats.SPEEDUP_METHODS)
            "test": "Mann-Whitney U, two-sided, over the per-iteration samples less each run's outlier calls",
            "correction": "Holm",
            "lines_tested": tested,
            "alpha": ALPHA,
            "min_effect": MIN_EFFECT,
            "effect_share_pct": EFFECT_SHARE,
            "noise_factor": NOISE_FACTOR,
            "min_share_pct": MIN_SHARE,
            "drift_share_pct": DRIFT_SHARE,
            "drift_margin": DRIFT_MARGIN,
            "edit_share": EDIT_SHARE,
            "drift": math.exp(abs(joint)),
            "drift_direction": "slower" if joint > 0 else "faster" if joint < 0 else "",
            "rule": "slower/faster where p < alpha and the ratio of trimmed means is beyond the largest of "
            "1 + min_effect, 1 + noise_factor × the larger relative interquartile range of the two runs' samples, "
            "and the drift raised to drift_margin: the factor by which the unchanged lines moved together (for "
            "an edited line and the totals, where they moved in the direction of the change) or, for an "
            "unchanged line, also the largest factor by which another unchanged line (drift_share_pct or more "
            "of the time) moved; the totals' drift is waived where the edited lines made edit_share or more of "
            "the total's move and moved beyond the drift themselves; for an edited line and the totals the spread "
            "is also beaten where the runs' interquartile ranges lie apart by more than 1 + min_effect and the "
            "drift; lines under min_share_pct of the time in both runs are same, and so is a line whose p, Holm-"
            "corrected for the lines tested, is not below alpha, or whose change is under effect_share_pct of the "
            "function's time",
        },
    )


EFFECT_SHARE = 2.0  # % of the function's time: a line's change smaller than this is `same`, however significant


def measured_together(before: Run, after: Run) -> bool:
    """The two runs were measured side by side in one worker, one call of each per round (a profile after an edit
    with its earlier version beside it, or two variants of one compare)."""
    a, b = before.config.side_by_side, after.config.side_by_side
    return (a is not None and b is not None and a.group == b.group and a.index != b.index
            and len(before.totals.device_samples_us) == len(after.totals.device_samples_us))  # fmt: skip


def as_wall(run: Run) -> Run:
    """`run` with each line's wall time in place of its self device time (its per-call samples, its mean, its share
    of the lines' wall time) and the totals the lines' wall time per call: what a diff by wall time tests."""
    total = sum(s.wall_us for s in run.lines)
    lines = [dataclasses.replace(s, device_samples_us=list(s.wall_samples_us), self_device_us=s.wall_us,
                                 pct_device=100.0 * s.wall_us / total if total > 0 else 0.0) for s in run.lines]  # fmt: skip
    calls = max((len(s.wall_samples_us) for s in run.lines), default=0)
    per_call = [sum(s.wall_samples_us[i] for s in run.lines if i < len(s.wall_samples_us)) for i in range(calls)]
    totals = dataclasses.replace(run.totals, device_samples_us=per_call, self_device_us=total)
    return dataclasses.replace(run, lines=lines, totals=totals)


def _diff_side_by_side(before: Run, after: Run) -> FunctionDiff:
    """The diff of two runs measured side by side: each line's rounds paired (its k-th call in each ran in the
    same round), tested with the Wilcoxon signed-rank test, Holm-corrected over the lines tested; each line's
    figures its median call's; a line is `slower`/`faster` where the corrected p is below ALPHA, its change beyond
    MIN_EFFECT of its time and EFFECT_SHARE of the function's. Both versions shared the machine's moments, so no
    drift is needed. The total: the median call's ratio and its 95 % interval (engine/compare.py's speed-up,
    inverted), with a verdict where the interval clears the least difference a compare names."""
    stalled = _stalled(before) | _stalled(after)  # a round either run left out is left out of both

    def keep(samples: list[float]) -> list[float]:
        return [v for i, v in enumerate(samples) if i not in stalled]

    mapped = _mapped(before, after, keep, keep)
    changes = []
    for ol, nl, o, n, text in mapped:
        if o is None or n is None or ol is None or nl is None:
            changes.append(_line_change(ol, nl, o, n, text, Drift.both(0.0)))
            continue
        a, b = o.device_samples_us, n.device_samples_us
        # the median call of each, as a compare's speed-up: a stall in a few rounds moves neither (with a busy loop on
        # one core, the means of a doubled line read x0.22-x15 in 5 of 20 diffs, its medians x1.9-x2.1)
        before_us = statistics.median(a) if a else o.self_device_us
        after_us = statistics.median(b) if b else n.self_device_us
        ratio = after_us / before_us if before_us > 0 else None
        verdict = "same"
        if ratio is not None and max(o.pct_device, n.pct_device) >= MIN_SHARE:
            verdict = "slower" if ratio > 1 + MIN_EFFECT else "faster" if ratio * (1 + MIN_EFFECT) < 1 else "same"
        p = signed_rank_p(a, b) if len(a) == len(b) else 1.0
        changes.append(LineChange(ol, nl, before_us, after_us, ratio, verdict, p, text))
    changes += _unplaced(before, after, {c.before_line for c in changes}, {c.after_line for c in changes})
    tested = _corrected(changes, before.totals.self_device_us)
    speedup, low, high, measured = speedup_of(before, after)
    ratio_, lo, hi = (1 / speedup, 1 / high, 1 / low) if speedup > 0 and low > 0 else (0.0, 0.0, 0.0)
    verdict = {FASTER: "faster", SLOWER: "slower"}.get(compare_verdict(speedup, low, high), "same")
    a_totals, b_totals = keep(before.totals.device_samples_us), keep(after.totals.device_samples_us)
    t_ratio = after.totals.self_device_us / before.totals.self_device_us if before.totals.self_device_us > 0 else None
    totals = TotalsChange(before.totals.self_device_us, after.totals.self_device_us, t_ratio, verdict,
                          signed_rank_p(a_totals, b_totals), ratio_, [lo, hi])  # fmt: skip
    return FunctionDiff(before, after, changes, totals, method={
        "measured": measured,  # stats.SPEEDUP_METHODS: interleaved_plain or interleaved
        "test": "Wilcoxon signed-rank, two-sided, over the rounds paired (each round called both versions), "
                "less the rounds either run left out as outliers",
        "correction": "Holm",
        "lines_tested": tested,
        "alpha": ALPHA,
        "min_effect": MIN_EFFECT,
        "min_share_pct": MIN_SHARE,
        "effect_share_pct": EFFECT_SHARE,
        "rule": "slower/faster where the line's p, Holm-corrected for the lines tested, is below alpha, its ratio "
                "of median calls beyond 1 + min_effect and its change at least effect_share_pct of the function's time "
                "(lines under min_share_pct of the time in both runs are same); the total's verdict where its "
                "median call's 95 % interval clears the least difference a compare names",
    })  # fmt: skip


def _corrected(changes: list[LineChange], total_us: float) -> int:
    """Holm's correction of the lines' p-values over the lines tested (those with one; each p replaced by its
    corrected one), and the verdicts it and the least effect worth naming (EFFECT_SHARE of the function's time before)
    leave standing; the number of lines tested."""
    tested = [c for c in changes if c.p_value is not None and c.before_line is not None and c.after_line is not None]
    for c, p in zip(tested, holm([c.p_value or 1.0 for c in tested]), strict=True):
        c.p_value = p
        small = abs(c.after_us - c.before_us) < EFFECT_SHARE / 100.0 * total_us
        if c.verdict in ("slower", "faster") and (p >= ALPHA or small):
            c.verdict = "same"
    return len(tested)


def _stalled(run: Run) -> set[int]:
    return {c.call for c in run.totals.outliers.calls} if run.totals.outliers is not None else set()


Mapped = tuple[int | None, int | None, LineStat | None, LineStat | None, str]


def _mapped(before: Run, after: Run, keep_before: Callable[[list[float]], list[float]],
            keep_after: Callable[[list[float]], list[float]]) -> list[Mapped]:  # fmt: skip
    """The lines of the two runs matched across the edit (`map_lines`), with their figures (each sample list
    less the calls `keep_*` leaves out) and text; lines that ran no op in either run left out."""
    old_text, new_text = before.target.source.splitlines(), after.target.source.splitlines()
    old_stats = {s.line: dataclasses.replace(s, device_samples_us=keep_before(s.device_samples_us)) for s in before.lines}
    new_stats = {s.line: dataclasses.replace(s, device_samples_us=keep_after(s.device_samples_us)) for s in after.lines}
    mapped: list[Mapped] = []
    for a, b in map_lines(old_text, new_text):
        old_line = before.target.first_line + a if a is not None else None
        new_line = after.target.first_line + b if b is not None else None
        old, new = old_stats.get(old_line or -1), new_stats.get(new_line or -1)
        if old is None and new is None:
            continue  # a comment, a blank line, a line that ran no op in either run
        text = new_text[b] if b is not None else old_text[a] if a is not None else ""
        mapped.append((old_line, new_line, old, new, text.strip()))
    return mapped


def _untouched(before: Run, after: Run) -> Callable[[int | None, int | None], bool]:
    """Whether a line (its number in each run) has the same text in both runs (the user did not edit it); the two
    texts split once."""
    old_text, new_text = before.target.source.splitlines(), after.target.source.splitlines()

    def same(old_line: int | None, new_line: int | None) -> bool:
        if old_line is None or new_line is None:
            return False
        return old_text[old_line - before.target.first_line].strip() == new_text[new_line - after.target.first_line].strip()

    return same


def _kept_calls(run: Run) -> Callable[[list[float]], list[float]]:
    """Per-call samples less the run's outlier calls (`totals.outliers`): what its figures are the mean of."""
    stalled = {c.call for c in run.totals.outliers.calls} if run.totals.outliers is not None else set()
    return lambda samples: [v for i, v in enumerate(samples) if i not in stalled]


def map_lines(old: list[str], new: list[str]) -> list[tuple[int | None, int | None]]:
    """Pairs of 0-based line indexes (old, new); None on one side for inserted or deleted lines."""
    pairs: list[tuple[int | None, int | None]] = []
    matcher = difflib.SequenceMatcher(a=[s.strip() for s in old], b=[s.strip() for s in new], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            pairs += [(i1 + k, j1 + k) for k in range(i2 - i1)]
            continue
        common = min(i2 - i1, j2 - j1) if tag == "replace" else 0  # lines edited in place map pairwise
        pairs += [(i1 + k, j1 + k) for k in range(common)]
        pairs += [(i, None) for i in range(i1 + common, i2)]
        pairs += [(None, j) for j in range(j1 + common, j2)]
    return pairs


@dataclass(frozen=True)
class Drift:
    """How far the runs drifted apart, as |log| of a ratio: a slowdown must beat `up`, a speed-up `down`."""

    up: float
    down: float

    @staticmethod
    def both(move: float) -> Drift:
        return Drift(move, move)


EDIT_SHARE = 0.5  # the edited lines' move at least this share of the total's: the edit made the change


def _totals_drift(before: list[float], after: list[float], edit_before: float, edit_after: float, edited: Drift) -> Drift:
    """The drift the totals must beat: the unchanged code's joint move (in their direction), except
    where the edited lines made at least EDIT_SHARE of the total's move and moved beyond that drift
    themselves: then the change is the edit's (an edit can move the lines around it too, through the
    caches and the allocator, which the joint move would count as the machine's), and the total's
    own noise is the bar."""
    moved = trimmed_mean(after) - trimmed_mean(before)
    edit_moved = edit_after - edit_before
    if not after or not before or moved == 0:
        return edited
    if edit_moved / moved < EDIT_SHARE:
        return edited
    if moved > 0:
        beyond = edit_after > edit_before * math.exp(DRIFT_MARGIN * edited.up)
    else:
        beyond = edit_after * math.exp(DRIFT_MARGIN * edited.down) < edit_before
    return Drift(0.0, 0.0) if beyond else edited


def _aggregate_move(pairs: list[tuple[LineStat, LineStat]]) -> float:
    """log of the ratio of the summed trimmed means of the unchanged lines (after / before): their joint
    move, the drift the totals must beat in its direction."""
    a = sum(trimmed_mean(o.device_samples_us) for o, _ in pairs)
    b = sum(trimmed_mean(n.device_samples_us) for _, n in pairs)
    return math.log(b / a) if a > 0 and b > 0 else 0.0


def _move(old: LineStat, new: LineStat) -> float:
    """How far an unchanged line moved between two runs: |log| of the ratio of its trimmed means."""
    a, b = trimmed_mean(old.device_samples_us), trimmed_mean(new.device_samples_us)
    return abs(math.log(b / a)) if a > 0 and b > 0 else 0.0


def _line_change(
    old_line: int | None,
    new_line: int | None,
    old: LineStat | None,
    new: LineStat | None,
    text: str,
    drift: Drift,
    apart: bool = False,
) -> LineChange:
    if old is None or old_line is None:
        return LineChange(None if old is None else old_line, new_line, 0.0, new.self_device_us if new else 0.0,
                          None, "new", None, text)  # fmt: skip
    if new is None or new_line is None:
        return LineChange(old_line, None if new is None else new_line, old.self_device_us, 0.0, 0.0, "removed", None, text)
    before_us, after_us, ratio, verdict, p = _compare(
        old.device_samples_us, new.device_samples_us, old.self_device_us, new.self_device_us, drift, apart
    )
    if max(old.pct_device, new.pct_device) < MIN_SHARE:
        verdict = "same"  # a few µs of a long function: its moves are the machine's, and nothing to act on
    return LineChange(old_line, new_line, before_us, after_us, ratio, verdict, p, text)


def _unplaced(before: Run, after: Run, seen_old: set[int | None], seen_new: set[int | None]) -> list[LineChange]:
    """Lines with figures outside the function's text (e.g. the `def` line's own ops are inside it;
    this catches figures of lines the source no longer spans)."""
    out = [LineChange(s.line, None, s.self_device_us, 0.0, 0.0, "removed", None) for s in before.lines if s.line not in seen_old]
    out += [LineChange(None, s.line, 0.0, s.self_device_us, None, "new", None) for s in after.lines if s.line not in seen_new]
    return out


def _compare(
    old: list[float], new: list[float], old_mean: float, new_mean: float, drift: Drift, apart: bool = False
) -> tuple[float, float, float | None, str, float | None]:
    """The verdict of one line or of the totals; `apart` (an edited line, the totals): the spread is also
    beaten where the runs' interquartile ranges lie apart by the minimum effect and the drift."""
    ratio = new_mean / old_mean if old_mean > 0 else None
    if not old or not new:
        return old_mean, new_mean, ratio, "same", None  # a run without samples cannot be judged
    p = mann_whitney_p(old, new)
    noise = max(MIN_EFFECT, NOISE_FACTOR * max(_relative_iqr(old), _relative_iqr(new)))
    drift_up, drift_down = math.exp(DRIFT_MARGIN * drift.up) - 1, math.exp(DRIFT_MARGIN * drift.down) - 1
    slower_by, faster_by = max(noise, drift_up), max(noise, drift_down)
    robust_old, robust_new = trimmed_mean(old), trimmed_mean(new)
    verdict = "same"
    if p < ALPHA:
        # Beyond the spread: the ratio beats the noise, or (what the user edited, and the totals) the runs'
        # interquartile ranges lie apart by more than the minimum effect and the drift: one run's wide
        # spread cannot hide a move its quartiles clear. Untouched lines keep the stricter bar alone.
        if robust_new > robust_old * (1 + slower_by) or (apart and _clears(old, new, max(MIN_EFFECT, drift_up))):
            verdict = "slower"
        elif robust_new * (1 + faster_by) < robust_old or (apart and _clears(new, old, max(MIN_EFFECT, drift_down))):
            verdict = "faster"
    return old_mean, new_mean, ratio, verdict, p


def _clears(low: list[float], high: list[float], by: float) -> bool:
    """`high`'s lower quartile above `low`'s upper quartile times 1 + `by`."""
    if len(low) < 4 or len(high) < 4:
        return False
    return statistics.quantiles(high, n=4)[0] > statistics.quantiles(low, n=4)[2] * (1 + by)


def _relative_iqr(values: list[float]) -> float:
    if len(values) < 4:
        return 0.0
    q = statistics.quantiles(values, n=4)
    median = statistics.median(values)
    return (q[2] - q[0]) / median if median > 0 else 0.0
