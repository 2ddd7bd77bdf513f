"""Merging rank parts: how long `oplens.analysis.ranks.merge` takes on the parts of a large
distributed capture (issue 13: <= 2 s for 64 parts of a 50-line function).

The parts: 64 synthetic ranks' runs (`Run`, as each rank's worker writes it) of one 50-line
function, 20 profiled calls each. Every line has 5 ops (names from a pool of 24 aten ops, so the
run-level op table has ~24 rows), a per-call device-time sample per call (5 µs-2 ms a line, a few
percent of noise around a per-rank factor), CPU samples, a spread, the run's totals made from the
lines, a capture record and the rank's `RankInfo`. Line 32 holds a `c10d::allreduce_` op (category
"collective") whose time is each rank's wait for the slowest; line 20 (~1 ms, ~12 % of the function)
is 1.6x slower on rank 37 (the straggler), so the fast ranks wait ~0.6 ms a call in the all-reduce
and rank 37 hardly at all. The merged run is checked (64 ranks, 50 lines, the straggler and
collective-wait insights) before anything is timed.

Timed (wall time, `time.perf_counter`, and the process's CPU time, which a busy machine inflates
less; the garbage collector on, as in the CLI):
  1. in memory: `merge(parts)` on the 64 parts built once;
  2. from disk: the 64 parts written once as `ranks/<R>/result.json`, then each read with the
     engine's `runs.load` (json.load + `Run.from_dict`) and merged; the read and the merge are
     also reported apart. The files are in the page cache after the first repeat (the repeats
     re-read the same files), as they are right after a capture wrote them;
  3. the same in a fresh interpreter (imports included), the cost of a merge run as its own
     command: `python -c "...load 64 parts; merge"` timed from outside;
  4. `oplens merge`'s own function, `engine.merge.merge_dirs`, on one host's run directory holding
     the 64 parts (its merged result.json and ranks/<R>/result.json): it reads the host's run and
     every part, hard-links each part's files into a new run, writes each part's result.json
     again (`Run.to_dict`), merges, and writes the merged run.
Each is repeated (--reps, 1 and 2; --fresh, 3; --merge-dirs, 4) and reported as the median with min..max and the
interquartile range over the repeats. The machine is shared: the spread is the point.

With --what-if (not OpLens's code): 2. again with `typing.get_type_hints` cached per class while
reading, which is where `Run.from_dict` spends most of its time (it resolves every dataclass's
string annotations again for each of the ~700 records of a part).

    .venv/bin/python bench/merge_ranks.py [--ranks 64] [--lines 50] [--reps 5] [--fresh 3] [--merge-dirs 3] [--what-if]
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import typing
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from oplens.analysis import stats
from oplens.analysis.ranks import merge
from oplens.engine import runs
from oplens.engine.merge import merge_dirs
from oplens.records.run import (
    BackendInfo,
    Capture,
    Config,
    LineStat,
    OpStat,
    RankInfo,
    Run,
    Spread,
    Target,
    Totals,
)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
CALLS, OPS_PER_LINE, FIRST_LINE = 20, 5, 10
STRAGGLER_LINE, STRAGGLER_RANK, STRAGGLER_FACTOR = 20, 37, 1.6
COLLECTIVE_LINE, COLLECTIVE_OP = 32, "c10d::allreduce_"
OP_POOL = [
    "aten::mm", "aten::addmm", "aten::bmm", "aten::add", "aten::mul", "aten::div", "aten::sub", "aten::gelu",
    "aten::silu", "aten::softmax", "aten::_softmax", "aten::layer_norm", "aten::native_layer_norm", "aten::copy_",
    "aten::to", "aten::transpose", "aten::view", "aten::reshape", "aten::sum", "aten::mean", "aten::rsqrt",
    "aten::cat", "aten::slice", "aten::embedding",
]  # fmt: skip


# ---- the synthetic parts -------------------------------------------------------------------


def line_shape(n_lines: int, seed: int) -> list[tuple[float, list[tuple[str, float, float]]]]:
    """Per line, the same on every rank: (device µs a call, [(op, share of the line, calls)])."""
    rng = random.Random(seed)
    shapes = []
    for i in range(n_lines):
        line = FIRST_LINE + i
        base = rng.lognormvariate(4.5, 1.2)  # median ~90 µs, 5 µs .. 2 ms
        base = min(max(base, 5.0), 2000.0)
        names = rng.sample(OP_POOL, OPS_PER_LINE)
        if line == STRAGGLER_LINE:  # a matmul-heavy line, ~12 % of the function
            base, names = 1000.0, ["aten::mm", *[n for n in names if n != "aten::mm"][: OPS_PER_LINE - 1]]
        if line == COLLECTIVE_LINE:  # the gradient all-reduce (its wait comes on top: make_part)
            base, names[0] = 150.0, COLLECTIVE_OP
        weights = [rng.random() + 0.1 for _ in names]
        total = sum(weights)
        ops = [(name, w / total, float(rng.choice((1, 1, 2, 4)))) for name, w in zip(names, weights, strict=True)]
        shapes.append((base, ops))
    return shapes


def make_part(rank: int, world: int, shapes: Sequence[tuple[float, list[tuple[str, float, float]]]]) -> tuple[RankInfo, Run]:
    rng = random.Random(1000 + rank)
    rank_factor = rng.uniform(0.97, 1.03)  # the rank's device, its clocks
    straggler_us = shapes[STRAGGLER_LINE - FIRST_LINE][0] * (STRAGGLER_FACTOR - 1.0)
    lines: list[LineStat] = []
    run_ops: dict[str, OpStat] = {}
    for i, (base, ops) in enumerate(shapes):
        number = FIRST_LINE + i
        mean_us = base * rank_factor * (STRAGGLER_FACTOR if number == STRAGGLER_LINE and rank == STRAGGLER_RANK else 1.0)
        if number == COLLECTIVE_LINE:  # the all-reduce waits for the slowest rank's extra work
            wait = 0.05 * straggler_us if rank == STRAGGLER_RANK else straggler_us
            mean_us += wait
        samples = [mean_us * rng.gauss(1.0, 0.03) for _ in range(CALLS)]
        cpu_samples = [s * 0.4 + 15.0 * rng.gauss(1.0, 0.05) for s in samples]
        dev, cpu = statistics.fmean(samples), statistics.fmean(cpu_samples)
        line_ops = []
        for name, share, calls in ops:
            op_dev = dev * share
            if number == COLLECTIVE_LINE and name == COLLECTIVE_OP:
                op_dev += wait - wait * share  # the wait lands on the collective op alone
            elif number == COLLECTIVE_LINE:
                op_dev -= wait * share
            op = OpStat(name=name, calls=calls, self_cpu_us=cpu * share, self_device_us=op_dev,
                        category="collective" if name == COLLECTIVE_OP else "",
                        device_spread=Spread(median=op_dev, min=op_dev * 0.95, max=op_dev * 1.06))  # fmt: skip
            line_ops.append(op)
            agg = run_ops.setdefault(name, OpStat(name=name, calls=0.0, self_cpu_us=0.0, self_device_us=0.0,
                                                  category=op.category))  # fmt: skip
            agg.calls += calls
            agg.self_cpu_us += op.self_cpu_us
            agg.self_device_us += op_dev
        line_ops.sort(key=lambda o: -o.self_device_us)
        lines.append(LineStat(
            line=number, self_cpu_us=cpu, self_device_us=dev, pct_device=0.0, pct_cpu=0.0,
            op_calls=sum(c for _, _, c in ops), ops=line_ops,
            device_spread=stats.spread(samples), cpu_spread=stats.spread(cpu_samples), noisy=stats.is_noisy(samples),
            device_samples_us=samples, cpu_samples_us=cpu_samples,
            collective_us=sum(o.self_device_us for o in line_ops if o.category),
        ))  # fmt: skip
    total_dev, total_cpu = sum(s.self_device_us for s in lines), sum(s.self_cpu_us for s in lines)
    for s in lines:
        s.pct_device, s.pct_cpu = 100.0 * s.self_device_us / total_dev, 100.0 * s.self_cpu_us / total_cpu
    ops_list = sorted(run_ops.values(), key=lambda o: -o.self_device_us)
    for o in ops_list:
        o.pct = 100.0 * o.self_device_us / total_dev
    dev_samples = [sum(s.device_samples_us[k] for s in lines) for k in range(CALLS)]
    cpu_samples = [sum(s.cpu_samples_us[k] for s in lines) for k in range(CALLS)]
    walls = [d * 1.05 for d in dev_samples]
    info = RankInfo(rank=rank, local_rank=rank % 8, world_size=world, host=f"node{rank // 8}", device=f"cuda:{rank % 8}",
                    part=f"ranks/{rank}", pid=40000 + rank)  # fmt: skip
    n_lines = len(shapes)
    run = Run(
        target=Target(file="/workspace/model.py", qualname="Block.forward", first_line=FIRST_LINE - 1,
                      last_line=FIRST_LINE + n_lines - 1, source_sha256="0" * 64, def_line=FIRST_LINE - 1),
        backend=BackendInfo(name="cuda", device_label="CUDA", torch_version="2.13.0", device_name="NVIDIA H200"),
        config=Config(warmup=3, iters=CALLS, profiler_warmup=2),
        totals=Totals(self_cpu_us=total_cpu, self_device_us=total_dev, op_calls=sum(s.op_calls for s in lines),
                      wall_us=stats.spread(walls), device_samples_us=dev_samples, cpu_samples_us=cpu_samples,
                      collective_us=sum(s.collective_us for s in lines)),
        lines=lines,
        ops=ops_list,
        capture=Capture(program="train.py", argv=["--steps", "100"], calls_seen=40, calls_skipped=3,
                        calls_profiler_warmup=2, calls_profiled=CALLS),
        ranks=[info],
        run_id="20261202-000000-Block.forward-abc123",
        created="2026-12-02T00:00:00Z",
    )  # fmt: skip
    return info, run


def make_parts(n_ranks: int, n_lines: int) -> list[tuple[RankInfo, Run]]:
    shapes = line_shape(n_lines, seed=7)
    return [make_part(r, n_ranks, shapes) for r in range(n_ranks)]


def check(merged: Run, n_ranks: int, n_lines: int) -> dict[str, Any]:
    """The merged run is what the parts say, or the timings are of something else."""
    assert len(merged.ranks) == n_ranks and len(merged.lines) == n_lines, (len(merged.ranks), len(merged.lines))
    kinds = {(i.kind, i.line, i.rank) for i in merged.insights}
    assert ("straggler", STRAGGLER_LINE, STRAGGLER_RANK) in kinds, kinds
    assert any(k == "collective_wait" and line == COLLECTIVE_LINE for k, line, _ in kinds), kinds
    return {
        "insights": sorted(f"{k} line {line}" + (f" rank {r}" if r is not None else "") for k, line, r in kinds),
        "totals_device_us": round(merged.totals.self_device_us, 1),
        "ops": len(merged.ops),
    }


# ---- timing ----------------------------------------------------------------------------------


class Timings:
    """Wall and CPU ms (this process's user+system time; a child's for the fresh runs) per measurement."""

    def __init__(self) -> None:
        self.wall: dict[str, list[float]] = {}
        self.cpu: dict[str, list[float]] = {}

    def add(self, key: str, wall_ms: float, cpu_ms: float) -> None:
        self.wall.setdefault(key, []).append(wall_ms)
        self.cpu.setdefault(key, []).append(cpu_ms)

    def time(self, key: str, fn: Callable[[], Any]) -> Any:
        t0, c0 = time.perf_counter(), time.process_time()
        value = fn()
        self.add(key, (time.perf_counter() - t0) * 1000.0, (time.process_time() - c0) * 1000.0)
        return value

    def summary(self) -> dict[str, Any]:
        return {k: {**summary(v), **cpu_summary(self.cpu[k])} for k, v in self.wall.items()}


def write_parts(root: Path, parts: Sequence[tuple[RankInfo, Run]]) -> list[tuple[RankInfo, Path]]:
    out = []
    for info, run in parts:
        d = root / info.part
        d.mkdir(parents=True, exist_ok=True)
        (d / runs.RESULT).write_text(json.dumps(run.to_dict()))
        out.append((info, d))
    return out


def load_and_merge(dirs: Sequence[tuple[RankInfo, Path]], timings: Timings, prefix: str) -> Run:
    """`runs.load` of each part, then `merge`: timed as {prefix}_load, {prefix}_merge and {prefix}_total."""
    t0, c0 = time.perf_counter(), time.process_time()
    loaded = timings.time(f"{prefix}_load", lambda: [(info, runs.load(d)) for info, d in dirs])
    merged: Run = timings.time(f"{prefix}_merge", lambda: merge(loaded))
    timings.add(f"{prefix}_total", (time.perf_counter() - t0) * 1000.0, (time.process_time() - c0) * 1000.0)
    return merged


@contextmanager
def hints_cached() -> Iterator[None]:
    """What-if (not OpLens's code): `typing.get_type_hints` memoised per class, in this process, for a while."""
    original = typing.get_type_hints
    typing.get_type_hints = functools.lru_cache(maxsize=None)(original)  # type: ignore[assignment]
    try:
        yield
    finally:
        typing.get_type_hints = original


FRESH = """
import sys, time
t0 = time.perf_counter()
from pathlib import Path
from oplens.analysis.ranks import merge
from oplens.engine import runs
root = Path(sys.argv[1])
parts = []
for d in sorted(root.glob("ranks/*"), key=lambda p: int(p.name)):
    run = runs.load(d)
    parts.append((run.ranks[0], run))
merged = merge(parts)
assert len(merged.ranks) == int(sys.argv[2])
print((time.perf_counter() - t0) * 1000.0)
"""


def fresh_run(root: Path, n_ranks: int, timings: Timings) -> None:
    """A fresh interpreter that imports, reads the parts and merges: `fresh_wall` (the whole process,
    its CPU time from rusage) and `fresh_inside` (first import to the merged run, as it measured)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", FRESH, str(root), str(n_ranks)], capture_output=True, text=True, timeout=600)
    wall = (time.perf_counter() - t0) * 1000.0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"fresh merge failed:\n{proc.stderr[-4000:]}")
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000.0
    timings.add("fresh_wall", wall, cpu)
    timings.add("fresh_inside", float(proc.stdout.strip().splitlines()[-1]), float("nan"))


def summary(values: Sequence[float]) -> dict[str, Any]:
    s = sorted(values)
    return {
        "median_ms": stats.median(s),
        "min_ms": s[0],
        "max_ms": s[-1],
        "iqr_ms": stats.iqr(s),
        "values_ms": [round(v, 2) for v in values],
    }


def cpu_summary(values: Sequence[float]) -> dict[str, Any]:
    known = sorted(v for v in values if not math.isnan(v))
    return {
        "cpu_median_ms": stats.median(known) if known else None,
        "cpu_values_ms": [round(v, 2) for v in known],
    }


ROWS = (
    ("merge", "merge (parts in memory)"),
    ("disk_total", "read {n} result.json + merge"),
    ("disk_load", "  of which read (runs.load x{n})"),
    ("disk_merge", "  of which merge"),
    ("fresh_wall", "fresh process: start+import+read+merge"),
    ("fresh_inside", "  of which import+read+merge"),
    ("merge_dirs", "oplens merge (engine.merge.merge_dirs)"),
    ("what_if_total", "what-if, hints cached: read + merge"),
    ("what_if_load", "  of which read"),
)


def print_table(res: dict[str, Any], target_ms: float) -> None:
    m = res["meta"]
    n = m["ranks"]
    size = f"result.json {m['part_bytes'] / 1024:.0f} KiB a part ({m['part_bytes'] * n / 2**20:.1f} MiB in all)"
    print(f"{n} parts x {m['lines']} lines x {OPS_PER_LINE} ops, {CALLS} calls a line; {size}")
    print(f"{'':40} {'wall ms':>9} {'min..max':>14} {'IQR':>7} {'CPU ms':>9} {'n':>3}")
    for key, name in ROWS:
        if key not in res["timings"]:
            continue
        t = res["timings"][key]
        rng = f"{t['min_ms']:.0f}..{t['max_ms']:.0f}"
        cpu = f"{t['cpu_median_ms']:.0f}" if t["cpu_median_ms"] is not None else "-"
        print(f"  {name.format(n=n):<38} {t['median_ms']:>9.0f} {rng:>14} {t['iqr_ms']:>7.0f} {cpu:>9} {len(t['values_ms']):>3}")
    print("wall: median, min..max and interquartile range over the repeats; CPU: median of the process's CPU time")
    for key, name in (("merge", "merge"), ("disk_total", "read + merge"), ("merge_dirs", "oplens merge")):
        if key not in res["timings"]:
            continue
        t = res["timings"][key]
        verdict = "met" if t["max_ms"] <= target_ms else ("met at the median" if t["median_ms"] <= target_ms else "NOT met")
        print(f"target {name} of {n} parts <= {target_ms / 1000:.0f} s: {verdict} (median {t['median_ms']:.0f} ms, "
              f"slowest {t['max_ms']:.0f} ms)")  # fmt: skip
    print("merged run's insights: " + "; ".join(res["check"]["insights"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--lines", type=int, default=50)
    parser.add_argument("--reps", type=int, default=5, help="repeats of the in-memory and from-disk timings (default 5)")
    parser.add_argument("--fresh", type=int, default=3, help="fresh-interpreter repeats (default 3; 0: none)")
    parser.add_argument("--merge-dirs", type=int, default=3, help="repeats of engine.merge.merge_dirs (default 3; 0: none)")
    parser.add_argument("--what-if", action="store_true", help="also read with typing.get_type_hints cached (not OpLens's code)")
    opts = parser.parse_args()
    if not 0 <= STRAGGLER_RANK < opts.ranks or opts.lines <= COLLECTIVE_LINE - FIRST_LINE:
        parser.error(f"needs --ranks > {STRAGGLER_RANK} and --lines > {COLLECTIVE_LINE - FIRST_LINE}")
    t_start = time.perf_counter()
    load_before = os.getloadavg()
    timings = Timings()
    parts = timings.time("build_parts", lambda: make_parts(opts.ranks, opts.lines))
    checked = check(merge(parts), opts.ranks, opts.lines)
    with tempfile.TemporaryDirectory(prefix="oplens-bench-merge-") as tmp:
        root = Path(tmp)
        dirs = write_parts(root, parts)
        part_bytes = statistics.median((d / runs.RESULT).stat().st_size for _, d in dirs)
        for _ in range(opts.reps):  # interleaved, so both see the same stretches of the machine's load
            timings.time("merge", lambda: merge(parts))
            check(load_and_merge(dirs, timings, "disk"), opts.ranks, opts.lines)
        for _ in range(opts.fresh):
            fresh_run(root, opts.ranks, timings)
        if opts.merge_dirs:  # the parts as one host's `oplens run` leaves them: its merged run above them
            host_run = merge(parts)
            host_run.run_dir = ""
            (root / runs.RESULT).write_text(json.dumps(host_run.to_dict()))
            for _ in range(opts.merge_dirs):
                check(timings.time("merge_dirs", lambda: merge_dirs([root], root / "out")), opts.ranks, opts.lines)
        if opts.what_if:
            with hints_cached():
                for _ in range(opts.reps):
                    check(load_and_merge(dirs, timings, "what_if"), opts.ranks, opts.lines)
    res = {
        "meta": {
            "ranks": opts.ranks,
            "lines": opts.lines,
            "ops_per_line": OPS_PER_LINE,
            "calls": CALLS,
            "part_bytes": part_bytes,
            "what_if": opts.what_if,
            "python": platform.python_version(),
            "cpus": len(os.sched_getaffinity(0)),
            "loadavg_before": load_before,
            "loadavg_after": os.getloadavg(),
            "date": time.strftime("%Y-%m-%d"),
            "elapsed_s": round(time.perf_counter() - t_start, 1),
        },
        "check": checked,
        "timings": timings.summary(),
    }
    print_table(res, target_ms=2000.0)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "merge_ranks.json"
    out.write_text(json.dumps(res, indent=2))
    print(
        f"wrote {out.relative_to(ROOT)} ({res['meta']['elapsed_s']} s; load average {load_before[0]:.1f} before, "
        f"{res['meta']['loadavg_after'][0]:.1f} after)"
    )


if __name__ == "__main__":
    main()
