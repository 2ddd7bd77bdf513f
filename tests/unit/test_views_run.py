"""One run's results page, built by the server (`oplens.views.run`, issue 32 part 1): its header's figures and
sentences, each line's cells (time, share, ops, memory, bound, tooltip), each op's cells and the artifacts.
Assertions moved here from the extension's tests with the formatting: shared/format.test.ts (counts, shares,
device labels), shared/roofline.test.ts (the memory and bound cells) and src/results/runView.test.ts (each
op's line).

The runs are extension/test/fixtures/rmsnorm_naive.cpu.result.json (a real CPU run) and
rmsnorm_naive.ranks.result.json (it made up as three ranks merged)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from oplens.lsp.views import hint_label
from oplens.records.format import device_label, fmt_count, fmt_share
from oplens.records.run import Run
from oplens.views.run import RunPage, run_page

FIXTURES = Path(__file__).resolve().parents[2] / "extension" / "test" / "fixtures"
Json = dict[str, Any]


def load(name: str) -> Json:
    data: Json = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return data


@pytest.fixture()
def naive() -> Json:
    return load("rmsnorm_naive.cpu.result.json")


def page_of(data: Json, **kwargs: Any) -> RunPage:
    return run_page(Run.from_dict(data), **kwargs)


def test_header_of_a_cpu_run(naive: Json) -> None:
    p = page_of(naive)
    assert (p.label, p.with_cpu, p.use_device, p.merged, p.ranks_badge) == ("CPU", False, True, False, "")
    assert [(s.label, s.value, s.note) for s in p.stats] == [
        ("Self CPU", "19.57 ms", "per iteration"),
        ("Operator calls", "6", "per iteration"),
        ("Wall", "11.54 ms", "median; 1.68 ms – 76.34 ms"),
    ]
    assert p.where_line == 23
    assert p.sub == "x86_64 · torch 2.13.0+cpu · 5 iterations after 3 warm-up"
    assert (p.args, p.created) == ("make_inputs(2,128,256)", "2026-11-29 10:30:34 UTC")
    assert (p.stalled, p.unattributed, p.outside, p.note, p.warnings) == ("", "", "", "", [])
    assert p.lines_title == "Lines · Self CPU per iteration" and p.time_head == "Self CPU"
    assert p.timings == "Worker time: import 28 ms · warmup 288 ms · profile 8.3 s · processing 31 ms · export 1 ms"
    assert [(a.label, a.path, a.note) for a in p.artifacts] == [
        ("Framework trace", "trace.json", "(Chrome trace)"),
        ("Worker log", "worker.log", "(your function’s stdout and stderr)"),
    ]


def test_header_on_a_device(naive: Json) -> None:
    d = copy.deepcopy(naive)
    d["backend"] = {**d["backend"], "name": "neuron", "device_label": "neuron", "note": "auto chose neuron"}
    d["totals"] = {**d["totals"], "unattributed_device_us": 12.5, "collective_us": 40.0}
    d["compile"] = {**d["compile"], "first_call_us": 2_500_000.0, "compile_us": 2_400_000.0}
    p = page_of(d)
    assert (p.label, p.with_cpu, p.note) == ("NEURON", True, "auto chose neuron")
    assert [s.label for s in p.stats] == ["Self NEURON", "Self CPU", "In collectives", "Operator calls", "Wall", "First call"]
    assert p.stats[-1].value == "2,500.00 ms" and p.stats[-1].note == "2,400.00 ms compiling"
    assert p.unattributed == "12.5 µs of device time had no launching op and is in no line."


def test_no_device_time(naive: Json) -> None:
    d = copy.deepcopy(naive)
    d["totals"] = {**d["totals"], "self_device_us": 0.0}
    p = page_of(d)
    assert not p.use_device
    assert p.lines_title == "Lines · Self CPU (no device time in this run) per iteration" and p.time_head == "Self CPU"


def test_line_cells(naive: Json) -> None:
    p = page_of(naive)
    run = Run.from_dict(naive)
    assert [r.line for r in p.lines] == [ln.line for ln in run.lines]  # the run's lines, in its order
    first = p.lines[0]
    assert (first.time, first.share, first.ops, first.mark) == ("9.04 ms", "46.2 %", "1 op", "")
    assert first.tooltip.split("\n") == ["line 25: Self CPU 9.04 ms (46.2 %)",
                                        "median 9.45 ms, min 139.9 µs, max 23.79 ms — noisy", "aten::mul ×1 9.04 ms"]
    # the largest five ops, largest first
    assert p.lines[1].tooltip.split("\n")[2:] == ["aten::sum ×1 4.75 ms", "aten::mean ×1 50.4 µs", "aten::div_ ×1 45.9 µs",
                                                  "aten::_to_copy ×1 29.2 µs", "aten::empty_strided ×1 9.1 µs"]  # fmt: skip
    # the share and time read like the server's inlay hints
    for row, line in zip(p.lines, run.lines, strict=True):
        assert f"{row.time} · {row.share}" == hint_label(line)
    assert not p.with_memory and not p.with_bound and first.memory == "" and first.bound == ""


def test_memory_and_bound_cells(naive: Json) -> None:
    d = copy.deepcopy(naive)
    d["totals"] = {**d["totals"], "memory": "device", "peak_bytes": 33603584}
    line = d["lines"][0]
    line.update(bound="memory", roofline_pct=12.32, floor_us=2092.3, headroom_us=14887.9, alloc_bytes=16777216,
                freed_bytes=0, peak_bytes=33603584)  # fmt: skip
    p = page_of(d)
    assert p.with_memory and p.with_bound
    assert p.stats[-1].label == "Peak memory" and (p.stats[-1].value, p.stats[-1].note) == ("32.0 MiB", "device, in one call")
    row = p.lines[0]
    assert row.bound == "memory 12 %"
    assert row.bound_title == "memory-bound · 12 % of the roofline · floor 2.09 ms, 14.89 ms to win"
    assert row.memory == "16.0 MiB / 32.0 MiB"
    assert row.memory_title == "device memory in one call: allocated 16.0 MiB, freed 0 B, peak 32.0 MiB"
    assert "memory-bound · 12 % of the roofline" in row.tooltip
    assert p.lines[1].memory == "" and p.lines[1].bound == ""  # allocated nothing, no ceilings
    assert p.memory_head_title.startswith("device memory in one call")

    def cell(**changes: Any) -> tuple[str, str]:
        d2 = copy.deepcopy(d)
        d2["lines"][0].update(changes)
        r = page_of(d2).lines[0]
        return r.bound, r.bound_title

    assert cell(roofline_pct=4.54)[0] == "memory 4.5 %"
    assert cell(bound="") == ("", "")
    assert cell(bound="host", roofline_pct=None)[0] == "host"
    assert cell(bound="unknown", roofline_pct=None, floor_us=None) == ("unknown", "bound unknown")
    assert cell(above_ceiling="memory", roofline_pct=None)[0] == "memory, in cache"
    assert cell(bound="compute", above_ceiling="compute", dtype="bfloat16", roofline_pct=None, floor_us=5, headroom_us=0) == (
        "compute, above peak",
        "compute-bound · above the bfloat16 ceiling: another dtype or engine · floor 5.0 µs, 0.0 µs to win",
    )
    assert cell(bound="overhead", roofline_pct=100.0)[0] == "overhead 100 %"
    assert cell(bound="host", above_ceiling="memory", roofline_pct=None)[0] == "host, in cache"


def test_op_cells(naive: Json) -> None:
    p = page_of(naive)
    run = Run.from_dict(naive)
    assert len(p.ops) == len(run.ops)
    by_name = {o.name: row for o, row in zip(run.ops, p.ops, strict=True)}
    mul = by_name["aten::mul"]
    assert (mul.calls, mul.self_cpu, mul.self_device, mul.share) == ("3", "14.60 ms", "14.60 ms", "74.6 %")
    # each op points at the line where it spends the most: x * x, the largest of the three muls
    assert mul.line == 25 and by_name["aten::rsqrt"].line == 28
    assert all(row.line is not None for row in p.ops)
    assert mul.title == "aten::mul: mostly on line 25 (click to go there)"


def test_insights_op_heads_and_the_run(naive: Json) -> None:
    d = copy.deepcopy(naive)
    d["backend"] = {**d["backend"], "name": "neuron", "device_label": "NEURON"}
    d["insights"] = [{"line": 26, "kind": "host_to_device_copy", "message": "copies", "evidence": "aten::_to_copy"},
                     {"line": 25, "kind": "straggler", "message": "waits", "rank": 1}]  # fmt: skip
    p = page_of(d)
    assert [(i.line, i.where, i.tag, i.rank_tag, i.message, i.evidence) for i in p.insights] == [
        (26, "L26", "host→device copy", "", "copies", "aten::_to_copy"), (25, "L25", "straggler", "rank 1", "waits", "")]
    assert (p.ops_device_head, p.ops_share_head, p.ops_filter) == ("Self NEURON", "% NEURON", "Filter 11 operators")
    assert p.run_dir == f"{d['run_id']} · {d['run_dir']}"


def test_a_merged_run_and_a_rank(naive: Json) -> None:
    merged = load("rmsnorm_naive.ranks.result.json")
    p = page_of(merged)
    assert p.merged and p.ranks_badge == "3 ranks"
    assert [(s.label, s.value, s.note) for s in p.stats[:3]] == [
        ("Self CPU", "25.97 ms", "per iteration, mean over ranks"),
        ("Ranks", "3", "20.10–37.68 ms · slowest rank 1"),
        ("In collectives", "456.7 µs", "per iteration, mean over ranks"),
    ]
    assert p.lines_title == "Lines · Self CPU per iteration, mean over ranks"
    x_sq = next(r for r in p.lines if r.mark)
    assert x_sq.mark == "⚠ rank 1 " and "— ⚠ rank 1 is the straggler" in x_sq.tooltip
    assert "; across 3 ranks 14.60 ms" in p.ops[0].title
    collective = next(r for r, o in zip(p.ops, Run.from_dict(merged).ops, strict=True) if o.category == "collective")
    assert collective.category_title.startswith("a collective op")
    one = page_of(naive, distributed=Run.from_dict(merged), rank=1)
    assert one.ranks_badge == "rank 1" and one.stats[0].note == "per iteration"


def test_many_pairs_are_cut(naive: Json) -> None:
    d = copy.deepcopy(naive)
    d["artifacts"]["device_profile_dir"] = "neuron/profile"
    d["artifacts"]["neff_ntff_pairs"] = [{"hash": f"h{i}", "neff": f"n{i}.neff", "ntff": f"n{i}.ntff",
                                          "ntff_bytes": 0 if i == 0 else 3 * 2**20} for i in range(10)]  # fmt: skip
    labels = [(a.label, a.note) for a in page_of(d).artifacts]
    assert labels[1] == ("Device profile", "(10 NEFF/NTFF pairs)")
    assert labels[2] == ("NEFF h0", "")  # no profile output apart from the device profile
    assert ("NTFF h0", "(empty: this NeuronCore ran nothing)") in labels and ("NTFF h1", "(3.0 MiB)") in labels
    more = labels.index(("", "… 2 more pairs"))
    assert more < labels.index(("Worker log", "(your function’s stdout and stderr)"))


def test_small_formatters() -> None:
    """As shared/format.test.ts had them for the webview's twins."""
    assert [fmt_count(n) for n in (6, 1200, 1.5, 1 / 3)] == ["6", "1,200", "1.5", "0.33"]
    assert [device_label(s) for s in ("neuron", " CUDA ", "")] == ["NEURON", "CUDA", "DEVICE"]
    shares = (0, 0.04, 0.05, 46.222241289344126, 99.99, 100)
    assert [fmt_share(p) for p in shares] == ["0.0 %", "0.0 %", "0.1 %", "46.2 %", "100.0 %", "100.0 %"]
