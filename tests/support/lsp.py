"""A real LSP client speaking to `oplens serve`, and the helpers its tests share."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import make_test_lsp_client

from oplens.records import names


async def start_client(workspace: Path, *extra: str, python: str | None = None, env: dict[str, str] | None = None,
                       editor: str = "visual-studio-code", hint_threshold: float | None = 0,
                       **initialization_options: Any) -> LanguageClient:  # fmt: skip
    """A real LSP client of `python -m oplens serve --stdio EXTRA` (this interpreter's where `python` is None) in
    `workspace` (its one folder), as `editor` initializes it (pytest-lsp's capabilities of that editor), the
    server's environment `env` (else this one's).
    The `oplens/result` and `oplens/document` notifications are kept as plain dicts in `.results` and `.documents`
    (and, in order with their method, in `.notes`), the lens refreshes counted in `.lens_refreshes`, the
    initialize answer in `.initialized`. `hint_threshold` 0 (the default) hints every line that ran ops (shares
    vary with load); None leaves the setting to the server."""
    c = make_test_lsp_client()
    c.results, c.documents, c.notes, c.lens_refreshes = [], [], [], 0  # type: ignore[attr-defined]

    def keeper(method: str, kept: str) -> None:
        def keep(params: Any) -> None:
            note = plain(params)
            getattr(c, kept).append(note)
            c.notes.append((method, note))  # type: ignore[attr-defined]

        c.feature(method)(keep)

    keeper(names.RESULT_NOTIFICATION, "results")
    keeper(names.DOCUMENT_NOTIFICATION, "documents")

    @c.feature(lsp.WORKSPACE_CODE_LENS_REFRESH)
    def lens_refresh(params: Any) -> None:
        c.lens_refreshes += 1  # type: ignore[attr-defined]

    @c.feature(lsp.WORKSPACE_INLAY_HINT_REFRESH)
    def hint_refresh(params: Any) -> None:
        return None

    await c.start_io(python or sys.executable, "-m", "oplens", "serve", "--stdio", *extra, cwd=str(workspace), env=env)
    options = {**({"hintThreshold": hint_threshold} if hint_threshold is not None else {}), **initialization_options}
    c.initialized = await c.initialize_session(  # type: ignore[attr-defined]
        lsp.InitializeParams(
            capabilities=client_capabilities(editor),
            root_uri=workspace.as_uri(),
            workspace_folders=[lsp.WorkspaceFolder(uri=workspace.as_uri(), name="ws")],
            initialization_options=options or None,
        )
    )
    return c


@contextlib.asynccontextmanager
async def served_client(workspace: Path, editor: str = "visual-studio-code", python: str | None = None,
                        **initialization_options: Any) -> AsyncIterator[LanguageClient]:  # fmt: skip
    """`start_client` of `oplens serve --stdio --no-warm` with the server's own hint threshold and
    `initialization_options`; shut down on exit."""
    c = await start_client(workspace, "--no-warm", python=python, editor=editor, hint_threshold=None,
                           **initialization_options)
    try:
        yield c
    finally:
        await c.shutdown_session()


def open_doc(client: LanguageClient, path: Path) -> str:
    uri = path.as_uri()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=path.read_text())
        )
    )
    return uri


def plain(value: Any) -> Any:
    """pygls hands unknown JSON objects over as namedtuples: back to dicts and lists."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def edit(client: LanguageClient, uri: str, version: int, line: int, text: str) -> None:
    at = lsp.Position(line=line, character=0)
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[lsp.TextDocumentContentChangePartial(range=lsp.Range(start=at, end=at), text=text)],
        )
    )


async def lenses(client: LanguageClient, uri: str) -> list[str]:
    found = await client.text_document_code_lens_async(lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    return [lens.command.title for lens in found or [] if lens.command]


async def hints(client: LanguageClient, uri: str) -> list[lsp.InlayHint]:
    whole = lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=10_000, character=0))
    return list(
        await client.text_document_inlay_hint_async(
            lsp.InlayHintParams(text_document=lsp.TextDocumentIdentifier(uri=uri), range=whole)
        )
        or []
    )


async def run_command(client: LanguageClient, command: str, arg: dict[str, Any]) -> Any:
    return await client.workspace_execute_command_async(lsp.ExecuteCommandParams(command=command, arguments=[arg]))


def line_of(path: Path, text: str) -> int:
    """1-based line of the first line containing `text`."""
    return next(i for i, t in enumerate(path.read_text().splitlines(), 1) if text in t)
