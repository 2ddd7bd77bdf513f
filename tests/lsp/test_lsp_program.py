"""`oplens.profile` with `program`: the function captured inside the user's own program (`oplens run`),
through the real server over stdio (pytest-lsp): the run and its capture counts, `oplens/result`,
the capture's `$/progress`, the program's output as log messages, a never-called function, a
program that fails first (its line marked), a cancel, and arguments that contradict themselves."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from oplens.lsp import settings
from oplens.records import names
from support.lsp import plain, served_client

MODEL = """\
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x):
        h = self.lin(x)
        h = torch.relu(h)
        return x + h * h


def unused(x):
    return x * 2
"""

STEPS = """\
import os
import sys
import time

import torch

from pkg.model import Block


def main(argv):
    steps = int(argv[0])
    pause = float(argv[1]) if len(argv) > 1 else 0.0
    print(f"training for {steps} steps in {os.path.basename(os.getcwd())}, tag {os.environ.get('TAG', '-')}", flush=True)
    print("a warning on stderr", file=sys.stderr, flush=True)
    model = Block()
    x = torch.randn(4, 16)
    with torch.no_grad():
        for _ in range(steps):
            x = model(x).tanh()
            time.sleep(pause)
    if len(argv) > 2:
        raise RuntimeError(argv[2])
    print("trained", flush=True)
"""

SCRIPT = "import sys\n\nfrom pkg.steps import main\n\nmain(sys.argv[1:])\n"
MODULE = "import sys\n\nfrom pkg.steps import main\n\nif __name__ == '__main__':\n    main(sys.argv[1:])\n"
SMALL = {"skip": 1, "calls": 2, "stop": True}  # a few calls: the program ends once they are captured


@pytest_asyncio.fixture
async def workspace(tmp_path: Path) -> Path:
    ws = (tmp_path / "ws").resolve()
    (ws / "pkg").mkdir(parents=True)
    (ws / "pkg" / "__init__.py").write_text("")
    (ws / "pkg" / "model.py").write_text(MODEL)
    (ws / "pkg" / "steps.py").write_text(STEPS)
    (ws / "pkg" / "train.py").write_text(MODULE)
    (ws / "train.py").write_text(SCRIPT)
    return ws


@pytest_asyncio.fixture
async def client(workspace: Path) -> AsyncIterator[LanguageClient]:
    async with served_client(workspace) as c:
        yield c


async def profile(client: LanguageClient, arg: dict[str, Any]) -> Any:
    params = lsp.ExecuteCommandParams(command=names.PROFILE_COMMAND, arguments=[arg])
    return await asyncio.wait_for(client.workspace_execute_command_async(params), 60)


def logged(client: LanguageClient) -> list[str]:
    """The program's output lines the server logged (one message may carry several: what one read of its pipe gave)."""
    return [line for m in client.log_messages if m.type == lsp.MessageType.Log for line in m.message.splitlines()]


def progress_messages(client: LanguageClient) -> list[str]:
    return [r.message or "" for rs in client.progress_reports.values() for r in rs
            if isinstance(r, lsp.WorkDoneProgressReport)]  # fmt: skip


async def test_a_function_captured_inside_a_script(client: LanguageClient, workspace: Path) -> None:
    uri = (workspace / "pkg" / "model.py").as_uri()
    reply = plain(await profile(client, {"uri": uri, "qualname": "Block.forward",
                                         "program": {"program": "train.py", "args": ["30"]}, **SMALL}))  # fmt: skip
    (note,) = client.results  # type: ignore[attr-defined]  # before the reply
    assert reply["qualname"] == "Block.forward" and reply["uri"] == uri and "2 calls" in reply["title"]
    run = note["run"]
    assert note["uri"] == uri and run["run_id"] == reply["run_id"]
    capture = run["capture"]
    assert capture["program"] == str(workspace / "train.py") and capture["argv"] == ["30"]
    assert (capture["calls_skipped"], capture["calls_profiled"], run["config"]["iters"]) == (1, 2, 2)
    assert capture["stopped"] and not capture["partial"]
    assert capture["calls_seen"] == 1 + capture["calls_profiler_warmup"] + 2  # ended once captured (stop)
    assert {line["line"] for line in run["lines"]} >= {11, 12, 13}  # the forward's three lines ran ops

    out = logged(client)
    assert "[train.py] training for 30 steps in ws, tag -" in out and "[train.py stderr] a warning on stderr" in out
    assert "[train.py] trained" not in out  # stopped once captured
    said = progress_messages(client)
    assert "waiting for the first call" in said and said[-1] == "attributing"
    assert "captured 2 of 2" in said
    ends = [r for rs in client.progress_reports.values() for r in rs if isinstance(r, lsp.WorkDoneProgressEnd)]
    assert ends and ends[-1].message == reply["title"]


async def test_a_function_captured_inside_a_module_run_to_its_end(client: LanguageClient, workspace: Path) -> None:
    uri = (workspace / "pkg" / "model.py").as_uri()
    arg = {"uri": uri, "line": 10, "program": {"module": "pkg.train", "args": ["6"], "env": {"TAG": "env given"}},
           **SMALL, "stop": False}  # fmt: skip
    reply = plain(await profile(client, arg))  # line 10 (0-based) is in Block.forward
    assert reply["qualname"] == "Block.forward"
    (note,) = client.results  # type: ignore[attr-defined]
    capture = note["run"]["capture"]
    assert capture["program"] == "-m pkg.train" and capture["calls_seen"] == 6 and capture["exit_code"] == 0
    assert not capture["stopped"]
    assert "[-m pkg.train] training for 6 steps in ws, tag env given" in logged(client)
    assert "[-m pkg.train] trained" in logged(client)  # run to its end


async def test_a_launch_configuration_running_torchrun_captures_every_rank(client: LanguageClient, workspace: Path) -> None:
    """A launch configuration that is torchrun itself (module torch.distributed.run): its options kept,
    not wrapped twice; every rank captured and the run merged."""
    uri = (workspace / "pkg" / "model.py").as_uri()
    torchrun = {"module": "torch.distributed.run", "args": ["--nproc-per-node", "2", "train.py", "6"]}
    reply = plain(await asyncio.wait_for(client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command=names.PROFILE_COMMAND, arguments=[{"uri": uri, "qualname": "Block.forward", **SMALL, "program": torchrun}],
    )), 180))  # fmt: skip
    assert reply["qualname"] == "Block.forward"
    run = client.results[-1]["run"]  # type: ignore[attr-defined]
    assert [r["rank"] for r in run["ranks"]] == [0, 1] and run["capture"]["program"].endswith("train.py")
    assert all(line["ranks"] and len(line["ranks"]["per_rank"]) == 2 for line in run["lines"])


async def test_a_function_the_program_never_calls_is_an_error_saying_so(client: LanguageClient, workspace: Path) -> None:
    uri = (workspace / "pkg" / "model.py").as_uri()
    with pytest.raises(JsonRpcException) as e:
        await profile(client, {"uri": uri, "qualname": "unused", **SMALL,
                               "program": {"program": "../train.py", "args": ["3"], "cwd": "pkg"}})  # fmt: skip
    assert "never called" in e.value.message
    assert e.value.data["kind"] == "not_called" and e.value.data["exit_code"] == 2  # type: ignore[index]
    assert "[train.py] training for 3 steps in pkg, tag -" in logged(client)  # in the folder given
    assert "[train.py] trained" in logged(client)  # the program ran to its end, its output told


async def test_a_program_that_fails_first_marks_its_line(client: LanguageClient, workspace: Path) -> None:
    steps = workspace / "pkg" / "steps.py"
    steps_uri = steps.as_uri()
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=steps_uri, language_id="python", version=1, text=steps.read_text())))
    uri = (workspace / "pkg" / "model.py").as_uri()
    with pytest.raises(JsonRpcException) as e:
        await profile(client, {"uri": uri, "qualname": "Block.forward", **SMALL,
                               "program": {"program": "train.py", "args": ["2", "0", "diverged"]}})  # fmt: skip
    assert "the program raised RuntimeError: diverged before the capture of Block.forward" in e.value.message
    data = e.value.data  # type: ignore[attr-defined]
    raised = next(i for i, t in enumerate(steps.read_text().splitlines(), 1) if "raise RuntimeError" in t)
    assert data["kind"] == "program_failed" and data["location"]["uri"] == steps_uri
    assert data["location"]["line"] == raised
    for _ in range(100):
        found = [d for d in client.diagnostics.get(steps_uri, []) if d.code == "program_failed"]
        if found:
            break
        await asyncio.sleep(0.05)
    assert [d.range.start.line for d in found] == [raised - 1]
    assert any("RuntimeError: diverged" in m for m in logged(client))  # the program's traceback, on stderr


async def test_cancel_ends_the_program(client: LanguageClient, workspace: Path) -> None:
    uri = (workspace / "pkg" / "model.py").as_uri()
    task = asyncio.ensure_future(profile(client, {"uri": uri, "qualname": "Block.forward",
                                                  "program": {"program": "train.py", "args": ["100000", "0.01"]},
                                                  "skip": 100000, "calls": 1}))  # fmt: skip
    for _ in range(600):  # until the program runs and the target is being called
        if any(m.startswith("waiting: call") for m in progress_messages(client)):
            break
        await asyncio.sleep(0.05)
    else:
        pytest.fail(f"no call seen; progress {progress_messages(client)}, log {logged(client)}")
    await client.workspace_execute_command_async(lsp.ExecuteCommandParams(command=names.CANCEL_COMMAND, arguments=[]))
    with pytest.raises(JsonRpcException) as e:
        await asyncio.wait_for(task, 30)
    assert e.value.data["kind"] == "cancelled", e.value.message  # type: ignore[index]
    assert not list((workspace / ".oplens" / "runs").glob("2*"))  # no run


def test_the_capture_settings_their_defaults_and_a_bad_one() -> None:
    parsed, warnings = settings.parse({})
    assert (parsed.capture_skip, parsed.capture_calls, parsed.capture_stop, warnings) == (3, 10, True, [])
    parsed, warnings = settings.parse({"captureSkip": 0, "captureCalls": 1, "captureStop": False})
    assert (parsed.capture_skip, parsed.capture_calls, parsed.capture_stop, warnings) == (0, 1, False, [])
    parsed, warnings = settings.parse({"captureSkip": -1, "captureCalls": 2.5, "captureStop": "yes"})
    assert (parsed.capture_skip, parsed.capture_calls, parsed.capture_stop) == (3, 10, True)
    assert warnings == [
        "OpLens: setting captureSkip = -1 is not valid: give a whole number, 0 or more (the calls a capture lets "
        "run before profiling). Using the default, 3.",
        "OpLens: setting captureCalls = 2.5 is not valid: give a whole number, 1 or more (the calls a capture "
        "profiles). Using the default, 10.",
        "OpLens: setting captureStop = 'yes' is not valid: give true or false (end the program once the function "
        "is captured). Using the default, true.",
    ]


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ({"program": {"program": "train.py", "module": "pkg.train"}}, "program takes program (a script) or module, not both"),
        ({"program": {"args": ["3"]}}, "program needs program (a script"),
        ({"program": {"program": "train.py"}, "args": "torch.ones(2)"}, "give args (the function called with them) or program"),
        ({"program": {"program": "train.py", "args": "3"}}, "program.args must be a list (got '3')"),
        ({"program": {"program": "train.py", "env": {"A": 1}}}, "program.env[A] must be a string (got 1)"),
        ({"program": {"program": "train.py"}, "calls": 0}, "calls must be 1 or more"),
        ({"program": {"program": "train.py"}, "stop": "yes"}, "stop must be true or false"),
    ],
)
async def test_contradicting_program_arguments_are_invalid_params(
    client: LanguageClient, workspace: Path, extra: dict[str, Any], needle: str
) -> None:
    uri = (workspace / "pkg" / "model.py").as_uri()
    with pytest.raises(JsonRpcException) as e:
        await profile(client, {"uri": uri, "qualname": "Block.forward", **extra})
    assert e.value.code == -32602 and needle in e.value.message, e.value.message  # type: ignore[attr-defined]


async def test_a_program_that_is_not_there_is_told_before_anything_runs(client: LanguageClient, workspace: Path) -> None:
    uri = (workspace / "pkg" / "model.py").as_uri()
    with pytest.raises(JsonRpcException) as e:
        await profile(client, {"uri": uri, "qualname": "Block.forward", "program": {"program": "nope.py"}})
    assert f"the program {workspace / 'nope.py'} does not exist" in e.value.message
    assert e.value.data["kind"] == "bad_input"  # type: ignore[index]
    assert not client.progress_reports  # refused before it was queued
