"""`oplens serve --ws HOST:PORT`: the language server over WebSocket, for an editor elsewhere.

Used through an SSH tunnel (`ssh -N -L 8765:localhost:8765 host`). Many clients, at once and
over time: each connection is its own LSP server and `ClientState` (`make_server`) over one
`SharedState`, and its end (a disconnect, or the LSP `exit` notification) ends only that connection.

The server runs the user's code, so it is guarded: it binds loopback unless told otherwise (and
warns when not), every connection presents the secret token written at start to a file only the
user can read, requests from browser pages (an `Origin` header) are refused, and messages are
bounded in size.

Framing: one JSON-RPC message per WebSocket text frame, no `Content-Length` headers.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import json
import logging
import os
import secrets
import signal
import socket
import stat
import sys
import tempfile
from collections.abc import Callable
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from lsprotocol import types as lsp
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from oplens.lsp.server import make_server
from oplens.lsp.shared import SharedState
from oplens.records.errors import bad_input

log = logging.getLogger(__name__)
DEFAULT_TOKEN_FILE = "~/.oplens/ws-token"
MAX_MESSAGE = 16 * 2**20  # bytes; a larger message closes its connection
ADDRESS_HELP = "give HOST:PORT, e.g. 127.0.0.1:8765 ([::1]:8765 for IPv6; port 0 picks a free one)"


def parse_address(text: str) -> tuple[str, int]:
    """'HOST:PORT' → (host, port). '[::1]:PORT' for IPv6; a bare 'PORT' or ':PORT' means 127.0.0.1."""
    host, _, port = text.strip().rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise bad_input(f"--ws {text!r}: put an IPv6 address in brackets", ADDRESS_HELP)
    if not (port.isascii() and port.isdigit()) or int(port) > 65535:
        raise bad_input(f"--ws {text!r} is not HOST:PORT with a port from 0 to 65535", ADDRESS_HELP)
    return host or "127.0.0.1", int(port)


def serve_websocket(
    host: str,
    port: int,
    workspace: Path,
    runs_dir: str | None,
    token_file: str | None,
    warm: bool = True,
    new_token: bool = False,
) -> int:
    """Serve LSP clients on ws://host:port until SIGINT or SIGTERM; 0 when stopped. The token file's
    token is kept from the last start (`read_token`) unless `new_token`, or it is missing or unfit."""
    token_path = Path(token_file or DEFAULT_TOKEN_FILE).expanduser().resolve()
    kept = None if new_token else read_token(token_path)
    token = kept or write_token(token_path)
    shared = SharedState(workspace, runs_dir, warm=warm)
    try:
        asyncio.run(_serve(host, port, shared, token, token_path, kept is not None))
    finally:
        shared.close()
    return 0


def read_token(path: Path) -> str | None:
    """The token a previous start wrote to `path`, to keep (editors reconnect to a restarted server with the
    token they have): only from a regular file of this user's that no one else can read or write, holding one
    token as `write_token` makes them; else None (a fresh one is written)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, encoding="ascii", errors="replace") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            log.warning("token file %s is not private to this user: writing a new token", path)
            return None
        text = f.read(1024)
    token = text.strip()
    if text != token + "\n" or len(token) < 32 or not all(c.isascii() and (c.isalnum() or c in "-_") for c in token):
        return None
    return token


def write_token(path: Path) -> str:
    """A fresh secret, written atomically to `path` with mode 0600 (its folder 0700 if new)."""
    token = secrets.token_urlsafe(32)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # created 0600
        try:
            with os.fdopen(fd, "w", encoding="ascii") as f:
                f.write(token + "\n")
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as e:
        raise bad_input(f"cannot write the token file {path}: {e.strerror or e}", "give a writable --token-file") from None
    return token


async def _serve(host: str, port: int, shared: SharedState, token: str, token_path: Path, kept: bool = False) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

    async def on_connection(ws: ServerConnection) -> None:
        await _connection(ws, shared)

    try:
        server = await serve(on_connection, host, port, process_request=_guard(token), max_size=MAX_MESSAGE)
    except OSError as e:
        raise bad_input(f"cannot listen on {host}:{port}: {e.strerror or e}", ADDRESS_HELP) from None
    async with server:  # on leaving: close every connection (1001 going away) and wait for them
        _announce(server, host, token, token_path, kept)
        await stop.wait()
    log.info("stopped")


# ---- the guard at the door: runs during the HTTP upgrade, before any LSP ----------------


def _guard(token: str) -> Callable[[ServerConnection, Request], Response | None]:
    def check(connection: ServerConnection, request: Request) -> Response | None:
        if "Origin" in request.headers:  # a web page: refuse, token or not (cross-site hijacking)
            return connection.respond(HTTPStatus.FORBIDDEN, "OpLens does not accept connections from web pages.\n")
        if not any(hmac.compare_digest(given.encode(errors="replace"), token.encode()) for given in _presented(request)):
            response = connection.respond(
                HTTPStatus.UNAUTHORIZED,
                "OpLens needs its token (printed at start, and in its token file): "
                "send 'Authorization: Bearer <token>', or add ?token=<token> to the URL.\n",
            )
            response.headers["WWW-Authenticate"] = 'Bearer realm="oplens"'
            return response
        return None

    return check


def _presented(request: Request) -> list[str]:
    """The tokens a request offers: `Authorization: Bearer` headers and `token` query parameters."""
    bearer = [v[7:].strip() for v in request.headers.get_all("Authorization") if v[:7].lower() == "bearer "]
    return bearer + parse_qs(urlsplit(request.path).query).get("token", [])


# ---- one connection: one LSP client ------------------------------------------------------


class _TextFrames:
    """pygls's writer for one connection: a text frame per message; once closed, messages are dropped
    (a profile the client started may finish after it left)."""

    def __init__(self, ws: ServerConnection) -> None:
        self._ws = ws

    async def write(self, data: bytes) -> None:
        with contextlib.suppress(ConnectionClosed):
            await self._ws.send(data.decode("utf-8"))

    async def close(self) -> None:
        await self._ws.close()


async def _connection(ws: ServerConnection, shared: SharedState) -> None:
    ls, client = make_server(lambda root: shared)  # every client uses the workspace given at start
    protocol = ls.protocol
    protocol.set_writer(_TextFrames(ws), include_headers=False)

    async def exit_connection(*_: Any) -> None:  # pygls's own `exit` would end the process
        await ws.close()

    protocol.fm.add_builtin_feature(lsp.EXIT, exit_connection)
    log.info("client connected from %s", ws.remote_address)
    try:
        async for message in ws:
            try:
                protocol.handle_message(json.loads(message, object_hook=protocol.structure_message))
            except Exception as e:  # not JSON-RPC (pygls handles errors inside handlers): that client's problem
                log.warning("unreadable message from %s: %s", ws.remote_address, e)
    except ConnectionClosed as e:  # e.g. 1009: a message over MAX_MESSAGE
        log.warning("connection from %s closed: %s", ws.remote_address, e)
    finally:
        client.close()
        log.info("client %s gone", ws.remote_address)


# ---- the start banner (stderr) --------------------------------------------------------------


def _announce(server: Server, host: str, token: str, token_path: Path, kept: bool = False) -> None:
    bound = [sock.getsockname()[:2] for sock in server.sockets]
    for address, port in bound:
        _say(f"listening on ws://{f'[{address}]' if ':' in address else address}:{port}")
    port = bound[0][1]
    again = "kept from the last start; --new-token makes a new one" if kept else "new"
    _say(f"token: {token} ({again}; also in {token_path}, readable only by you)")
    _say(
        f"from your machine: ssh -N -L {port}:localhost:{port} {socket.gethostname()}  then connect to "
        f"ws://localhost:{port} with the header 'Authorization: Bearer <token>' (or ws://localhost:{port}/?token=<token>)"
    )
    if not all(_is_loopback(address) for address, _ in bound):
        _say(
            f"WARNING: {host or 'every interface'} is reachable from other machines, and this server runs code "
            "for whoever holds the token; prefer 127.0.0.1 and an SSH tunnel"
        )


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def _say(line: str) -> None:
    print(f"oplens: {line}", file=sys.stderr, flush=True)
