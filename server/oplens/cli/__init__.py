"""The `oplens` command line: `profile`, `compare`, `explorer` (oplens.cli.commands) and `serve`.

`serve` is dispatched before anything heavy is imported: an editor waits for the language server's
first answer, and rich and the engine cost ~0.1 s that `serve --stdio` would pay before it.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["serve"]:
        from oplens.cli import serve

        return serve.main(args[1:])
    from oplens.cli import commands

    return commands.main(args)
