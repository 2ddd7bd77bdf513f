"""Time from an editor's profile request to its result on Neuron, with the waiting worker and without (issue 38,
part 3), on the stand-in TorchNeuron (tests/standins: its documented API, autoloaded by `import torch` as the real
package's entry point is; no Trainium here).

With: the worker the language server keeps waiting, started as it starts it (`warm_environment` for the editor's
Neuron settings) and idle until it said "ready" (torch and the stand-in imported); the request's clock starts
then. Without: the request starts its own worker (what every Neuron profile from the editor did before). The two
alternate, `--rounds` each; the figure is the ratio of the medians (the machine is shared: never one time alone).

    .venv/bin/python bench/warm_worker.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from oplens.backends.neuron.options import NeuronOptions  # noqa: E402
from oplens.engine.process import WorkerProcess, warm_environment  # noqa: E402
from oplens.engine.profile import ProfileRequest, profile  # noqa: E402
from oplens.records.job import Ready, TargetSpec  # noqa: E402
from support.neuron import NAIVE_KNOWN, NAIVE_TARGET, write_stand_in_explorer  # noqa: E402
from support.paths import STANDINS  # noqa: E402


def stand_in(workspace: Path) -> None:
    """This process and its workers see the stand-in TorchNeuron (autoloaded) and its neuron-explorer."""
    sys.path.insert(0, str(STANDINS))
    bin_dir = write_stand_in_explorer(workspace / "bin").parent
    path = os.pathsep.join([str(STANDINS / "autoload"), str(STANDINS), os.environ.get("PYTHONPATH", "")])
    os.environ.update({"PYTHONPATH": path,
                       "STANDIN_EXEC_US": NAIVE_KNOWN, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
                       "STANDIN_API": "documented"})  # fmt: skip
    (workspace / "rmsnorm.py").write_text(NAIVE_TARGET)


def waiting_worker(workspace: Path, options: NeuronOptions) -> WorkerProcess:
    """A worker started as the language server starts its waiting one, returned once it said "ready"."""
    staging = workspace / ".oplens" / "runs" / ".staging"
    worker = WorkerProcess(staging, cwd=workspace, env=warm_environment(staging, {"neuron": options}))
    while not isinstance(worker.messages.get(timeout=120), Ready):
        pass
    worker.ready = True
    return worker


def request_s(workspace: Path, options: NeuronOptions, worker: WorkerProcess | None) -> float:
    req = ProfileRequest(TargetSpec("rmsnorm.py", "rmsnorm_naive"), backend="neuron", warmup=1, iters=3,
                         workspace=workspace, backend_options={"neuron": options})  # fmt: skip
    t0 = time.perf_counter()
    profile(req, worker=worker)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    options = NeuronOptions()
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        stand_in(workspace)
        times: dict[str, list[float]] = {"waiting worker": [], "fresh worker": []}
        request_s(workspace, options, None)  # the first run's caches (the NEFF cache, the files read) out of the figures
        for r in range(args.rounds):
            order = ["waiting worker", "fresh worker"] if r % 2 == 0 else ["fresh worker", "waiting worker"]
            for mode in order:
                worker = waiting_worker(workspace, options) if mode == "waiting worker" else None
                times[mode].append(request_s(workspace, options, worker))
        for mode, values in times.items():
            print(f"{mode:15s} median {statistics.median(values):.2f} s  ({', '.join(f'{v:.2f}' for v in values)})")
        ratio = statistics.median(times["waiting worker"]) / statistics.median(times["fresh worker"])
        print(f"request to result, waiting / fresh: {ratio:.2f}x ({args.rounds} rounds each, alternating)")


if __name__ == "__main__":
    main()
