import torch

X = torch.randn(192, 192)


def step():
    a = X * 2.0
    b = a @ X
    c = torch.relu(b)
    return c.sum()
