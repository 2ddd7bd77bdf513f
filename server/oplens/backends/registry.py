"""The backend registry (parent side, no torch): every backend's `BackendSpec`, by name.

The engine, the CLI and the language server reach a backend only through here: its options,
its checks, its commands. A new backend is a spec here (or in its own package, like Neuron)
and a worker-side class (`backends/device.py`) that its spec names.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from oplens.backends.facts import CPU, CUDA, BackendFacts
from oplens.backends.neuron.spec import NeuronSpec
from oplens.backends.spec import BackendCommand, BackendSpec, CudaOptions, InterpreterAdvice, NoOptions
from oplens.records.errors import bad_input


class CpuSpec(BackendSpec[NoOptions]):
    facts = CPU
    device_class = "oplens.backends.cpu:CpuBackend"


class CudaSpec(BackendSpec[CudaOptions]):
    facts = CUDA
    device_class = "oplens.backends.cuda:CudaBackend"
    options_type = CudaOptions


SPECS: dict[str, BackendSpec[Any]] = {"cpu": CpuSpec(), "cuda": CudaSpec(), "neuron": NeuronSpec()}
NAMES = ("auto", *SPECS)  # what a user may ask for
AUTO_ORDER = ("neuron", "cuda", "cpu")  # what `auto` tries, best first; the last works everywhere
DEFAULT = "auto"  # what a request that names no backend gets (CLI, notebook, editor settings): the best device present
AUTO_WORDS = "the first present of " + ", ".join(SPECS[name].title for name in AUTO_ORDER)  # `auto`, as --help says it


def get(name: str) -> BackendSpec[Any]:
    try:
        return SPECS[name]
    except KeyError:
        raise bad_input(f"unknown backend {name!r}", f"choose one of: {', '.join(NAMES)}") from None


def facts_of(name: str) -> BackendFacts:
    """The facts of the backend a stored run names; a backend this OpLens does not know (a run from a
    newer one) reads as a device apart from the host whose time is linked to its ops."""
    spec = SPECS.get(name)
    if spec is not None:
        return spec.facts
    return BackendFacts(name=name, title=name, device_label=name.upper(), on_device=True, device_time="linked")


def candidates(backend: str) -> tuple[str, ...]:
    """The backends a request for `backend` may end on."""
    return AUTO_ORDER if backend == "auto" else (get(backend).name,)


def parse_options(
    backend: str, given: Mapping[str, Mapping[str, Any]], workspace: Path, strict: bool = False
) -> dict[str, Any]:
    """Each backend's options record, by name, for a request of `backend`: parsed from `given` where
    given, else defaults. `strict` (the CLI): options for a backend the request cannot end on are
    bad input; otherwise (editor settings, always sent) they are left out."""
    usable = candidates(backend)
    parsed: dict[str, Any] = {}
    for name, raw in given.items():
        spec = get(name)
        if name not in usable:
            if strict and any(v not in (None, "", []) for v in raw.values()):
                raise bad_input(
                    f"the {spec.title} options apply to --backend {name} or auto, not {backend}",
                    f"add --backend {name}, or drop the {spec.cli_flags() or spec.title} options",
                )
            continue
        parsed[name] = spec.parse_options(raw, workspace)
    for name in usable:
        parsed.setdefault(name, get(name).options_type())
    return parsed


def interpreter_advice(backend: str, python: str, root: Path = Path("/")) -> list[InterpreterAdvice]:
    """For each backend a request for `backend` may end on that `python` cannot run for want of its vendor's
    module, the host's interpreters that can (Neuron: the DLAMI's venvs with torch_neuronx)."""
    found = (get(name).interpreter_advice(python, root) for name in candidates(backend))
    return [advice for advice in found if advice is not None]


def commands() -> list[tuple[BackendSpec[Any], BackendCommand]]:
    """Every extra command of every backend."""
    return [(spec, cmd) for spec in SPECS.values() for cmd in spec.commands]
