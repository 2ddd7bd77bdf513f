"""The file the loader tests capture: never imported by its own name, only loaded by path (as
Hugging Face's `trust_remote_code` modules and plugin loaders load theirs)."""

import torch


def gated(x: torch.Tensor) -> torch.Tensor:
    g = torch.sigmoid(x)
    y = x * g
    return y.sum(dim=-1)
