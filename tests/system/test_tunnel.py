"""Through a real SSH tunnel (issue 21): `oplens serve --ws` and Neuron Explorer reached as from a laptop.

The "host" is a real OpenSSH server the tests start on a free 127.0.0.1 port (tests/support/sshtunnel.py: its own keys,
config and known_hosts in a temporary folder, ended with every ssh client after the module); the "laptop" is
the real `ssh -N -L ...` client. Everything listens on loopback. The laptop's local ports are never the host's:
a local port answers only through the tunnel (and `SSHHost.ssh` checks it was free before the tunnel).

Skipped with the reason and the fix where sshd is not installed or cannot start (`make tunnel-deps`), and the
Explorer test where headless Chromium is missing (`bash e2e/install.sh`).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect

from support.cli import oplens_cli
from support.explorer import make_run
from support.neuron import write_stand_in_explorer
from support.processes import stop_group
from support.sshtunnel import SSHHost, Tunnel, accepts, free_port, ssh_host_fixture  # noqa: F401 (the `ssh_host` fixture)
from support.websocket import SOURCE, Client, ProfilingClient, Served, bearer, listening_url, refused_status, run

# ---- the host side: `oplens serve --ws` ------------------------------------------------------


@dataclass
class HostServer:
    proc: subprocess.Popen[bytes]
    port: int
    token_file: Path
    workspace: Path
    err: Path

    @property
    def token(self) -> str:
        return self.token_file.read_text().strip()

    def banner(self) -> str:
        return self.err.read_text()

    def stop(self) -> None:
        """SIGTERM: it stops cleanly (exit 0)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        assert code == 0, self.banner()


def start_server(folder: Path, token_file: Path, workspace: Path, port: int = 0, *extra: str) -> HostServer:
    folder.mkdir(parents=True, exist_ok=True)
    err = folder / f"stderr-{time.monotonic_ns()}"
    with err.open("w") as e:
        proc = subprocess.Popen(
            [sys.executable, "-m", "oplens", "serve", "--ws", f"127.0.0.1:{port}", "--token-file", str(token_file),
             "--workspace", str(workspace), "--no-warm", *extra],
            stdout=subprocess.DEVNULL, stderr=e, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    try:
        url = listening_url(proc, err)
    except BaseException:
        proc.kill()
        raise
    return HostServer(proc, int(url.rsplit(":", 1)[1]), token_file, workspace, err)


def host_workspace(folder: Path) -> Path:
    workspace = (folder / "workspace").resolve()
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "model.py").write_text(SOURCE)
    return workspace


@pytest.fixture(scope="module")
def host_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostServer]:
    tmp = tmp_path_factory.mktemp("host")
    server = start_server(tmp, tmp / "private" / "ws-token", host_workspace(tmp))
    try:
        yield server
        assert server.proc.poll() is None, f"the server died:\n{server.banner()}"
    finally:
        server.stop()


@pytest.fixture(scope="module")
def tunneled(ssh_host: SSHHost, host_server: HostServer) -> Iterator[Served]:
    """The laptop's view: ws://localhost:LOCAL, LOCAL forwarded by `ssh -N -L LOCAL:localhost:PORT` to the server."""
    local = free_port()
    tunnel = ssh_host.tunnel(f"{local}:localhost:{host_server.port}")
    yield Served(f"ws://localhost:{local}", host_server.token, host_server.token_file, host_server.workspace)
    tunnel.close()


def profile_request(uri: str, qualname: str, args: str = "torch.ones(64)") -> dict[str, Any]:
    return {"command": "oplens.profile",
            "arguments": [{"uri": uri, "qualname": qualname, "args": args, "warmup": 1, "iters": 2}]}  # fmt: skip


async def laptop_session(
    served: Served, local_root: str, qualname: str, args: str = "torch.ones(64)"
) -> tuple[ProfilingClient, dict[str, Any]]:
    """An editor on a laptop whose copy of the workspace is `local_root` (mapped to the host's), profiling `qualname`."""
    async with connect(served.url, additional_headers=bearer(served)) as ws:
        c = ProfilingClient(ws)
        answer = await c.request("initialize", {
            "processId": None, "rootUri": f"file://{local_root}", "capabilities": {"window": {"workDoneProgress": True}},
            "initializationOptions": {"pathMappings": [{"local": local_root, "host": str(served.workspace)}]},
        })  # fmt: skip
        assert "codeLensProvider" in answer["result"]["capabilities"], answer
        await c.notify("initialized", {})
        reply = await c.request("workspace/executeCommand", profile_request(f"file://{local_root}/model.py", qualname, args))
        return c, reply


# ---- 2. WebSocket mode through the tunnel --------------------------------------------------------


def test_a_laptop_profiles_a_function_through_the_tunnel(tunneled: Served) -> None:
    """Initialize with the token, profile `double` (through the laptop's path mapping), get the run back with its
    per-line figures, and the lens of the profiled function shows the run."""
    root = "/home/laptop/proj"
    uri = f"file://{root}/model.py"

    async def lenses() -> list[dict[str, Any]]:
        async with connect(tunneled.url, additional_headers=bearer(tunneled)) as ws:
            c = Client(ws)
            mappings = [{"local": root, "host": str(tunneled.workspace)}]
            await c.request("initialize", {"processId": None, "rootUri": f"file://{root}", "capabilities": {},
                                           "initializationOptions": {"pathMappings": mappings}})  # fmt: skip
            await c.notify("initialized", {})
            await c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                                      "text": SOURCE}})  # fmt: skip
            return (await c.request("textDocument/codeLens", {"textDocument": {"uri": uri}}))["result"]  # type: ignore[no-any-return]

    client, reply = asyncio.run(asyncio.wait_for(laptop_session(tunneled, root, "double"), timeout=120))
    assert "result" in reply, reply
    assert reply["result"]["uri"] == uri  # answered in the laptop's own paths
    (result,) = [n["params"] for n in client.notes if n["method"] == "oplens/result"]
    assert result["uri"] == uri and result["run"]["run_id"] == reply["result"]["run_id"]
    lines = {line["line"]: line for line in result["run"]["lines"]}
    body = lines[5]  # `return x * 2`: the function's one line, its figures per iteration
    assert body["self_cpu_us"] > 0 and body["op_calls"] >= 1
    assert "aten::mul" in {op["name"] for op in body["ops"]}
    titles = [lens["command"]["title"] for lens in asyncio.run(asyncio.wait_for(lenses(), timeout=30))
              if lens["range"]["start"]["line"] == 3]  # fmt: skip
    assert any(t.startswith("CPU ") and "2 iters" in t for t in titles), titles


# ---- 5. two editors, one host ----------------------------------------------------------------------


def test_two_laptops_each_through_its_own_tunnel_are_each_served(
    ssh_host: SSHHost, host_server: HostServer, tunneled: Served
) -> None:
    """A second laptop, its own ssh client and local port, to the same server: both profile at once, each gets its
    own run in its own paths (jobs on the device one at a time: one of them waits)."""
    local = free_port()
    second = ssh_host.tunnel(f"{local}:localhost:{host_server.port}")
    other = Served(f"ws://localhost:{local}", tunneled.token, tunneled.token_file, tunneled.workspace)
    try:
        async def both() -> list[tuple[ProfilingClient, dict[str, Any]]]:
            return list(await asyncio.gather(
                laptop_session(tunneled, "/home/alice/proj", "double"),
                laptop_session(other, "/Users/bob/proj", "norm", "torch.ones(4, 8), torch.ones(8)"),
            ))  # fmt: skip

        sessions = asyncio.run(asyncio.wait_for(both(), timeout=120))
    finally:
        second.close()
    assert all("result" in reply for _, reply in sessions), [reply for _, reply in sessions]
    assert len({reply["result"]["run_id"] for _, reply in sessions}) == 2
    for (c, reply), (root, qualname) in zip(sessions, [("/home/alice/proj", "double"), ("/Users/bob/proj", "norm")],
                                            strict=True):  # fmt: skip
        assert reply["result"]["uri"] == f"file://{root}/model.py", reply
        (result,) = [n["params"] for n in c.notes if n["method"] == "oplens/result"]
        assert result["run"]["target"]["qualname"] == qualname and result["run"]["lines"]
    messages = [n["params"]["value"].get("message", "") for c, _ in sessions for n in c.notes if n["method"] == "$/progress"]
    assert any("waiting for the device" in m for m in messages), messages


# ---- 3. the tunnel drops and comes back -------------------------------------------------------------

SLOW = '''\
import time

import torch


def slow(x):
    time.sleep(0.25)
    return x * 2
'''
SLOW_LENS_LINE = 5  # `def slow(x):`, 0-based


def runs_on_disk(workspace: Path) -> set[str]:
    runs = workspace / ".oplens" / "runs"
    return {d.name for d in runs.iterdir() if (d / "result.json").is_file()} if runs.is_dir() else set()


async def start_profile_and_drop(url: str, token: str, local_root: str, workspace: Path, tunnel: Tunnel) -> str:
    """An editor profiles `slow` through the tunnel; once the server reports the job under way, the ssh client is
    killed (the laptop slept). Returns how the editor's socket ended."""
    async with connect(url, additional_headers={"Authorization": f"Bearer {token}"}) as ws:
        c = ProfilingClient(ws)
        await c.request("initialize", {
            "processId": None, "rootUri": f"file://{local_root}", "capabilities": {"window": {"workDoneProgress": True}},
            "initializationOptions": {"pathMappings": [{"local": local_root, "host": str(workspace)}]},
        })  # fmt: skip
        await c.notify("initialized", {})
        request = profile_request(f"file://{local_root}/slow.py", "slow")
        request["arguments"][0].update(warmup=1, iters=6)
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "workspace/executeCommand", "params": request}))
        while True:
            message = json.loads(await ws.recv())
            if "method" in message and "id" in message:  # the progress token: answered
                await ws.send(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": None}))
            if message.get("method") == "$/progress" and message["params"]["value"].get("kind") == "report":
                break  # the worker is at it
            assert message.get("id") != 7, f"the profile ended before the tunnel could drop: {message}"
        tunnel.proc.kill()  # SIGKILL: no goodbye on either side, as when the laptop sleeps or the Wi-Fi changes
        try:
            while True:
                message = json.loads(await asyncio.wait_for(ws.recv(), timeout=30))
                assert message.get("id") != 7, f"the reply came through a killed tunnel: {message}"
        except Exception as e:  # noqa: BLE001 (the closed socket, however websockets words it)
            return type(e).__name__


async def lens_titles_after_reconnect(
    url: str, token: str, local_root: str, workspace: Path, file: str = "slow.py", line: int = SLOW_LENS_LINE
) -> list[str]:
    """A fresh session through the tunnel (the same token: nothing asked again) opens the file: the titles of the
    lenses on the function's `def` line (0-based `line`)."""
    uri = f"file://{local_root}/{file}"
    async with connect(url, additional_headers={"Authorization": f"Bearer {token}"}) as ws:
        c = ProfilingClient(ws)
        await c.request("initialize", {
            "processId": None, "rootUri": f"file://{local_root}", "capabilities": {},
            "initializationOptions": {"pathMappings": [{"local": local_root, "host": str(workspace)}]},
        })  # fmt: skip
        await c.notify("initialized", {})
        doc = {"uri": uri, "languageId": "python", "version": 1, "text": (workspace / file).read_text()}
        await c.notify("textDocument/didOpen", {"textDocument": doc})
        lenses = (await c.request("textDocument/codeLens", {"textDocument": {"uri": uri}}))["result"]
        return [lens["command"]["title"] for lens in lenses if lens["range"]["start"]["line"] == line]


def wait_for_runs(workspace: Path, count: int, server: HostServer, timeout_s: float = 120) -> set[str]:
    deadline = time.monotonic() + timeout_s
    while len(found := runs_on_disk(workspace)) < count:
        assert server.proc.poll() is None, f"the server died:\n{server.banner()}"
        assert time.monotonic() < deadline, f"no new run on disk after {timeout_s} s:\n{server.banner()}"
        time.sleep(0.2)
    return found


def test_the_tunnel_drops_mid_profile_the_run_is_kept_and_shown_after_reconnect(
    ssh_host: SSHHost, tmp_path: Path
) -> None:
    """Kill the ssh client while a profile runs: the same server process finishes the job and keeps exactly one
    more run on disk; the tunnel restarted on the same local port, a session with the same token shows the run's
    lens (from disk: not re-run, still one more run)."""
    workspace, token_file, port = host_workspace(tmp_path), tmp_path / "private" / "ws-token", free_port()
    (workspace / "slow.py").write_text(SLOW)
    earlier = runs_on_disk(workspace)
    server = start_server(tmp_path, token_file, workspace, port)
    pid, local, root = server.proc.pid, free_port(), "/Users/laptop/proj"
    url = f"ws://localhost:{local}"
    try:
        tunnel = ssh_host.tunnel(f"{local}:localhost:{port}")
        ended = asyncio.run(asyncio.wait_for(start_profile_and_drop(url, server.token, root, workspace, tunnel), 120))
        assert ended in {"ConnectionClosedError", "ConnectionClosedOK", "ConnectionClosed", "TimeoutError"}, ended
        assert not accepts(local), "the laptop's port still answers with its tunnel gone"

        after = wait_for_runs(workspace, len(earlier) + 1, server)
        assert server.proc.poll() is None and server.proc.pid == pid  # the same server: the outage ended nothing
        (new_run,) = after - earlier
        result = json.loads((workspace / ".oplens" / "runs" / new_run / "result.json").read_text())
        assert result["target"]["qualname"] == "slow" and result["config"]["iters"] == 6

        back = ssh_host.tunnel(f"{local}:localhost:{port}")  # the laptop woke: the same forward again
        titles = asyncio.run(asyncio.wait_for(lens_titles_after_reconnect(url, server.token, root, workspace), 60))
        back.close()
        assert any(t.startswith("CPU ") and "6 iters" in t for t in titles), titles
        assert runs_on_disk(workspace) == after  # shown, not re-run
        assert server.proc.pid == pid and server.proc.poll() is None
    finally:
        server.stop()


def test_a_restarted_server_brings_its_runs_back_through_the_same_tunnel(ssh_host: SSHHost, tmp_path: Path) -> None:
    """The host's server restarts on its port (the token kept) while the tunnel stays up: a fresh session with the
    token the editor had shows the run profiled before the restart, from disk."""
    workspace, token_file, port = host_workspace(tmp_path), tmp_path / "private" / "ws-token", free_port()
    server = start_server(tmp_path, token_file, workspace, port)
    local, root = free_port(), "/home/laptop/proj"
    url = f"ws://localhost:{local}"
    tunnel = ssh_host.tunnel(f"{local}:localhost:{port}")
    try:
        token = server.token
        client, reply = asyncio.run(asyncio.wait_for(
            laptop_session(Served(url, token, token_file, workspace), root, "double"), timeout=120))  # fmt: skip
        assert "result" in reply, reply
        before = runs_on_disk(workspace)
        assert len(before) == 1
        server.stop()
        server = start_server(tmp_path, token_file, workspace, port)
        titles = asyncio.run(asyncio.wait_for(lens_titles_after_reconnect(url, token, root, workspace, "model.py", 3), 60))
        assert any(t.startswith("CPU ") and "2 iters" in t for t in titles), titles
        assert runs_on_disk(workspace) == before
    finally:
        tunnel.close()
        server.stop()


# ---- 6. security through the tunnel ---------------------------------------------------------------


def refusals(url: str, served: Served) -> list[int]:
    return [
        refused_status(url),  # no token
        refused_status(url, additional_headers=bearer(served, "not-the-token")),
        refused_status(f"{url}/?token=not-the-token"),
        refused_status(url, additional_headers=bearer(served), origin="http://evil.example"),  # a web page, token or not
        refused_status(f"{url}/?token={served.token}", origin="http://localhost:3000"),
    ]


def test_refused_through_the_tunnel_exactly_as_on_loopback(tunneled: Served, host_server: HostServer) -> None:
    through = refusals(tunneled.url, tunneled)
    assert through == [401, 401, 401, 403, 403]
    assert through == refusals(f"ws://127.0.0.1:{host_server.port}", tunneled)  # on the host itself
    assert stat.S_IMODE(os.stat(tunneled.token_file).st_mode) == 0o600
    assert tunneled.token_file.read_text() == tunneled.token + "\n" and len(tunneled.token) >= 32


def accepted(url: str, token: str, workspace: Path) -> bool:
    async def go() -> dict[str, Any]:
        async with connect(url, additional_headers={"Authorization": f"Bearer {token}"}) as ws:
            return await Client(ws).initialize(workspace)

    return "codeLensProvider" in run(go)["result"]["capabilities"]


def test_new_token_rotates_it_the_old_one_refused_through_the_tunnel(
    ssh_host: SSHHost, tmp_path: Path
) -> None:
    """The tunnel stays up while the host's server restarts on its port: a restart keeps the token (an editor
    reconnects with the one it has); `--new-token` writes a new one, and the old one is refused."""
    workspace, token_file, port = host_workspace(tmp_path), tmp_path / "private" / "ws-token", free_port()
    server = start_server(tmp_path, token_file, workspace, port)
    local = free_port()
    tunnel = ssh_host.tunnel(f"{local}:localhost:{port}")
    url = f"ws://localhost:{local}"
    try:
        first = server.token
        assert accepted(url, first, workspace) and "token: " in server.banner()
        server.stop()
        server = start_server(tmp_path, token_file, workspace, port)
        assert server.token == first and "kept from the last start" in server.banner()
        assert accepted(url, first, workspace)
        server.stop()
        server = start_server(tmp_path, token_file, workspace, port, "--new-token")
        new = server.token
        assert new != first and len(new) >= 32 and f"token: {new} (new;" in server.banner()
        old = Served(url, first, token_file, workspace)
        assert refused_status(url, additional_headers=bearer(old)) == 401
        assert refused_status(f"{url}/?token={first}") == 401
        assert accepted(url, new, workspace)
        assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600 and token_file.read_text() == new + "\n"
    finally:
        tunnel.close()
        server.stop()
    assert not accepts(local), "the laptop's port answered without the tunnel"


def test_a_token_file_others_can_read_is_not_kept(tmp_path: Path) -> None:
    token_file = tmp_path / "ws-token"
    token_file.write_text("x" * 43 + "\n")
    token_file.chmod(0o644)
    server = start_server(tmp_path, token_file, host_workspace(tmp_path))
    try:
        assert server.token != "x" * 43 and stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
        assert "is not private to this user: writing a new token" in server.banner()
    finally:
        server.stop()
    done = subprocess.run([sys.executable, "-m", "oplens", "serve", "--new-token"], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.returncode == 2 and "--new-token goes with --ws" in done.stderr


# ---- 4. Neuron Explorer through the tunnel --------------------------------------------------------

VIEWER_HOST = "127.0.0.2"  # the host's "localhost" for the viewer: see the test's docstring


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("headless Chromium is missing (the Explorer-through-the-tunnel test loads the page in it): "
                    "run `make tunnel-deps` (apt-get install chromium)")  # fmt: skip
    return found


def page_dom(browser: str, url: str, profile: Path) -> str:
    """The page's DOM once its scripts ran (headless Chromium, virtual time: the API call is waited for)."""
    proc = subprocess.Popen(
        [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", f"--user-data-dir={profile}",
         "--virtual-time-budget=5000", "--dump-dom", url],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=60)
    finally:
        stop_group(proc.pid)
    return out.decode(errors="replace")


def api_status(dom: str) -> str:
    found = re.search(r'<p id="api-status">(.*?)</p>', dom, re.S)
    assert found, dom
    return found.group(1)


def start_viewer(exe: Path, ui: int, api: int, data_path: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        viewer = subprocess.Popen(
            [str(exe), "view", "--data-path", data_path, "--port", str(ui), "--api-port", str(api)],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            env={**os.environ, "STANDIN_EXPLORER_HOST": VIEWER_HOST},
        )  # fmt: skip
    deadline = time.monotonic() + 20
    while not (accepts(ui, VIEWER_HOST) and accepts(api, VIEWER_HOST)):
        assert viewer.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
    return viewer


def test_neuron_explorer_through_the_tunnel_command_oplens_prints(
    ssh_host: SSHHost, ports: tuple[int, int], tmp_path: Path
) -> None:
    """`oplens explorer` on the host uploads a run to the (stand-in) viewer it starts on the UI and API ports and prints
    `ssh -L UI:localhost:UI -L API:localhost:API HOST`; the laptop runs exactly that (with the test's port, key and
    user, and -N) and loads the profile's URL in headless Chromium: the page's script calls the API at
    localhost:API, and it answers. With only the UI port forwarded the page loads but says its API is unreachable,
    and OpLens's printed advice names the missing `-L API:localhost:API`.

    Host and laptop are one machine here, and the forwards keep the port numbers (the page calls localhost:API):
    ssh must bind 127.0.0.1:UI and :API on the laptop side, so the viewer cannot listen there too. So after OpLens
    has started it and uploaded the run, the viewer is restarted on the same ports and data path (the profile is
    kept, as the real viewer keeps its profiles) bound to 127.0.0.2, another loopback address (Linux routes all of
    127.0.0.0/8 to lo): the host's "localhost". The one change made to OpLens's command is that address, the
    forward's destination as sshd resolves it on the host: `-L UI:127.0.0.2:UI` for `-L UI:localhost:UI`."""
    browser = chromium()
    ui, api = ports
    for port in ports:  # the viewer's ports must be free on both addresses
        with socket.socket() as s:
            try:
                s.bind((VIEWER_HOST, port))
            except OSError:
                pytest.skip(f"{VIEWER_HOST}:{port} is taken")
    exe = write_stand_in_explorer(tmp_path / "bin")
    record = tmp_path / "explorer-calls.jsonl"
    run_ = make_run(tmp_path / ".oplens" / "runs")
    env = {"PATH": f"{exe.parent}{os.pathsep}{os.environ['PATH']}", "STANDIN_EXPLORER_RECORD": str(record),
           "COLUMNS": "250"}  # fmt: skip
    try:
        done = oplens_cli(tmp_path, "explorer", "latest", "--ui-port", str(ui), "--api-port", str(api), timeout=120, **env)
    finally:
        served = [json.loads(line) for line in record.read_text().splitlines() if '"serving"' in line] if record.exists() else []
        for viewer_started in served:
            stop_group(viewer_started["pid"])  # the viewer OpLens started on 127.0.0.1: moved below
    assert done.returncode == 0, done.stderr
    printed = " ".join(done.stdout.split())
    assert "On your own machine, forward both ports (without the API port the page loads empty):" in printed
    url = f"http://localhost:{ui}/profile/{run_.run_id}"
    assert f"then open {url}" in printed
    found = re.search(r"ssh -L \S+ -L \S+ \S+", printed)
    assert found, printed
    command = found.group(0)
    host_name = socket.gethostname()
    assert command == f"ssh -L {ui}:localhost:{ui} -L {api}:localhost:{api} {host_name}"
    (viewer_started,) = served
    deadline = time.monotonic() + 10
    while accepts(ui) or accepts(api):  # OpLens's viewer gone from 127.0.0.1
        assert time.monotonic() < deadline
        time.sleep(0.05)

    viewer = start_viewer(exe, ui, api, viewer_started["data_path"], tmp_path / "viewer.log")
    try:
        assert not accepts(ui) and not accepts(api)  # the laptop's localhost: nothing until the tunnel

        def laptop_runs(forwards: list[str]) -> Tunnel:
            """OpLens's command as the laptop runs it: `ssh -N <the test's options> <its -L ...> user@127.0.0.1`."""
            args = ["-N"]
            for spec in forwards:
                local, dest, remote = spec.split(":")
                assert dest == "localhost"
                args += ["-L", f"{local}:{VIEWER_HOST}:{remote}"]
            return ssh_host.ssh(args)

        tokens = command.split()
        assert tokens[0] == "ssh" and tokens[-1] == host_name and tokens[1::2][:-1] == ["-L", "-L"]
        forwards = tokens[2:-1:2]  # ["UI:localhost:UI", "API:localhost:API"]

        both = laptop_runs(forwards)
        dom = page_dom(browser, url, tmp_path / "chromium-both")
        both.close()
        assert api_status(dom) == f"API reachable: {run_.run_id} PROCESSED", dom

        ui_only = laptop_runs([f for f in forwards if not f.startswith(f"{api}:")])
        dom = page_dom(browser, url, tmp_path / "chromium-ui-only")
        ui_only.close()
        assert f"{run_.run_id} - Neuron Explorer" in dom  # the page itself came through
        assert api_status(dom).startswith("API unreachable: "), dom
        assert f"-L {api}:localhost:{api}" in command and f"-L {api}:" not in " ".join(ui_only.argv)  # what was missing
    finally:
        stop_group(viewer.pid)
