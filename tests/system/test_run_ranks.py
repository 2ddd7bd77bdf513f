"""`oplens run` across the ranks of real torchrun jobs (gloo on the CPU, loopback rendezvous on free
ports): the merged run per line and rank, the straggler, the collectives, a failing rank, and two
"nodes" on one machine combined by `oplens merge`."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from oplens.engine import runs
from support.cli import oplens_cli
from support.paths import DATA, ROOT
from support.processes import killed_parent_leaves_nothing

PROGRAMS = DATA / "programs"
WINDOW = ["--skip", "2", "--profiler-warmup", "1", "--calls", "4"]
TARGET = ["--target", "ddp_train.py::train_step"]
HEAVY_LINE = 21  # extra = heavy(x, rounds): 12 rounds on the slow rank, 1 on the others
BACKWARD_LINE = 23  # loss.backward(): DDP all-reduces the gradients here


# One intra-op thread per rank: two ranks with torch's default of one thread per core oversubscribe this
# machine's 2 cores, and a call stalled for tens of ms (seen: 18-63 ms against ~0.3) moves a rank's mean.
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def oplens(*argv: str, cwd: Path = PROGRAMS, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return oplens_cli(cwd, *argv, timeout=timeout, OMP_NUM_THREADS="1")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def line(run: dict[str, Any], number: int) -> dict[str, Any]:
    return next(s for s in run["lines"] if s["line"] == number)


@pytest.mark.timing
def test_two_ranks_per_line_with_the_straggler_and_the_collectives(tmp_path: Path) -> None:
    out = oplens("run", "--nproc-per-node", "2", "--out", str(tmp_path), "--json", str(tmp_path / "r.json"),
                 *WINDOW, *TARGET, "--", "ddp_train.py", "--steps", "9")  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    run = json.loads((tmp_path / "r.json").read_text())
    assert [r["rank"] for r in run["ranks"]] == [0, 1] and {r["world_size"] for r in run["ranks"]} == {2}
    heavy = line(run, HEAVY_LINE)
    assert len(heavy["ranks"]["per_rank"]) == 2 and heavy["ranks"]["slowest"] == 1
    # each rank's figure is that rank's own attribution, as a single capture gives it
    parts = [runs.load(Path(run["run_dir"]) / r["part"]) for r in run["ranks"]]
    for i, part in enumerate(parts):
        own = next(s for s in part.lines if s.line == HEAVY_LINE)
        assert heavy["ranks"]["per_rank"][i] == own.self_device_us
        assert part.capture is not None and part.capture.calls_profiled == 4
    assert abs(sum(s["self_device_us"] for s in run["lines"]) - run["totals"]["self_device_us"]) < 1e-6 * run["totals"][
        "self_device_us"
    ] + 1e-6
    stragglers = [i for i in run["insights"] if i["kind"] == "straggler"]
    (heavy_straggler,) = [i for i in stragglers if i["line"] == HEAVY_LINE]
    assert heavy_straggler["rank"] == 1 and "rank 1 is the straggler" in heavy_straggler["message"]
    assert "12.00× the others' work" in heavy_straggler["message"]  # 12 rounds against 1: an imbalance
    # Two ranks on this machine's two shared cores: rank 0's backward runs while rank 1 is still in the
    # heavy line, so it may be slower there doing the same work; that is said as such, not as an imbalance.
    assert all("the same work slower" in i["message"] for i in stragglers if i["line"] != HEAVY_LINE)
    collectives = [o for o in run["ops"] if o["category"] == "collective"]
    assert any("allreduce" in o["name"] for o in collectives)
    assert line(run, BACKWARD_LINE)["collective_us"] > 0
    assert "rank 1 is the straggler" in out.stdout and "Ranks min … max" in out.stdout
    assert "step 8 loss" in out.stdout  # the program's output passes through

    one = oplens("merge", str(run["run_dir"]), "--out", str(tmp_path / "again"), "--rank", "1")
    assert one.returncode == 0, one.stderr
    assert "rank 1 of 2" in one.stdout and "Ranks min" not in one.stdout  # rank 1's own run: no rank column


def test_a_failing_rank_is_named_and_what_it_captured_kept(tmp_path: Path) -> None:
    out = oplens("run", "--nproc-per-node", "2", "--out", str(tmp_path), *WINDOW, *TARGET,
                 "--", "ddp_train.py", "--steps", "9", "--crash-rank", "1", "--crash-at", "5")  # fmt: skip
    assert out.returncode == 3, out.stderr[-3000:]
    assert "rank 1: the program raised RuntimeError: rank 1 crashed at step 5" in out.stderr
    assert 'raise RuntimeError(f"rank {rank} crashed at step {step}")' in out.stderr  # its traceback
    (kept,) = runs.list_runs(tmp_path)
    run = runs.load(kept)
    assert run.capture is not None and run.capture.partial
    # rank 1's own calls, marked partial; and rank 0's: it sits in the step's all-reduce waiting for
    # rank 1 (native code, where no Python handler runs) when torchrun stops it, so its stop watcher sends them
    assert [r.rank for r in run.ranks] == [0, 1] and "rank 1:" in run.capture.reason and "rank 0:" in run.capture.reason


def test_two_nodes_on_one_machine_then_merge(tmp_path: Path) -> None:
    endpoint = f"127.0.0.1:{free_port()}"
    procs = []
    for node in (0, 1):
        cmd = [sys.executable, "-m", "oplens", "run", "--nnodes", "2", "--node-rank", str(node), "--nproc-per-node", "1",
               "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint, "--rdzv-id", "oplens-test",
               "--out", str(tmp_path / f"node{node}"), *WINDOW, *TARGET, "--", "ddp_train.py", "--steps", "9"]  # fmt: skip
        procs.append(subprocess.Popen(cmd, cwd=PROGRAMS, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV))
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
    dirs = [str(runs.list_runs(tmp_path / f"node{n}")[0]) for n in (0, 1)]
    assert sorted(runs.load(Path(d)).ranks[0].rank for d in dirs) == [0, 1]  # c10d rendezvous assigns the ranks
    out = oplens("merge", *dirs, "--out", str(tmp_path / "merged"), "--json", str(tmp_path / "m.json"))
    assert out.returncode == 0, out.stderr
    merged = json.loads((tmp_path / "m.json").read_text())
    assert [r["rank"] for r in merged["ranks"]] == [0, 1]
    assert line(merged, HEAVY_LINE)["ranks"]["slowest"] == 1
    assert (Path(merged["run_dir"]) / "ranks" / "1" / "result.json").is_file()
    again = oplens("merge", dirs[0], dirs[0], "--out", str(tmp_path / "bad"))
    assert again.returncode == 2 and "appears in more than one directory" in again.stderr


def test_ranks_neuron_profiles_merge_into_one_system_profile_documented_layout(tmp_path: Path) -> None:
    """Stand-in files in the Neuron docs' layout (how-to-profile-workload.rst "Expected output": one
    `<instance>_pid_<pid>` folder per rank): each host's run holds its rank's profile; the merged run's
    profile output directory holds both, which `oplens explorer` ingests as one system profile."""
    from oplens.backends.neuron.artifacts import PROFILE_DIR, discover
    from oplens.records.run import RankInfo, Run

    sample = Run.from_dict(json.loads((ROOT / "extension/test/fixtures/rmsnorm_naive.cpu.result.json").read_text()))
    dirs = []
    for rank, pid in ((0, 101), (1, 202)):
        run_dir = tmp_path / f"host{rank}" / f"run{rank}"
        base = run_dir / PROFILE_DIR / f"i-0abc_pid_{pid}" / "20260101T000000"
        base.mkdir(parents=True)
        for name in ("ntrace.pb", "trace_info.pb", "neff_111_vnc_0.neff", "profile_nc_0_session_0.ntff"):
            (base / name).write_bytes(b"x")
        run = Run.from_dict(sample.to_dict())
        run.backend.name, run.backend.device_label = "neuron", "NEURON"
        neffs, ntffs, profiles, pairs = discover(run_dir / PROFILE_DIR, run_dir)
        run.artifacts.profile_output_dir, run.artifacts.neuron_profiles = PROFILE_DIR, profiles
        run.artifacts.neffs, run.artifacts.ntffs, run.artifacts.neff_ntff_pairs = neffs, ntffs, pairs
        run.ranks = [RankInfo(rank=rank, world_size=2, host=f"host{rank}", part=f"ranks/{rank}")]
        run.run_id = run_dir.name
        (run_dir / "result.json").write_text(json.dumps(run.to_dict()))
        dirs.append(str(run_dir))
    out = oplens("merge", *dirs, "--out", str(tmp_path / "merged"), "--json", str(tmp_path / "m.json"))
    assert out.returncode == 0, out.stderr
    merged = json.loads((tmp_path / "m.json").read_text())
    output = Path(merged["run_dir"]) / PROFILE_DIR
    assert sorted(p.name for p in output.iterdir()) == ["i-0abc_pid_101", "i-0abc_pid_202"]
    assert sorted(p["rank"] for p in merged["artifacts"]["neuron_profiles"]) == [0, 1]
    env = {k: v for k, v in __import__("os").environ.items()} | {"PATH": "/usr/bin:/bin"}
    plan = subprocess.run([sys.executable, "-m", "oplens", "explorer", merged["run_dir"], "--dry-run", "--json", "-"],
                          capture_output=True, text=True, env=env, timeout=60)  # fmt: skip
    assert plan.returncode == 0, plan.stderr
    ingest = json.loads(plan.stdout)["commands"][-1]
    assert ingest[ingest.index("-d") + 1] == str(output.resolve())
    assert len(json.loads(plan.stdout)["profiles"]) == 2


def test_killing_oplens_ends_torchrun_and_every_rank(tmp_path: Path) -> None:
    """OpLens killed with SIGKILL: torchrun and its ranks, in the worker's session, see the parent gone
    (its pid reaches every rank in the environment) and end, rather than train on holding the devices."""
    argv = [sys.executable, "-m", "oplens", "run", "--nproc-per-node", "2", "--out", str(tmp_path), *WINDOW, *TARGET,
            "--", "ddp_train.py", "--steps", "100000", "--quiet-after", "13"]  # fmt: skip
    # quiet from step 13 on: a rank printing into the dead parent's pipe would die of that alone
    assert killed_parent_leaves_nothing(argv, PROGRAMS, marker=str(tmp_path), ready="step 12 loss") == []


def test_the_overview_of_two_ranks_merges_each_function_with_its_spread(tmp_path: Path) -> None:
    """`oplens run --nproc-per-node 2 --step …::train_step`: one overview across the ranks, each function's
    figures the mean over them, its self time on each rank beside it with the slowest (heavy runs 12 rounds
    on rank 1, 1 on rank 0), the call tree and the rank parts kept."""
    out = oplens("run", "--nproc-per-node", "2", "--out", str(tmp_path), "--json", str(tmp_path / "r.json"),
                 *WINDOW, "--step", "ddp_train.py::train_step", "--", "ddp_train.py", "--steps", "9")  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    run = json.loads((tmp_path / "r.json").read_text())
    o = run["overview"]
    assert [r["rank"] for r in run["ranks"]] == [0, 1] and o["steps"] == 4
    fns = {f["qualname"]: f for f in o["functions"]}
    heavy = fns["heavy"]
    assert len(heavy["ranks"]["per_rank"]) == 2 and heavy["ranks"]["slowest"] == 1
    assert heavy["ranks"]["per_rank"][1] > 3 * heavy["ranks"]["per_rank"][0]
    assert abs(heavy["self_device_us"] - sum(heavy["ranks"]["per_rank"]) / 2) < 1e-6 * heavy["self_device_us"] + 1e-6
    parts = [runs.load(Path(run["run_dir"]) / r["part"]) for r in run["ranks"]]
    for i, part in enumerate(parts):  # each rank's figure is its own overview's
        assert part.overview is not None
        own = next(f for f in part.overview.functions if f.qualname == "heavy")
        assert heavy["ranks"]["per_rank"][i] == own.self_device_us
    # the whole: the mean of the ranks' totals; the shares of it; train_step's total holds heavy's
    assert abs(o["total_device_us"] - sum(p.overview.total_device_us for p in parts if p.overview) / 2) < 1e-3
    assert fns["train_step"]["total_device_us"] >= heavy["self_device_us"]
    # the call tree: main (the loop) > train_step > heavy
    names = [o["functions"][n["function"]]["qualname"] for n in o["frames"]]
    heavy_node = o["frames"][names.index("heavy")]
    assert names[heavy_node["parent"]] == "train_step" and names[o["frames"][heavy_node["parent"]]["parent"]] == "main"
    assert abs(heavy_node["total_device_us"] - heavy["self_device_us"]) < 1e-3
    assert "heavy" in out.stdout and "ranks median" in out.stdout
