"""Why a line takes its time, against the device's ceilings (pure): each line's bound, how close it
is to the roofline, and the time it would take there.

For a line with F FLOPs and B bytes in one call taking t (its self device time per call), on a
device whose ceilings are P FLOP/s (for the line's dtype) and W bytes/s:

    achieved   F / t FLOP/s and B / t bytes/s
    floor      min(t, max(F / P, B / W)): the time at the roofline
    roofline   floor / t, in %
    headroom   t - floor
    bound      host      the device waits on the host: the host's own time on the line (its wall time less its
                         waits for the device, measured; its ops' CPU time in runs without it) HOST_RATIO
                         times its device time or more (device backends): launch-bound
               overhead  many small ops: each op's share of the floor under OVERHEAD_FLOOR_US (less
                         work than dispatching or launching it costs) and the line under OVERHEAD_PCT
                         of the roofline (dispatch and launch, not the arithmetic or the memory, set
                         it). The floor, not the measured time, decides: a loaded machine slows the
                         ops, not their work.
               compute   F / P >= B / W (an intensity above the ridge F/B = P/W)
               memory    otherwise
               unknown   no work counted (ops with no rule), or no shapes recorded
    above      the ceiling a line beats: more than ABOVE_NOISE faster than max(F / P, B / W) (up to
               that, timing noise: 100 %). "memory" where its bytes/s exceed W (measured on arrays
               well past the caches: its data stays in cache), "compute" where its FLOP/s exceed
               its dtype's P (another dtype or engine ran it). Its bound is still what the larger
               term says; it has no roofline % (the level it ran from has no ceiling here).
    The floor is never above t (a line at or above the roofline has nothing left to win): no line
    is over 100 % of a roofline, no headroom is negative, the function's floor never exceeds its time.
    A line of views and bookkeeping only (no FLOPs, no bytes, no op without a rule) is overhead; a
    line with work but no device time has no bound (""). The function's floor and headroom are the
    lines' sums.
    measured   where the device measured the line (Neuron: `LineStat.measured`, Explorer's per framework op MFU
               and MBU, backends/neuron/efficiency.py), its bound is that one (compute | memory | neither) and
               `bound_from` says "measured"; the floor, roofline % and headroom above stay the estimate. Else
               `bound_from` is "estimated" where the rule above gave a bound. `measured_totals`: the function's
               measured figures, its measured lines' weighted by their device time.
    `headroom_insights` names a line whose headroom is at least HEADROOM_MIN_SHARE of the function's
    time, with what usually closes the gap for its bound, and a line of that share above a ceiling,
    with why.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from oplens.records.format import fmt_above, fmt_bytes, fmt_flops, fmt_us
from oplens.records.run import DeviceRoof, Insight, LineStat, MeasuredEfficiency, Totals

OVERHEAD_FLOOR_US = 1.0  # an op whose time at the roofline is under this costs more to dispatch than to run
OVERHEAD_PCT = 10.0  # ... and the line is this far below the roofline
HOST_RATIO = 2.0  # on a device backend: CPU time this many times the device time
# A line up to this much faster than its floor is at the roofline (100 %: the calibration's best
# repeat against a line's median is noise); beyond it, it beats the ceiling (`above_ceiling`).
ABOVE_NOISE = 0.10


def host_us(s: LineStat) -> float:
    """The host's own time on a line per call: its wall time less its waits for the device where the run measured
    it (Python between launches, dispatch, the ops' host side), else its ops' self CPU time (an older run)."""
    return max(0.0, s.wall_us - s.wait_us) if s.wall_us > 0 else s.self_cpu_us


def peak_for(device: DeviceRoof, dtype: str) -> float:
    """The FLOP/s ceiling for `dtype` (float32's where the device has no figure of its own for it)."""
    return device.dtype_peaks.get(dtype) or device.dtype_peaks.get("float32", 0.0)


def assign(lines: Sequence[LineStat], totals: Totals, device: DeviceRoof, on_device: bool) -> None:
    """Each line's bound, roofline %, floor and headroom; the function's floor and headroom; a measured bound kept."""
    _estimate(lines, totals, device, on_device)
    for s in lines:
        if s.measured is not None and s.measured.bound:
            s.bound, s.bound_from = s.measured.bound, MEASURED
        else:
            s.bound_from = ESTIMATED if s.bound else ""
    totals.measured = measured_totals(lines)


MEASURED, ESTIMATED = "measured", "estimated"


def measured_totals(lines: Sequence[LineStat]) -> MeasuredEfficiency | None:
    """The function's measured figures: its measured lines' MFU, HFU and MBU weighted by the device time they
    cover, their HBM bytes summed (where every measured line has them); None where no line was measured."""
    runs = [(s.measured, s.self_device_us * s.measured.covered_pct / 100.0) for s in lines if s.measured is not None]
    if not runs:
        return None

    def weighted(pick: Callable[[MeasuredEfficiency], float | None]) -> float | None:
        pairs = [(v, w) for m, w in runs if (v := pick(m)) is not None and w > 0]
        weight = sum(w for _, w in pairs)
        return sum(v * w for v, w in pairs) / weight if weight > 0 else None

    mfu, mbu = weighted(lambda m: m.mfu_pct), weighted(lambda m: m.mbu_pct)
    all_bytes = [m.hbm_bytes for m, _ in runs]
    return MeasuredEfficiency(
        mfu, weighted(lambda m: m.hfu_pct), mbu,
        sum(b for b in all_bytes if b is not None) if all(b is not None for b in all_bytes) else None,
        weighted(lambda m: m.intensity), weighted(lambda m: m.ridge), weighted(lambda m: m.throttled_pct),
        measured_bound(mfu, mbu),
        100.0 * sum(w for _, w in runs) / total if (total := sum(s.self_device_us for s in lines)) > 0 else 0.0,
        sorted({o for m, _ in runs for o in m.ops}),
    )  # fmt: skip


MEASURED_BOUND_PCT = 50.0  # MFU or MBU at or above this: the unit that holds the line (OpLens's threshold)


def measured_bound(mfu: float | None, mbu: float | None) -> str:
    """The bound from measured MFU and MBU (%): `compute` where MFU is at least MEASURED_BOUND_PCT and not below
    MBU, `memory` where MBU is at least it and above MFU, `neither` where both were measured and both are below it
    (latency, dispatch, another engine, waiting), else "" (too little measured: the estimate stands)."""
    if mfu is not None and mfu >= MEASURED_BOUND_PCT and (mbu is None or mfu >= mbu):
        return "compute"
    if mbu is not None and mbu >= MEASURED_BOUND_PCT and (mfu is None or mbu > mfu):
        return "memory"
    if mfu is not None and mbu is not None:
        return "neither"
    return ""


def _estimate(lines: Sequence[LineStat], totals: Totals, device: DeviceRoof, on_device: bool) -> None:
    """Each line's bound, roofline %, floor and headroom against the ceilings; the function's floor and headroom."""
    floor_total = headroom_total = 0.0
    for s in lines:
        t = s.self_device_us
        s.above_ceiling = ""
        if s.flops is None or t <= 0:
            s.bound = "unknown" if s.flops is None else ""
            continue
        peak = peak_for(device, s.dtype or "float32")
        compute_s = s.flops / peak if peak > 0 and s.flops else 0.0
        memory_s = (s.bytes or 0.0) / device.bytes_per_s if device.bytes_per_s > 0 else 0.0
        floor_us = max(compute_s, memory_s) * 1e6
        beats = floor_us > (1.0 + ABOVE_NOISE) * t
        s.above_ceiling = ("compute" if compute_s >= memory_s else "memory") if beats else ""
        floor_us = min(floor_us, t)  # at or above the roofline: nothing to win against it
        s.floor_us = floor_us
        s.headroom_us = max(0.0, t - floor_us)
        s.roofline_pct = None if s.above_ceiling else 100.0 * floor_us / t
        s.flop_per_s, s.bytes_per_s = s.flops / (t * 1e-6), (s.bytes or 0.0) / (t * 1e-6)
        floor_total += floor_us
        headroom_total += s.headroom_us
        if on_device and host_us(s) > HOST_RATIO * t:
            s.bound = "host"
        elif not s.flops and not s.bytes:
            s.bound = "unknown" if s.work_unknown else "overhead"  # only views and bookkeeping: dispatch
        elif (
            s.roofline_pct is not None
            and s.op_calls > 0
            and floor_us / s.op_calls < OVERHEAD_FLOOR_US
            and s.roofline_pct < OVERHEAD_PCT
        ):
            s.bound = "overhead"
        else:
            s.bound = "compute" if compute_s >= memory_s else "memory"
    totals.floor_us, totals.headroom_us = floor_total, headroom_total


HEADROOM_MIN_SHARE = 0.10  # a line's headroom at least this share of the function's time per call

WHAT_CLOSES_IT = {
    "memory": "fuse the chain of elementwise ops (torch.compile, or the fused builtin) so each tensor is read once",
    "compute": "use a lower precision the device runs faster (bfloat16), or a larger matmul shape",
    "overhead": "batch the small ops into larger ones (raise the batch, vectorise the loop, or torch.compile it)",
    "host": "keep the work on the device: move host work and .item() reads out of the loop",
}


# A ceiling is the best of a few repeats: one measured while another process held the cores stays low in the
# cache until measured again, and every later run's big lines beat it (seen on the 2-core CI machine).
BUSY_CALIBRATION = "or the calibration ran while the machine was busy (`oplens calibrate --again` measures it anew)"
WHY_ABOVE = {
    "memory": "the memory ceiling is the device memory's bandwidth (`oplens calibrate`'s copy and triad on "
              f"arrays well past the caches); this line's data is read from cache, {BUSY_CALIBRATION}, "
              "so its roofline % is not shown",
    "compute": "the ceiling is the best matmul of its dtype that `oplens calibrate` measured; a faster line ran on "
               f"another engine or in another dtype than its inputs', {BUSY_CALIBRATION}, so its roofline % is not shown",
}  # fmt: skip


def headroom_insights(lines: Sequence[LineStat], totals: Totals) -> list[Insight]:
    """A line far from the roofline, with what usually closes the gap for its bound (never a gain below
    HEADROOM_MIN_SHARE of the function (of its call's wall time where that is more: a call that waits or runs Python
    is not sped up by its operators' headroom), nor one below the run's noise floor); a line of the same share of
    the time above a ceiling, with why."""
    total = sum(s.self_device_us for s in lines)
    found = []
    for s in lines:
        if s.above_ceiling in WHY_ABOVE and total > 0 and s.self_device_us >= HEADROOM_MIN_SHARE * total:
            achieved = (f"{(s.bytes_per_s or 0.0) / 1e9:,.1f} GB/s" if s.above_ceiling == "memory"
                        else f"{fmt_flops(s.flop_per_s or 0.0)}/s")  # fmt: skip
            found.append(Insight(
                line=s.line,
                kind="above-ceiling",
                message=f"{s.bound}-bound, {fmt_above(s.above_ceiling, s.dtype)} — {WHY_ABOVE[s.above_ceiling]}",
                evidence=(f"{fmt_bytes(s.bytes or 0.0)} and {fmt_flops(s.flops or 0.0)} in {fmt_us(s.self_device_us)} "
                          f"per call: {achieved}, above the run's ceiling"),
            ))  # fmt: skip
            continue
        if s.headroom_us is None or s.bound not in WHAT_CLOSES_IT or total <= 0:
            continue
        # the call's time: its wall time where that is more (time outside every operator: Python, a wait, I/O)
        call = max(totals.call_wall_us, total)
        if s.headroom_us < max(HEADROOM_MIN_SHARE, totals.noise_floor_pct / 100.0) * call:
            continue  # too small to act on (in the call as the user waits for it), or to tell from this run's noise
        of_call = f", {100 * s.headroom_us / call:.0f} % of the call's wall time" if call > 1.1 * total else ""
        found.append(Insight(
            line=s.line,
            kind="headroom",
            message=f"{s.bound}-bound at {s.roofline_pct or 0:.1f} % of the roofline: {WHAT_CLOSES_IT[s.bound]}",
            evidence=(f"{fmt_us(s.self_device_us)} per call against a floor of {fmt_us(s.floor_us or 0.0)} "
                      f"({fmt_us(s.headroom_us)} to win, {100 * s.headroom_us / total:.0f} % of the function{of_call}); "
                      f"{s.flops or 0:,.0f} FLOPs, {s.bytes or 0:,.0f} bytes"),
        ))  # fmt: skip
    return found
