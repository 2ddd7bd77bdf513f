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
from oplens.lsp import arguments, cells, diffs, overview_views, views
from oplens.lsp.client import ClientState
from oplens.lsp.paths import notebook_of_cell
from oplens.records.names import DOCUMENT_NOTIFICATION, FUNCTIONS_COMMAND, RESULT_NOTIFICATION
from oplens.records.overview import AnyRun
from oplens.records.run import Run


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
    path = client.host_path(uri)  # a notebook cell's: its notebook's
    text, version = _text(client, uri)
    if cells.is_cell(uri):
        client.shared.watch_notebook(path)  # the kernel writes its runs beside the notebook: read them first
        functions, parse_error = cells.functions(text, path)
        shown = [r for r in client.shared.results.for_file(path) if not _in_other_cell(client, uri, text, functions, r)]
    else:
        functions, parse_error = views.parse_functions(text, path)
        shown = client.shared.results.for_file(path)
    placed = diffs.attach(client, views.place(shown, text, functions))
    return DocumentView(uri, path, text, version, functions, parse_error, placed)


def _text(client: ClientState, uri: str) -> tuple[str, int | None]:
    doc = client.ls.workspace.get_text_document(uri)
    try:
        return doc.source, doc.version
    except (OSError, UnicodeDecodeError):
        return "", doc.version


def _in_other_cell(client: ClientState, uri: str, text: str, functions: list[FunctionDef], run: Run) -> bool:
    """Whether `run`'s function, as profiled, is another open cell's of the notebook and not this one's: it
    is shown there (where no cell has it, it is shown stale on each cell that defines its name)."""
    t = run.target
    if cells.defines(text, functions, t.qualname, t.source_sha256):
        return False
    notebook = notebook_of_cell(uri)
    for other in list(client.ls.workspace.text_documents):
        if other != uri and cells.is_cell(other) and notebook_of_cell(other) == notebook:
            other_text, _ = _text(client, other)
            if cells.defines(other_text, cells.functions(other_text, t.file)[0], t.qualname, t.source_sha256):
                return True
    return False


def code_lenses(client: ClientState, params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
    v = view(client, params.text_document.uri)
    mode = client.settings.lenses
    lenses = views.code_lenses(v.uri, v.text, v.functions, v.placed, mode)
    overview = client.shared.results.shown_overview()  # the latest program overview's, on the functions it saw
    if overview is not None and mode != "off":
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
    return _document(client, view(client, uri))


def publish(client: ClientState, uri: str, new_run: str = "") -> None:
    """Send the document's diagnostics and its `oplens/document` notification (none for a buffer
    that is not a file, e.g. `untitled:`: nothing there can be profiled). `new_run`, a run that just
    finished: where it is a notebook kernel's, placed on this cell, it goes to the client as `oplens/result`
    with the cell's URI, to be shown as if the client had asked for it (it did not: the kernel made it)."""
    if not client.is_file(uri):
        return
    v = view(client, uri)
    found = views.diagnostics(v.placed, client.errors.get(v.path), v.path)
    client.ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=found))
    client.notify(DOCUMENT_NOTIFICATION, _document(client, v))
    if new_run and cells.is_cell(uri):
        for p in v.placed:
            if p.fresh and p.run.run_id == new_run:
                client.notify(RESULT_NOTIFICATION, views.result_params(uri, p.run, reveal=True))


def shown_on(client: ClientState, run: AnyRun) -> str:
    """The URI `run` is shown on in this client: a notebook kernel's run, the open cell where its function is as
    profiled (else its notebook's); any other run, its file."""
    if run.target.notebook:
        for uri in list(client.ls.workspace.text_documents):
            if cells.is_cell(uri) and _same(client.host_path(uri), run.target.notebook):
                if any(p.fresh and p.run.run_id == run.run_id for p in view(client, uri).placed):
                    return str(uri)
    return client.uri(run.target.home())


def redraw(client: ClientState, file: str | None = None, new_run: str = "") -> None:
    """Publish again every document the client has open (of `file` only, when given)."""
    for uri in list(client.ls.workspace.text_documents):
        if client.is_file(uri) and (file is None or _same(client.host_path(uri), file)):
            publish(client, uri, new_run)


def _document(client: ClientState, v: DocumentView) -> dict[str, Any]:
    return views.document(v.uri, v.version, v.parse_error, v.functions, v.placed, client.settings.lenses)


def _same(a: str, b: str) -> bool:
    return a == b or Path(a).resolve() == Path(b).resolve()
