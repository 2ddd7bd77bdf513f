"""The OpLens language server (`oplens serve`): LSP over stdio, or over WebSocket for an
editor that is not on the host. A thin layer over the engine; never imports torch.

This package's own import is light (no pygls): see oplens.lsp.early for why."""

from __future__ import annotations

import atexit
import logging
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

    from oplens.lsp.host import Host

SERVER_MODULES = ("oplens.lsp.server", "oplens.lsp.host")  # what the stdio server imports (pygls and all)


def serve_stdio(workspace: Path | None = None, runs_dir: str | None = None, warm: bool = True) -> int:
    """Serve one client on stdin/stdout (how an editor on the host starts us)."""
    from oplens.lsp import early

    return early.serve(lambda: stdio_server(workspace, runs_dir, warm), SERVER_MODULES)


def stdio_server(workspace: Path | None = None, runs_dir: str | None = None, warm: bool = True) -> LanguageServer:
    """The stdio server: one LanguageServer whose Host is made at `initialize`."""
    from oplens.lsp.host import Host
    from oplens.lsp.server import make_server

    hosts: list[Host] = []

    def host_for(root: Path | None) -> Host:
        if not hosts:
            hosts.append(Host(workspace or root or Path.cwd(), runs_dir, warm=warm))
            atexit.register(hosts[0].close)
        return hosts[0]

    ls, _ = make_server(host_for)
    return ls


def configure_logging(level: str = "INFO", file: str | None = None) -> None:
    """Logs go to stderr (or a file), never stdout: stdout is the protocol."""
    handler = logging.FileHandler(file) if file else logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)
