"""A stored run's `trace.json` (the profiler's Chrome trace) read back into `RawEvent`s, so that a
run can be attributed again without running its function (`oplens analyze`).

Kineto writes every CPU op, record_function range and OpLens marker as a complete event
(`"ph": "X"`, `ts`/`dur` in µs with ns decimals); an op's correlation id is its `External id`;
device activities (kernels, memcpys, …) and runtime calls (cudaLaunchKernel, …) carry the
`External id` of the op that launched them. Times are `ts` (µs after the trace's `baseTimeNanoseconds`)
made absolute again, as Kineto's own events have them (a system trace of the same run is compared by
time: backends/neuron/systrace.py). Input shapes are not read: the timed calls, whose
trace this is, record none (a run's work and memory come from its shapes call and stay as stored).
Pure Python, no torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from oplens.analysis.attribution import RawEvent
from oplens.records import jsonfile

# Device activities in Kineto's categories (CUDA's names; PrivateUse1 backends use the same).
DEVICE_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"})
RUNTIME_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver", "privateuse1_runtime", "privateuse1_driver"})
CPU_CATEGORIES = frozenset({"cpu_op", "user_annotation", "Trace"}) | RUNTIME_CATEGORIES


def read_events(path: Path) -> list[RawEvent]:
    """The events of a Chrome trace written by `torch.profiler` (`export_chrome_trace`)."""
    data = jsonfile.read(path)  # orjson where the environment has it
    if not isinstance(data, dict):
        return events_of(data)
    return events_of(data.get("traceEvents", []), int(data.get("baseTimeNanoseconds", 0) or 0))


def events_of(trace_events: list[dict[str, Any]], base_ns: int = 0) -> list[RawEvent]:
    out: list[RawEvent] = []
    for e in trace_events:
        if e.get("ph") != "X":
            continue
        cat = e.get("cat", "")
        if cat == "gpu_user_annotation":
            continue  # a copy of a CPU range on the device timeline: not device work of its own
        on_device = cat in DEVICE_CATEGORIES
        if not on_device and cat not in CPU_CATEGORIES:
            continue  # python_function (with_stack), flow events, ...
        args = e.get("args") or {}
        external = int(args.get("External id", 0) or 0)
        launched = on_device or cat in RUNTIME_CATEGORIES  # links back to the op that launched it
        start = base_ns + round(float(e["ts"]) * 1000)
        tid = e.get("tid", 0)
        out.append(
            RawEvent(
                name=str(e.get("name", "")),
                thread=tid if isinstance(tid, int) else hash(tid),
                start_ns=start,
                end_ns=start + round(float(e.get("dur", 0)) * 1000),
                correlation_id=int(args.get("correlation", 0) or 0) if launched else external,
                linked_correlation_id=external if launched else 0,
                on_device=on_device,
            )
        )
    return out
