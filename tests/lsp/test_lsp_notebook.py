"""A notebook open in the editor, its cells as VS Code opens them (one text document per cell, a
`vscode-notebook-cell:` URI naming the notebook), and a real kernel running `%oplens` on a function a cell
defines: the real server over a real LSP client shows the run on that cell (lenses, hints, hovers, the run
sent with the cell's URI and marked to be shown), whether the run was there before the notebook opened or
the kernel writes it while the notebook is open; stale once the cell is edited; a `%%oplens` cell's run on
that cell; a notebook in a folder of its own reads the runs beside it."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from oplens.lsp import cells
from oplens.lsp.paths import Mapping, PathMap
from oplens.records import names
from support.kernel import Kernel
from support.lsp import open_doc, plain, served_client

MODEL_CELL = """\
import torch

def scale_shift(x, w):
    y = x * w
    z = y + 1.0
    return torch.relu(z)

x, w = torch.randn(64, 256), torch.randn(256)"""
CALL_CELL = "%load_ext oplens\n%oplens --iters 5 --warmup 1 scale_shift(x, w)"
PROFILED_CELL = "%%oplens --iters 5 --warmup 1\na = x * 2.0\nb = a.sum()"


def notebook(folder: Path, cells: list[str]) -> Path:
    """An .ipynb of these code cells (nbformat 4, as Jupyter writes one)."""
    path = folder / "analysis.ipynb"
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"language_info": {"name": "python"}},
          "cells": [{"cell_type": "code", "id": f"c{i}", "metadata": {}, "execution_count": None, "outputs": [],
                     "source": text} for i, text in enumerate(cells)]}  # fmt: skip
    path.write_text(json.dumps(nb))
    return path


def cell_uri(nb: Path, index: int) -> str:
    """A cell's URI as VS Code writes it: the notebook's path, the cell in the fragment (code-server's, seen in
    the e2e, also carries the window's address as its authority)."""
    authority = "//127.0.0.1:8080" if index % 2 else ""
    return f"vscode-notebook-cell:{authority}{nb}#W{index}sZmlsZQ%3D%3D"


def sent_to(client: LanguageClient, uri: str) -> list[dict[str, Any]]:
    """The `oplens/result` notifications for the cell `uri` (the server writes the URI as pygls normalizes it)."""
    return [r for r in client.results if unquote(r["uri"]) == unquote(uri)]  # type: ignore[attr-defined]


def open_cell(client: LanguageClient, uri: str, text: str) -> None:
    item = lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=item))


def edit_cell(client: LanguageClient, uri: str, text: str, version: int) -> None:
    change = lsp.TextDocumentContentChangeWholeDocument(text=text)
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version), content_changes=[change]))  # fmt: skip


async def lens_titles(client: LanguageClient, uri: str) -> list[tuple[int, str]]:
    lenses = await client.text_document_code_lens_async(lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri)))
    return [(c.range.start.line + 1, c.command.title) for c in lenses or [] if c.command]


async def hints(client: LanguageClient, uri: str) -> dict[int, str]:
    whole = lsp.Range(lsp.Position(0, 0), lsp.Position(99, 0))
    params = lsp.InlayHintParams(text_document=lsp.TextDocumentIdentifier(uri), range=whole)
    found = await client.text_document_inlay_hint_async(params)
    return {h.position.line + 1: h.label if isinstance(h.label, str) else "".join(p.value for p in h.label) for h in found or []}


async def until(check: Any, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        await asyncio.sleep(0.2)
    raise AssertionError(f"not within {timeout} s")


@pytest.fixture(scope="module")
def kernel_in(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Kernel, Path]]:
    """A kernel in a notebook's folder, a folder of the workspace (its runs beside it, not the server's)."""
    workspace = tmp_path_factory.mktemp("ws")
    folder = workspace / "notebooks"
    folder.mkdir()
    k = Kernel(folder)
    try:
        yield k, workspace
    finally:
        k.close()


async def test_the_kernels_run_is_shown_on_the_cell_that_defines_the_function(kernel_in: tuple[Kernel, Path]) -> None:
    k, workspace = kernel_in
    nb = notebook(workspace / "notebooks", [MODEL_CELL, CALL_CELL, PROFILED_CELL])
    async with served_client(workspace) as client:
        model, call, profiled = (cell_uri(nb, i) for i in range(3))
        for uri, text in ((model, MODEL_CELL), (call, CALL_CELL), (profiled, PROFILED_CELL)):
            open_cell(client, uri, text)
        # before any run: the cell's function has its ▶ Profile lens, on its def line; the magic lines are not Python
        assert await lens_titles(client, model) == [(3, "▶ Profile")]
        assert await lens_titles(client, call) == []

        # the kernel runs the cells, as the notebook's Run All does; the server finds the magic's run as it appears
        assert (await asyncio.to_thread(k.run, MODEL_CELL))["error"] is None
        out = await asyncio.to_thread(k.run, CALL_CELL)
        assert out["error"] is None, out["error"]
        sent = await until(lambda: sent_to(client, model))
        assert sent[0]["reveal"] is True and sent[0]["run"]["target"]["qualname"] == "scale_shift"
        assert sent[0]["run"]["target"]["notebook"] == str(nb)
        assert (workspace / "notebooks" / ".oplens" / "runs" / sent[0]["run"]["run_id"]).is_dir()  # beside the notebook
        titles = await lens_titles(client, model)
        assert titles[0] == (3, "▶ Profile") and titles[1][0] == 3 and titles[1][1].startswith("CPU ")
        shown = await hints(client, model)
        assert set(shown) == {4, 5, 6}, shown  # the body's lines, as the cell numbers them
        hover = await client.text_document_hover_async(
            lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(model), position=lsp.Position(3, 8)))  # fmt: skip
        assert hover is not None and "aten::mul" in str(hover.contents)
        assert await lens_titles(client, call) == []  # the call's cell shows nothing of it

        # the cell edited: its lens says stale, its hints are gone
        edited = MODEL_CELL.replace("y = x * w", "y = x * w * 2.0")
        edit_cell(client, model, edited, 2)
        titles = await lens_titles(client, model)
        assert titles[1][1].startswith("stale: "), titles
        assert await hints(client, model) == {}

        # a %%oplens cell: its own run, on it (no ▶ Profile: the cell profiles itself when it runs)
        out = await asyncio.to_thread(k.run, PROFILED_CELL)
        assert out["error"] is None, out["error"]
        await until(lambda: sent_to(client, profiled))
        titles = await lens_titles(client, profiled)
        assert len(titles) == 1 and titles[0][0] == 1 and titles[0][1].startswith("CPU "), titles
        assert set(await hints(client, profiled)) <= {2, 3} and await hints(client, profiled)

    # a new session, the notebook opened after the runs were written: shown from the start; asked for (as the
    # extension asks for a run a document names), the run comes with the URI of the cell it is shown on
    async with served_client(workspace) as client:
        open_cell(client, cell_uri(nb, 0), MODEL_CELL)
        open_cell(client, cell_uri(nb, 5), MODEL_CELL.replace("x, w = ", "x2, w2 = "))  # another cell, same function
        titles = await lens_titles(client, cell_uri(nb, 0))
        assert titles[1][1].startswith("CPU "), titles
        (placed,) = [d for d in client.documents if unquote(d["uri"]) == unquote(cell_uri(nb, 0))][-1]["runs"]  # type: ignore[attr-defined]
        asked = lsp.ExecuteCommandParams(command=names.SHOW_RUN_COMMAND, arguments=[{"run_id": placed["runId"]}])
        answer = plain(await client.workspace_execute_command_async(asked))
        assert unquote(answer["uri"]) in (unquote(cell_uri(nb, 0)), unquote(cell_uri(nb, 5))) and "reveal" not in answer
        # the same function text in two cells: both show it, fresh
        assert (await lens_titles(client, cell_uri(nb, 5)))[1][1].startswith("CPU ")


def test_the_magic_names_the_notebook_as_the_front_end_tells_the_kernel(kernel_in: tuple[Kernel, Path]) -> None:
    k, workspace = kernel_in
    other = workspace / "notebooks" / "second.ipynb"
    other.write_text("{}")
    try:  # two notebooks in the folder: the kernel cannot guess; VS Code's Jupyter extension tells it
        k.run(MODEL_CELL)
        runs = _runs(workspace)
        assert k.run("%load_ext oplens\n%oplens --iters 2 --warmup 1 scale_shift(x, w)")["error"] is None
        assert _newest(workspace, runs)["target"]["notebook"] == ""
        runs = _runs(workspace)
        assert k.run(f"__vsc_ipynb_file__ = {str(other)!r}\n%oplens --iters 2 --warmup 1 scale_shift(x, w)")["error"] is None
        assert _newest(workspace, runs)["target"]["notebook"] == str(other)
        runs = _runs(workspace)
        # a function of a file: its run is the file's (shown there), whatever the notebook
        (workspace / "notebooks" / "helpers.py").write_text("def double(t):\n    return t * 2\n")
        out = k.run("from helpers import double\n%oplens --iters 2 --warmup 1 double(x)")
        assert out["error"] is None, out
        made = _newest(workspace, runs)
        assert made["target"]["notebook"] == "" and made["target"]["file"].endswith("helpers.py")
    finally:
        other.unlink()
        k.run("del __vsc_ipynb_file__")


async def test_a_kernels_run_of_a_function_from_a_file_shows_in_that_file(kernel_in: tuple[Kernel, Path]) -> None:
    k, workspace = kernel_in
    folder = workspace / "notebooks"
    module = folder / "scaling.py"
    module.write_text("import torch\n\n\ndef halve(t):\n    return torch.mul(t, 0.5)\n")
    nb = notebook(folder, [MODEL_CELL, CALL_CELL])
    async with served_client(workspace) as client:
        open_cell(client, cell_uri(nb, 0), MODEL_CELL)  # the notebook open: its runs folder watched
        uri = open_doc(client, module)
        assert await lens_titles(client, uri) == [(4, "▶ Profile")]
        out = await asyncio.to_thread(k.run, "%load_ext oplens\nfrom scaling import halve\n%oplens --iters 3 --warmup 1 halve(x)")
        assert out["error"] is None, out["error"]
        deadline, titles = time.monotonic() + 60, []
        while len(titles) < 2 and time.monotonic() < deadline:  # the watch finds the run within a second or so
            await asyncio.sleep(0.3)
            titles = await lens_titles(client, uri)
        assert len(titles) == 2 and titles[1][0] == 4 and titles[1][1].startswith("CPU "), titles


def _runs(workspace: Path) -> set[str]:
    return {p.name for p in (workspace / "notebooks" / ".oplens" / "runs").iterdir() if (p / "result.json").is_file()}


def _newest(workspace: Path, before: set[str]) -> dict[str, Any]:
    (new,) = _runs(workspace) - before
    return json.loads((workspace / "notebooks" / ".oplens" / "runs" / new / "result.json").read_text())  # type: ignore[no-any-return]


def test_a_cell_is_python_line_for_line_and_its_uri_names_the_notebook_on_the_host() -> None:
    text = "%load_ext oplens\nimport torch\n  !nvidia-smi\ndef f(x):\n    return x\n%time f(1)"
    assert cells.python_text(text).split("\n") == ["", "import torch", "", "def f(x):", "    return x", ""]
    assert cells.python_text("%%timeit\nf(1)\nf(2)") == "\n\n"  # another cell magic's cell is not Python
    assert cells.python_text("%%oplens --iters 5\ny = f(1)") == "\ny = f(1)"
    profiled = cells.cell_function("%%oplens\na = 1\nb = 2")
    assert profiled is not None and (profiled.qualname, profiled.first_line, profiled.last_line) == ("<cell>", 1, 3)
    assert cells.cell_function("a = 1\n%%oplens") is None
    mapped = PathMap([Mapping(local="/Users/me/proj", host="/home/u/proj")])
    for uri in ("vscode-notebook-cell:/Users/me/proj/nb.ipynb#W0sZmlsZQ%3D%3D",
                "vscode-notebook-cell://127.0.0.1:8080/Users/me/proj/nb.ipynb#W3sZmlsZQ%3D%3D"):  # fmt: skip
        assert mapped.uri_to_host_path(uri) == "/home/u/proj/nb.ipynb"
