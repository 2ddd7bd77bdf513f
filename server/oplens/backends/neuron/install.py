"""Where TorchNeuron comes from, in one place (no torch): the advice `profile` gives when Neuron is
missing (worker side, `device.py`) and `oplens doctor` gives for the same (parent side)."""

from __future__ import annotations

NEURON_PIP = "https://pip.repos.neuron.amazonaws.com"
SETUP_GUIDE = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/setup/pytorch/index.html"
TORCH_VERSION = "2.13"  # the PyTorch whose TorchNeuron is named where no torch is installed yet


def torch_wheels(torch_version: str = TORCH_VERSION) -> str:
    """What `pip install` takes for TorchNeuron (it brings its torch) matching `torch_version` ("2.13")."""
    return f"'torch-neuronx=={torch_version}.*' --extra-index-url {NEURON_PIP}"


def install_hint(torch_version: str) -> str:
    """The install advice for this torch (`torch.__version__`, e.g. "2.13.0+cpu"): the matching
    torch-neuronx from the Neuron pip repository."""
    version = ".".join(torch_version.split("+")[0].split(".")[:2]) or TORCH_VERSION
    return (
        f"TorchNeuron (torch-neuronx for PyTorch 2.13/2.14) comes from the Neuron pip repository, not PyPI (the PyPI "
        f"package of that name is a stub): on a Trn2/Trn3 host run "
        f"pip install {torch_wheels(version)} "
        f"(or use the Neuron Deep Learning AMI, where it is installed); guide: {SETUP_GUIDE}"
    )
