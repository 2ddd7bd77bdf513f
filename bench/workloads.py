"""Target functions for the benchmarks (imported as a module, so LineMarker can mark their lines).

`many_small_ops` is the worst case for line markers: ~30 lines of elementwise ops on an
8-element tensor, so each line's `record_function` range costs about as much as the op it
encloses; it also calls a same-file helper (`_helper`), whose lines get `oplens.inner` ranges.
`train_step` is the forward+backward target of the processing benchmark; `small_ops_loop` the one of
the processing scale benchmark, its profile as large as its loop count makes it.
"""

from __future__ import annotations

import torch


def small_input() -> torch.Tensor:
    """The argument of `many_small_ops`: a tiny tensor, so dispatch (not math) dominates."""
    torch.manual_seed(0)
    return torch.randn(8)


def _helper(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """A same-file helper: its lines are marked as `oplens.inner:_helper:<n>`."""
    c = a * b
    d = c + a
    return torch.tanh(d)


def many_small_ops(x: torch.Tensor) -> torch.Tensor:
    """About 30 lines, one or two elementwise ops each, on a tensor of 8 floats."""
    a = x * 2.0
    b = a + 1.0
    c = b - x
    d = c * c
    e = torch.sigmoid(d)
    f = e + a
    g = torch.tanh(f)
    h = g * b
    i = h / 3.0
    j = torch.relu(i)
    k = j + c
    m = k * 0.5
    n = torch.exp(m)
    o = n - 1.0
    p = torch.abs(o)
    q = p + e
    r = torch.sqrt(q + 1.0)
    s = r * g
    t = s.neg()
    u = t + h
    v = _helper(u, a)
    w = v * v
    y = w.clamp(-1.0, 1.0)
    z = y + d
    aa = torch.maximum(z, b)
    bb = aa - j
    cc = bb * 1.5
    dd = torch.sin(cc)
    ee = dd + n
    return ee.sum()


def train_step(model: torch.nn.Module, x: torch.Tensor) -> None:
    """One forward and backward pass: `model(x).sum().backward()`, one op group per line."""
    out = model(x)
    loss = out.sum()
    loss.backward()


def small_ops_loop(x: torch.Tensor, loops: int) -> torch.Tensor:
    """Five lines of one small elementwise op each, run `loops` times: ~27 profiler events a loop
    (the line markers, each op and what it dispatches to), so `loops` sets the profile's size."""
    for _ in range(loops):
        a = x * 2.0
        b = a + 1.0
        c = torch.sigmoid(b)
        d = c - 0.5
        x = d * 0.9
    return x
