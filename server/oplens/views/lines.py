"""A run's figures and the phrases said of them, each written once: its totals (`TotalsCells`), each profiled line's
(`LineCells`), a line's time and share, its spread over the iterations, its memory and bound. The results page
(`views/run.py`), the editor's lenses, hints and hovers (`views/editor.py`, sent by `lsp/views.py`), the terminal
(`cli/render.py`) and the notebook's output cell (`notebook/display.py`) all take them from here; every figure is
written by `records/format.py`."""

from __future__ import annotations

from dataclasses import dataclass

from oplens.analysis.attribution import MARKS_SAID_SHARE, marks_matter, marks_total_us, own_outside_us
from oplens.analysis.insights import SYNCS
from oplens.analysis.roofline import host_us
from oplens.backends import registry
from oplens.records.format import device_label, fmt_bound_cell, fmt_bytes, fmt_count, fmt_share, fmt_us
from oplens.records.overview import AnyRun
from oplens.records.run import LineStat, Run


@dataclass(frozen=True)
class TotalsCells:
    """A run's totals per iteration, written: what the page's header, the lens, the CLI's total line and the
    notebook's headline say."""

    label: str  # the device time's label: `CPU`, `NEURON`
    on_device: bool  # a device apart from the host: the host's CPU time is a figure too
    self_device: str
    self_cpu: str
    op_calls: str  # `1,200`
    wall_median: str
    wall_min: str
    wall_max: str
    noise_floor: str  # `±4.2 %`: the smallest change of the total the run tells from its noise; '' where unknown


def totals_cells(run: AnyRun) -> TotalsCells:
    t = run.totals
    return TotalsCells(
        label=device_label(run.backend.device_label),
        on_device=registry.facts_of(run.backend.name).on_device,
        self_device=fmt_us(t.self_device_us),
        self_cpu=fmt_us(t.self_cpu_us),
        op_calls=fmt_count(t.op_calls),
        wall_median=fmt_us(t.wall_us.median),
        wall_min=fmt_us(t.wall_us.min),
        wall_max=fmt_us(t.wall_us.max),
        noise_floor=fmt_noise_floor(getattr(t, "noise_floor_pct", 0.0)),
    )


def lines_wall_sentence(run: AnyRun) -> str:
    """`The lines' wall times: 50.23 ms of the call's 50.31 ms per call; 80.0 µs outside its lines (the call's entry
    and exit).`; '' where the run did not record them."""
    t = run.totals
    call = getattr(t, "call_wall_us", 0.0)
    if call <= 0:
        return ""
    outside = getattr(t, "outside_lines_us", 0.0)
    out = (f"The lines' wall times: {fmt_us(call - outside)} of the call's {fmt_us(call)} per call; {fmt_us(outside)} "
           "outside its lines (the call's entry and exit).")
    lines: list[LineStat] = getattr(run, "lines", [])
    marks = marks_total_us(lines)
    if marks >= MARKS_SAID_SHARE * call:
        count = sum(ln.marks for ln in lines)
        out += (f" About {fmt_us(marks)} of them is OpLens's own line marks ({fmt_count(count)} per call, measured in "
                "this profile), which a call the profiler does not watch runs without.")
    return out


def fmt_noise_floor(pct: float) -> str:
    """`±4.2 %` (`±12 %` from 10); '' where the run could not say (too few calls)."""
    if pct <= 0:
        return ""
    return f"±{pct:.0f} %" if pct >= 10 else f"±{pct:.1f} %"


def iterations_phrase(run: Run) -> str:
    """`5 iterations after 3 warm-up`: how a function profiled on its own ran."""
    return f"{run.config.iters} iterations after {run.config.warmup} warm-up"


@dataclass(frozen=True)
class LineCells:
    """One profiled line's figures, written: the page's row, the CLI's tables, the notebook's rows, the hint."""

    line: int
    self_device: str
    self_cpu: str
    share_device: str  # `12.3 %`
    share_cpu: str
    op_calls: str  # `3`, `1,200`, `1.5`
    ops: str  # `3 ops`
    memory: str  # `16.0 MiB / 32.0 MiB` (allocated / peak); '' where the line allocated nothing and saw no peak
    bound: str  # `memory 12 %`, `memory, in cache`, `measured memory`; '' where the run had no ceilings
    wall: str  # the line's host wall time per call; '' where the run did not record it (older runs)
    outside_ops: str  # of it, outside every operator; '' where that is under OUTSIDE_SHOWN_SHARE of it
    marks: str  # of that, OpLens's own line marks (an estimate); '' where they are not worth saying (marks_matter)


def line_cells(ln: LineStat) -> LineCells:
    return LineCells(
        line=ln.line,
        self_device=fmt_us(ln.self_device_us),
        self_cpu=fmt_us(ln.self_cpu_us),
        share_device=fmt_share(ln.pct_device),
        share_cpu=fmt_share(ln.pct_cpu),
        op_calls=fmt_count(ln.op_calls),
        ops=f"{fmt_count(ln.op_calls)} op{'' if ln.op_calls == 1 else 's'}",
        memory=memory_cell(ln),
        bound=bound_cell(ln),
        wall=fmt_us(ln.wall_us) if ln.wall_us > 0 else "",
        outside_ops=fmt_us(ln.outside_ops_us) if _outside_shown(ln) else "",
        marks=f"~{fmt_us(ln.marks_us)}" if marks_matter(ln) else "",
    )


OUTSIDE_SHOWN_SHARE = 0.05  # of a line's wall time: its time outside operators worth a figure of its own


def _outside_shown(ln: LineStat) -> bool:
    return ln.wall_us > 0 and ln.outside_ops_us >= OUTSIDE_SHOWN_SHARE * ln.wall_us


OUTSIDE_STORY_SHARE = 0.10  # of the call's wall time: a line's time outside operators worth its hint


def outside_story(ln: LineStat, call_wall_us: float) -> bool:
    """The line's time is outside its operators (Python, a wait, I/O; OpLens's own line marks not counted): most of
    its wall time, more than twice its operators' own, and a tenth of the call's wall time or more (a run without the
    call's wall time: never). Its hint says that first; a small line whose Python and dispatch outweigh its tiny ops
    is not that story."""
    outside = own_outside_us(ln)
    return (call_wall_us > 0 and ln.wall_us > 0 and outside >= 0.5 * (ln.wall_us - ln.marks_us)
            and outside > 2 * ln.self_device_us and outside >= OUTSIDE_STORY_SHARE * call_wall_us)  # fmt: skip


def wait_phrase(ln: LineStat, on_device: bool) -> str:
    """`12.10 ms of its operators' time waiting for the device (a sync: .item(), .cpu(), synchronize)`; on the CPU,
    for a line that reads a scalar back, `no wait for a device: on the CPU an op's work is done when it returns`;
    '' otherwise."""
    if ln.wait_us > 0:
        return f"{fmt_us(ln.wait_us)} of its operators' time waiting for the device (a sync: .item(), .cpu(), synchronize)"
    if not on_device and any(o.name in SYNCS for o in ln.ops):
        return "no wait for a device: on the CPU an op's work is done when it returns"
    return ""


def host_device_phrase(ln: LineStat, on_device: bool) -> str:
    """On a device, `host 1.20 ms per call against 0.30 ms on the device: launch-bound` (the host's own time: its
    wall time less its waits for the device, analysis/roofline.host_us); '' on the CPU or without wall times."""
    if not on_device or ln.wall_us <= 0:
        return ""
    host = host_us(ln)
    verdict = "launch-bound" if host > ln.self_device_us else "device-bound"
    return f"host {fmt_us(host)} per call against {fmt_us(ln.self_device_us)} on the device: {verdict}"


def wall_phrase(ln: LineStat) -> str:
    """`wall 51.10 ms per call, 51.10 ms of it outside any operator (Python, a wait or I/O)`, and where OpLens's own
    line marks are a part worth saying, `…: about 48.83 ms OpLens's line marks (20,002 per call, not there when the
    profiler is off), 21.22 ms Python, a wait or I/O`; '' where the run did not record the line's wall time."""
    if ln.wall_us <= 0:
        return ""
    out = f"wall {fmt_us(ln.wall_us)} per call"
    if marks_matter(ln):
        out += (f", {fmt_us(ln.outside_ops_us)} of it outside any operator: about {fmt_us(ln.marks_us)} OpLens's line "
                f"marks ({fmt_count(ln.marks)} per call, not there when the profiler is off), "
                f"{fmt_us(own_outside_us(ln))} Python, a wait or I/O")
    elif _outside_shown(ln):
        out += f", {fmt_us(ln.outside_ops_us)} of it outside any operator (Python, a wait or I/O)"
    return out


def time_phrase(ln: LineStat, label: str) -> str:
    """`line 25: Self CPU 1.16 ms (49.5 %)`: the line's device time and share (the bar's tooltip, the hover)."""
    return f"line {ln.line}: Self {label} {fmt_us(ln.self_device_us)} ({fmt_share(ln.pct_device)})"


def spread_phrase(ln: LineStat) -> str:
    """`median 1.12 ms, min 1.02 ms, max 1.43 ms`: the line's device time over the iterations."""
    s = ln.device_spread
    return f"median {fmt_us(s.median)}, min {fmt_us(s.min)}, max {fmt_us(s.max)}"


def memory_cell(ln: LineStat) -> str:
    """`16.0 MiB / 32.0 MiB` (allocated / peak); '' where the line allocated nothing and saw no peak."""
    if not ln.alloc_bytes and not ln.peak_bytes:
        return ""
    return f"{fmt_bytes(ln.alloc_bytes) if ln.alloc_bytes else '–'} / {fmt_bytes(ln.peak_bytes)}"


def memory_sentence(ln: LineStat, memory: str) -> str:
    """`device memory in one call: allocated 16.0 MiB, freed 0 B, peak 32.0 MiB` (`memory`: the run's allocator,
    `device` or `host`; '' says host)."""
    return (f"{memory or 'host'} memory in one call: allocated {fmt_bytes(ln.alloc_bytes)}, freed {fmt_bytes(ln.freed_bytes)}, "
            f"peak {fmt_bytes(ln.peak_bytes)}")  # fmt: skip


def bound_cell(ln: LineStat) -> str:
    """`memory 12 %`; `measured memory` where the device's own MFU/MBU decided the bound; '' without ceilings."""
    return f"measured {ln.bound}" if ln.bound_from == "measured" else fmt_bound_cell(ln.bound, ln.roofline_pct, ln.above_ceiling)
