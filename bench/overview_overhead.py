"""Overview overhead of `oplens run --step`: what a program's step costs inside the overview's window (Python
stacks recorded, a range per nn.Module call) and outside it, against the same program run plainly.

The program: `bench/programs/train_loop.py` (a training-like loop, each step timed by the program itself with
`time.perf_counter` and written to a file), at two sizes (`--sizes`, DIMxBATCH): 64x32, Python-heavy (~3-5 ms
a step of tiny ops: the worst case for any Python-level profiling), and 512x512 (~20-40 ms a step of larger
ops, closer to a real model's step). Each repetition runs
  A  `python train_loop.py --steps N`                                                (plain)
  B  `oplens run --step train_loop.py::train_step --skip S --profiler-warmup W --calls C -- train_loop.py`
and the order alternates between repetitions. B's window is steps S+W .. S+W+C-1 (0-based).
  1. inside: B's median step time over the window's steps over A's median over the same steps (target <= 1.3x);
  2. outside: B's median over the steps from the window's end + DROP (the run is processed in the step that
     ends the window, and the collector settles) to the end, over A's over the same steps (target <= 1.02x).
The verdict is the median of the per-repetition ratios: the 2 cores are shared, so only ratios of runs
seconds apart mean anything.

    .venv/bin/python bench/overview_overhead.py [--reps 3] [--steps 400] [--sizes 64x32,512x512]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROGRAM = HERE / "programs" / "train_loop.py"
SKIP, WARM, CALLS, DROP = 20, 2, 40, 20


def steps(argv: list[str], times: Path, steps_n: int, size: str) -> list[float]:
    env = {**os.environ, "OPLENS_BENCH_TIMES": str(times), "OMP_NUM_THREADS": "1"}
    dim, batch = size.split("x")
    done = subprocess.run([*argv, str(PROGRAM), "--steps", str(steps_n), "--dim", dim, "--batch", batch],
                          cwd=HERE / "programs", env=env, capture_output=True, text=True, timeout=900)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return list(json.loads(times.read_text())["step_us"])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--sizes", default="64x32,512x512", help="DIMxBATCH of the loop's model, comma-separated")
    a = parser.parse_args()
    plain = [sys.executable]
    with tempfile.TemporaryDirectory() as tmp:
        overview = [sys.executable, "-m", "oplens", "run", "--step", f"{PROGRAM}::train_step", "--skip", str(SKIP),
                    "--profiler-warmup", str(WARM), "--calls", str(CALLS), "--out", str(Path(tmp) / "runs"), "--"]  # fmt: skip
        lo, hi = SKIP + WARM, SKIP + WARM + CALLS
        verdicts = []
        for size in a.sizes.split(","):
            inside, outside = [], []
            for rep in range(a.reps):
                order = [("plain", plain), ("overview", overview)]
                if rep % 2:
                    order.reverse()
                got = {name: steps(argv, Path(tmp) / f"{name}.json", a.steps, size) for name, argv in order}
                p, o = got["plain"], got["overview"]
                r_in = statistics.median(o[lo:hi]) / statistics.median(p[lo:hi])
                r_out = statistics.median(o[hi + DROP :]) / statistics.median(p[hi + DROP :])
                inside.append(r_in)
                outside.append(r_out)
                print(f"{size} rep {rep}: plain step {statistics.median(p[lo:hi]):.0f} µs; inside the window "
                      f"{r_in:.3f}x, outside {r_out:.3f}x", flush=True)  # fmt: skip
            verdicts.append(f"{size}: inside the window {statistics.median(inside):.3f}x (target <= 1.3x), outside "
                            f"{statistics.median(outside):.3f}x (target <= 1.02x)")  # fmt: skip
    print(f"overview overhead (median of {a.reps} reps):\n  " + "\n  ".join(verdicts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
