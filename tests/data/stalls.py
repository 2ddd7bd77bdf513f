"""A LLaMA-style MLP block whose calls are made to differ deterministically, for the outlier rule
(analysis/outliers.py): a custom op that sleeps inside itself on exactly one call (stall_op.py: a
stall, the same work far slower), and a data-dependent branch taken on exactly one call (other work:
real cost).

The calls are counted here, every call of `mlp` or `mlp_branch` (warm-ups, the profiler's warm-up and
the shapes call included), so a test names the call that stalls or branches: `make_inputs(stall_at=6)`.
"""

import torch
from stall_op import calls, maybe_stall

torch.set_num_threads(1)  # one thread: a busy machine slows a call, it does not make the thread pool wait
_branch = {"n": 0, "at": 0}


def _branch_now() -> bool:
    _branch["n"] += 1
    return _branch["n"] == _branch["at"]


def make_inputs(stall_at=0, branch_at=0, tokens=32, dim=256, hidden=512):
    """The block's inputs; the count of calls starts again from 0."""
    calls.update(n=0, stall_at=stall_at)
    _branch.update(n=0, at=branch_at)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(tokens, dim, generator=g)
    w1, w3 = torch.randn(dim, hidden, generator=g) / 16, torch.randn(dim, hidden, generator=g) / 16
    w2 = torch.randn(hidden, dim, generator=g) / 16
    return x, w1, w2, w3


def mlp(x, w1, w2, w3):
    gate = torch.nn.functional.silu(x @ w1)
    up = maybe_stall(x @ w3)
    return (gate * up) @ w2


def mlp_branch(x, w1, w2, w3):
    gate = torch.nn.functional.silu(x @ w1)
    up = x @ w3
    if _branch_now():  # data-dependent: once, a much longer path of other ops (real work)
        for _ in range(12):
            up = torch.tanh(up @ w3.t() @ w3)
    return (gate * up) @ w2


if __name__ == "__main__":  # a program calling `mlp` (`oplens run --target stalls.py::mlp -- stalls.py ...`)
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=12)
    parser.add_argument("--stall-at", type=int, default=0, help="the call (from 1) that stalls inside an op")
    parser.add_argument("--long-at", type=int, default=0, help="the call (from 1) on a 16× longer sequence: other work")
    a = parser.parse_args()
    x, w1, w2, w3 = make_inputs(stall_at=a.stall_at)
    longer = torch.randn(16 * x.shape[0], x.shape[1])
    for i in range(1, a.calls + 1):
        mlp(longer if i == a.long_at else x, w1, w2, w3)
    print("done")
