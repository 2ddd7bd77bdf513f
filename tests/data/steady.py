"""Small functions (50 µs to 1 ms a call on a CPU) whose shares a profiler's start-up used to skew."""

import torch

X = torch.randn(64, 256)
W = torch.randn(256, 256)
V = torch.randn(256)


def front_loaded():
    a = X + 1.0  # the first op: the profiler's start-up used to land here
    b = a @ W
    c = torch.relu(b)
    d = c @ W
    return d.sum()


def elementwise_chain():
    y = X * V
    y = y.mean(-1, keepdim=True)
    z = torch.rsqrt(y + 1e-6)
    out = X * z * V
    return out


def one_heavy_line():
    s = X.sum()
    m = (X @ W) @ W.t()
    return s + m.mean()
