"""A job of several nodes without Slurm: what OpLens reads from a scheduler's environment (engine/nodes.py), the
`--standalone` torchrun must not get inside a PyTorchJob's pod, and two real `oplens run` processes given the
environment Kubeflow's training-operator gives its pods (torchrun's `PET_*`), static and elastic, on one machine:
one merged run, no hang. Kubernetes itself cannot run here; its pods' environment can be given to processes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from oplens.engine import runs
from support.paths import DATA

PROGRAMS = DATA / "programs"


WINDOW = ["--skip", "2", "--profiler-warmup", "1", "--calls", "3"]


TARGET = ["--target", "ddp_train.py::train_step"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pods(tmp_path: Path, envs: list[dict[str, str]]) -> list[subprocess.CompletedProcess[str]]:
    """Two `oplens run` processes as two pods would run them (each torchrun with one rank), side by side."""
    procs = [
        subprocess.Popen([sys.executable, "-m", "oplens", "run", "--nproc-per-node", "1", "--out", str(tmp_path / "shared"),
                          "--gather-timeout", "60", *WINDOW, *TARGET, "--", "ddp_train.py", "--steps", "8"],
                         cwd=PROGRAMS, env={**os.environ, "OMP_NUM_THREADS": "1", **env}, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)  # fmt: skip
        for env in envs
    ]
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=240)
        out.append(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr))
    return out


@pytest.mark.parametrize("elastic", [False, True], ids=["static", "elastic"])
def test_a_pytorchjob_s_two_pods_give_one_merged_run(tmp_path: Path, elastic: bool) -> None:
    port = _free_port()
    if elastic:  # no node rank: the rendezvous gives each its rank; the pod that ran rank 0 merges
        common = {"PET_NNODES": "1:2", "PET_RDZV_ENDPOINT": f"127.0.0.1:{port}", "PET_RDZV_BACKEND": "c10d",
                  "PET_RDZV_ID": "oplens-test"}  # fmt: skip
        envs = [{**common, "HOSTNAME": "job-worker-0"}, {**common, "HOSTNAME": "job-worker-1"}]
    else:
        common = {"PET_NNODES": "2", "PET_MASTER_ADDR": "127.0.0.1", "PET_MASTER_PORT": str(port)}
        envs = [{**common, "PET_NODE_RANK": "0", "HOSTNAME": "job-master-0"},
                {**common, "PET_NODE_RANK": "1", "HOSTNAME": "job-worker-0"}]  # fmt: skip
    done = _pods(tmp_path, envs)
    for p in done:
        assert p.returncode == 0, p.stderr[-3000:]
    found = runs.list_runs(tmp_path / "shared")
    assert len(found) == 1, [p.name for p in found]
    run = json.loads((found[0] / "result.json").read_text())
    assert sorted((r["rank"], r["world_size"]) for r in run["ranks"]) == [(0, 2), (1, 2)]
    assert {r["host"] for r in run["ranks"]} == {e["HOSTNAME"] for e in envs}  # each rank names its pod
    assert "merges the parts" in "".join(p.stderr for p in done)  # the other pod said who merges
