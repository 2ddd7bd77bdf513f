"""Which backend a worker profiles with (worker side): the user's choice (`auto`, `cpu`, `cuda`,
`neuron`) as a ready `Backend`, or a clear `BackendUnavailable`."""

from __future__ import annotations

import importlib
from typing import Any

from oplens.backends import registry
from oplens.backends.device import Backend


class BackendUnavailable(Exception):
    """The requested backend cannot run here; the message says what is missing."""


def backend_class(name: str) -> type[Backend[Any]]:
    """The worker-side class of a registered backend (imported here, never in the parent)."""
    module, _, cls = registry.get(name).device_class.partition(":")
    found: type[Backend[Any]] = getattr(importlib.import_module(module), cls)
    return found


def missing(reason: str) -> str:
    """What a backend lacks, without the advice on getting it (`unavailable_reason` says what is missing,
    then after "; " how to get it): `auto` names each backend it passed over on every run, where the
    advice would be noise; a request for that backend by name gets the whole reason."""
    return reason.split("; ", 1)[0]


def resolve(name: str, options: dict[str, Any] | None = None) -> Backend[Any]:
    """The backend for `name`, given each backend's options record by name; `auto` is the best
    one present (registry.AUTO_ORDER), and says what it fell back from."""
    options = options or {}

    def make(candidate: str) -> Backend[Any]:
        return backend_class(candidate)(options.get(candidate))

    if name == "auto":
        skipped: list[str] = []
        for candidate in registry.AUTO_ORDER[:-1]:
            reason = backend_class(candidate).unavailable_reason()
            if reason is None:
                backend = make(candidate)
                why = f" ({'; '.join(skipped)})" if skipped else ""  # a fallback says what it fell back from
                best = registry.get(registry.AUTO_ORDER[0]).title
                backend.note = f"auto: {candidate} is present" + (f", fell back from {best}{why}" if skipped else "")
                return backend
            skipped.append(f"{candidate}: {missing(reason)}")
        backend = make(registry.AUTO_ORDER[-1])
        backend.note = f"auto fell back to the {backend.device_label} (" + "; ".join(skipped) + ")"
        return backend
    if name not in registry.SPECS:
        raise BackendUnavailable(f"unknown backend {name!r}; choose one of {', '.join(registry.NAMES)}")
    reason = backend_class(name).unavailable_reason()
    if reason is not None:
        raise BackendUnavailable(f"the {name} backend is unavailable: {reason}. The cpu backend works everywhere: --backend cpu")
    return make(name)
