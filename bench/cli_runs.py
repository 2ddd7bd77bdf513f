"""What the benches that drive the real CLI share (bench/verdicts.py, bench/edit_diffs.py): an `oplens` command's
JSON, and a busy loop on one core while they measure (`--busy`)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def oplens(cwd: Path, *argv: str, codes: tuple[int, ...] = (0,)) -> Any:
    """`oplens ARGV --json -` run as a user runs it, in `cwd`: its JSON (exit codes other than `codes` end the bench)."""
    proc = subprocess.run([sys.executable, "-m", "oplens", *argv, "--json", "-"], cwd=cwd, capture_output=True,
                          text=True, timeout=900)  # fmt: skip
    if proc.returncode not in codes:
        raise SystemExit(f"oplens {' '.join(argv)} failed:\n{proc.stderr}")
    return json.loads(proc.stdout)


@contextmanager
def busy_core(on: bool) -> Iterator[None]:
    """A `while True: pass` process meanwhile (one core of two busy), where `on`."""
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if on else None
    try:
        yield
    finally:
        if busy is not None:
            busy.kill()
