"""Targets for tests/worker/test_cli_errors.py: one well-behaved function, and ones that fail in each way."""

import os
import signal
import time

import torch

SCALE = 2.0  # a module-level line: outside every function


def add(x, w):
    y = x * w  # LINE: inside add
    return y + SCALE


def no_args():
    return torch.ones(4).sum()


def raises(x):
    x = x * 2  # some work before the failure
    raise ValueError("user code failed on purpose")  # LINE: raise


def hang():
    while True:
        time.sleep(0.05)


def segfault():
    os.kill(os.getpid(), signal.SIGSEGV)


def exit7():
    os._exit(7)


def too_big():
    return torch.empty(1 << 50)  # LINE: alloc


def oom_killed():
    os.kill(os.getpid(), signal.SIGKILL)  # what the kernel's out-of-memory killer sends
