"""Which device this host has, seen before torch is installed, and the torch to install for it (no torch).

An interpreter without torch gets one install command, for the device the host has: the first backend
of `auto`'s order (Neuron, CUDA, then the CPU) whose driver shows on the host (`BackendFacts.host_signs`:
its device files, or a program it puts on PATH), with that backend's wheels (`BackendFacts.torch_wheels`).
So a Trn2 host is told TorchNeuron from the Neuron repository, a GPU host PyPI's CUDA build, and only a
host with neither the CPU wheel. `oplens doctor`'s torch check and the editor's interpreter check (before
the language server starts, through the bundled OpLens) both name it.
"""

from __future__ import annotations

import glob
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from oplens.backends.facts import BackendFacts
from oplens.backends.registry import AUTO_ORDER, get


@dataclass(frozen=True)
class TorchInstall:
    backend: str  # whose device the host has: "neuron", "cuda", "cpu"
    title: str  # that backend in a sentence: "Neuron", "CUDA", "CPU"
    seen: str  # what showed the device ("/dev/neuron0", "nvidia-smi on PATH"); "" for the CPU
    command: str  # the install command for the interpreter


def seen(facts: BackendFacts, root: Path = Path("/")) -> str:
    """What on this host shows `facts`' device (a device file, a program on PATH), or "" where nothing does.
    `root`: where the file system's root is (a test's stand-in host)."""
    for sign in facts.host_signs:
        if sign.startswith("/"):
            found = sorted(glob.glob(str(root / sign.lstrip("/"))))
            if found:
                return "/" + Path(found[0]).relative_to(root).as_posix()
        elif shutil.which(sign):
            return f"{sign} on PATH"
    return ""


def torch_install(python: str = sys.executable, root: Path = Path("/")) -> TorchInstall:
    """The torch to install into `python` for the device this host has (the CPU's where it has none)."""
    for name in AUTO_ORDER:
        facts = get(name).facts
        sign = seen(facts, root) if facts.host_signs else ""
        if sign or not facts.host_signs:
            return TorchInstall(name, facts.title, sign, f"{shlex.quote(python)} -m pip install {facts.torch_wheels}")
    raise AssertionError("auto's order ends with a backend every host has")
