"""A capture submitted as a Slurm job (`oplens run --slurm [sbatch options] ...`, the editor's "as a Slurm job"),
watched, and its merged runs read.

The request is written as JSON beside a batch script with one step, `srun --ntasks-per-node=1 <this Python> -m
oplens.engine.slurm REQUEST RESULT`: one OpLens per node (`node_main`), each starting its node's ranks under
torchrun, the parts merged by the first node (engine/multinode.py), which writes the merged runs' ids to RESULT. The
user's sbatch options (nodes, partition, time, account) are passed to sbatch after OpLens's own, so theirs win. The
job's output goes to `<runs root>/.slurm/<job id>.out`, in the runs folder every node sees (the submit directory's
`.oplens/runs`, or `--out`).

While it waits: the job's state as squeue says it (pending and why, running where), and each node's part as it is
stored. A cancel (Ctrl-C, the editor's Cancel) cancels the job (`scancel`).
"""

from __future__ import annotations

import dataclasses
import json
import os
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

from oplens.backends import registry
from oplens.engine import multinode, runs
from oplens.engine.multinode import DEFAULT_GATHER_TIMEOUT_S, NODES_DIR
from oplens.engine.nodes import expand_hostlist
from oplens.engine.process import ProgressFn
from oplens.engine.program import ProgramRequest, validate
from oplens.records.atomic import write_json_atomic
from oplens.records.errors import OpLensError, bad_input
from oplens.records.job import ProgramSpec, TargetSpec
from oplens.records.overview import AnyRun
from oplens.records.run import from_dict as record_from_dict

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


def run_job(
    req: ProgramRequest,
    sbatch_options: list[str],
    say: Callable[[str], None],
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
    gather_timeout_s: float = DEFAULT_GATHER_TIMEOUT_S,
) -> list[AnyRun]:
    """`req` captured as a Slurm job: submitted, watched until it ends, its merged runs (stored in the runs root
    every node sees) loaded. `say` hears the job's state and the nodes' parts; `progress` the same as stages
    (`queued` while it is pending, `capture` with the nodes' parts stored, of the job's nodes)."""
    validate(req)  # a missing script or folder is told now, not from the job's output
    root = runs.runs_root(req.workspace.resolve(), req.out)
    runs.prepare(root)
    job = submit(req, sbatch_options, root, gather_timeout_s)
    say(f"submitted job {job.job_id} (sbatch {' '.join(sbatch_options) or 'with the cluster defaults'}); its output: "
        f"{job.output}")  # fmt: skip
    state = watch(job, say, progress, cancel)
    return [runs.load(d) for d in merged_run_dirs(job, root, state)]


def submit(req: ProgramRequest, sbatch_options: list[str], root: Path, gather_timeout_s: float) -> SubmittedJob:
    """The request and the batch script written under `root/.slurm`, and the script submitted."""
    if shutil.which("sbatch") is None:
        raise bad_input("a Slurm job needs Slurm's sbatch on this host's PATH, and it is not there",
                        "run on the cluster's login node (Remote-SSH to it), or load Slurm's module first")  # fmt: skip
    folder = root / SLURM_DIR
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / f"oplens-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    request = stem.with_suffix(".request.json")
    data = request_dict(dataclasses.replace(req, out=str(root)))
    write_json_atomic(request, {**data, "gather_timeout_s": gather_timeout_s})
    script = stem.with_suffix(".sbatch")
    script.write_text(
        "#!/bin/bash\n"
        "# Written by OpLens: one OpLens per node (torchrun starts each node's ranks), the capture as the request\n"
        "# beside this script says; the first node merges the nodes' parts into the runs folder.\n"
        f"srun --ntasks-per-node=1 --kill-on-bad-exit=0 {shlex.quote(sys.executable)} -m oplens.engine.slurm "
        f'{shlex.quote(str(request))} "{folder}/${{SLURM_JOB_ID}}.json"\n',
        encoding="utf-8",
    )
    cwd = Path(req.program.cwd) if req.program.cwd else req.workspace
    proc = subprocess.run(["sbatch", "--parsable", "--job-name", "oplens", "--output", f"{folder}/%j.out",
                           "--chdir", str(cwd), *sbatch_options, str(script)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    if proc.returncode != 0:
        raise bad_input(f"sbatch refused the job: {proc.stderr.strip() or proc.stdout.strip()}",
                        "check the sbatch options (nodes, partition, time, account)")  # fmt: skip
    job_id = proc.stdout.strip().split(";")[0]
    return SubmittedJob(job_id, folder / f"{job_id}.out", folder / f"{job_id}.json", root / NODES_DIR)


def request_dict(req: ProgramRequest) -> dict[str, Any]:
    """`req` as JSON data (its backend options as their records' fields), for the job's nodes."""
    data = {f.name: getattr(req, f.name) for f in dataclasses.fields(req) if f.name != "names"}
    data["targets"] = [dataclasses.asdict(t) for t in req.targets]
    data["program"] = dataclasses.asdict(req.program)
    data["workspace"] = str(req.workspace)
    data["backend_options"] = {name: dataclasses.asdict(o) for name, o in req.backend_options.items()}
    return data


def request_of(data: dict[str, Any]) -> ProgramRequest:
    """The request `request_dict` wrote."""
    fields = {f.name for f in dataclasses.fields(ProgramRequest)} - {"names"}
    kw = {k: v for k, v in data.items() if k in fields}
    kw["targets"] = [TargetSpec(**t) for t in data.get("targets", [])]
    kw["program"] = ProgramSpec(**data["program"])
    kw["workspace"] = Path(data["workspace"])
    kw["backend_options"] = {name: record_from_dict(registry.get(name).options_type, o)
                             for name, o in data.get("backend_options", {}).items()}  # fmt: skip
    return ProgramRequest(**kw)


def watch(job: SubmittedJob, say: Callable[[str], None], progress: ProgressFn | None = None,
          cancel: threading.Event | None = None) -> str:  # fmt: skip
    """Until the job ends: its state and the nodes' parts as they come, said once each; its final state. A cancel
    (or Ctrl-C) cancels the job and raises."""
    last = ""
    parts: set[str] = set()
    nodes = 0
    try:
        while True:
            if cancel is not None and cancel.is_set():
                raise KeyboardInterrupt
            state, reason, where = _state(job.job_id)
            shown = f"{state} ({reason})" if state == "PENDING" and reason not in ("", "None") else state
            if state == "RUNNING" and where:
                shown += f" on {where}"
                nodes = nodes or len(expand_hostlist(where))
            if shown and shown != last:
                say(f"job {job.job_id}: {shown}")
                last = shown
            for report in sorted(job.nodes_dir.glob(f"slurm-{job.job_id}.*/*.json")):
                if report.name != "rendezvous.json" and report.stem not in parts:
                    parts.add(report.stem)
                    say(f"job {job.job_id}: node {report.stem}'s part is stored")
            if progress is not None and state:
                progress("queued" if state == "PENDING" else "capture", len(parts), max(nodes, len(parts)))
            if state in ENDED or (not state and job.result.exists()):
                return state or "COMPLETED"
            if not state and last:  # it left the queue without a final word (accounting off, MinJobAge passed)
                return "ENDED"
            time.sleep(POLL_S)
    except KeyboardInterrupt:
        subprocess.run(["scancel", job.job_id], capture_output=True, timeout=60)
        raise OpLensError("cancelled", f"job {job.job_id} was cancelled (scancel)", _tail(job.output)) from None


def merged_run_dirs(job: SubmittedJob, root: Path, state: str) -> list[Path]:
    """The merged runs the job stored, from the list its merging node wrote; an error naming the job's state and its
    output's tail where there is none."""
    try:
        data: Any = json.loads(job.result.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    dirs = [root / str(r) for r in data] if isinstance(data, list) else []
    if not dirs:
        raise OpLensError("program_failed", f"job {job.job_id} ended ({state}) without a merged run",
                          f"its output ({job.output}), tail:\n{_tail(job.output)}")  # fmt: skip
    return dirs


def node_main(argv: list[str]) -> int:
    """A node of the job: `python -m oplens.engine.slurm REQUEST RESULT` (the batch script's step). Its part
    captured; on the merging node the merged runs' ids written to RESULT; an error said on stderr, as its exit
    status."""
    data = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    req = request_of(data)

    def echo(stream: int, chunk: bytes) -> None:
        out = sys.stdout if stream == 1 else sys.stderr
        out.buffer.write(chunk)
        out.flush()

    def note(words: str) -> None:
        print(f"oplens: {words}", file=sys.stderr, flush=True)

    try:
        merged = multinode.run(req, echo=echo, gather_timeout_s=float(data.get("gather_timeout_s", DEFAULT_GATHER_TIMEOUT_S)),
                               note=note)  # fmt: skip
    except OpLensError as e:
        print(f"oplens: error: {e.message}" + (f"\n{e.detail}" if e.detail else ""), file=sys.stderr, flush=True)
        return e.exit_code
    if merged:
        write_json_atomic(Path(argv[1]), [r.run_id for r in merged])
        for r in merged:
            note(f"run {r.run_id} → {r.run_dir}")
    return 0


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


if __name__ == "__main__":
    sys.exit(node_main(sys.argv[1:]))
