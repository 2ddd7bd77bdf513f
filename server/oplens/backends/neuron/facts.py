"""What the Neuron backend is (no torch): TorchNeuron renames PrivateUse1 to "neuron", so
torch.profiler labels its column Self NEURON (DESIGN.md, "Facts about the Neuron side")."""

from __future__ import annotations

from oplens.backends.facts import BackendFacts

NEURON = BackendFacts(
    name="neuron", title="Neuron", device_label="NEURON", on_device=True, device_time="linked", per_op_device_time=True
)
