"""OpLens: per-line self device time for PyTorch functions.

Layers, imported in one direction only (pyproject.toml's import-linter contracts): `cli` → `lsp` →
`engine` | `worker` → `backends` → `analysis` → `records`. The parent side (`cli`, `lsp`,
`engine`) never imports torch; only the worker process (`python -m oplens.worker`) does, so the
CLI and the language server start fast and user code never runs in them.
"""

__version__ = "0.1.0"
