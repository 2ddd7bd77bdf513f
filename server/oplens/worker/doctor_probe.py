"""The function `oplens doctor` profiles on the backend it checks: a small matmul and elementwise ops.

Shipped with OpLens and profiled as a user's file would be (`doctor_probe.py::probe` with
`--args "make_inputs()"`): the inputs are built on the CPU and moved to the device by the backend,
so the check passes only where the whole path works and the op table shows device time.
"""

from __future__ import annotations

import torch


def make_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return torch.randn(256, 256, generator=generator), torch.randn(256, generator=generator)


def probe(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    y = x @ x
    y = torch.relu(y) * w
    return y.sum()
