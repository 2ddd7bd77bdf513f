"""A Python-heavy, training-like loop: the program `bench/capture_overhead.py` runs plainly and
under `oplens run --target bench/programs/train_loop.py::gated_mix`.

Each step: a small MLP of residual blocks (LayerNorm, two Linears), `gated_mix` after every block
(the target: BLOCKS calls a step), a loss, backward, an SGD step, and the Python bookkeeping a
training script does (a metrics dict, a loop over a list, a few scalar reads). The program times
each step itself with `time.perf_counter` (and its own CPU time with `time.thread_time`) and writes
the per-step times (µs) to the file given by `--times` (or the environment variable
OPLENS_BENCH_TIMES), as JSON.

Lockstep (for the benchmark's interleaving): with OPLENS_BENCH_SYNC=READY:GO (two FIFOs the
benchmark made and holds open), every --chunk steps the program writes one byte to READY and waits
for one byte on GO before it goes on, outside the timed steps; after the last step, with its times
written, it writes `d`. So several programs take turns, a chunk each, and sample the same stretches
of the machine's load.

`--probe-calls N` calls `make_inputs()` N times before the loop: a target of its own for the
benchmark's decomposition (a window that completes, or never starts, before the first step).

`make_inputs()` gives `gated_mix` arguments of the shapes the loop passes, for
`oplens profile bench/programs/train_loop.py::gated_mix --args "make_inputs()"`.

    python bench/programs/train_loop.py --steps 600 --times /tmp/steps.json
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence

import torch
from torch import nn

DIM = 64
BATCH = 32
BLOCKS = 4  # gated_mix calls per step
GATES = 3


class Block(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.fc2 = nn.Linear(2 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(torch.relu(self.fc1(self.norm(x))))


def gated_mix(x: torch.Tensor, gates: Sequence[torch.Tensor], scales: Sequence[torch.Tensor]) -> torch.Tensor:
    """The target: a few small elementwise ops per gate, in a Python loop."""
    out = x
    for gate, scale in zip(gates, scales, strict=True):
        out = out * torch.sigmoid(gate) + scale
    return out / len(gates)


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block(DIM) for _ in range(BLOCKS))
        self.gates = nn.ParameterList(nn.Parameter(torch.zeros(DIM)) for _ in range(BLOCKS * GATES))
        self.scales = nn.ParameterList(nn.Parameter(torch.zeros(DIM)) for _ in range(BLOCKS * GATES))
        self.head = nn.Linear(DIM, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, block in enumerate(self.blocks):
            x = block(x)
            part = slice(i * GATES, (i + 1) * GATES)
            x = gated_mix(x, list(self.gates[part]), list(self.scales[part]))
        return self.head(x)


def make_inputs() -> tuple[torch.Tensor, list[nn.Parameter], list[nn.Parameter]]:
    """`gated_mix`'s arguments, as the loop passes them: an activation that requires grad, and
    parameters."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(BATCH, DIM, generator=g, requires_grad=True)
    gates = [nn.Parameter(torch.randn(DIM, generator=g)) for _ in range(GATES)]
    scales = [nn.Parameter(torch.randn(DIM, generator=g)) for _ in range(GATES)]
    return x, gates, scales


def train_step(model: Model, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss


def batches(n: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(BATCH, DIM, generator=g), torch.randn(BATCH, 1, generator=g)) for _ in range(n)]


def main() -> None:
    global DIM, BATCH  # --dim/--batch size the model and the batches the functions above build
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--times", default=os.environ.get("OPLENS_BENCH_TIMES", ""))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--chunk", type=int, default=20, help="steps between lockstep turns")
    parser.add_argument("--probe-calls", type=int, default=0, help="make_inputs() calls before the loop")
    parser.add_argument("--dim", type=int, default=DIM, help="the model's width (larger: fewer Python calls per FLOP)")
    parser.add_argument("--batch", type=int, default=BATCH)
    opts = parser.parse_args()
    DIM, BATCH = opts.dim, opts.batch
    sync = os.environ.get("OPLENS_BENCH_SYNC", "")
    ready = go = None
    if sync:
        ready_path, go_path = sync.split(":")
        ready, go = open(ready_path, "wb", buffering=0), open(go_path, "rb", buffering=0)
    torch.manual_seed(0)
    torch.set_num_threads(opts.threads)
    model = Model()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    data = batches(16)
    for _ in range(opts.probe_calls):  # a target that is done (or waiting) before the loop starts
        make_inputs()
    metrics: dict[str, float] = {}
    history: list[float] = []
    step_us: list[float] = []
    cpu_us: list[float] = []
    for step in range(opts.steps):
        if ready is not None and go is not None and step % opts.chunk == 0:
            ready.write(b"r")  # this turn is over: wait for the next one
            go.read(1)
        t0, c0 = time.perf_counter(), time.thread_time()
        x, y = data[step % len(data)]
        loss = train_step(model, opt, x, y)
        # the bookkeeping of a training script: scalars, a running window, a metrics dict
        value = loss.item()
        history.append(value)
        window = history[-32:]
        metrics["loss"] = value
        metrics["loss_avg"] = sum(window) / len(window)
        metrics["loss_max"] = max(window)
        for name, p in model.named_parameters():
            if p.grad is not None and name.endswith("bias"):
                metrics[f"grad/{name}"] = metrics.get(f"grad/{name}", 0.0) * 0.9 + 0.1
        tags = [f"{k}={v:.3f}" for k, v in metrics.items() if k.startswith("loss")]
        metrics["tags"] = float(len(",".join(tags)))
        step_us.append((time.perf_counter() - t0) * 1e6)
        cpu_us.append((time.thread_time() - c0) * 1e6)
    if opts.times:
        with open(opts.times, "w") as f:
            json.dump({"step_us": step_us, "cpu_us": cpu_us, "target_calls_per_step": BLOCKS, "steps": opts.steps}, f)
    if ready is not None:
        ready.write(b"d")


if __name__ == "__main__":
    main()
