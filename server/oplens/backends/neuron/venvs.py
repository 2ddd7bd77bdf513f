"""The Neuron DLAMI's Python environments, for an interpreter without torch_neuronx (parent side, no torch).

The Neuron Deep Learning AMI installs each framework in a virtual environment of its own under /opt,
`/opt/aws_neuronx_venv_<framework>` (its user guide activates PyTorch's with `source
/opt/aws_neuronx_venv_pytorch_2_x/bin/activate`). An editor whose interpreter is the system's Python has
no torch_neuronx, and `auto` then profiles on the CPU of a Trainium host; the venvs whose site-packages
hold torch_neuronx are offered instead (`NeuronSpec.interpreter_advice`).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from oplens.backends.spec import InterpreterAdvice

VENVS = "opt/aws_neuronx_venv_*"  # under the file system's root
MODULE = "torch_neuronx"


def with_torch_neuronx(root: Path = Path("/")) -> list[Path]:
    """The interpreters of the DLAMI's venvs whose environment has torch_neuronx, newest name first
    (`aws_neuronx_venv_pytorch_2_9` before `..._2_8`)."""
    found = []
    for venv in sorted(root.glob(VENVS), reverse=True):
        python = venv / "bin" / "python"
        if python.exists() and any(venv.glob(f"lib/python3*/site-packages/{MODULE}/__init__.py")):
            found.append(python)
    return found


def has_torch_neuronx() -> bool:
    """Whether this interpreter's environment has torch_neuronx (found, not imported)."""
    try:
        return importlib.util.find_spec(MODULE) is not None
    except (ImportError, ValueError):
        return False


def advice(python: str, root: Path = Path("/"), has_module: bool | None = None) -> InterpreterAdvice | None:
    """The offer of a DLAMI venv with torch_neuronx where `python` has none; None where it has it, or the host
    has no such venv."""
    if has_torch_neuronx() if has_module is None else has_module:
        return None
    pythons = [Path("/") / p.relative_to(root) for p in with_torch_neuronx(root)]  # as the host names them
    if not pythons:
        return None
    others = f" (or another of the {len(pythons)} found)" if len(pythons) > 1 else ""
    return InterpreterAdvice(
        backend="neuron",
        message=f"This interpreter ({python}) has no {MODULE}, so OpLens cannot profile on the NeuronCores; the Neuron "
        f"venv {pythons[0].parent.parent}{others} has it. Use its Python?",
        pythons=[str(p) for p in pythons],
    )
