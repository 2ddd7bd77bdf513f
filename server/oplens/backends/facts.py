"""What a backend is, declared once (no torch): `BackendFacts`, read by both sides.

The parent side (`BackendSpec`, the engine, the CLI, the language server, a stored run read back)
and the worker side (`Backend`: the profile, the calibration) read these fields instead of comparing
backend names or device kinds; a new backend declares its own and nothing outside `backends/` changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

DeviceTime = Literal["cpu", "linked"]

# PyTorch's own index of CPU-only wheels: PyPI's torch for Linux is the CUDA build (gigabytes of nvidia-* wheels).
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


@dataclass(frozen=True)
class BackendFacts:
    name: str  # what --backend takes
    title: str  # the backend in a sentence: "CUDA", "Neuron"
    device_label: str  # the column label a user knows: Self NEURON, Self CUDA, Self CPU
    # Work runs on a device apart from the host: device time is not the op's CPU time, the device is
    # synchronised, and the host's memory and caches are not the device's.
    on_device: bool
    # How a CPU op's device time is found in the profile:
    #   "cpu"    — no device: device time is the op's self CPU time
    #   "linked" — device events linked to the launching op by correlation id (CUDA, PrivateUse1)
    device_time: DeviceTime
    # The op's own device time as the PrivateUse1 device reports it on the CPU event
    # (`privateuse1_elapsed_us`, what key_averages() sums as Self PRIVATEUSE1), where no linked event is.
    per_op_device_time: bool = False
    # The vendor may propagate device time into the op table (the FunctionEvents that key_averages() reads)
    # rather than into Kineto's raw results: after the profile, read it there too and use the larger.
    op_table_device_time: bool = False
    # Its float32 matmuls may run on TF32 tensor cores: the calibration measures both.
    tf32_matmul: bool = False
    # What to do where a run found no device time (the run's `device_time.note` ends with it).
    no_device_time_fix: str = "check that the device is in use and its profiler activity is recorded (oplens doctor)"
    # How a host shows it has this device before torch is installed (backends/host.py): a path glob of the
    # driver's device files ("/dev/nvidiactl"), or a program the driver puts on PATH; none: every host has it.
    host_signs: tuple[str, ...] = ()
    # What `pip install` takes for the torch built for this device, where the interpreter has none.
    torch_wheels: str = f"torch --index-url {TORCH_CPU_INDEX}"


CPU = BackendFacts(name="cpu", title="CPU", device_label="CPU", on_device=False, device_time="cpu")
CUDA = BackendFacts(
    name="cuda", title="CUDA", device_label="CUDA", on_device=True, device_time="linked", tf32_matmul=True,
    # the NVIDIA driver's device files on Linux, nvidia-smi where it installs one on PATH (Windows too)
    host_signs=("/dev/nvidiactl", "/dev/nvidia[0-9]*", "/proc/driver/nvidia/version", "nvidia-smi"),
    # PyPI's torch for Linux is built for CUDA, its libraries as nvidia-* wheels (another CUDA version:
    # https://pytorch.org/get-started/locally/)
    torch_wheels="torch",
)  # fmt: skip
