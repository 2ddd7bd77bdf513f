"""How OpLens writes times for people (shared by the CLI and the language server)."""

from __future__ import annotations

import math

from oplens.records.run import CompiledRegion, DeviceTimeSources, MeasuredEfficiency, Run


def fmt_us(us: float) -> str:
    """`1164.5` → `1.16 ms`; `125` → `125.0 µs`."""
    if us >= 1000:
        return f"{us / 1000:,.2f} ms"
    return f"{us:,.1f} µs"


def fmt_share(pct: float) -> str:
    return f"{pct:.1f} %"


def fmt_bytes(n: float) -> str:
    """`3 * 2**20` → `3.0 MiB`; smaller sizes in KiB, under 1 KiB in bytes."""
    if n < 1024:
        return f"{n:,.0f} B"
    return f"{n / 2**20:,.1f} MiB" if n >= 2**20 else f"{n / 1024:,.1f} KiB"


def fmt_flops(n: float) -> str:
    """`2.5e9` → `2.50 GFLOP`: floating-point operations, in steps of 1000."""
    for unit, scale in (("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if n >= scale:
            return f"{n / scale:,.2f} {unit}"
    return f"{n:,.0f} FLOP"


def fmt_ratio(ratio: float) -> str:
    """A change as a user reads it: `2.1×` from 1.5 times up, else `+35 %` / `-40 %`."""
    if ratio >= 1.5:
        return f"{ratio:.1f}×"
    return f"{(ratio - 1) * 100:+.0f} %"


def fmt_count(n: float) -> str:
    """Call counts are means per iteration: `3` → `3`, `1200` → `1,200`, `1.5` → `1.5`, `0.333…` → `0.33`."""
    if not math.isfinite(n):
        return "–"
    if float(n).is_integer():
        return f"{int(n):,}"
    rounded = float(f"{n:.2f}")  # two decimals at most, no trailing zero (as JavaScript's Number(n.toFixed(2)))
    return str(int(rounded)) if rounded.is_integer() else repr(rounded)


def fmt_speedup(x: float) -> str:
    """`6.0` → `6.00×`, `12.34` → `12.3×`; no speed-up to give (0: no device time) → `–`."""
    if not math.isfinite(x) or x <= 0:
        return "–"
    return f"{x:.1f}×" if x >= 10 else f"{x:.2f}×"


def fmt_change(verdict: str, ratio: float | None) -> str:
    """A diff's verdict as a mark: `▲ 2.1×` or `▲ 35 %` slower, `▼ 40 %` faster (time saved),
    `new`; nothing where the line is the same (or removed)."""
    if verdict == "new":
        return "new"
    if verdict not in ("slower", "faster"):
        return ""
    arrow = "▲" if verdict == "slower" else "▼"
    if ratio is None:
        return arrow
    if verdict == "slower" and ratio >= 1.5:
        return f"{arrow} {ratio:.1f}×"
    return f"{arrow} {abs(ratio - 1) * 100:.0f} %"


def verdict_phrase(verdict: str, ratio: float | None, than: str = "previous run") -> str:
    """A function's verdict as the totals lens ends: `▲ 2.1× slower than previous run`, `▼ 35 % faster
    than previous run`, `same as previous run` (`than`: another run, `the run of 2026-12-01 10:30:00`)."""
    if verdict in ("slower", "faster"):
        return f"{fmt_change(verdict, ratio)} {verdict} than {than}"
    return f"same as {than}"


def fmt_p(p: float) -> str:
    """A test's p-value: `0.0123` → `0.012`, below 1e-4 `< 0.0001`."""
    if p < 1e-4:
        return "< 0.0001"
    rounded = float(f"{p:.2g}")  # two significant digits, as JavaScript's toPrecision(2)
    return f"{rounded:.{max(0, 1 - math.floor(math.log10(rounded)))}f}"


def when(created: str) -> str:
    """A run's time as the server's local clock read: `2026-12-01T10:30:00+0000` → `2026-12-01 10:30:00`."""
    text = created.replace("T", " ", 1)
    return text[:-5] if len(text) > 5 and text[-5] in "+-" and text[-4:].isdigit() else text


def device_label(label: str) -> str:
    """The device's column label as torch.profiler writes it (`NEURON`, `CUDA`, `CPU`); `DEVICE` where none is known."""
    return label.strip().upper() or "DEVICE"


def fmt_us_range(lo: float, hi: float) -> str:
    """A range with its unit once where both ends share it: `9.01–27.04 ms`, `923.5 µs–21.02 ms`."""
    a, b = fmt_us(lo), fmt_us(hi)
    if a == b:
        return a
    num, _, unit = a.rpartition(" ")
    return f"{num}–{b}" if num and unit == b.rpartition(" ")[2] else f"{a}–{b}"


def fmt_us_span(lo: float, hi: float) -> str:
    """A range in few characters, for an inlay hint (VS Code cuts a line's hints beyond 43
    characters by default): both ends in the unit of the larger, to about three digits:
    `0.8–23.0 ms`, `1.14–3.85 ms`, `75–113 µs`, `9.5–9.8 µs`."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "–"
    ms = abs(hi) >= 1000
    scale = 1000.0 if ms else 1.0
    top = abs(hi) / scale
    decimals = 0 if top >= 100 else (1 if top >= 10 else 2) if ms else (0 if top >= 10 else 1)
    a, b = f"{lo / scale:,.{decimals}f}", f"{hi / scale:,.{decimals}f}"
    return f"{b if a == b else f'{a}–{b}'} {'ms' if ms else 'µs'}"


_EIGHTHS = ("", "▏", "▎", "▍", "▌", "▋", "▊", "▉")


def text_bar(fraction: float, width: int = 12) -> str:
    """A bar of `width` characters filled to `fraction` in eighths (`████▍       `); above 0 at least `▏`."""
    f = max(0.0, min(1.0, fraction)) if math.isfinite(fraction) else 0.0
    eighths = math.floor(f * width * 8 + 0.5)  # halves up
    if f > 0 and eighths == 0:
        eighths = 1
    bar = "█" * (eighths // 8) + _EIGHTHS[eighths % 8]
    return bar.ljust(width)


def fmt_roofline_pct(pct: float) -> str:
    """A line's share of the roofline (its floor over its time): `12.3` → `12 %`, `0.42` → `0.4 %`."""
    return f"{pct:.0f} %" if pct >= 10 else f"{pct:.1f} %"


# What a line that beats a ceiling is (LineStat.above_ceiling), in words: the hover, `--view bound`,
# the insight and the results page (shared/roofline.ts, checked against these through format.expected.json).
_ABOVE_SHORT = {"memory": "in cache", "compute": "above peak"}


def fmt_above(above: str, dtype: str = "") -> str:
    """`"memory"` → `above the memory roofline: its data stays in cache`; `"compute", "float32"` →
    `above the float32 ceiling: another dtype or engine`; '' for a line under its ceilings."""
    if above == "memory":
        return "above the memory roofline: its data stays in cache"
    if above == "compute":
        return f"above the {dtype or 'float32'} ceiling: another dtype or engine"
    return ""


def fmt_bound_cell(bound: str, roofline_pct: float | None, above: str = "") -> str:
    """A table cell: `memory 12 %`; a line above a ceiling `memory, in cache` / `compute, above peak`
    (never a % over 100); the bound alone where it has no %; '' without ceilings."""
    if not bound:
        return ""
    if above in _ABOVE_SHORT:
        return f"{bound}, {_ABOVE_SHORT[above]}"
    return bound if roofline_pct is None else f"{bound} {fmt_roofline_pct(roofline_pct)}"


def device_time_sources(dt: DeviceTimeSources) -> list[str]:
    """Each device-time source tried, one line each with its figure and what it found (the CLI after
    a run, `oplens doctor`): `system_trace (used): 412.0 µs per iteration`, `kineto_linked: no figure:
    no device activity in Kineto's results`."""
    out = []
    for name in sorted(set(dt.totals_us) | set(dt.found)):
        figure = f"{fmt_us(dt.totals_us[name])} per iteration" if name in dt.totals_us else "no figure"
        said = f": {dt.found[name]}" if name in dt.found and name != dt.source else ""
        out.append(f"{name}{' (used)' if name == dt.source else ''}: {figure}{said}")
    return out


def fused_split(region: CompiledRegion) -> list[str]:
    """A compiled region's device time per line it fused (the hover, the CLI): `line 25 (rmsnorm)
    12.0 µs, 40 %`; where there is no split, its note (how to get one)."""
    if not region.split:
        return [region.split_note] if region.split_note else []
    return [f"line {s.line}{f' ({s.function})' if s.function else ''} {fmt_us(s.self_device_us)}, {s.pct:.0f} %"
            for s in region.split]  # fmt: skip


def outliers_sentence(run: Run) -> str:
    """The calls the run's figures leave out as stalled, in words (`Totals.outliers.note`, written by
    analysis/outliers.py): the CLI, the hover, the notebook and the results page; "" where none was."""
    o = run.totals.outliers
    return o.note if o is not None else ""


def outside_sentence(run: Run) -> str:
    """A notebook statement's own time around the function's calls (its arguments, `-f`'s caller), which is not
    in the run's figures (`Totals.outside_device_us`); "" where there is none worth a line (under 1 % of the
    function's)."""
    outside, total = run.totals.outside_device_us, run.totals.self_device_us
    if outside <= 0.01 * total:
        return ""
    return (f"The statement's own work around {run.target.qualname}'s calls: {run.backend.device_label} "
            f"{fmt_us(outside)} per iteration, not the function's (not in its lines or totals)")  # fmt: skip


def fmt_measured(m: MeasuredEfficiency) -> str:
    """A line's (or the function's) efficiency as the device measured it (Neuron Explorer's per framework op
    tables): `MFU 36.8 %, HFU 39.6 %, MBU 50.9 %, 8.2 KiB HBM per call, 2.88 FLOP/B (ridge 200), throttled
    17.5 %`, each figure only where measured (never a 0 for one that is not), and `over 80 % of its device time`
    where some of its executions' graphs had no figures."""
    parts = [f"{name} {v:.1f} %" for name, v in (("MFU", m.mfu_pct), ("HFU", m.hfu_pct), ("MBU", m.mbu_pct)) if v is not None]
    if m.hbm_bytes is not None:
        parts.append(f"{fmt_bytes(m.hbm_bytes)} HBM per call")
    if m.intensity is not None:
        parts.append(f"{m.intensity:,.2f} FLOP/B" + (f" (ridge {m.ridge:,.0f})" if m.ridge is not None else ""))
    if m.throttled_pct is not None:
        parts.append(f"throttled {m.throttled_pct:.1f} %")
    if m.covered_pct < 99.5:
        parts.append(f"over {m.covered_pct:.0f} % of its device time")
    return ", ".join(parts)


def bound_from_words(bound: str, bound_from: str) -> str:
    """`memory-bound (measured)`, `compute-bound (estimated)`, `neither compute- nor memory-bound (measured)`;
    '' without a bound."""
    if not bound:
        return ""
    what = "neither compute- nor memory-bound" if bound == "neither" else f"{bound}-bound"
    return f"{what} ({bound_from})" if bound_from else what
