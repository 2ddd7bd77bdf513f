"""What `--neuron-exact` costs the profiled calls, on the stand-ins: the wall time of a profiled call with
deterministic mode on (torch.use_deterministic_algorithms(True), which turns TorchNeuron's Adaptive Eager Execution
off) over the same call without it.

The run: `oplens profile --backend neuron` (the CLI, as a user runs it) of `rmsnorm_loop` below on the stand-in
TorchNeuron and neuron-explorer (tests/standins/; STANDIN_FUSE=4: the stand-in fuses four queued ops per execution
where deterministic mode is off), `ITERS` profiled iterations, alternately with and without `--neuron-exact`, `PAIRS`
pairs (the order inside a pair alternates too). Each run's figure is its profiled calls' median wall time
(`totals.wall_us.median`, synchronised calls); its verdict is the median over pairs of exact / non-exact. First, the
same calls in one process, deterministic mode switched on and off call by call under torch.profiler (`alternating`):
the medians per mode, whose ratio a machine's drift cannot tilt. Ratios in the same session, never absolute times.

What it cannot say: the stand-in's tensors are on the CPU and its fusion changes no time on a device, so the ratio
here is what deterministic mode costs torch's CPU kernels and OpLens's own path. The cost that matters (fused vs
one execution per op on a NeuronCore) needs a trn2: docs/trainium-checklist.md asks for it.

    .venv/bin/python bench/neuron_exact.py [--pairs 5]
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

from neuron_processing import KNOWN, ROOT, STANDINS, rmsnorm_loop  # bench/ is the script's folder

sys.path.insert(0, str(ROOT / "tests"))
from support.neuron import write_stand_in_explorer  # noqa: E402  (the tests' stand-in explorer, as neuron_processing uses it)

RESULTS = ROOT / "bench" / "results"
ITERS, WARMUP, LOOPS = 20, 2, 40
TARGET = rmsnorm_loop("64, 128, 256", LOOPS)  # the processing bench's loop, on larger tensors


def one(folder: Path, exact: bool) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STANDIN_", "NEURON_RT_"))}
    env.update(PYTHONPATH=str(STANDINS), PATH=f"{write_stand_in_explorer(folder / 'bin').parent}{os.pathsep}{env['PATH']}",
               STANDIN_EXEC_US=KNOWN, STANDIN_NO_CORRELATE="1", STANDIN_FUSE="4", CUDA_VISIBLE_DEVICES="")  # fmt: skip
    argv = [sys.executable, "-m", "oplens", "profile", "target.py::rmsnorm_loop", "--backend", "neuron",
            "--warmup", str(WARMUP), "--iters", str(ITERS), "--json", "-", *(["--neuron-exact"] if exact else [])]  # fmt: skip
    proc = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    run = json.loads(proc.stdout)
    assert run["backend"]["details"]["adaptive_eager"]["active"] is (not exact), run["backend"]["details"]
    return float(run["totals"]["wall_us"]["median"])


def alternating(calls: int) -> dict[str, float]:
    """In one process (a child with the stand-in TorchNeuron on its path), the profiled calls as the worker runs
    them (torch.profiler on, each call synchronised), deterministic mode switched on and off between calls: the
    medians per mode and their ratio. Alternating call by call, a machine's drift falls on both alike."""
    code = f"""
import json, statistics, time, torch, torch_neuronx
exec(compile({TARGET!r}, "target.py", "exec"))
times = {{True: [], False: []}}
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
    for k in range({calls} + 4):
        exact = k % 2 == 0
        torch.use_deterministic_algorithms(exact)
        t0 = time.perf_counter_ns()
        rmsnorm_loop()
        torch.neuron.synchronize()
        if k >= 4:
            times[exact].append((time.perf_counter_ns() - t0) / 1e3)
        torch.use_deterministic_algorithms(False)
print(json.dumps({{"exact_us": statistics.median(times[True]), "default_us": statistics.median(times[False])}}))
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STANDIN_", "NEURON_RT_"))}
    env.update(PYTHONPATH=str(STANDINS), STANDIN_FUSE="4", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    got: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    got["ratio"] = got["exact_us"] / got["default_us"]
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200, help="alternating calls in one process (half each mode)")
    args = parser.parse_args()
    inproc = alternating(args.calls)
    print(f"in one process, {args.calls} calls alternating: exact {inproc['exact_us']:.1f} µs, default "
          f"{inproc['default_us']:.1f} µs (medians), ratio {inproc['ratio']:.3f}")  # fmt: skip
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "target.py").write_text(TARGET)
        for k in range(args.pairs):
            order = (False, True) if k % 2 == 0 else (True, False)
            got = {exact: one(folder, exact) for exact in order}
            rows.append({"exact_us": got[True], "default_us": got[False], "ratio": got[True] / got[False]})
            print(f"pair {k}: exact {got[True]:.1f} µs, default {got[False]:.1f} µs, ratio {got[True] / got[False]:.3f}")
    ratio = statistics.median(r["ratio"] for r in rows) if rows else None
    if ratio is not None:
        print(f"median ratio exact / default: {ratio:.3f} over {len(rows)} pairs ({ITERS} profiled calls each)")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "neuron_exact.json").write_text(json.dumps({"alternating": inproc, "pairs": rows, "median_ratio": ratio},
                                                          indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
