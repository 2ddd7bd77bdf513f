"""Processing at scale: how the time and memory of turning a stopped profile into its result grow
with the profile's events, ~10k to ~1M, against baselines timed on the same profile in the same run.

The profile: `bench/workloads.py::small_ops_loop` (five lines of one small elementwise op, in a loop,
~27 Kineto events a loop with the line markers), 20 iterations, its loop count chosen for the size,
recorded by the worker's own steps (`worker/profiling.py` `measure`: the timed iterations, CPU
activity, line markers, plus the one-call shapes profile), as `bench/processing.py` records its own.

Measured, each size in a fresh subprocess (so each peak is that size's), in this order:
  - OpLens: `profiling.process` (both profiles read, `analysis/derive.py`'s chain: attribution, the
    shapes call's work and memory, insights), the worker's "processing" lap, with its parts (`laps`);
  - export: `prof.export_chrome_trace` (the worker's "export" lap, paid anyway);
  - baseline 1: a bare `orjson.loads` of that trace file (read and parsed, nothing done with it): the
    floor of any processing that would start from the trace instead of Kineto's results;
  - baseline 2: torch's own `prof.events()` + `prof.key_averages()`, up to `--key-averages-max`
    events (it builds a FunctionEvent per event, 50-90 µs each: over a minute at 1M).
Peak RSS: `ru_maxrss` after resetting it to the current RSS (/proc/self/clear_refs = 5) before each
method, beside the RSS before it (from /proc/self/statm: what the stopped profile itself holds).
The collector is off in OpLens's processing, as in the worker, and in the baselines.

    .venv/bin/python bench/processing_scale.py [--reps 2] [--sizes 10000,100000,1000000]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
import torch

from oplens.backends.cpu import CpuBackend
from oplens.records.job import Job
from oplens.records.run import Target
from oplens.worker import profiling
from oplens.worker.linemarks import LineMarker, code_objects
from processing import load_workloads, peak_kib, reset_peak, rss_kib  # bench/processing.py

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
ITERS, WARMUP = 20, 2
EVENTS_PER_LOOP = 27  # Kineto events per loop of small_ops_loop (measured; each run reports its own count)


def profile(loops: int) -> tuple[Any, Any, Target]:
    """The worker's steps around `small_ops_loop(x, loops)`: (prof, shapes prof, target)."""
    module = load_workloads()
    fn = module.small_ops_loop
    first = fn.__code__.co_firstlineno
    target = Target(file=str(module.__file__), qualname="small_ops_loop", first_line=first, last_line=first + 10,
                    source_sha256="", def_line=first)  # fmt: skip
    job = Job(target=target, signature="small_ops_loop(x, loops)", args="", backend="cpu", warmup=WARMUP, iters=ITERS,
              stage_dir=tempfile.mkdtemp(prefix="oplens-bench-"), workspace=str(ROOT))  # fmt: skip
    torch.manual_seed(0)
    prepared = profiling.Prepared(job, CpuBackend(), fn, (torch.randn(8), loops), LineMarker(fn.__code__, code_objects(module)))
    measured = profiling.measure(prepared, lambda stage, done, total: None)
    return measured.prof, measured.shapes, target


def method(fn: Any) -> dict[str, Any]:
    """fn() timed with the collector off, its own peak RSS (reset right before it)."""
    gc.collect()
    out: dict[str, Any] = {"rss_before_kib": rss_kib(), "peak_reset": reset_peak()}
    gc.disable()
    try:
        t0 = time.perf_counter()
        value = fn()
        out["s"] = time.perf_counter() - t0
    finally:
        gc.enable()
    out["peak_kib"] = peak_kib()
    out["value"] = value
    return out


def child(target_events: int, key_averages_max: int, out_path: Path) -> None:
    torch.set_num_threads(1)
    loops = max(1, round(target_events / (ITERS * EVENTS_PER_LOOP)))
    prof, shapes_prof, target = profile(loops)
    n = len(prof.profiler.kineto_results.events())
    laps: dict[str, float] = {}
    oplens = method(lambda: profiling.process(prof, shapes_prof, ITERS, target, laps=laps))
    derived = oplens.pop("value")
    oplens["laps_ms"] = laps
    oplens["lines"] = [(s.line, round(s.op_calls, 3), round(s.self_cpu_us, 1)) for s in derived.attribution.lines]
    del derived
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        export = method(lambda: prof.export_chrome_trace(str(path)))
        export.pop("value")
        export["trace_bytes"] = path.stat().st_size
        parse = method(lambda: len(orjson.loads(path.read_bytes())["traceEvents"]))
        parse["trace_events"] = parse.pop("value")
    shapes_events = len(shapes_prof.prof.profiler.kineto_results.events()) if shapes_prof is not None else 0
    result: dict[str, Any] = {"loops": loops, "events": n, "shapes_events": shapes_events,
                              "oplens": oplens, "export": export, "orjson": parse}  # fmt: skip
    if n <= key_averages_max:
        table = method(lambda: len(prof.key_averages()) + len(prof.events()))
        table.pop("value")
        result["key_averages"] = table
    out_path.write_text(json.dumps(result))


def run_child(size: int, key_averages_max: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "child.json"
        cmd = [sys.executable, __file__, "--child", str(size), "--key-averages-max", str(key_averages_max), "--out", str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
        if proc.returncode != 0 or not out.exists():
            raise RuntimeError(f"child (size {size}) failed:\n{proc.stderr[-4000:]}")
        result: dict[str, Any] = json.loads(out.read_text())
    return result


def summarize(reps: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over the repetitions of one size."""

    def med(method: str, key: str) -> float:
        values = [r[method][key] for r in reps if method in r]
        return statistics.median(values) if values else float("nan")

    def med_ratio(method: str) -> float:
        values = [r["oplens"]["s"] / r[method]["s"] for r in reps if method in r]
        return statistics.median(values) if values else float("nan")

    events = statistics.median(r["events"] for r in reps)
    laps = {k: statistics.median(r["oplens"]["laps_ms"][k] for r in reps) for k in reps[0]["oplens"]["laps_ms"]}
    s = {"events": events, "shapes_events": reps[0]["shapes_events"], "reps": len(reps), "laps_ms": laps,
         "trace_bytes": reps[0]["export"]["trace_bytes"],
         "peak_reset_worked": all(r[m]["peak_reset"] for r in reps for m in ("oplens", "export", "orjson"))}  # fmt: skip
    for m in ("oplens", "export", "orjson", "key_averages"):
        if not any(m in r for r in reps):
            continue
        s[m] = {"s": med(m, "s"), "us_per_event": med(m, "s") * 1e6 / events,
                "rss_before_mib": med(m, "rss_before_kib") / 1024, "peak_mib": med(m, "peak_kib") / 1024,
                "growth_mib": (med(m, "peak_kib") - med(m, "rss_before_kib")) / 1024}  # fmt: skip
        if m != "oplens":
            s[m]["oplens_over"] = med_ratio(m)
    return s


ROWS = (("OpLens processing", "oplens"), ("  export_chrome_trace", "export"), ("  baseline: orjson.loads(trace)", "orjson"),
        ("  baseline: events+key_averages", "key_averages"))  # fmt: skip


def print_table(summaries: list[dict[str, Any]]) -> None:
    print(f"small_ops_loop, {ITERS} iterations; medians; RSS: before the method, its peak, the growth")
    print(f"{'events':>9} {'method':<28} {'s':>8} {'µs/event':>9} {'RSS before':>11} {'peak':>9} {'growth':>8} {'OpLens/it':>10}")
    for s in summaries:
        for label, m in ROWS:
            if m not in s:
                continue
            r = s[m]
            ratio = f"{r['oplens_over']:>9.2f}x" if "oplens_over" in r else ""
            print(f"{int(s['events']):>9} {label:<28} {r['s']:>8.2f} {r['us_per_event']:>9.2f} {r['rss_before_mib']:>7.0f} MiB"
                  f" {r['peak_mib']:>5.0f} MiB {r['growth_mib']:>+5.0f} MiB {ratio:>10}")  # fmt: skip
        laps = ", ".join(f"{k} {v:.0f}" for k, v in s["laps_ms"].items())
        print(f"{'':>9}   OpLens's parts (ms): {laps}; trace {s['trace_bytes'] / 2**20:.0f} MiB")
        if not s["peak_reset_worked"]:
            print("note: /proc/self/clear_refs was not writable: peaks include the profiling phase")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2, help="fresh subprocesses per size (default 2)")
    parser.add_argument("--sizes", default="10000,100000,1000000", help="profile sizes in Kineto events, about")
    parser.add_argument("--key-averages-max", type=int, default=150_000,
                        help="time torch's key_averages only up to this many events (default 150000)")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        child(opts.child, opts.key_averages_max, opts.out)
        return
    t0 = time.perf_counter()
    sizes = [int(s) for s in opts.sizes.split(",")]
    reps = {size: [run_child(size, opts.key_averages_max) for _ in range(opts.reps)] for size in sizes}
    summaries = [summarize(r) for r in reps.values()]
    print_table(summaries)
    meta = {"torch": torch.__version__, "python": platform.python_version(), "cpus": len(os.sched_getaffinity(0)),
            "load_average": os.getloadavg(), "elapsed_s": round(time.perf_counter() - t0, 1)}  # fmt: skip
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "processing_scale.json"
    out.write_text(json.dumps({"meta": meta, "summaries": summaries, "reps": {str(k): v for k, v in reps.items()}}, indent=2))
    print(f"wrote {out.relative_to(ROOT)} ({meta['elapsed_s']} s)")


if __name__ == "__main__":
    main()
