"""Answer `initialize` before the LSP stack is imported (`oplens serve --stdio`).

Importing pygls (lsprotocol.types, cattrs) is most of the server's start-up: 0.3 s on a quiet
machine, over 1 s under load. An editor waits for the `initialize` answer before anything else,
so the stdio server imports its modules in a thread while this module reads the first message with
a minimal framed reader (pygls's own framing rules) and, when it is `initialize`, answers it at once
with the InitializeResult pygls would compute for this server (tests/test_lsp_early.py keeps the
two equal). Once the import is done the real server is built and pygls reads that same request
again under a private id (`OpLensProtocol.replayed_id`, its response dropped), so that all its
state is set as usual (client capabilities, workspace, our initializationOptions), then stdin on.
Messages sent meanwhile wait in the pipe, in order.

Anything else first (or a frame that is not clean): pygls gets the bytes unchanged. If the import
fails, `initialize` (when not yet answered) and every later request get an error that names why.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple, Protocol, cast

from oplens import __version__

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

# What pygls 2 answers for the server that oplens.lsp.server.make_server builds; only the position
# encoding and textDocumentSync's willSave* (see initialize_result) depend on the client.
COMMANDS = ["oplens.profile", "oplens.compare", "oplens.showRun", "oplens.clear", "oplens.openExplorer", "oplens.cancel"]
CAPABILITIES: dict[str, Any] = {
    "textDocumentSync": {"openClose": True, "change": 2, "save": False},  # 2: incremental
    "hoverProvider": True,
    "codeLensProvider": {"resolveProvider": False},
    "executeCommandProvider": {"commands": COMMANDS},
    "inlayHintProvider": {"resolveProvider": False},
    "workspace": {"workspaceFolders": {"supported": True, "changeNotifications": True}, "fileOperations": {}},
}
ENCODINGS = ("utf-8", "utf-16", "utf-32")  # what pygls supports; utf-16 unless the client prefers another
REPLAY_ID = "oplens.early.initialize-" + os.urandom(6).hex()  # no client can have sent it
STACK = ("lsprotocol", "pygls", "cattrs")  # missing ones are known before the import would fail
log = logging.getLogger(__name__)


class Reader(Protocol):
    def readline(self) -> bytes: ...

    def read(self, n: int = -1, /) -> bytes: ...


class Message(NamedTuple):
    raw: bytes  # every byte read, to hand on unchanged
    body: Any  # the decoded JSON, or None when the frame or the JSON is not clean (or at EOF)


def read_message(stream: Reader) -> Message:
    """One message framed as pygls reads it: header lines up to a blank one after
    `Content-Length: N\\r\\n`, then N bytes."""
    raw = bytearray()
    length = 0
    while True:
        line = stream.readline()
        raw += line
        if not line:
            return Message(bytes(raw), None)
        if not length and line.startswith(b"Content-Length: ") and line.endswith(b"\r\n") and line[16:-2].isdigit():
            length = int(line[16:-2])
        elif length and not line.strip():
            break
    body = stream.read(length)
    raw += body
    if len(body) < length:
        return Message(bytes(raw), None)
    try:
        return Message(bytes(raw), json.loads(body))
    except ValueError:
        return Message(bytes(raw), None)


def frame(payload: dict[str, Any]) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n%s" % (len(body), body)


def send(stream: BinaryIO, payload: dict[str, Any]) -> None:
    stream.write(frame(payload))
    stream.flush()


def initialize_params(body: Any) -> dict[str, Any] | None:
    """The params of an `initialize` request that pygls will accept in the fields read here; else None."""
    if not (isinstance(body, dict) and body.get("jsonrpc") == "2.0" and body.get("method") == "initialize"):
        return None
    if not isinstance(body.get("id"), (int, str)) or isinstance(body.get("id"), bool):
        return None
    params = body.get("params")
    caps = params.get("capabilities") if isinstance(params, dict) else None
    if not isinstance(caps, dict):
        return None
    general = caps.get("general")
    if general is not None and not isinstance(general, dict):
        return None
    encodings = general.get("positionEncodings") if general else None
    if encodings is not None and not (isinstance(encodings, list) and all(isinstance(e, str) for e in encodings)):
        return None
    sync = _sync(caps)
    if sync is not None and not all(isinstance(sync.get(k), (bool, type(None))) for k in ("willSave", "willSaveWaitUntil")):
        return None
    return cast(dict[str, Any], params)


def _sync(caps: dict[str, Any]) -> dict[str, Any] | None:
    doc = caps.get("textDocument")
    sync = doc.get("synchronization") if isinstance(doc, dict) else None
    return sync if isinstance(sync, dict) else None


def initialize_result(params: dict[str, Any]) -> dict[str, Any]:
    """The InitializeResult, as pygls's ServerCapabilitiesBuilder makes it for this server."""
    caps = params["capabilities"]
    general = caps.get("general") or {}
    encoding = next((e for e in general.get("positionEncodings") or [] if e in ENCODINGS), "utf-16")
    sync = dict(CAPABILITIES["textDocumentSync"])
    client_sync = _sync(caps) or {}
    for key in ("willSave", "willSaveWaitUntil"):  # pygls: the client's value `and` (we handle it: no)
        if client_sync.get(key) is not None:
            sync[key] = False
    capabilities = {**CAPABILITIES, "positionEncoding": encoding, "textDocumentSync": sync}
    return {"capabilities": capabilities, "serverInfo": {"name": "oplens", "version": __version__}}


class Prefixed:
    """`prefix`, then `rest`: the stream pygls's stdio reader is given (it calls readline and read)."""

    def __init__(self, prefix: bytes, rest: BinaryIO) -> None:
        self._prefix = prefix
        self._rest = rest

    def readline(self) -> bytes:
        if not self._prefix:
            return self._rest.readline()
        end = self._prefix.find(b"\n") + 1
        if end:
            line, self._prefix = self._prefix[:end], self._prefix[end:]
            return line
        line, self._prefix = self._prefix, b""
        return line + self._rest.readline()

    def read(self, n: int = -1) -> bytes:
        if not self._prefix:
            return self._rest.read(n)
        if n < 0:
            head, self._prefix = self._prefix, b""
            return head + self._rest.read()
        head, self._prefix = self._prefix[:n], self._prefix[n:]
        return head + self._rest.read(n - len(head)) if len(head) < n else head


class Loader(threading.Thread):
    """Imports the server's modules; `failure` says why not, once done."""

    def __init__(self, modules: Sequence[str]) -> None:
        super().__init__(name="oplens-import", daemon=True)
        self.modules = modules
        self.failure: str | None = None
        self.start()

    def run(self) -> None:
        import importlib

        try:
            for name in self.modules:
                importlib.import_module(name)
        except BaseException as e:  # any failure is reported to the client
            log.exception("importing the language server failed")
            self.failure = _describe(e)

    def missing(self) -> str | None:
        """A failure known already: the import failed, or a package of the LSP stack is not installed."""
        if self.failure is not None or not self.is_alive():
            return self.failure
        import importlib.util

        gone = [name for name in STACK if importlib.util.find_spec(name) is None]
        return f"ModuleNotFoundError: {', '.join(gone)} not installed" if gone else None


def _describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {e} (Python: {sys.executable})"


def serve(build: Callable[[], LanguageServer], modules: Sequence[str], stdin: BinaryIO | None = None,
          stdout: BinaryIO | None = None) -> int:
    """Serve one client on stdin/stdout, answering `initialize` while `modules` are imported."""
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    loader = Loader(modules)
    first = read_message(stdin)
    pending = first.raw  # what pygls reads before the rest of stdin
    replayed = False
    params = initialize_params(first.body)
    if params is not None:
        msg_id = first.body["id"]
        try:
            failure = loader.missing()
            answer = frame({"jsonrpc": "2.0", "id": msg_id, "result": initialize_result(params)})
            replay = frame({**first.body, "id": REPLAY_ID})
        except Exception:  # a bug here must not cost the client its server: pygls answers instead
            log.exception("no early answer to initialize")
        else:
            if failure is not None:
                send(stdout, {"jsonrpc": "2.0", "id": msg_id, "error": _error(failure, {"retry": False})})
                return degraded(Prefixed(b"", stdin), stdout, failure)
            stdout.write(answer)
            stdout.flush()
            pending, replayed = replay, True
    loader.join()
    ls = None
    if loader.failure is None:
        try:
            ls = build()
        except Exception as e:  # reported to the client like a failed import
            loader.failure = _describe(e)
    if ls is None:
        failure = loader.failure or "the server could not be built"
        if replayed:
            send(stdout, {"jsonrpc": "2.0", "method": "window/showMessage",
                          "params": {"type": 1, "message": f"OpLens cannot start its language server: {failure}"}})
        return degraded(Prefixed(b"" if replayed else pending, stdin), stdout, failure)
    if replayed:
        from oplens.lsp.protocol import OpLensProtocol

        if not isinstance(ls.protocol, OpLensProtocol):
            raise TypeError("the early initialize needs OpLensProtocol to drop the replayed answer")
        ls.protocol.replayed_id = REPLAY_ID
    ls.start_io(cast(BinaryIO, Prefixed(pending, stdin)), stdout)
    return 0


def _error(failure: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": -32603, "message": f"OpLens cannot start its language server: {failure}"}
    if data is not None:
        error["data"] = data
    return error


def degraded(stdin: Prefixed, stdout: BinaryIO, failure: str) -> int:
    """Without pygls: every request gets an error naming `failure` (shutdown: null), until exit or EOF."""
    shut_down = False
    while True:
        message = read_message(stdin)
        if not message.raw:
            return 1
        body = message.body
        if not isinstance(body, dict) or not isinstance(body.get("method"), str):
            continue
        if body["method"] == "exit":
            return 0 if shut_down else 1
        if "id" not in body:
            continue
        if body["method"] == "shutdown":
            shut_down = True
            send(stdout, {"jsonrpc": "2.0", "id": body["id"], "result": None})
        else:
            send(stdout, {"jsonrpc": "2.0", "id": body["id"], "error": _error(failure)})
