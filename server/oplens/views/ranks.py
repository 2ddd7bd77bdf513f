"""A distributed run on its results page: the rank selector (all ranks merged, or one rank's own run) and
the ranks × lines strip (a row per rank, a cell per profiled line in source order, each cell the line's
time on that rank), every word written here; the webview colours the cells from their times
(`shared/ranks.ts`'s levels) and draws them (`webview/ranks.ts`). The figures are the merged run's
per-rank spreads (`analysis/ranks.py`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from oplens.records.format import fmt_us, fmt_us_range
from oplens.records.run import Insight, RankInfo, Run


@dataclass(frozen=True)
class RankOption:
    """A rank as the selector lists it."""

    rank: int
    label: str  # `rank 1 · node-a · cuda:1`, `rank 3 · failed`
    title: str  # why it failed, or where its own run is
    disabled: bool  # no part to show (it failed)
    node: str = ""  # its node, where the ranks ran on several (the selector groups by it); '' on one


@dataclass(frozen=True)
class StripCell:
    """A line's time on one rank."""

    line: int
    us: float  # its colour, against the strip's largest cell
    straggler: bool
    title: str  # `line 25 · rank 1: Self CPU 27.04 ms (the slowest, ⚠ the straggler); median across ranks ...`


@dataclass(frozen=True)
class StripRow:
    """One rank's row of the strip."""

    rank: int
    label: str  # `rank 1`
    title: str  # who the rank was: `rank 1 · local 1 · node-a · cuda:1 · pid 4201`
    cells: list[StripCell]
    node: str = ""  # its node, where the ranks ran on several: the strip's rows are grouped by it, headed `node n2`


@dataclass(frozen=True)
class RanksView:
    """The rank selector and (all ranks on show) the ranks × lines strip of a distributed run."""

    all_ranks: str  # the selector's first choice: `All ranks (3, merged)`
    options: list[RankOption]
    note: str  # beside the selector: what the figures on show are
    strip_title: str  # `Ranks × lines · Self CPU per iteration on each rank`; '' where there is no strip
    lines: list[int]  # the strip's columns: the profiled lines with per-rank times, in source order
    rows: list[StripRow]
    max_us: float  # the largest cell (the top colour)
    key: str  # how to read the strip, with the largest cell's time
    failed: list[str]  # `Rank 3 has no part: exited with status 1`, one per failed rank
    nodes: list[str] = field(default_factory=list)  # the nodes the ranks ran on, in order, where several


def is_merged(run: Run) -> bool:
    """A merged run of several ranks (a rank's own part, or a single process, is not)."""
    return bool(run.ranks) and (run.totals.ranks is not None or any(ln.ranks is not None for ln in run.lines))


def stragglers(insights: Sequence[Insight]) -> dict[int, int]:
    """The straggler of each line (`straggler` insights name it): line → rank."""
    found: dict[int, int] = {}
    for i in insights:
        if i.kind == "straggler" and i.rank is not None:
            found.setdefault(i.line, i.rank)
    return found


def rank_label(info: RankInfo) -> str:
    """How a rank reads in the selector: `rank 1 · node-a · cuda:1`, `rank 3 · failed`."""
    where = " · ".join(x for x in (info.host, info.device) if x)
    return f"rank {info.rank}{f' · {where}' if where else ''}{' · failed' if info.failed else ''}"


def rank_numbers(ranks: Sequence[RankInfo], count: int) -> list[int]:
    """The rank number of each of `count` per-rank figures: the ranks of the run in order, those with a part
    where a failed rank (no part, no figure) is listed too, else 0..count-1."""
    if len(ranks) == count:
        return [r.rank for r in ranks]
    with_parts = [r.rank for r in ranks if not r.failed]
    return with_parts if len(with_parts) == count else list(range(count))


def _rank_title(info: RankInfo | None, rank: int) -> str:
    if info is None:
        return f"rank {rank}"
    parts = [f"rank {rank}", f"local {info.local_rank}", info.host, info.device, f"pid {info.pid}" if info.pid else ""]
    return " · ".join(p for p in parts if p)


def ranks_view(merged: Run, label: str, shown: int | None = None) -> RanksView:
    """The selector and strip of the distributed run `merged` (`label`: its time's, `Self CPU`), with rank
    `shown`'s own run on show (None: all ranks)."""
    info = next((i for i in merged.ranks if i.rank == shown), None)
    if shown is None:
        note = "figures are means over the ranks; the editor’s hints show each line’s median across ranks"
    else:
        note = f"rank {shown}’s own run{f' ({info.part})' if info is not None and info.part else ''}"
    nodes = node_order(merged.ranks)
    options = [RankOption(rank=i.rank, label=rank_label(i), title=i.failed or f"its own run: {i.part}",
                          disabled=i.failed != "" or i.part == "", node=i.host if nodes else "")
               for i in sorted(merged.ranks, key=lambda i: (_node_place(nodes, i.host), i.rank))]  # fmt: skip
    lines = sorted((ln for ln in merged.lines if ln.ranks is not None and ln.ranks.per_rank), key=lambda ln: ln.line)
    rows: list[StripRow] = []
    top = 0.0
    if lines:
        count = max(len(ln.ranks.per_rank) for ln in lines if ln.ranks is not None)
        by_rank = {r.rank: r for r in merged.ranks}
        slow = stragglers(merged.insights)
        top = max(max(ln.ranks.per_rank) for ln in lines if ln.ranks is not None)
        for i, rank in enumerate(rank_numbers(merged.ranks, count)):
            cells = []
            for ln in lines:
                r = ln.ranks
                assert r is not None
                us = r.per_rank[i] if i < len(r.per_rank) else 0.0
                straggler = slow.get(ln.line) == rank
                notes = ", ".join(n for n in ("the slowest" if r.slowest == rank and r.max > r.min else "",
                                              "⚠ the straggler" if straggler else "") if n)  # fmt: skip
                cells.append(StripCell(line=ln.line, us=us, straggler=straggler, title=(
                    f"line {ln.line} · rank {rank}: {label} {fmt_us(us)}{f' ({notes})' if notes else ''}; median across "
                    f"ranks {fmt_us(r.median)}, {fmt_us_range(r.min, r.max)}")))  # fmt: skip
            info = by_rank.get(rank)
            rows.append(StripRow(rank=rank, label=f"rank {rank}", title=_rank_title(info, rank), cells=cells,
                                 node=info.host if nodes and info is not None else ""))  # fmt: skip
        if nodes:  # grouped by node, in the order the nodes first come
            rows.sort(key=lambda row: (_node_place(nodes, row.node), row.rank))
    return RanksView(
        all_ranks=f"All ranks ({len(merged.ranks)}, merged)",
        options=options,
        note=note,
        strip_title=f"Ranks × lines · {label} per iteration on each rank" if rows else "",
        lines=[ln.line for ln in lines],
        rows=rows,
        max_us=top,
        key=f"Each cell is a line’s time on one rank, coloured against the largest cell ({fmt_us(top)}); ",
        failed=[f"Rank {r.rank} has no part: {r.failed}" for r in merged.ranks if r.failed],
        nodes=nodes,
    )


def _node_place(nodes: list[str], host: str) -> int:
    """Where a rank of `host` goes in the order of `nodes`: a rank with no node named (one that failed) last."""
    return nodes.index(host) if host in nodes else len(nodes)


def node_order(ranks: Sequence[RankInfo]) -> list[str]:
    """The nodes the ranks ran on, in rank order of their first rank, where there are several; [] on one."""
    seen: list[str] = []
    for r in sorted(ranks, key=lambda r: r.rank):
        if r.host and r.host not in seen:
            seen.append(r.host)
    return seen if len(seen) > 1 else []
