"""The e2e's "accelerator host" behind a real SSH tunnel: an sshd of its own, `oplens serve --ws` and `ssh -N -L`.

e2e/run.mjs starts this, reads one JSON line (where the laptop connects, the token file, the host's workspace,
the server's pid) and then drives it with one command per line on stdin, each answered with one JSON line:

    drop     kill the ssh client (SIGKILL: the laptop slept); the server keeps running
    restore  the same `ssh -N -L LOCAL:localhost:PORT` again (the laptop woke)
    runs     the runs on the host's disk and the server's pid (is it the same process?)
    stop     end everything (also on stdin's end)

The sshd is tests/support/sshtunnel.py's (its own keys, config and known_hosts in FOLDER; loopback only); nothing is
left running: each process ends with this one.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import pytest  # noqa: E402 (tests/support/sshtunnel.py says why it cannot start with pytest.skip)

from support.sshtunnel import free_port, running_ssh_host  # noqa: E402


def say(**fields: object) -> None:
    print(json.dumps(fields), flush=True)


def runs_on_disk(workspace: Path) -> list[str]:
    runs = workspace / ".oplens" / "runs"
    return sorted(d.name for d in runs.iterdir() if (d / "result.json").is_file()) if runs.is_dir() else []


def start_server(workspace: Path, token_file: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "oplens", "serve", "--ws", f"127.0.0.1:{port}", "--token-file", str(token_file),
             "--workspace", str(workspace)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
        )  # fmt: skip
    deadline = time.monotonic() + 60
    while "oplens: listening on ws://" not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"oplens serve --ws did not start:\n{log.read_text(errors='replace')}")
        time.sleep(0.05)
    return proc


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--folder", type=Path, required=True, help="a private temporary folder for sshd and the token")
    parser.add_argument("--workspace", type=Path, required=True, help="the host's copy of the workspace")
    a = parser.parse_args()
    try:
        host_cm = running_ssh_host(a.folder / "sshd")
        host = host_cm.__enter__()
    except pytest.skip.Exception as e:  # sshd missing or unable to start: the reason names the fix
        say(error=str(e))
        return 2
    server = None
    try:
        port, local = free_port(), free_port()
        token_file = a.folder / "private" / "ws-token"
        server = start_server(a.workspace.resolve(), token_file, port, a.folder / "oplens-serve.log")
        tunnel = host.tunnel(f"{local}:localhost:{port}")
        say(url=f"ws://localhost:{local}", token_file=str(token_file), host_workspace=str(a.workspace.resolve()),
            server_pid=server.pid, server_log=str(a.folder / "oplens-serve.log"), tunnel=" ".join(tunnel.argv))  # fmt: skip
        for line in sys.stdin:
            command = line.strip()
            if command == "drop":
                tunnel.proc.kill()
                tunnel.proc.wait(timeout=10)
                say(dropped=True, server_alive=server.poll() is None)
            elif command == "restore":
                tunnel = host.tunnel(f"{local}:localhost:{port}")
                say(restored=True)
            elif command == "runs":
                say(runs=runs_on_disk(a.workspace), server_pid=server.pid, server_alive=server.poll() is None)
            elif command == "stop":
                break
            else:
                say(error=f"unknown command {command!r}: drop, restore, runs or stop")
        return 0
    finally:
        if server is not None and server.poll() is None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
        host_cm.__exit__(None, None, None)


if __name__ == "__main__":
    sys.exit(main())
