"""What the Neuron backend is (no torch): TorchNeuron renames PrivateUse1 to "neuron", so
torch.profiler labels its column Self NEURON (docs/architecture.md, "Facts about the Neuron side")."""

from __future__ import annotations

from oplens.backends.facts import BackendFacts
from oplens.backends.neuron.install import torch_wheels

NEURON = BackendFacts(
    name="neuron",
    title="Neuron",
    device_label="NEURON",
    on_device=True,
    device_time="linked",
    per_op_device_time=True,
    # NeuronConfig(correlate_device_time=True) puts Self NEURON into key_averages() (the blog this project
    # follows); TorchNeuron's early Kineto session returns no activities (docs/architecture.md, Neuron facts).
    op_table_device_time=True,
    no_device_time_fix=(
        "a TorchNeuron whose NeuronConfig takes correlate_device_time (OpLens passes it where the installed one "
        "does; the backend warnings say if not) propagates device time into the op table; the runtime's own "
        "trace of the executions is in the run's Neuron profile (oplens explorer)"
    ),
    # the Neuron driver's device files (Trn1/Trn2/Inf2: /dev/neuron0, ...), also inside a container given them
    host_signs=("/dev/neuron[0-9]*",),
    torch_wheels=torch_wheels(),
)
