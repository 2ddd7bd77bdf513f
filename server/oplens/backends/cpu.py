"""The CPU backend: works everywhere; the "device" time is the CPU time."""

from __future__ import annotations

from oplens.backends.base import Backend


class CpuBackend(Backend):
    name = "cpu"
    device_label = "CPU"
    device_time = "cpu"
