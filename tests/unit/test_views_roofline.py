"""The run page's roofline chart as the server writes it (`oplens.views.roofline`, issue 32 part 1): its
decades and tick labels, ceilings and their labels, each dot's numbers and tooltip, the key and the notes;
the words' assertions moved here from extension/shared/roofline.test.ts (which keeps the layout's).

The run is extension/test/fixtures/rmsnorm_naive.cpu.result.json with each line's work, memory and bound
as a real run of rmsnorm_naive on this CPU has them (`oplens profile ... --view bound`)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

from oplens.records.format import fmt_bytes, fmt_flops, fmt_roofline_pct
from oplens.records.run import Run
from oplens.views.roofline import RooflineView, decade_label, fmt_bandwidth, roofline_view
from oplens.views.run import run_page

RUN = Path(__file__).resolve().parents[2] / "extension" / "test" / "fixtures" / "rmsnorm_naive.cpu.result.json"
Json = dict[str, Any]
DEVICE: Json = {"name": "x86_64", "dtype_peaks": {"float32": 61.47e9, "bfloat16": 2.302e9, "float16": 2.279e9},
                "bytes_per_s": 24.06e9, "source": "measured", "measured_at": "2026-12-01T14:18:29.922+00:00"}  # fmt: skip
MEASURED: dict[int, Json] = {
    25: {"self_device_us": 16980.2, "pct_device": 30.4, "flops": 4194304, "bytes": 50331648, "intensity": 0.0833,
         "bound": "memory", "roofline_pct": 12.32, "floor_us": 2092.3, "headroom_us": 14887.9},
    26: {"self_device_us": 7232.4, "pct_device": 12.6, "flops": 4194304, "bytes": 16777216, "intensity": 0.25, "bound": "memory",
         "roofline_pct": 9.64, "floor_us": 697.4, "headroom_us": 6535.0},
    27: {"self_device_us": 30.0, "pct_device": 0.05, "flops": 4096, "bytes": 32776, "intensity": 0.125, "bound": "memory",
         "roofline_pct": 4.54, "floor_us": 1.36, "headroom_us": 28.6},
    28: {"self_device_us": 10.9, "pct_device": 0.02, "flops": 4096, "bytes": 32768, "intensity": 0.125, "bound": "memory",
         "roofline_pct": 12.5, "floor_us": 1.36, "headroom_us": 9.5},
    29: {"self_device_us": 16582.8, "pct_device": 26.7, "flops": 4194304, "bytes": 33570816, "intensity": 0.125,
         "bound": "memory", "roofline_pct": 8.42, "floor_us": 1395.5, "headroom_us": 15187.3},
    30: {"self_device_us": 18655.4, "pct_device": 30.2, "flops": 4194304, "bytes": 33558528, "intensity": 0.125,
         "bound": "memory", "roofline_pct": 7.48, "floor_us": 1395.0, "headroom_us": 17260.4},
}  # fmt: skip
# each line's achieved FLOP/s as the server records it (analysis/roofline.py: its FLOPs over its time per call)
WORK = {n: {**w, "flop_per_s": w["flops"] / (w["self_device_us"] * 1e-6)} for n, w in MEASURED.items()}


def with_work(device: Json | None = DEVICE, work: dict[int, Json] = WORK) -> Run:
    d = json.loads(RUN.read_text(encoding="utf-8"))
    d["device"] = copy.deepcopy(device)
    for line in d["lines"]:
        line.update({"dtype": "float32", **work.get(line["line"], {})})
    return Run.from_dict(d)


def chart(run: Run) -> RooflineView:
    v = roofline_view(run)
    assert not v.note, v.note
    return v


def test_says_why_there_is_no_chart() -> None:
    old = roofline_view(Run.from_dict(json.loads(RUN.read_text(encoding="utf-8"))))  # the fixture predates work and ceilings
    assert re.search("no line’s work was counted", old.note) and "input shapes" in old.note and old.dots == []
    assert "no ceilings" in roofline_view(with_work(None)).note and "oplens calibrate" in roofline_view(with_work(None)).note
    assert "oplens calibrate" in roofline_view(with_work({**DEVICE, "bytes_per_s": 0})).note
    none_placed = {n: {**w, "flop_per_s": None} for n, w in WORK.items()}
    assert "no line with counted FLOPs also moved counted bytes" in roofline_view(with_work(DEVICE, none_placed)).note


def test_dots_and_their_words() -> None:
    v = chart(with_work())
    assert len(v.dots) == 6 and all(d.bound == "memory" for d in v.dots)
    d25 = next(d for d in v.dots if d.line == 25)
    assert d25.flop_per_s == WORK[25]["flop_per_s"] and d25.intensity == 0.0833 and d25.share == 0.304
    assert d25.head == "line 25"
    assert d25.title.startswith("memory-bound · 12 % of the roofline · floor 2.09 ms, 14.89 ms to win\n4.19 MFLOP in 16.98 ms")
    assert "0.08 FLOP/B (float32)" in d25.title
    # the page's tooltip is the server's words after the line and its code (shared/roofline.ts adds the code)
    assert run_page(with_work()).roofline == v


def test_ceilings_ticks_and_key() -> None:
    v = chart(with_work())
    assert (v.x_decades, v.y_decades) == ([-2, 1], [7, 11])  # the decades extension/shared/roofline.test.ts lays out
    assert v.x_ticks == ["0.01", "0.1", "1", "10"] and v.y_ticks == ["10M", "100M", "1G", "10G", "100G"]
    memory = [c for c in v.ceilings if c.kind == "memory"]
    compute = [c for c in v.ceilings if c.kind == "compute"]
    # bfloat16 and float16 peak within 5 % of each other: one line, one label
    assert [c.dtypes for c in compute] == [["float32"], ["bfloat16", "float16"]]
    assert compute[0].label == "float32 61.47 GFLOP/s · measured"
    assert memory[0].label == "memory 24.1 GB/s · measured" and memory[0].peak == 24.06e9
    assert v.key.startswith(" · ceilings measured on x86_64, 2026-12-01; achieved FLOP/s = ")
    assert v.above == []  # none above: nothing to explain


def test_a_spec_device_says_whose_figures() -> None:
    v = chart(with_work({**DEVICE, "source": "spec", "name": "H100 SXM"}))
    assert v.x_ticks == ["0.01", "0.1", "1", "10"] and "1G" in v.y_ticks and "100M" in v.y_ticks
    assert next(c for c in v.ceilings if c.kind == "memory").label.endswith("· spec")
    assert " · ceilings the vendor’s figures for H100 SXM;" in v.key


def test_above_the_roofline() -> None:
    time, bytes_, intensity = 1, 2 * 131072, 0.125  # 128 KiB read and written in a µs: far above 24 GB/s
    above = {"self_device_us": time, "flops": bytes_ * intensity, "bytes": bytes_, "intensity": intensity, "bound": "memory",
             "above_ceiling": "memory", "roofline_pct": None, "floor_us": time, "headroom_us": 0,
             "flop_per_s": (bytes_ * intensity) / (time * 1e-6)}  # fmt: skip
    v = chart(with_work(DEVICE, {**WORK, 27: above}))
    d = next(d for d in v.dots if d.line == 27)
    assert d.above == "memory"
    assert "memory-bound · above the memory roofline: its data stays in cache · floor 1.0 µs, 0.0 µs to win" in d.title
    assert "of the roofline" not in d.title
    assert len(v.above) == 1
    assert re.match(r"^Line 27 is above the memory roofline: .*their data stays in cache, so no roofline % is shown\.$",
                    v.above[0])
    beats = {**WORK[25], "bound": "compute", "above_ceiling": "compute", "roofline_pct": None}
    compute = chart(with_work(DEVICE, {**WORK, 25: beats}))
    assert re.match(r"^Line 25 is above the compute ceiling: .*float32; another dtype or engine ran them", compute.above[0])


def test_flops_the_record_carries_and_lines_left_out() -> None:
    faster = chart(with_work(DEVICE, {**WORK, 25: {**WORK[25], "flop_per_s": 10 * WORK[25]["flop_per_s"]}}))
    assert "→ 2.47 GFLOP/s" in next(d for d in faster.dots if d.line == 25).title
    none = chart(with_work(DEVICE, {**WORK, 26: {**WORK[26], "flop_per_s": None}}))
    assert len(none.dots) == 5 and none.key.endswith(" · 1 line with work but no bytes or time not shown")
    no_bytes = chart(with_work(DEVICE, {**WORK, 27: {"flops": 4096, "bytes": 0, "intensity": None}}))
    assert len(no_bytes.dots) == 5 and "1 line with work" in no_bytes.key


def test_bytes_flops_and_the_roofline_pct() -> None:
    """As extension/shared/roofline.test.ts had them for the webview's twins (format.fmt_bytes, fmt_flops, ...)."""
    assert [fmt_bytes(n) for n in (0, 1023, 16396, 3 * 2**20, 50380800, 5 * 2**30)] == [
        "0 B", "1,023 B", "16.0 KiB", "3.0 MiB", "48.0 MiB", "5,120.0 MiB"]  # fmt: skip
    assert [fmt_flops(n) for n in (2.5e9, 4096, 12)] == ["2.50 GFLOP", "4.10 kFLOP", "12 FLOP"]
    assert f"{fmt_flops(6.147e10)}/s" == "61.47 GFLOP/s" and fmt_bandwidth(2.406e10) == "24.1 GB/s"
    assert [fmt_roofline_pct(p) for p in (0.42, 4.54, 9.96, 12.32, 123.4)] == ["0.4 %", "4.5 %", "10.0 %", "12 %", "123 %"]
    assert [decade_label(e) for e in (-3, -2, -1, 0, 2, 3, 4, 9, 10, 18)] == [
        "0.001", "0.01", "0.1", "1", "100", "1k", "10k", "1G", "10G", "1e18"]  # fmt: skip
