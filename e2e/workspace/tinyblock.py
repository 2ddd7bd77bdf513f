"""A small residual MLP block: the model of the e2e's program (train_tinyblock.py).

One operation per line, so that a capture of `Block.forward` inside the training loop shows what
each line costs.
"""

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int = 64, hidden: int = 256) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm(x)
        h = self.up(h)
        h = torch.nn.functional.gelu(h)
        h = self.down(h)
        return x + h
