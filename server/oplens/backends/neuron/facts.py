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
        "the documented API (NeuronConfig + NeuronProfiler(config).export_trace, how-to-profile-pytorch) puts the "
        "device time in the runtime's system trace: keep RUNTIME in --neuron-modes (the default DEVICE,RUNTIME) and "
        "install neuron-explorer (aws-neuronx-tools) and pyarrow (pip install 'oplens[neuron]') so OpLens ingests it; "
        "the device_time sources below say what each one found"
    ),
    # the Neuron driver's device files (Trn1/Trn2/Inf2: /dev/neuron0, ...), also inside a container given them
    host_signs=("/dev/neuron[0-9]*",),
    torch_wheels=torch_wheels(),
)
