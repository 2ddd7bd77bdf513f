"""The verdicts of `oplens compare` under noise (issue 37's Done means), quiet and with a busy loop on one core.

Every compare is the real CLI in a real worker, as a user runs it. Counted:

1. agreement: the case study's speed-ups (examples/rmsnorm.py: naive, fused, compiled) against a one-process
   interleaved measurement made right after each compare, without the profiler (every variant called in turn,
   the order rotated each round, CALLS calls each, the ratio of median calls), in a process with the heap the
   worker has (engine/process.py: STEADY_HEAP): within a factor 1.35 in 4 of 5. The same measurement with
   glibc's default heap is printed beside it: there a freed tensor is page-faulted in again, so the naive
   variant (five intermediates) pays page faults that vary from run to run, and its own speed-ups move with them;
2. the case study's verdicts: the same in every run, and never a faster variant reported slower;
3. A/A: two identical functions under two names: the interval holds 1 in 19 of 20;
4. power: a variant doing the same work twice: `slower` in 19 of 20;
5. wall time: `oplens compare A B` against today's sequential method before issue 37 (`oplens profile A`, then
   `oplens profile B`, each in its own worker): the ratio of the medians.

    .venv/bin/python bench/verdicts.py [--runs 20] [--busy]

Ratios and counts only; the machine is shared. Results: docs/benchmarks.md.
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

from cli_runs import busy_core, oplens
from oplens.engine.process import STEADY_HEAP

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "rmsnorm.py"
CASE = ["rmsnorm_naive", "rmsnorm_fused", "rmsnorm_compiled"]
CASE_ARGS = "make_inputs(4, 256, 1024)"
CALLS = 200
VARIANTS = (ROOT / "tests" / "data" / "variants.py").read_text()  # same_a, same_b (an A/A), twice (2x)
# The truth: the case study's variants called in turn in one process, no profiler (as a user's own timing does).
TRUTH = f"""\
import statistics, sys, time
sys.path.insert(0, {str(EXAMPLE.parent)!r})
import rmsnorm as m
args = m.{CASE_ARGS}
fns = [getattr(m, n) for n in {CASE!r}]
for f in fns:
    for _ in range(5):
        f(*args)
times = [[] for _ in fns]
for r in range({CALLS}):
    k = r % len(fns)
    for i in list(range(len(fns)))[k:] + list(range(len(fns)))[:k]:
        t = time.perf_counter()
        fns[i](*args)
        times[i].append(time.perf_counter() - t)
base = statistics.median(times[0])
print([base / statistics.median(t) for t in times])
"""




def unprofiled(heap: dict[str, str]) -> list[float]:
    """The case study's speed-ups measured plainly, in a fresh process with `heap` added to its environment."""
    proc = subprocess.run([sys.executable, "-c", TRUTH], capture_output=True, text=True, check=True, timeout=600,
                          env={k: v for k, v in os.environ.items() if k not in STEADY_HEAP} | heap)  # fmt: skip
    found: list[float] = json.loads(proc.stdout.strip())
    return found


def compare(cwd: Path, out: Path, targets: list[str], args: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = oplens(cwd, "compare", *targets, "--args", args, "--out", str(out), codes=(0, 1))["summary"]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="A/A and power compares (the case study: a quarter)")
    parser.add_argument("--busy", action="store_true", help="a busy loop on one core meanwhile")
    opts = parser.parse_args()
    with busy_core(opts.busy), tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "variants.py").write_text(VARIANTS)
        report(work, opts.runs, opts.busy)


def report(work: Path, runs: int, busy: bool) -> None:
    out = work / "runs"
    case_runs = max(5, runs // 4)
    print(f"# oplens compare verdicts ({'busy loop on one core' if busy else 'quiet'}), {time.strftime('%Y-%m-%d %H:%M')}")
    agreement: list[list[float]] = []
    verdicts: list[tuple[str, ...]] = []
    for _ in range(case_runs):
        rows = compare(work, out, [f"{EXAMPLE}::{n}" for n in CASE], CASE_ARGS)
        truth = unprofiled(STEADY_HEAP)
        default_heap = unprofiled({})
        agreement.append([max(r["speedup"] / t, t / r["speedup"]) for r, t in zip(rows[1:], truth[1:], strict=True)])
        verdicts.append(tuple(r["verdict"] for r in rows[1:]))
        print("case study:", ", ".join(f"{r['variant']} {r['speedup']:.2f}x [{r['speedup_interval'][0]:.2f}, "
                                       f"{r['speedup_interval'][1]:.2f}] {r['verdict']} in {r['rounds']} rounds "
                                       f"(unprofiled {t:.2f}x, with glibc's default heap {d:.2f}x)"
                                       for r, t, d in zip(rows[1:], truth[1:], default_heap[1:], strict=True)))  # fmt: skip
    within = sum(all(f <= 1.35 for f in a) for a in agreement)
    print(f"agreement with the unprofiled interleaved speed-up within 1.35x: {within} of {case_runs} runs "
          f"(largest factor per run: {', '.join(f'{max(a):.2f}' for a in agreement)})")  # fmt: skip
    print(f"case-study verdicts: {len(set(verdicts))} distinct over {case_runs} runs "
          f"({'; '.join(sorted(set(', '.join(v) for v in verdicts)))}); reported slower: "
          f"{sum(v.count('slower') for v in verdicts)}")  # fmt: skip
    holds = slower = 0
    aa: list[str] = []
    for _ in range(runs):
        a_a, doubled = compare(work, out, ["variants.py::same_a", "variants.py::same_b", "variants.py::twice"],
                               "make_inputs()")[1:]  # fmt: skip
        low, high = a_a["speedup_interval"]
        holds += low <= 1.0 <= high
        slower += doubled["verdict"] == "slower"
        aa.append(f"{a_a['speedup']:.3f} [{low:.3f}, {high:.3f}]")
    print(f"A/A interval holds 1: {holds} of {runs} ({'; '.join(aa)})")
    print(f"a 2x slower variant reported slower: {slower} of {runs}")
    together, apart = [], []
    for _ in range(3):
        t0 = time.perf_counter()
        compare(work, out, ["variants.py::same_a", "variants.py::twice"], "make_inputs()")
        together.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for name in ("same_a", "twice"):
            oplens(work, "profile", f"variants.py::{name}", "--args", "make_inputs()", "--out", str(out))
        apart.append(time.perf_counter() - t0)
    print(f"wall time, compare of two side by side / two profiles one after the other: "
          f"{statistics.median(together) / statistics.median(apart):.2f}x "
          f"({statistics.median(together):.1f} s / {statistics.median(apart):.1f} s, medians of 3)")  # fmt: skip


if __name__ == "__main__":
    main()
