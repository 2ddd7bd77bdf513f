"""Malformed JSON-RPC thrown at the real server over stdio: after each message it still answers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.lsp import Wire


@pytest.fixture(scope="module")
def wire(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wire]:
    ws = tmp_path_factory.mktemp("fuzz")
    (ws / "m.py").write_text("def f(x):\n    return x\n")
    w = Wire(ws)
    reply = w.request("initialize", {"processId": None, "rootUri": ws.as_uri(), "capabilities": {}})
    assert "capabilities" in reply["result"]
    w.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    w.uri = (ws / "m.py").as_uri()  # type: ignore[attr-defined]
    yield w
    w.proc.kill()
    w.proc.wait()


def still_answers(w: Wire) -> None:
    reply = w.request("textDocument/codeLens", {"textDocument": {"uri": w.uri}})  # type: ignore[attr-defined]
    assert [lens["command"]["title"] for lens in reply["result"]] == ["▶ Profile"]
    assert w.proc.poll() is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
methods = st.sampled_from(
    [
        "workspace/executeCommand",
        "textDocument/codeLens",
        "textDocument/hover",
        "textDocument/inlayHint",
        "textDocument/didOpen",
        "textDocument/didChange",
        "window/workDoneProgress/cancel",
        "$/cancelRequest",
        "no/such/method",
    ]
)
commands = st.sampled_from(["oplens.profile", "oplens.compare", "oplens.showRun", "oplens.clear", "oplens.cancel", "x"])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kind=st.sampled_from(["bytes", "json", "request", "notification", "command"]),
    raw=st.binary(max_size=64),
    value=json_values,
    method=methods,
    command=commands,
)
def test_malformed_messages_leave_the_server_answering(
    wire: Wire, kind: str, raw: bytes, value: Any, method: str, command: str
) -> None:
    if kind == "bytes":
        wire.send_raw(raw)  # not JSON at all
    elif kind == "json":
        wire.send_raw(json.dumps(value).encode())  # JSON, but not a JSON-RPC message
    elif kind == "request":
        wire.send({"jsonrpc": "2.0", "id": 7, "method": method, "params": value})
    elif kind == "notification":
        wire.send({"jsonrpc": "2.0", "method": method, "params": value})
    else:
        # commands never run a profile here: a profile needs a valid {uri, qualname} of a workspace file
        wire.send({"jsonrpc": "2.0", "id": 8, "method": "workspace/executeCommand",
                   "params": {"command": command, "arguments": value if isinstance(value, list) else [value]}})
    still_answers(wire)


def test_wrong_parameter_types_get_an_error_response(wire: Wire) -> None:
    reply = wire.request("textDocument/hover", {"textDocument": 5, "position": "here"})
    assert "error" in reply
    reply = wire.request("workspace/executeCommand", {"command": "oplens.profile", "arguments": [{"uri": 3}]})
    assert reply["error"]["message"].startswith("oplens.profile takes one object")
    still_answers(wire)
