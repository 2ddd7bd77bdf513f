"""Backends: what differs between profiling on the CPU, on CUDA and on Neuron.

Imported only by the worker process (they import torch). `resolve` turns the user's choice
(`auto`, `cpu`, `cuda`, `neuron`) into a ready backend or a clear `backend_unavailable` error.
"""

from __future__ import annotations

from oplens.backends.base import Backend, BackendUnavailable

NAMES = ("auto", "cpu", "cuda", "neuron")


def _classes() -> dict[str, type[Backend]]:
    from oplens.backends.cpu import CpuBackend
    from oplens.backends.cuda import CudaBackend
    from oplens.backends.neuron import NeuronBackend

    return {"neuron": NeuronBackend, "cuda": CudaBackend, "cpu": CpuBackend}


def resolve(name: str, options: dict[str, object] | None = None) -> Backend:
    """The backend for `name`; `auto` is the best one present (Neuron, then CUDA, then CPU)."""
    options = options or {}
    classes = _classes()
    if name == "auto":
        skipped: list[str] = []
        for candidate in ("neuron", "cuda"):
            reason = classes[candidate].unavailable_reason()
            if reason is None:
                backend = classes[candidate](options)
                why = f" ({'; '.join(skipped)})" if skipped else ""  # a fallback says what it fell back from
                backend.note = f"auto: {candidate} is present" + (f", fell back from Neuron{why}" if skipped else "")
                return backend
            skipped.append(f"{candidate}: {reason}")
        backend = classes["cpu"](options)
        backend.note = "auto fell back to the CPU (" + "; ".join(skipped) + ")"
        return backend
    if name not in classes:
        raise BackendUnavailable(f"unknown backend {name!r}; choose one of {', '.join(NAMES)}")
    reason = classes[name].unavailable_reason()
    if reason is not None:
        raise BackendUnavailable(f"the {name} backend is unavailable: {reason}. The cpu backend works everywhere: --backend cpu")
    return classes[name](options)


__all__ = ["Backend", "BackendUnavailable", "NAMES", "resolve"]
