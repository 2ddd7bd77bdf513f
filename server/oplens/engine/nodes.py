"""Where this `oplens run` runs in a job of several nodes, from the environment its scheduler gives it.

- **Slurm**: inside an `srun` step (`SLURM_JOB_ID`, `SLURM_STEP_ID`) over two nodes or more, one task per node
  (torchrun starts each node's ranks): the nodes are the step's node list (`SLURM_STEP_NODELIST`, Slurm's hostlist
  syntax `n[1-2,4]`), this node is `SLURMD_NODENAME`, its rank its place in that list; the rendezvous is on the
  first node, at its address (`scontrol show node`'s NodeAddr where the name does not resolve: emulated nodes,
  clusters whose node names are not host names), a port that node finds free (multinode.rendezvous).
- **Kubernetes** (Kubeflow's PyTorchJob / TrainJob): torchrun's own `PET_*` variables (`PET_NNODES`,
  `PET_NODE_RANK`, `PET_MASTER_ADDR`/`PET_MASTER_PORT`, or elastic: `PET_RDZV_ENDPOINT`, `PET_NNODES=min:max` and
  no node rank). torchrun reads them itself (its `env` arguments: `torch/distributed/argparse_util.py`), so nothing
  is derived; this node is its pod (`HOSTNAME`, which Kubernetes sets to the pod's name).

What the user gave on the command line always wins: a derived option is added only where torchrun's own is absent.
"""

from __future__ import annotations

import re
import socket
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field

from oplens.records.errors import bad_input

SLURM, KUBERNETES = "slurm", "kubernetes"


@dataclass(frozen=True)
class NodeJob:
    """This node's place in a job of several nodes."""

    scheduler: str  # SLURM | KUBERNETES
    key: str  # the same on every node of the job: its folder in the shared runs root (`.nodes/<key>`)
    nnodes: int  # the nodes the job has (elastic: the most it may have)
    node_rank: int | None  # None: elastic, the rendezvous gives each node its rank
    node: str  # this node's name: Slurm's node name, the pod's
    nodes: list[str] = field(default_factory=list)  # every node's name, where the scheduler says (Slurm)
    options: list[str] = field(default_factory=list)  # torchrun options derived, the rendezvous port aside
    master_addr: str = ""  # the rendezvous host OpLens picks a port on (Slurm, where the user named none)

    @property
    def needs_port(self) -> bool:
        """The first node picks the rendezvous port and the others read it (`multinode.rendezvous`)."""
        return bool(self.master_addr)


def detect(options: list[str] | None, env: Mapping[str, str]) -> NodeJob | None:
    """The job of several nodes this process runs in (None: one node, or no scheduler). `options`: the torchrun
    options the user gave (`--nnodes 2`, `--master-port=...`)."""
    given = {o.split("=", 1)[0].replace("_", "-") for o in options or [] if o.startswith("--")}
    if env.get("SLURM_JOB_ID") and env.get("SLURM_STEP_ID"):  # a step (srun); a batch script alone runs on one node
        return _slurm(given, env)
    if _pet_multinode(env):
        return _kubernetes(env, env.get("HOSTNAME") or socket.gethostname())
    return None


def _slurm(given: set[str], env: Mapping[str, str]) -> NodeJob | None:
    nodes = expand_hostlist(env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST") or "")
    if len(nodes) < 2:
        return None
    per_node = tasks_per_node(env.get("SLURM_STEP_TASKS_PER_NODE") or env.get("SLURM_TASKS_PER_NODE") or "1")
    if max(per_node, default=1) > 1:
        raise bad_input(
            f"srun started {max(per_node)} copies of oplens on a node; OpLens runs once per node and torchrun starts "
            "the node's ranks",
            "run one task per node: srun --ntasks-per-node=1 oplens run --nproc-per-node N ...",
        )
    node = env.get("SLURMD_NODENAME") or socket.gethostname()
    rank = nodes.index(node) if node in nodes else int(env.get("SLURM_NODEID", "0"))
    options: list[str] = []
    if not given & {"--nnodes"}:
        options += ["--nnodes", str(len(nodes))]
    if not given & {"--node-rank"}:
        options += ["--node-rank", str(rank)]
    master = ""
    if not given & {"--rdzv-endpoint", "--master-addr", "--master-port", "--standalone"}:
        master = node_address(nodes[0])
        options += ["--master-addr", master]
    step = env.get("SLURM_STEP_ID", "0")
    return NodeJob(SLURM, f"slurm-{env['SLURM_JOB_ID']}.{step}", len(nodes), rank, node, nodes, options, master)


def _pet_multinode(env: Mapping[str, str]) -> bool:
    """torchrun's environment names a rendezvous of several nodes (a PyTorchJob's pod)."""
    nnodes = env.get("PET_NNODES", "").strip()
    return bool(env.get("PET_RDZV_ENDPOINT") or env.get("PET_MASTER_ADDR")) or nnodes not in ("", "1", "1:1")


def _kubernetes(env: Mapping[str, str], node: str) -> NodeJob:
    nnodes = env.get("PET_NNODES", "1").strip()
    most = int(nnodes.rpartition(":")[2] or 1) if re.fullmatch(r"\d+(:\d+)?", nnodes) else 1
    rank = env.get("PET_NODE_RANK", "").strip()
    where = env.get("PET_RDZV_ENDPOINT") or f"{env.get('PET_MASTER_ADDR', '')}:{env.get('PET_MASTER_PORT', '')}"
    key = "k8s-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{where}-{env.get('PET_RDZV_ID', '')}").strip("-")
    return NodeJob(KUBERNETES, key, most, int(rank) if rank.isdigit() else None, node)


def expand_hostlist(hostlist: str) -> list[str]:
    """Slurm's hostlist syntax expanded: `n[1-3,7],gpu01` → n1 n2 n3 n7 gpu01 (zero-padding kept: `n[01-02]`)."""
    names: list[str] = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\][^,\[]*)*", hostlist):
        names += _expand_one(part.strip())
    return [n for n in names if n]


def _expand_one(name: str) -> list[str]:
    m = re.search(r"\[([^\]]*)\]", name)
    if m is None:
        return [name]
    head, tail = name[: m.start()], name[m.end() :]
    out = []
    for piece in m.group(1).split(","):
        lo, dash, hi = piece.partition("-")
        if dash:
            out += [f"{head}{str(i).zfill(len(lo))}{t}" for i in range(int(lo), int(hi) + 1) for t in _expand_one(tail)]
        else:
            out += [f"{head}{lo}{t}" for t in _expand_one(tail)]
    return out


def tasks_per_node(spec: str) -> list[int]:
    """Slurm's tasks-per-node syntax: `2(x3),1` → [2, 2, 2, 1]."""
    counts: list[int] = []
    for piece in spec.split(","):
        m = re.fullmatch(r"\s*(\d+)(?:\(x(\d+)\))?\s*", piece)
        if m:
            counts += [int(m.group(1))] * int(m.group(2) or 1)
    return counts


def node_address(name: str) -> str:
    """An address the other nodes reach `name` at: the name where it resolves, else Slurm's NodeAddr for it."""
    try:
        socket.getaddrinfo(name, None)
        return name
    except OSError:
        pass
    try:
        shown = subprocess.run(["scontrol", "show", "node", name], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        shown = ""
    m = re.search(r"\bNodeAddr=(\S+)", shown)
    if m is None:
        raise bad_input(f"the job's first node {name!r} does not resolve and `scontrol show node {name}` names no "
                        "NodeAddr", "give the rendezvous yourself: --master-addr ADDRESS --master-port PORT")  # fmt: skip
    return m.group(1)
