"""`oplens doctor` on a Trainium host: the Neuron checks, judged in the parent (no torch).

From the facts `host.facts()` gathered in a worker-side process: torch-neuronx (installed, imports,
its profiling API), `torch.neuron.is_available()`, the NeuronCores it sees, and what NeuronConfig
accepts. From the environment: the runtime variables that break a torch.profiler capture
(`NEURON_RT_INSPECT_ENABLE`, documented to conflict with it; `NEURON_RT_NUM_CORES` above the cores
a profile uses, `checks.core_warnings`). From the host: the `neuron-explorer` binary and its
version, and the viewer's ports (3001 UI, 3002 API). Each check names its fix.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from oplens.backends.neuron import checks, explorer
from oplens.backends.neuron.install import install_hint
from oplens.backends.neuron.options import NeuronOptions
from oplens.backends.spec import DoctorContext
from oplens.records.doctor import OK, PROBLEM, WARNING, Check
from oplens.records.errors import OpLensError

VERSION_TIMEOUT_S = 15.0
DOCUMENTED_CONFIG = ("modes", "profile_output_dir", "capture_enabled_for_nc", "max_events_per_nc", "neff_cache_dir")
# Environment variables of the runtime's own (environment-variable) capture: with NEURON_RT_INSPECT_ENABLE=1
# the runtime profiles by itself, which "conflicts" with the PyTorch profiling APIs (Neuron Explorer docs,
# environment-variables page: "Use one or the other").
INSPECT = "NEURON_RT_INSPECT_ENABLE"


def doctor_checks(context: DoctorContext) -> list[Check]:
    facts = context.facts
    return [
        *torch_neuronx_checks(facts, context.torch_version),
        inspect_check(context.env),
        num_cores_check(context.env),
        *explorer_checks(),
    ]


def torch_neuronx_checks(facts: Mapping[str, Any], torch_version: str) -> list[Check]:
    """torch-neuronx, torch.neuron.is_available(), the NeuronCores visible, NeuronConfig."""
    hint = install_hint(torch_version)
    devices = neuron_devices()
    names = ", ".join(d.name for d in devices[:4]) + (" …" if len(devices) > 4 else "")
    on_host = f"{len(devices)} Neuron device(s) in /dev ({names})"
    no_devices = "no /dev/neuron* device: this is not a Trainium host"
    version = str(facts.get("version") or "")
    if not facts.get("imported"):
        if facts.get("missing"):
            what = "not installed" + ("" if not version else f" (metadata says {version}, the module is missing)")
        else:
            what = f"{version + ' ' if version else ''}installed but does not import ({facts.get('error') or 'no facts'})"
        not_checked = f"not checked: torch_neuronx does not import; {on_host if devices else no_devices}"
        return [
            Check("torch-neuronx", PROBLEM, what, hint, "select_interpreter"),  # the DLAMI's Neuron venv, say
            Check("torch.neuron.is_available()", PROBLEM, not_checked, "install torch-neuronx first (above)"),
            Check("NeuronCores visible", PROBLEM, not_checked, "" if devices else "run on a Trn2/Trn3 instance"),
        ]
    found: list[Check] = []
    if facts.get("profiling"):
        modes = ", ".join(facts.get("profile_modes") or []) or "none listed"
        detail = f"{version or 'version unknown'}; torch_neuronx.profiling (ProfileMode: {modes})"
        found.append(Check("torch-neuronx", OK, detail))
    else:
        found.append(Check(
            "torch-neuronx", PROBLEM,
            f"{version or 'version unknown'} has no torch_neuronx.profiling ({facts.get('profiling_error', '')}): "
            "too old for native profiling", hint, "select_interpreter",
        ))  # fmt: skip
    found += _availability(facts, devices, on_host, no_devices)
    if facts.get("profiling"):
        found.append(config_check(facts.get("neuron_config_params")))
    return found


def _availability(facts: Mapping[str, Any], devices: list[Path], on_host: str, no_devices: str) -> list[Check]:
    holders = (
        "is this a Trn2/Trn3 instance, and is another process holding the NeuronCores (neuron-top, neuron-ls)? "
        "NEURON_RT_VISIBLE_CORES limits what this process sees"
    )
    if not facts.get("torch_neuron"):
        detail = "torch_neuronx imported but registered no torch.neuron device module (is it TorchNeuron 2.13+?)"
        return [
            Check("torch.neuron.is_available()", PROBLEM, detail, "install TorchNeuron for PyTorch 2.13/2.14 (above)"),
            Check("NeuronCores visible", PROBLEM, f"not checked; {on_host if devices else no_devices}", holders),
        ]
    available = facts.get("is_available")
    if available is None:
        avail = Check("torch.neuron.is_available()", PROBLEM, f"failed: {facts.get('is_available_error', 'unknown')}", holders)
    elif available:
        avail = Check("torch.neuron.is_available()", OK, "True")
    else:
        avail = Check("torch.neuron.is_available()", PROBLEM, "False: torch_neuronx sees no NeuronCore", holders)
    count = facts.get("device_count")
    host = on_host if devices else "no /dev/neuron* device"
    if isinstance(count, int) and count > 0:
        cores = Check("NeuronCores visible", OK, f"{count} (torch.neuron.device_count()); {host}")
    else:
        seen = facts.get("device_count_error") or f"torch.neuron.device_count() is {count}"
        cores = Check("NeuronCores visible", PROBLEM, f"{seen}; {host}", holders)
    return [avail, cores]


def config_check(params: Any) -> Check:
    """What the installed NeuronConfig takes: the documented arguments, and correlate_device_time."""
    if not isinstance(params, list):
        return Check(
            "NeuronConfig", OK,
            "no readable signature (a C++ class): OpLens passes the documented arguments; the tiny profile shows "
            "whether device time reaches the ops",
        )  # fmt: skip
    takes_any = any(str(p).startswith("**") for p in params)
    missing = [a for a in DOCUMENTED_CONFIG if a not in params and not takes_any]
    shown = ", ".join(str(p) for p in params)
    if missing:
        return Check(
            "NeuronConfig", WARNING, f"takes ({shown}); not the documented {', '.join(missing)}",
            "OpLens leaves out what this NeuronConfig refuses and says so in the run's warnings; update torch-neuronx",
        )  # fmt: skip
    if "correlate_device_time" not in params and not takes_any:
        return Check(
            "NeuronConfig", OK,
            f"takes ({shown}): the documented form (how-to-profile-pytorch, Neuron 2.33); device time per op comes "
            "from the runtime's system trace or the profiler's linked device events (the tiny profile below lists each)",
        )  # fmt: skip
    return Check("NeuronConfig", OK, f"takes ({shown})")


def inspect_check(env: Mapping[str, str]) -> Check:
    value = env.get(INSPECT, "").strip()
    if value in ("", "0"):
        return Check(INSPECT, OK, "unset" if not value else "0 (off)")
    return Check(
        INSPECT, WARNING,
        f"{INSPECT}={value}: the runtime's own environment-variable capture conflicts with torch.profiler, "
        "which OpLens profiles with (Neuron Explorer docs: use one or the other)",
        f"unset {INSPECT} (and the other NEURON_RT_INSPECT_* variables) where oplens and the language server run",
    )  # fmt: skip


def num_cores_check(env: Mapping[str, str]) -> Check:
    raw = env.get("NEURON_RT_NUM_CORES", "").strip()
    found = checks.core_warnings(NeuronOptions(), env)
    if found:
        return Check(
            "NEURON_RT_NUM_CORES", WARNING, found[0],
            "export NEURON_RT_NUM_CORES=1 (or unset it) where oplens runs; or capture those cores with --neuron-cores",
        )  # fmt: skip
    return Check("NEURON_RT_NUM_CORES", OK, f"{raw} (one function runs on one NeuronCore)" if raw else "unset")


def explorer_checks() -> list[Check]:
    """The neuron-explorer binary and its version; the viewer's ports free or served by Neuron Explorer."""
    try:
        tool = explorer.find_tool()
    except OpLensError as e:
        binary = Check(explorer.TOOL, WARNING, f"{e.message}: profiles work, viewing them in Neuron Explorer does not", e.detail)
    else:
        binary = _version_check(tool)
    return [binary, ports_check(explorer.DEFAULT_UI_PORT, explorer.DEFAULT_API_PORT)]


def _version_check(tool: Path) -> Check:
    try:
        proc = subprocess.run(
            [str(tool), "--version"], capture_output=True, text=True, timeout=VERSION_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return Check(explorer.TOOL, WARNING, f"{tool}: --version failed ({e})", f"reinstall it: {explorer.INSTALL_TOOLS}")
    text = (proc.stdout.strip() or proc.stderr.strip()).splitlines()
    if proc.returncode != 0 or not text:
        tail = text[-1] if text else "no output"
        return Check(explorer.TOOL, WARNING, f"{tool}: --version exited {proc.returncode} ({tail})", explorer.INSTALL_TOOLS)
    return Check(explorer.TOOL, OK, f"{tool}: {text[0]}")


def ports_check(ui_port: int, api_port: int) -> Check:
    name = f"viewer ports {ui_port}/{api_port}"
    uses = [explorer.probe(ui_port), explorer.probe(api_port)]
    foreign = [u for u in uses if u.listening and not u.explorer]
    if foreign:
        what = "; ".join(f"{u.port} is taken by {u.describe()}" for u in foreign)
        return Check(
            name, WARNING, what,
            "stop that program, or open runs with oplens explorer RUN --ui-port N --api-port M (and forward those ports)",
        )  # fmt: skip
    served = [u for u in uses if u.listening]
    if served:
        return Check(name, OK, "served by neuron-explorer (" + ", ".join(f"{u.port}: pid {u.pid}" for u in served) + ")")
    return Check(name, OK, "free (oplens explorer starts the viewer on them)")


def neuron_devices() -> list[Path]:
    """The Neuron devices the driver exposes (/dev/neuron0, ...): a Trainium host has them."""
    try:
        found = [p for p in Path("/dev").glob("neuron*") if p.name[len("neuron") :].isdigit()]
        return sorted(found, key=lambda p: int(p.name[len("neuron") :]))
    except OSError:
        return []
