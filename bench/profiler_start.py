"""What a fresh worker pays before its first profiled call: torch imported and a torch.profiler session started and
stopped, as OpLens's worker starts one (`worker/calls.start_profiler`, which leaves torch._inductor unimported where
the program never imported it) against torch's own `torch.profiler.profile` (whose start reads inductor's
CUDA-graphs setting through `hasattr(torch, "_inductor")`, importing it). Each round runs both, alternating which
goes first, each in a fresh process; the figure is the ratio of the medians (the machine is shared: never one time
alone), with the objects the collector tracks after each.

    .venv/bin/python bench/profiler_start.py [--rounds 7] [--busy]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cli_runs import busy_core  # noqa: E402

CHILD = """
import gc, json, sys, torch
from torch.profiler import ProfilerActivity
if sys.argv[1] == "oplens":
    from oplens.worker.calls import start_profiler
    prof = start_profiler([ProfilerActivity.CPU])
else:
    prof = torch.profiler.profile(activities=[ProfilerActivity.CPU])
    prof.start()
(torch.ones(64) * 2).sum()
prof.stop()
print(json.dumps({"objects": len(gc.get_objects()), "inductor": "torch._inductor" in sys.modules}))
"""


def once(arm: str) -> tuple[float, dict[str, object]]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, arm], capture_output=True, text=True, timeout=300)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{arm} failed:\n{proc.stderr}")
    return wall, json.loads(proc.stdout.splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--busy", action="store_true", help="a busy loop on one core meanwhile")
    args = ap.parse_args()
    walls: dict[str, list[float]] = {"oplens": [], "torch": []}
    facts: dict[str, dict[str, object]] = {}
    with busy_core(args.busy):
        once("torch")  # the page cache warmed for both
        for r in range(args.rounds):
            for arm in ("oplens", "torch") if r % 2 == 0 else ("torch", "oplens"):
                wall, facts[arm] = once(arm)
                walls[arm].append(wall)
    med = {arm: statistics.median(w) for arm, w in walls.items()}
    for arm in ("oplens", "torch"):
        print(f"{arm:7s} median {med[arm]:.2f} s (min {min(walls[arm]):.2f}, max {max(walls[arm]):.2f}); "
              f"torch._inductor imported: {facts[arm]['inductor']}; tracked objects {facts[arm]['objects']:,}")  # fmt: skip
    print(f"fresh process to a stopped profiler: OpLens's start {med['oplens'] / med['torch']:.2f}x torch's "
          f"({args.rounds} rounds, interleaved{', one core busy' if args.busy else ''})")


if __name__ == "__main__":
    main()
