"""`analysis.roofline` on the stored rmsnorm_naive profile (its work counted from the trace's own input
shapes) against stated ceilings, and each bound's rule on lines of known work and time."""

from __future__ import annotations

import pytest

from conftest import stored_attribution, stored_events
from oplens.analysis import roofline, work
from oplens.records.run import DeviceRoof, LineStat, Totals

CEILINGS = DeviceRoof(name="a stated device", dtype_peaks={"float32": 1e11, "bfloat16": 4e11}, bytes_per_s=2e10)


def test_the_stored_profiles_bounds_are_those_of_its_work_against_the_ceilings() -> None:
    a = stored_attribution()
    work.assign(a.lines, a.totals, work.line_work(stored_events(shapes=True), def_line=23))
    roofline.assign(a.lines, a.totals, CEILINGS, on_device=False)
    for s in a.lines:
        assert s.flops and s.bytes and s.dtype == "float32"
        assert s.floor_us is not None and s.roofline_pct is not None
        compute_us, memory_us = 1e6 * s.flops / 1e11, 1e6 * s.bytes / 2e10
        assert s.floor_us == pytest.approx(max(compute_us, memory_us))
        assert s.roofline_pct == pytest.approx(100 * s.floor_us / s.self_device_us)
        assert s.headroom_us == pytest.approx(s.self_device_us - s.floor_us)
        assert s.flop_per_s == pytest.approx(s.flops / (s.self_device_us * 1e-6))
        assert s.bytes_per_s == pytest.approx(s.bytes / (s.self_device_us * 1e-6))
        # one op a line, each under the ridge (P/W = 5 FLOP a byte): memory, or overhead where the
        # op's time at the roofline is under a µs
        assert s.bound == ("overhead" if s.floor_us < roofline.OVERHEAD_FLOOR_US else "memory")
    bounds = {s.line: s.bound for s in a.lines}
    assert bounds == {25: "memory", 26: "memory", 27: "overhead", 28: "overhead", 29: "memory", 30: "memory"}
    assert a.totals.floor_us == pytest.approx(sum(s.floor_us or 0 for s in a.lines))
    assert a.totals.headroom_us == pytest.approx(sum(s.headroom_us or 0 for s in a.lines))
    # the lines whose headroom is at least a tenth of the function's time, with what closes it
    found = roofline.headroom_insights(a.lines, a.totals)
    assert [i.line for i in found] == [25, 26, 29]
    assert found[0].message == (f"memory-bound at 0.4 % of the roofline: {roofline.WHAT_CLOSES_IT['memory']}")
    assert found[0].evidence == ("9.04 ms per call against a floor of 39.3 µs (9.00 ms to win, 46 % of the function); "
                                 "65,536 FLOPs, 786,432 bytes")  # fmt: skip


def line(n: int, flops: float | None, nbytes: float | None, device_us: float, cpu_us: float = 0.0,
         calls: float = 1.0, dtype: str = "float32", unknown: tuple[str, ...] = ()) -> LineStat:  # fmt: skip
    return LineStat(line=n, self_cpu_us=cpu_us or device_us, self_device_us=device_us, pct_device=0.0, pct_cpu=0.0,
                    op_calls=calls, flops=flops, bytes=nbytes, dtype=dtype, work_unknown=list(unknown))  # fmt: skip


def bound_of(s: LineStat, on_device: bool = False) -> str:
    roofline.assign([s], Totals(0.0, 0.0, 0.0), CEILINGS, on_device)
    return s.bound


def test_each_bound() -> None:
    mm = 2.0 * 1024**3  # a 1024³ matmul: 21.5 ms at 1e11 FLOP/s, its 12 MiB in 0.63 ms at 2e10 bytes/s
    assert bound_of(line(1, mm, 3 * 4 * 1024**2, 30_000.0)) == "compute"
    assert bound_of(line(1, 2**20, 3 * 4 * 2**20, 1_000.0)) == "memory"  # 1 FLOP per 12 bytes
    assert bound_of(line(1, 50 * 4, 50 * 48, 200.0, calls=50)) == "overhead"  # fifty ops on four elements
    # on a device: the CPU's time three times the device's: the device waits on the host
    assert bound_of(line(1, mm, 3 * 4 * 1024**2, 30_000.0, cpu_us=90_000.0), on_device=True) == "host"
    assert bound_of(line(1, mm, 3 * 4 * 1024**2, 30_000.0, cpu_us=90_000.0), on_device=False) == "compute"
    assert bound_of(line(1, 0.0, 0.0, 5.0)) == "overhead"  # views and bookkeeping only
    assert bound_of(line(1, 0.0, 0.0, 5.0, unknown=("aten::_convolution",))) == "unknown"
    assert bound_of(line(1, None, None, 5.0)) == "unknown"  # no call recorded shapes
    assert bound_of(line(1, mm, 1.0, 0.0)) == ""  # no time on the device: nothing to set against


def test_the_ceiling_of_the_lines_dtype_and_float32s_where_it_has_none() -> None:
    assert roofline.peak_for(CEILINGS, "bfloat16") == 4e11
    assert roofline.peak_for(CEILINGS, "float16") == 1e11
    bf16 = line(1, 2.0 * 1024**3, 1.0, 30_000.0, dtype="bfloat16")
    roofline.assign([bf16], Totals(0.0, 0.0, 0.0), CEILINGS, on_device=False)
    assert bf16.floor_us == pytest.approx(1e6 * 2.0 * 1024**3 / 4e11)
