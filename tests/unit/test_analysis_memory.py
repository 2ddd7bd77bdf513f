"""`analysis.memory` on synthetic `[memory]` events: each line's allocations and frees, the peak while
it ran, a block allocated and freed in the same call (paired by its address) as a temporary, the
records it fills and the temporary insight."""

from __future__ import annotations

from oplens.analysis import memory
from oplens.analysis.attribution import RawEvent, attribute
from oplens.records.run import Target, Temporary
from support.stored import stored_events

T = 1
MIB = 1 << 20
SOURCE = """def f(x):
    big = torch.empty(4096, 4096)
    small = torch.empty(256)
    del big
    return x + small
"""  # lines 10-14


def alloc(t: int, nbytes: int, addr: int, device: bool = False) -> RawEvent:
    return RawEvent(memory.MEMORY, T, t, t, nbytes=nbytes, addr=addr, device_memory=device)


def call(offset: int = 0, it: int = 0, device: bool = False) -> list[RawEvent]:
    """One call of SOURCE: line 11 allocates 4 MiB at 0x10, line 12 1 MiB at 0x20 (returned), line 13
    frees the 4 MiB block; line 14's op allocates and frees 64 KiB of its own."""
    o = offset
    return [
        RawEvent(f"oplens.iter:{it}", T, o, o + 10_000),
        RawEvent("oplens.line:11", T, o + 100, o + 1_000),
        RawEvent("aten::empty", T, o + 200, o + 900),
        alloc(o + 300, 4 * MIB, 0x10, device),
        RawEvent("oplens.line:12", T, o + 1_000, o + 2_000),
        RawEvent("aten::empty", T, o + 1_200, o + 1_900),
        alloc(o + 1_300, MIB, 0x20, device),
        RawEvent("oplens.line:13", T, o + 2_000, o + 3_000),
        alloc(o + 2_500, -4 * MIB, 0x10, device),
        RawEvent("oplens.line:14", T, o + 3_000, o + 4_000),
        RawEvent("aten::add", T, o + 3_100, o + 3_900),
        alloc(o + 3_200, 64 << 10, 0x30, device),
        alloc(o + 3_300, -(64 << 10), 0x30, device),
    ]


def test_each_lines_allocations_frees_peak_and_temporary() -> None:
    events = call() + call(offset=100_000, it=1)  # only the first iteration counts
    by_line, peak, kind = memory.line_memory(events, def_line=10)
    assert kind == "host" and peak == 5 * MIB
    assert (by_line[11].alloc, by_line[11].freed, by_line[11].peak) == (4 * MIB, 0, 4 * MIB)
    assert (by_line[12].alloc, by_line[12].peak) == (MIB, 5 * MIB)
    # a line's peak is the highest level its own events reach: after line 13's free, 1 MiB
    assert (by_line[13].alloc, by_line[13].freed, by_line[13].peak) == (0, 4 * MIB, MIB)
    assert (by_line[11].temp_bytes, by_line[11].temp_freed_line) == (4 * MIB, 13)  # paired by address
    assert by_line[12].temp_bytes == 0  # returned: never freed in the call
    assert (by_line[14].temp_bytes, by_line[14].temp_freed_line) == (64 << 10, 14)  # freed on its own line


def test_a_free_pairs_only_with_the_same_address_and_size() -> None:
    events = [
        RawEvent("oplens.iter:0", T, 0, 10_000),
        RawEvent("oplens.line:11", T, 100, 1_000),
        alloc(200, 2 * MIB, 0x10),
        alloc(300, 3 * MIB, 0),  # address unknown (an older torch): counted, never paired
        RawEvent("oplens.line:12", T, 1_000, 2_000),
        alloc(1_100, -MIB, 0x10),  # another size at that address: not this block
        alloc(1_200, -3 * MIB, 0),
    ]
    by_line, peak, _ = memory.line_memory(events, def_line=10)
    assert by_line[11].alloc == 5 * MIB and by_line[12].freed == 4 * MIB and peak == 5 * MIB
    assert by_line[11].temp_bytes == 0


def test_the_devices_allocator_where_it_reports() -> None:
    host_noise = [alloc(50, 100 * MIB, 0x99)]  # a host allocation: not the device's figures
    by_line, peak, kind = memory.line_memory(call(device=True) + host_noise, def_line=10)
    assert kind == "device" and peak == 5 * MIB and by_line[11].temp_bytes == 4 * MIB


def test_a_profile_without_memory_events_has_none() -> None:
    by_line, peak, kind = memory.line_memory(stored_events(), def_line=23)
    assert (by_line, peak, kind) == ({}, 0, "host")


def test_assign_fills_the_records_and_adds_a_line_that_only_frees() -> None:
    events = call()
    a = attribute(events, iters=1, def_line=10)
    assert [s.line for s in a.lines if s.ops] == [11, 12, 14]  # line 13 (`del big`) runs no op
    memory.assign(a.lines, a.totals, memory.line_memory(events, def_line=10))
    lines = {s.line: s for s in a.lines}
    assert [s.line for s in a.lines] == [11, 12, 13, 14]
    assert lines[13].freed_bytes == 4 * MIB and lines[13].self_device_us == 0 and lines[13].op_calls == 0
    assert len(lines[13].device_samples_us) == len(a.totals.device_samples_us) == 1
    assert lines[11].temporary == Temporary(4 * MIB, 13) and lines[12].temporary is None
    assert (lines[12].alloc_bytes, lines[12].peak_bytes) == (MIB, 5 * MIB)
    assert (a.totals.peak_bytes, a.totals.memory) == (5 * MIB, "host")


def test_the_temporary_insight_names_the_large_ones() -> None:
    events = call()
    a = attribute(events, iters=1, def_line=10)
    memory.assign(a.lines, a.totals, memory.line_memory(events, def_line=10))
    target = Target(file="m.py", qualname="f", first_line=10, last_line=14, source_sha256="", def_line=10, source=SOURCE)
    (found,) = memory.temporary_insights(a.lines, a.totals, target)  # line 14's 64 KiB is under TEMP_MIN_BYTES
    assert found.line == 11 and found.kind == "temporary"
    assert found.message.startswith("big: a 4.0 MiB intermediate freed 2 lines later (line 13), 80 % of the call's peak")
    assert found.evidence == ("4.0 MiB allocated on line 11 and freed on line 13 in the same call; "
                              "the call's peak 5.0 MiB (host memory)")  # fmt: skip
    a.totals.peak_bytes = 40 * MIB  # a temporary under TEMP_PEAK_SHARE of the peak is not worth a word
    assert memory.temporary_insights(a.lines, a.totals, target) == []
