import torch


def swish(x: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(x)
