"""The torch an interpreter without one is told to install: the build for the device the host has
(backends/host.py), never the CPU wheel on a Trainium or GPU host. Hosts are stand-in file-system roots
holding the drivers' device files; PATH is a folder of our own (nvidia-smi there or not)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from oplens.backends.host import torch_install
from oplens.engine.doctor import torch_check

CPU_INDEX = "--index-url https://download.pytorch.org/whl/cpu"


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty host: no device files, a PATH with nothing of NVIDIA's on it."""
    root = tmp_path / "root"
    root.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    return root


def touch(root: Path, path: str) -> None:
    f = root / path.lstrip("/")
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text("")


def test_a_host_without_an_accelerator_gets_the_cpu_wheel(host: Path) -> None:
    t = torch_install("/venv/bin/python", host)
    assert (t.backend, t.seen) == ("cpu", "")
    assert t.command == f"/venv/bin/python -m pip install torch {CPU_INDEX}"


@pytest.mark.parametrize("device_file", ["/dev/neuron0", "/dev/neuron15"])
def test_a_trainium_host_gets_torch_neuronx_from_the_neuron_repository(host: Path, device_file: str) -> None:
    touch(host, device_file)
    t = torch_install("/venv/bin/python", host)
    assert (t.backend, t.title, t.seen) == ("neuron", "Neuron", device_file)
    assert t.command == ("/venv/bin/python -m pip install 'torch-neuronx==2.13.*' "
                         "--extra-index-url https://pip.repos.neuron.amazonaws.com")  # fmt: skip
    assert "whl/cpu" not in t.command


@pytest.mark.parametrize("device_file", ["/dev/nvidiactl", "/dev/nvidia0", "/proc/driver/nvidia/version"])
def test_a_gpu_host_gets_pypis_cuda_build(host: Path, device_file: str) -> None:
    touch(host, device_file)
    t = torch_install("/venv/bin/python", host)
    assert (t.backend, t.seen) == ("cuda", device_file)
    assert t.command == "/venv/bin/python -m pip install torch"


def test_nvidia_smi_on_path_is_a_gpu_host(host: Path, tmp_path: Path) -> None:
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.write_text("#!/bin/sh\n")
    smi.chmod(0o755)
    t = torch_install("python", host)
    assert (t.backend, t.seen, t.command) == ("cuda", "nvidia-smi on PATH", "python -m pip install torch")


def test_a_trainium_host_with_an_nvidia_device_file_gets_neuron_first(host: Path) -> None:
    touch(host, "/dev/neuron0")
    touch(host, "/dev/nvidiactl")
    assert torch_install("python", host).backend == "neuron"  # auto's order: Neuron, CUDA, CPU


def test_a_device_named_alike_is_no_device(host: Path) -> None:
    touch(host, "/dev/neuron")  # no number: not a Neuron device file
    touch(host, "/dev/nvidia-uvm-tools")
    assert torch_install("python", host).backend == "cpu"


def test_the_interpreter_is_quoted_for_a_shell(host: Path) -> None:
    assert torch_install("/home/me/my env/bin/python", host).command.startswith("'/home/me/my env/bin/python' -m pip")


def test_the_doctors_torch_check_names_the_hosts_command() -> None:
    check = torch_check({"torch_error": "No module named 'torch'"})
    assert check.status == "problem"
    assert torch_install(sys.executable).command in (check.fix or "")
    # what an editor can do about it itself (Check Setup's checklist runs the command in a terminal)
    assert (check.remedy, check.command) == ("install_torch", torch_install(sys.executable).command)
