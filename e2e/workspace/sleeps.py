"""A function whose time is spent outside any operator: the e2e's wall-time scenario (e2e/scenarios/wall.mjs)."""

import time

import torch

X = torch.randn(64, 64)


def sleeps():
    time.sleep(0.05)  # stands for a data loader, a host-side loop, I/O, a lock
    y = X * 2
    return y.sum()
