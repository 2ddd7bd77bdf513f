"""The OpLens language server (`oplens serve`): LSP over stdio, or over WebSocket for an
editor that is not on the host. A thin layer over the engine; never imports torch."""

from __future__ import annotations

import atexit
import logging
from pathlib import Path

from oplens.lsp.host import Host
from oplens.lsp.server import make_server


def serve_stdio(workspace: Path | None = None, runs_dir: str | None = None, warm: bool = True) -> None:
    """Serve one client on stdin/stdout (how an editor on the host starts us)."""
    hosts: list[Host] = []

    def host_for(root: Path | None) -> Host:
        if not hosts:
            hosts.append(Host(workspace or root or Path.cwd(), runs_dir, warm=warm))
            atexit.register(hosts[0].close)
        return hosts[0]

    ls, _ = make_server(host_for)
    ls.start_io()


def configure_logging(level: str = "INFO", file: str | None = None) -> None:
    """Logs go to stderr (or a file), never stdout: stdout is the protocol."""
    handler = logging.FileHandler(file) if file else logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)
