"""A job of several nodes from its scheduler's environment (`engine/nodes.py`): Slurm's hostlists expanded as
scontrol does, a srun step's rank and rendezvous, two OpLens per node refused, torchrun without --standalone where
the PET_ environment names several nodes, and the nodes that never reported named."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from oplens.engine import multinode, nodes
from oplens.engine.program import launcher
from oplens.records.errors import OpLensError


def test_slurm_s_hostlists_and_tasks_per_node_expand_as_scontrol_does() -> None:
    assert nodes.expand_hostlist("n[1-3,7],gpu01") == ["n1", "n2", "n3", "n7", "gpu01"]
    assert nodes.expand_hostlist("trn2-[001-002]") == ["trn2-001", "trn2-002"]
    assert nodes.expand_hostlist("a[1-2]-b[1-2]") == ["a1-b1", "a1-b2", "a2-b1", "a2-b2"]
    assert nodes.expand_hostlist("single") == ["single"]
    assert nodes.tasks_per_node("2(x3),1") == [2, 2, 2, 1]


SLURM_STEP = {"SLURM_JOB_ID": "42", "SLURM_STEP_ID": "0", "SLURM_STEP_NODELIST": "localhost,127.0.0.1",
              "SLURM_STEP_TASKS_PER_NODE": "1(x2)", "SLURMD_NODENAME": "127.0.0.1", "SLURM_NODEID": "1"}  # fmt: skip


def test_inside_an_srun_step_the_nodes_rank_and_rendezvous_are_derived_unless_given() -> None:
    job = nodes.detect(["--nproc-per-node", "2"], SLURM_STEP)
    assert job is not None and job.scheduler == nodes.SLURM and job.key == "slurm-42.0"
    assert job.options == ["--nnodes", "2", "--node-rank", "1", "--master-addr", "localhost"] and job.needs_port
    given = nodes.detect(["--nnodes=2", "--master-addr", "10.0.0.1", "--master-port", "29400"], SLURM_STEP)
    assert given is not None and given.options == ["--node-rank", "1"] and not given.needs_port
    # a batch script alone (no step), one node, or no Slurm at all: this node alone
    assert nodes.detect(None, {k: v for k, v in SLURM_STEP.items() if k != "SLURM_STEP_ID"}) is None
    assert nodes.detect(None, {**SLURM_STEP, "SLURM_STEP_NODELIST": "n1"}) is None
    assert nodes.detect(None, {}) is None


def test_two_oplens_per_node_is_bad_input_naming_the_fix() -> None:
    with pytest.raises(OpLensError) as e:
        nodes.detect(None, {**SLURM_STEP, "SLURM_STEP_TASKS_PER_NODE": "2(x2)"})
    assert e.value.kind == "bad_input" and "--ntasks-per-node=1" in e.value.detail


def test_torchrun_gets_no_standalone_where_its_pet_environment_names_several_nodes() -> None:
    """Inside a PyTorchJob's pod a `--standalone` made a loopback rendezvous that waited for a second node that
    never came (issue 40: 600 s by default)."""
    assert launcher(["--nproc-per-node", "2"], {}) == ["--nproc-per-node", "2", "--standalone"]
    for env in ({"PET_NNODES": "2"}, {"PET_NNODES": "1:2"}, {"PET_RDZV_ENDPOINT": "master:29400"},
                {"PET_MASTER_ADDR": "master", "PET_MASTER_PORT": "23456"}):  # fmt: skip
        assert launcher(["--nproc-per-node", "2"], env) == ["--nproc-per-node", "2"], env
    assert launcher(["--nproc-per-node", "2"], {"PET_NNODES": "1"}) == ["--nproc-per-node", "2", "--standalone"]
    job = nodes.detect(None, {"PET_NNODES": "1:2", "PET_RDZV_ENDPOINT": "job-master-0:29400", "HOSTNAME": "job-worker-0"})
    assert job is not None and job.scheduler == nodes.KUBERNETES and job.node_rank is None and job.nnodes == 2
    assert job.node == "job-worker-0" and job.options == [] and job.key.startswith("k8s-job-master-0-29400")


def test_the_first_node_names_the_nodes_that_never_reported(tmp_path: Path) -> None:
    job = nodes.NodeJob(nodes.SLURM, "slurm-7.0", 3, 0, "n1", ["n1", "n2", "n3"])
    (tmp_path / "n1.json").write_text(json.dumps({"node": "n1", "node_rank": 0}))
    (tmp_path / "n3.json").write_text(json.dumps({"node": "n3", "node_rank": 2, "error": "boom"}))
    (tmp_path / "rendezvous.json").write_text(json.dumps({"port": 1}))
    t0 = time.monotonic()
    reports, missing = multinode._gather(tmp_path, job, 0.6, None)
    assert 0.5 <= time.monotonic() - t0 < 5 and missing == ["n2"] and sorted(r.node for r in reports) == ["n1", "n3"]
