"""`oplens serve --ws`: the real server in a subprocess, spoken to with the real `websockets` client."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from oplens.lsp.websocket import MAX_MESSAGE
from support.websocket import SOURCE, Client, ProfilingClient, Served, bearer, listening_url, refused_status, run


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server for the module; on teardown SIGTERM must stop it cleanly (exit 0, nothing on stdout)."""
    tmp = tmp_path_factory.mktemp("ws")
    workspace = (tmp / "workspace").resolve()
    workspace.mkdir()
    (workspace / "model.py").write_text(SOURCE)
    token_file = tmp / "private" / "ws-token"
    out, err = tmp / "stdout", tmp / "stderr"
    with out.open("w") as o, err.open("w") as e:
        proc = subprocess.Popen(
            [sys.executable, "-m", "oplens", "serve", "--ws", "127.0.0.1:0", "--token-file", str(token_file),
             "--workspace", str(workspace), "--no-warm"],
            stdout=o, stderr=e, stdin=subprocess.DEVNULL,
        )
    try:
        url = listening_url(proc, err)
        yield Served(url, token_file.read_text().strip(), token_file, workspace)
        assert proc.poll() is None, f"the server died:\n{err.read_text()}"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert code == 0, err.read_text()
    assert out.read_text() == "", "stdout must stay empty: logs go to stderr"


# ---- the door -------------------------------------------------------------------------------


def test_refuses_without_the_right_token(served: Served) -> None:
    assert refused_status(served.url) == 401
    assert refused_status(served.url, additional_headers=bearer(served, "not-the-token")) == 401
    assert refused_status(f"{served.url}/?token=not-the-token") == 401
    assert refused_status(served.url, additional_headers={"Authorization": "Bearer "}) == 401
    assert refused_status(served.url, additional_headers={"Authorization": f"Basic {served.token}"}) == 401


def test_refuses_browser_pages_even_with_the_token(served: Served) -> None:
    assert refused_status(served.url, additional_headers=bearer(served), origin="http://evil.example") == 403
    assert refused_status(f"{served.url}/?token={served.token}", origin="http://localhost:3000") == 403


def test_token_file_is_private_and_holds_the_token(served: Served) -> None:
    assert stat.S_IMODE(os.stat(served.token_file).st_mode) == 0o600
    assert len(served.token) >= 32
    assert served.token_file.read_text() == served.token + "\n"


# ---- LSP sessions ---------------------------------------------------------------------------


def test_initialize_with_token_in_header(served: Served) -> None:
    async def go() -> dict[str, Any]:
        async with connect(served.url, additional_headers=bearer(served)) as ws:
            return await Client(ws).initialize(served.workspace)

    answer = run(go)
    assert "codeLensProvider" in answer["result"]["capabilities"]
    assert answer["result"]["serverInfo"]["name"] == "oplens"


def test_initialize_with_token_in_query(served: Served) -> None:
    async def go() -> dict[str, Any]:
        async with connect(f"{served.url}/?token={served.token}") as ws:
            return await Client(ws).initialize(served.workspace)

    assert "codeLensProvider" in run(go)["result"]["capabilities"]


def test_two_clients_at_once(served: Served) -> None:
    async def go() -> list[dict[str, Any]]:
        async with connect(served.url, additional_headers=bearer(served)) as a, \
                connect(served.url, additional_headers=bearer(served)) as b:
            ca, cb = Client(a), Client(b)
            first = await asyncio.gather(ca.initialize(served.workspace), cb.initialize(served.workspace))
            uri = (served.workspace / "model.py").as_uri()
            lenses = await asyncio.gather(
                ca.request("textDocument/codeLens", {"textDocument": {"uri": uri}}),
                cb.request("textDocument/codeLens", {"textDocument": {"uri": uri}}),
            )
            return [*first, *lenses]

    answers = run(go)
    assert all("result" in a for a in answers), answers
    assert len(answers[2]["result"]) == len(answers[3]["result"]) == 2


def test_exit_closes_only_that_connection(served: Served) -> None:
    async def go() -> dict[str, Any]:
        async with connect(served.url, additional_headers=bearer(served)) as ws:
            client = Client(ws)
            await client.initialize(served.workspace)
            assert (await client.request("shutdown"))["result"] is None
            await client.notify("exit")
            with pytest.raises(ConnectionClosed):  # the server closes this connection ...
                await asyncio.wait_for(ws.recv(), timeout=10)
        async with connect(served.url, additional_headers=bearer(served)) as ws:  # ... and serves the next
            return await Client(ws).initialize(served.workspace)

    assert "codeLensProvider" in run(go)["result"]["capabilities"]


def test_disconnect_without_shutdown_keeps_serving(served: Served) -> None:
    async def go() -> dict[str, Any]:
        async with connect(served.url, additional_headers=bearer(served)) as ws:
            await Client(ws).initialize(served.workspace)
            ws.transport.abort()  # a dropped tunnel: no close frame
        async with connect(served.url, additional_headers=bearer(served)) as ws:
            return await Client(ws).initialize(served.workspace)

    assert "result" in run(go)


def test_oversize_message_closes_only_that_connection(served: Served) -> None:
    async def go() -> tuple[int | None, dict[str, Any]]:
        async with connect(served.url, additional_headers=bearer(served)) as bystander:
            other = Client(bystander)
            await other.initialize(served.workspace)
            ws = await connect(served.url, additional_headers=bearer(served), compression=None)
            big = json.dumps({"jsonrpc": "2.0", "method": "x", "params": "a" * (MAX_MESSAGE + 1)})
            with pytest.raises(ConnectionClosed):  # no `async with`: closing again trips the client library
                await ws.send(big)
                await asyncio.wait_for(ws.recv(), timeout=10)
            code = ws.close_code
            uri = (served.workspace / "model.py").as_uri()
            return code, await other.request("textDocument/codeLens", {"textDocument": {"uri": uri}})

    code, lenses = run(go)
    assert code == 1009  # message too big
    assert len(lenses["result"]) == 2


def test_bad_messages_do_not_end_the_session(served: Served) -> None:
    async def go() -> tuple[dict[str, Any], dict[str, Any]]:
        async with connect(served.url, additional_headers=bearer(served)) as ws:
            client = Client(ws)
            await client.initialize(served.workspace)
            await ws.send("{not json")
            await ws.send(b'{"jsonrpc": "2.0", "method": "initialized", "params": {}}')  # a binary frame is read too
            bad = await client.request("textDocument/codeLens", {"textDocument": 42})
            uri = (served.workspace / "model.py").as_uri()
            good = await client.request("textDocument/codeLens", {"textDocument": {"uri": uri}})
            return bad, good

    bad, good = run(go)
    assert bad["error"]["code"] == -32602  # invalid params, answered (the client does not wait forever)
    assert len(good["result"]) == 2


def test_code_lens_over_websocket(served: Served) -> None:
    path = served.workspace / "lens_target.py"
    path.write_text(SOURCE)

    async def go() -> dict[str, Any]:
        async with connect(served.url, additional_headers=bearer(served)) as ws:
            client = Client(ws)
            await client.initialize(served.workspace)
            doc = {"uri": path.as_uri(), "languageId": "python", "version": 1, "text": SOURCE}
            await client.notify("textDocument/didOpen", {"textDocument": doc})
            return await client.request("textDocument/codeLens", {"textDocument": {"uri": path.as_uri()}})

    lenses = run(go)["result"]
    titles = sorted((lens["range"]["start"]["line"], lens["command"]["title"]) for lens in lenses)
    assert titles == [(3, "▶ Profile"), (7, "▶ Profile")]
    assert {lens["command"]["arguments"][0]["qualname"] for lens in lenses} == {"double", "norm"}


def test_cli_bad_address_exits_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "oplens", "serve", "--ws", "nowhere", "--token-file", str(tmp_path / "t"), "--no-warm"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 2
    assert "--ws 'nowhere'" in done.stderr


def test_cli_port_in_use_exits_2(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "oplens", "serve", "--ws", f"127.0.0.1:{port}", "--token-file", str(tmp_path / "t"),
             "--workspace", str(tmp_path), "--no-warm"],
            capture_output=True, text=True, timeout=60,
        )
    assert done.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr


def test_warns_when_not_loopback(tmp_path: Path) -> None:
    err = tmp_path / "stderr"
    with err.open("w") as e:
        proc = subprocess.Popen(
            [sys.executable, "-m", "oplens", "serve", "--ws", "0.0.0.0:0", "--token-file", str(tmp_path / "t"),
             "--workspace", str(tmp_path), "--no-warm"],
            stdout=subprocess.DEVNULL, stderr=e, stdin=subprocess.DEVNULL,
        )
    try:
        assert listening_url(proc, err).startswith("ws://0.0.0.0:")
        deadline = time.monotonic() + 10
        while "WARNING" not in err.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=15) == 0
    assert "WARNING: 0.0.0.0 is reachable from other machines" in err.read_text()


# ---- two editors on one device --------------------------------------------------------------


def test_two_clients_profile_at_once_queued_on_the_device_with_path_mappings(served: Served) -> None:
    """Each client names the workspace by its own (local) path; jobs run one at a time."""
    local_roots = ["/home/alice/proj", "/Users/bob/proj"]

    async def session(local_root: str) -> ProfilingClient:
        async with connect(served.url, additional_headers=bearer(served)) as ws:
            c = ProfilingClient(ws)
            await c.request("initialize", {
                "processId": None, "rootUri": f"file://{local_root}",
                "capabilities": {"window": {"workDoneProgress": True}},
                "initializationOptions": {"pathMappings": [{"local": local_root, "host": str(served.workspace)}]},
            })
            await c.notify("initialized", {})
            uri = f"file://{local_root}/model.py"
            reply = await c.request("workspace/executeCommand", {
                "command": "oplens.profile",
                "arguments": [{"uri": uri, "qualname": "double", "args": "torch.ones(64)", "warmup": 1, "iters": 2}],
            })
            assert "result" in reply, reply
            assert reply["result"]["uri"] == uri  # answered in the client's own path
            c.replies = [reply]  # type: ignore[attr-defined]
            return c

    async def both() -> list[ProfilingClient]:
        return list(await asyncio.gather(*(session(r) for r in local_roots)))

    clients = asyncio.run(asyncio.wait_for(both(), timeout=120))
    run_ids = {c.replies[0]["result"]["run_id"] for c in clients}  # type: ignore[attr-defined]
    assert len(run_ids) == 2
    for c, root in zip(clients, local_roots, strict=True):
        results = [n for n in c.notes if n["method"] == "oplens/result"]
        assert results and results[0]["params"]["uri"] == f"file://{root}/model.py"
    messages = [n["params"]["value"].get("message", "") for c in clients for n in c.notes if n["method"] == "$/progress"]
    assert any("waiting for the device" in m for m in messages), messages  # one of them queued behind the other


def test_a_profile_runs_when_its_client_leaves_before_answering_for_the_progress_token(served: Served) -> None:
    """pygls would wait forever for the answer to window/workDoneProgress/create; the run must
    still happen and be there for the next client (a dropped SSH tunnel loses nothing)."""
    path = served.workspace / "left_target.py"
    path.write_text(SOURCE)
    uri = path.as_uri()

    async def leave_while_asked() -> None:
        async with connect(served.url, additional_headers=bearer(served)) as ws:
            c = Client(ws)
            await c.request("initialize", {"processId": None, "rootUri": served.workspace.as_uri(),
                                           "capabilities": {"window": {"workDoneProgress": True}}})
            await c.notify("initialized", {})
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": 99, "method": "workspace/executeCommand", "params": {
                "command": "oplens.profile",
                "arguments": [{"uri": uri, "qualname": "double", "args": "torch.ones(8)", "warmup": 1, "iters": 2}],
            }}))
            while json.loads(await ws.recv()).get("method") != "window/workDoneProgress/create":
                pass
        # gone without an answer

    async def later_client_sees_the_run() -> list[str]:
        async with connect(served.url, additional_headers=bearer(served)) as ws:
            c = Client(ws)
            await c.initialize(served.workspace)
            doc = {"uri": uri, "languageId": "python", "version": 1, "text": SOURCE}
            await c.notify("textDocument/didOpen", {"textDocument": doc})
            while True:
                lenses = (await c.request("textDocument/codeLens", {"textDocument": {"uri": uri}}))["result"]
                titles = [lens["command"]["title"] for lens in lenses if lens["range"]["start"]["line"] == 3]
                if any("2 iters" in t for t in titles):
                    return titles
                await asyncio.sleep(0.3)

    async def both() -> list[str]:
        await leave_while_asked()
        return await later_client_sees_the_run()

    titles = asyncio.run(asyncio.wait_for(both(), timeout=120))
    assert any(t.startswith("CPU ") and "2 iters" in t for t in titles), titles


def test_every_client_with_the_file_open_hears_where_a_new_run_sits(served: Served) -> None:
    """Client B has the file open; client A profiles a function of it: B gets `oplens/document` with
    the run placed (and no `oplens/result`, which goes to the client that asked)."""
    path = served.workspace / "shared_target.py"
    path.write_text(SOURCE)
    uri = path.as_uri()

    async def go() -> tuple[dict[str, Any], ProfilingClient]:
        async with connect(served.url, additional_headers=bearer(served)) as a_ws, \
                connect(served.url, additional_headers=bearer(served)) as b_ws:
            a, b = ProfilingClient(a_ws), ProfilingClient(b_ws)
            await asyncio.gather(a.initialize(served.workspace), b.initialize(served.workspace))
            doc = {"uri": uri, "languageId": "python", "version": 1, "text": SOURCE}
            await b.notify("textDocument/didOpen", {"textDocument": doc})
            reply = await a.request("workspace/executeCommand", {
                "command": "oplens.profile",
                "arguments": [{"uri": uri, "qualname": "double", "args": "torch.ones(8)", "warmup": 1, "iters": 2}],
            })
            await b.request("textDocument/codeLens", {"textDocument": {"uri": uri}})  # B reads what came meanwhile
            return reply, b

    reply, b = asyncio.run(asyncio.wait_for(go(), timeout=120))  # a profile in a fresh worker
    run_id = reply["result"]["run_id"]
    documents = [n["params"] for n in b.notes if n["method"] == "oplens/document"]
    assert documents[0]["runs"] == [] and documents[0]["version"] == 1  # after didOpen
    assert documents[-1]["runs"] == [{"runId": run_id, "qualname": "double", "state": "fresh", "shift": 0}]
    assert [f["qualname"] for f in documents[-1]["functions"]] == ["double", "norm"]
    assert not [n for n in b.notes if n["method"] == "oplens/result"]
