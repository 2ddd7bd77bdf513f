"""The early `initialize` answer of `oplens serve --stdio` (oplens.lsp.early): equal to what pygls
computes, sent before the server exists, and followed by a server whose state the replayed
initialize set; every other first message and a failed import handled without a hang."""

from __future__ import annotations

import io
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp

from oplens.lsp import SERVER_MODULES, early, stdio_server

CLIENTS = sorted((Path(pytest_lsp.__file__).parent / "clients").glob("*.json"))  # what real editors send
SOURCE = "def f(x):\n    return x * 2\n\n\nclass Block:\n    def forward(self, x):\n        return x + 1\n"
FUNCTIONS = 2  # f, Block.forward


def init_params(capabilities: dict[str, Any], root: str | None = None, options: Any = None) -> dict[str, Any]:
    params: dict[str, Any] = {"processId": os.getpid(), "capabilities": capabilities, "rootUri": root}
    if root:
        params["workspaceFolders"] = [{"uri": root, "name": "ws"}]
    if options is not None:
        params["initializationOptions"] = options
    return params


def request(msg_id: int | str, method: str, params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}


def notification(method: str, params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def did_open(uri: str) -> dict[str, Any]:
    return notification("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                                  "text": SOURCE}})


def code_lens(msg_id: int, uri: str) -> dict[str, Any]:
    return request(msg_id, "textDocument/codeLens", {"textDocument": {"uri": uri}})


def frames(data: bytes) -> list[dict[str, Any]]:
    stream, found = io.BytesIO(data), []
    while (message := early.read_message(stream)).raw:
        found.append(message.body)
    return found


def pygls_result(params: dict[str, Any], ws: Path) -> Any:
    """What pygls itself answers to `initialize` for the stdio server."""
    ls = stdio_server(ws, None, warm=False)
    out: list[bytes] = []

    class Writer:
        def write(self, data: bytes) -> None:
            out.append(data)

        def close(self) -> None:
            pass

    ls.protocol.set_writer(Writer(), include_headers=False)
    ls.protocol.handle_message(json.loads(json.dumps(request(1, "initialize", params)),
                                          object_hook=ls.protocol.structure_message))
    answers = [m for m in map(json.loads, out) if m.get("id") == 1]
    assert len(answers) == 1 and "result" in answers[0], answers
    return answers[0]["result"]


CAPABILITY_SETS = {
    **{path.stem: json.loads(path.read_text())["capabilities"] for path in CLIENTS},
    "minimal": {},
    "utf-8 preferred": {"general": {"positionEncodings": ["utf-8", "utf-16"]}},
    "utf-32 only": {"general": {"positionEncodings": ["utf-32"]}},
    "unknown encodings": {"general": {"positionEncodings": ["utf-7", "ebcdic"]}},
    "empty encodings": {"general": {"positionEncodings": []}},
    "willSave false": {"textDocument": {"synchronization": {"willSave": False, "willSaveWaitUntil": False}}},
}


@pytest.mark.parametrize("name", list(CAPABILITY_SETS))
def test_early_answer_equals_what_pygls_computes(name: str, tmp_path: Path) -> None:
    params = init_params(CAPABILITY_SETS[name], tmp_path.as_uri(), {"hintThreshold": 0})
    assert early.initialize_params(request(1, "initialize", params)) is not None  # answered early
    assert early.initialize_result(params) == pygls_result(params, tmp_path)


def test_the_vs_code_like_set_is_covered() -> None:
    assert any("visual_studio_code" in name for name in CAPABILITY_SETS)
    assert {"utf-8 preferred", "utf-32 only", "minimal"} <= set(CAPABILITY_SETS)


@pytest.mark.parametrize("body", [
    None,
    [],
    request(1, "shutdown"),
    notification("initialize", {"capabilities": {}}),
    request(True, "initialize", {"capabilities": {}}),
    request(1, "initialize", {"capabilities": 5}),
    request(1, "initialize", {"capabilities": {"general": {"positionEncodings": "utf-8"}}}),
    request(1, "initialize", {"capabilities": {"textDocument": {"synchronization": {"willSave": "yes"}}}}),
])
def test_what_is_not_a_clean_initialize_goes_to_pygls(body: Any) -> None:
    assert early.initialize_params(body) is None


def test_the_reader_frames_as_pygls_does() -> None:
    data = (b"Content-Type: x\r\nContent-Length: 2\r\n\r\n{}"  # any header order
            b"content-length: 2\r\n\r\n{}")  # pygls ignores a lower-case header: so do we
    stream = io.BytesIO(data)
    assert early.read_message(stream).body == {}
    rest = early.read_message(stream)
    assert rest.body is None and rest.raw == data[len(data) - 23:]


def test_prefixed_stream_reads_the_prefix_then_the_rest() -> None:
    stream = early.Prefixed(b"ab\ncd", io.BytesIO(b"ef\ngh"))
    assert stream.readline() == b"ab\n"
    assert stream.readline() == b"cdef\n"
    assert stream.read(1) == b"g"
    stream = early.Prefixed(b"abc", io.BytesIO(b"def"))
    assert stream.read(2) == b"ab" and stream.read(3) == b"cde" and stream.read() == b"f"


class Sink(io.BytesIO):
    """stdout for an in-process server: `exit` closes its writer, we still read it."""

    def close(self) -> None:
        pass


def framed(*messages: dict[str, Any]) -> bytes:
    return b"".join(early.frame(m) for m in messages)


def test_answer_comes_before_the_server_is_built_and_the_replay_sets_its_state(tmp_path: Path) -> None:
    ws = tmp_path.resolve()
    uri = (ws / "ex.py").as_uri()
    params = init_params({}, ws.as_uri(), {"pathMappings": "not a list"})
    stdin = io.BytesIO(framed(request(1, "initialize", params), notification("initialized", {}), did_open(uri),
                              code_lens(2, uri)))
    stdout = Sink()
    at_build: list[dict[str, Any]] = []

    def build() -> Any:
        at_build.extend(frames(stdout.getvalue()))
        return stdio_server(ws, None, warm=False)

    assert early.serve(build, SERVER_MODULES, stdin=stdin, stdout=stdout) == 0
    assert at_build == [{"jsonrpc": "2.0", "id": 1, "result": early.initialize_result(params)}]
    out = frames(stdout.getvalue())
    assert not [m for m in out if str(m.get("id", "")).startswith("oplens.early")]
    assert [m for m in out if m.get("id") == 1] == at_build  # the replay's own answer was dropped
    warnings = [m["params"]["message"] for m in out if m.get("method") == "window/showMessage"]
    assert warnings == ["OpLens: pathMappings must be a list of {local, host} objects; path mappings ignored"]
    lenses = next(m for m in out if m.get("id") == 2)["result"]
    assert [lens["command"]["title"] for lens in lenses] == ["▶ Profile"] * FUNCTIONS


def test_a_failed_import_before_initialize_answers_it_with_the_reason() -> None:
    class AfterImport(io.BytesIO):
        def readline(self, size: int | None = -1) -> bytes:
            deadline = time.monotonic() + 30
            while any(t.name == "oplens-import" for t in threading.enumerate()) and time.monotonic() < deadline:
                time.sleep(0.01)
            return super().readline(size)

    stdin = AfterImport(framed(request(1, "initialize", init_params({})), code_lens(2, "file:///x.py"),
                               request(3, "shutdown"), notification("exit")))
    stdout = Sink()
    assert early.serve(lambda: pytest.fail("built"), ("oplens_no_such_module",), stdin=stdin, stdout=stdout) == 0
    first, second, third = frames(stdout.getvalue())
    assert first["id"] == 1 and "oplens_no_such_module" in first["error"]["message"]
    assert first["error"]["data"] == {"retry": False}
    assert second["id"] == 2 and "oplens_no_such_module" in second["error"]["message"]
    assert third == {"jsonrpc": "2.0", "id": 3, "result": None}


def test_a_failed_import_after_the_answer_is_shown_and_named_in_every_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answered = tmp_path / "answered"
    (tmp_path / "oplens_slow_broken.py").write_text(
        "import os, time\n"
        f"while not os.path.exists({str(answered)!r}):\n    time.sleep(0.01)\n"
        "raise ImportError('stub: broken after the answer')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))

    class Flagging(Sink):
        def write(self, data: Any) -> int:
            n = super().write(data)
            answered.touch()
            return n

    stdin = io.BytesIO(framed(request(1, "initialize", init_params({})), code_lens(2, "file:///x.py"),
                              request(3, "shutdown"), notification("exit")))
    stdout = Flagging()
    assert early.serve(lambda: pytest.fail("built"), ("oplens_slow_broken",), stdin=stdin, stdout=stdout) == 0
    first, shown, second, third = frames(stdout.getvalue())
    assert first["id"] == 1 and "result" in first
    assert shown["method"] == "window/showMessage" and "broken after the answer" in shown["params"]["message"]
    assert second["id"] == 2 and "broken after the answer" in second["error"]["message"]
    assert third["result"] is None


def test_a_bad_initialize_is_answered_by_pygls(tmp_path: Path) -> None:
    stdin = io.BytesIO(framed(request(1, "initialize", {"capabilities": 5})))
    stdout = Sink()
    early.serve(lambda: stdio_server(tmp_path, None, warm=False), SERVER_MODULES, stdin=stdin, stdout=stdout)
    (answer,) = [m for m in frames(stdout.getvalue()) if m.get("id") == 1]
    assert answer["error"]["code"] == -32602


def test_serve_stdio_path_imports_neither_rich_nor_the_lsp_stack() -> None:
    code = ("import sys; from oplens.cli import main; import oplens.cli.serve, oplens.lsp, oplens.lsp.early; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('rich', 'pygls', 'lsprotocol', 'cattrs', 'torch') "
            "or m.startswith('oplens.engine')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# ---- the real process -------------------------------------------------------------------------


class Client:
    """`python -m oplens serve --stdio --no-warm` over raw framed JSON-RPC; every message kept."""

    def __init__(self, cwd: Path, env: dict[str, str] | None = None) -> None:
        self.log = (cwd.parent / f"{cwd.name}-stderr.log").open("wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "oplens", "serve", "--stdio", "--no-warm"], cwd=cwd,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, env=env)
        self.inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        while (message := early.read_message(self.proc.stdout)).raw:
            self.inbox.put(message.body)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(early.frame(message))
        self.proc.stdin.flush()

    def wait_for(self, match: Any, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = self.inbox.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"nothing matching within {timeout} s; seen {self.seen}") from None
            self.seen.append(message)
            if match(message):
                return message

    def answer(self, msg_id: int) -> dict[str, Any]:
        return self.wait_for(lambda m: m.get("id") == msg_id and "method" not in m)

    def close(self) -> int:
        self.send(request(999, "shutdown"))
        assert self.answer(999)["result"] is None
        self.send(notification("exit"))
        try:
            return self.proc.wait(20)
        finally:
            self.log.close()


def test_the_real_server_answers_early_then_serves_with_the_client_settings(tmp_path: Path) -> None:
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    (ws / "ex.py").write_text(SOURCE)
    client_root, client_uri = "file:///client/ws", "file:///client/ws/ex.py"  # the editor's paths, mapped to ws
    caps = CAPABILITY_SETS["visual_studio_code_v1.65.2"]
    options = {"hintThreshold": 0, "pathMappings": [{"local": "/client/ws", "host": str(ws)}], "backend": "bogus"}
    params = init_params(caps, client_root, options)
    client = Client(ws)
    client.send(request(1, "initialize", params))
    assert client.answer(1) == {"jsonrpc": "2.0", "id": 1, "result": early.initialize_result(params)}
    client.send(notification("initialized", {}))
    client.send(did_open(client_uri))
    client.send(code_lens(2, client_uri))
    lenses = client.answer(2)["result"]
    assert [lens["command"]["title"] for lens in lenses] == ["▶ Profile"] * FUNCTIONS
    assert all(lens["command"]["arguments"][0]["uri"] == client_uri for lens in lenses)
    # the path is mapped into the workspace and the default backend is the client's: its check fails first
    client.send(request(3, "workspace/executeCommand", {"command": "oplens.profile",
                                                        "arguments": [{"uri": client_uri, "qualname": "f"}]}))
    assert "unknown backend 'bogus'" in client.answer(3)["error"]["message"]
    assert client.close() == 0
    assert [m for m in client.seen if m.get("id") == 1 and "method" not in m] == [client.seen[0]]
    assert not [m for m in client.seen if str(m.get("id", "")).startswith("oplens.early")]


def test_the_real_server_when_the_first_message_is_not_initialize(tmp_path: Path) -> None:
    (tmp_path / "ex.py").write_text(SOURCE)
    uri = (tmp_path / "ex.py").as_uri()
    client = Client(tmp_path)
    client.send(request(7, "oplens/unknown", {}))
    assert client.answer(7)["error"]["code"] == -32601  # pygls read it as sent
    params = init_params(CAPABILITY_SETS["utf-8 preferred"], tmp_path.as_uri())
    client.send(request(8, "initialize", params))
    result = client.answer(8)["result"]  # pygls's own answer this time
    assert result == early.initialize_result(params) and result["capabilities"]["positionEncoding"] == "utf-8"
    client.send(notification("initialized", {}))
    client.send(did_open(uri))
    client.send(code_lens(9, uri))
    assert [lens["command"]["title"] for lens in client.answer(9)["result"]] == ["▶ Profile"] * FUNCTIONS
    assert client.close() == 0


def test_the_real_server_with_a_broken_lsp_stack_names_the_problem(tmp_path: Path) -> None:
    stub = tmp_path / "stub" / "lsprotocol"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ImportError('stub: lsprotocol is broken')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(stub.parent), os.environ.get("PYTHONPATH", "")])}
    client = Client(tmp_path, env)
    client.send(request(1, "initialize", init_params({}, tmp_path.as_uri())))
    first = client.answer(1)
    if "result" in first:  # answered before the import failed: then it is shown
        shown = client.wait_for(lambda m: m.get("method") == "window/showMessage")
        assert "lsprotocol is broken" in shown["params"]["message"]
    else:
        assert "lsprotocol is broken" in first["error"]["message"]
    client.send(code_lens(2, (tmp_path / "ex.py").as_uri()))
    assert "lsprotocol is broken" in client.answer(2)["error"]["message"]
    assert client.close() == 0
