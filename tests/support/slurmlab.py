"""A real Slurm on this machine for the tests: Debian's slurmctld and two slurmd emulating two nodes (`n1`, `n2`) on
loopback, `auth/none` (no munge key to share), configuration, state, spools and logs in a temporary folder, every
port free-picked; stopped by PID. A node name equal to the real host name is refused by slurmd as a duplicate, so
the nodes have names of their own, which do not resolve: `scontrol show node`'s NodeAddr gives their address.

Installed by tests/install_slurm.sh (`make test` runs it); `start()` says why where it cannot run.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("slurmctld", "slurmd", "srun", "sbatch", "squeue", "scancel", "scontrol", "sinfo")
NODES = ("n1", "n2")


def missing() -> str:
    """Why no Slurm can be started here ('' where it can)."""
    absent = [d for d in DAEMONS if shutil.which(d) is None]
    if absent:
        return (f"Slurm is not installed ({', '.join(absent)} missing): bash tests/install_slurm.sh (Debian's slurmctld "
                "slurmd slurm-client)")
    if os.geteuid() != 0:
        return "the emulated Slurm runs its daemons as root (SlurmUser=root): run the tests as root"
    return ""


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


@dataclass
class Slurm:
    folder: Path
    env: dict[str, str]  # SLURM_CONF set: what the client commands need
    pids: list[int] = field(default_factory=list)

    def run(self, *argv: str, cwd: Path | None = None, timeout: float = 300,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
        return subprocess.run(list(argv), cwd=cwd, env={**self.env, **(env or {})}, capture_output=True, text=True,
                              timeout=timeout)  # fmt: skip

    def log(self) -> str:
        """The daemons' logs' tails (a failing test shows them)."""
        out = []
        for name in ("slurmctld.log", *(f"slurmd-{n}.log" for n in NODES)):
            path = self.folder / name
            if path.is_file():
                out.append(f"--- {name}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-20:]))
        return "\n".join(out)

    def stop(self) -> None:
        for pid in self.pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        for pid in self.pids:
            while time.monotonic() < deadline and _alive(pid):
                time.sleep(0.05)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie of ours (the daemons were started as our children and detach; reap where we can)
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        return True


def start(folder: Path) -> Slurm:
    """slurmctld and the two slurmd running, both nodes idle (or RuntimeError with the logs)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "state").mkdir(exist_ok=True)
    ctld, n1, n2 = _free_ports(3)
    host = socket.gethostname()
    cpus = 4  # each emulated node's; slurmd takes the configuration's word (config_overrides)
    conf = folder / "slurm.conf"
    conf.write_text(f"""\
ClusterName=oplens
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld}
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
SlurmdParameters=config_overrides
KillWait=5
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool-%n
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/slurmd-%n.pid
SlurmctldLogFile={folder}/slurmctld.log
SlurmdLogFile={folder}/slurmd-%n.log
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
NodeName=n1 NodeAddr=127.0.0.1 Port={n1} CPUs={cpus} State=UNKNOWN
NodeName=n2 NodeAddr=127.0.0.1 Port={n2} CPUs={cpus} State=UNKNOWN
PartitionName=debug Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
""")
    env = {**os.environ, "SLURM_CONF": str(conf)}
    slurm = Slurm(folder, env)
    try:
        subprocess.run(["slurmctld", "-i"], env=env, check=True, capture_output=True, timeout=30)
        slurm.pids.append(_pid(folder / "slurmctld.pid"))
        for n in NODES:
            subprocess.run(["slurmd", "-N", n], env=env, check=True, capture_output=True, timeout=30)
            slurm.pids.append(_pid(folder / f"slurmd-{n}.pid"))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            states = slurm.run("sinfo", "-h", "-N", "-o", "%N %t", timeout=30).stdout.split()
            if states.count("idle") == len(NODES):
                return slurm
            time.sleep(0.2)
        raise RuntimeError("the emulated nodes did not come up idle within 30 s:\n" + slurm.log())
    except BaseException:
        slurm.stop()
        raise


def _pid(path: Path) -> int:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            return int(path.read_text().strip())
        except (OSError, ValueError):
            time.sleep(0.05)
    raise RuntimeError(f"{path} never appeared")


if __name__ == "__main__":  # the e2e's harness: `python tests/support/slurmlab.py start DIR` → {"conf", "pids"} or {"why"}
    import json
    import sys

    if sys.argv[1:2] != ["start"] or len(sys.argv) != 3:
        sys.exit("usage: python tests/support/slurmlab.py start DIR")
    why = missing()
    if why:
        print(json.dumps({"why": why}))
        sys.exit(0)
    lab = start(Path(sys.argv[2]))
    print(json.dumps({"conf": lab.env["SLURM_CONF"], "pids": lab.pids}))
