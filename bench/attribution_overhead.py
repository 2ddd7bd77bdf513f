"""Attribution overhead: what OpLens's line mode costs per call, relative to a plain profile.

Measured: the wall time of one call of a target function in each mode
  - "plain":  `torch.profiler.profile(activities=[CPU], record_shapes=True, with_stack=True)`, no
    markers: what a user would run by hand to get stacks (the baseline of every ratio);
  - "oplens": `torch.profiler.profile(activities=[CPU])` with the worker's per-iteration marker
    (`oplens.iter:<i>`) and a `LineMarker` active, as `worker/profiling.py` runs every profiled
    iteration (input shapes are not recorded there);
  - "oplens_shapes" (context): the same with `record_shapes=True`, as the worker runs its last
    warm-up call to read input shapes for the insights (and as every iteration ran before);
  - "none":   no profiler at all (context only: what profiling itself costs);
for two workloads: (a) `bench/workloads.py::many_small_ops` (~30 lines of elementwise ops on an
8-element tensor plus a same-file helper: the worst case, one marker per tiny op) and (b)
`examples/rmsnorm.py::rmsnorm_naive` on `make_inputs()` (large tensors: markers should vanish).

Why ratios: the machine is shared and noisy, so an absolute time says little. Each round runs
plain, the OpLens modes (their order flips every round), plain again, then none, each a block of
calls under its own profiler, so every mode samples the same stretches of time. A block yields
its median per-call time; the verdict for a mode is the median of its blocks over the median of
all plain blocks (robust to the occasional block that is slow as a whole). The spread shown is
the interquartile range of the per-round ratios (a mode's block over the geometric mean of the
round's two plain blocks), and the A/A column (plain again over plain) is what two identical
measurements differ by on this machine: the noise band.

glibc returns freed large buffers (rmsnorm's 16 MiB intermediates) to the OS, and faulting them
back in made rmsnorm calls 1-4x slower at random on the shared VM (10-50 ms for an 11 ms call),
which drowned what is measured here; so the script re-executes itself once with
MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_ set (the buffers stay in the heap), unless
--no-malloc-tuning is given. Whole slow blocks still happen now and then (the VM reclaims idle
pages); the A/A column shows them, and the median over rounds is robust to a few.

    .venv/bin/python bench/attribution_overhead.py [--rounds 11] [--threads 1] [--quick]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import platform
import statistics
import sys
import time
import types
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity

from oplens.worker.linemarks import MARKS_ENV, LineMarker, Range, code_objects

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
MALLOC_TUNING = {"MALLOC_MMAP_THRESHOLD_": str(2**30), "MALLOC_TRIM_THRESHOLD_": str(2**32)}


@dataclass
class Workload:
    name: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    markers: dict[str, LineMarker]  # mode → its line marker
    iters: int  # calls per mode per round
    target: str  # the target for oplens/plain, in words


@dataclass
class WorkloadResult:
    name: str
    iters_per_round: int
    rounds: int
    target: str
    ratios: dict[str, list[float]] = field(default_factory=dict)  # mode → per-round ratio to plain
    ratio: dict[str, float] = field(default_factory=dict)  # mode → median of its blocks / median of plain's
    ratio_q1: dict[str, float] = field(default_factory=dict)  # quartiles of the per-round ratios
    ratio_q3: dict[str, float] = field(default_factory=dict)
    median_us: dict[str, list[float]] = field(default_factory=dict)  # mode → per-round median
    events_per_call: dict[str, float] = field(default_factory=dict)


def load_module(path: Path, name: str) -> types.ModuleType:
    """Import a file as a module (as the worker does), so `code_objects` sees its functions."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def make_workload(path: Path, fn_name: str, args_fn: str, iters: int, target: str) -> Workload:
    module = load_module(path, f"bench_target_{path.stem}")
    fn = getattr(module, fn_name)
    args = getattr(module, args_fn)()
    args = args if isinstance(args, tuple) else (args,)
    codes = code_objects(module)
    markers = {"oplens": LineMarker(fn.__code__, codes), "oplens_shapes": LineMarker(fn.__code__, codes)}
    if markers["oplens"].mechanism == "monitoring":  # 3.12+: the settrace tracer beside it, in the same rounds
        os.environ[MARKS_ENV] = "settrace"
        markers["oplens_settrace"] = LineMarker(fn.__code__, codes)
        del os.environ[MARKS_ENV]
    return Workload(fn_name, fn, args, markers, iters, target)


def time_calls(w: Workload, marker: LineMarker | None) -> list[float]:
    """Per-call wall times (µs); with a marker, each call is an OpLens iteration (as in session.py)."""
    times = []
    for i in range(w.iters):
        t0 = time.perf_counter_ns()
        if marker is None:
            w.fn(*w.args)
        else:
            with Range(f"oplens.iter:{i}"), marker:
                w.fn(*w.args)
        times.append((time.perf_counter_ns() - t0) / 1000.0)
    return times


def measure(w: Workload, mode: str) -> tuple[float, int]:
    """One mode's median per-call time (µs) over `w.iters` calls, and its profiler event count."""
    for marker in w.markers.values():  # each block starts with no events set (a monitoring marker sets its own)
        marker.release()
    if mode == "none":
        return statistics.median(time_calls(w, None)), 0
    plain = mode.startswith("plain")
    shapes = plain or mode == "oplens_shapes"
    with torch.profiler.profile(activities=[ProfilerActivity.CPU], record_shapes=shapes, with_stack=plain) as prof:
        times = time_calls(w, None if plain else w.markers[mode])
    return statistics.median(times), len(prof.profiler.kineto_results.events())


def round_order(w: Workload, r: int) -> list[str]:
    middle = list(w.markers) if r % 2 == 0 else list(w.markers)[::-1]
    return ["plain", *middle, "plain_again", "none"]


def run_workload(w: Workload, rounds: int) -> WorkloadResult:
    modes = [*w.markers, "none", "plain_again"]
    res = WorkloadResult(w.name, w.iters, rounds, w.target)
    res.ratios = {m: [] for m in modes}
    res.median_us = {m: [] for m in ["plain", *modes]}
    events: dict[str, list[int]] = {m: [] for m in ["plain", *w.markers]}
    for mode in round_order(w, 0):  # warm-up: first profiler start, first calls, allocator
        measure(w, mode)
    for r in range(rounds):
        medians: dict[str, float] = {}
        for mode in round_order(w, r):
            medians[mode], n_events = measure(w, mode)
            if mode in events:
                events[mode].append(n_events)
        base = math.sqrt(medians["plain"] * medians["plain_again"])
        for mode in modes:
            res.ratios[mode].append(medians[mode] / (medians["plain"] if mode == "plain_again" else base))
        for mode, value in medians.items():
            res.median_us[mode].append(value)
    res.events_per_call = {m: statistics.median(v) / w.iters for m, v in events.items()}
    plain = statistics.median(res.median_us["plain"] + res.median_us["plain_again"])
    for mode, values in res.ratios.items():
        own = statistics.median(res.median_us[mode])
        res.ratio[mode] = own / (statistics.median(res.median_us["plain"]) if mode == "plain_again" else plain)
        res.ratio_q1[mode], _, res.ratio_q3[mode] = statistics.quantiles(values, n=4)
    return res


def print_table(results: list[WorkloadResult]) -> None:
    columns = [
        ("oplens", "OpLens/plain"),
        ("oplens_shapes", "with shapes/plain"),
        ("oplens_settrace", "settrace marks/plain"),
        ("plain_again", "A/A noise"),
        ("none", "none/plain"),
    ]
    columns = [c for c in columns if c[0] in results[0].ratios]
    head = f"{'workload':<15}" + "".join(f" {title:>22}" for _, title in columns) + "  target (OpLens/plain)"
    print(head)
    print("-" * len(head))
    for r in results:
        cells = "".join(f" {r.ratio[m]:>7.3f}x ({r.ratio_q1[m]:.2f}..{r.ratio_q3[m]:.2f})" for m, _ in columns)
        print(f"{r.name:<15}{cells}  {r.target}")
    print(
        "ratio of medians (interquartile range of the per-round ratios); events per call: "
        + "; ".join(f"{r.name} " + ", ".join(f"{m} {v:.0f}" for m, v in r.events_per_call.items()) for r in results)
    )


def reexec_with_malloc_tuning() -> None:
    """Restart this script with glibc's large-buffer recycling pinned (see the module docstring)."""
    if all(os.environ.get(k) == v for k, v in MALLOC_TUNING.items()):
        return
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **MALLOC_TUNING})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11, help="A-B-A rounds per workload (default 11)")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch intra-op threads (default 1: the 2 cores are shared, a second thread waits on the neighbour's load)",
    )
    parser.add_argument(
        "--no-malloc-tuning", action="store_true", help="keep glibc's default return of freed large buffers to the OS"
    )
    parser.add_argument("--quick", action="store_true", help="a fifth of the calls per round (a smoke test)")
    opts = parser.parse_args()
    if not opts.no_malloc_tuning:
        reexec_with_malloc_tuning()
    torch.set_num_threads(opts.threads)
    scale = 5 if opts.quick else 1
    workloads = [
        make_workload(ROOT / "bench" / "workloads.py", "many_small_ops", "small_input", 300 // scale, "<= 1.2x"),
        make_workload(
            ROOT / "examples" / "rmsnorm.py", "rmsnorm_naive", "make_inputs", 10 // scale, "within noise"
        ),
    ]
    t0 = time.perf_counter()
    mechanism = workloads[0].markers["oplens"].mechanism
    print(f"Python {platform.python_version()}, torch {torch.__version__}: OpLens's line marks on {mechanism}")
    results = [run_workload(w, opts.rounds) for w in workloads]
    print_table(results)
    meta = {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "line_marks": mechanism,
        "threads": torch.get_num_threads(),
        "cpus": len(os.sched_getaffinity(0)),
        "malloc_tuning": {k: os.environ.get(k, "") for k in MALLOC_TUNING},
        "elapsed_s": round(time.perf_counter() - t0, 1),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"attribution_overhead-py{sys.version_info.major}{sys.version_info.minor}.json"
    out.write_text(json.dumps({"meta": meta, "workloads": [asdict(r) for r in results]}, indent=2))
    print(f"wrote {out.relative_to(ROOT)} ({meta['elapsed_s']} s)")


if __name__ == "__main__":
    main()
