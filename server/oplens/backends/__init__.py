"""Backends: what differs between profiling on the CPU, on CUDA and on Neuron.

Two sides, kept apart so that the parent never imports torch:
- `registry` (parent side): each backend's `BackendSpec` — its name and label, its typed options,
  the traps it checks after a run, the extra commands it offers (Neuron: open a run in Neuron
  Explorer). The engine, the CLI and the language server reach a backend only through it. Its
  `resolve` is the worker's: it imports the chosen backend's worker-side class by the path its spec names.
- `device` (worker side, torch): the `Backend` interface (profiler activities, placing inputs,
  synchronising, vendor configuration, artifacts); `cpu`, `cuda` and `neuron.device` implement it.
Everything of Neuron lives in `backends/neuron/`, which nothing outside this package imports.
"""
