"""`oplens doctor`, run as a user runs it: the CLI in a subprocess, a real worker, real torch.

On this (CPU) machine the cpu backend is usable and its tiny profile shows device (= self CPU)
time in the op table; Neuron is missing, so `--backend neuron` exits 5 with TorchNeuron's install
advice. The Neuron checks themselves (torch-neuronx, the NeuronCores, the runtime's environment,
neuron-explorer) run against the stand-ins of `tests/standins/`, which fake the vendor modules'
surface only: the judging is OpLens's own.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from oplens.engine.doctor import judge_profile
from oplens.records.run import Run
from support.cli import EVERY_CHECK, flat, oplens_cli
from support.neuron import PROBE_EXEC, calibrated, write_stand_in_explorer
from support.paths import STANDINS

NEURON_CHECKS = [
    "torch-neuronx",
    "torch.neuron.is_available()",
    "NeuronCores visible",
    "NEURON_RT_INSPECT_ENABLE",
    "NEURON_RT_NUM_CORES",
    "neuron-explorer",
    "viewer ports 3001/3002",
]


def checks_of(proc: subprocess.CompletedProcess[str]) -> tuple[dict[str, Any], dict[str, dict[str, str]]]:
    report = json.loads(proc.stdout)
    return report, {c["name"]: c for c in report["checks"]}


def with_stand_in() -> str:
    """PYTHONPATH with the stand-in torch_neuronx first."""
    return os.pathsep.join(p for p in (str(STANDINS), os.environ.get("PYTHONPATH", "")) if p)


def stand_in_explorer(folder: Path) -> Path:
    """The stand-in `neuron-explorer` on a PATH folder."""
    return write_stand_in_explorer(folder).parent


# --------------------------------------------------------------------------- this host (cpu)


def test_doctor_exits_0_for_cpu_with_every_check_listed(tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = oplens_cli(tmp_path, "doctor", TMPDIR=str(scratch))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    found = {name: [ln for ln in lines if ln.startswith(f"  ✓ {name} ")] for name in EVERY_CHECK}
    assert all(len(rows) == 1 for rows in found.values()), found
    assert "of Self CPU per iteration" in found["tiny profile"][0]
    assert "usable" in lines[-1] and "not usable" not in proc.stdout
    assert not any(ln.lstrip().startswith(("✗", "!")) for ln in lines)  # no problem, no warning here
    assert list(scratch.glob("oplens-doctor-*")) == []  # the tiny profile's temporary runs directory is gone
    assert (tmp_path / ".oplens" / "runs").is_dir()  # the runs directory was checked where profiles go


def test_doctor_json_shape_and_the_kept_tiny_profile(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    proc = oplens_cli(tmp_path, "doctor", "--json", "-", "--out", str(runs))
    assert proc.returncode == 0, proc.stderr
    report, checks = checks_of(proc)  # stdout is the object and nothing else
    assert set(report) == {"backend", "checks", "usable"}
    assert report["backend"] == "auto" and report["usable"] is True  # the default, as a profile's: here it ends on the CPU
    assert [c["name"] for c in report["checks"]] == EVERY_CHECK
    for c in report["checks"]:
        assert set(c) == {"name", "status", "detail", "fix", "remedy", "command"} and c["status"] == "ok", c
    assert str(runs) in checks["runs directory"]["detail"]
    # The proof is the op table: the kept run's ops carry the device (on the CPU: self CPU) time.
    (run_dir,) = [p for p in runs.iterdir() if not p.name.startswith(".")]
    run = json.loads((run_dir / "result.json").read_text())
    assert run["backend"]["name"] == "cpu" and run["target"]["qualname"] == "probe"
    assert sum(op["self_device_us"] for op in run["ops"]) > 0
    assert str(run_dir) in checks["tiny profile"]["detail"]


def test_doctor_bad_options_exit_2(tmp_path: Path) -> None:
    proc = oplens_cli(tmp_path, "doctor", "--backend", "tpu")
    assert proc.returncode == 2 and "invalid choice: 'tpu'" in proc.stderr
    (tmp_path / "a-file").write_text("not a directory")
    proc = oplens_cli(tmp_path, "doctor", "--out", "a-file", "--json", "-")
    assert proc.returncode == 2, proc.stderr
    report, checks = checks_of(proc)
    assert report["usable"] is False
    assert checks["runs directory"]["status"] == "problem" and "--out" in checks["runs directory"]["fix"]
    assert checks["tiny profile"]["status"] == "problem" and checks["tiny profile"]["detail"].startswith("not run")


# --------------------------------------------------------------------------- Neuron


@pytest.mark.neuron
def test_doctor_neuron_without_torch_neuronx_exits_5_with_the_install_advice(tmp_path: Path) -> None:
    proc = oplens_cli(tmp_path, "doctor", "--backend", "neuron")
    assert proc.returncode == 5, proc.stdout + proc.stderr
    text = flat(proc.stdout)
    assert "✗ torch-neuronx not installed" in text
    assert "pip install 'torch-neuronx==" in text and "--extra-index-url https://pip.repos.neuron.amazonaws.com" in text
    assert "the PyPI package of that name is a stub" in text and "not usable" in text
    for name in EVERY_CHECK + NEURON_CHECKS:
        assert f" {name} " in proc.stdout, name
    proc = oplens_cli(tmp_path, "doctor", "--backend", "neuron", "--json", "-")
    assert proc.returncode == 5
    report, checks = checks_of(proc)
    assert report == {**report, "backend": "neuron", "usable": False}
    assert checks["backend"]["status"] == "problem" and "torch_neuronx is not installed" in checks["backend"]["detail"]
    assert "https://pip.repos.neuron.amazonaws.com" in checks["torch-neuronx"]["fix"]
    assert checks["tiny profile"]["detail"] == "not run: the backend is unavailable"
    # what the editor's checklist offers: another interpreter (the DLAMI's Neuron venv), another backend
    assert (checks["torch-neuronx"]["remedy"], checks["backend"]["remedy"]) == ("select_interpreter", "choose_backend")


@pytest.mark.neuron
def test_doctor_neuron_checks_and_environment_warnings_with_stand_in_torch_neuronx(tmp_path: Path) -> None:
    bin_dir = stand_in_explorer(tmp_path / "bin")
    proc = oplens_cli(
        tmp_path, "doctor", "--backend", "neuron", "--json", "-", "--out", str(tmp_path / "runs"),
        PYTHONPATH=with_stand_in(), PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        NEURON_RT_INSPECT_ENABLE="1", NEURON_RT_NUM_CORES="4", STANDIN_TENSORS="device",
        OPLENS_CACHE_DIR=calibrated(tmp_path),
    )  # fmt: skip
    report, checks = checks_of(proc)
    assert [c["name"] for c in report["checks"]][:3] == ["python", "torch", "backend"]
    for name in EVERY_CHECK + NEURON_CHECKS + ["NeuronConfig"]:
        assert name in checks, name
    assert checks["backend"]["status"] == "ok" and "NeuronCore (1 visible)" in checks["backend"]["detail"]
    assert checks["torch-neuronx"] == {**checks["torch-neuronx"], "status": "ok"}
    assert "2.13.0+standin" in checks["torch-neuronx"]["detail"]
    assert checks["torch.neuron.is_available()"]["status"] == "ok"
    assert checks["NeuronCores visible"]["status"] == "ok" and checks["NeuronCores visible"]["detail"].startswith("1 ")
    assert checks["NeuronConfig"]["status"] == "ok" and "correlate_device_time" in checks["NeuronConfig"]["detail"]
    inspect = checks["NEURON_RT_INSPECT_ENABLE"]
    assert inspect["status"] == "warning" and "conflicts with torch.profiler" in inspect["detail"]
    assert "unset NEURON_RT_INSPECT_ENABLE" in inspect["fix"]
    cores = checks["NEURON_RT_NUM_CORES"]
    assert cores["status"] == "warning" and "NEURON_RT_NUM_CORES=4" in cores["detail"] and "NEURON_RT_NUM_CORES=1" in cores["fix"]
    explorer = checks["neuron-explorer"]
    assert explorer["status"] == "ok"
    assert explorer["detail"] == f"{bin_dir / 'neuron-explorer'}: neuron-explorer 2.31.0 (stand-in)"
    # The stand-in runs nothing on a device: no device time can reach the ops, and the doctor says so,
    # naming every source it tried.
    assert checks["tiny profile"]["status"] == "problem"
    sources = checks["device time sources"]
    assert sources["status"] == "problem" and "no source gave Self NEURON time" in sources["detail"]
    for tried in ("kineto_linked", "op_table", "system_trace"):
        assert tried in sources["detail"], tried
    assert report["usable"] is False and proc.returncode == 1  # the backend is there: not 5


@pytest.mark.neuron
def test_doctor_deep_check_lists_each_source_s_figure_side_by_side_with_the_stand_ins(tmp_path: Path) -> None:
    """The first thing to run on a Trn2 host (docs/trainium-checklist.md): the tiny profile's device time
    from each source. Here the stand-in's runtime trace holds known executions and its op table the
    same times (TorchNeuron's correlate_device_time): both figures listed, the system trace's equal to
    the known total; the CLI prints them as text too."""
    bin_dir = stand_in_explorer(tmp_path / "bin")
    known = ",".join(f"{k}={v:g}" for k, v in PROBE_EXEC.items())
    env = {"PYTHONPATH": with_stand_in(), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "STANDIN_TENSORS": "device", "OPLENS_CACHE_DIR": calibrated(tmp_path),
           "STANDIN_EXEC_US": known, "STANDIN_OP_DEVICE_US": known, "STANDIN_NO_CORRELATE": "0"}  # fmt: skip
    proc = oplens_cli(tmp_path, "doctor", "--backend", "neuron", "--json", "-", "--out", str(tmp_path / "runs"), **env)
    report, checks = checks_of(proc)
    assert proc.returncode == 0, (proc.stderr, checks.get("tiny profile"), checks.get("device time sources"))
    assert checks["tiny profile"]["status"] in ("ok", "warning")
    sources = checks["device time sources"]
    assert sources["status"] == "ok", sources
    total = sum(PROBE_EXEC.values())
    assert f"system_trace: {total:.1f} µs per iteration" in sources["detail"]
    assert f"op_table (used): {total:.1f} µs per iteration" in sources["detail"]
    assert "kineto_linked: 0.0 µs per iteration" in sources["detail"]
    text = oplens_cli(tmp_path, "doctor", "--backend", "neuron", **env)
    assert text.returncode == 0 and "device time sources" in text.stdout and "system_trace" in text.stdout


@pytest.mark.neuron
def test_doctor_neuron_environment_is_clean_with_stand_in_torch_neuronx(tmp_path: Path) -> None:
    proc = oplens_cli(
        tmp_path, "doctor", "--backend", "neuron", "--json", "-",
        PYTHONPATH=with_stand_in(), STANDIN_NEURON_CORES="0", NEURON_RT_NUM_CORES="1",
    )  # fmt: skip
    assert proc.returncode == 5, proc.stderr  # torch_neuronx imports but sees no NeuronCore: unavailable
    _, checks = checks_of(proc)
    assert checks["NEURON_RT_INSPECT_ENABLE"] == {**checks["NEURON_RT_INSPECT_ENABLE"], "status": "ok", "detail": "unset"}
    assert checks["NEURON_RT_NUM_CORES"]["status"] == "ok"
    assert checks["torch-neuronx"]["status"] == "ok"
    assert checks["torch.neuron.is_available()"]["status"] == "problem"
    assert checks["NeuronCores visible"]["status"] == "problem" and "neuron-ls" in checks["NeuronCores visible"]["fix"]
    assert "sees no NeuronCore" in checks["backend"]["detail"]


# --------------------------------------------------------------------------- the proof (no worker)


def _run(ops: list[dict[str, Any]], unattributed: float = 0.0) -> Run:
    return Run.from_dict({
        "target": {"file": "doctor_probe.py", "qualname": "probe", "first_line": 1, "last_line": 4, "source_sha256": ""},
        "backend": {"name": "neuron", "device_label": "NEURON", "device_name": "NeuronCore (2 visible)"},
        "config": {"warmup": 3, "iters": 5},
        "lines": [],
        "ops": ops,
        "totals": {"self_cpu_us": 30.0, "self_device_us": 0.0, "op_calls": 3, "unattributed_device_us": unattributed},
        "run_dir": "/runs/r1",
    })  # fmt: skip


def test_the_tiny_profile_passes_only_with_device_time_in_the_op_table() -> None:
    no_device = [{"name": "aten::mm", "calls": 1, "self_cpu_us": 20.0, "self_device_us": 0.0}]
    check = judge_profile(_run(no_device, unattributed=120.0))
    assert check.status == "problem" and "no Self NEURON time" in check.detail
    assert "120.0 µs of device time that no op claimed" in check.detail and "/runs/r1" in check.detail
    assert judge_profile(_run(no_device)).status == "problem"
    with_device = [*no_device, {"name": "aten::relu", "calls": 1, "self_cpu_us": 5.0, "self_device_us": 40.0}]
    check = judge_profile(_run(with_device), kept=False)
    assert check.status == "ok" and check.detail.startswith("40.0 µs of Self NEURON per iteration over 2 ops (top: aten::relu")
    assert "--out DIR keeps it" in check.detail
