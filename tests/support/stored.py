"""The stored run of the analysis tests: the extension's fixture, a real CPU profile of examples/rmsnorm.py's
`rmsnorm_naive` (extension/test/fixtures/make_fixtures.py says how it was made), its trace recorded with shapes."""

from __future__ import annotations

import json
from typing import Any

from oplens.analysis.attribution import Attribution, RawEvent, attribute
from oplens.analysis.chrome_trace import read_events
from support.paths import FIXTURES

STORED_RESULT = FIXTURES / "rmsnorm_naive.cpu.result.json"
STORED_TRACE = FIXTURES / "rmsnorm_naive.cpu.trace.json"


def stored_run() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(STORED_RESULT.read_text())
    return data


def stored_events(shapes: bool = False) -> list[RawEvent]:
    """The stored trace's events; with `shapes`, each op's input shapes and dtypes as the trace
    records them (its "Input Dims" and "Input type"), as the worker's shapes call reads them."""
    events = read_events(STORED_TRACE)
    if shapes:
        data = json.loads(STORED_TRACE.read_text())
        base = int(data.get("baseTimeNanoseconds", 0))  # read_events makes times absolute
        args = {(e["name"], base + round(float(e["ts"]) * 1000)): e.get("args", {}) for e in data["traceEvents"]
                if e.get("ph") == "X"}  # fmt: skip
        for e in events:
            a = args.get((e.name, e.start_ns), {})
            e.shapes, e.dtypes = list(a.get("Input Dims", [])), list(a.get("Input type", []))
    return events


def stored_attribution(shapes: bool = False) -> Attribution:
    run = stored_run()
    return attribute(stored_events(shapes), run["config"]["iters"], run["target"]["def_line"], "cpu")
