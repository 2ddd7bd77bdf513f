"""`analysis.roofline` on the stored rmsnorm_naive profile (its work counted from the trace's own input
shapes) against stated ceilings, and each bound's rule on lines of known work and time; a line above a
ceiling (marked, never over 100 %); the vendor's NeuronCore figures per logical core (`analysis.peaks`)."""

from __future__ import annotations

import pytest

from oplens.analysis import peaks, roofline, work
from oplens.lsp import views
from oplens.records.format import fmt_above, fmt_bound_cell
from oplens.records.run import DeviceRoof, LineStat, Totals
from support.stored import stored_attribution, stored_events

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
    # the lines whose headroom is at least a tenth of the function's time, with what closes it (in a run quiet
    # enough to tell a tenth: the stored run's 5 calls spread 0.5-74 ms, its noise floor far above that)
    a.totals.noise_floor_pct = 0.0
    found = roofline.headroom_insights(a.lines, a.totals)
    assert [i.line for i in found] == [25, 26, 29]
    assert found[0].message == (f"memory-bound at 0.4 % of the roofline: {roofline.WHAT_CLOSES_IT['memory']}")
    assert found[0].evidence == ("9.04 ms per call against a floor of 39.3 µs (9.00 ms to win, 46 % of the function); "
                                 "65,536 FLOPs, 786,432 bytes")  # fmt: skip


def test_no_gain_is_promised_below_the_run_s_noise_floor() -> None:
    """A gain the run cannot tell from its own noise (`totals.noise_floor_pct`) is never promised as one to win."""
    a = stored_attribution()
    work.assign(a.lines, a.totals, work.line_work(stored_events(shapes=True), def_line=23))
    roofline.assign(a.lines, a.totals, CEILINGS, on_device=False)
    assert a.totals.noise_floor_pct > 100  # its 5 calls spread 0.5-74 ms: nothing below that is told from noise
    assert roofline.headroom_insights(a.lines, a.totals) == []
    a.totals.noise_floor_pct = 0.0
    assert [i.line for i in roofline.headroom_insights(a.lines, a.totals)] == [25, 26, 29]
    a.totals.noise_floor_pct = 30.0  # a run whose calls tell only a change of 30 % of the total from noise
    assert [i.line for i in roofline.headroom_insights(a.lines, a.totals)] == [25]  # 46 % of the function


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
    # measured: the line's host wall time (less its waits for the device) against its device time, where the run has
    # it: Python between launches makes a line launch-bound that its ops' CPU time alone does not
    launch = line(1, mm, 3 * 4 * 1024**2, 30_000.0, cpu_us=1_000.0)
    launch.wall_us = 90_000.0
    assert bound_of(launch, on_device=True) == "host"
    waiting = line(1, mm, 3 * 4 * 1024**2, 30_000.0, cpu_us=1_000.0)
    waiting.wall_us, waiting.wait_us = 90_000.0, 85_000.0  # most of its wall time waits for the device: its own
    assert bound_of(waiting, on_device=True) == "compute"
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


# ---------------------------------------------------------------------------- a line above a ceiling


def test_a_line_above_the_memory_ceiling_is_marked_and_never_over_100_percent() -> None:
    # x * 2.0 on a 128 KiB float32 tensor (read and written) in 1 µs: 262 GB/s against a 20 GB/s
    # memory ceiling measured on arrays past the caches: its data stays in cache
    cached = line(1, 32768.0, 2 * 131072.0, 1.0)
    roofline.assign([cached], Totals(0.0, 0.0, 0.0), CEILINGS, on_device=False)
    assert cached.bound == "memory" and cached.above_ceiling == "memory"
    assert cached.roofline_pct is None  # no % of a roofline it beats
    assert cached.floor_us == 1.0 and cached.headroom_us == 0.0
    assert cached.bytes_per_s == pytest.approx(2 * 131072 / 1e-6)  # what it achieved is still recorded
    assert views.bound_sentence(cached) == ("**memory-bound** · above the memory roofline: its data stays in cache · "
                                            "floor 1.0 µs, 0.0 µs to win")  # fmt: skip
    assert fmt_bound_cell(cached.bound, cached.roofline_pct, cached.above_ceiling) == "memory, in cache"
    # within ABOVE_NOISE of its floor: timing noise, at the roofline (100 %), not above it
    at = line(1, 32768.0, 2 * 131072.0, 0.95 * 1e6 * 2 * 131072.0 / CEILINGS.bytes_per_s)
    roofline.assign([at], Totals(0.0, 0.0, 0.0), CEILINGS, on_device=False)
    assert at.above_ceiling == "" and at.roofline_pct == pytest.approx(100.0) and at.headroom_us == 0.0
    assert at.floor_us == at.self_device_us
    # a line under its ceiling is not marked
    under = line(1, 32768.0, 2 * 131072.0, 100.0)
    roofline.assign([under], Totals(0.0, 0.0, 0.0), CEILINGS, on_device=False)
    assert under.above_ceiling == "" and under.roofline_pct == pytest.approx(100 * 13.1072 / 100.0)


def test_a_line_above_its_dtypes_compute_ceiling() -> None:
    mm = 2.0 * 1024**3  # 21.5 ms at the float32 ceiling of 1e11 FLOP/s; run in 5 ms (on tensor cores, say)
    fast = line(1, mm, 3 * 4 * 1024**2, 5_000.0)
    roofline.assign([fast], Totals(0.0, 0.0, 0.0), CEILINGS, on_device=False)
    assert fast.bound == "compute" and fast.above_ceiling == "compute" and fast.roofline_pct is None
    assert fast.floor_us == 5_000.0 and fast.headroom_us == 0.0
    assert views.bound_sentence(fast) == ("**compute-bound** · above the float32 ceiling: another dtype or engine · "
                                          "floor 5.00 ms, 0.0 µs to win")  # fmt: skip
    assert fmt_above("compute", "bfloat16") == "above the bfloat16 ceiling: another dtype or engine"
    # on a device, a line whose CPU time dwarfs its device time is still host-bound, and still marked
    host = line(1, mm, 3 * 4 * 1024**2, 5_000.0, cpu_us=50_000.0)
    roofline.assign([host], Totals(0.0, 0.0, 0.0), CEILINGS, on_device=True)
    assert host.bound == "host" and host.above_ceiling == "compute" and host.roofline_pct is None


def test_the_stored_profile_against_a_ceiling_it_beats_everywhere() -> None:
    # the stored run against a memory ceiling a hundredth of the calibration's: every line beats it
    slow = DeviceRoof(name="a slow device", dtype_peaks={"float32": 1e11}, bytes_per_s=2e7)
    a = stored_attribution()
    work.assign(a.lines, a.totals, work.line_work(stored_events(shapes=True), def_line=23))
    roofline.assign(a.lines, a.totals, slow, on_device=False)
    for s in a.lines:
        assert s.above_ceiling == "memory" and s.bound == "memory" and s.roofline_pct is None
        assert s.floor_us == s.self_device_us and s.headroom_us == 0.0
    assert a.totals.headroom_us == 0.0
    assert a.totals.floor_us == pytest.approx(sum(s.self_device_us for s in a.lines))  # never above the time
    found = roofline.headroom_insights(a.lines, a.totals)
    assert {i.kind for i in found} == {"above-ceiling"} and [i.line for i in found] == [25, 26, 29]  # a tenth of the time
    assert found[0].message == ("memory-bound, above the memory roofline: its data stays in cache — "
                                f"{roofline.WHY_ABOVE['memory']}")  # fmt: skip
    assert found[0].evidence.startswith("768.0 KiB and 65.54 kFLOP in 9.04 ms per call: ")
    assert found[0].evidence.endswith(" GB/s, above the run's ceiling")


def test_every_line_of_the_stored_profile_has_headroom_at_least_zero_and_at_most_100_percent() -> None:
    for bytes_per_s in (2e7, 2e8, 2e9, 2e10, 2e12):
        device = DeviceRoof(name="d", dtype_peaks={"float32": 1e9}, bytes_per_s=bytes_per_s)
        a = stored_attribution()
        work.assign(a.lines, a.totals, work.line_work(stored_events(shapes=True), def_line=23))
        roofline.assign(a.lines, a.totals, device, on_device=False)
        for s in a.lines:
            assert s.headroom_us is not None and s.headroom_us >= 0.0
            assert s.floor_us is not None and s.floor_us <= s.self_device_us
            assert s.roofline_pct is None or 0.0 <= s.roofline_pct <= 100.0
            assert (s.roofline_pct is None) == bool(s.above_ceiling)
        assert (a.totals.floor_us or 0.0) <= sum(s.self_device_us for s in a.lines)


# ---------------------------------------------------------------------------- logical NeuronCores


def test_neuroncore_figures_are_per_logical_core() -> None:
    # NEURON_LOGICAL_NC_CONFIG unset: Trn2's documented default, LNC=2 (two NeuronCore-v3 per logical core)
    core = peaks.spec("trn2", env={})
    assert core is not None and core.logical_cores == 2 and core.unit == "logical NeuronCore (LNC=2)"
    assert core.name == "2 × NeuronCore-v3" and core.dtype_peaks["bfloat16"] == 2 * 79e12
    assert core.dtype_peaks["float8"] == 2 * 158e12 and core.bytes_per_s is None
    assert "NEURON_LOGICAL_NC_CONFIG unset" in core.logical_cores_from
    assert "logical-neuroncore-config.rst" in core.logical_cores_from
    assert core.logical_cores_from in core.notes
    one = peaks.spec("trn2", env={peaks.LNC_ENV: "1"})
    assert one is not None and one.logical_cores == 1 and one.dtype_peaks["bfloat16"] == 79e12
    assert one.name == "NeuronCore-v3" and "from NEURON_LOGICAL_NC_CONFIG=1" in one.logical_cores_from
    two = peaks.spec("Trainium3", env={peaks.LNC_ENV: " 2 "})
    assert two is not None and two.logical_cores == 2 and two.dtype_peaks["float32"] == 2 * 20e12
    bad = peaks.spec("trn3", env={peaks.LNC_ENV: "4"})  # "LNC can only be set to 1 or 2": the default, said so
    assert bad is not None and bad.logical_cores == 2 and "'4' is not 1 or 2" in bad.logical_cores_from
    assert "EVRF066.rst" in bad.logical_cores_from
    # Trn1 is LNC=1 only: the variable does not apply
    trn1 = peaks.spec("trn1", env={peaks.LNC_ENV: "2"})
    assert trn1 is not None and trn1.logical_cores == 1 and trn1.dtype_peaks["bfloat16"] == 90e12
    assert "does not apply" in trn1.logical_cores_from
    # a chip's figures and a GPU's are not per NeuronCore: as published
    chip = peaks.spec("trn2", unit="chip", env={})
    assert chip is not None and chip.logical_cores == 0 and chip.dtype_peaks["bfloat16"] == 667e12
    gpu = peaks.spec("h100", env={peaks.LNC_ENV: "1"})
    assert gpu is not None and gpu.logical_cores == 0 and gpu.unit == "GPU"
    # the table itself keeps the physical core's figures
    assert peaks.find("trn2").figures_for().dtype_peaks["bfloat16"] == 79e12  # type: ignore[union-attr]


def test_the_logical_core_degree_is_read_from_the_environment_the_worker_gets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(peaks.LNC_ENV, "1")
    assert peaks.spec("trn2").logical_cores == 1  # type: ignore[union-attr]
    monkeypatch.delenv(peaks.LNC_ENV)
    assert peaks.spec("trn2").logical_cores == 2  # type: ignore[union-attr]
    assert peaks.logical_cores(peaks.find("h200"), {peaks.LNC_ENV: "2"}) == (0, "")  # type: ignore[arg-type]


def test_no_headroom_is_promised_that_the_call_s_wall_time_dwarfs() -> None:
    """A line's headroom is a gain of the call as the user waits for it: where the call spends most of its wall time
    outside every operator (a sleep, Python, I/O), a gain of a tenth of the operators' time is not one of the call."""
    x = line(11, 2**20, 3 * 4 * 2**20, 1_000.0)  # memory-bound, far from its roofline
    roofline.assign([x], Totals(1_000.0, 1_000.0, 1.0), CEILINGS, on_device=False)
    quiet = Totals(1_000.0, 1_000.0, 1.0)
    assert [i.kind for i in roofline.headroom_insights([x], quiet)] == ["headroom"]
    waits = Totals(1_000.0, 1_000.0, 1.0, call_wall_us=50_000.0)  # 49 ms of the call outside every operator
    assert roofline.headroom_insights([x], waits) == []
    some = Totals(1_000.0, 1_000.0, 1.0, call_wall_us=2_000.0)
    (found,) = roofline.headroom_insights([x], some)
    assert "% of the call's wall time" in found.evidence
