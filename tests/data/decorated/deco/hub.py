"""Decorators as libraries write them, each turning a function into another object (tests/worker/test_decorated.py)."""

import functools

import torch


class _Layer(torch.nn.Module):
    """What kernels' `use_kernel_forward_from_hub` makes of a function (issue 38): a module whose forward calls it."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def as_layer(fn):
    return _Layer(fn)


def plain_wrapper(fn):
    """A wrapper without functools.wraps: the function only in its closure."""

    def inner(*args):
        return fn(*args)

    return inner


_REGISTRY = {}


def _call_registered(name, *args):
    return _REGISTRY[name](*args)


def registered(fn):
    """The function kept where nothing the name holds reaches it (a registry of another module)."""
    _REGISTRY[fn.__name__] = fn
    return functools.partial(_call_registered, fn.__name__)
