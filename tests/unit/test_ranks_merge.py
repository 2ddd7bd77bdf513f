"""`oplens.analysis.ranks.merge` on hand-built rank parts with known answers: per-line figures across
ranks, lines summing to the totals, a line only one rank ran, the straggler and collective-wait
insights, ops and their categories, the capture's counts. Pure records, no torch, no worker."""

from __future__ import annotations

import copy
from collections.abc import Sequence

import pytest

from oplens.analysis.ranks import _node_words, merge
from oplens.records.run import BackendInfo, Capture, Config, Insight, LineStat, OpStat, RankInfo, Run, Target, Totals

CALLS = 8
ALL_REDUCE = "c10d::allreduce_"


def tight(v: float, n: int = CALLS) -> list[float]:
    """n per-call samples with mean and median v and ±1 % of noise."""
    jitter = [-0.01, 0.01, -0.005, 0.005, 0.0, 0.0, -0.0025, 0.0025]
    return [v * (1.0 + jitter[i % len(jitter)]) for i in range(n)]


def wide(v: float) -> list[float]:
    """4 per-call samples with mean and median v and an interquartile range of 1.4 v (a noisy line)."""
    return [0.3 * v, 0.3 * v, 1.7 * v, 1.7 * v]


def op(name: str, device_us: float, calls: float = 1.0, category: str = "") -> OpStat:
    return OpStat(name=name, calls=calls, self_cpu_us=device_us / 10, self_device_us=device_us, category=category)


def line(number: int, samples: Sequence[float], ops: Sequence[OpStat] = ()) -> LineStat:
    dev = sum(samples) / len(samples)
    ops = list(ops) or [op(f"aten::op{number}", dev)]
    return LineStat(
        line=number,
        self_cpu_us=dev / 10,
        self_device_us=dev,
        pct_device=0.0,
        pct_cpu=0.0,
        op_calls=sum(o.calls for o in ops),
        ops=ops,
        device_samples_us=list(samples),
        cpu_samples_us=[s / 10 for s in samples],
        collective_us=sum(o.self_device_us for o in ops if o.category),
    )


def part(rank: int, lines: Sequence[LineStat], capture: Capture | None = None, world: int = 4) -> tuple[RankInfo, Run]:
    """Rank `rank`'s own run of the lines, its totals and run-level ops made from them."""
    total = sum(s.self_device_us for s in lines)
    for s in lines:
        s.pct_device = 100.0 * s.self_device_us / total if total else 0.0
    run_ops: dict[str, OpStat] = {}
    for s in lines:
        for o in s.ops:
            agg = run_ops.setdefault(o.name, OpStat(name=o.name, calls=0.0, self_cpu_us=0.0, self_device_us=0.0,
                                                    category=o.category))  # fmt: skip
            agg.calls += o.calls
            agg.self_cpu_us += o.self_cpu_us
            agg.self_device_us += o.self_device_us
    n = min((len(s.device_samples_us) for s in lines), default=0)
    info = RankInfo(rank=rank, local_rank=rank, world_size=world, host="node0", device=f"cuda:{rank}", part=f"ranks/{rank}")
    run = Run(
        target=Target(file="/w/model.py", qualname="step", first_line=9, last_line=20, source_sha256="ab" * 32, def_line=9),
        backend=BackendInfo(name="cuda", device_label="CUDA"),
        config=Config(warmup=2, iters=n),
        totals=Totals(
            self_cpu_us=sum(s.self_cpu_us for s in lines),
            self_device_us=total,
            op_calls=sum(s.op_calls for s in lines),
            device_samples_us=[sum(s.device_samples_us[k] for s in lines) for k in range(n)],
            cpu_samples_us=[sum(s.cpu_samples_us[k] for s in lines) for k in range(n)],
            collective_us=sum(s.collective_us for s in lines),
        ),
        lines=list(lines),
        ops=sorted(run_ops.values(), key=lambda o: -o.self_device_us),
        capture=capture,
        ranks=[info],
    )
    return info, run


def by_line(run: Run, number: int) -> LineStat:
    (found,) = [s for s in run.lines if s.line == number]
    return found


def of_kind(run: Run, kind: str) -> list[Insight]:
    return [i for i in run.insights if i.kind == kind]


# ---- per-line figures across ranks ---------------------------------------------------------------


def test_each_line_keeps_every_ranks_figure_in_rank_order_with_median_min_max_and_the_slowest() -> None:
    # given out of order, with global rank numbers that are not 0..n-1
    parts = [
        part(8, [line(10, tight(200.0)), line(11, tight(40.0))]),
        part(0, [line(10, tight(100.0)), line(11, tight(60.0))]),
        part(4, [line(10, tight(300.0)), line(11, tight(50.0))]),
    ]
    run = merge(parts)

    assert [r.rank for r in run.ranks] == [0, 4, 8]
    r10 = by_line(run, 10).ranks
    assert r10 is not None
    assert r10.per_rank == pytest.approx([100.0, 300.0, 200.0])
    assert (r10.median, r10.min, r10.max, r10.slowest) == pytest.approx((200.0, 100.0, 300.0, 4))
    r11 = by_line(run, 11).ranks
    assert r11 is not None
    assert r11.per_rank == pytest.approx([60.0, 50.0, 40.0])
    assert (r11.median, r11.min, r11.max, r11.slowest) == pytest.approx((50.0, 40.0, 60.0, 0))
    # the headline figure is the mean over the ranks
    assert by_line(run, 10).self_device_us == pytest.approx(200.0)
    assert by_line(run, 11).self_device_us == pytest.approx(50.0)


def test_merge_does_not_change_its_parts() -> None:
    parts = [part(0, [line(10, tight(100.0))]), part(1, [line(10, tight(300.0)), line(11, tight(5.0))])]
    before = copy.deepcopy([(i, r.to_dict()) for i, r in parts])
    merge(parts)
    assert [(i, r.to_dict()) for i, r in parts] == before


def test_no_parts_is_an_error() -> None:
    with pytest.raises(ValueError):
        merge([])


# ---- lines and totals ------------------------------------------------------------------------------


def test_lines_sum_to_the_totals_which_are_means_over_the_ranks() -> None:
    parts = [
        part(0, [line(10, [90.0, 110.0]), line(11, [40.0, 60.0])]),  # 100 + 50 = 150
        part(1, [line(10, [280.0, 320.0]), line(11, [70.0, 70.0])]),  # 300 + 70 = 370
    ]
    run = merge(parts)

    assert run.totals.self_device_us == pytest.approx((150.0 + 370.0) / 2)
    assert sum(s.self_device_us for s in run.lines) == pytest.approx(run.totals.self_device_us)
    assert sum(s.self_cpu_us for s in run.lines) == pytest.approx(run.totals.self_cpu_us)
    assert sum(s.op_calls for s in run.lines) == pytest.approx(run.totals.op_calls)
    assert run.totals.ranks is not None
    assert run.totals.ranks.per_rank == pytest.approx([150.0, 370.0])
    assert (run.totals.ranks.median, run.totals.ranks.slowest) == pytest.approx((260.0, 1))
    # per-call samples: the mean over the ranks of each call
    assert by_line(run, 10).device_samples_us == pytest.approx([185.0, 215.0])
    assert run.totals.device_samples_us == pytest.approx([(130.0 + 350.0) / 2, (170.0 + 390.0) / 2])
    assert sum(s.pct_device for s in run.lines) == pytest.approx(100.0)


def test_a_line_only_one_rank_ran_counts_zero_on_the_others() -> None:
    parts = [
        part(0, [line(10, tight(100.0)), line(11, tight(60.0))]),
        part(1, [line(10, tight(100.0))]),  # line 11 not run on rank 1 (a rank-0-only branch)
    ]
    run = merge(parts)

    assert [s.line for s in run.lines] == [10, 11]
    only = by_line(run, 11)
    assert only.ranks is not None
    assert only.ranks.per_rank == pytest.approx([60.0, 0.0])
    assert (only.ranks.median, only.ranks.min, only.ranks.max, only.ranks.slowest) == pytest.approx((30.0, 0.0, 60.0, 0))
    assert only.self_device_us == pytest.approx(30.0)
    assert sum(s.self_device_us for s in run.lines) == pytest.approx(run.totals.self_device_us)
    assert only.ops[0].ranks is not None and only.ops[0].ranks.per_rank == pytest.approx([60.0, 0.0])
    assert of_kind(run, "straggler") == []  # a line one rank runs alone is no straggler


def test_a_line_only_one_rank_ran_has_samples_and_share_on_the_same_footing_as_its_figure() -> None:
    parts = [
        part(0, [line(10, tight(100.0)), line(11, tight(60.0))]),
        part(1, [line(10, tight(100.0))]),
    ]
    run = merge(parts)
    only = by_line(run, 11)
    # the headline is the mean over both ranks (30); so are the per-call samples (which make the share,
    # the spread and the noise verdict), and the lines' samples sum to the totals'
    assert sum(only.device_samples_us) / len(only.device_samples_us) == pytest.approx(only.self_device_us)
    assert only.pct_device == pytest.approx(100.0 * 30.0 / 130.0, rel=0.01)
    per_call = [sum(s.device_samples_us[k] for s in run.lines) for k in range(CALLS)]
    assert per_call == pytest.approx(run.totals.device_samples_us)


# ---- stragglers and the wait they cause ------------------------------------------------------------


def four_ranks(samples: object, slow: float = 1600.0, collective: bool = True) -> list[tuple[RankInfo, Run]]:
    """Line 10 ~1 ms of work (rank 2: `slow`); line 11 an all-reduce where the others wait for rank 2."""
    make = tight if samples == "tight" else wide
    parts = []
    for rank in range(4):
        work = slow if rank == 2 else 1000.0
        wait = 20.0 if rank == 2 else 20.0 + (slow - 1000.0)
        lines = [line(10, make(work), [op("aten::mm", work * 0.9, 2.0), op("aten::add", work * 0.1)])]
        if collective:
            ops = [op(ALL_REDUCE, wait, category="collective"), op("aten::div", 100.0)]
            lines.append(line(11, make(100.0 + wait), ops))
        lines.append(line(12, make(200.0)))
        parts.append(part(rank, lines))
    return parts


def test_a_straggler_names_its_line_and_rank() -> None:
    run = merge(four_ranks("tight"))
    found = of_kind(run, "straggler")
    assert [(i.line, i.rank) for i in found] == [(10, 2)]
    assert "rank 2" in found[0].message


def test_no_straggler_within_the_lines_own_noise() -> None:
    # the same per-rank figures (rank 2 1.6x), but each rank's calls vary by more than that
    run = merge(four_ranks("wide"))
    r10 = by_line(run, 10).ranks
    assert r10 is not None and r10.slowest == 2
    assert of_kind(run, "straggler") == []
    assert of_kind(run, "collective_wait") == []


def test_no_straggler_when_the_ranks_agree() -> None:
    run = merge(four_ranks("tight", slow=1000.0))
    assert of_kind(run, "straggler") == [] and of_kind(run, "collective_wait") == []


def test_the_collective_wait_is_on_the_collective_line_and_that_line_is_no_straggler() -> None:
    run = merge(four_ranks("tight"))
    waits = of_kind(run, "collective_wait")
    assert [i.line for i in waits] == [11]
    assert "rank 2" in waits[0].message
    # on line 11 rank 2 is the fastest by far (it waits least): its collective time is left out
    assert all(i.line != 11 for i in of_kind(run, "straggler"))
    assert by_line(run, 11).collective_us == pytest.approx((620.0 * 3 + 20.0) / 4)
    assert run.totals.collective_us == pytest.approx((620.0 * 3 + 20.0) / 4)


def test_a_straggler_without_a_collective_line_gives_no_wait() -> None:
    run = merge(four_ranks("tight", collective=False))
    assert [(i.line, i.rank) for i in of_kind(run, "straggler")] == [(10, 2)]
    assert of_kind(run, "collective_wait") == []


# ---- ops ----------------------------------------------------------------------------------------------


def test_ops_keep_their_category_and_their_per_rank_figures() -> None:
    run = merge(four_ranks("tight"))
    (reduce_op,) = [o for o in by_line(run, 11).ops if o.name == ALL_REDUCE]
    assert reduce_op.category == "collective"
    assert reduce_op.ranks is not None
    assert reduce_op.ranks.per_rank == pytest.approx([620.0, 620.0, 20.0, 620.0])
    assert (reduce_op.ranks.median, reduce_op.ranks.min, reduce_op.ranks.max) == pytest.approx((620.0, 20.0, 620.0))
    assert reduce_op.self_device_us == pytest.approx(470.0)
    (mm,) = [o for o in by_line(run, 10).ops if o.name == "aten::mm"]
    assert mm.category == ""
    assert mm.ranks is not None and mm.ranks.per_rank == pytest.approx([900.0, 900.0, 1440.0, 900.0])
    assert mm.ranks.slowest == 2
    assert mm.calls == pytest.approx(2.0)
    # the run's op table: the same, and its shares of the merged totals
    (run_reduce,) = [o for o in run.ops if o.name == ALL_REDUCE]
    assert run_reduce.category == "collective"
    assert run_reduce.ranks is not None and run_reduce.ranks.per_rank == pytest.approx([620.0, 620.0, 20.0, 620.0])
    assert run_reduce.pct == pytest.approx(100.0 * 470.0 / run.totals.self_device_us)
    assert sum(o.self_device_us for o in run.ops) == pytest.approx(run.totals.self_device_us)


def test_an_op_one_rank_ran_counts_zero_on_the_others() -> None:
    parts = [
        part(0, [line(10, tight(100.0), [op("aten::mm", 80.0), op("aten::copy_", 20.0)])]),
        part(1, [line(10, tight(80.0), [op("aten::mm", 80.0)])]),
    ]
    run = merge(parts)
    (copy_op,) = [o for o in by_line(run, 10).ops if o.name == "aten::copy_"]
    assert copy_op.ranks is not None and copy_op.ranks.per_rank == pytest.approx([20.0, 0.0])
    assert copy_op.self_device_us == pytest.approx(10.0) and copy_op.calls == pytest.approx(0.5)


# ---- capture counts -------------------------------------------------------------------------------


def capture(seen: int, profiled: int, partial: bool = False, reason: str = "") -> Capture:
    return Capture(program="train.py", calls_seen=seen, calls_skipped=3, calls_profiler_warmup=2,
                   calls_profiled=profiled, partial=partial, reason=reason)  # fmt: skip


def test_capture_counts_are_the_least_over_the_ranks_and_complete_parts_make_a_complete_run() -> None:
    parts = [
        part(0, [line(10, tight(100.0))], capture(40, 8)),
        part(1, [line(10, tight(100.0))], capture(41, 8)),
    ]
    run = merge(parts)
    assert run.capture is not None
    assert (run.capture.calls_seen, run.capture.calls_profiled) == (40, 8)
    assert run.capture.partial is False and run.capture.reason == ""


def test_a_partial_part_makes_the_run_partial_and_names_its_rank() -> None:
    parts = [
        part(0, [line(10, tight(100.0))], capture(40, 8)),
        part(1, [line(10, tight(100.0, n=4))], capture(9, 4, partial=True, reason="the program ended after 9 calls")),
        part(2, [line(10, tight(100.0))], capture(40, 8)),
    ]
    run = merge(parts)
    assert run.capture is not None
    assert (run.capture.calls_seen, run.capture.calls_profiled) == (9, 4)
    assert run.capture.partial is True
    assert run.capture.reason == "rank 1: the program ended after 9 calls"
    assert len(by_line(run, 10).device_samples_us) == 4  # the calls every rank has
    assert len(run.totals.device_samples_us) == 4


def test_each_ranks_own_insights_are_kept_once() -> None:
    parts = [part(r, [line(10, tight(100.0))]) for r in range(3)]
    same = Insight(line=10, kind="hot_line", message="line 10 takes all the time")
    for _, r in parts:
        r.insights = [copy.deepcopy(same)]
    parts[1][1].insights.append(Insight(line=10, kind="sync", message="rank 1 syncs"))
    run = merge(parts)
    assert [(i.kind, i.message) for i in run.insights] == [(same.kind, same.message), ("sync", "rank 1 syncs")]


# ---- stalled calls ----------------------------------------------------------------------------------


def test_each_ranks_stalled_calls_are_named_by_rank_and_the_means_over_every_call_averaged() -> None:
    from oplens.records.run import OutlierCall, Outliers

    parts = [part(0, [line(10, tight(100.0))]), part(1, [line(10, tight(100.0))])]
    # rank 1's own run left its 4th call out (its figures are already its other calls' mean)
    parts[1][1].totals.outliers = Outliers(calls=[OutlierCall(call=3, device_us=5000.0, cpu_us=500.0, slower=50.0)],
                                           kept=CALLS - 1, profiled=CALLS, works=1, all_device_us=712.0)  # fmt: skip
    parts[0][1].totals.outliers = Outliers(kept=CALLS, profiled=CALLS, works=1, all_device_us=100.0)
    o = merge(parts).totals.outliers
    assert o is not None and [(c.rank, c.call) for c in o.calls] == [(1, 3)]
    assert (o.kept, o.profiled, o.all_device_us) == (CALLS - 1, CALLS, pytest.approx(406.0))
    assert "1 of 8 calls of each rank left out" in o.note and "rank 1 call 4 (CUDA 5.00 ms, CPU 500.0 µs" in o.note
    # a rank's run older than the record: nothing to say for the whole
    parts[0][1].totals.outliers = None
    assert merge(parts).totals.outliers is None


def test_a_line_s_wall_time_and_waits_are_means_over_the_ranks() -> None:
    a, b = line(10, tight(100.0)), line(10, tight(300.0))
    a.wall_us, a.outside_ops_us, a.wait_us, a.wall_samples_us = 400.0, 250.0, 0.0, [400.0] * len(a.device_samples_us)
    b.wall_us, b.outside_ops_us, b.wait_us, b.wall_samples_us = 800.0, 50.0, 600.0, [800.0] * len(b.device_samples_us)
    run = merge([part(0, [a]), part(1, [b])])
    merged = by_line(run, 10)
    assert (merged.wall_us, merged.outside_ops_us, merged.wait_us) == pytest.approx((600.0, 150.0, 300.0))
    assert merged.wall_spread.median == pytest.approx(600.0)


def test_a_straggler_s_node_is_named_slow_only_where_its_other_ranks_are_about_as_slow() -> None:
    """The straggler's node-mates against the other nodes' ranks: a mate a loaded machine put 30 % above the median
    is not the node's slowness (the flake this replaced); mates nearly as slow as the straggler are."""
    hosts = ["n1", "n1", "n2", "n2"]
    assert "not slow: the rank" in _node_words(hosts, 3, [1.0, 1.0, 1.3, 8.0], bar=1.25)
    assert "slow here too: the node" in _node_words(hosts, 3, [1.0, 1.0, 7.0, 8.0], bar=1.25)
    assert "not slow: the rank" in _node_words(hosts, 3, [1.0, 1.0, 1.1, 8.0], bar=1.25)
    assert _node_words(["n1", "n1"], 1, [1.0, 3.0], bar=1.25) == ""
