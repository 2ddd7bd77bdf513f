"""OpLens: per-line self device time for PyTorch functions.

Layers, imported in one direction only: `cli` and `lsp` → `engine` → `backends`.
The engine's parent side (targets, jobs, runs, records) never imports torch; only the
worker process (`engine.worker`) does, so tools built on the engine start fast.
"""

__version__ = "0.1.0"
