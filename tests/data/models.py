"""Targets for the engine's tests: methods, helpers, nested functions, torch's own Python."""

import functools

import torch


def scale(t, k):
    y = t * k
    return y + 1


def with_helper(x):
    a = x.sin()
    b = scale(a, 2.0)
    return b.sum()


class Block(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = torch.nn.Linear(n, n)

    def forward(self, x):
        h = self.lin(x)
        h = torch.nn.functional.gelu(h)
        return h * 2


def train_step(model, x):
    loss = model(x).sum()
    loss.backward()
    return loss


def outer(x):
    def inner(y):
        z = y.cos()
        return z * 3

    return inner(x)


def traced(fn):
    @functools.wraps(fn)
    def wrapper(*a):
        return fn(*a)

    return wrapper


@traced
def decorated(x):
    return x.exp()


def no_args(n=64):
    x = torch.ones(n)
    return x.relu()


def loop(x):
    for _ in range(3):
        x = x + 1
    return x


def recursive(x, n):
    y = x * 2
    if n > 0:
        y = y + recursive(y, n - 1)
    return y
