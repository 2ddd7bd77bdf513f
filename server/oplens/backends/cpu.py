"""The CPU backend: works everywhere; the "device" time is the CPU time."""

from __future__ import annotations

from oplens.backends.device import Backend
from oplens.backends.facts import CPU
from oplens.backends.spec import NoOptions


class CpuBackend(Backend[NoOptions]):
    facts = CPU
