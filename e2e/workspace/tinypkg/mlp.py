"""A gated MLP (as in LLaMA-style blocks), one operation per line; a module of the package `tinypkg`."""

import torch
from torch import nn

from .activations import swish


class GatedMLP(nn.Module):
    def __init__(self, dim: int = 64, hidden: int = 256) -> None:
        super().__init__()
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = swish(self.gate(x))
        u = self.up(x)
        return self.down(g * u)


def make_inputs(batch: int = 8, dim: int = 64) -> tuple[GatedMLP, torch.Tensor]:
    return GatedMLP(dim), torch.randn(batch, dim)
