"""The OpLens language server: a thin LSP layer over the engine.

Each connection gets its own `LanguageServer` (a `Session` of state beside it) over one shared
`Host`. Handlers are short: params → host/engine → `views` converters. Results reach every
client as standard LSP (lenses, inlay hints, hovers, diagnostics, progress) plus one custom
notification, `oplens/result`, carrying the whole `result.json` object.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from oplens import __version__
from oplens.backends import registry
from oplens.backends.spec import BackendCommand, CommandContext
from oplens.engine import BACKENDS, DEFAULT_ITERS, DEFAULT_TIMEOUT_S, DEFAULT_WARMUP, ProfileRequest, runs
from oplens.engine.compare import compare_rows
from oplens.lsp import views
from oplens.lsp.host import Host
from oplens.lsp.paths import PathMap
from oplens.lsp.protocol import OpLensProtocol
from oplens.records.errors import OpLensError
from oplens.records.job import TargetSpec
from oplens.records.run import Run

log = logging.getLogger(__name__)
RESULT_NOTIFICATION = "oplens/result"
DEFAULT_HINT_THRESHOLD = 1.0  # % of device time below which a line gets no inlay hint


class OpLensRequestError(JsonRpcException):
    """An LSP error response carrying the engine's error: kind, message, detail, location."""

    CODE = -32803  # RequestFailed


def request_error(e: OpLensError, paths: PathMap) -> OpLensRequestError:
    """The engine's error as an LSP error response, its location also as the client's URI."""
    data = e.to_dict()
    if data["location"].get("file"):
        data["location"] = {**data["location"], "uri": paths.host_path_to_uri(data["location"]["file"])}
    data["exit_code"] = e.exit_code
    return OpLensRequestError(e.message, data=data)


class Session:
    """One client's settings and state."""

    def __init__(self, ls: LanguageServer, host_for: Callable[[Path | None], Host]) -> None:
        self.ls = ls
        self._host_for = host_for
        self.host: Host | None = None
        self.paths = PathMap()
        self.hint_threshold = DEFAULT_HINT_THRESHOLD
        self.defaults: dict[str, Any] = {}
        self.errors: dict[str, OpLensError] = {}  # host file → last user exception there
        self.cancels: dict[str, threading.Event] = {}  # progress token → cancel
        self.backend_settings: dict[str, dict[str, Any]] = {}  # raw options per backend name
        self.command_settings: dict[str, dict[str, Any]] = {}  # per backend command's settings key
        self.closed = False  # the client has gone (a WebSocket connection ended) or shut down
        self.asking: set[asyncio.Future[Any]] = set()  # our requests the client has not answered yet

    def require_host(self) -> Host:
        if self.host is None:
            raise JsonRpcException("the server is not initialized yet")
        return self.host

    def initialize(self, params: lsp.InitializeParams) -> None:
        opts = params.initialization_options if isinstance(params.initialization_options, dict) else {}
        try:
            self.paths = PathMap.parse(opts.get("pathMappings"))
        except ValueError as e:
            self.show(lsp.MessageType.Warning, f"OpLens: {e}; path mappings ignored")
        self.hint_threshold = _number(opts.get("hintThreshold"), DEFAULT_HINT_THRESHOLD)
        self.defaults = {k: opts[k] for k in ("backend", "warmup", "iterations", "timeoutSeconds") if k in opts}
        for name in registry.SPECS:  # each backend's options under its name, e.g. {"neuron": {"modes": ...}}
            if isinstance(opts.get(name), dict):
                self.backend_settings[name] = {_snake(k): v for k, v in opts[name].items()}
        for _, cmd in registry.commands():
            if isinstance(opts.get(cmd.settings_key), dict):
                self.command_settings[cmd.settings_key] = opts[cmd.settings_key]
        root = None
        if params.workspace_folders:
            root = Path(self.paths.uri_to_host_path(params.workspace_folders[0].uri))
        elif params.root_uri:
            root = Path(self.paths.uri_to_host_path(params.root_uri))
        self.host = self._host_for(root)
        if self.on_result not in self.host.listeners:  # a second initialize must not listen twice
            self.host.listeners.append(self.on_result)

    def close(self) -> None:
        """The client has gone: stop listening, and stop waiting for its answers (pygls would wait
        forever), so that a profile it asked for still runs and is there when it comes back."""
        self.closed = True
        if self.host is not None and self.on_result in self.host.listeners:
            self.host.listeners.remove(self.on_result)
        for asking in list(self.asking):
            asking.cancel()

    # ---- drawing ----------------------------------------------------------------------

    def document(self, uri: str) -> tuple[str, str]:
        """(host path, current text) of a document: the open buffer, else the file on disk."""
        try:
            path = self.paths.uri_to_host_path(uri)
        except ValueError as e:
            raise JsonRpcInvalidParams(str(e)) from None
        doc = self.ls.workspace.get_text_document(uri)
        try:
            text = doc.source
        except (OSError, UnicodeDecodeError):
            text = ""
        return path, text

    def placed(self, uri: str) -> tuple[str, list[views.Placed], list[Any]]:
        path, text = self.document(uri)
        functions = views.functions_in(text, path)
        host = self.require_host()
        return text, views.place(host.results.for_file(path), text, functions), functions

    def on_result(self, run: Run) -> None:
        """A run finished (in any session): redraw what this client shows. The file ran cleanly,
        so an earlier exception there is no longer news."""
        self.errors.pop(run.target.file, None)
        self.refresh()
        self.publish_diagnostics_for(run.target.file)

    def refresh(self) -> None:
        """Ask the client to re-request lenses and hints, where it announced it can."""
        caps = self.ls.client_capabilities.workspace
        if caps and caps.code_lens and caps.code_lens.refresh_support:
            self.ls.workspace_code_lens_refresh(None)
        if caps and caps.inlay_hint and caps.inlay_hint.refresh_support:
            self.ls.workspace_inlay_hint_refresh(None)

    def publish_diagnostics_for(self, file: str) -> None:
        uri = self.paths.host_path_to_uri(file)
        if uri not in self.ls.workspace.text_documents:
            return
        _, placed, _ = self.placed(uri)
        found = views.diagnostics(placed, self.errors.get(file), file)
        self.ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=found))

    def show(self, kind: lsp.MessageType, message: str) -> None:
        self.ls.window_show_message(lsp.ShowMessageParams(type=kind, message=message))

    # ---- commands ---------------------------------------------------------------------

    def request(self, arg: Any) -> ProfileRequest:
        """A ProfileRequest from the command's object argument, checked field by field."""
        if not isinstance(arg, dict) or not isinstance(arg.get("uri"), str):
            raise JsonRpcInvalidParams(
                "oplens.profile takes one object {uri, qualname or line, args?, backend?, warmup?, iters?}"
            )
        host = self.require_host()
        path = Path(self.paths.uri_to_host_path(arg["uri"])).resolve()
        if not path.is_relative_to(host.workspace):
            raise JsonRpcInvalidParams(f"{path} is outside the workspace {host.workspace}; OpLens profiles only workspace files")
        if isinstance(arg.get("qualname"), str) and arg["qualname"]:
            target = TargetSpec(str(path), qualname=arg["qualname"])
        elif isinstance(arg.get("line"), int) and not isinstance(arg.get("line"), bool):
            target = TargetSpec(str(path), line=arg["line"] + 1)  # LSP lines are 0-based
        else:
            raise JsonRpcInvalidParams("give the function as qualname (e.g. 'Block.forward') or line (0-based)")
        merged = {**self.defaults, **arg}
        backend = merged.get("backend", "cpu")
        if backend not in BACKENDS:
            raise JsonRpcInvalidParams(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
        args = merged.get("args", "")
        if not isinstance(args, str):
            raise JsonRpcInvalidParams("args must be a string: the Python expression of the positional arguments")
        return ProfileRequest(
            target=target,
            args=args,
            backend=backend,
            warmup=_int(merged.get("warmup"), DEFAULT_WARMUP, "warmup"),
            iters=_int(merged.get("iters", merged.get("iterations")), DEFAULT_ITERS, "iters"),
            timeout_s=_number(merged.get("timeoutSeconds"), DEFAULT_TIMEOUT_S),
            workspace=host.workspace,
            out=str(host.root),
            backend_options=self.backend_options(backend, host.workspace),
        )

    def backend_options(self, backend: str, workspace: Path) -> dict[str, Any]:
        try:
            return registry.parse_options(backend, self.backend_settings, workspace)
        except OpLensError as e:
            raise request_error(e, self.paths) from None

    async def profile(self, arg: Any) -> dict[str, Any]:
        req = self.request(arg)
        host = self.require_host()
        file = req.target.file
        token = str(uuid.uuid4())
        cancel = threading.Event()
        self.cancels[token] = cancel
        progress = await self._progress(token, str(req.target).rsplit("/", 1)[-1])
        try:
            run = await host.profile(req, progress, cancel)
        except OpLensError as e:
            self._end_progress(token, e.message)
            if e.kind == "user_exception":
                self.errors[e.location.get("file", file)] = e
                self.publish_diagnostics_for(e.location.get("file", file))
            raise request_error(e, self.paths) from None
        except asyncio.CancelledError:
            cancel.set()
            self._end_progress(token, "cancelled")
            raise
        finally:
            self.cancels.pop(token, None)
        self._end_progress(token, views.totals_title(run))  # diagnostics: on_result, as for every session
        payload = self.result_payload(run)
        self.ls.protocol.notify(RESULT_NOTIFICATION, payload)
        return {"run_id": run.run_id, "uri": payload["uri"], "qualname": run.target.qualname, "title": views.totals_title(run)}

    def result_payload(self, run: Run) -> dict[str, Any]:
        return {"uri": self.paths.host_path_to_uri(run.target.file), "run": run.to_dict()}

    async def _progress(self, token: str, title: str) -> Callable[[str, int, int], None]:
        """A thread-safe progress callback: `$/progress` where the client supports it."""
        window = self.ls.client_capabilities.window
        if not (window and window.work_done_progress):
            return lambda stage, done, total: None
        asking = asyncio.ensure_future(self.ls.work_done_progress.create_async(token))
        self.asking.add(asking)
        try:
            await asking
        except asyncio.CancelledError:
            if not self.closed:
                raise
            return lambda stage, done, total: None  # the client left while asked for the token: run anyway
        finally:
            self.asking.discard(asking)
        self.ls.work_done_progress.begin(
            token, lsp.WorkDoneProgressBegin(title=f"OpLens: {title}", cancellable=True, message="starting", percentage=0)
        )
        loop = asyncio.get_running_loop()
        stages = {"queued": "queued", "importing": "importing", "warmup": "warm-up", "profile": "iteration",
                  "processing": "attributing"}

        def report(stage: str, done: int, total: int) -> None:
            if stage == "queued":
                message = f"waiting for the device: {done} job(s) ahead"
            else:
                message = f"{stages.get(stage, stage)} {done}/{total}" if total > 1 else stages.get(stage, stage)
            pct = {"importing": 2, "warmup": 5 + int(25 * done / max(total, 1)),
                   "profile": 30 + int(65 * done / max(total, 1)), "processing": 97}.get(stage, 0)
            value = lsp.WorkDoneProgressReport(message=message, percentage=pct, cancellable=True)
            loop.call_soon_threadsafe(self.ls.work_done_progress.report, token, value)

        return report

    def _end_progress(self, token: str, message: str) -> None:
        progress = self.ls.work_done_progress
        if token in progress.tokens:
            progress.end(token, lsp.WorkDoneProgressEnd(message=message))
            progress.tokens.pop(token, None)  # pygls keeps ended tokens forever otherwise

    async def compare(self, arg: Any) -> dict[str, Any]:
        if not isinstance(arg, dict) or not isinstance(arg.get("targets"), list) or len(arg["targets"]) < 2:
            raise JsonRpcInvalidParams("oplens.compare takes {targets: [{uri, qualname, args?}, ...]} with two or more targets")
        shared = {k: v for k, v in arg.items() if k != "targets"}
        results = [await self.profile({**shared, **t} if isinstance(t, dict) else t) for t in arg["targets"]]
        host = self.require_host()
        runs = [run for r in results if (run := host.results.by_id(r["run_id"])) is not None]
        rows = compare_rows(runs)
        return {"summary": rows}

    async def backend_command(self, cmd: BackendCommand, arg: Any) -> dict[str, Any]:
        """A backend's command on a stored run (Neuron: open it in Neuron Explorer), `{run_id, ...}`."""
        run_id = arg.get("run_id") if isinstance(arg, dict) else None
        if not isinstance(run_id, str) or not run_id:
            raise JsonRpcInvalidParams(f"{cmd.lsp_command} takes {{run_id, ...}}")
        host = self.require_host()
        ctx = CommandContext(host.workspace, self.command_settings.get(cmd.settings_key, {}))
        try:
            run = runs.find(host.root, run_id)
            answer = await asyncio.to_thread(cmd.run_lsp, run, arg, ctx)  # a tool may run for minutes: off the loop
        except OpLensError as e:
            raise request_error(e, self.paths) from None
        return answer.data

    def cancel(self, token: str) -> None:
        event = self.cancels.get(token)
        if event is not None:
            event.set()


def _number(value: Any, default: float) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _snake(key: str) -> str:
    """camelCase (the editor's settings) → snake_case (the records' fields): maxEventsPerNc → max_events_per_nc."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def _int(value: Any, default: int, name: str) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise JsonRpcInvalidParams(f"{name} must be an integer")
    return value


def make_server(
    host_for: Callable[[Path | None], Host], protocol_cls: type[OpLensProtocol] = OpLensProtocol
) -> tuple[LanguageServer, Session]:
    """A fresh LanguageServer for one connection; `host_for(root)` gives the shared Host."""
    ls = LanguageServer("oplens", __version__, protocol_cls=protocol_cls)
    session = Session(ls, host_for)

    @ls.feature(lsp.INITIALIZE)
    def initialize(params: lsp.InitializeParams) -> None:
        session.initialize(params)

    @ls.feature(lsp.SHUTDOWN)
    def shutdown(*_: Any) -> None:
        session.close()

    @ls.feature(lsp.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
        uri = params.text_document.uri
        text, placed, functions = session.placed(uri)
        return views.code_lenses(uri, text, functions, placed)

    @ls.feature(lsp.TEXT_DOCUMENT_INLAY_HINT)
    def inlay_hint(params: lsp.InlayHintParams) -> list[lsp.InlayHint]:
        text, placed, _ = session.placed(params.text_document.uri)
        r = params.range
        return views.inlay_hints(text, placed, session.hint_threshold, r.start.line + 1, r.end.line + 1)

    @ls.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover(params: lsp.HoverParams) -> lsp.Hover | None:
        _, placed, _ = session.placed(params.text_document.uri)
        return views.hover(placed, params.position.line + 1)

    @ls.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: lsp.DidOpenTextDocumentParams) -> None:
        session.publish_diagnostics_for(session.paths.uri_to_host_path(params.text_document.uri))

    @ls.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: lsp.DidChangeTextDocumentParams) -> None:
        session.publish_diagnostics_for(session.paths.uri_to_host_path(params.text_document.uri))

    @ls.feature(lsp.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def progress_cancel(params: lsp.WorkDoneProgressCancelParams) -> None:
        session.cancel(str(params.token))

    @ls.command("oplens.profile")
    async def profile(arg: Any = None) -> dict[str, Any]:
        return await session.profile(arg)

    @ls.command("oplens.compare")
    async def compare(arg: Any = None) -> dict[str, Any]:
        return await session.compare(arg)

    @ls.command("oplens.showRun")
    def show_run(arg: Any = None) -> dict[str, Any]:
        run_id = arg.get("run_id") if isinstance(arg, dict) else None
        run = session.require_host().results.by_id(run_id) if isinstance(run_id, str) else None
        if run is None:
            raise JsonRpcInvalidParams(f"no run {run_id!r}; give {{run_id}} of a run in the runs directory")
        payload = session.result_payload(run)
        ls.protocol.notify(RESULT_NOTIFICATION, payload)
        return payload

    @ls.command("oplens.clear")
    def clear(arg: Any = None) -> None:
        uri = arg.get("uri") if isinstance(arg, dict) else None
        file = session.paths.uri_to_host_path(uri) if isinstance(uri, str) else None
        session.require_host().results.clear(file)
        if file is None:
            session.errors.clear()
        else:
            session.errors.pop(file, None)
        for doc_uri in list(ls.workspace.text_documents):
            session.publish_diagnostics_for(session.paths.uri_to_host_path(doc_uri))
        session.refresh()

    for _, backend_cmd in registry.commands():

        def register(cmd: BackendCommand) -> None:
            @ls.command(cmd.lsp_command)
            async def run_command(arg: Any = None) -> dict[str, Any]:
                return await session.backend_command(cmd, arg)

        register(backend_cmd)

    @ls.command("oplens.cancel")
    def cancel(arg: Any = None) -> None:
        for event in session.cancels.values():
            event.set()

    return ls, session
