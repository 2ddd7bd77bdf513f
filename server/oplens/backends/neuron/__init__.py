"""Everything OpLens knows of AWS Neuron (Trainium, TorchNeuron), in one package.

- `options`: the `NeuronConfig` options as a typed record, checked before any work is spent;
- `checks`: the documented traps (empty NTFFs, dropped events, too little warm-up, HBM), as warnings;
- `artifacts`: where the device profile's files are in a run directory;
- `explorer` + `commands`: opening a run in Neuron Explorer (CLI `oplens explorer`, LSP `oplens.openExplorer`);
- `spec`: `NeuronSpec`, what the registry offers of all the above;
- `device` (worker side, torch): the backend that profiles with `NeuronConfig`/`NeuronProfiler`;
- `install`: where TorchNeuron comes from (the advice of `profile` and `doctor`, no torch);
- `host` (worker side, torch) + `doctor`: what torch_neuronx reports here, judged as `oplens doctor`'s checks.

`spec.NeuronSpec` is the parent side's face of it, registered in `backends/registry.py`; only the
backends package imports this one (an import-linter contract says so).
"""
