"""The backends of this host, for an editor's status bar and its backend pick (parent side, no torch).

`backends_here(requested)` asks a worker-side process (`python -m oplens.worker.doctor --backends`,
torch imported there, never here) what each backend lacks on this host and what `requested` ends on
(`auto`'s choice, with its note), and the backend registry which interpreters of the host could run a
backend that this one cannot (`registry.interpreter_advice`: Neuron's DLAMI venvs). Every sentence an
editor shows of it is made here. The answer (`oplens.backends` over LSP):

    {"requested": "auto", "torch_version": "2.13.0+cpu", "torch_error": "",
     "chosen": {"name": "cpu", "title": "CPU", "device_label": "CPU", "device_name": "x86_64",
                "note": "auto fell back to the CPU (neuron: ...; cuda: ...)"},      # null: requested cannot run
     "problem": "",                                                              # why not, where it cannot
     "backends": [{"name": "auto", "title": "auto", "device_label": "", "available": true,
                   "detail": "the first present of Neuron, CUDA, CPU: CPU here"},
                  {"name": "cpu", "title": "CPU", "device_label": "CPU", "available": true, "detail": "present: x86_64"},
                  {"name": "neuron", ..., "available": false, "detail": "torch_neuronx is not installed"}, ...],
     "interpreters": [{"backend": "neuron", "message": "This interpreter (...) has no torch_neuronx, ...",
                       "pythons": ["/opt/aws_neuronx_venv_pytorch_2_9/bin/python"]}]}
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from oplens.backends import registry
from oplens.engine.process import STARTUP_TIMEOUT_S
from oplens.records.errors import bad_input


def backends_here(requested: str, workspace: Path, python: str = sys.executable, root: Path = Path("/")) -> dict[str, Any]:
    """The answer above for a request of `requested` (a backend name or `auto`)."""
    if requested not in registry.NAMES:
        raise bad_input(f"unknown backend {requested!r}", f"choose one of: {', '.join(registry.NAMES)}")
    found = _ask_worker(requested, workspace, python)
    missing: dict[str, str | None] = found.get("missing") or {}
    backend = found.get("backend") or {}
    torch_error = str(found.get("torch_error") or "")
    chosen = None
    if backend.get("available"):
        spec = registry.get(str(backend["name"]))
        chosen = {"name": spec.name, "title": spec.title, "device_label": spec.device_label,
                  "device_name": str(backend.get("device_name") or ""), "note": str(backend.get("message") or "")}  # fmt: skip
    problem = "" if chosen else str(backend.get("message") or (f"torch does not import: {torch_error}" if torch_error else ""))
    rows = [{"name": "auto", "title": "auto", "device_label": "", "available": not torch_error,
             "detail": registry.AUTO_WORDS + (f": {_auto_pick(missing)} here" if missing else "")}]  # fmt: skip
    for name, spec in registry.SPECS.items():
        lacks = f"torch does not import: {torch_error}" if torch_error else missing.get(name)
        if lacks is None:  # it can run here; the device's name is known for the one chosen
            device = chosen["device_name"] if chosen is not None and chosen["name"] == name else ""
            detail = f"present: {device}" if device else "present"
        else:
            detail = lacks
        rows.append({"name": name, "title": spec.title, "device_label": spec.device_label, "available": lacks is None,
                     "detail": detail})  # fmt: skip
    advice = [{"backend": a.backend, "message": a.message, "pythons": a.pythons}
              for a in registry.interpreter_advice(requested, python, root)]  # fmt: skip
    return {"requested": requested, "torch_version": str(found.get("torch_version") or ""), "torch_error": torch_error,
            "chosen": chosen, "problem": problem, "backends": rows, "interpreters": advice}  # fmt: skip


def _auto_pick(missing: dict[str, str | None]) -> str:
    """The title of what `auto` ends on, given what each backend lacks."""
    for name in registry.AUTO_ORDER:
        if missing.get(name, "") is None:
            return registry.get(name).title
    return registry.get(registry.AUTO_ORDER[-1]).title


def _ask_worker(requested: str, workspace: Path, python: str) -> dict[str, Any]:
    return worker_facts(["--backends", requested], workspace, python)


def worker_facts(argv: list[str], workspace: Path, python: str = sys.executable) -> dict[str, Any]:
    """`python -m oplens.worker.doctor ARGV`'s JSON line: what torch and the backends report on this host, or
    `torch_error` saying why none came (`oplens doctor` and `oplens.backends` both ask this way)."""
    try:
        proc = subprocess.run([python, "-m", "oplens.worker.doctor", *argv], capture_output=True, text=True,
                              timeout=STARTUP_TIMEOUT_S, cwd=workspace, stdin=subprocess.DEVNULL)  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"torch_error": f"importing torch took more than {STARTUP_TIMEOUT_S:g} s"}
    except OSError as e:
        return {"torch_error": f"cannot start {python}: {e}"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            try:
                data: dict[str, Any] = json.loads(line)
                return data
            except ValueError:
                break
    tail = " | ".join(proc.stderr.strip().splitlines()[-3:]) or f"exit status {proc.returncode}"
    return {"torch_error": f"the worker-side check died ({tail})"}
