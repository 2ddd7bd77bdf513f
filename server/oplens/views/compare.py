"""The comparison page (`oplens compare`, Compare Functions…): each variant's time per iteration, its
operator calls and its speed-up against the first (the baseline) with the speed-up's 95 % interval and
its verdict ("no measurable difference" where the interval holds 1), written once for the results page
and the CLI; the summary sentence names the fastest variant that is measurably faster, and how the
variants were measured. The figures themselves are `engine.compare`'s."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from oplens.backends import registry
from oplens.engine.compare import FASTER, MIN_EFFECT, SAME, compare_rows, method_words
from oplens.records.errors import OpLensError
from oplens.records.format import device_label, fmt_count, fmt_speedup, fmt_us
from oplens.records.run import Run


@dataclass(frozen=True)
class CompareRow:
    """One variant, its figures written (per iteration)."""

    run_id: str  # a click shows this run
    variant: str  # the function's qualified name
    self_device_us: float  # the bar's length, against the largest
    self_device: str
    self_cpu: str
    op_calls: str
    wall: str  # the median wall time of a call
    speedup: str  # the baseline's time per call over this variant's: `1.00×` for the baseline, `–` without device time
    interval: str  # the speed-up's 95 % interval, `1.71×–2.05×` ('' for the baseline)
    verdict: str  # faster | slower | no measurable difference | baseline
    compile: str  # `compile on first call ~1.20 s, not included`; '' where nothing compiled


@dataclass(frozen=True)
class CompareFailure:
    """A variant that could not be measured, and why (the others are still compared)."""

    variant: str  # FILE::QUALNAME
    message: str


@dataclass(frozen=True)
class ComparePage:
    """The `page` of an `oplens.compare` answer: the variants side by side, the first the baseline."""

    label: str  # `CPU`, `NEURON`, ...: the time column's label (`DEVICE` where the variants ran on several)
    with_cpu: bool  # a device apart from the host: each variant's host CPU time is a column too
    rows: list[CompareRow]
    summary: str  # the fastest variant against the baseline, in a sentence; '' for one variant
    method: str  # how the variants were measured and the speed-ups estimated, in a sentence
    failed: list[CompareFailure] = dataclasses.field(default_factory=list)  # the variants not measured

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def compare_page(runs: Sequence[Run], failed: Sequence[tuple[str, OpLensError]] = (),
                 figures: list[dict[str, Any]] | None = None) -> ComparePage:  # fmt: skip
    """The page of `runs` compared, in their order (the first is the baseline); `failed`: the variants that could
    not be measured, with why; `figures`: their `compare_rows`, where the caller has them (each speed-up's
    interval is 2,000 bootstrap resamples: made once)."""
    figures = compare_rows(list(runs)) if figures is None else figures
    labels = list(dict.fromkeys(device_label(r["device_label"]) for r in figures))
    label = labels[0] if len(labels) == 1 else "DEVICE"
    # mixed backends: each row's CPU time is its own, so the column stays
    with_cpu = not runs or any(registry.facts_of(r.backend.name).on_device for r in runs)
    rows = [CompareRow(
        run_id=r["run_id"], variant=r["variant"], self_device_us=r["self_device_us"],
        self_device=fmt_us(r["self_device_us"]), self_cpu=fmt_us(r["self_cpu_us"]), op_calls=fmt_count(r["op_calls"]),
        wall=fmt_us(r["wall_median_us"]), speedup="1.00×" if i == 0 else fmt_speedup(r["speedup"]),
        interval="" if i == 0 else fmt_interval(*r["speedup_interval"]), verdict=r["verdict"],
        compile=f"compile on first call ~{fmt_us(r['compile_us'])}, not included" if r["compile_us"] > 0 else "",
    ) for i, r in enumerate(figures)]  # fmt: skip
    methods = sorted({r["method"] for r in figures[1:] if r["method"]})
    return ComparePage(label=label, with_cpu=with_cpu, rows=rows, summary=_summary(figures, label),
                       method="; ".join(method_words(m) for m in methods) + (
                           f". Faster or slower only where the whole interval is beyond {MIN_EFFECT:.0%}" if methods else ""),
                       failed=[CompareFailure(name, e.message) for name, e in failed])  # fmt: skip


def fmt_interval(low: float, high: float) -> str:
    """A speed-up's interval: `1.71×–2.05×`; '' where there is none."""
    if low <= 0 or high <= 0:
        return ""
    return f"{fmt_speedup(low)}–{fmt_speedup(high)}"


def _summary(figures: list[dict[str, Any]], label: str) -> str:
    if len(figures) < 2:
        return ""
    base = figures[0]
    faster = [r for r in figures[1:] if r["verdict"] == FASTER]
    if faster:
        best = max(faster, key=lambda r: r["speedup"])  # the first of the fastest
        calls = "" if best["op_calls"] == 1 else "s"
        return (f"{best['variant']} takes {fmt_us(best['self_device_us'])} of {label} time per iteration against "
                f"{fmt_us(base['self_device_us'])} for {base['variant']}: {fmt_speedup(best['speedup'])} faster "
                f"({fmt_interval(*best['speedup_interval'])} at 95 %), in {fmt_count(best['op_calls'])} operator "
                f"call{calls} instead of {fmt_count(base['op_calls'])}.")  # fmt: skip
    same = [r["variant"] for r in figures[1:] if r["verdict"] == SAME]
    if same:
        return (f"No variant is measurably faster than {base['variant']} ({fmt_us(base['self_device_us'])} of "
                f"{label} time per iteration): no measurable difference for {', '.join(same)} (the 95 % interval of "
                f"the speed-up holds 1×, or stays within {MIN_EFFECT:.0%} of it).")  # fmt: skip
    return f"No variant is faster than {base['variant']} here ({fmt_us(base['self_device_us'])} of {label} time per iteration)."
