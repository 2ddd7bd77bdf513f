"""OpLens: per-line self device time for PyTorch functions.

Layers, imported in one direction only (pyproject.toml's import-linter contracts): `cli` | `notebook` →
`lsp` → `engine` | `worker` → `backends` → `analysis` → `records`. The parent side (`cli`, `lsp`,
`engine`) never imports torch; only the worker process (`python -m oplens.worker`) does, so the
CLI and the language server start fast and user code never runs in them. The notebook magics
(`%load_ext oplens`) are the exception by design: they run the worker's steps inside the user's
kernel, on its live objects.
"""

import importlib
from typing import Any

__version__ = "0.1.0"


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext oplens`: the `%oplens` and `%%oplens` magics (`oplens/notebook/magics.py`). Imported by
    name, when asked: every module imports this package (for `__version__`), and none of them may import
    the notebook's, which imports torch."""
    importlib.import_module("oplens.notebook.magics").register(ipython)
