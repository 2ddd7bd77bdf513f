"""The results page's roofline chart, as words and numbers: which decades each axis spans and their tick
labels, the device's ceilings (the memory slope, one flat ceiling per distinct compute peak: dtypes
within 5 % of each other share one) with their labels, one dot per line with counted work (where it
sits, its share of the time, its bound, its tooltip), what the key and the notes under the chart say;
or the one sentence saying why there is no chart. The webview lays it out (log-log, its own units) and
draws it (`shared/roofline.ts`, `webview/rooflineChart.ts`): every position comes from these numbers,
every word from here.

The chart is log-log: x a line's arithmetic intensity (FLOP per byte, `LineStat.intensity`), y the
FLOP/s it achieved (`LineStat.flop_per_s`: its FLOPs in one call over its time per call; a line without
it is not placed). The ceilings are `Run.device`'s."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from oplens.records.format import fmt_above, fmt_bytes, fmt_flops, fmt_roofline_pct, fmt_us
from oplens.records.run import LineStat, Run

NO_WORK = ("No roofline chart: no line’s work was counted in this run (no call recorded input shapes; runs before "
           "OpLens counted work have none). Profile it again.")  # fmt: skip
NO_CEILINGS = ("No roofline chart: this run has no ceilings for its device. `oplens calibrate` measures them (a "
               "profile does too, once per host); then profile again.")  # fmt: skip
NOT_PLACED = ("No roofline chart: no line with counted FLOPs also moved counted bytes in measurable time (or the run "
              "predates its lines’ achieved FLOP/s: `oplens analyze` it, or profile again).")  # fmt: skip


@dataclass(frozen=True)
class RooflineCeiling:
    """A ceiling of the device: the memory slope (`peak` its bytes/s) or a flat compute ceiling (FLOP/s)."""

    kind: str  # memory | compute
    dtypes: list[str]  # a compute ceiling's dtypes (several where their peaks are within 5 % of each other)
    peak: float
    label: str  # `float32 61.47 GFLOP/s · measured`, `memory 24.1 GB/s · measured`


@dataclass(frozen=True)
class RooflineDot:
    """A line with counted work, placed at its intensity and achieved FLOP/s."""

    line: int
    intensity: float
    flop_per_s: float
    share: float  # its share of the time, 0..1 (the dot's size)
    bound: str  # compute | memory | overhead | host | unknown | none
    above: str  # the ceiling it beats (`LineStat.above_ceiling`: memory | compute); '' under the roofline
    head: str  # the tooltip's first line, `line 25` (the page adds the line's code as the editor has it)
    title: str  # the rest of the tooltip: its bound, its figures (a line each)


@dataclass(frozen=True)
class RooflineView:
    """The run's roofline chart, or (`note`) why there is none."""

    note: str  # why there is no chart; '' where there is one
    x_decades: list[int]  # [lo, hi]: the x axis spans 10**lo .. 10**hi
    y_decades: list[int]
    x_ticks: list[str]  # a label per decade, lo to hi: `0.01`, `1`, `1k`, `10G`
    y_ticks: list[str]
    ceilings: list[RooflineCeiling]  # the memory slope, then the compute ceilings, highest first
    dots: list[RooflineDot]
    key: str  # the key's words after its dots: where the ceilings come from, what a dot is, lines not shown
    above: list[str]  # why some dots sit above the roofline, a sentence per ceiling they beat


def bound_phrase(ln: LineStat) -> str:
    """`memory-bound · 12 % of the roofline · floor 2.09 ms, 14.89 ms to win`: a line's bound as its
    tooltip says it; a line above a ceiling says which instead of a %; '' without ceilings."""
    if not ln.bound:
        return ""
    parts = ["bound unknown" if ln.bound == "unknown" else f"{ln.bound}-bound"]
    if ln.above_ceiling:
        parts.append(fmt_above(ln.above_ceiling, ln.dtype))
    elif ln.roofline_pct is not None:
        parts.append(f"{fmt_roofline_pct(ln.roofline_pct)} of the roofline")
    if ln.floor_us is not None:
        win = f", {fmt_us(ln.headroom_us)} to win" if ln.headroom_us is not None else ""
        parts.append(f"floor {fmt_us(ln.floor_us)}{win}")
    return " · ".join(parts)


def decade_label(exp: int) -> str:
    """A decade's tick label: `0.01`, `1`, `100`, `1k`, `10G`."""
    if exp < 0:
        return f"{10.0**exp:.{-exp}f}"
    prefixes = ("", "k", "M", "G", "T", "P")
    return f"{10 ** (exp % 3)}{prefixes[exp // 3]}" if exp // 3 < len(prefixes) else f"1e{exp}"


def decades(values: Sequence[float], least: int = 2) -> list[int]:
    """Decades [lo, hi] (powers of ten) that hold every value, at least `least` decades wide."""
    logs = [math.log10(v) for v in values if v > 0 and math.isfinite(v)]
    lo, hi = math.floor(min(logs) - 0.15), math.ceil(max(logs) + 0.15)
    while hi - lo < least:
        hi += 1
        if hi - lo < least:
            lo -= 1
    return [lo, hi]


def fmt_bandwidth(bytes_per_s: float) -> str:
    """`2.41e10` → `24.1 GB/s` (decimal, as `oplens calibrate` prints it)."""
    return f"{bytes_per_s / 1e9:,.1f} GB/s"


def roofline_view(run: Run) -> RooflineView:
    """The roofline chart of `run`, or why there is none."""
    with_work = [ln for ln in run.lines if ln.flops is not None and ln.flops > 0]
    d = run.device
    peaks = sorted(((dtype, p) for dtype, p in (d.dtype_peaks if d is not None else {}).items() if p > 0), key=lambda x: -x[1])
    if not with_work:
        return _none(NO_WORK)
    if d is None or not d.bytes_per_s > 0 or not peaks:
        return _none(NO_CEILINGS)
    placed = [ln for ln in with_work if (ln.intensity or 0) > 0 and (ln.flop_per_s or 0) > 0]
    if not placed:
        return _none(NOT_PLACED)
    bw = d.bytes_per_s
    groups: list[tuple[float, list[str]]] = []  # one compute ceiling per distinct peak, highest first
    for dtype, peak in peaks:
        near = next((g for g in groups if abs(g[0] - peak) <= 0.05 * g[0]), None)
        if near is not None:
            near[1].append(dtype)
        else:
            groups.append((peak, [dtype]))
    x = decades([*(ln.intensity or 0 for ln in placed), *(peak / bw for peak, _ in groups)])
    y = decades([*(ln.flop_per_s or 0 for ln in placed), *(peak for peak, _ in groups)])
    origin = "spec" if d.source == "spec" else "measured"
    ceilings = [RooflineCeiling("memory", [], bw, f"memory {fmt_bandwidth(bw)} · {origin}")]
    ceilings += [RooflineCeiling("compute", dtypes, peak, f"{', '.join(dtypes)} {fmt_flops(peak)}/s · {origin}")
                 for peak, dtypes in groups]  # fmt: skip
    use_device = run.totals.self_device_us > 0
    when = f", {d.measured_at[:10]}" if d.measured_at else ""
    source = f"the vendor’s figures for {d.name}" if d.source == "spec" else f"measured on {d.name or 'this host'}{when}"
    unplaced = len(with_work) - len(placed)
    key = (f" · ceilings {source}; achieved FLOP/s = the line’s FLOPs in one call / its self time per call; dot size: its "
           "share of the time")  # fmt: skip
    if unplaced:
        key += f" · {unplaced} line{'' if unplaced == 1 else 's'} with work but no bytes or time not shown"
    return RooflineView(
        note="", x_decades=x, y_decades=y,
        x_ticks=[decade_label(e) for e in range(x[0], x[1] + 1)], y_ticks=[decade_label(e) for e in range(y[0], y[1] + 1)],
        ceilings=ceilings, dots=[_dot(ln, use_device, bound_phrase(ln)) for ln in placed], key=key, above=_above(placed),
    )  # fmt: skip


def _none(note: str) -> RooflineView:
    return RooflineView(note=note, x_decades=[], y_decades=[], x_ticks=[], y_ticks=[], ceilings=[], dots=[], key="", above=[])


def _dot(ln: LineStat, use_device: bool, bound: str) -> RooflineDot:
    time = ln.self_device_us if use_device else ln.self_cpu_us
    rate = ln.flop_per_s or 0.0
    intensity = ln.intensity or 0.0
    figures = (f"{fmt_flops(ln.flops or 0.0)} in {fmt_us(time)} → {fmt_flops(rate)}/s; {fmt_bytes(ln.bytes or 0.0)} moved, "
               f"{intensity:.2f} FLOP/B{f' ({ln.dtype})' if ln.dtype else ''}")  # fmt: skip
    lines = [bound or "no bound (no ceilings for its dtype)", figures]
    if ln.work_estimate:
        lines.append("estimate: compiled graph")
    return RooflineDot(
        line=ln.line, intensity=intensity, flop_per_s=rate,
        share=max(0.0, min(1.0, (ln.pct_device if use_device else ln.pct_cpu) / 100)),
        bound=ln.bound or "none", above=ln.above_ceiling, head=f"line {ln.line}", title="\n".join(lines),
    )  # fmt: skip


def _above(placed: list[LineStat]) -> list[str]:
    """One sentence per ceiling some placed line beats: which lines, and why their dots are above the roofline."""
    notes = []
    for kind in ("memory", "compute"):
        lines = [ln for ln in placed if ln.above_ceiling == kind]
        if not lines:
            continue
        which = f"{'Line' if len(lines) == 1 else 'Lines'} {', '.join(str(ln.line) for ln in lines)}"
        if kind == "memory":
            why = ("the memory ceiling is the device memory’s bandwidth, measured on arrays well past the caches; their "
                   "data stays in cache")  # fmt: skip
        else:
            dtypes = ", ".join(dict.fromkeys(ln.dtype or "float32" for ln in lines))
            why = f"the compute ceiling is the best matmul measured in {dtypes}; another dtype or engine ran them"
        ceiling = "memory roofline" if kind == "memory" else "compute ceiling"
        notes.append(f"{which} {'is' if len(lines) == 1 else 'are'} above the {ceiling}: {why}, so no roofline % is shown.")
    return notes
