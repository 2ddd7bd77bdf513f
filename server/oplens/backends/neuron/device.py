"""The Neuron backend (AWS Trainium, TorchNeuron): Self NEURON per op through PrivateUse1.

Follows the documented API (DESIGN.md, "Facts about the Neuron side"), line for line:

    config = NeuronConfig(modes=[ProfileMode.DEVICE, ProfileMode.RUNTIME], profile_output_dir=...)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1],
                 experimental_config=config, on_trace_ready=NeuronProfiler(config).export_trace):
        ...; torch.neuron.synchronize()

The device profile lands in the run's directory (`neuron_profile/`), so it is kept with the run.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity

from oplens.backends.device import Backend
from oplens.backends.neuron import install
from oplens.backends.neuron.artifacts import (
    COLLECT_FROM_ENV,
    COLLECT_SINCE_ENV,
    DEFAULT_NEFF_CACHE,
    NEFF_CACHE_DIR,
    PROFILE_DIR,
    find_artifacts,
)
from oplens.backends.neuron.facts import NEURON
from oplens.backends.neuron.options import DEFAULT_NEFF_CACHE_ENV, NEFF_CACHE_ENV, NeuronOptions
from oplens.records.errors import bad_input
from oplens.records.job import RUN_DIR_ENV
from oplens.records.run import Artifacts


def install_hint() -> str:
    """Where TorchNeuron comes from, for this torch's version (one text, in `install.py`)."""
    return install.install_hint(torch.__version__)


class NeuronBackend(Backend[NeuronOptions]):
    facts = NEURON
    options_type = NeuronOptions

    @classmethod
    def unavailable_reason(cls) -> str | None:
        try:
            import torch_neuronx  # noqa: F401  (registers the "neuron" device with torch)
            from torch_neuronx.profiling import NeuronConfig, NeuronProfiler, ProfileMode  # noqa: F401
        except ModuleNotFoundError as e:
            if e.name and e.name.split(".")[0] != "torch_neuronx":
                return f"torch_neuronx needs {e.name!r}, which is missing ({e}); {install_hint()}"
            if e.name == "torch_neuronx.profiling":
                return "this torch_neuronx has no torch_neuronx.profiling (too old for native profiling); " + install_hint()
            return f"torch_neuronx is not installed; {install_hint()}"
        except Exception as e:  # the PyPI stub raises ImportError on import; a broken install raises anything
            return f"torch_neuronx {_installed_version()}does not import ({type(e).__name__}: {e}); {install_hint()}"
        neuron = getattr(torch, "neuron", None)
        if neuron is None:
            return "torch_neuronx imported but registered no torch.neuron device module (is it TorchNeuron 2.13+?)"
        try:
            if hasattr(neuron, "is_available") and not neuron.is_available():
                return (
                    "torch_neuronx imported but sees no NeuronCore "
                    "(is this a Trn2/Trn3 host? is another process holding the cores?)"
                )
        except Exception as e:
            return f"torch.neuron.is_available() failed: {e}"
        return None

    def device(self) -> torch.device:
        return torch.device("neuron", self.options.device_index)

    def activities(self) -> list[ProfilerActivity]:
        return [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]

    def synchronize(self) -> None:
        torch.neuron.synchronize()  # type: ignore[attr-defined]  # execution is asynchronous

    def neuron_config(self, run_dir: Path) -> Any:
        from torch_neuronx.profiling import NeuronConfig, ProfileMode

        names = list(self.options.modes)
        missing = [m for m in names if not hasattr(ProfileMode, m)]
        if missing:
            known = [m for m in ("DEVICE", "RUNTIME", "CPU_UTIL", "HOST_MEMORY") if hasattr(ProfileMode, m)]
            raise bad_input(f"this torch_neuronx has no ProfileMode.{missing[0]}", f"choose from {', '.join(known)}")
        kwargs: dict[str, Any] = {
            "modes": [getattr(ProfileMode, m) for m in names],
            "profile_output_dir": str(run_dir / PROFILE_DIR),
        }
        for key, value in self.options.given().items():
            if _accepts(NeuronConfig, key) is not False:  # documented arguments: pass unless clearly refused
                kwargs[key] = value
            else:
                self.warnings.append(f"this torch_neuronx's NeuronConfig takes no {key}: the option was ignored")
        self.details["neuron_config"] = {**kwargs, "modes": names, "profile_output_dir": PROFILE_DIR}  # run-relative
        # correlate_device_time (device time propagated into key_averages) is newer than the rest:
        # pass it where this version takes it, else say where device time comes from instead.
        accepts = _accepts(NeuronConfig, "correlate_device_time")
        if accepts is not False:
            try:
                config = NeuronConfig(**kwargs, correlate_device_time=True)
                self.details["neuron_config"]["correlate_device_time"] = True
                return config
            except TypeError:
                if accepts:
                    raise
        self.warnings.append(
            "this torch_neuronx's NeuronConfig has no correlate_device_time: device time per op comes only "
            "from the device trace (ops without linked device events show 0; the NTFFs in Neuron Explorer "
            "hold the full device timeline)"
        )
        return NeuronConfig(**kwargs)

    @classmethod
    def environment(cls, options: Any) -> dict[str, str]:
        """`TORCH_NEURONX_NEFF_CACHE_DIR`, which the docs ask for "before running your profiling script", i.e.
        before anything compiles (NeuronConfig alone cannot do it): the user's `--neff-cache-dir`; else a cache
        the user exported (left alone); else the run's own `neuron_profile/neff_cache/` (the worker names the run
        in `OPLENS_RUN_DIR`). Without a cache dir the runtime writes no NEFF into the profile, and TorchNeuron
        keeps its NEFFs in `/tmp/neff_cache`: the run also records which caches to copy this run's NEFFs from
        afterwards (`artifacts.collect_neffs`), with its start."""
        return _neff_cache_environment(getattr(options, "neff_cache_dir", None), os.environ)

    def configure(self, run_dir: Path) -> None:
        """NeuronConfig and NeuronProfiler before the warm-up, in the documented order (`precache_node_info`
        populates per-NEFF metadata during the warm-up iterations)."""
        from torch_neuronx.profiling import NeuronProfiler

        config = self.neuron_config(run_dir)
        self._configured = {"experimental_config": config, "on_trace_ready": NeuronProfiler(config).export_trace}

    def profiler_options(self, run_dir: Path) -> dict[str, Any]:
        if not getattr(self, "_configured", None):
            self.configure(run_dir)
        return dict(self._configured)

    def writes_own_trace(self) -> bool:
        return True  # NeuronProfiler.export_trace writes trace.json into the profile directory

    def artifacts(self, run_dir: Path) -> Artifacts:
        """The profile's files; which session folder was taken and the NEFFs copied in are said among
        the run's warnings (artifacts.py)."""
        return find_artifacts(run_dir, PROFILE_DIR, notes=self.warnings)

    def device_name(self) -> str:
        count = getattr(torch.neuron, "device_count", None)  # type: ignore[attr-defined]
        try:
            return f"NeuronCore ({count()} visible)" if callable(count) else "NeuronCore"
        except Exception:
            return "NeuronCore"


def _neff_cache_environment(given: str | None, env: Mapping[str, str]) -> dict[str, str]:
    """The NEFF cache variables for one run (`NeuronBackend.environment`); `env` is the worker's environment."""
    sources = [env.get(DEFAULT_NEFF_CACHE_ENV) or DEFAULT_NEFF_CACHE]  # TorchNeuron's fallback cache
    out: dict[str, str] = {}
    if given:
        out[NEFF_CACHE_ENV] = given
    elif env.get(NEFF_CACHE_ENV):
        sources.append(env[NEFF_CACHE_ENV])  # the user's own cache: kept, and this run's NEFFs copied from it
    elif env.get(RUN_DIR_ENV):
        cache = Path(env[RUN_DIR_ENV]) / PROFILE_DIR / NEFF_CACHE_DIR
        cache.mkdir(parents=True, exist_ok=True)
        out[NEFF_CACHE_ENV] = str(cache)
    out[COLLECT_FROM_ENV] = os.pathsep.join(sources)
    out[COLLECT_SINCE_ENV] = str(time.time_ns())
    return out


def _installed_version() -> str:
    try:
        return importlib.metadata.version("torch-neuronx") + " "
    except importlib.metadata.PackageNotFoundError:
        return ""


def _accepts(cls: Any, name: str) -> bool | None:
    """Whether `cls(name=...)` is accepted; None where there is no signature to read (a C++ class)."""
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return None
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
