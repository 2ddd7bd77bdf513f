"""A distributed run's rank selector and ranks × lines strip as the server writes them (`oplens.views.ranks`,
issue 32 part 1); the assertions moved here from extension/shared/ranks.test.ts and
extension/src/ranks/rankPart.test.ts (the selector's labels) with the words; ranks.test.ts keeps the cells'
colour levels.

The run is extension/test/fixtures/rmsnorm_naive.ranks.result.json: three ranks merged by the server, rank 1
three times slower on line 25 (x_sq), each rank ending in an all_reduce on line 30 where ranks 0 and 2 wait
for rank 1."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from oplens.records.format import fmt_us_range
from oplens.records.run import RankInfo, Run
from oplens.views.ranks import is_merged, rank_label, rank_numbers, ranks_view, stragglers

FIXTURES = Path(__file__).resolve().parents[2] / "extension" / "test" / "fixtures"


def load(name: str) -> Run:
    return Run.from_dict(json.loads((FIXTURES / name).read_text(encoding="utf-8")))


@pytest.fixture()
def merged() -> Run:
    return load("rmsnorm_naive.ranks.result.json")


def info(rank: int, failed: str = "") -> RankInfo:
    return RankInfo(rank=rank, local_rank=rank, world_size=4, host="h", device="cpu", part="" if failed else f"ranks/{rank}",
                    pid=0, failed=failed)  # fmt: skip


def test_a_merged_run_its_ranks_and_stragglers(merged: Run) -> None:
    single = load("rmsnorm_naive.cpu.result.json")
    assert is_merged(merged) and not is_merged(single)
    assert not is_merged(dataclasses.replace(single, ranks=[info(1)]))  # a part lists its own rank but has no spreads
    assert rank_numbers([info(0), info(1), info(2)], 3) == [0, 1, 2]
    assert rank_numbers([info(0), info(1, "it raised"), info(2)], 2) == [0, 2]
    assert rank_numbers([info(4), info(5)], 2) == [4, 5]
    assert rank_numbers([], 2) == [0, 1]
    assert stragglers(merged.insights) == {25: 1} and stragglers(single.insights) == {}


def test_the_selector(merged: Run) -> None:
    assert rank_label(merged.ranks[1]) == "rank 1 · node-a · cpu"
    failed = RankInfo(rank=2, local_rank=0, world_size=4, host="", device="", part="", pid=0, failed="it raised")
    assert rank_label(failed) == "rank 2 · failed"
    v = ranks_view(merged, "Self CPU")
    assert v.all_ranks == "All ranks (3, merged)"
    assert [(o.rank, o.label, o.disabled) for o in v.options] == [(0, "rank 0 · node-a · cpu", False),
                                                                (1, "rank 1 · node-a · cpu", False),
                                                                (2, "rank 2 · node-a · cpu", False)]  # fmt: skip
    assert v.options[1].title == "its own run: ranks/1"
    assert v.note.startswith("figures are means over the ranks")
    assert ranks_view(merged, "Self CPU", 1).note == "rank 1’s own run (ranks/1)"


def test_the_strip(merged: Run) -> None:
    v = ranks_view(merged, "Self CPU")
    assert v.strip_title == "Ranks × lines · Self CPU per iteration on each rank"
    assert v.lines == [25, 26, 27, 28, 29, 30]
    assert [(r.label, r.title, len(r.cells)) for r in v.rows] == [
        ("rank 0", "rank 0 · local 0 · node-a · cpu · pid 4200", 6),
        ("rank 1", "rank 1 · local 1 · node-a · cpu · pid 4201", 6),
        ("rank 2", "rank 2 · local 2 · node-a · cpu · pid 4202", 6),
    ]
    x_sq = next(ln for ln in merged.lines if ln.line == 25)
    assert x_sq.ranks is not None and v.max_us == x_sq.ranks.max
    assert v.key == "Each cell is a line’s time on one rank, coloured against the largest cell (27.04 ms); "
    cell = v.rows[1].cells[0]
    assert cell.straggler
    assert cell.title == ("line 25 · rank 1: Self CPU 27.04 ms (the slowest, ⚠ the straggler); median across ranks 9.01 ms, "
                          "9.01–27.04 ms")
    assert v.rows[0].cells[0].title == "line 25 · rank 0: Self CPU 9.01 ms; median across ranks 9.01 ms, 9.01–27.04 ms"
    # a line where every rank takes the same time has no slowest
    assert all("the slowest" not in r.cells[1].title for r in v.rows)
    assert v.failed == []


def test_failed_ranks_apart_and_no_strip_for_a_single_process(merged: Run) -> None:
    with_failed = ranks_view(dataclasses.replace(merged, ranks=[*merged.ranks, info(3, "exited with status 1")]), "Self CPU")
    assert with_failed.failed == ["Rank 3 has no part: exited with status 1"]
    assert len(with_failed.rows) == 3 and with_failed.options[-1].disabled
    single = ranks_view(load("rmsnorm_naive.cpu.result.json"), "Self CPU")
    assert single.rows == [] and single.strip_title == ""


def test_a_range_of_times() -> None:
    """As ranks.test.ts had it for the webview's twin (through format.expected.json)."""
    ranges = [((7100, 49100), "7.10–49.10 ms"), ((923.469, 21020.7475), "923.5 µs–21.02 ms"), ((15.7, 42), "15.7–42.0 µs"),
              ((2000, 2000), "2.00 ms"), ((9014.2, 27041.0), "9.01–27.04 ms")]  # fmt: skip
    assert [fmt_us_range(*args) for args, _ in ranges] == [text for _, text in ranges]


def test_ranks_of_several_nodes_are_grouped_by_node(merged: Run) -> None:
    """Issue 40 part 4: ranks 0 and 2 on node n1, rank 1 on n2 (as a job of two nodes names them): the selector's
    options and the strip's rows grouped by node, in the order the nodes first come; one node: no grouping."""
    hosts = {0: "n1", 1: "n2", 2: "n1"}
    on_nodes = dataclasses.replace(merged, ranks=[dataclasses.replace(i, host=hosts[i.rank]) for i in merged.ranks])
    v = ranks_view(on_nodes, "Self CPU")
    assert v.nodes == ["n1", "n2"]
    assert [(o.rank, o.node) for o in v.options] == [(0, "n1"), (2, "n1"), (1, "n2")]
    assert [(r.rank, r.node) for r in v.rows] == [(0, "n1"), (2, "n1"), (1, "n2")]
    assert v.rows[2].cells[0].straggler  # the cells stay their rank's
    # a rank that failed before it said its node is listed last, not refused
    failed = RankInfo(rank=3, local_rank=1, world_size=4, host="", device="", part="", pid=0, failed="it raised")
    with_failed = ranks_view(dataclasses.replace(on_nodes, ranks=[*on_nodes.ranks, failed]), "Self CPU")
    assert [(o.rank, o.node) for o in with_failed.options][-1] == (3, "")
    one = ranks_view(merged, "Self CPU")
    assert one.nodes == [] and all(o.node == "" for o in one.options) and all(r.node == "" for r in one.rows)
