"""`oplens run` as one node's part of a job of several (Slurm, Kubernetes): each node captures its own ranks into
a shared folder, and one node merges every node's part into one run once all have reported.

The folder is the runs root every node sees (the submit directory's `.oplens/runs` under srun, `--out` on a
shared volume), under `.nodes/<job key>/` (engine/nodes.py):

    rendezvous.json     Slurm: the port the first node found free for torchrun's rendezvous
    <node>/             the node's own runs root: its capture of its ranks, stored as a one-node torchrun run
    <node>.json         the node's report (`NodeReport`): its runs, or why it has none, written last

The merging node (the first; elastic, with no node rank: the one that ran global rank 0) waits for every node's
report (`--gather-timeout`), merges each target's parts (engine/merge.py) into the runs root as `oplens merge`
does, and names the nodes that failed (their error) or never reported; what the others captured is kept. The
job's folder is removed once merged (a Slurm job's key never comes again; a PyTorchJob run again by its name
starts afresh).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from oplens.engine import nodes, runs
from oplens.engine.merge import merge_dirs
from oplens.engine.process import Echo, ProgressFn
from oplens.engine.program import ProgramRequest, run_program
from oplens.records.atomic import write_json_atomic
from oplens.records.errors import OpLensError, bad_input
from oplens.records.job import NODE_ENV
from oplens.records.overview import AnyRun

NODES_DIR = ".nodes"
DEFAULT_GATHER_TIMEOUT_S = 120.0  # after its own capture, how long the merging node waits for the others' reports
RENDEZVOUS_WAIT_S = 120.0  # how long a node waits for the first node's rendezvous port


@dataclass
class NodeReport:
    """A node's part of the job, written last in its folder: its stored runs (relative to the job's folder), or
    why it has none."""

    node: str
    node_rank: int | None
    runs: list[str] = field(default_factory=list)
    ranks: list[int] = field(default_factory=list)  # the global ranks its runs hold
    error: str = ""  # its `oplens run`'s error (message and detail), '' where it captured
    kind: str = ""  # its kind (OpLensError.kind)
    written: float = 0.0  # when (time.time()): the node that failed first is the likely cause, named first


def run(
    req: ProgramRequest,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
    echo: Echo | None = None,
    stdin: int | None = subprocess.DEVNULL,
    on_run: Callable[[AnyRun], None] | None = None,
    gather_timeout_s: float = DEFAULT_GATHER_TIMEOUT_S,
    note: Callable[[str], None] | None = None,
) -> list[AnyRun]:
    """`run_program` on this node alone, or, inside a job of several nodes (`nodes.detect`), this node's part of it
    and, on the merging node, the merged runs. `note` hears what a node does besides capturing (waiting for the
    others, which node merges)."""
    job = nodes.detect(req.launcher, os.environ)
    if job is None:
        return run_program(req, progress, cancel, echo, stdin, on_run)
    say = note or (lambda _: None)
    root = runs.runs_root(req.workspace.resolve(), req.out)
    folder = root / NODES_DIR / job.key
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{job.node}.json").unlink(missing_ok=True)  # a report of an earlier run of the same job is not this one
    options = [*(req.launcher or []), *job.options]
    if job.needs_port:
        options += ["--master-port", str(rendezvous(folder, job, cancel))]
    env = {**req.program.env, NODE_ENV: job.node}
    node_req = dataclasses.replace(req, out=str(folder / job.node), launcher=options,
                                   program=dataclasses.replace(req.program, env=env))  # fmt: skip
    kept: list[AnyRun] = []
    error: OpLensError | None = None
    try:
        run_program(node_req, progress, cancel, echo, stdin, kept.append)
    except OpLensError as e:
        error = e
    report = NodeReport(job.node, job.node_rank, [str(Path(r.run_dir).relative_to(folder)) for r in kept if r.run_dir],
                        sorted({i.rank for r in kept for i in r.ranks}), written=time.time())  # fmt: skip
    if error is not None:
        report.error, report.kind = _words(error), error.kind
    write_json_atomic(folder / f"{job.node}.json", dataclasses.asdict(report))
    if not _merges(job, report):
        say(f"node {job.node}: its part is stored in {folder / job.node}; the job's first node merges the parts")
        if error is not None:
            raise error
        return []
    say(f"node {job.node}: waiting for the other nodes' parts (up to {gather_timeout_s:g} s)")
    reports, missing = _gather(folder, job, gather_timeout_s, cancel)
    merged = _merge(root, folder, reports)
    for m in merged:
        if on_run is not None:
            on_run(m)
    failed = sorted((r for r in reports if r.error), key=lambda r: r.written)  # the first to fail first
    if not missing and not failed:
        shutil.rmtree(folder, ignore_errors=True)
        return merged
    problems = [f"node {r.node} failed: {r.error}" for r in failed]
    if missing:
        problems.append(f"node{'s' if len(missing) > 1 else ''} {', '.join(missing)} never reported within "
                        f"{gather_timeout_s:g} s (look at its output in the job's log)")  # fmt: skip
    kept_words = (f"the merged run{'s' if len(merged) > 1 else ''} of the others: " + ", ".join(m.run_id for m in merged)
                  if merged else "no node captured a complete part")  # fmt: skip
    raise OpLensError(error.kind if error is not None and not merged else "program_failed",
                      "; ".join(problems), f"{kept_words}; each node's part stays in {folder}")  # fmt: skip


def rendezvous(folder: Path, job: nodes.NodeJob, cancel: threading.Event | None = None) -> int:
    """torchrun's rendezvous port: the first node finds one free on its host and writes it; the others read it."""
    path = folder / "rendezvous.json"
    if job.node_rank == 0:
        with socket.socket() as s:
            s.bind(("", 0))
            port = int(s.getsockname()[1])
        write_json_atomic(path, {"addr": job.master_addr, "port": port, "node": job.node})
        return port
    deadline = time.monotonic() + RENDEZVOUS_WAIT_S
    while time.monotonic() < deadline:
        if cancel is not None and cancel.is_set():
            raise OpLensError("cancelled", "the capture was cancelled while waiting for the first node's rendezvous")
        try:
            return int(json.loads(path.read_text(encoding="utf-8"))["port"])
        except (OSError, ValueError, KeyError):
            time.sleep(0.2)
    raise bad_input(
        f"the job's first node ({job.nodes[0] if job.nodes else '?'}) wrote no rendezvous port in {path} within "
        f"{RENDEZVOUS_WAIT_S:g} s",
        "the nodes must share the runs folder (run from a shared directory, or give --out on a shared file system)",
    )


def _merges(job: nodes.NodeJob, report: NodeReport) -> bool:
    """This node merges: the first one, or (elastic) the one that ran global rank 0."""
    return job.node_rank == 0 if job.node_rank is not None else 0 in report.ranks


def _gather(folder: Path, job: nodes.NodeJob, timeout_s: float,
            cancel: threading.Event | None) -> tuple[list[NodeReport], list[str]]:  # fmt: skip
    """Every node's report, waiting up to `timeout_s` for the job's `nnodes`; the names of the nodes that sent none
    (where the scheduler names them; else how many)."""
    deadline = time.monotonic() + timeout_s
    while True:
        reports = _reports(folder)
        if len(reports) >= job.nnodes or time.monotonic() >= deadline or (cancel is not None and cancel.is_set()):
            break
        time.sleep(0.5)
    seen = {r.node for r in reports}
    if job.nodes:
        missing = [n for n in job.nodes if n not in seen]
    else:
        missing = [f"{job.nnodes - len(reports)} of {job.nnodes}"] if len(reports) < job.nnodes else []
    return reports, missing


def _reports(folder: Path) -> list[NodeReport]:
    out = []
    for path in sorted(folder.glob("*.json")):
        if path.name == "rendezvous.json":
            continue
        try:
            out.append(NodeReport(**json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, ValueError, TypeError):
            continue  # being written (atomic: not yet there), or not ours
    return out


def _merge(root: Path, folder: Path, reports: list[NodeReport]) -> list[AnyRun]:
    """Each target's parts, one per node that stored it, merged into the runs root (in the order of the first
    node's runs)."""
    by_target: dict[str, list[Path]] = {}
    for r in reports:
        for rel in r.runs:
            d = folder / rel
            if runs.record_file(d) is None:
                continue
            by_target.setdefault(runs.load(d).target.qualname, []).append(d)
    return [merge_dirs(dirs, root) for dirs in by_target.values()]


def _words(error: OpLensError) -> str:
    return f"{error.message}\n{error.detail}".strip() if error.detail else error.message
