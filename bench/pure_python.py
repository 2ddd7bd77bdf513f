"""What running without numpy and orjson costs: the pure-Python fallbacks (analysis/purearrays.py,
records/jsonfile.py) against numpy and orjson, on the same stored runs.

The editor extension bundles only pure-Python libraries, so in an environment with torch but without
numpy (torch does not require it) or orjson, the analysis runs on lists and JSON is read by json.
`OPLENS_PURE_PYTHON=1` picks the fallbacks where numpy and orjson are installed, so both are timed here
on one machine, seconds apart, in alternating fresh subprocesses (the choice is made at import).

The runs, profiled once with numpy by `oplens profile` (CPU):
  - small: examples/rmsnorm.py::rmsnorm_naive on make_inputs(2, 64, 256), 20 iterations: a
    function's profile as the editor makes one (a few hundred events);
  - large: bench/workloads.py::small_ops_loop with 400 loops, 10 iterations (~110,000 events): a big
    profile, where numpy's columns matter.
Timed per run, in each mode:
  - read: `jsonfile.read` of the run's trace.json (orjson or json);
  - analyze: `engine.analyze.reanalyze` (`oplens analyze`: the trace read into events, then the whole
    chain of analysis/derive.py: attribution, work and memory, insights, roofline);
and the whole `oplens profile` of each (the worker's processing lap from its timings_ms: the events read
from Kineto into columns, then the same chain; and the command's wall time, torch's import included),
what a user of the editor waits for.

    .venv/bin/python bench/pure_python.py [--reps 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RUNS = {
    "small": ["examples/rmsnorm.py::rmsnorm_naive", "--args", "make_inputs(2, 64, 256)", "--iters", "20"],
    "large": ["bench/workloads.py::small_ops_loop", "--args", "torch.randn(8), 400", "--iters", "10", "--warmup", "1"],
}
MODES = {"numpy+orjson": "0", "pure Python": "1"}


def oplens(out: Path, argv: list[str], pure: str) -> tuple[float, dict[str, Any]]:
    """`oplens profile ARGV --backend cpu --out OUT --json -`: its wall time (s) and its result."""
    env = {**os.environ, "OPLENS_PURE_PYTHON": pure, "CUDA_VISIBLE_DEVICES": ""}
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "oplens", "profile", *argv, "--backend", "cpu", "--out", str(out),
                           "--json", "-"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)  # fmt: skip
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"oplens profile {' '.join(argv)} failed:\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout)
    return wall, result


def child(run_dir: str) -> None:
    """In a fresh process (the mode set by the environment): time reading and re-analysing one run."""
    from oplens.analysis import arrays
    from oplens.engine import runs
    from oplens.engine.analyze import reanalyze
    from oplens.records import jsonfile

    d = Path(run_dir)
    trace = next(d.glob("trace.json"))
    t = time.perf_counter()
    data = jsonfile.read(trace)
    read_s = time.perf_counter() - t
    run = runs.load(d)
    t = time.perf_counter()
    reanalyze(run)
    analyze_s = time.perf_counter() - t
    print(json.dumps({"numpy": arrays.NUMPY, "orjson": jsonfile.ORJSON, "events": len(data.get("traceEvents", [])),
                      "read_s": read_s, "analyze_s": analyze_s}))  # fmt: skip


def timed(run_dir: Path, pure: str) -> dict[str, Any]:
    env = {**os.environ, "OPLENS_PURE_PYTHON": pure}
    proc = subprocess.run([sys.executable, __file__, "--child", str(run_dir)], env=env, capture_output=True, text=True,
                          timeout=1800, check=True)  # fmt: skip
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--child", metavar="RUN_DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        dirs = {}
        for name, argv in RUNS.items():
            _, result = oplens(out, argv, "0")
            dirs[name] = out / result["run_id"]
        rows: dict[tuple[str, str], dict[str, list[float]]] = {}
        events: dict[str, int] = {}
        for rep in range(args.reps):
            order = list(MODES.items()) if rep % 2 == 0 else list(MODES.items())[::-1]
            for mode, pure in order:
                for name, d in dirs.items():
                    r = timed(d, pure)
                    assert r["numpy"] == (pure == "0") and r["orjson"] == (pure == "0"), r
                    events[name] = r["events"]
                    cell = rows.setdefault((name, mode), {"read_s": [], "analyze_s": []})
                    cell["read_s"].append(r["read_s"])
                    cell["analyze_s"].append(r["analyze_s"])
                for name, argv in RUNS.items():
                    wall, result = oplens(out, argv, pure)
                    cell = rows.setdefault((f"profile {name}", mode), {"processing_s": [], "wall_s": []})
                    cell["wall_s"].append(wall)
                    cell["processing_s"].append(result["timings_ms"]["processing_ms"] / 1000)

    def med(xs: list[float]) -> float:
        return statistics.median(xs)

    fast, pure_name = list(MODES)
    print(f"python {sys.version.split()[0]}, {args.reps} alternating reps, medians")
    print(f"{'run':<28}{'events':>9}{'what':>12}{fast:>16}{pure_name:>14}{'ratio':>8}")
    for name in RUNS:
        for what in ("read_s", "analyze_s"):
            a, b = med(rows[(name, fast)][what]), med(rows[(name, pure_name)][what])
            print(f"{name:<28}{events[name]:>9,}{what[:-2]:>12}{a * 1000:>13.1f} ms{b * 1000:>11.1f} ms{b / a:>7.2f}x")
    for name in RUNS:
        for what in ("processing_s", "wall_s"):
            a, b = med(rows[(f"profile {name}", fast)][what]), med(rows[(f"profile {name}", pure_name)][what])
            label = f"oplens profile ({name})"
            print(f"{label:<28}{'':>9}{what[:-2]:>12}{a * 1000:>13.1f} ms{b * 1000:>11.1f} ms{b / a:>7.2f}x")


if __name__ == "__main__":
    main()
