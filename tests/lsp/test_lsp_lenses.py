"""The `lenses` setting, from the real server over stdio: `all` puts `▶ Profile` on every function,
`profiled` only on the functions with a run shown (with their totals), `off` none; `oplens/document`
says the same of each function (`lens`, what the extension's own `▶ Profile in Program…` follows).
Hints and hovers are not lenses: every mode keeps them. One run, profiled by the CLI beforehand, is
what each server loads from the runs directory at its start."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from oplens.records.names import PROFILE_COMMAND, SHOW_RUN_COMMAND
from support.cli import oplens_cli
from support.lsp import hints, open_doc, served_client

SOURCE = """\
import torch


def scaled(x):
    y = x * 2
    return y + 1


def untouched(x):
    return x - 1
"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("lenses")
    (ws / "m.py").write_text(SOURCE)
    proc = oplens_cli(ws, "profile", "m.py::scaled", "--args", "torch.ones(8)", "--warmup", "0", "--iters", "2")
    assert proc.returncode == 0, proc.stderr
    return ws


async def lens_rows(client: LanguageClient, uri: str) -> dict[int, list[str]]:
    """Each lensed line (1-based) and its lenses' commands: `profile`, `show` (the totals)."""
    found = await client.text_document_code_lens_async(lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    rows: dict[int, list[str]] = {}
    for lens in found or []:
        assert lens.command is not None
        kind = {PROFILE_COMMAND: "profile", SHOW_RUN_COMMAND: "show"}[lens.command.command]
        rows.setdefault(lens.range.start.line + 1, []).append(kind)
    return rows


async def document(client: Any, uri: str, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [d for d in client.documents if d["uri"] == uri]
        if found:
            return dict(found[-1])
        await asyncio.sleep(0.05)
    raise AssertionError(f"no oplens/document for {uri} within {timeout} s")


SCALED, UNTOUCHED = 4, 9  # their def lines in SOURCE
EXPECTED = {
    "": ({SCALED: ["profile", "show"], UNTOUCHED: ["profile"]}, [True, True]),  # not set: all
    "all": ({SCALED: ["profile", "show"], UNTOUCHED: ["profile"]}, [True, True]),
    "profiled": ({SCALED: ["profile", "show"]}, [True, False]),
    "off": ({}, [False, False]),
}


@pytest.mark.parametrize("mode", EXPECTED)
async def test_the_lenses_setting_picks_the_functions_with_lenses(workspace: Path, mode: str) -> None:
    rows, flags = EXPECTED[mode]
    settings = {"lenses": mode} if mode else {}
    async with served_client(workspace, hintThreshold=0, **settings) as client:
        uri = open_doc(client, workspace / "m.py")
        doc = await document(client, uri)
        assert [r["qualname"] for r in doc["runs"]] == ["scaled"]  # the CLI's run, loaded at the start
        assert [(f["qualname"], f["lens"]) for f in doc["functions"]] == list(zip(["scaled", "untouched"], flags, strict=True))
        assert await lens_rows(client, uri) == rows
        assert await hints(client, uri), "a run's hints are not lenses: every mode keeps them"
