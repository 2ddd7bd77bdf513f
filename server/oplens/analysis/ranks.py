"""The ranks of a distributed capture merged into one run: each line's figure per rank, its spread
across ranks, the stragglers and what waiting for them costs (pure: records in, a record out).

Each rank's part is a complete run of its own (the same attribution as a single-process capture).
The merged run keeps every rank's per-line self device time (`RankSpread.per_rank`) and gives per
line, per op and in the totals the median, min, max across ranks and the slowest rank. Its headline
figures are means over the ranks (lines still sum to the totals), its per-call samples the mean
over the ranks of each call. Each rank's figures already leave out its own stalled calls
(analysis/outliers.py): the merged run names them all, by rank.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence

from oplens.analysis import outliers, stats
from oplens.analysis.functions import call_tree, file_stats, frame_paths
from oplens.analysis.insights import OUTSIDE, outside_operators
from oplens.records.format import fmt_us
from oplens.records.overview import AnyRun, FunctionStat, ModuleStat, Overview, OverviewRun
from oplens.records.run import Insight, LineStat, OpStat, RankInfo, Run, Spread, Totals
from oplens.records.spread import RankSpread

STRAGGLER_MIN_COST = 0.05  # the excess at least this share of the function's time per call: below, it costs little
STRAGGLER_MIN_EFFECT = 0.25  # the slowest rank at least this much above the median of the others ...
STRAGGLER_NOISE_FACTOR = 2.0  # ... and this many times the noise of that median (IQR over calls / √calls)
SAME_WORK = 0.10  # a rank's work (FLOPs, else op calls) within this of the others' is the same work


def rank_spread(values: Sequence[float], ranks: Sequence[int]) -> RankSpread:
    s = sorted(values)
    if not s:
        return RankSpread()
    slowest = max(range(len(values)), key=lambda i: values[i])
    return RankSpread(per_rank=list(values), median=stats.median(s), min=s[0], max=s[-1], slowest=ranks[slowest])


def merge(parts: Sequence[tuple[RankInfo, Run]]) -> Run:
    """One run of the function across `parts` (each rank's own run), ordered by rank."""
    if not parts:
        raise ValueError("no rank parts to merge")
    ordered = sorted(parts, key=lambda p: p[0].rank)
    infos = [info for info, _ in ordered]
    runs = [run for _, run in ordered]
    numbers = [i.rank for i in infos]
    merged = copy.deepcopy(runs[0])
    merged.ranks = infos

    by_line = [{s.line: s for s in r.lines} for r in runs]
    line_numbers = sorted({n for lines in by_line for n in lines})
    merged.lines = [_merge_line(n, [lines.get(n) for lines in by_line], numbers) for n in line_numbers]
    _shares(merged.lines)
    merged.ops = _merge_ops([r.ops for r in runs], numbers)
    merged.totals = _merge_totals([r.totals for r in runs], numbers)
    stalled = merged.totals.outliers = outliers.merged([r.totals.outliers for r in runs], numbers)
    if stalled is not None:
        stalled.note = outliers.note(stalled, merged.backend.device_label, merged.totals.self_device_us)
    for op in merged.ops:
        op.pct = 100.0 * op.self_device_us / merged.totals.self_device_us if merged.totals.self_device_us else 0.0

    seen: set[tuple[int, str, str]] = set()
    insights: list[Insight] = []
    for r in runs:  # each rank's own insights, once; the time outside operators said of the merged lines instead
        for i in r.insights:
            if i.kind != OUTSIDE and (i.line, i.kind, i.message) not in seen:
                seen.add((i.line, i.kind, i.message))
                insights.append(i)
    stragglers = find_stragglers(merged.lines, [list(lines.values()) for lines in by_line], numbers, [i.host for i in infos])
    insights += outside_operators(merged.lines, merged.totals.call_wall_us) + stragglers
    insights += collective_waits(merged.lines, stragglers, numbers)
    merged.insights = sorted(insights, key=lambda i: i.line)

    _merge_program(merged, runs, infos)
    return merged


def merge_overview_runs(parts: Sequence[tuple[RankInfo, OverviewRun]]) -> OverviewRun:
    """One program overview across `parts` (each rank's own overview), ordered by rank: `merge_overviews`,
    its totals the merged overview's."""
    if not parts:
        raise ValueError("no rank parts to merge")
    ordered = sorted(parts, key=lambda p: p[0].rank)
    infos = [info for info, _ in ordered]
    runs = [run for _, run in ordered]
    merged = copy.deepcopy(runs[0])
    merged.ranks = infos
    merged.overview = merge_overviews([r.overview for r in runs], [i.rank for i in infos])
    merged.totals = _merge_totals([r.totals for r in runs], [i.rank for i in infos])
    merged.totals.self_device_us = merged.overview.total_device_us
    merged.totals.self_cpu_us = merged.overview.total_cpu_us
    _merge_program(merged, runs, infos)
    return merged


def merge_any(parts: Sequence[tuple[RankInfo, AnyRun]]) -> AnyRun:
    """`merge` of a function's rank parts, or `merge_overview_runs` of an overview's (every part one kind)."""
    lines = [(info, r) for info, r in parts if isinstance(r, Run)]
    overviews = [(info, r) for info, r in parts if isinstance(r, OverviewRun)]
    if lines and overviews:
        raise ValueError("rank parts of a function's lines and of a program overview do not merge")
    return merge_overview_runs(overviews) if overviews else merge(lines)


def _merge_program(merged: AnyRun, runs: Sequence[AnyRun], infos: Sequence[RankInfo]) -> None:
    """What the ranks' parts say of how the program ran, for either kind of run: their warnings once each,
    their capture's calls (the fewest) and which were partial."""
    warnings = [w for r in runs for w in r.backend.warnings]
    merged.backend.warnings = list(dict.fromkeys(warnings))
    if merged.capture is not None:
        captures = [r.capture for r in runs if r.capture is not None]
        merged.capture.calls_seen = min(c.calls_seen for c in captures)
        merged.capture.calls_profiled = min(c.calls_profiled for c in captures)
        partial = [
            f"rank {i.rank}: {r.capture.reason}" for i, r in zip(infos, runs, strict=True) if r.capture and r.capture.partial
        ]
        merged.capture.partial = bool(partial)
        merged.capture.reason = "; ".join(partial)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _per_call_mean(samples: Sequence[Sequence[float]]) -> list[float]:
    n = min((len(s) for s in samples), default=0)
    return [_mean([s[i] for s in samples]) for i in range(n)]


def _merge_line(number: int, stats_by_rank: Sequence[LineStat | None], ranks: Sequence[int]) -> LineStat:
    present = [s for s in stats_by_rank if s is not None]
    dev = [s.self_device_us if s else 0.0 for s in stats_by_rank]
    calls = min(len(s.device_samples_us) for s in present)
    # a rank that never ran the line spent nothing on it in each call, as in its figure (a mean over ranks)
    samples = _per_call_mean([s.device_samples_us if s else [0.0] * calls for s in stats_by_rank])
    cpu_samples = _per_call_mean([s.cpu_samples_us if s else [0.0] * calls for s in stats_by_rank])
    base = copy.deepcopy(present[0])
    base.line = number
    base.self_device_us = _mean(dev)
    base.self_cpu_us = _mean([s.self_cpu_us if s else 0.0 for s in stats_by_rank])
    base.op_calls = _mean([s.op_calls if s else 0.0 for s in stats_by_rank])
    base.collective_us = _mean([s.collective_us if s else 0.0 for s in stats_by_rank])
    base.ops = _merge_ops([s.ops if s else [] for s in stats_by_rank], ranks)
    base.device_samples_us, base.cpu_samples_us = samples, cpu_samples
    base.device_spread, base.cpu_spread = stats.spread(samples), stats.spread(cpu_samples)
    base.noisy = stats.is_noisy(samples)
    base.ranks = rank_spread(dev, ranks)
    # its wall time and what of it is outside operators or waiting: a mean over ranks, as its other figures
    base.wall_us = _mean([s.wall_us if s else 0.0 for s in stats_by_rank])
    base.outside_ops_us = _mean([s.outside_ops_us if s else 0.0 for s in stats_by_rank])
    base.wait_us = _mean([s.wait_us if s else 0.0 for s in stats_by_rank])
    base.marks = _mean([s.marks if s else 0.0 for s in stats_by_rank])
    base.marks_us = _mean([s.marks_us if s else 0.0 for s in stats_by_rank])
    base.wall_samples_us = _per_call_mean([s.wall_samples_us if s else [0.0] * calls for s in stats_by_rank])
    base.wall_spread = stats.spread(base.wall_samples_us)
    return base


def _shares(lines: list[LineStat]) -> None:
    """Shares from trimmed means of the per-call samples, as a single run's (analysis/attribution.py)."""
    dev = {s.line: stats.trimmed_mean(s.device_samples_us) if s.device_samples_us else s.self_device_us for s in lines}
    cpu = {s.line: stats.trimmed_mean(s.cpu_samples_us) if s.cpu_samples_us else s.self_cpu_us for s in lines}
    dev_total, cpu_total = sum(dev.values()), sum(cpu.values())
    for s in lines:
        s.pct_device = 100.0 * dev[s.line] / dev_total if dev_total > 0 else 0.0
        s.pct_cpu = 100.0 * cpu[s.line] / cpu_total if cpu_total > 0 else 0.0


def _merge_ops(ops_by_rank: Sequence[Sequence[OpStat]], ranks: Sequence[int]) -> list[OpStat]:
    names: dict[str, OpStat] = {}
    for ops in ops_by_rank:
        for o in ops:
            names.setdefault(o.name, o)
    by_name = [{o.name: o for o in ops} for ops in ops_by_rank]
    merged = []
    for name, first in names.items():
        per = [ops.get(name) for ops in by_name]
        dev = [o.self_device_us if o else 0.0 for o in per]
        merged.append(OpStat(
            name=name,
            calls=_mean([o.calls if o else 0.0 for o in per]),
            self_cpu_us=_mean([o.self_cpu_us if o else 0.0 for o in per]),
            self_device_us=_mean(dev),
            pct=first.pct,
            device_spread=first.device_spread,
            category=first.category,
            ranks=rank_spread(dev, ranks),
        ))  # fmt: skip
    merged.sort(key=lambda o: (-o.self_device_us, -o.self_cpu_us))
    return merged


def _merge_totals(totals: Sequence[Totals], ranks: Sequence[int]) -> Totals:
    dev = [t.self_device_us for t in totals]
    walls = [t.wall_us for t in totals]
    return Totals(
        self_cpu_us=_mean([t.self_cpu_us for t in totals]),
        self_device_us=_mean(dev),
        op_calls=_mean([t.op_calls for t in totals]),
        # a step of the job lasts as long as its slowest rank: the wall figures of the slowest
        wall_us=max(walls, key=lambda w: w.median) if walls else Spread(),
        unattributed_device_us=_mean([t.unattributed_device_us for t in totals]),
        device_samples_us=_per_call_mean([t.device_samples_us for t in totals]),
        cpu_samples_us=_per_call_mean([t.cpu_samples_us for t in totals]),
        ranks=rank_spread(dev, ranks),
        collective_us=_mean([t.collective_us for t in totals]),
        call_wall_us=_mean([t.call_wall_us for t in totals]),
        outside_lines_us=_mean([t.outside_lines_us for t in totals]),
    )


def find_stragglers(
    lines: Sequence[LineStat], lines_by_rank: Sequence[Sequence[LineStat]], ranks: Sequence[int],
    hosts: Sequence[str] = (),
) -> list[Insight]:
    """A line whose slowest rank is well above the other ranks, beyond the line's own noise.

    Each rank's figure is the median over its calls of the line's time less its collective time
    (waiting, not work: the fast ranks wait longest). The slowest rank is compared with the median
    of the others: at least STRAGGLER_MIN_EFFECT above it, STRAGGLER_NOISE_FACTOR times the noise of
    such a median (the ranks' typical interquartile range over calls / √calls), and STRAGGLER_MIN_COST
    of the function's time (a machine's noise moves a rank's small lines by more than 25 %). `hosts`: each rank's
    node, in the order of `ranks`; where the ranks span several, the straggler's node is named, and whether its
    node's other ranks are slow too (the node) or not (the rank)."""
    found = []
    total = sum(x.self_device_us for x in lines)
    for s in lines:
        if s.ranks is None or len(s.ranks.per_rank) < 2:
            continue
        own = [next((x for x in rank_lines if x.line == s.line), None) for rank_lines in lines_by_rank]
        work, iqrs, calls = [], [], []
        for i, x in enumerate(own):
            samples = sorted(x.device_samples_us) if x is not None else []
            typical = stats.median(samples) if samples else s.ranks.per_rank[i]
            work.append(max(0.0, typical - _collective_of(s, i)))
            if samples:
                iqrs.append(stats.iqr(samples))
                calls.append(len(samples))
        slow = max(range(len(work)), key=lambda i: work[i])
        others = sorted(w for i, w in enumerate(work) if i != slow)
        base = stats.median(others)
        noise = (stats.median(sorted(iqrs)) / math.sqrt(min(calls))) if iqrs else 0.0
        excess = work[slow] - base
        if base <= 0 or excess <= max(STRAGGLER_MIN_EFFECT * base, STRAGGLER_NOISE_FACTOR * noise, STRAGGLER_MIN_COST * total):
            continue
        r = rank_spread(work, ranks)
        bar = base + max(STRAGGLER_MIN_EFFECT * base, STRAGGLER_NOISE_FACTOR * noise, STRAGGLER_MIN_COST * total)
        found.append(Insight(
            line=s.line,
            kind="straggler",
            message=(
                f"rank {ranks[slow]}{_node_words(hosts, slow, work, bar)} is the straggler on this line: "
                f"{work[slow] / base:.2f}× the other ranks' median"
                + (f", {work[slow] / r.min:.2f}× the fastest" if r.min > 0 and len(work) > 2 else "")
                + "; the other ranks wait for it at the next collective; "
                + _cause(own, slow)
            ),
            evidence=", ".join(f"rank {n}: {fmt_us(v)}" for n, v in zip(ranks, work, strict=True))
            + f" (median per call; noise {fmt_us(noise)}"
            + (", collectives left out)" if any(o.category for o in s.ops) else ")"),
            rank=ranks[slow],
        ))  # fmt: skip
    return found


def _node_words(hosts: Sequence[str], slow: int, work: Sequence[float], bar: float) -> str:
    """` (node n2; its other ranks are not slow: the rank, not its node)`, where the ranks ran on several nodes. A rank
    of the straggler's node is slow too where it is above the straggler bar and at least halfway from the other
    nodes' ranks to the straggler: a node that is slow makes all its ranks about as slow, while a loaded machine
    moves one rank 25 % off the median without it being the node's."""
    if len(set(hosts)) < 2 or slow >= len(hosts):
        return ""
    node = hosts[slow]
    mates = [i for i, h in enumerate(hosts) if h == node and i != slow]
    if not mates:
        return f" (node {node})"
    elsewhere = sorted(w for w, h in zip(work, hosts, strict=False) if h != node)
    ref = stats.median(elsewhere) if elsewhere else 0.0
    slow_mates = [i for i in mates if work[i] > bar and work[i] - ref >= 0.5 * (work[slow] - ref)]
    if len(slow_mates) == len(mates):
        return f" (node {node}, whose other ranks are slow here too: the node, not one rank)"
    return f" (node {node}; its other ranks are not slow: the rank, not its node)"


def _cause(own: Sequence[LineStat | None], slow: int) -> str:
    """More work on the slow rank (an imbalance to even out), or the same work done slower (its host
    or device: contention for the CPU, clocks, a faulty device). Work is FLOPs, else op calls."""
    amounts = [(x.flops if x.flops else sum(o.calls for o in x.ops)) if x is not None else None for x in own]
    mine, others = amounts[slow], sorted(a for i, a in enumerate(amounts) if i != slow and a)
    if not mine or not others:
        return "its share of the work is unknown"
    ratio = mine / stats.median(others)
    if ratio > 1 + SAME_WORK:
        return f"it does {ratio:.2f}× the others' work here: even out the work across ranks"
    if ratio < 1 - SAME_WORK:
        return f"it does {ratio:.2f}× the others' work here yet takes longer: look at its host or device"
    return "it does the same work slower: its host or device is slower (CPU contention, clocks, a faulty device)"


def collective_waits(lines: Sequence[LineStat], stragglers: Sequence[Insight], ranks: Sequence[int]) -> list[Insight]:
    """Where the fast ranks sit in collectives waiting for a straggler: that wait is its cost."""
    if not stragglers:
        return []
    slow_ranks = {s.rank for s in stragglers if s.rank is not None}
    found = []
    for s in lines:
        if s.collective_us <= 0 or s.ranks is None:
            continue
        per_rank = [_collective_of(s, i) for i in range(len(ranks))]
        for slow in slow_ranks:
            if slow not in ranks:
                continue
            mine = per_rank[ranks.index(slow)]
            others = [v for n, v in zip(ranks, per_rank, strict=True) if n != slow]
            wait = stats.median(sorted(others)) - mine
            if wait > STRAGGLER_MIN_EFFECT * max(mine, 1.0):
                found.append(Insight(
                    line=s.line,
                    kind="collective_wait",
                    message=(
                        f"the other ranks wait here in collectives for rank {slow}: {fmt_us(wait)} per call more than "
                        "it waits, the cost of the straggler"
                    ),
                    evidence=", ".join(f"rank {n}: {fmt_us(v)} in collectives" for n, v in zip(ranks, per_rank, strict=True)),
                ))  # fmt: skip
    return found


def _collective_of(line: LineStat, index: int) -> float:
    """The line's collective time on the rank at `index` (from its collective ops' per-rank figures)."""
    return sum(o.ranks.per_rank[index] for o in line.ops if o.category and o.ranks and index < len(o.ranks.per_rank))


def merge_overviews(overviews: Sequence[Overview], ranks: Sequence[int]) -> Overview:
    """One program overview across the ranks' own (in rank order): each function, module and node of the
    call tree by the mean of its per-step time over the ranks (0 on a rank that never ran it), with the
    spread of its self time (functions) or total time (modules) across them: median, min, max, the
    slowest rank. Functions match by file, qualname and `def` line; modules by path."""
    n = len(overviews)
    merged = copy.deepcopy(overviews[0])
    merged.steps = min(o.steps for o in overviews)
    merged.total_device_us = _mean([o.total_device_us for o in overviews])
    merged.total_cpu_us = _mean([o.total_cpu_us for o in overviews])
    merged.outside_user_device_us = _mean([o.outside_user_device_us for o in overviews])
    total = merged.total_device_us

    def pct(us: float) -> float:
        return 100.0 * us / total if total else 0.0

    by_key: dict[tuple[str, str, int], list[FunctionStat | None]] = {}
    for i, o in enumerate(overviews):
        for f in o.functions:
            by_key.setdefault((f.file, f.qualname, f.def_line), [None] * n)[i] = f
    functions = []
    for (file, qualname, def_line), per_rank in by_key.items():
        self_dev = [f.self_device_us if f else 0.0 for f in per_rank]
        total_dev = [f.total_device_us if f else 0.0 for f in per_rank]
        samples = [f.self_samples_us for f in per_rank if f]
        steps = min(len(x) for x in samples)
        functions.append(FunctionStat(
            file=file, qualname=qualname, def_line=def_line, self_device_us=_mean(self_dev),
            total_device_us=_mean(total_dev), self_cpu_us=_mean([f.self_cpu_us if f else 0.0 for f in per_rank]),
            total_cpu_us=_mean([f.total_cpu_us if f else 0.0 for f in per_rank]),
            calls=_mean([f.calls if f else 0.0 for f in per_rank]), pct_self=pct(_mean(self_dev)),
            pct_total=pct(_mean(total_dev)),
            self_samples_us=[_mean([x[k] for x in samples]) for k in range(steps)], ranks=rank_spread(self_dev, ranks),
        ))  # fmt: skip
    functions.sort(key=lambda f: (-f.self_device_us, -f.total_device_us, f.file, f.def_line))
    merged.functions = functions
    merged.files = file_stats(functions, total)

    mods: dict[str, list[ModuleStat | None]] = {}
    for i, o in enumerate(overviews):
        for m in o.modules:
            mods.setdefault(m.path, [None] * n)[i] = m
    modules = []
    for module_path, ms in mods.items():
        totals_ = [m.total_device_us if m else 0.0 for m in ms]
        modules.append(ModuleStat(
            path=module_path, type=next(m.type for m in ms if m),
            self_device_us=_mean([m.self_device_us if m else 0.0 for m in ms]),
            total_device_us=_mean(totals_), self_cpu_us=_mean([m.self_cpu_us if m else 0.0 for m in ms]),
            total_cpu_us=_mean([m.total_cpu_us if m else 0.0 for m in ms]), calls=_mean([m.calls if m else 0.0 for m in ms]),
            pct_total=pct(_mean(totals_)), ranks=rank_spread(totals_, ranks),
        ))  # fmt: skip
    merged.modules = sorted(modules, key=lambda m: (-m.total_device_us, m.path))

    paths: dict[tuple[tuple[str, str, int], ...], list[float]] = {}
    for o in overviews:
        for path, (dev, cpu) in frame_paths(o).items():
            acc = paths.setdefault(path, [0.0, 0.0])
            acc[0] += dev / n
            acc[1] += cpu / n
    merged.frames = call_tree(paths, functions)
    steps_wall = [o.step_wall_us for o in overviews]
    merged.step_wall_us = [max(w[k] for w in steps_wall) for k in range(min(len(w) for w in steps_wall))]
    notes = [f"rank {r}: {o.note}" for r, o in zip(ranks, overviews, strict=True) if o.note]
    merged.note = "; ".join(notes)
    return merged
