"""The CUDA backend: kernels are linked to the CPU op that launched them (CUPTI via Kineto)."""

from __future__ import annotations

import torch
from torch.profiler import ProfilerActivity

from oplens.backends.device import Backend
from oplens.backends.facts import CUDA
from oplens.backends.spec import CudaOptions


class CudaBackend(Backend[CudaOptions]):
    facts = CUDA
    options_type = CudaOptions

    @classmethod
    def unavailable_reason(cls) -> str | None:
        if torch.version.cuda is None:
            return f"this torch ({torch.__version__}) is a build without CUDA"
        if not torch.cuda.is_available():
            return "torch sees no CUDA device (check the driver and CUDA_VISIBLE_DEVICES)"
        return None

    def device(self) -> torch.device:
        return torch.device("cuda", self.options.device_index)

    def activities(self) -> list[ProfilerActivity]:
        return [ProfilerActivity.CPU, ProfilerActivity.CUDA]

    def synchronize(self) -> None:
        torch.cuda.synchronize(self.device())

    def device_name(self) -> str:
        return str(torch.cuda.get_device_name(self.device()))
