"""The worker side of `oplens doctor`: what torch and a backend say on this host, as one JSON line.

`python -m oplens.worker.doctor BACKEND` (the parent, `engine/doctor.py`, never imports torch):
imports torch, asks `backends.registry.resolve` for BACKEND exactly as a profile does (so an unavailable
backend gives the very message `oplens profile` would, and `auto` makes the same choice), then runs
the chosen backend's `doctor_probe` (e.g. what torch_neuronx reports). It prints
`{torch_version, torch_error, backend {name, available, message, device_name}, facts}` on stdout.

`python -m oplens.worker.doctor --backends BACKEND` (the parent: `engine/host.py`, for an editor's status
bar and backend pick) prints instead what each registered backend lacks here (`missing`: null where it
can run) beside the same `backend`, without the probe.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback
from typing import Any

from oplens.backends import registry


def facts(requested: str, probe: bool = True) -> dict[str, Any]:
    found: dict[str, Any] = {"torch_version": "", "torch_error": "", "backend": {}, "facts": {}}
    try:
        import torch
    except BaseException as e:  # a broken torch raises anything, even SystemExit from native code
        found["torch_error"] = f"{type(e).__name__}: {e}"
        return found
    found["torch_version"] = str(torch.__version__)
    name = requested
    try:
        backend = registry.resolve(requested)
    except registry.BackendUnavailable as e:
        found["backend"] = {"name": requested, "available": False, "message": str(e), "device_name": ""}
    else:
        name = backend.name
        try:
            device = backend.device_name()
        except Exception as e:
            device = f"(device name unknown: {e})"
        found["backend"] = {"name": name, "available": True, "message": backend.note, "device_name": device}
    probe_at = registry.get(name).doctor_probe if probe else ""
    if probe_at:
        module, _, function = probe_at.partition(":")
        try:
            found["facts"] = getattr(importlib.import_module(module), function)()
        except Exception as e:
            found["facts"] = {"probe_error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
    return found


def backends(requested: str) -> dict[str, Any]:
    """What each backend lacks on this host (None: it can run), as `auto` says it, and what `requested` ends on."""
    found: dict[str, Any] = {"torch_version": "", "torch_error": "", "missing": {}, "backend": {}}
    try:
        import torch
    except BaseException as e:
        found["torch_error"] = f"{type(e).__name__}: {e}"
        return found
    found["torch_version"] = str(torch.__version__)
    for name in registry.AUTO_ORDER:
        try:
            reason = registry.backend_class(name).unavailable_reason()
        except Exception as e:  # a vendor module that breaks on import breaks only its backend
            reason = f"{type(e).__name__}: {e}"
        found["missing"][name] = None if reason is None else registry.missing(reason)
    found["backend"] = facts(requested, probe=False)["backend"]
    return found


def main(argv: list[str]) -> int:
    if argv[:1] == ["--backends"]:
        sys.stdout.write(json.dumps(backends(argv[1] if len(argv) > 1 else registry.DEFAULT), default=str) + "\n")
        return 0
    result = facts(argv[0] if argv else registry.DEFAULT)
    sys.stdout.write(json.dumps(result, default=str) + "\n")
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # as the worker: a vendor module's threads must not hang the exit
