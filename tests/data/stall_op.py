"""A custom op that sleeps inside itself on one call (tests/data/stalls.py's stall): a file of its own,
so that a capture, which marks every line of the target's file, sees its sleep as the op's own time,
as a stall inside an op is, not as a marked helper line's."""

import time

import torch

STALL_S = 0.05  # the stall: far above a call (~0.2-1 ms here), as a descheduled thread or a GC pause is
calls = {"n": 0, "stall_at": 0}  # every call of the op so far, and the one (from 1) that stalls


@torch.library.custom_op("oplens_test::maybe_stall", mutates_args=())
def maybe_stall(x: torch.Tensor) -> torch.Tensor:
    """x + 0, sleeping inside the op on the call `stall_at`."""
    calls["n"] += 1
    if calls["n"] == calls["stall_at"]:
        time.sleep(STALL_S)
    return x + 0
