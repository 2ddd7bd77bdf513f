"""Train the tiny LM on a built-in text, or train it and then generate from a prompt.

Run from examples/ as a module, or through the script examples/tinylm_train.py:

    python -m tinylm.train --steps 50
    python -m tinylm.train --mode generate --steps 200 --prompt "The "
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch

from tinylm.model import Config, TinyLM

# The training data: bytes of a short text, repeated. Small enough to learn in tens of steps,
# varied enough that the loss keeps falling for a few hundred.
TEXT = (
    "The quick brown fox jumps over the lazy dog. "
    "A tiny model learns the bytes of a tiny text, one step at a time. "
    "Attention looks back over the context; the MLP mixes what it found. "
    "Profile the block, find the slow line, make it faster, and profile again. "
)

Forward = Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor | None]]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    defaults = Config()
    p = argparse.ArgumentParser(prog="tinylm.train", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", choices=["train", "generate"], default="train", help="generate trains --steps first")
    p.add_argument("--steps", type=int, default=50, help="training steps")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=defaults.seq, help="context length")
    p.add_argument("--dim", type=int, default=defaults.dim)
    p.add_argument("--layers", type=int, default=defaults.layers)
    p.add_argument("--heads", type=int, default=defaults.heads)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log-every", type=int, default=10, help="print the loss every N steps")
    p.add_argument("--compile", action="store_true", help="train through torch.compile(model)")
    p.add_argument("--prompt", default="The ", help="generate: the text to continue")
    p.add_argument("--new-tokens", type=int, default=64, help="generate: how many tokens to add")
    p.add_argument("--top-k", type=int, default=None, help="generate: sample from the k likeliest tokens (default: greedy)")
    args = p.parse_args(argv)
    if args.steps < 0 or args.batch < 1 or args.seq < 1 or args.log_every < 1:
        p.error("--steps must be >= 0; --batch, --seq and --log-every >= 1")
    return args


def make_data() -> torch.Tensor:
    """The corpus as a 1-D tensor of byte ids, repeated so random windows span many copies."""
    return torch.tensor(list(TEXT.encode("utf-8")) * 8, dtype=torch.long)


def get_batch(data: torch.Tensor, batch: int, seq: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Random windows of seq tokens and the same windows shifted by one (the next-token targets)."""
    starts = torch.randint(0, len(data) - seq - 1, (batch,), generator=gen)
    x = torch.stack([data[s : s + seq] for s in starts.tolist()])
    y = torch.stack([data[s + 1 : s + seq + 1] for s in starts.tolist()])
    return x, y


def train_step(forward: Forward, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor) -> float:
    """One AdamW step on a batch; the loss (`.item()` waits for the step to finish)."""
    _, loss = forward(x, y)
    assert loss is not None  # targets were given
    opt.zero_grad(set_to_none=True)
    loss.backward()  # type: ignore[no-untyped-call]
    opt.step()
    return loss.item()


def train(model: TinyLM, args: argparse.Namespace, gen: torch.Generator) -> float | None:
    """Run args.steps AdamW steps; print the loss every args.log_every steps. Returns the last loss."""
    data = make_data()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    forward: Forward = torch.compile(model) if args.compile else model
    model.train()
    last: float | None = None
    step_times: list[float] = []
    for step in range(1, args.steps + 1):
        t0 = time.perf_counter()
        x, y = get_batch(data, args.batch, args.seq, gen)
        last = train_step(forward, opt, x, y)  # waits for the step to finish, so the timing is honest
        step_times.append(time.perf_counter() - t0)
        if step % args.log_every == 0:
            print(f"step {step} loss {last:.4f}", flush=True)
    if step_times:
        # The first step pays for warm-up (and compilation under --compile): leave it out of the mean.
        steady = step_times[1:] or step_times
        ms = 1000 * sum(steady) / len(steady)
        print(f"trained {args.steps} steps, final loss {last:.4f}, {ms:.1f} ms/step", flush=True)
    return last


def generate(model: TinyLM, args: argparse.Namespace, gen: torch.Generator) -> None:
    """Continue args.prompt by args.new_tokens tokens; print the ids and the decoded text."""
    model.eval()
    prompt = list(args.prompt.encode("utf-8")) or [ord(" ")]
    idx = torch.tensor([prompt], dtype=torch.long)
    out = model.generate(idx, args.new_tokens, top_k=args.top_k, generator=gen)
    ids = out[0].tolist()
    print("ids:", " ".join(str(i) for i in ids))
    print("text:", repr(bytes(ids).decode("utf-8", errors="replace")))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.manual_seed(args.seed)  # the weights
    gen = torch.Generator().manual_seed(args.seed)  # the batches and the sampling
    cfg = Config(dim=args.dim, heads=args.heads, layers=args.layers, seq=args.seq)
    model = TinyLM(cfg)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"TinyLM: {n_params / 1e6:.2f}M parameters, {cfg}", flush=True)
    train(model, args, gen)
    if args.mode == "generate":
        generate(model, args, gen)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
