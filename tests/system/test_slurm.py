"""`oplens run` across the nodes of a real Slurm job: slurmctld and two slurmd emulating two nodes on this machine
(tests/support/slurmlab.py), a real gloo DDP program under torchrun on each node. OpLens derives the node count, the node's
rank and the rendezvous itself, each node stores its part in the shared runs folder, and the first node merges."""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from oplens.engine import runs
from oplens.engine import slurm as slurm_engine
from oplens.records import names
from support import slurmlab
from support.lsp import plain, served_client
from support.paths import DATA

PROGRAMS = DATA / "programs"
WINDOW = ["--skip", "2", "--profiler-warmup", "1", "--calls", "4"]
TARGET = ["--target", "ddp_train.py::train_step"]
HEAVY_LINE = 21
ENV = {"OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[slurmlab.Slurm]:
    why = slurmlab.missing()
    if why:
        pytest.skip(why)
    lab = slurmlab.start(tmp_path_factory.mktemp("slurm"))
    try:
        yield lab
    finally:
        lab.stop()


def srun_oplens(slurm: slurmlab.Slurm, out: Path, *program: str, extra: tuple[str, ...] = ()) -> str:
    """The user's own step: `srun -N2 --ntasks-per-node=1 oplens run ...` (stdout and stderr, with the returncode)."""
    proc = slurm.run("srun", "-N2", "--ntasks-per-node=1", sys.executable, "-m", "oplens", "run", "--nproc-per-node", "2",
                     "--out", str(out), *WINDOW, *extra, *TARGET, "--", "ddp_train.py", *program,
                     cwd=PROGRAMS, env=ENV)  # fmt: skip
    return f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"


def merged_run(out: Path) -> dict[str, object]:
    found = runs.list_runs(out)
    assert len(found) == 1, [p.name for p in found]
    return json.loads((found[0] / "result.json").read_text())


@pytest.mark.timing
def test_a_plain_srun_of_oplens_run_merges_the_nodes_by_itself_and_names_the_straggler_s_node(
    slurm: slurmlab.Slurm, tmp_path: Path
) -> None:
    said = srun_oplens(slurm, tmp_path, "--steps", "9", "--slow-rank", "3")
    assert said.startswith("rc=0"), said[-4000:] + slurm.log()
    run = merged_run(tmp_path)
    ranks = run["ranks"]
    assert isinstance(ranks, list)
    # four ranks on two nodes, as one torchrun run of four would have them, each naming its node
    assert [(r["rank"], r["host"], r["world_size"]) for r in ranks] == [(0, "n1", 4), (1, "n1", 4), (2, "n2", 4), (3, "n2", 4)]
    lines = run["lines"]
    assert isinstance(lines, list)
    heavy = next(s for s in lines if s["line"] == HEAVY_LINE)
    assert len(heavy["ranks"]["per_rank"]) == 4 and heavy["ranks"]["slowest"] == 3
    straggler = next(i for i in run["insights"] if i["kind"] == "straggler" and i["line"] == HEAVY_LINE)  # type: ignore[union-attr]
    assert straggler["rank"] == 3 and "node n2" in straggler["message"] and "not slow: the rank" in straggler["message"]
    assert not (tmp_path / ".nodes" / "").exists() or not any((tmp_path / ".nodes").iterdir())  # the parts' folder gone
    assert "merges the parts" in said  # the second node says who merges


def test_sbatch_options_are_told_from_oplens_run_s_own() -> None:
    known = {"--nproc-per-node": True, "--target": True, "--out": True, "--stop": False, "-m": True}
    sbatch, rest = slurm_engine.split_options(
        ["-N2", "--ntasks-per-node", "1", "--partition=trn2", "--exclusive", "--time", "10", "--nproc-per-node", "2",
         "--stop", "--target", "t.py::f", "--", "t.py", "-N", "3"], set(known), known.__getitem__)  # fmt: skip
    assert sbatch == ["-N2", "--ntasks-per-node", "1", "--partition=trn2", "--exclusive", "--time", "10"]
    assert rest == ["--nproc-per-node", "2", "--stop", "--target", "t.py::f", "--", "t.py", "-N", "3"]


def test_a_rank_that_raises_on_node_2_is_named_with_its_traceback_and_node_1_s_capture_is_kept(
    slurm: slurmlab.Slurm, tmp_path: Path
) -> None:
    said = srun_oplens(slurm, tmp_path, "--steps", "12", "--crash-rank", "3", "--crash-at", "5")
    assert not said.startswith("rc=0"), said[-3000:]
    assert "node n2 failed" in said and "rank 3 crashed at step 5" in said, said[-4000:]
    run = merged_run(tmp_path)  # captured before the crash: every node's part, merged
    assert {r["host"] for r in run["ranks"]} >= {"n1"}  # type: ignore[union-attr]
    assert any(p.is_dir() for p in (tmp_path / ".nodes").iterdir())  # each node's part kept beside the error


def oplens_slurm(slurm: slurmlab.Slurm, out: Path, *program: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "oplens", "run", "--slurm", "-N2", "--ntasks-per-node", "1",
                             "--nproc-per-node", "2", "--out", str(out), *WINDOW, *TARGET, "--", "ddp_train.py", *program],
                            cwd=PROGRAMS, env={**slurm.env, **ENV}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip


def test_oplens_run_slurm_submits_the_job_shows_its_state_and_the_merged_run(slurm: slurmlab.Slurm, tmp_path: Path) -> None:
    proc = oplens_slurm(slurm, tmp_path, "--steps", "9", "--slow-rank", "3")
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-4000:] + slurm.log()
    assert "submitted job" in stderr and "RUNNING on n[1-2]" in stderr and "COMPLETED" in stderr
    run = merged_run(tmp_path)
    assert [(r["rank"], r["host"]) for r in run["ranks"]] == [(0, "n1"), (1, "n1"), (2, "n2"), (3, "n2")]  # type: ignore[index]
    assert "4 ranks (0, 1, 2, 3) on n1, n2" in stdout  # the merged run, shown as `oplens run` shows one
    step = next((tmp_path / ".slurm").glob("*.sbatch")).read_text().splitlines()[-1]  # the batch script's step
    assert step.startswith("srun --ntasks-per-node=1") and "--slurm" not in step and "-N2" not in step


def test_ctrl_c_cancels_the_slurm_job(slurm: slurmlab.Slurm, tmp_path: Path) -> None:
    proc = oplens_slurm(slurm, tmp_path, "--steps", "100000000")
    assert proc.stderr is not None
    said = ""
    deadline = time.monotonic() + 60
    while "RUNNING" not in said and time.monotonic() < deadline:
        said += proc.stderr.readline()
    assert "RUNNING" in said, said
    job_id = said.split("submitted job ", 1)[1].split()[0]
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=120)
    assert proc.returncode != 0 and f"job {job_id} was cancelled (scancel)" in rest, rest[-3000:]
    deadline = time.monotonic() + 60
    state = ""
    while time.monotonic() < deadline:
        state = slurm.run("squeue", "-h", "-t", "all", "-j", job_id, "-o", "%T").stdout.strip()
        if state in ("CANCELLED", ""):
            break
        time.sleep(0.5)
    assert state in ("CANCELLED", ""), state


async def test_the_editor_s_profile_in_program_as_a_slurm_job(
    slurm: slurmlab.Slurm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the real server over a real LSP client (pytest-lsp): `oplens.slurm` says sbatch is there, and
    `oplens.profile` with `program.slurm` (sbatch options) runs a torchrun launch configuration's program as a
    job of two nodes; the merged run comes as `oplens/result` like a torchrun run's, the job's state in the log."""
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    shutil.copy(PROGRAMS / "ddp_train.py", ws / "ddp_train.py")
    monkeypatch.setenv("SLURM_CONF", slurm.env["SLURM_CONF"])
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    async with served_client(ws) as client:
        here = plain(await client.workspace_execute_command_async(lsp.ExecuteCommandParams(command=names.SLURM_COMMAND)))
        assert here["sbatch"] and "as a Slurm job" in here["note"]
        program = {"module": "torch.distributed.run", "args": ["--nproc-per-node", "2", "ddp_train.py", "--steps", "9"],
                   "slurm": ["-N2"]}  # fmt: skip
        arg = {"uri": (ws / "ddp_train.py").as_uri(), "qualname": "train_step", "program": program, "skip": 2, "calls": 4}
        params = lsp.ExecuteCommandParams(command=names.PROFILE_COMMAND, arguments=[arg])
        reply = plain(await asyncio.wait_for(client.workspace_execute_command_async(params), 240))
        (note,) = client.results  # type: ignore[attr-defined]
        run = note["run"]
        assert run["run_id"] == reply["run_id"] and reply["qualname"] == "train_step"
        assert [(r["rank"], r["host"]) for r in run["ranks"]] == [(0, "n1"), (1, "n1"), (2, "n2"), (3, "n2")]
        said = [m.message for m in client.log_messages]
        assert any("[slurm] submitted job" in m for m in said) and any("RUNNING on n[1-2]" in m for m in said), said
