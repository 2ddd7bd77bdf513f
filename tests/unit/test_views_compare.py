"""The comparison page, built by the server (`oplens.views.compare`, issue 32 part 1): every word and figure
the results page and `oplens compare` show of several runs side by side; its assertions moved here from
extension/shared/format.test.ts (the speed-ups) with the formatting.

The runs are extension/test/fixtures/rmsnorm_naive.cpu.result.json, made up as variants of it."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from oplens.cli import render
from oplens.engine.compare import speedup_of
from oplens.records.format import fmt_count, fmt_speedup
from oplens.records.run import Run, SideBySide
from oplens.views.compare import ComparePage, compare_page

RUN = Path(__file__).resolve().parents[2] / "extension" / "test" / "fixtures" / "rmsnorm_naive.cpu.result.json"
Json = dict[str, Any]


@pytest.fixture()
def naive() -> Json:
    data: Json = json.loads(RUN.read_text(encoding="utf-8"))
    return data


def variant(data: Json, qualname: str, device_us: float, op_calls: float, *, backend: Json | None = None,
            compile_us: float = 0.0) -> Run:  # fmt: skip
    d = copy.deepcopy(data)
    d["run_id"] = f"20261201-103000-{qualname}-aaaaaa"
    d["target"]["qualname"] = qualname
    d["totals"] = {**d["totals"], "self_device_us": device_us, "self_cpu_us": device_us * 1.1, "op_calls": op_calls,
                   "wall_us": {**d["totals"]["wall_us"], "median": 1500.0},
                   "device_samples_us": [device_us * f for f in JITTER]}  # fmt: skip
    d["compile"] = {**d["compile"], "compile_us": compile_us}
    if backend is not None:
        d["backend"] = {**d["backend"], **backend}
    return Run.from_dict(d)


# each call's time about the variant's (the same spread for every variant: the speed-ups are the figures' ratios)
JITTER = [1.0, 0.99, 1.01, 0.98, 1.02, 1.0, 0.995, 1.005, 0.97, 1.03]


def three(naive: Json) -> list[Run]:
    return [variant(naive, "rmsnorm_naive", 1164.5, 6), variant(naive, "rmsnorm_fused", 199.3, 1),
            variant(naive, "rmsnorm_compiled", 250.0, 2)]  # fmt: skip


def test_each_variant_written_the_first_the_baseline(naive: Json) -> None:
    page = compare_page(three(naive))
    assert (page.label, page.with_cpu) == ("CPU", False)  # on the host: no separate CPU column
    assert [(r.variant, r.self_device, r.op_calls, r.speedup) for r in page.rows] == [
        ("rmsnorm_naive", "1.16 ms", "6", "1.00×"),
        ("rmsnorm_fused", "199.3 µs", "1", "5.84×"),
        ("rmsnorm_compiled", "250.0 µs", "2", "4.66×"),
    ]
    assert [r.run_id for r in page.rows] == [f"20261201-103000-{v}-aaaaaa" for v in ("rmsnorm_naive", "rmsnorm_fused",
                                                                                    "rmsnorm_compiled")]  # fmt: skip
    assert page.rows[0].self_device_us == 1164.5  # the bars' lengths
    assert (page.rows[0].wall, page.rows[0].self_cpu, page.rows[0].compile) == ("1.50 ms", "1.28 ms", "")


def test_the_summary_names_the_fastest_variant(naive: Json) -> None:
    assert compare_page(three(naive)).summary == (
        "rmsnorm_fused takes 199.3 µs of CPU time per iteration against 1.16 ms for rmsnorm_naive: 5.84× faster "
        "(5.74×–5.95× at 95 %), in 1 operator call instead of 6."
    )
    assert [(r.interval, r.verdict) for r in compare_page(three(naive)).rows] == [
        ("", "baseline"), ("5.74×–5.95×", "faster"), ("4.58×–4.74×", "faster")]
    # two runs of separate processes: their method says so
    assert compare_page(three(naive)).method.startswith("measured in two processes at two moments")
    same = compare_page([variant(naive, "a", 100.0, 2), variant(naive, "b", 100.5, 2)])
    assert same.rows[1].verdict == "no measurable difference" and same.summary == (
        "No variant is measurably faster than a (100.0 µs of CPU time per iteration): no measurable difference for b "
        "(the 95 % interval of the speed-up holds 1×, or stays within 2% of it).")
    slower = [variant(naive, "a", 100.0, 2), variant(naive, "b", 300.0, 3)]
    assert compare_page(slower).summary == "No variant is faster than a here (100.0 µs of CPU time per iteration)."
    assert compare_page(slower[:1]).summary == ""


def test_a_device_backend_has_its_cpu_column_mixed_devices_read_device(naive: Json) -> None:
    neuron = {"name": "neuron", "device_label": "NEURON"}
    runs = [variant(naive, "a", 100.0, 2, backend=neuron), variant(naive, "b", 50.0, 1, backend=neuron)]
    page = compare_page(runs)
    assert (page.label, page.with_cpu) == ("NEURON", True)
    assert "of NEURON time per iteration" in page.summary
    mixed = compare_page([runs[0], variant(naive, "c", 50.0, 1)])
    assert (mixed.label, mixed.with_cpu) == ("DEVICE", True)


def test_no_device_time_no_speed_up_and_a_compile_noted(naive: Json) -> None:
    page = compare_page([variant(naive, "a", 100.0, 2), variant(naive, "b", 0.0, 0, compile_us=1_200_000)])
    assert page.rows[1].speedup == "–"
    assert page.rows[1].compile == "compile on first call ~1,200.00 ms, not included"


def test_the_page_is_the_answers_page_and_the_cli_writes_its_words(naive: Json) -> None:
    runs = three(naive)
    page = compare_page(runs)
    assert page.to_dict()["rows"][1]["speedup"] == "5.84×"
    assert ComparePage(**{**page.to_dict(), "rows": page.rows}) == page
    out = io.StringIO()
    render.compare_table(Console(file=out, width=200, color_system=None), page)
    text = out.getvalue()
    assert "Comparison (per iteration, CPU)" in text and "Speed-up vs rmsnorm_naive" in text
    for row in page.rows:
        assert all(cell in text for cell in (row.variant, row.self_device, row.wall, row.speedup))
    assert "Self CPU" not in text


def test_small_helpers() -> None:
    assert fmt_speedup(5.844) == "5.84×"
    assert fmt_speedup(12.34) == "12.3×"
    assert fmt_speedup(0) == "–"
    assert fmt_count(6) == "6"
    assert fmt_count(1200) == "1,200"
    assert fmt_count(1.5) == "1.5"
    assert fmt_count(1 / 3) == "0.33"
    assert fmt_count(2.999) == "3"


def test_side_by_side_runs_pair_their_rounds_the_host_s_from_its_plain_calls(naive: Json) -> None:
    """Runs of one compare (one group) are paired by round: on the CPU their plain calls (timed without the
    profiler, whose own work shares the function's cores), on a device their profiled device time."""
    def measured(run: Run, index: int, plain: list[float]) -> Run:
        run.config.side_by_side = SideBySide("g1", ["f.py::a", "f.py::b"], index, list(range(10)), plain)
        return run

    a = measured(variant(naive, "a", 200.0, 4), 0, [300.0 * f for f in JITTER])
    b = measured(variant(naive, "b", 100.0, 1), 1, [100.0 * f for f in JITTER])
    speedup, low, high, method = speedup_of(a, b)
    assert method == "interleaved_plain" and speedup == pytest.approx(3.0) and low <= 3.0 <= high
    neuron = {"name": "neuron", "device_label": "NEURON"}
    a = measured(variant(naive, "a", 200.0, 4, backend=neuron), 0, [300.0 * f for f in JITTER])
    b = measured(variant(naive, "b", 100.0, 1, backend=neuron), 1, [100.0 * f for f in JITTER])
    speedup, low, high, method = speedup_of(a, b)
    assert method == "interleaved" and speedup == pytest.approx(2.0)  # the profiled device time's
    assert compare_page([a, b]).method.startswith("measured side by side in one worker")
