"""Which generation of TorchNeuron's profiling API is installed, read from its signatures (never from a
version string): issue 20, "every generation of the API". Imports nothing itself (no torch); the
worker hands it the imported `torch_neuronx.profiling`.

The generations, as their own sources and docs show them:

- **early-context-manager**, TorchNeuron's early source (`parmoham-aws/test-repo-parmoham`,
  `torch_neuronx/profiling.py`): one class that runs the runtime's capture and, optionally, a torch
  profiler of its own,

      def __init__(self, pytorch_activities: list[ProfilerActivity] | None = None, record_shapes: bool = False,
                   pytorch_trace_file: str | None = None, neuron_output_dir: str = "./output",
                   event_filters: dict[str, list[str] | list[int]] | None = None)

  used as `with NeuronProfiler(...) as prof:`; no `NeuronConfig`, no `export_trace`. It writes the PyTorch
  trace to `f"{neuron_output_dir}/pytorch_trace.json"`, the runtime's profile into `neuron_output_dir`
  (`_C._nrt_inspect_config_set_output_dir(config_capsule, self.neuron_output_dir)`), and, while both its
  runtime capture and its torch profiler run (`enabled = self._nrt_active and self._pytorch_active`),
  `framework_mapping_<YYYYmmdd_HHMMSS_mmm>.json` from `_C._get_profiler_mappings()`.
- **neuron-config**, the documented form (how-to-profile-workload.rst): `NeuronConfig(modes=[...],
  profile_output_dir=...)` passed to `torch.profiler.profile(..., experimental_config=config,
  on_trace_ready=NeuronProfiler(config).export_trace)`.
- **neuron-config+correlate_device_time**: the same, where `NeuronConfig` takes `correlate_device_time`
  (device time put into `key_averages()`).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

EARLY = "early-context-manager"
CONFIG = "neuron-config"
CORRELATE = "neuron-config+correlate_device_time"
EARLY_PARAMETERS = ("pytorch_activities", "neuron_output_dir")  # the early NeuronProfiler.__init__'s own
EARLY_TRACE = "pytorch_trace.json"  # the early NeuronProfiler's default pytorch_trace_file, in neuron_output_dir

LINES = {
    EARLY: "TorchNeuron's early profiling API (the NeuronProfiler context manager: no NeuronConfig, no modes, no "
           "correlate_device_time): OpLens runs its runtime capture beside torch.profiler; device time per line "
           "comes from the runtime's system trace",
    CONFIG: "TorchNeuron's profiling API: NeuronConfig + torch.profiler, NeuronProfiler(config).export_trace",
    CORRELATE: "TorchNeuron's profiling API: NeuronConfig(correlate_device_time=True) + torch.profiler, "
               "NeuronProfiler(config).export_trace",
}  # fmt: skip


@dataclass(frozen=True)
class Generation:
    name: str  # EARLY | CONFIG | CORRELATE
    evidence: str  # what in the installed signatures said so

    @property
    def line(self) -> str:
        return LINES[self.name]


def parameters(obj: Any) -> set[str] | None:
    """The keyword names `obj(...)` takes ("**" where it takes any), None where no signature can be read
    (a C++ class)."""
    try:
        params = inspect.signature(obj).parameters
    except (TypeError, ValueError):
        return None
    names = {name for name, p in params.items() if p.kind is not inspect.Parameter.VAR_POSITIONAL}
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        names.add("**")
    return names


def detect(profiling: Any) -> tuple[Generation | None, str]:
    """The generation `profiling` (the imported `torch_neuronx.profiling`) offers, or None and why not."""
    profiler = getattr(profiling, "NeuronProfiler", None)
    config = getattr(profiling, "NeuronConfig", None)
    if profiler is None:
        return None, "torch_neuronx.profiling has no NeuronProfiler"
    if config is not None and callable(getattr(profiler, "export_trace", None)):
        params = parameters(config)
        if params is None:  # unreadable: the configuration step tries correlate_device_time and says what it found
            return Generation(CONFIG, "NeuronConfig (no readable signature) and NeuronProfiler.export_trace"), ""
        if "correlate_device_time" in params or "**" in params:
            return Generation(CORRELATE, "NeuronConfig(..., correlate_device_time=...) and NeuronProfiler.export_trace"), ""
        return Generation(CONFIG, "NeuronConfig without correlate_device_time and NeuronProfiler.export_trace"), ""
    init = parameters(profiler)
    early = [p for p in EARLY_PARAMETERS if init is not None and p in init]
    if early and callable(getattr(profiler, "__enter__", None)) and callable(getattr(profiler, "__exit__", None)):
        return Generation(EARLY, f"NeuronProfiler({', '.join(early)}, ...) as a context manager, no NeuronConfig"), ""
    return None, (
        "this torch_neuronx.profiling offers neither NeuronConfig with NeuronProfiler(config).export_trace nor the "
        "early NeuronProfiler(pytorch_activities=..., neuron_output_dir=...) context manager"
    )
