"""What reading the Neuron runtime's system trace costs: `systrace.line_device_time` against what a run already pays.

`server/oplens/backends/neuron/systrace.py` `line_device_time(folder, def_line, framework)` reads Neuron
Explorer's processed `SystemProfileEvents.parquet` (and its `Flow` table), merges each execution's
`nc_exec_running` rows and gives it to the framework op that launched it. The worker calls it after reading
the run's `trace.json` with `oplens.analysis.chrome_trace.read_events` (backends/neuron/runtime.py), with the
cyclic garbage collector off (worker/profiling.py `process`).

The input is synthetic, built the way the tests' stand-ins build it: a Chrome trace of the run (Kineto's
format: `oplens.iter:<k>` and `oplens.line:<n>` ranges around the launching `cpu_op`s, the RMSNorm workload of
tests/unit/test_neuron_systrace.py `NAIVE`, its six lines looped per iteration), the runtime's executions (one per
launching op, asynchronous on the device, flow ids that are per-model counters, as the stand-in torch_neuronx
writes them) and the stand-in neuron-explorer's own `system_tables` (tests/standins/neuron_explorer.py, its
`ROW_COLUMNS` and Arrow `_types`) turning them into the documented table at LNC=2 (two physical-core rows per
execution), plus a `Flow` table (tests/unit/test_neuron_systrace.py `FLOW_SCHEMA`) linking each runtime launch row
to its hardware rows.

Timed, per size, several repeats, the three methods' order rotating each repeat, gc off as in the worker:
- `line_device_time(folder, DEF_LINE, framework)` with the framework events already read (the extra cost);
- baseline 1: `read_events(trace.json)` of the same run (what every run already pays);
- baseline 2: pyarrow's bare `pq.read_table` of the same `SystemProfileEvents.parquet`.
Each repeat's ratios are taken within the repeat; the table gives their medians. Each result is checked: the
flow rule chosen, every execution merged from two rows and placed, each line's per-iteration total as generated.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from oplens.analysis.chrome_trace import read_events
from oplens.backends.neuron import systrace

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "standins")]

# the tests' own builders: the stand-in neuron-explorer's table writer, the systrace test's workload and Flow schema
import neuron_explorer as standin  # noqa: E402

from unit.test_neuron_systrace import DEF_LINE, FLOW_SCHEMA, HOST_T0, NAIVE  # noqa: E402

ITERS = 20  # profiled iterations; the sizes scale the loop over the lines inside each
WARMUP_EXECS = 2  # executions before the profiled iterations (the profiler's warm-up): outside every iteration
TID, PID = 4242, 4242
LINE_NS, OP_OFFSET_NS, OP_NS = 41_000, 1_000, 38_000  # a line's range, its op inside it (host ns)
SIZES = (1_000, 10_000, 50_000)  # executions, roughly: ITERS x len(NAIVE) x loops
REPEATS = {1_000: 7, 10_000: 5, 50_000: 3}


def loops_for(executions: int) -> int:
    return max(1, round(executions / (ITERS * len(NAIVE))))


# ---- the synthetic run ----------------------------------------------------------------------------------


def build_run(loops: int, session: Path) -> dict[str, int]:
    """trace.json (Kineto's Chrome trace) and the stand-in ntrace.pb (the runtime's executions, JSON as the
    stand-in torch_neuronx writes it) of one run: ITERS iterations, each running NAIVE's six lines `loops` times,
    each line one op launching one execution. Returns the counts."""
    session.mkdir(parents=True, exist_ok=True)
    base = HOST_T0
    events: list[dict[str, Any]] = []
    launches: list[dict[str, Any]] = []
    ev_idx = 0
    external = 0

    def us(ns: int) -> float:
        return round(ns / 1000, 3)  # Kineto: µs after baseTimeNanoseconds, ns decimals

    def span(cat: str, name: str, start: int, dur: int, args: dict[str, Any]) -> None:
        nonlocal ev_idx
        events.append({"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": TID, "ts": us(start), "dur": us(dur),
                       "args": {**args, "Ev Idx": ev_idx}})  # fmt: skip
        ev_idx += 1

    t = 10_000_000  # ns after base; warm-ups go 10 ms before the profiled calls, as the stand-in puts them
    for i in range(WARMUP_EXECS):
        w = t - 10_000_000 + i * 100_000 + base
        launches.append({"op": "standin::warmup", "tid": TID, "op_start_ns": w, "op_end_ns": w + 50_000,
                         "launch_ns": w + 25_000, "us": 11.0, "framework_row": True, "model": "1000"})  # fmt: skip
    for k in range(ITERS):
        it_start = t
        t += 1_000
        for _ in range(loops):
            for line, (op, model, dev_us) in NAIVE.items():
                external += 1
                span("user_annotation", f"oplens.line:{line}", t, LINE_NS - 1_000, {"External id": external,
                     "Record function id": 0})  # fmt: skip
                external += 1
                op_start = t + OP_OFFSET_NS
                span("cpu_op", op, op_start, OP_NS, {"External id": external, "Record function id": 0,
                     "Sequence number": external, "Fwd thread id": 0})  # fmt: skip
                launches.append({"op": op, "tid": TID, "op_start_ns": base + op_start, "op_end_ns": base + op_start + OP_NS,
                                 "launch_ns": base + op_start + OP_NS // 2, "us": dev_us, "model": model})  # fmt: skip
                t += LINE_NS
        external += 1
        span("user_annotation", f"oplens.iter:{k}", it_start, t + 1_000 - it_start, {"External id": external,
             "Record function id": 0})  # fmt: skip
        t += 10_000
    trace = {"schemaVersion": 1, "deviceProperties": [], "baseTimeNanoseconds": base, "displayTimeUnit": "ms",
             "traceEvents": events, "traceName": str(session / "trace.json")}  # fmt: skip
    (session / "trace.json").write_text(json.dumps(trace), encoding="utf-8")
    # the runtime's executions: asynchronous, each after its launch and after the one before it ends;
    # flow ids are small per-model counters (Tilebench), kept with a counter here
    counters: dict[str, int] = {}
    device_free, out = 0, []
    for x in launches:
        model = x.pop("model")
        flow = counters.get(model, 0)
        counters[model] = flow + 1
        start = max(x["launch_ns"] + 1_000, device_free + 200)
        end = start + round(x["us"] * 1000)
        device_free = end
        out.append({**x, "model_id": model, "flow": str(flow), "start_ns": start, "end_ns": end})
    ntrace = {"standin": "ntrace", "lnc": 2, "executions": out}
    (session / "ntrace.pb").write_text(json.dumps(ntrace), encoding="utf-8")
    return {"trace_events": len(events), "executions": len(out)}


def write_tables(session: Path, processed: Path) -> dict[str, int]:
    """The stand-in neuron-explorer's SystemProfileEvents (its `system_tables`), and a Flow table joining
    each runtime launch row (`nrt_model_submit`) to the hardware rows written right after it."""
    processed.mkdir(parents=True, exist_ok=True)
    standin.system_tables(session, processed, ["--ignore-instruction-trace"])
    table = pq.read_table(processed / f"{systrace.TABLE}.parquet", columns=["id", "trace_event_source"])
    ids, sources = table.column("id").to_pylist(), table.column("trace_event_source").to_pylist()
    edges: list[tuple[int, int]] = []
    rt = None
    for rid, source in zip(ids, sources, strict=True):
        if source == systrace.RT:
            rt = rid
        elif source == systrace.HW and rt is not None:
            edges.append((rt, rid))
        else:
            rt = None
    rows = [(a, b, "system_profile_events", "system_profile_events", "FLOW_DEPENDENCE", 0) for a, b in edges]
    cols = {n: [r[i] for r in rows] for i, (n, _) in enumerate(FLOW_SCHEMA)}
    pq.write_table(pa.table(cols, schema=pa.schema(FLOW_SCHEMA)), processed / f"{systrace.FLOW_TABLE}.parquet")
    return {"rows": len(ids), "flow_edges": len(edges)}


# ---- checks and timing ----------------------------------------------------------------------------------


def check(result: systrace.SysTraceTime, loops: int, executions: int) -> None:
    """The result as generated: rule flow, every execution merged from its two rows and placed, each
    line's per-iteration total `loops` x its device µs, the warm-ups outside."""
    assert result.rule == systrace.RULE_FLOW, result.problems
    assert result.problems == [], result.problems
    assert result.executions == executions, (result.executions, executions)
    assert result.pcores_per_execution == 2
    assert result.iterations == ITERS
    assert len(result.placed) == executions - WARMUP_EXECS
    for line, (_, _, dev_us) in NAIVE.items():
        per = result.per_line_us[line]
        assert len(per) == ITERS and all(abs(v - loops * dev_us) < 1e-6 * loops * dev_us for v in per), (line, per[:3])
    total = loops * sum(u for _, _, u in NAIVE.values())
    assert all(abs(v - total) < 1e-6 * total for v in result.per_iteration_us), result.per_iteration_us[:3]
    assert abs(result.outside_us - WARMUP_EXECS * 11.0) < 1e-6, result.outside_us


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """fn() and its wall time in ms, the collector off (as the worker reads the trace)."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        value = fn()
        return value, (time.perf_counter() - t0) * 1000.0
    finally:
        gc.enable()


def measure(size: int, repeats: int, tmp: Path) -> dict[str, Any]:
    loops = loops_for(size)
    session, processed = tmp / f"session-{size}", tmp / f"processed-{size}"
    t0 = time.perf_counter()
    counts = build_run(loops, session)
    counts.update(write_tables(session, processed))
    setup_s = time.perf_counter() - t0
    trace_json, table_path = session / "trace.json", processed / f"{systrace.TABLE}.parquet"
    framework = read_events(trace_json)
    methods: dict[str, Callable[[], Any]] = {
        "line_device_time": lambda: systrace.line_device_time(processed, DEF_LINE, framework),
        "read_events": lambda: read_events(trace_json),
        "pq_read_table": lambda: pq.read_table(table_path),
    }
    names = list(methods)
    reps: list[dict[str, float]] = []
    for r in range(repeats):
        order = names[r % 3 :] + names[: r % 3]  # rotate which runs first
        ms: dict[str, float] = {}
        for name in order:
            value, ms[name] = timed(methods[name])
            if name == "line_device_time":
                check(value, loops, counts["executions"])
            del value
        reps.append(ms)
    ratio_events = [m["line_device_time"] / m["read_events"] for m in reps]
    ratio_table = [m["line_device_time"] / m["pq_read_table"] for m in reps]
    return {
        "size": size,
        "loops": loops,
        **counts,
        "parquet_bytes": table_path.stat().st_size + (processed / f"{systrace.FLOW_TABLE}.parquet").stat().st_size,
        "trace_bytes": trace_json.stat().st_size,
        "setup_s": round(setup_s, 1),
        "ms": {n: statistics.median(m[n] for m in reps) for n in names},
        "ratio_vs_read_events": statistics.median(ratio_events),
        "ratios_vs_read_events": ratio_events,
        "ratio_vs_pq_read_table": statistics.median(ratio_table),
        "ratios_vs_pq_read_table": ratio_table,
        "reps": reps,
    }


def print_table(rows: list[dict[str, Any]]) -> None:
    print("ms: medians over the repeats; ratios: median of the per-repeat ratios (range); gc off, as in the worker")
    print(f"{'executions':>10} {'table rows':>10} {'trace evs':>9} {'reps':>4} {'line_device_time':>16} {'read_events':>11} "
          f"{'pq.read_table':>13}  {'ldt/read_events':>22}  {'ldt/pq.read_table':>24}")  # fmt: skip
    for s in rows:
        m = s["ms"]
        re, rt = s["ratios_vs_read_events"], s["ratios_vs_pq_read_table"]
        print(f"{s['executions']:>10} {s['rows']:>10} {s['trace_events']:>9} {len(s['reps']):>4} {m['line_device_time']:>16.1f} "
              f"{m['read_events']:>11.1f} {m['pq_read_table']:>13.1f}  "
              f"{s['ratio_vs_read_events']:>6.2f}x ({min(re):.2f}-{max(re):.2f})      "
              f"{s['ratio_vs_pq_read_table']:>6.1f}x ({min(rt):.1f}-{max(rt):.1f})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES), help="executions per run (default 1k 10k 50k)")
    parser.add_argument("--repeats", type=int, help="repeats per size (default 7, 5, 3 for 1k, 10k, 50k)")
    opts = parser.parse_args()
    for var in [v for v in os.environ if v.startswith("STANDIN_")]:
        del os.environ[var]  # the stand-in's writer reads its switches from the environment: its defaults here
    t0 = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory(prefix="oplens-bench-systrace-") as tmp:
        for size in opts.sizes:
            rows.append(measure(size, opts.repeats or REPEATS.get(size, 3), Path(tmp)))
    print_table(rows)
    meta = {
        "python": platform.python_version(),
        "pyarrow": pa.__version__,
        "cpus": len(os.sched_getaffinity(0)),
        "load_average": os.getloadavg(),
        "elapsed_s": round(time.perf_counter() - t0, 1),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "systrace.json"
    out.write_text(json.dumps({"meta": meta, "sizes": rows}, indent=2))
    print(f"all results checked (rule flow, per-line totals as generated); load average {meta['load_average'][0]:.1f}")
    print(f"wrote {out.relative_to(ROOT)} ({meta['elapsed_s']} s)")


if __name__ == "__main__":
    main()
