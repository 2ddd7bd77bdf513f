"""The Neuron backend (AWS Trainium, TorchNeuron): Self NEURON per op through PrivateUse1.

Follows the documented API (DESIGN.md, "Facts about the Neuron side"):
`NeuronConfig` passed to `torch.profiler.profile(experimental_config=...)`, activities CPU +
PrivateUse1, `on_trace_ready=NeuronProfiler(config).export_trace`, `torch.neuron.synchronize()`.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity

from oplens.backends.base import Backend
from oplens.engine.records import Artifacts, NeffNtffPair

INSTALL_HINT = (
    "install TorchNeuron from the Neuron pip repository "
    "(pip install torch-neuronx --extra-index-url https://pip.repos.neuron.amazonaws.com; "
    "the PyPI package of that name is a stub) on a Trn2/Trn3 host"
)
DEFAULT_MODES = ("DEVICE", "RUNTIME")


class NeuronBackend(Backend):
    name = "neuron"
    device_label = "NEURON"
    device_time = "linked"

    @classmethod
    def unavailable_reason(cls) -> str | None:
        try:
            import torch_neuronx  # noqa: F401
            from torch_neuronx.profiling import NeuronConfig, NeuronProfiler, ProfileMode  # noqa: F401
        except Exception as e:  # ImportError, or the PyPI stub raising on import
            return f"torch_neuronx does not import ({type(e).__name__}: {e}); {INSTALL_HINT}"
        neuron = getattr(torch, "neuron", None)
        if neuron is None:
            return "torch_neuronx imported but registered no torch.neuron device module"
        try:
            if hasattr(neuron, "is_available") and not neuron.is_available():
                return "torch_neuronx imported but sees no NeuronCore (is this a Trn2/Trn3 host?)"
        except Exception as e:
            return f"torch.neuron.is_available() failed: {e}"
        return None

    def device(self) -> torch.device:
        return torch.device("neuron", int(self.options.get("device_index", 0) or 0))

    def activities(self) -> list[ProfilerActivity]:
        return [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]

    def synchronize(self) -> None:
        torch.neuron.synchronize()  # type: ignore[attr-defined]

    def neuron_config(self, run_dir: Path) -> Any:
        from torch_neuronx.profiling import NeuronConfig, ProfileMode

        modes = [getattr(ProfileMode, m) for m in self.options.get("modes", DEFAULT_MODES)]
        kwargs: dict[str, Any] = {
            "modes": modes,
            "profile_output_dir": str(run_dir / "neuron_profile"),
        }
        for key in ("capture_enabled_for_nc", "max_events_per_nc", "neff_cache_dir"):
            if self.options.get(key) is not None:
                kwargs[key] = self.options[key]
        if _accepts(NeuronConfig, "correlate_device_time"):
            kwargs["correlate_device_time"] = True
        else:
            self.note = (
                "this torch_neuronx's NeuronConfig has no correlate_device_time: "
                "device time per op comes only from the device trace"
            )
        return NeuronConfig(**kwargs)

    def profiler_options(self, run_dir: Path) -> dict[str, Any]:
        from torch_neuronx.profiling import NeuronProfiler

        config = self.neuron_config(run_dir)
        return {"experimental_config": config, "on_trace_ready": NeuronProfiler(config).export_trace}

    def writes_own_trace(self) -> bool:
        return True

    def artifacts(self, run_dir: Path) -> Artifacts:
        return find_artifacts(run_dir / "neuron_profile")


def _accepts(cls: Any, name: str) -> bool:
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def find_artifacts(out_dir: Path) -> Artifacts:
    """The newest `<instance>_pid_<pid>/<timestamp>/` profile directory and its NEFF/NTFF pairs."""
    if not out_dir.is_dir():
        return Artifacts()
    candidates = [p for p in out_dir.glob("*_pid_*/*") if p.is_dir()]
    profile_dir = max(candidates, key=lambda p: p.stat().st_mtime) if candidates else out_dir
    files = sorted(str(p.relative_to(out_dir)) for p in out_dir.rglob("*") if p.is_file())
    trace = next((p for p in profile_dir.rglob("trace.json")), None)
    return Artifacts(
        trace_json=str(trace) if trace else "",
        device_profile_dir=str(profile_dir),
        neff_ntff_pairs=pair_neff_ntff(out_dir),
        files=files,
    )


def pair_neff_ntff(root: Path) -> list[NeffNtffPair]:
    """Pair `neff_<hash>.neff` with `<hash>_instid_0_vnc_0.ntff` by their shared numeric hash."""
    neffs: dict[str, Path] = {}
    for p in root.rglob("*.neff"):
        m = re.search(r"(\d+)", p.stem)
        if m:
            neffs[m.group(1)] = p
    pairs = []
    for p in sorted(root.rglob("*.ntff")):
        m = re.match(r"(\d+)_", p.name)
        if m and m.group(1) in neffs:
            pairs.append(NeffNtffPair(hash=m.group(1), neff=str(neffs[m.group(1)]), ntff=str(p)))
    return pairs

