"""Train a stack of tinyblock.Block for a few steps: a real program that calls Block.forward.

    python train_tinyblock.py --steps 30
    python train_tinyblock.py --sleep 600   # waits first, as a slow data loader would (the e2e cancels it)
"""

import argparse
import time

import torch
from torch import nn

from tinyblock import Block


def train_step(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, target: torch.Tensor) -> float:
    """One step: the step function of the e2e's program overview (its Block.forward calls are in tinyblock.py)."""
    loss = nn.functional.mse_loss(model(x), target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--sleep", type=float, default=0.0, help="seconds to wait before training")
    args = parser.parse_args()
    if args.sleep:
        print(f"loading data for {args.sleep:g} s", flush=True)
        time.sleep(args.sleep)
    torch.manual_seed(0)
    model = nn.Sequential(Block(), Block())
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(args.batch, 32, 64)
    target = torch.randn(args.batch, 32, 64)
    for step in range(1, args.steps + 1):
        loss = train_step(model, opt, x, target)
        print(f"step {step} loss {loss:.4f}", flush=True)
    print(f"trained {args.steps} steps")


if __name__ == "__main__":
    main()
