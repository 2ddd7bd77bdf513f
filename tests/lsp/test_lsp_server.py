"""`oplens serve --stdio` as a process, over raw framed JSON-RPC: what it announces (serverInfo's
protocol, its commands from the names module and the backend registry), the client's settings at
work, invalid arguments answered as invalid params, and what its import loads."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from oplens import __version__
from oplens.backends import registry
from oplens.records import names
from support.lsp import Wire, command, request

SOURCE = "def f(x):\n    return x * 2\n\n\nclass Block:\n    def forward(self, x):\n        return x + 1\n"
FUNCTIONS = 2  # f, Block.forward


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    (ws / "ex.py").write_text(SOURCE)
    return ws


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Wire, Path, dict[str, Any]]]:
    """One initialized server for the tests that only ask."""
    ws = tmp_path_factory.mktemp("served").resolve()
    (ws / "ex.py").write_text(SOURCE)
    client = Wire(ws, stderr=ws.parent / f"{ws.name}-stderr.log")
    result = client.initialize(ws.as_uri())
    yield client, ws, result
    assert client.close() == 0


def test_server_info_announces_the_protocol(served: tuple[Wire, Path, dict[str, Any]]) -> None:
    _, _, result = served
    assert result["serverInfo"] == {"name": "oplens", "version": f"{__version__}+protocol.{names.PROTOCOL_VERSION}"}


def test_commands_come_from_the_names_module_and_the_backend_registry(served: tuple[Wire, Path, dict[str, Any]]) -> None:
    _, _, result = served
    ours = [names.PROFILE_COMMAND, names.COMPARE_COMMAND, names.CANCEL_COMMAND, names.SHOW_RUN_COMMAND,
            names.CLEAR_COMMAND, names.FUNCTIONS_COMMAND, names.DIFF_COMMAND, names.DOCTOR_COMMAND,
            names.MERGE_COMMAND, names.RANK_PART_COMMAND, names.OVERVIEW_COMMAND, names.HOT_FUNCTIONS_COMMAND,
            names.BACKENDS_COMMAND, names.SLURM_COMMAND, names.EXPORT_COMMAND,
            names.FLAME_GRAPH_COMMAND, names.OPEN_PERFETTO_COMMAND, names.RUN_PAGE_COMMAND]
    backends = [cmd.lsp_command for _, cmd in registry.commands()]
    assert backends  # Neuron's Explorer opener, at least
    assert sorted(result["capabilities"]["executeCommandProvider"]["commands"]) == sorted(ours + backends)


BAD_ARGUMENTS = [
    (names.PROFILE_COMMAND, [], "takes one object {uri, qualname or line"),
    (names.PROFILE_COMMAND, [{"uri": "EX", "qualname": "f", "warmup": "3"}], "warmup must be an integer (got '3')"),
    (names.PROFILE_COMMAND, [{"uri": "EX", "qualname": "f", "timeoutSeconds": True}], "timeoutSeconds must be a number"),
    (names.PROFILE_COMMAND, [{"uri": "EX", "qualname": "f", "iters": 0}], "iters must be 1 or more"),
    (names.PROFILE_COMMAND, [{"uri": "EX", "line": -1}], "give the function as qualname"),
    (names.PROFILE_COMMAND, [{"uri": "EX", "qualname": "f"}, {"uri": "EX"}], "takes one argument, an object (got 2)"),
    (names.COMPARE_COMMAND, [{"targets": [{"uri": "EX", "qualname": "f"}]}], "give two or more targets"),
    (names.COMPARE_COMMAND, [{"targets": [{"uri": "EX", "qualname": "f"}, {"qualname": "g"}]}], "targets[1].uri is missing"),
    (names.COMPARE_COMMAND, [{"targets": "f, g"}], "targets must be a list (got 'f, g')"),
    (names.SHOW_RUN_COMMAND, [{"run_id": 12}], "run_id must be a string (got 12)"),
    (names.SHOW_RUN_COMMAND, [{"run_id": "no-such-run"}], "no run 'no-such-run'"),
    (names.CLEAR_COMMAND, [{"uri": ["EX"]}], "uri must be a string"),
    (names.FUNCTIONS_COMMAND, [{"uri": "untitled:Untitled-1"}], "not a file URI"),
    (names.DIFF_COMMAND, [{"before": "x"}], "give after, or uri and qualname"),
    (names.DIFF_COMMAND, [{"uri": "EX", "qualname": "f"}], "no stored run of f"),
    (names.DIFF_COMMAND, [{"after": ["x"]}], "after must be a string"),
    *[(cmd.lsp_command, [{"runId": "x"}], "run_id is missing") for _, cmd in registry.commands()],
]


@pytest.mark.parametrize(("index", "case"), list(enumerate(BAD_ARGUMENTS)), ids=[c[0] for c in BAD_ARGUMENTS])
def test_a_bad_argument_is_invalid_params_naming_it(
    served: tuple[Wire, Path, dict[str, Any]], index: int, case: tuple[str, list[Any], str]
) -> None:
    client, ws, _ = served
    name, arguments, needle = case
    arguments = json.loads(json.dumps(arguments).replace('"EX"', json.dumps((ws / "ex.py").as_uri())))
    client.send(command(100 + index, name, *arguments))
    error = client.answer(100 + index)["error"]
    assert error["code"] == -32602, error
    assert needle in error["message"]


def test_params_that_do_not_decode_get_an_error_response(served: tuple[Wire, Path, dict[str, Any]]) -> None:
    client, ws, _ = served
    client.send(request(50, "textDocument/codeLens", {"textDocument": 42}))
    error = client.answer(50)["error"]
    assert error["code"] == -32602 and error["message"].startswith("invalid params for textDocument/codeLens")
    client.send(request(51, "textDocument/codeLens", {"textDocument": {"uri": (ws / "ex.py").as_uri()}}))
    assert len(client.answer(51)["result"]) == FUNCTIONS  # and it keeps serving


def test_a_buffer_that_is_not_a_file_is_left_alone(served: tuple[Wire, Path, dict[str, Any]]) -> None:
    client, ws, _ = served
    client.open("untitled:Untitled-1", "def scratch():\n    pass\n")
    client.send(request(60, "textDocument/codeLens", {"textDocument": {"uri": (ws / "ex.py").as_uri()}}))
    assert len(client.answer(60)["result"]) == FUNCTIONS
    assert not [m for m in client.seen if m.get("method") == "window/showMessage"]  # no "Error in server"
    assert not [m for m in client.seen if m.get("method") == names.DOCUMENT_NOTIFICATION and "Untitled" in json.dumps(m)]


def test_the_clients_settings_at_work_and_bad_ones_named(workspace: Path) -> None:
    client_root, client_uri = "file:///client/ws", "file:///client/ws/ex.py"  # the editor's paths, mapped to workspace
    options = {"hintThreshold": 0, "pathMappings": [{"local": "/client/ws", "host": str(workspace)}],
               "backend": "bogus", "warmup": -2}
    client = Wire(workspace, stderr=workspace.parent / f"{workspace.name}-stderr.log")
    client.initialize(client_root, options)
    shown = [client.wait_for(lambda m: m.get("method") == "window/showMessage")]
    shown.append(client.wait_for(lambda m: m.get("method") == "window/showMessage" and m not in shown))
    assert [m["params"]["type"] for m in shown] == [2, 2]  # warnings
    assert [m["params"]["message"] for m in shown] == [
        "OpLens: setting backend = 'bogus' is not valid: give one of auto, cpu, cuda, neuron. Using the default, 'auto'.",
        "OpLens: setting warmup = -2 is not valid: give a whole number, 0 or more. Using the default, 3.",
    ]
    client.open(client_uri, SOURCE)
    client.send(request(2, "textDocument/codeLens", {"textDocument": {"uri": client_uri}}))
    lenses = client.answer(2)["result"]
    assert [lens["command"]["title"] for lens in lenses] == ["▶ Profile"] * FUNCTIONS
    assert all(lens["command"]["arguments"][0]["uri"] == client_uri for lens in lenses)
    # the path is mapped into the workspace and the request takes the default backend: the engine's check comes next
    client.send(command(3, names.PROFILE_COMMAND, {"uri": client_uri, "qualname": "nope"}))
    error = client.answer(3)["error"]
    assert error["code"] == -32803 and "ex.py has no function 'nope'" in error["message"]
    assert error["data"]["kind"] == "bad_input" and error["data"]["exit_code"] == 2
    assert client.close() == 0


def test_the_first_message_need_not_be_initialize(workspace: Path) -> None:
    uri = (workspace / "ex.py").as_uri()
    client = Wire(workspace, stderr=workspace.parent / f"{workspace.name}-stderr.log")
    client.send(request(7, "oplens/unknown", {}))
    assert client.answer(7)["error"]["code"] == -32601
    client.initialize(workspace.as_uri(), capabilities={"general": {"positionEncodings": ["utf-8", "utf-16"]}})
    assert client.answer(1)["result"]["capabilities"]["positionEncoding"] == "utf-8"
    client.open(uri, SOURCE)
    client.send(request(9, "textDocument/codeLens", {"textDocument": {"uri": uri}}))
    assert [lens["command"]["title"] for lens in client.answer(9)["result"]] == ["▶ Profile"] * FUNCTIONS
    assert client.close() == 0


def loaded(code: str, prefixes: tuple[str, ...]) -> list[str]:
    probe = f"import sys; {code}; print(sorted(m for m in sys.modules if m.split('.')[0] in {prefixes!r}))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.replace("'", '"'))  # type: ignore[no-any-return]


def test_the_engine_and_the_server_load_neither_torch_nor_rich() -> None:
    modules = "oplens.engine.profile, oplens.engine.program, oplens.lsp.server, oplens.lsp.websocket"
    assert loaded(f"import {modules}", ("torch", "rich")) == []


def test_serve_dispatch_loads_no_lsp_stack_before_the_mode_is_known() -> None:
    code = "from oplens.cli import main; import oplens.cli.serve, oplens.lsp"
    assert loaded(code, ("rich", "pygls", "lsprotocol", "cattrs", "torch")) == []
