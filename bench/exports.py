"""`oplens export` at scale: the time to write a run for Perfetto, speedscope and TensorBoard/HTA against the time to
read its trace (the floor: every export starts by reading it), on the same run in the same process, interleaved.

The run: `bench/workloads.py::small_ops_loop` (~27 profiler events a loop) profiled by the CLI, 20 calls, its loop
count chosen for about `--events` events. Each round times, in turn: reading `trace.json` (orjson where the
environment has it, as exports/traces.py reads it), then each export into a temporary folder; the ratio per
format is its median over the rounds against the reads' median. The issue's bar: at most 1.5× reading it, at a million events.
The exports pause the cyclic garbage collector (exports/traces.paused_gc); the read is also timed with it paused, and
each export's ratio to that read printed beside (the floor with the collector's share of reading taken out too).

    .venv/bin/python bench/exports.py [--events 1000000] [--rounds 3] [--run RUN_DIR] [--keep DIR]

`--keep DIR` copies the profiled run to DIR/<run id> (for `--run` next time: profiling a million events takes minutes).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "server"))

from oplens.engine import runs  # noqa: E402
from oplens.exports.formats import FORMATS  # noqa: E402
from oplens.exports.formats import export as export_run  # noqa: E402
from oplens.exports.traces import paused_gc  # noqa: E402
from oplens.records import jsonfile  # noqa: E402
from oplens.records.run import Run  # noqa: E402

EVENTS_PER_LOOP = 27
CALLS = 20


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--run", help="an existing run directory to export instead of profiling one")
    p.add_argument("--keep", help="a folder to copy the profiled run into (then pass it as --run)")
    a = p.parse_args()
    loops = max(1, a.events // (EVENTS_PER_LOOP * CALLS))
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        if a.run:
            run = runs.find(Path(a.run).parent, a.run)
        else:
            target = str(ROOT / "bench" / "workloads.py") + "::small_ops_loop"
            done = subprocess.run([sys.executable, "-m", "oplens", "profile", target, "--args", f"torch.randn(16), {loops}",
                                   "--iters", str(CALLS), "--warmup", "1", "--timeout", "3000"],
                                  cwd=ws, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})  # fmt: skip
            if done.returncode != 0:
                sys.exit(done.stderr[-3000:])
            run = runs.find(ws / ".oplens" / "runs", "latest")
            if a.keep:
                kept = Path(a.keep) / Path(run.run_dir).name
                shutil.copytree(run.run_dir, kept)
                print(f"the run kept: --run {kept}")
        assert isinstance(run, Run)
        trace = Path(run.run_dir) / run.artifacts.trace_json
        events = len(jsonfile.read(trace)["traceEvents"])
        times: dict[str, list[float]] = {"read": [], "read, GC paused": [], **{name: [] for name in FORMATS}}
        for r in range(a.rounds):
            t0 = time.perf_counter()
            jsonfile.read(trace)  # as the exports read it (orjson where there)
            times["read"].append(time.perf_counter() - t0)
            with paused_gc():
                t0 = time.perf_counter()
                jsonfile.read(trace)
                times["read, GC paused"].append(time.perf_counter() - t0)
            for name in FORMATS:
                out = ws / f"out-{r}-{name}"
                t0 = time.perf_counter()
                export_run(run, name, out)
                times[name].append(time.perf_counter() - t0)
        read, bare = statistics.median(times["read"]), statistics.median(times["read, GC paused"])
        print(f"{events:,} events, {a.rounds} rounds; read trace.json {read:.2f} s, {bare:.2f} s with the GC paused (medians)")
        for name in FORMATS:
            t = statistics.median(times[name])
            print(f"  {name:<12} {t:6.2f} s  {t / read:5.2f}× the read, {t / bare:5.2f}× the read with the GC paused   "
                  f"(rounds: {', '.join(f'{v:.2f}' for v in times[name])})")


if __name__ == "__main__":
    main()
