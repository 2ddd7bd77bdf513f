"""`analysis.chrome_trace`: a stored run's trace.json read back into events, attributed again to the
stored figures; and the Chrome-trace fields it reads, on hand-written trace events.

The stored run is the extension's fixture: a real CPU profile of examples/rmsnorm.py's `rmsnorm_naive`
(extension/test/fixtures/make_fixtures.py says how it was made). Its trace was recorded with input
shapes; support.stored's `stored_events(shapes=True)` gives them to the events (the other analysis tests use that).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from oplens.analysis.attribution import attribute
from oplens.analysis.chrome_trace import events_of, read_events
from support.stored import stored_attribution, stored_events, stored_run


def test_the_stored_trace_attributed_again_gives_the_stored_figures() -> None:
    run = stored_run()
    again = stored_attribution()
    assert [s.line for s in again.lines] == [s["line"] for s in run["lines"]] == [25, 26, 27, 28, 29, 30]
    for a, b in zip(again.lines, run["lines"], strict=True):
        assert a.self_device_us == pytest.approx(b["self_device_us"], rel=1e-9)
        assert a.self_cpu_us == pytest.approx(b["self_cpu_us"], rel=1e-9)
        assert a.op_calls == b["op_calls"]
        assert [(o.name, o.calls) for o in a.ops] == [(o["name"], o["calls"]) for o in b["ops"]]
        spread = b["device_spread"]
        assert (a.device_spread.median, a.device_spread.min, a.device_spread.max) == pytest.approx(
            (spread["median"], spread["min"], spread["max"])
        )
        assert a.noisy == b["noisy"]
    for key in ("self_cpu_us", "self_device_us", "op_calls", "unattributed_device_us"):
        assert getattr(again.totals, key) == pytest.approx(run["totals"][key], rel=1e-9)
    assert [(o.name, o.calls) for o in again.ops] == [(o["name"], o["calls"]) for o in run["ops"]]
    # every iteration's figure, and the lines sum to the totals
    assert len(again.totals.device_samples_us) == run["config"]["iters"]
    assert sum(s.self_device_us for s in again.lines) == pytest.approx(again.totals.self_device_us)


def test_the_stored_trace_holds_the_markers_and_ops_but_nothing_else() -> None:
    events = stored_events()
    names = {e.name for e in events}
    assert {f"oplens.iter:{i}" for i in range(5)} <= names
    assert {f"oplens.line:{n}" for n in range(25, 31)} <= names
    assert "aten::mul" in names and "aten::rsqrt" in names
    assert not any(e.on_device for e in events)  # a CPU run: no device activity
    assert all(e.end_ns >= e.start_ns for e in events)
    assert all(not e.shapes for e in events)  # shapes are not read back (the timed profile records none)


def test_device_activities_and_runtime_calls_link_to_the_op_that_launched_them() -> None:
    trace: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "args": {"name": "python3"}},
        {"ph": "X", "cat": "user_annotation", "name": "oplens.iter:0", "ts": 1000.0, "dur": 100.0, "tid": 7},
        {"ph": "X", "cat": "user_annotation", "name": "oplens.line:5", "ts": 1001.0, "dur": 50.0, "tid": 7},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "ts": 1002.5, "dur": 10.25, "tid": 7,
         "args": {"External id": 41}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 1005.0, "dur": 2.0, "tid": 7,
         "args": {"External id": 41, "correlation": 900}},
        {"ph": "X", "cat": "kernel", "name": "mul_kernel", "ts": 1060.0, "dur": 3.5, "tid": 12,
         "args": {"External id": 41, "correlation": 900}},
        # a copy of the CPU range on the device timeline, a Python frame and a flow event: not read
        {"ph": "X", "cat": "gpu_user_annotation", "name": "oplens.line:5", "ts": 1060.0, "dur": 3.5, "tid": 12},
        {"ph": "X", "cat": "python_function", "name": "rmsnorm.py(5): f", "ts": 1001.0, "dur": 50.0, "tid": 7},
        {"ph": "s", "cat": "ac2g", "name": "launch", "ts": 1005.0, "id": 900},
    ]  # fmt: skip
    events = events_of(trace)
    assert [e.name for e in events] == ["oplens.iter:0", "oplens.line:5", "aten::mul", "cudaLaunchKernel", "mul_kernel"]
    op, launch, kernel = events[2:]
    assert (op.start_ns, op.end_ns) == (1_002_500, 1_012_750)  # µs with ns decimals
    assert (op.correlation_id, op.linked_correlation_id, op.on_device) == (41, 0, False)
    assert (launch.correlation_id, launch.linked_correlation_id, launch.on_device) == (900, 41, False)
    assert (kernel.correlation_id, kernel.linked_correlation_id, kernel.on_device) == (900, 41, True)
    r = attribute(events, iters=1, def_line=4, device_time="linked")
    (line,) = r.lines
    assert line.line == 5 and line.self_device_us == pytest.approx(3.5)  # the kernel's time, on its op
    assert {o.name: o.self_device_us for o in r.ops}["cudaLaunchKernel"] == 0
    assert r.totals.unattributed_device_us == 0


def test_a_trace_written_as_a_bare_list_and_string_thread_ids(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps([
        {"ph": "X", "cat": "user_annotation", "name": "oplens.iter:0", "ts": 0, "dur": 10, "tid": "main"},
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 1, "dur": 2, "tid": "main"},
    ]))  # fmt: skip
    events = read_events(path)
    assert [e.name for e in events] == ["oplens.iter:0", "aten::add"]
    assert events[0].thread == events[1].thread  # one thread, whatever its id's type
    (line,) = attribute(events, iters=1, def_line=3).lines
    assert line.line == 3 and line.self_cpu_us == pytest.approx(2.0)  # outside any line: the def line
