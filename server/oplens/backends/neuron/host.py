"""What this host's TorchNeuron reports, for `oplens doctor` (worker side: imports torch_neuronx).

`facts()` runs in the doctor's worker-side process (`oplens.worker.doctor`), named by
`NeuronSpec.doctor_probe`; it observes and never judges: `backends/neuron/doctor.py` turns the facts
into checks in the parent. Everything is read defensively: a broken install is a fact to report.
"""

from __future__ import annotations

import importlib.metadata
import inspect
from typing import Any


def facts() -> dict[str, Any]:
    """torch_neuronx's import, version and profiling API, `torch.neuron`'s availability and cores."""
    found: dict[str, Any] = {
        "imported": False,
        "missing": False,  # not installed at all (as opposed to installed and failing)
        "error": "",
        "version": _distribution_version(),
        "profiling": False,  # torch_neuronx.profiling with NeuronConfig, NeuronProfiler, ProfileMode
        "neuron_config_params": None,  # NeuronConfig's parameter names (None: no signature to read)
        "profile_modes": [],
        "torch_neuron": False,  # the torch.neuron device module that torch_neuronx registers
        "is_available": None,
        "device_count": None,
    }
    try:
        import torch_neuronx
    except ModuleNotFoundError as e:
        found["missing"] = e.name == "torch_neuronx"
        found["error"] = f"{type(e).__name__}: {e}"
        return found
    except Exception as e:  # the PyPI stub raises ImportError; a broken install raises anything
        found["error"] = f"{type(e).__name__}: {e}"
        return found
    found["imported"] = True
    found["version"] = str(getattr(torch_neuronx, "__version__", "") or found["version"])
    try:
        from torch_neuronx.profiling import NeuronConfig, NeuronProfiler, ProfileMode  # noqa: F401
    except Exception as e:
        found["profiling_error"] = f"{type(e).__name__}: {e}"
    else:
        found["profiling"] = True
        found["profile_modes"] = [str(getattr(m, "name", m)) for m in getattr(ProfileMode, "__members__", {}).values()]
        try:
            found["neuron_config_params"] = [
                ("**" if p.kind is inspect.Parameter.VAR_KEYWORD else "") + p.name
                for p in inspect.signature(NeuronConfig).parameters.values()
            ]
        except (TypeError, ValueError):  # a C++ class without a signature
            pass
    import torch

    neuron = getattr(torch, "neuron", None)
    found["torch_neuron"] = neuron is not None
    if neuron is not None:
        for key, cast in (("is_available", bool), ("device_count", int)):
            try:
                found[key] = cast(getattr(neuron, key)())
            except Exception as e:
                found[f"{key}_error"] = f"{type(e).__name__}: {e}"
    return found


def _distribution_version() -> str:
    try:
        return importlib.metadata.version("torch-neuronx")
    except importlib.metadata.PackageNotFoundError:
        return ""
