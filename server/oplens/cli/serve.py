"""`oplens serve`: the language server over stdio (the default) or WebSocket.

Imports only argparse until it knows the mode, then only what that mode needs (never rich on the
way to serving): an editor waits for the server's `initialize` answer, which comes only once
pygls and the server's modules are imported.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "run the language server (stdio by default)"


def add_arguments(s: argparse.ArgumentParser) -> None:
    mode = s.add_mutually_exclusive_group()
    mode.add_argument("--stdio", action="store_true", help="speak LSP on stdin/stdout (the default)")
    mode.add_argument("--ws", metavar="HOST:PORT", help="serve LSP over WebSocket, e.g. 127.0.0.1:8765")
    s.add_argument("--token-file", metavar="PATH", help="where the WebSocket token is written (mode 0600)")
    s.add_argument(
        "--new-token",
        action="store_true",
        help="write a new WebSocket token (the old one is refused); by default the token file's is kept",
    )
    s.add_argument("--workspace", metavar="DIR", help="the workspace on this host (default: the client's root or .)")
    s.add_argument("--out", metavar="DIR", help="runs directory (default: <workspace>/.oplens/runs)")
    s.add_argument("--no-warm", action="store_true", help="do not keep a warm worker (saves ~300 MB while idle)")
    s.add_argument("--log-file", metavar="PATH", help="log to this file instead of stderr")
    s.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="oplens serve", description=HELP)
    add_arguments(parser)
    try:
        return run(parser.parse_args(argv))
    except KeyboardInterrupt:
        print("oplens: interrupted", file=sys.stderr)
        return 130


def run(args: argparse.Namespace) -> int:
    from oplens import lsp  # light: the LSP stack itself is imported by the mode that needs it

    lsp.configure_logging(args.log_level, args.log_file)
    workspace = Path(args.workspace).resolve() if args.workspace else None
    if args.new_token and not args.ws:
        print("oplens serve: --new-token goes with --ws HOST:PORT (stdio has no token)", file=sys.stderr)
        return 2
    if args.ws:
        return _serve_websocket(args, workspace or Path.cwd())
    return lsp.serve_stdio(workspace, args.out, warm=not args.no_warm)


def _serve_websocket(args: argparse.Namespace, workspace: Path) -> int:
    from oplens.lsp.websocket import parse_address, serve_websocket
    from oplens.records.errors import OpLensError

    try:
        host, port = parse_address(args.ws)
        return serve_websocket(
            host, port, workspace, args.out, args.token_file, warm=not args.no_warm, new_token=args.new_token
        )
    except OpLensError as e:
        from rich.console import Console

        from oplens.cli import render

        render.error(Console(stderr=True, soft_wrap=True), e)
        return e.exit_code
