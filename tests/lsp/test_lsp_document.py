"""The `oplens/document` notification and `oplens.functions`, from the real server over stdio
(pytest-lsp): a file's functions and where its runs sit, after open, each change, a finished run
and a clear."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from oplens.records.names import (
    CLEAR_COMMAND,
    DOCUMENT_NOTIFICATION,
    FUNCTIONS_COMMAND,
    PROFILE_COMMAND,
    RESULT_NOTIFICATION,
)
from support.lsp import edit, plain, run_command, start_client

SOURCE = """\
import torch


def double(x):
    return x * 2


class Block:
    @staticmethod
    def forward(x, scale=2):
        y = x + 1
        return y * scale
"""
DOUBLE = {"qualname": "double", "name": "double", "firstLine": 4, "defLine": 4, "lastLine": 5,
          "signature": "double(x)", "params": "x", "requiredParams": 1, "inClass": False, "lens": True}
FORWARD = {"qualname": "Block.forward", "name": "forward", "firstLine": 9, "defLine": 10, "lastLine": 12,
           "signature": "Block.forward(x, scale=2)", "params": "x, scale=2", "requiredParams": 1, "inClass": True,
           "lens": True}


class Client:
    """A pytest-lsp client (support.lsp's) whose `oplens/*` notifications are read in order of arrival."""

    def __init__(self, lsp_client: LanguageClient) -> None:
        self.lsp = lsp_client
        self.notes: list[tuple[str, dict[str, Any]]] = lsp_client.notes  # type: ignore[attr-defined]

    def documents(self) -> list[dict[str, Any]]:
        return [params for method, params in self.notes if method == DOCUMENT_NOTIFICATION]

    async def document(self, match: Callable[[dict[str, Any]], bool], timeout: float = 60) -> dict[str, Any]:
        """The first `oplens/document` (kept so far or still to come) that matches."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [d for d in self.documents() if match(d)]
            if found:
                return found[0]
            await asyncio.sleep(0.05)
        raise AssertionError(f"no matching {DOCUMENT_NOTIFICATION} within {timeout} s; got {self.documents()}")


@pytest_asyncio.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    (tmp_path / "model.py").write_text(SOURCE)
    lsp_client = await start_client(tmp_path, hint_threshold=None)
    yield Client(lsp_client)
    await lsp_client.shutdown_session()


def open_source(client: Client, uri: str, text: str = SOURCE) -> None:
    client.lsp.text_document_did_open(
        lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
    )


def shifted(fn: dict[str, Any], by: int) -> dict[str, Any]:
    return {**fn, **{k: fn[k] + by for k in ("firstLine", "defLine", "lastLine")}}


async def test_document_after_open_change_run_and_clear(client: Client, tmp_path: Path) -> None:
    uri = (tmp_path / "model.py").as_uri()
    open_source(client, uri)
    opened = await client.document(lambda d: d["version"] == 1)
    assert opened == {"uri": uri, "version": 1, "parseError": None, "functions": [DOUBLE, FORWARD], "runs": []}

    reply = plain(await run_command(client.lsp, PROFILE_COMMAND, {"uri": uri, "qualname": "double",
                                                                  "args": "torch.ones(8)", "warmup": 1, "iters": 2}))
    ran = await client.document(lambda d: bool(d["runs"]))
    assert ran == {**opened, "runs": [{"runId": reply["run_id"], "qualname": "double", "state": "fresh", "shift": 0}]}
    methods = [m for m, params in client.notes if m == RESULT_NOTIFICATION or params.get("runs")]
    assert methods[:2] == [RESULT_NOTIFICATION, DOCUMENT_NOTIFICATION]  # the run is known before it is placed

    edit(client.lsp, uri, 2, 0, "# a comment\n# and another\n")  # the same text, two lines down
    moved = await client.document(lambda d: d["version"] == 2)
    assert moved["functions"] == [shifted(DOUBLE, 2), shifted(FORWARD, 2)]
    assert moved["runs"] == [{"runId": reply["run_id"], "qualname": "double", "state": "moved", "shift": 2}]

    edit(client.lsp, uri, 3, 7, "    x = x + 0\n")  # inside double: it is no longer what ran
    stale = await client.document(lambda d: d["version"] == 3)
    assert stale["runs"] == [{"runId": reply["run_id"], "qualname": "double", "state": "stale", "shift": 0}]
    assert stale["functions"][0]["lastLine"] == 8

    edit(client.lsp, uri, 4, 0, "def broken(:\n")
    broken = await client.document(lambda d: d["version"] == 4)
    assert broken["parseError"] == "line 1: invalid syntax" and broken["functions"] == [] and broken["runs"] == []
    assert plain(await run_command(client.lsp, FUNCTIONS_COMMAND, {"uri": uri})) == broken

    edit(client.lsp, uri, 5, 0, "# ")  # line 1 is a comment again
    fixed = await client.document(lambda d: d["version"] == 5)
    assert fixed["parseError"] is None and fixed["runs"][0]["state"] == "stale"

    before = len(client.documents())
    await run_command(client.lsp, CLEAR_COMMAND, {"uri": uri})
    cleared = await client.document(lambda d: client.documents().index(d) >= before)
    assert cleared == {**fixed, "runs": []}


async def test_functions_of_a_file_on_disk_and_of_an_open_buffer(client: Client, tmp_path: Path) -> None:
    disk = (tmp_path / "model.py").as_uri()
    answer = plain(await run_command(client.lsp, FUNCTIONS_COMMAND, {"uri": disk}))
    assert answer == {"uri": disk, "version": None, "parseError": None, "functions": [DOUBLE, FORWARD], "runs": []}

    unsaved = (tmp_path / "unsaved.py").as_uri()  # open in the editor, not on disk
    open_source(client, unsaved, "async def step(batch, /, *, lr=0.1):\n    pass\n")
    answer = plain(await run_command(client.lsp, FUNCTIONS_COMMAND, {"uri": unsaved}))
    (fn,) = answer["functions"]
    assert answer["version"] == 1
    assert fn == {"qualname": "step", "name": "step", "firstLine": 1, "defLine": 1, "lastLine": 2,
                  "signature": "step(batch, /, *, lr=0.1)", "params": "batch, /, *, lr=0.1", "requiredParams": 1,
                  "inClass": False, "lens": True}


@pytest.mark.parametrize(("arg", "needle"), [
    ({}, "uri is missing"),
    ({"uri": 5}, "uri must be a string"),
    ("model.py", "must be an object"),
    ({"uri": "file:///nowhere/at/all.py"}, "neither open nor a file"),
])
async def test_functions_refuses_bad_arguments(client: Client, arg: Any, needle: str) -> None:
    with pytest.raises(JsonRpcException) as e:
        await run_command(client.lsp, FUNCTIONS_COMMAND, arg)
    assert e.value.code == -32602 and needle in e.value.message
    assert e.value.message.startswith(f"{FUNCTIONS_COMMAND}")
