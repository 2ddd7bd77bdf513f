"""The backend registry: every backend's `BackendSpec`, by name, and the worker's choice among them.

The engine, the CLI and the language server reach a backend only through here: its options,
its checks, its commands. A new backend is a spec here (or in its own package, like Neuron)
and a worker-side class (`backends/device.py`) that its spec names by path. `resolve` (worker side)
makes the one a profile asks for: it imports that class by its path, so this file itself never imports
torch and the parent can import it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oplens.backends.facts import CPU, CUDA, BackendFacts
from oplens.backends.neuron.spec import NeuronSpec
from oplens.backends.spec import BackendCommand, BackendSpec, CudaOptions, InterpreterAdvice, NoOptions
from oplens.records.errors import bad_input

if TYPE_CHECKING:  # the worker-side base imports torch: named for the types only
    from oplens.backends.device import Backend


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


class BackendUnavailable(Exception):
    """The requested backend cannot run here; the message says what is missing."""


def backend_class(name: str) -> type[Backend[Any]]:
    """The worker-side class of a registered backend (imported here, in the worker, never in the parent)."""
    module, _, cls = get(name).device_class.partition(":")
    found: type[Backend[Any]] = getattr(importlib.import_module(module), cls)
    return found


def missing(reason: str) -> str:
    """What a backend lacks, without the advice on getting it (`unavailable_reason` says what is missing,
    then after "; " how to get it): `auto` names each backend it passed over on every run, where the
    advice would be noise; a request for that backend by name gets the whole reason."""
    return reason.split("; ", 1)[0]


def resolve(name: str, options: dict[str, Any] | None = None) -> Backend[Any]:
    """The backend a worker profiles with, for the user's choice `name` (`auto`, `cpu`, `cuda`, `neuron`),
    given each backend's options record by name, or a clear `BackendUnavailable`; `auto` is the best one
    present (AUTO_ORDER), and says what it fell back from. Worker side: it imports torch."""
    options = options or {}

    def make(candidate: str) -> Backend[Any]:
        return backend_class(candidate)(options.get(candidate))

    if name == "auto":
        skipped: list[str] = []
        for candidate in AUTO_ORDER[:-1]:
            reason = backend_class(candidate).unavailable_reason()
            if reason is None:
                backend = make(candidate)
                why = f" ({'; '.join(skipped)})" if skipped else ""  # a fallback says what it fell back from
                best = get(AUTO_ORDER[0]).title
                backend.note = f"auto: {candidate} is present" + (f", fell back from {best}{why}" if skipped else "")
                return backend
            skipped.append(f"{candidate}: {missing(reason)}")
        backend = make(AUTO_ORDER[-1])
        backend.note = f"auto fell back to the {backend.device_label} (" + "; ".join(skipped) + ")"
        return backend
    if name not in SPECS:
        raise BackendUnavailable(f"unknown backend {name!r}; choose one of {', '.join(NAMES)}")
    reason = backend_class(name).unavailable_reason()
    if reason is not None:
        raise BackendUnavailable(f"the {name} backend is unavailable: {reason}. The cpu backend works everywhere: --backend cpu")
    return make(name)
