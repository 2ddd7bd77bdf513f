"""A real SSH tunnel for the tests: the OpenSSH server and client, on loopback, nothing system-wide changed.

`ssh_host` (a module-scoped fixture: a test module imports `from sshtunnel import ssh_host_fixture  # noqa: F401`,
then asks for `ssh_host`) starts `/usr/sbin/sshd -D -e -f <its own config>` on a free 127.0.0.1 port, with a
host key and a client key generated into a temporary folder (the client key authorized by the config's own AuthorizedKeysFile, the
host key the only entry of the client's own known_hosts). `SSHHost.tunnel("LOCAL:HOST:REMOTE", ...)` runs the
real client, `ssh -N -L LOCAL:HOST:REMOTE ... user@127.0.0.1` with the test's port, key and known_hosts (no
user ssh config, no agent, strict host key checking, batch mode, ExitOnForwardFailure) and returns once every
local port accepts connections. On teardown every ssh client and the sshd (with its per-connection children)
are ended; nothing is left running.

Skipped, with the reason and the fix, where the OpenSSH server or client is not installed (`make tunnel-deps`,
i.e. tests/install_tunnel_deps.sh: `apt-get install openssh-server`) or where sshd cannot start here.
"""

from __future__ import annotations

import ctypes
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

SSHD = Path("/usr/sbin/sshd")
FIX = "run `make tunnel-deps` (tests/install_tunnel_deps.sh: apt-get install openssh-server chromium)"
PRIVSEP_DIR = Path("/run/sshd")  # the Debian package's own privilege-separation folder; sshd refuses to start without it


def _die_with_the_tests() -> None:
    """In the child before exec: SIGTERM it when the test process dies (killed, not torn down)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def free_port(address: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


def accepts(port: int, address: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((address, port), timeout=0.5):
            return True
    except OSError:
        return False


@dataclass
class Tunnel:
    """One running `ssh -N -L ...` client."""

    argv: list[str]
    proc: subprocess.Popen[bytes]
    log: Path
    local_ports: list[int]

    def close(self) -> None:
        _end(self.proc)

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@dataclass
class SSHHost:
    """A running sshd on 127.0.0.1:`port` that lets `user` in with `key` (and nothing else)."""

    port: int
    user: str
    key: Path
    known_hosts: Path
    folder: Path
    sshd: subprocess.Popen[bytes]
    sshd_log: Path
    tunnels: list[Tunnel] = field(default_factory=list)

    @property
    def destination(self) -> str:
        return f"{self.user}@127.0.0.1"

    def options(self) -> list[str]:
        """The test's own client options: its port, key and known_hosts, and nothing of the user's ssh set-up."""
        return [
            "-F", "/dev/null", "-p", str(self.port), "-i", str(self.key),
            "-o", "IdentitiesOnly=yes", "-o", "IdentityAgent=none",
            "-o", f"UserKnownHostsFile={self.known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null",
            "-o", "StrictHostKeyChecking=yes", "-o", "ExitOnForwardFailure=yes", "-o", "BatchMode=yes",
            "-o", "ConnectTimeout=10",
        ]  # fmt: skip

    def tunnel(self, *forwards: str, timeout_s: float = 20) -> Tunnel:
        """`ssh -N -L F ... user@127.0.0.1`, each F 'LOCAL:HOST:REMOTE'; returns once every LOCAL port accepts."""
        return self.ssh(["-N", *(a for f in forwards for a in ("-L", f))], timeout_s=timeout_s)

    def ssh(self, args: list[str], timeout_s: float = 20) -> Tunnel:
        """`ssh <the test's options> ARGS user@127.0.0.1` (ARGS with -N and its -L forwards), waited for as `tunnel`."""
        local_ports = [int(args[i + 1].split(":")[-3]) for i, a in enumerate(args) if a == "-L"]
        taken = [p for p in local_ports if accepts(p)]
        assert not taken, f"local port(s) {taken} already accept connections before the tunnel: not the tunnel's"
        argv = ["ssh", *self.options(), *args, self.destination]
        log = self.folder / f"ssh-{len(self.tunnels)}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    preexec_fn=_die_with_the_tests)  # fmt: skip
        tunnel = Tunnel(argv, proc, log, local_ports)
        self.tunnels.append(tunnel)
        deadline = time.monotonic() + timeout_s
        while not all(accepts(p) for p in local_ports):
            if proc.poll() is not None or time.monotonic() > deadline:
                tunnel.close()
                raise AssertionError(
                    f"the ssh client did not forward {local_ports} (exit {proc.poll()}): {' '.join(argv)}\n"
                    f"ssh said:\n{tunnel.output()}\nsshd said (tail):\n{self.sshd_tail()}"
                )
            time.sleep(0.05)
        return tunnel

    def sshd_tail(self, lines: int = 30) -> str:
        return "\n".join(self.sshd_log.read_text(errors="replace").splitlines()[-lines:])

    def close(self) -> None:
        for t in self.tunnels:
            t.close()
        stray = _descendants(self.sshd.pid)  # the per-connection sshd processes (they setsid: not in its group)
        _end(self.sshd)
        for pid in stray:
            _kill(pid)
        left = [pid for pid in [self.sshd.pid, *stray, *(t.proc.pid for t in self.tunnels)] if _state(pid) not in ("Z", "X", "")]
        assert not left, f"still running after the SSH tunnel tests: {left}"


def _end(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def _kill(pid: int) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        for _ in range(50):
            if not Path(f"/proc/{pid}").exists() or _state(pid) in ("Z", "X", ""):
                return
            time.sleep(0.02)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return ""


def _descendants(root: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat[1])
    found: list[int] = []
    frontier = [root]
    while frontier:
        pid = frontier.pop()
        children = [c for c, p in parents.items() if p == pid]
        found += children
        frontier += children
    return found


def _text(path: Path) -> str:
    return path.read_text(errors="replace")


def _missing_tools() -> list[str]:
    missing = [] if os.access(SSHD, os.X_OK) else [f"{SSHD} (the OpenSSH server)"]
    return missing + [f"{tool} (the OpenSSH client)" for tool in ("ssh", "ssh-keygen") if shutil.which(tool) is None]


def _keygen(path: Path, comment: str) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)], check=True,
                   stdin=subprocess.DEVNULL, capture_output=True, timeout=30)  # fmt: skip


def _config(folder: Path, port: int, user: str) -> str:
    return f"""\
# The tests' own sshd: loopback only, one user, one key, local forwards to loopback only.
Port {port}
ListenAddress 127.0.0.1
AddressFamily inet
HostKey {folder / "host_ed25519"}
PidFile {folder / "sshd.pid"}
AuthorizedKeysFile {folder / "authorized_keys"}
AllowUsers {user}
UsePAM no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
AllowTcpForwarding local
PermitOpen localhost:* 127.0.0.1:* 127.0.0.2:* [::1]:*
GatewayPorts no
AllowAgentForwarding no
X11Forwarding no
PermitTTY no
PermitTunnel no
PermitUserEnvironment no
Subsystem sftp internal-sftp
PrintMotd no
LogLevel INFO
"""


@contextmanager
def running_ssh_host(folder: Path) -> Iterator[SSHHost]:
    """An sshd of the test's own in `folder` (made), ended with every ssh client on leaving."""
    missing = _missing_tools()
    if missing:
        pytest.skip(f"the SSH tunnel tests need {' and '.join(missing)}: {FIX}")
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    user = pwd.getpwuid(os.getuid()).pw_name
    _keygen(folder / "host_ed25519", "oplens-test-host")
    _keygen(folder / "client_ed25519", "oplens-test-client")
    (folder / "authorized_keys").write_text((folder / "client_ed25519.pub").read_text())
    if os.getuid() == 0 and not PRIVSEP_DIR.is_dir():
        PRIVSEP_DIR.mkdir(mode=0o755, parents=True)  # what the package's init script would make (tmpfiles.d)
    host: SSHHost | None = None
    why = ""
    for attempt in range(3):  # a free port found, then taken by another process before sshd binds it: again
        port = free_port()
        config = folder / "sshd_config"
        config.write_text(_config(folder, port, user))
        log = folder / f"sshd-{attempt}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen([str(SSHD), "-D", "-e", "-f", str(config)], stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True,
                                    preexec_fn=_die_with_the_tests)  # fmt: skip
        deadline = time.monotonic() + 15
        while proc.poll() is None and time.monotonic() < deadline and "Server listening on" not in _text(log):
            time.sleep(0.02)
        said = _text(log)
        if proc.poll() is None and "Server listening on" in said:
            public = (folder / "host_ed25519.pub").read_text().split()
            known = folder / "known_hosts"
            known.write_text(f"[127.0.0.1]:{port} {public[0]} {public[1]}\n")
            host = SSHHost(port, user, folder / "client_ed25519", known, folder, proc, log)
            break
        _end(proc)
        why = said.strip() or f"it exited with status {proc.returncode}"
        if "Address already in use" not in said:
            break
    if host is None:
        pytest.skip(f"{SSHD} -D -e -f {folder / 'sshd_config'} cannot start here: {why[-2000:]} "
                    f"(is openssh-server installed and complete? {FIX})")  # fmt: skip
    try:
        yield host
    finally:
        host.close()


@pytest.fixture(scope="module", name="ssh_host")
def ssh_host_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SSHHost]:
    """A real sshd on a free 127.0.0.1 port for the module, keys and config in a temporary folder."""
    with running_ssh_host(tmp_path_factory.mktemp("sshd")) as host:
        yield host
