"""A real LSP client speaking to `oplens serve` (pytest-lsp's), a raw framed JSON-RPC one (`Wire`: for what a
typed client cannot send), and the helpers their tests share."""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
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


# A raw connection: framed bytes out, framed JSON in.


def request(msg_id: int, method: str, params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}


def notification(method: str, params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def command(msg_id: int, name: str, *arguments: Any) -> dict[str, Any]:
    return request(msg_id, "workspace/executeCommand", {"command": name, "arguments": list(arguments)})


class Wire:
    """`python -m oplens serve --stdio --no-warm` in `cwd` over raw framed JSON-RPC: every message it sends is
    kept (`.seen`), its stderr written to `stderr` (else dropped)."""

    def __init__(self, cwd: Path, stderr: Path | None = None) -> None:
        self.log = stderr.open("wb") if stderr is not None else None
        self.proc = subprocess.Popen([sys.executable, "-m", "oplens", "serve", "--stdio", "--no-warm"], cwd=cwd,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log or subprocess.DEVNULL)  # fmt: skip
        self.inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self.next_id = 1000
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = 0
            while (line := out.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not line:
                return
            self.inbox.put(json.loads(out.read(length)))

    def send_raw(self, body: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(json.dumps(message).encode())

    def wait_for(self, match: Callable[[dict[str, Any]], bool], timeout: float = 60) -> dict[str, Any]:
        for message in self.seen:
            if match(message):
                return message
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

    def request(self, method: str, params: Any) -> dict[str, Any]:
        """`method` sent with the next id; its answer."""
        self.next_id += 1
        self.send(request(self.next_id, method, params))
        return self.answer(self.next_id)

    def initialize(self, root: str, options: Any = None, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {"processId": None, "rootUri": root, "capabilities": capabilities or {},
                                  "workspaceFolders": [{"uri": root, "name": "ws"}]}  # fmt: skip
        if options is not None:
            params["initializationOptions"] = options
        self.send(request(1, "initialize", params))
        result = self.answer(1)["result"]
        self.send(notification("initialized", {}))
        return result  # type: ignore[no-any-return]

    def open(self, uri: str, text: str) -> None:
        self.send(notification("textDocument/didOpen",
                               {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}))  # fmt: skip

    def close(self) -> int:
        self.send(request(999, "shutdown"))
        assert self.answer(999)["result"] is None
        self.send(notification("exit"))
        try:
            return self.proc.wait(20)
        finally:
            if self.log is not None:
                self.log.close()
