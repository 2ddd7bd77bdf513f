"""STAND-IN for TorchNeuron's `torch_neuronx` (tests only): the documented surface, no device.

Environment (set by the test):
  STANDIN_PYPI_STUB=1       import fails with ImportError, as the PyPI placeholder package does
  STANDIN_NEURON_CORES=N    NeuronCores torch.neuron reports (default 1; 0: none visible)
  STANDIN_RECORD=PATH       append every call OpLens makes (JSON lines) to PATH
  STANDIN_DEVICE_WORK_ON_SYNC=1
                            the device's work completes only when torch.neuron.synchronize() waits for
                            it (execution is asynchronous: docs/architecture.md's Neuron facts, the docs' examples
                            synchronise after each step): each synchronize runs a small op inside a
                            `standin.device_work:<n>` range, n counting the synchronize calls, so a
                            test sees which call's device work a trace holds
  STANDIN_FUSE, STANDIN_CPU_FALLBACK
                            Adaptive Eager Execution and CPU fallback (profiling.py)
  STANDIN_MEMORY_STATS=flat|none
                            the device memory counters' layout, or none (memory.py)
  STANDIN_TENSORS=device    tensors moved to `neuron:0` are held there (on the CPU, see python_device.py); default:
                            the device holds none and tests build their inputs on the CPU
"""

from __future__ import annotations

import json
import os
import types
from typing import Any

if os.environ.get("STANDIN_PYPI_STUB") == "1":
    raise ImportError(
        "stand-in of the PyPI torch-neuronx placeholder: this package is not installable from PyPI; "
        "install it from the Neuron repository"
    )

import torch

__version__ = "2.13.0+standin"


def record(event: str, **data: Any) -> None:
    path = os.environ.get("STANDIN_RECORD")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"event": event, "pid": os.getpid(), **data}, default=str) + "\n")


def _cores() -> int:
    return int(os.environ.get("STANDIN_NEURON_CORES", "1"))


_synced = 0


def _synchronize(device: Any = None) -> None:
    global _synced
    record("synchronize")
    if os.environ.get("STANDIN_DEVICE_WORK_ON_SYNC") == "1":
        with torch.profiler.record_function(f"standin.device_work:{_synced}"):
            torch.ones(8).sum()
    _synced += 1
    from torch_neuronx import memory

    memory.synchronized()


# What the environment held when we were imported. TorchNeuron is loaded by `import torch` itself where it is installed
# (PyTorch's autoload: the `torch.backends` entry points, imported at the end of torch's own import; see
# tests/standins/autoload/), and the NEFF cache variable must be there by then: "Set neff_cache_dir in NeuronConfig (or
# the TORCH_NEURONX_NEFF_CACHE_DIR environment variable) before running your profiling script"
# (tools/neuron-explorer/how-to-profile-workload.rst). `autoloaded`: imported from inside `import torch`.
def _autoloaded() -> bool:
    import traceback

    return any(f.name == "_import_device_backends" for f in traceback.extract_stack())


record("import", neff_cache_env=os.environ.get("TORCH_NEURONX_NEFF_CACHE_DIR"), autoloaded=_autoloaded(),
       debug_env={v: os.environ[v] for v in ("XLA_IR_DEBUG", "XLA_HLO_DEBUG", "NEURON_FRAMEWORK_DEBUG") if v in os.environ})

_device = types.ModuleType("torch.neuron")
_device.is_available = lambda: _cores() > 0  # type: ignore[attr-defined]
_device.device_count = _cores  # type: ignore[attr-defined]
_device.synchronize = _synchronize  # type: ignore[attr-defined]

# What TorchNeuron does on import: PrivateUse1 becomes "neuron", with a torch.neuron module.
if torch._C._get_privateuse1_backend_name() != "neuron":
    torch.utils.rename_privateuse1_backend("neuron")
torch._register_device_module("neuron", _device)

# TorchNeuron registers the device's streams with torch in C++; the stand-in's device holds no tensors (they stay on
# the CPU), so torch.accelerator, which torch.compile's Dynamo asks for the current stream at trace time
# (torch/_dynamo/variables/streams.py), reports none rather than a device torch cannot reach.
torch.accelerator.is_available = lambda: False  # type: ignore[assignment]



_tracked = {"cleared": False}


def get_fallback_ops() -> list[str]:
    """TorchNeuron's early source (parmoham-aws/test-repo-parmoham, torch_neuronx/__init__.py): "Get the list of
    operations that fell back to CPU. Returns: List of operation names that were executed on CPU instead of Neuron"
    (`_C._get_fallback_ops()`, filled by CPUFallbackExecutor, which also logs "Operator '<op>' executed via CPU
    fallback" once per op). The stand-in's are STANDIN_CPU_FALLBACK's (it cannot see which ran: they are given)."""
    from torch_neuronx.profiling import fallback_ops

    record("get_fallback_ops", cleared=_tracked["cleared"])
    return fallback_ops()


def clear_op_tracking() -> None:
    """"Clear both fallback and executed operation tracking" (the same source)."""
    _tracked["cleared"] = True
    record("clear_op_tracking")


if os.environ.get("STANDIN_MEMORY_STATS") != "none":  # the memory profiling guide's API (memory.py)
    from torch_neuronx.memory import max_memory_allocated, memory_allocated, memory_stats, reset_peak_memory_stats  # noqa: F401


def _autoload() -> None:
    """The `torch.backends` entry point (tests/standins/autoload/): importing this package is all it does."""


if os.environ.get("STANDIN_TENSORS") == "device":  # tensors the backend moves to neuron:0 (see python_device.py)
    from torch_neuronx import python_device as _python_device

    _python_device.install()
