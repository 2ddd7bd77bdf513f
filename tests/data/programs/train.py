"""A real program for the capture tests (`oplens run`): a loop calling the captured functions,
printing one line per step, with switches for what a program can do (crash, exit, hang, threads,
torch.compile)."""

import argparse
import gc
import sys
import threading
import time

import torch
from torch.utils.data import DataLoader, Dataset

from capturepkg.model import Block, Outer, Sub, recurse, scale

SCALE = scale  # a reference bound at import time


class Scaled(Dataset[torch.Tensor]):
    """Items made in DataLoader worker processes, with the captured function."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> torch.Tensor:
        return scale(torch.full((4,), float(i)))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--sub", action="store_true", help="use the subclass that inherits forward")
    p.add_argument("--compile", action="store_true", help="torch.compile the outer module")
    p.add_argument("--thread", action="store_true", help="also call the block from another thread")
    p.add_argument("--crash-at", type=int, default=-1)
    p.add_argument("--exit-at", type=int, default=-1)
    p.add_argument("--hang-at", type=int, default=-1)
    p.add_argument("--loader", action="store_true", help="batches from a DataLoader whose 2 worker processes call scale")
    p.add_argument("--start-method", default=None, help="the DataLoader workers' start method (fork, forkserver: "
                   "Python 3.14's default on Linux, spawn)")
    p.add_argument("--heap", action="store_true", help="end by printing how many objects the cyclic collector walks")
    args = p.parse_args()
    torch.manual_seed(0)
    block = Sub() if args.sub else Block()
    outer = torch.compile(Outer()) if args.compile else None
    x = torch.randn(16, 32)
    loader = DataLoader(Scaled(args.steps), batch_size=None, num_workers=2, multiprocessing_context=args.start_method)
    batches = iter(loader) if args.loader else None
    for step in range(args.steps):
        if batches is not None:
            x = x + 0 * next(batches).sum()
        if step == args.crash_at:
            raise RuntimeError(f"crash at step {step}")
        if step == args.exit_at:
            sys.exit(7)
        if step == args.hang_at:
            time.sleep(3600)
        y = outer(x) if outer is not None else block(x)
        z = SCALE(y)
        z = recurse(z, 3)
        if args.thread:
            t = threading.Thread(target=block, args=(x,))
            t.start()
            t.join()
        print(f"step {step} {float(z.sum()):.4f}")
    print("finished")
    if args.heap:
        gc.collect()
        print(f"tracked {len(gc.get_objects())}")  # what each full collection walks (not the frozen ones)


if __name__ == "__main__":
    main()
