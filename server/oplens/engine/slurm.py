"""`oplens run --slurm [sbatch options] ...`: the capture submitted as a Slurm job, watched, and its merged run read.

The job is a batch script with one step, `srun --ntasks-per-node=1 <this Python> -m oplens run ...`: one OpLens per
node, each starting its node's ranks under torchrun, the parts merged by the first node (engine/multinode.py). The
user's sbatch options (nodes, partition, time, account) are passed to sbatch after OpLens's own, so theirs win. The
job's output goes to `<runs root>/.slurm/<job id>.out` and the merged runs' record list to `<job id>.json`, both in
the runs folder every node sees (the submit directory's `.oplens/runs`, or `--out`).

While it waits: the job's state as squeue says it (pending and why, running where), and each node's part as it is
stored. A cancel (Ctrl-C, the editor's Cancel) cancels the job (`scancel`).
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oplens.engine.multinode import NODES_DIR
from oplens.records.errors import OpLensError, bad_input

SLURM_DIR = ".slurm"
ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"}
POLL_S = 1.0

# sbatch's options that take no value (sbatch(1)); every other one takes one, attached (`-N2`, `--nodes=2`) or next
SBATCH_FLAGS = {"--exclusive", "--hold", "-H", "--requeue", "--no-requeue", "--overcommit", "-O", "--contiguous",
                "--spread-job", "--use-min-nodes", "--quiet", "-Q", "--verbose", "-v", "--wait", "-W", "--parsable",
                "--test-only", "--ignore-pbs", "--get-user-env", "--no-kill", "-k", "--reboot", "--oversubscribe",
                "-s"}  # fmt: skip


@dataclass(frozen=True)
class SubmittedJob:
    job_id: str
    output: Path  # the job's stdout and stderr
    result: Path  # the merged runs' records, written by the merging node (`oplens run --json`)
    nodes_dir: Path  # where the nodes' parts appear


def split_options(tokens: list[str], ours: set[str], takes_value: Callable[[str], bool]) -> tuple[list[str], list[str]]:
    """`tokens` (the command line before `--`) as (sbatch's options, the rest): an option `oplens run` does not know
    (`ours`) is sbatch's, with its value where it takes one (`-N 2`, `--partition trn2`; attached forms whole)."""
    sbatch: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        key = t.split("=", 1)[0]
        if t in ("--", "-m") or t.startswith("-m") and not t.startswith("--"):  # the program and its own arguments
            rest += tokens[i:]
            break
        if not t.startswith("-") or key in ours or (len(t) > 2 and not t.startswith("--") and t[:2] in ours):
            rest.append(t)
            if key in ours and "=" not in t and takes_value(key) and i + 1 < len(tokens):
                rest.append(tokens[i + 1])
                i += 1
            i += 1
            continue
        sbatch.append(t)
        attached = "=" in t or (not t.startswith("--") and len(t) > 2)
        if not attached and t not in SBATCH_FLAGS and i + 1 < len(tokens) and not tokens[i + 1].startswith("-"):
            sbatch.append(tokens[i + 1])
            i += 1
        i += 1
    return sbatch, rest


def submit(run_argv: list[str], sbatch_options: list[str], root: Path, cwd: Path) -> SubmittedJob:
    """The batch script written under `root/.slurm` and submitted; `run_argv`: `oplens run`'s arguments for each
    node (`--out` and `--json` set here)."""
    if shutil.which("sbatch") is None:
        raise bad_input("--slurm needs Slurm's sbatch on this host's PATH, and it is not there",
                        "run on the cluster's login node (Remote-SSH to it), or load Slurm's module first")  # fmt: skip
    folder = root / SLURM_DIR
    folder.mkdir(parents=True, exist_ok=True)
    ours = f'--out {shlex.quote(str(root))} --json "{folder}/${{SLURM_JOB_ID}}.json"'  # before the program's `--`
    script = folder / f"oplens-{time.strftime('%Y%m%d-%H%M%S')}.sbatch"
    script.write_text(
        "#!/bin/bash\n"
        "# Written by `oplens run --slurm`: one OpLens per node (torchrun starts each node's ranks); the first node\n"
        "# merges the nodes' parts into the runs folder.\n"
        f"srun --ntasks-per-node=1 --kill-on-bad-exit=0 {shlex.quote(sys.executable)} -m oplens run {ours} "
        f"{shlex.join(run_argv)}\n",
        encoding="utf-8",
    )
    proc = subprocess.run(["sbatch", "--parsable", "--job-name", "oplens", "--output", f"{folder}/%j.out",
                           "--chdir", str(cwd), *sbatch_options, str(script)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    if proc.returncode != 0:
        raise bad_input(f"sbatch refused the job: {proc.stderr.strip() or proc.stdout.strip()}",
                        "check the sbatch options given after --slurm (nodes, partition, time, account)")  # fmt: skip
    job_id = proc.stdout.strip().split(";")[0]
    return SubmittedJob(job_id, folder / f"{job_id}.out", folder / f"{job_id}.json", root / NODES_DIR)


def watch(job: SubmittedJob, say: Callable[[str], None], cancel: threading.Event | None = None) -> str:
    """Until the job ends: its state and the nodes' parts as they come, said once each; its final state. A cancel
    (or Ctrl-C) cancels the job and raises."""
    last = ""
    parts: set[str] = set()
    try:
        while True:
            if cancel is not None and cancel.is_set():
                raise KeyboardInterrupt
            state, reason, where = _state(job.job_id)
            shown = f"{state} ({reason})" if state == "PENDING" and reason not in ("", "None") else state
            if state == "RUNNING" and where:
                shown += f" on {where}"
            if shown and shown != last:
                say(f"job {job.job_id}: {shown}")
                last = shown
            for report in sorted(job.nodes_dir.glob(f"slurm-{job.job_id}.*/*.json")):
                if report.name != "rendezvous.json" and report.stem not in parts:
                    parts.add(report.stem)
                    say(f"job {job.job_id}: node {report.stem}'s part is stored")
            if state in ENDED or (not state and job.result.exists()):
                return state or "COMPLETED"
            if not state and last:  # it left the queue without a final word (accounting off, MinJobAge passed)
                return "ENDED"
            time.sleep(POLL_S)
    except KeyboardInterrupt:
        subprocess.run(["scancel", job.job_id], capture_output=True, timeout=60)
        raise OpLensError("cancelled", f"job {job.job_id} was cancelled (scancel)", _tail(job.output)) from None


def merged_run_dirs(job: SubmittedJob, root: Path, state: str) -> list[Path]:
    """The merged runs the job stored, from the record list its merging node wrote; an error naming the job's state
    and its output's tail where there is none."""
    try:
        data: Any = json.loads(job.result.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    records = data if isinstance(data, list) else [data] if isinstance(data, dict) else []
    dirs = [root / str(r.get("run_id", "")) for r in records if isinstance(r, dict) and r.get("run_id")]
    if not dirs:
        raise OpLensError("program_failed", f"job {job.job_id} ended ({state}) without a merged run",
                          f"its output ({job.output}), tail:\n{_tail(job.output)}")  # fmt: skip
    return dirs


def _state(job_id: str) -> tuple[str, str, str]:
    """squeue's (state, reason, nodes) of the job; ('', '', '') where it no longer lists it."""
    try:
        proc = subprocess.run(["squeue", "-h", "-t", "all", "-j", job_id, "-o", "%T|%r|%N"], capture_output=True,
                              text=True, timeout=60)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return "", "", ""
    line = proc.stdout.strip().splitlines()[0] if proc.returncode == 0 and proc.stdout.strip() else ""
    state, _, rest = line.partition("|")
    reason, _, where = rest.partition("|")
    return state.strip(), reason.strip(), where.strip()


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no output at {path})"
