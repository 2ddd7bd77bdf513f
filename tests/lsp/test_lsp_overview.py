"""The program overview in the editor, through the real server over stdio (pytest-lsp):
`oplens.overview` runs the program with its step function's steps profiled whole; then every
function the overview saw has its share lens (`CPU 12.3 % · 1.23 ms/step`) and `▶ lines` in
whichever file it is (two files here), `oplens.hotFunctions` lists them by self or total time, and
`▶ lines`' arguments capture that function line by line in the same program."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from oplens.records import names
from support.lsp import open_doc, served_client

MODEL = """\
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(64, 64)

    def forward(self, x):
        h = self.lin(x)
        h = torch.relu(h)
        return x + h * h
"""

STEPS = """\
import sys

import torch

from pkg.model import Block


def loss_of(y):
    return (y * y).mean()


def step(model, x):
    y = model(x)
    loss = loss_of(y)
    return loss.item()


def main(argv):
    model = Block()
    x = torch.randn(32, 64)
    with torch.no_grad():
        for _ in range(int(argv[0])):
            step(model, x)


main(sys.argv[1:])
"""

SHARE = re.compile(r"^CPU \d+(\.\d+)? % · .+/step( · total \d+(\.\d+)? %)?$")
PROGRAM = {"program": "train.py", "args": ["12"]}


@pytest_asyncio.fixture
async def workspace(tmp_path: Path) -> Path:
    ws = (tmp_path / "ws").resolve()
    (ws / "pkg").mkdir(parents=True)
    (ws / "pkg" / "__init__.py").write_text("")
    (ws / "pkg" / "model.py").write_text(MODEL)
    (ws / "pkg" / "steps.py").write_text(STEPS.replace("\n\nmain(sys.argv[1:])\n", "\n"))
    (ws / "train.py").write_text("import sys\n\nfrom pkg.steps import main\n\nmain(sys.argv[1:])\n")
    return ws


@pytest_asyncio.fixture
async def client(workspace: Path) -> AsyncIterator[LanguageClient]:
    async with served_client(workspace) as c:
        yield c


async def execute(client: LanguageClient, command: str, arg: dict[str, Any]) -> Any:
    params = lsp.ExecuteCommandParams(command=command, arguments=[arg])
    return await asyncio.wait_for(client.workspace_execute_command_async(params), 120)


async def lenses(client: LanguageClient, uri: str) -> list[lsp.CodeLens]:
    got = await client.text_document_code_lens_async(lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    return got or []


def overview_lenses(found: list[lsp.CodeLens]) -> dict[int, list[lsp.Command]]:
    """The overview's lenses (share and `▶ lines`) by 0-based line."""
    out: dict[int, list[lsp.Command]] = {}
    for lens in found:
        cmd = lens.command
        assert cmd is not None
        if cmd.command == names.HOT_FUNCTIONS_COMMAND or cmd.title == "▶ lines":
            out.setdefault(lens.range.start.line, []).append(cmd)
    return out


@pytest.mark.asyncio
async def test_overview_lenses_in_two_files_hot_functions_and_lines(client: LanguageClient, workspace: Path) -> None:
    model, steps = workspace / "pkg" / "model.py", workspace / "pkg" / "steps.py"
    model_uri, steps_uri = open_doc(client, model), open_doc(client, steps)
    assert overview_lenses(await lenses(client, model_uri)) == {}  # no overview yet
    assert await execute(client, names.HOT_FUNCTIONS_COMMAND, {}) is None

    reply = await execute(client, names.OVERVIEW_COMMAND, {"uri": steps_uri, "qualname": "step", "program": PROGRAM,
                                                           "skip": 2, "calls": 3, "stop": True})  # fmt: skip
    assert reply["qualname"] == "step" and reply["functions"] >= 3
    assert reply["title"].startswith("overview of step: CPU ") and reply["title"].endswith("/step over 3 steps")
    overview_run = client.results[-1]["run"]  # type: ignore[attr-defined]
    assert overview_run["overview"]["steps"] == 3 and overview_run["overview"]["frames"]

    # Block.forward in model.py (its def on line 10, the lens on its first line), step and loss_of in steps.py
    in_model = overview_lenses(await lenses(client, model_uri))
    in_steps = overview_lenses(await lenses(client, steps_uri))
    assert set(in_model) == {9}
    assert {7, 11} <= set(in_steps)  # loss_of (line 8), step (line 12); main is outside the steps
    for cmds in [*in_model.values(), *in_steps.values()]:
        share, lines = cmds
        assert SHARE.match(share.title), share.title
        assert lines.title == "▶ lines" and lines.command == names.PROFILE_COMMAND
    step_share = in_steps[11][0].title
    assert " · total " in step_share  # step calls Block.forward and loss_of: its total is more than its self
    forward_lines = in_model[9][1].arguments[0]  # type: ignore[index]
    assert forward_lines["uri"] == model_uri and forward_lines["qualname"] == "Block.forward"
    assert forward_lines["program"]["program"] == "train.py" and forward_lines["program"]["args"] == ["12"]

    by_self = await execute(client, names.HOT_FUNCTIONS_COMMAND, {"sort": "self"})
    by_total = await execute(client, names.HOT_FUNCTIONS_COMMAND, {"sort": "total", "limit": 2})
    names_self = [f["qualname"] for f in by_self["functions"]]
    assert {"step", "loss_of", "Block.forward"} <= set(names_self)
    selfs = [f["self_device_us"] for f in by_self["functions"]]
    assert selfs == sorted(selfs, reverse=True)
    assert [f["qualname"] for f in by_total["functions"]][0] in ("step", "main") and len(by_total["functions"]) == 2
    forward = next(f for f in by_self["functions"] if f["qualname"] == "Block.forward")
    assert forward["uri"] == model_uri and forward["line"] == 10 and forward["title"].endswith(" self")
    assert forward["lines"] == forward_lines and by_self["device_label"] == "CPU" and by_self["per"] == "step"
    assert overview_run["overview"]["functions"][forward["index"]]["qualname"] == "Block.forward"

    # ▶ lines: the function captured line by line in the same program; its lines lens and hints come
    lines_reply = await execute(client, names.PROFILE_COMMAND, {**forward_lines, "skip": 1, "calls": 2})
    assert lines_reply["qualname"] == "Block.forward"
    run = client.results[-1]["run"]  # type: ignore[attr-defined]
    assert run["capture"]["calls_profiled"] == 2 and {ln["line"] for ln in run["lines"]} >= {11, 12, 13}
    after = await lenses(client, model_uri)
    titles = [lens.command.title for lens in after if lens.command]
    assert any(t.startswith("CPU ") and t.endswith("2 calls") for t in titles)  # the capture's totals lens
    assert set(overview_lenses(after)) == {9}  # the overview's lenses stay beside it

    # the overview's run does not take the step function's place: step's own lenses are the plain ones
    step_titles = [lens.command.title for lens in await lenses(client, steps_uri)
                   if lens.command and lens.range.start.line == 11]  # fmt: skip
    assert step_titles[0] == "▶ Profile" and len(step_titles) == 3

    # an overview by its run id (the results panel's, which may show an older one than the latest)
    by_id = await execute(client, names.HOT_FUNCTIONS_COMMAND, {"run_id": overview_run["run_id"]})
    assert by_id["run_id"] == overview_run["run_id"] and by_id["functions"] == by_self["functions"]
    with pytest.raises(JsonRpcException, match="is not a program overview on this host"):
        await execute(client, names.HOT_FUNCTIONS_COMMAND, {"run_id": run["run_id"]})


@pytest.mark.asyncio
async def test_overview_arguments(client: LanguageClient, workspace: Path) -> None:
    uri = (workspace / "pkg" / "steps.py").as_uri()
    with pytest.raises(JsonRpcException, match="give the program to run"):
        await execute(client, names.OVERVIEW_COMMAND, {"uri": uri, "qualname": "step"})
    with pytest.raises(JsonRpcException, match="sort must be 'self' or 'total'"):
        await execute(client, names.HOT_FUNCTIONS_COMMAND, {"sort": "wall"})
