"""Notebook cells as documents: what is Python in a cell, and which cell shows a run of the `%oplens` magic.

VS Code opens each cell of a notebook as a text document of its own, `vscode-notebook-cell:/dir/nb.ipynb#<cell>`
(the notebook's path, the cell in the fragment), synced to the server as a file's text is. A cell is IPython,
not Python: its line magics and shell escapes (`%time f(x)`, `!ls`) are blanked before the functions are
listed, so line numbers stay the cell's own (as IPython keeps them); a `%%oplens` cell is itself the function
`<cell>` (the magic profiles the cell's lines, numbered from the `%%oplens` line); another cell magic's cell
is not Python.

A magic's run names its notebook (`Target.notebook`), not a cell: a cell has no name that lasts. It is laid on
the cell whose text of the function is what was profiled; where no cell of the notebook has that text (the
cell was edited), on the cells that define a function of that name, stale.

Pure: no LSP server state, no I/O.
"""

from __future__ import annotations

from oplens.engine.targets import FunctionDef, source_sha256, whole_cell
from oplens.lsp import views
from oplens.lsp.paths import CELL_SCHEME

_CELL_MAGIC = "%%oplens"


def is_cell(uri: str) -> bool:
    return uri.startswith(CELL_SCHEME + ":")


def python_text(text: str) -> str:
    """The cell's text as Python, line for line: IPython's line magics and shell escapes blanked, a
    `%%oplens` cell's first line too; another cell magic's cell blanked whole (it is not Python)."""
    lines = text.split("\n")
    if lines and lines[0].lstrip().startswith("%%"):
        if not _is_profiled_cell(lines[0]):
            return "\n" * (len(lines) - 1)
        lines[0] = ""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in lines)


def cell_function(text: str) -> FunctionDef | None:
    """A `%%oplens` cell as the function its run names (`<cell>`, the cell's lines from its first)."""
    lines = text.split("\n")
    if not lines or not _is_profiled_cell(lines[0]):
        return None
    return whole_cell(len(text.splitlines()) or 1)


def functions(text: str, file: str) -> tuple[list[FunctionDef], str | None]:
    """The cell's functions (a `%%oplens` cell's `<cell>` first), and why there are none while it does not parse."""
    found, parse_error = views.parse_functions(python_text(text), file)
    profiled = cell_function(text)
    return ([profiled, *found] if profiled else found), parse_error


def _is_profiled_cell(first_line: str) -> bool:
    words = first_line.split()
    return bool(words) and words[0] == _CELL_MAGIC


def defines(text: str, functions: list[FunctionDef], qualname: str, sha: str) -> bool:
    """Whether this cell defines `qualname` with the text whose hash is `sha`."""
    return any(f.qualname == qualname and source_sha256(text, f.first_line, f.last_line) == sha for f in functions)
