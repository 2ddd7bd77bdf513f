"""Processing speed: how long OpLens takes to turn a stopped profile into its result, relative to
torch's own `prof.events()` + `prof.key_averages()` on the same profile.

The profile: a 50-layer `Linear(256, 256) + GELU` `nn.Sequential`, 20 iterations of forward and
backward (`model(x).sum().backward()` on `torch.randn(32, 256)`, via
`bench/workloads.py::train_step`), recorded as the worker records it: CPU activity, no input
shapes, an `oplens.iter:<i>` range per iteration and a `LineMarker` active; plus, as the worker
does, a one-call profile with `record_shapes=True` whose op sequence feeds the insights. Both
are made by the worker's own steps (`worker/profiling.py`: `measure`), not a copy of them.

Measured on that profile:
  - OpLens: the worker's `profiling.process` (`events.from_profiler` of both profiles, then the
    chain of `analysis/derive.py`: the attribution, the shapes call's work and memory, the insights;
    its parts timed by its `laps`: the worker's "processing" lap), and separately
    `prof.export_chrome_trace` (its "export" lap);
  - baseline: `prof.events()` (which builds and caches torch's `FunctionEvent`s) followed by
    `prof.key_averages()`.

Why ratios: the machine is shared and noisy, so the verdict is OpLens's time over the baseline's,
both timed on the same profile seconds apart. Each repetition is a fresh subprocess that profiles
once and times both methods, the baseline exactly once (`prof.events()` caches, so a second call
would be free); the order alternates between repetitions. Peak RSS comes from
`resource.getrusage(RUSAGE_SELF).ru_maxrss` after the peak was reset to the current RSS by
writing 5 to /proc/self/clear_refs right before each method, so each peak is that method's own;
it is reported from the repetitions where the method ran first (the heap is fresh), next to the
RSS right before processing (from /proc/self/statm).

The headline ratio is the median over the repetitions where OpLens ran first: that is the
worker's situation (it never builds torch's FunctionEvents). The other order is reported too:
there OpLens runs while the baseline's ~46k FunctionEvents are alive, and Python's cyclic garbage
collector, which OpLens's allocations trigger, walks them all, so OpLens is slower.

OpLens's processing runs with the cyclic garbage collector disabled, as the worker runs it. With
--what-if each child also times the main profile's processing alone with the collector disabled,
and that plus an event reader that skips `shapes()`/`dtypes()` (what reading them lazily, for
the few sampled ops, saves at most).

    .venv/bin/python bench/processing.py [--reps 4] [--what-if]
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch._C._autograd import DeviceType

from oplens.analysis import insights
from oplens.analysis.attribution import RawEvent, attribute
from oplens.backends.cpu import CpuBackend
from oplens.records.job import Job
from oplens.records.run import Target
from oplens.worker import events, profiling
from oplens.worker.calls import ShapesCall
from oplens.worker.linemarks import LineMarker, code_objects

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
LAYERS, WIDTH, BATCH, ITERS, WARMUP = 50, 256, 32, 20, 2
PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


# ---- child: profile once, time both methods ------------------------------------------------


def load_workloads() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("bench_workloads", ROOT / "bench" / "workloads.py")
    if spec is None or spec.loader is None:
        raise ImportError("cannot import bench/workloads.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def build_model() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    layers: list[torch.nn.Module] = []
    for _ in range(LAYERS):
        layers += [torch.nn.Linear(WIDTH, WIDTH), torch.nn.GELU()]
    return torch.nn.Sequential(*layers), torch.randn(BATCH, WIDTH)


def profile_train_steps() -> tuple[Any, Any, Target]:
    """The worker's own steps (worker/profiling.py) around `train_step`: (prof, shapes prof, target)."""
    module = load_workloads()
    fn = module.train_step
    model, x = build_model()
    target = Target(file=str(module.__file__), qualname="train_step", first_line=fn.__code__.co_firstlineno,
                    last_line=fn.__code__.co_firstlineno, source_sha256="", def_line=fn.__code__.co_firstlineno)  # fmt: skip
    job = Job(target=target, signature="train_step(model, x)", args="", backend="cpu", warmup=WARMUP, iters=ITERS,
              stage_dir=tempfile.mkdtemp(prefix="oplens-bench-"), workspace=str(ROOT))  # fmt: skip
    prepared = profiling.Prepared(job, CpuBackend(), fn, (model, x), LineMarker(fn.__code__, code_objects(module)))
    measured = profiling.measure(prepared, lambda stage, done, total: None)
    return measured.prof, measured.shapes, target


def rss_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE_KIB


def reset_peak() -> bool:
    """Reset the peak RSS (ru_maxrss) to the current RSS; False where the kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def timed(fn: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    """fn(*args) and its wall time in ms."""
    t0 = time.perf_counter()
    value = fn(*args)
    return value, (time.perf_counter() - t0) * 1000.0


def measure_oplens(prof: Any, shapes_prof: ShapesCall | None, target: Target) -> dict[str, Any]:
    gc.collect()
    out: dict[str, Any] = {"peak_reset": reset_peak(), "rss_before_kib": rss_kib()}
    laps: dict[str, float] = {}
    derived = profiling.process(prof, shapes_prof, ITERS, target, laps=laps)  # the worker's step, gc off inside
    out["from_profiler_ms"], out["attribute_ms"], out["shapes_ms"] = laps["read_ms"], laps["attribute_ms"], laps["shapes_ms"]
    out["insights_ms"] = laps["insights_ms"]
    out["peak_kib"] = peak_kib()
    out["total_ms"] = out["from_profiler_ms"] + out["attribute_ms"] + out["shapes_ms"] + out["insights_ms"]
    out["events"] = len(prof.profiler.kineto_results.events())
    out["lines"] = [(s.line, round(s.op_calls, 2)) for s in derived.attribution.lines]
    out["insights"] = len(derived.insights)
    del derived
    gc.collect()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        out["export_peak_reset"] = reset_peak()
        _, out["export_ms"] = timed(prof.export_chrome_trace, str(path))
        out["export_peak_kib"] = peak_kib()
        out["trace_bytes"] = path.stat().st_size
    return out


def measure_baseline(prof: Any) -> dict[str, Any]:
    gc.collect()
    out: dict[str, Any] = {"peak_reset": reset_peak(), "rss_before_kib": rss_kib()}
    evs, out["events_ms"] = timed(prof.events)
    averages, out["key_averages_ms"] = timed(prof.key_averages)
    out["peak_kib"] = peak_kib()
    out["total_ms"] = out["events_ms"] + out["key_averages_ms"]
    out["function_events"] = len(evs)
    out["keys"] = len(averages)
    return out


def events_without_shapes(prof: Any) -> list[RawEvent]:
    """What-if (not OpLens's code): `events.from_profiler` minus its `shapes()`/`dtypes()` reads."""
    cpu = DeviceType.CPU
    out: list[RawEvent] = []
    for k in prof.profiler.kineto_results.events():
        start, thread = k.start_ns(), k.start_thread_id()
        out.append(
            RawEvent(
                name=k.name(),
                thread=thread,
                start_ns=start,
                end_ns=start + k.duration_ns(),
                correlation_id=k.correlation_id(),
                linked_correlation_id=k.linked_correlation_id(),
                on_device=k.device_type() != cpu,
                is_async=k.is_async() or thread != k.end_thread_id(),
            )
        )
    return out


def oplens_gc_off(prof: Any, def_line: int, read_shapes: bool) -> float:
    """What-if: OpLens's processing (ms) with the cyclic garbage collector disabled."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        raw = events.from_profiler(prof) if read_shapes else events_without_shapes(prof)
        result = attribute(raw, ITERS, def_line, "cpu")
        insights.find_insights(result, "CPU", False, ITERS)
        return (time.perf_counter() - t0) * 1000.0
    finally:
        gc.enable()


def child(first: str, what_if: bool, out_path: Path) -> None:
    torch.set_num_threads(1)
    prof, shapes_prof, target = profile_train_steps()
    def_line = target.def_line
    measured: dict[str, Any] = {"first": first}
    for method in ("oplens", "baseline") if first == "oplens" else ("baseline", "oplens"):
        measured[method] = measure_oplens(prof, shapes_prof, target) if method == "oplens" else measure_baseline(prof)
    if what_if:
        measured["what_if_ms"] = {
            "gc_off": oplens_gc_off(prof, def_line, read_shapes=True),
            "gc_off_no_shapes": oplens_gc_off(prof, def_line, read_shapes=False),
        }
    out_path.write_text(json.dumps(measured))


# ---- parent: repetitions in fresh subprocesses, the table, the JSON -------------------------


def run_child(first: str, what_if: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "child.json"
        cmd = [sys.executable, __file__, "--child", first, "--out", str(out), *(["--what-if"] if what_if else [])]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0 or not out.exists():
            raise RuntimeError(f"child ({first} first) failed:\n{proc.stderr[-4000:]}")
        result: dict[str, Any] = json.loads(out.read_text())
    return result


def median_or_nan(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def summarize(reps: list[dict[str, Any]]) -> dict[str, Any]:
    def ratios(first: str | None = None, export: bool = False, what_if: str = "") -> list[float]:
        rows = [r for r in reps if first is None or r["first"] == first]
        if what_if:
            return [r["what_if_ms"][what_if] / r["baseline"]["total_ms"] for r in rows if "what_if_ms" in r]
        extra = (lambda r: r["oplens"]["export_ms"]) if export else (lambda r: 0.0)
        return [(r["oplens"]["total_ms"] + extra(r)) / r["baseline"]["total_ms"] for r in rows]

    def median_of(method: str, key: str, first_only: bool = False) -> float:
        return median_or_nan([r[method][key] for r in reps if not first_only or r["first"] == method])

    return {
        "ratio": median_or_nan(ratios("oplens")),  # the headline: OpLens ran first, as in the worker
        "ratios_oplens_first": ratios("oplens"),
        "ratio_baseline_first": median_or_nan(ratios("baseline")),
        "ratios_baseline_first": ratios("baseline"),
        "ratio_with_export": median_or_nan(ratios("oplens", export=True)),
        "what_if_ratio": {k: median_or_nan(ratios(what_if=k)) for k in ("gc_off", "gc_off_no_shapes")},
        "events": reps[0]["oplens"]["events"],
        "function_events": reps[0]["baseline"]["function_events"],
        "oplens_ms": {
            k: median_of("oplens", k) for k in ("from_profiler_ms", "attribute_ms", "insights_ms", "total_ms", "export_ms")
        },
        "baseline_ms": {k: median_of("baseline", k) for k in ("events_ms", "key_averages_ms", "total_ms")},
        "rss_kib": {
            "oplens_before": median_of("oplens", "rss_before_kib", True),
            "oplens_peak": median_of("oplens", "peak_kib", True),
            "export_peak": median_of("oplens", "export_peak_kib", True),
            "baseline_before": median_of("baseline", "rss_before_kib", True),
            "baseline_peak": median_of("baseline", "peak_kib", True),
        },
        "peak_reset_worked": all(r[m]["peak_reset"] for r in reps for m in ("oplens", "baseline")),
        "trace_bytes": reps[0]["oplens"]["trace_bytes"],
    }


def print_table(s: dict[str, Any]) -> None:
    o, b, m = s["oplens_ms"], s["baseline_ms"], s["rss_kib"]
    print(
        f"profile: {LAYERS}x(Linear({WIDTH})+GELU), {ITERS} iters fwd+bwd, "
        f"{s['events']} kineto events ({s['function_events']} FunctionEvents)"
    )
    print("ms: median over all repetitions; RSS: median over the repetitions where the method ran first")
    print(f"{'':34} {'ms':>12} {'RSS before':>11} {'peak':>9} {'growth':>8}")
    rows = [
        ("OpLens from_profiler", o["from_profiler_ms"]),
        ("       attribute", o["attribute_ms"]),
        ("       find_insights", o["insights_ms"]),
    ]
    for name, ms in rows:
        print(f"  {name:<32} {ms:>12.1f}")
    mib = 1 / 1024

    def mem_row(name: str, ms: float, before: float, peak: float) -> None:
        print(f"  {name:<32} {ms:>12.1f} {before * mib:>8.0f} MiB {peak * mib:>5.0f} MiB {(peak - before) * mib:>+5.0f} MiB")

    mem_row("OpLens processing (total)", o["total_ms"], m["oplens_before"], m["oplens_peak"])
    print(
        f"  {'OpLens export_chrome_trace':<32} {o['export_ms']:>12.1f} {'':>11} {m['export_peak'] * mib:>5.0f} MiB"
        f"   ({s['trace_bytes'] / 2**20:.1f} MiB file)"
    )
    print(f"  {'baseline prof.events()':<32} {b['events_ms']:>12.1f}")
    print(f"  {'         prof.key_averages()':<32} {b['key_averages_ms']:>12.1f}")
    mem_row("baseline (total)", b["total_ms"], m["baseline_before"], m["baseline_peak"])

    def listed(values: list[float]) -> str:
        return " ".join(f"{v:.3f}" for v in values)

    print(f"ratio OpLens/baseline, OpLens first:   {s['ratio']:.3f}x ({listed(s['ratios_oplens_first'])}); target <= 0.25x")
    print(f"ratio OpLens/baseline, baseline first: {s['ratio_baseline_first']:.3f}x ({listed(s['ratios_baseline_first'])})")
    print(f"ratio (OpLens + trace export)/baseline, OpLens first: {s['ratio_with_export']:.3f}x")
    w = s["what_if_ratio"]
    if not math.isnan(w["gc_off"]):
        print(
            f"what-if, all repetitions: gc disabled {w['gc_off']:.3f}x; "
            f"gc disabled and no shapes/dtypes read {w['gc_off_no_shapes']:.3f}x"
        )
    if not s["peak_reset_worked"]:
        print("note: /proc/self/clear_refs was not writable: peaks include the profiling phase")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=4, help="fresh subprocesses (default 4), order alternating")
    parser.add_argument(
        "--what-if", action="store_true", help="also time OpLens's processing with gc disabled, and without shapes/dtypes"
    )
    parser.add_argument("--child", choices=("oplens", "baseline"), help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        child(opts.child, opts.what_if, opts.out)
        return
    t0 = time.perf_counter()
    reps = [run_child("oplens" if i % 2 == 0 else "baseline", opts.what_if) for i in range(opts.reps)]
    summary = summarize(reps)
    print_table(summary)
    meta = {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cpus": len(os.sched_getaffinity(0)),
        "rss_method": "getrusage ru_maxrss after /proc/self/clear_refs=5; RSS before from /proc/self/statm",
        "what_if": opts.what_if,
        "elapsed_s": round(time.perf_counter() - t0, 1),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "processing.json"
    out.write_text(json.dumps({"meta": meta, "summary": summary, "reps": reps}, indent=2))
    print(f"wrote {out.relative_to(ROOT)} ({meta['elapsed_s']} s)")


if __name__ == "__main__":
    main()
