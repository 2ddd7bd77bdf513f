"""Variants for the compare tests and bench/verdicts.py: two identical functions under two names (an A/A),
one doing the same work twice (2x slower), and one that raises."""

import torch


def make_inputs(n=256):
    return (torch.randn(n, n),)


def same_a(x):
    y = x @ x
    return y.relu()


def same_b(x):
    y = x @ x
    return y.relu()


def twice(x):
    y = x @ x
    y = y @ x
    return y.relu()


def broken(x):
    raise ValueError("this variant is broken")
