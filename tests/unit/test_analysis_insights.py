"""`analysis.insights` on stored and synthetic events: the elementwise chain of rmsnorm_naive (the
stored profile, its intermediate sizes from the trace's own input shapes), the op and dtype table it
shares with the work rules, host-device transfers, compiled regions and noisy lines."""

from __future__ import annotations

from oplens.analysis.attribution import Attribution, RawEvent, attribute
from oplens.analysis.insights import find_insights, fusable_chains, hot_line
from oplens.records.run import SourceRef
from support.stored import stored_attribution, stored_run

T = 1  # the profiled thread


def one_op_per_line(ops: list[tuple[int, str, list[list[int]], list[str]]], iters: int = 1) -> list[RawEvent]:
    """`iters` iterations, each running the lines in order, one op (name, input shapes, dtypes) a line."""
    events = []
    for it in range(iters):
        o = it * 100_000
        events.append(RawEvent(f"oplens.iter:{it}", T, o, o + 1000 * (len(ops) + 1)))
        for i, (line, name, shapes, dtypes) in enumerate(ops):
            start = o + 1000 * i + 10
            events.append(RawEvent(f"oplens.line:{line}", T, start, start + 900))
            events.append(RawEvent(name, T, start + 100, start + 800, shapes=shapes, dtypes=dtypes))
    return events


def chain_of(a: Attribution) -> list[tuple[str, str]]:
    return [(i.message, i.evidence) for i in fusable_chains(a, "CPU")]


def test_the_stored_rmsnorm_naive_is_one_fusable_chain_with_its_intermediates() -> None:
    stored = {i["kind"]: i for i in stored_run()["insights"]}
    found = find_insights(stored_attribution(shapes=True), "CPU", False, 5)
    chain = next(i for i in found if i.kind == "fusable_chain")
    assert chain.line == 25
    assert chain.message == stored["fusable_chain"]["message"]  # mul, mean, add, rsqrt, mul, mul: torch.rms_norm
    # mul, mean (its input: a reduction's output size is not recorded), add, rsqrt, mul: 5 tensors, 770 KiB
    assert chain.evidence == stored["fusable_chain"]["evidence"]
    assert "770.0 KiB" in chain.evidence
    hot = next(i for i in found if i.kind == "hot_line")
    assert hot.line == 25 and hot.evidence == stored["hot_line"]["evidence"]
    assert [i.line for i in found] == sorted(i.line for i in found)


def test_without_input_shapes_the_chain_is_found_without_sizes() -> None:
    (chain,) = [i for i in find_insights(stored_attribution(), "CPU", False, 5) if i.kind == "fusable_chain"]
    assert "torch.rms_norm" in chain.message and "intermediate tensors" not in chain.evidence


def test_the_chain_reads_the_work_rules_table_of_ops_and_dtypes() -> None:
    # sin and cos are elementwise ops in the one table (the insights' own list once lacked them)
    ops = [(11, "aten::sin", [[1024]], ["float"]), (12, "aten::cos", [[1024]], ["float"]),
           (13, "aten::mul_", [[1024], []], ["float", "Scalar"])]  # fmt: skip
    ((message, evidence),) = chain_of(attribute(one_op_per_line(ops), 1, 10))
    assert "3 separately dispatched ops (sin, cos, mul)" in message
    assert evidence.endswith("; 2 intermediate tensors materialised, 8.0 KiB per iteration")
    # a float8 element is one byte (it was four: a dtype the insights' table did not list)
    f8 = [(line, name, shapes, ["c10::Float8_e4m3fn"] * len(shapes)) for line, name, shapes, _ in ops]
    ((_, evidence),) = chain_of(attribute(one_op_per_line(f8), 1, 10))
    assert evidence.endswith("2 intermediate tensors materialised, 2.0 KiB per iteration")
    # a dtype the table does not know has no size: the chain is said, its size is not guessed
    unknown = [(line, name, shapes, ["c10::Float8_e4m3fnuz"] * len(shapes)) for line, name, shapes, _ in ops]
    ((message, evidence),) = chain_of(attribute(one_op_per_line(unknown), 1, 10))
    assert "(sin, cos, mul)" in message and "intermediate tensors" not in evidence
    # broadcasting: the intermediate is the inputs' broadcast shape, not the largest input
    bc = [(11, "aten::add", [[64, 1], [1, 64]], ["float", "float"]), (12, "aten::exp", [[64, 64]], ["float"]),
          (13, "aten::exp", [[64, 64]], ["float"])]  # fmt: skip
    ((_, evidence),) = chain_of(attribute(one_op_per_line(bc), 1, 10))
    assert evidence.endswith("2 intermediate tensors materialised, 32.0 KiB per iteration")  # 2 × 64·64·4


def test_what_breaks_a_chain() -> None:
    x: tuple[list[list[int]], list[str]] = ([[256]], ["float"])
    assert chain_of(attribute(one_op_per_line([(11, "aten::exp", *x), (12, "aten::log", *x)]), 1, 10)) == []  # two
    apart = [(11, "aten::exp", *x), (12, "aten::log", *x), (15, "aten::exp", *x), (16, "aten::log", *x)]
    assert chain_of(attribute(one_op_per_line(apart), 1, 10)) == []  # three lines apart: two chains of two
    foreign = [(11, "aten::exp", *x), (12, "mylib::exp", *x), (13, "aten::log", *x)]
    assert chain_of(attribute(one_op_per_line(foreign), 1, 10)) == []  # an op of another namespace: unknown
    matmul = [(11, "aten::exp", *x), (12, "aten::mm", [[16, 16], [16, 16]], ["float"] * 2), (13, "aten::log", *x)]
    assert chain_of(attribute(one_op_per_line(matmul), 1, 10)) == []
    softmax = [(11, "aten::exp", *x), (12, "aten::sum", *x), (13, "aten::div", [[256], [1]], ["float"] * 2)]
    ((message, _),) = chain_of(attribute(one_op_per_line(softmax), 1, 10))
    assert "torch.softmax computes this in one fused kernel" in message


def test_host_device_copies_and_syncs_on_a_device_only() -> None:
    ops: list[tuple[int, str, list[list[int]], list[str]]] = [
        (11, "aten::copy_", [[8], [8]], ["float", "float"]),
        (12, "aten::item", [[]], ["float"]),
        (13, "aten::add", [[8], [8]], ["float", "float"]),
    ]
    a = attribute(one_op_per_line(ops), 1, 10)
    found = [(i.line, i.kind) for i in find_insights(a, "NeuronCore", True, 1)]
    assert [f for f in found if f[1] in ("host_to_device_copy", "device_sync")] == [
        (11, "host_to_device_copy"), (12, "device_sync")]  # fmt: skip
    on_cpu = {i.kind for i in find_insights(a, "CPU", False, 1)}
    assert not on_cpu & {"host_to_device_copy", "device_sync"}


def test_a_compiled_region_is_named_with_the_lines_it_fused() -> None:
    region = "Torch-Compiled Region: 0/0"
    events = [
        RawEvent("oplens.iter:0", T, 0, 10_000),
        RawEvent("oplens.line:11", T, 100, 9_000),
        RawEvent(region, T, 200, 8_000),
        RawEvent("aten::mm", T, 300, 7_000),
    ]
    fused = {region: [SourceRef("m.py", 3, "block"), SourceRef("m.py", 5, "block")]}
    (insight,) = [i for i in find_insights(attribute(events, 1, 10, fused=fused), "CPU", False, 1)
                  if i.kind == "compiled_region"]  # fmt: skip
    assert insight.line == 11 and insight.message == f"{region} runs lines 3–5 of block as one compiled call"
    assert insight.evidence == "1 call per iteration, 1 top-level ops on this line"


def test_noisy_lines_of_the_stored_run_name_iterations_or_calls() -> None:
    a = stored_attribution()
    noisy = [i for i in find_insights(a, "CPU", False, 5) if i.kind == "noisy"]
    assert [i.line for i in noisy] == [s.line for s in a.lines if s.noisy and s.pct_device >= 5.0] == [25]
    assert noisy[0].evidence == "median 9.45 ms, min 139.9 µs, max 23.79 ms over 5 iterations"
    (capture,) = [i for i in find_insights(a, "CPU", False, 5, capture=True) if i.kind == "noisy"]
    assert "between calls" in capture.message and "--calls" in capture.message
    assert capture.evidence.endswith("over 5 calls")


def test_the_hot_line_follows_the_shares_not_a_mean_one_slow_iteration_moved() -> None:
    """The listing ranks lines by their share (a trimmed mean); a line whose mean one slow iteration
    inflated is not named hot over the line the shares put first (tests/worker/test_steady_state.py met it)."""
    a = stored_attribution()
    first, second = sorted(a.lines, key=lambda s: -s.pct_device)[:2]
    first.pct_device, second.pct_device = 60.0, 35.0
    second.self_device_us = first.self_device_us * 3  # one slow iteration: its mean leads, its share does not
    (hot,) = hot_line(a, "CPU")
    assert hot.line == first.line and "60.0 %" in hot.message
