"""Processing a Neuron run on the stand-ins: how long `profiling.process` takes, and how often it runs the
chain of derived views (analysis/derive.py), where the device time comes from the op table or the runtime's
system trace.

The run: `rmsnorm_loop` below (the RMSNorm study's six naive lines, looped `LOOPS` times per call), profiled
by the worker's own steps (`profiling.prepare`, `measure`) on the stand-in TorchNeuron (tests/standins/,
placed on PYTHONPATH as tests/worker/test_neuron_device_time.py and test_neuron_runtime_trace.py place it), `ITERS`
profiled iterations. Two cases, as those tests run them:
  - op_table:     `correlate_device_time` on: the stand-in puts each op's device time in the op table only
                  (`STANDIN_OP_DEVICE_US`); no neuron-explorer, so the system trace is tried and says why not;
  - system_trace: no propagation (`STANDIN_NO_CORRELATE=1`), the stand-in runtime's executions
                  (`STANDIN_EXEC_US`) read through the stand-in neuron-explorer's table.
Timed: `profiling.process(...)` alone (the events read, the op table built from `prof.events()`, the device
time's source chosen, the chain), gc off inside as in the worker; the runtime's trace is ingested before the
timer starts (its `runtime` callable hands back what was read), so the stand-in tool's process start is not in
the figure. Counted: the chain's runs (each run of `derive.STEPS`) and the attributions of the profiled
iterations (each one decides the outliers: `outliers.find` on `ITERS` calls). Each repetition is a fresh
subprocess; the table gives medians, and bench/results/neuron_processing.json every repetition.

    .venv/bin/python bench/neuron_processing.py [--reps 5]
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
RESULTS = ROOT / "bench" / "results"
STANDINS = ROOT / "tests" / "standins"
ITERS, WARMUP, LOOPS = 20, 1, 40
KNOWN = "aten::mul=7,aten::mean=5,aten::add=2,aten::rsqrt=3"  # tests/support/neuron.py NAIVE_KNOWN
def rmsnorm_loop(shape: str, loops: int) -> str:
    """The target file: the RMSNorm study's six naive lines, looped `loops` times a call, on `shape`."""
    return f"""\
import torch

X, W, EPS = torch.randn({shape}), torch.ones({shape.rsplit(", ", 1)[-1]}), 1e-6


def rmsnorm_loop():
    x, w = X, W
    for _ in range({loops}):
        x_sq = x * x
        mean_sq = x_sq.mean(dim=-1, keepdim=True)
        mean_eps = mean_sq + EPS
        inv_rms = torch.rsqrt(mean_eps)
        x_norm = x * inv_rms
        x = x_norm * w
    return x
"""


TARGET = rmsnorm_loop("1, 8, 16", LOOPS)
CASES: dict[str, dict[str, str]] = {
    "op_table": {"STANDIN_OP_DEVICE_US": KNOWN},
    "system_trace": {"STANDIN_NO_CORRELATE": "1", "STANDIN_EXEC_US": KNOWN},
}


def child(folder: Path, out: Path) -> None:
    from oplens.analysis import derive, outliers
    from oplens.backends.registry import get as backend_spec
    from oplens.engine.targets import resolve
    from oplens.records.job import Job
    from oplens.worker import profiling

    counts = {"chain": 0, "attributions": 0}
    steps = derive.STEPS

    def counted(d: Any, inp: Any) -> None:
        counts["chain"] += 1
        steps[0][1](d, inp)

    derive.STEPS = ((steps[0][0], counted), *steps[1:])
    find = outliers.find

    def counting_find(device_us: Any, cpu_us: Any, work: Any) -> Any:
        counts["attributions"] += len(device_us) == ITERS
        return find(device_us, cpu_us, work)

    outliers.find = counting_find
    target, fn = resolve(folder / "loop.py", "rmsnorm_loop", None)
    stage = folder / "stage"
    stage.mkdir()
    job = Job(target=target, signature=fn.signature, args="", backend="neuron", warmup=WARMUP, iters=ITERS,
              stage_dir=str(stage), workspace=str(folder), profiler_warmup=2)  # fmt: skip
    quiet = lambda stage, done, total: None  # noqa: E731
    prepared = profiling.prepare(job, quiet)
    measured = profiling.measure(prepared, quiet)
    backend = prepared.backend
    artifacts = backend.artifacts(stage)
    rt = backend_spec(backend.name).runtime_time(stage, artifacts, target.def_line, ingest=True, fused=measured.fused)
    laps: dict[str, float] = {}
    t0 = time.perf_counter()
    derived = profiling.process(measured.prof, measured.shapes, len(measured.wall_us), target, backend.facts,
                                measured.fused, laps=laps, graphs=measured.graph_work, runtime=lambda: rt)  # fmt: skip
    total_ms = (time.perf_counter() - t0) * 1000.0
    dt = derived.device_time
    out.write_text(json.dumps({
        "total_ms": total_ms, "laps": laps, **counts, "source": dt.source if dt else "",
        "device_us": derived.attribution.totals.self_device_us,
        "events": len(measured.prof.profiler.kineto_results.events()),
    }))  # fmt: skip


def run_child(case: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "loop.py").write_text(TARGET)
        out = folder / "child.json"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("STANDIN_", "NEURON_RT_"))}
        path = env["PATH"]
        if case == "system_trace":
            sys.path.insert(0, str(ROOT / "tests"))
            from support.neuron import write_stand_in_explorer

            path = f"{write_stand_in_explorer(folder / 'bin').parent}{os.pathsep}{path}"
        env.update(CASES[case], PATH=path, PYTHONPATH=str(STANDINS), CUDA_VISIBLE_DEVICES="")
        proc = subprocess.run([sys.executable, __file__, "--child", str(folder), "--out", str(out)], cwd=folder,
                              env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
        if proc.returncode != 0 or not out.exists():
            raise RuntimeError(f"child ({case}) failed:\n{proc.stderr[-4000:]}")
        result: dict[str, Any] = json.loads(out.read_text())
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--child", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args.out)
        return
    print(f"rmsnorm_loop: {LOOPS}x6 ops a call, {ITERS} profiled iterations; medians of {args.reps} fresh processes")
    print(f"{'case':<14} {'source':<14} {'events':>7} {'process ms':>11} {'attribute ms':>13} {'chain runs':>11} "
          f"{'attributions':>13}")  # fmt: skip
    results: dict[str, list[dict[str, Any]]] = {}
    for case in CASES:
        reps = results[case] = [run_child(case) for _ in range(args.reps)]
        r = reps[0]
        total = statistics.median(x["total_ms"] for x in reps)
        attribute = statistics.median(x["laps"].get("attribute_ms", 0.0) for x in reps)
        each = ", ".join(f"{x['total_ms']:.0f}" for x in reps)
        print(f"{case:<14} {r['source']:<14} {r['events']:>7} {total:>11.1f} {attribute:>13.1f} {r['chain']:>11} "
              f"{r['attributions']:>13}   (each: {each} ms)")  # fmt: skip
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "neuron_processing.json").write_text(json.dumps(results, indent=1))
    print(f"wrote {RESULTS / 'neuron_processing.json'}")


if __name__ == "__main__":
    main()
