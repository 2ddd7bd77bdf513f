"""The functions the capture tests capture: a module's forward (reached through nn.Module.__call__,
inherited by a subclass), a plain function (bound to another name at import), a recursive one."""

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int = 32) -> None:
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x)
        h = torch.relu(h)
        y = h * h
        return x + y


class Sub(Block):
    """Inherits forward unchanged."""


class Outer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = Block()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(x).sin()


def scale(x: torch.Tensor) -> torch.Tensor:
    s = x.abs().mean()
    return x / (s + 1)


def recurse(x: torch.Tensor, n: int) -> torch.Tensor:
    if n == 0:
        return x
    return recurse(x * 0.5, n - 1)


def unused(x: torch.Tensor) -> torch.Tensor:
    return x
