"""What a client sees of one document: code lenses, inlay hints, hovers, diagnostics, and the
`oplens/document` notification (the file's functions and where each run sits in its text).

`view` reads a document once (the open buffer, else the file on disk) and lays the shared runs over
it, each shown run with its diff against the function's previous run (`diffs.attach`); the handlers
turn that into LSP with `views`. The notification goes out after `didOpen`, after
each `didChange`, after a run of a function of the file finishes (to every client that has the file
open) and after `oplens.clear`, so that a client never parses Python itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams

from oplens.engine.targets import FunctionDef
from oplens.lsp import arguments, diffs, overview_views, views
from oplens.lsp.client import ClientState
from oplens.records.names import DOCUMENT_NOTIFICATION, FUNCTIONS_COMMAND


@dataclass(frozen=True)
class DocumentView:
    uri: str  # as the client names it
    path: str  # on the host
    text: str
    version: int | None  # the open buffer's version; None: the file on disk
    functions: list[FunctionDef]
    parse_error: str | None  # "line 3: invalid syntax" while the text does not parse
    placed: list[views.Placed]


def view(client: ClientState, uri: str) -> DocumentView:
    path = client.host_path(uri)
    doc = client.ls.workspace.get_text_document(uri)
    try:
        text = doc.source
    except (OSError, UnicodeDecodeError):
        text = ""
    functions, parse_error = views.parse_functions(text, path)
    placed = diffs.attach(client, views.place(client.shared.results.for_file(path), text, functions))
    return DocumentView(uri, path, text, doc.version, functions, parse_error, placed)


def code_lenses(client: ClientState, params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
    v = view(client, params.text_document.uri)
    lenses = views.code_lenses(v.uri, v.text, v.functions, v.placed)
    overview = client.shared.results.shown_overview()  # the latest program overview's, on the functions it saw
    if overview is not None and overview.overview is not None:
        lenses += overview_views.code_lenses(overview, v.uri, v.path, v.functions, client.program_of(overview))
    return lenses


def inlay_hints(client: ClientState, params: lsp.InlayHintParams) -> list[lsp.InlayHint]:
    v = view(client, params.text_document.uri)
    r = params.range
    return views.inlay_hints(v.text, v.placed, client.settings.hint_threshold, r.start.line + 1, r.end.line + 1)


def hover(client: ClientState, params: lsp.HoverParams) -> lsp.Hover | None:
    return views.hover(view(client, params.text_document.uri).placed, params.position.line + 1)


def functions(client: ClientState, arg: Any) -> dict[str, Any]:
    """`oplens.functions {uri}`: what `oplens/document` says of the file, for a picker that needs it now."""
    uri = arguments.parse(FUNCTIONS_COMMAND, arg, arguments.UriArgs, arguments.URI_SHAPE).uri
    if not client.is_open(uri) and not Path(client.host_path(uri)).is_file():
        raise JsonRpcInvalidParams(f"{FUNCTIONS_COMMAND}: {client.host_path(uri)} is neither open nor a file")
    return _document(view(client, uri))


def publish(client: ClientState, uri: str) -> None:
    """Send the document's diagnostics and its `oplens/document` notification (none for a buffer
    that is not a file, e.g. `untitled:`: nothing there can be profiled)."""
    if not client.is_file(uri):
        return
    v = view(client, uri)
    found = views.diagnostics(v.placed, client.errors.get(v.path), v.path)
    client.ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=found))
    client.notify(DOCUMENT_NOTIFICATION, _document(v))


def redraw(client: ClientState, file: str | None = None) -> None:
    """Publish again every document the client has open (of `file` only, when given)."""
    for uri in list(client.ls.workspace.text_documents):
        if client.is_file(uri) and (file is None or _same(client.host_path(uri), file)):
            publish(client, uri)


def _document(v: DocumentView) -> dict[str, Any]:
    return views.document(v.uri, v.version, v.parse_error, v.functions, v.placed)


def _same(a: str, b: str) -> bool:
    return a == b or Path(a).resolve() == Path(b).resolve()
