import functools

import torch

from .hub import as_layer, plain_wrapper, registered


@as_layer
def rotate(x):
    y = x * 2.0
    return torch.tanh(y)


@plain_wrapper
def wrapped(x):
    y = x + 1.0
    return y.sum()


def scaled(x, k):
    y = x * k
    return y.exp()


scaled = functools.partial(scaled, k=3.0)


@registered
def hidden(x):
    return x * 4.0


@torch.jit.script
def scripted(x):
    return x * 2.0


def make():
    return (torch.randn(32, 32),)
