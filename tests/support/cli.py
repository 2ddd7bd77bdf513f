"""`oplens` as a user runs it from a shell."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def oplens_cli(cwd: Path, *argv: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess[str]:
    """`python -m oplens ARGV` in `cwd` as a user runs it from a plain shell: no terminal size, no
    stand-in or Neuron runtime variables of the caller's, no GPU, unbuffered; `env` added on top."""
    full = {k: v for k, v in os.environ.items()
            if k not in ("COLUMNS", "LINES", "FORCE_COLOR") and not k.startswith(("STANDIN_", "NEURON_RT_"))}  # fmt: skip
    full.update(env, PYTHONUNBUFFERED="1", CUDA_VISIBLE_DEVICES="")
    return subprocess.run([sys.executable, "-m", "oplens", *argv], cwd=cwd, env=full, capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip


# The checks `oplens doctor` reports on every host, in its order (the backend's own follow them)
EVERY_CHECK = ["python", "torch", "backend", "runs directory", "tiny profile", "language server"]


def flat(text: str) -> str:
    """`text` with its line breaks and runs of spaces as single spaces (the CLI wraps at its width)."""
    return " ".join(text.split())
