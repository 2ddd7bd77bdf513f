"""Path mappings between a client's files and the host's (as debuggers do).

An editor that is not on the host (WebSocket mode) names files by its own paths; a mapping
`{"local": "/Users/me/proj", "host": "/home/ubuntu/proj"}` (the `pathMappings` setting)
translates them both ways.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import urlsplit, urlunsplit

from pygls.uris import from_fs_path, to_fs_path

CELL_SCHEME = "vscode-notebook-cell"  # a notebook cell open in VS Code: `vscode-notebook-cell:/dir/nb.ipynb#<cell>`


def notebook_of_cell(cell_uri: str) -> str:
    """The `file:` URI of the notebook a cell's URI names. Its authority is the window's, not a host (VS Code
    makes a cell's URI from its notebook's as the workbench names it: code-server's carries its own address)."""
    return urlunsplit(("file", "", urlsplit(cell_uri).path, "", ""))


@dataclass(frozen=True)
class Mapping:
    local: str  # a folder as the client names it
    host: str  # the same folder on the host


class PathMap:
    def __init__(self, mappings: list[Mapping] | None = None) -> None:
        maps = [Mapping(m.local.rstrip("/") or "/", m.host.rstrip("/") or "/") for m in mappings or []]
        # longest prefix first, so nested mappings win over their parents
        self._maps = sorted(maps, key=lambda m: -len(m.local))

    @staticmethod
    def _swap(path: str, src: str, dst: str) -> str | None:
        if path == src:
            return dst
        if path.startswith(src.rstrip("/") + "/"):
            return str(PurePosixPath(dst) / path[len(src.rstrip("/")) + 1 :])
        return None

    def to_host(self, path: str) -> str:
        for m in self._maps:
            mapped = self._swap(path, m.local, m.host)
            if mapped is not None:
                return mapped
        return path

    def to_local(self, path: str) -> str:
        for m in sorted(self._maps, key=lambda m: -len(m.host)):
            mapped = self._swap(path, m.host, m.local)
            if mapped is not None:
                return mapped
        return path

    def uri_to_host_path(self, uri: str) -> str:
        """The host's path of a client's `file:` URI (of a notebook cell's URI: its notebook's); ValueError
        for another scheme."""
        if uri.startswith(CELL_SCHEME + ":"):
            uri = notebook_of_cell(uri)
        path = to_fs_path(uri)
        if path is None:
            raise ValueError(f"not a file URI: {uri}")
        return self.to_host(path)

    def host_path_to_uri(self, path: str) -> str:
        return from_fs_path(self.to_local(path)) or path
