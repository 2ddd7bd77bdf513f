"""The OpLens language server (`oplens serve`): LSP over stdio, or over WebSocket for an
editor that is not on the host. A thin layer over the engine; never imports torch.

This package's own import is light (no pygls): `oplens serve` sets up logging before it knows
which mode, and each mode imports the LSP stack itself."""

from __future__ import annotations

import atexit
import logging
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

    from oplens.lsp.shared import SharedState


def serve_stdio(workspace: Path | None = None, runs_dir: str | None = None, warm: bool = True) -> int:
    """Serve one client on stdin/stdout (how an editor on the host starts us) until `exit`."""
    stdio_server(workspace, runs_dir, warm).start_io()
    return 0


def stdio_server(workspace: Path | None = None, runs_dir: str | None = None, warm: bool = True) -> LanguageServer:
    """The stdio server: one LanguageServer whose SharedState is made at `initialize`."""
    from oplens.lsp.server import make_server
    from oplens.lsp.shared import SharedState

    made: list[SharedState] = []

    def shared_for(root: Path | None) -> SharedState:
        if not made:
            made.append(SharedState(workspace or root or Path.cwd(), runs_dir, warm=warm))
            atexit.register(made[0].close)
        return made[0]

    ls, _ = make_server(shared_for)
    return ls


def configure_logging(level: str = "INFO", file: str | None = None) -> None:
    """Logs go to stderr (or a file), never stdout: stdout is the protocol."""
    handler = logging.FileHandler(file) if file else logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)
