"""One connected client's state: its settings and path mappings, what it waits for, and the
shared state it works on. The handlers (documents, profiling, results, backend commands) take it
as their first argument; nothing here handles a request itself.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from oplens.lsp import settings
from oplens.lsp.overview_views import ProgramArgs
from oplens.lsp.paths import PathMap
from oplens.lsp.settings import Settings
from oplens.lsp.shared import Listener, SharedState
from oplens.records.errors import OpLensError
from oplens.records.job import ProgramSpec
from oplens.records.overview import OverviewRun

SharedFor = Callable[[Path | None], SharedState]  # the client's root (None: unknown) → the shared state


class OpLensRequestError(JsonRpcException):
    """An LSP error response carrying the engine's error: kind, message, detail, location."""

    CODE = -32803  # RequestFailed


class ClientState:
    def __init__(self, ls: LanguageServer, shared_for: SharedFor) -> None:
        self.ls = ls
        self._shared_for = shared_for
        self._shared: SharedState | None = None
        self._listener: Listener | None = None
        self.settings = Settings()
        self.paths = PathMap()
        self.errors: dict[str, OpLensError] = {}  # host file → the user's last exception there
        self.cancels: dict[str, threading.Event] = {}  # progress token → cancel of a running profile
        self.closed = False  # the client has gone (a WebSocket connection ended) or shut down
        self.asking: set[asyncio.Future[Any]] = set()  # our requests the client has not answered yet

    @property
    def shared(self) -> SharedState:
        if self._shared is None:
            raise JsonRpcException("the server is not initialized yet")
        return self._shared

    def initialize(self, params: lsp.InitializeParams, listener: Listener) -> list[str]:
        """Take the client's settings and join the shared state; the warnings about bad settings."""
        self.settings, warnings = settings.parse(params.initialization_options)
        self.paths = PathMap(self.settings.path_mappings)
        root = None
        given = params.workspace_folders[0].uri if params.workspace_folders else params.root_uri
        if given and self.is_file(given):  # not a file folder (a virtual workspace): the server's own
            root = Path(self.host_path(given))
        self._shared = self._shared_for(root)
        warnings += settings.check_backend_options(self.settings, self._shared.workspace)
        self._listener = listener
        self._shared.listen(listener)
        return warnings

    def close(self) -> None:
        """The client has gone: stop listening, and stop waiting for its answers (pygls would wait
        forever), so that a profile it asked for still runs and is there when it comes back."""
        self.closed = True
        if self._shared is not None and self._listener is not None:
            self._shared.unlisten(self._listener)
        for asking in list(self.asking):
            asking.cancel()

    # ---- the client's paths -----------------------------------------------------------

    def host_path(self, uri: str) -> str:
        try:
            return self.paths.uri_to_host_path(uri)
        except ValueError as e:
            raise JsonRpcInvalidParams(str(e)) from None

    def uri(self, host_path: str) -> str:
        return self.paths.host_path_to_uri(host_path)

    def is_open(self, uri: str) -> bool:
        return uri in self.ls.workspace.text_documents

    def is_file(self, uri: str) -> bool:
        try:
            self.paths.uri_to_host_path(uri)
        except ValueError:
            return False
        return True

    # ---- telling the client -----------------------------------------------------------

    def notify(self, method: str, params: Any) -> None:
        self.ls.protocol.notify(method, params)

    def show(self, kind: lsp.MessageType, message: str) -> None:
        self.ls.window_show_message(lsp.ShowMessageParams(type=kind, message=message))

    def program_of(self, run: OverviewRun) -> ProgramArgs | None:
        """The program `run` was captured in, as `oplens.profile`'s `program` takes it in this client's paths
        (an overview's `▶ lines` runs it again): what this server ran (its environment too), else what the
        run recorded (`OverviewRun.capture`); None for neither."""
        spec = self.shared.programs.get(run.run_id)
        c = run.capture
        if spec is None and c is not None and c.program:
            module = c.program[3:] if c.program.startswith("-m ") else ""
            spec = ProgramSpec(program="" if module else c.program, module=module, args=list(c.argv), cwd=c.cwd)
        if spec is None:
            return None

        def local(path: str) -> str:  # a host path as the client names it (an absolute one through its mappings)
            return self.paths.to_local(path) if path.startswith("/") else path

        out: dict[str, Any] = {"module": spec.module} if spec.module else {"program": local(spec.program)}
        out["args"] = list(spec.args)
        if spec.cwd:
            out["cwd"] = local(spec.cwd)
        if spec.env:
            out["env"] = dict(spec.env)
        return ProgramArgs(out)

    def refresh(self) -> None:
        """Ask the client to re-request lenses and hints, where it announced it can."""
        caps = self.ls.client_capabilities.workspace
        if caps and caps.code_lens and caps.code_lens.refresh_support:
            self.ls.workspace_code_lens_refresh(None)
        if caps and caps.inlay_hint and caps.inlay_hint.refresh_support:
            self.ls.workspace_inlay_hint_refresh(None)

    def request_error(self, e: OpLensError) -> OpLensRequestError:
        """The engine's error as an LSP error response, its location also as the client's URI."""
        data = e.to_dict()
        if data["location"].get("file"):
            data["location"] = {**data["location"], "uri": self.uri(data["location"]["file"])}
        data["exit_code"] = e.exit_code
        return OpLensRequestError(e.message, data=data)
