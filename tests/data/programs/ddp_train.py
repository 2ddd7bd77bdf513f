"""A real DDP training loop for the rank tests (`oplens run --nproc-per-node 2`): gloo on the CPU,
one line doing more work on the slow rank (a straggler), the gradients all-reduced in backward."""

import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def heavy(x: torch.Tensor, rounds: int) -> torch.Tensor:
    for _ in range(rounds):
        x = torch.tanh(x @ x.T @ x) / 64
    return x


def train_step(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor, rounds: int) -> float:
    out = model(x)
    extra = heavy(x, rounds)
    loss = ((out - y) ** 2).mean() + extra.mean() * 0
    loss.backward()
    opt.step()
    opt.zero_grad()
    return float(loss)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--slow-rank", type=int, default=1)
    p.add_argument("--crash-rank", type=int, default=-1)
    p.add_argument("--crash-at", type=int, default=-1)
    p.add_argument("--quiet-after", type=int, default=-1, help="print no step lines from this step on")
    args = p.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(256, 128), torch.randn(256, 1)
    rounds = 12 if rank == args.slow_rank else 1
    for step in range(args.steps):
        if rank == args.crash_rank and step == args.crash_at:
            raise RuntimeError(f"rank {rank} crashed at step {step}")
        loss = train_step(model, opt, x, y, rounds)
        if rank == 0 and (args.quiet_after < 0 or step < args.quiet_after):
            print(f"step {step} loss {loss:.4f}", flush=True)
    dist.destroy_process_group()
    print(f"rank {rank} of {os.environ.get('WORLD_SIZE')} done", flush=True)


if __name__ == "__main__":
    main()
