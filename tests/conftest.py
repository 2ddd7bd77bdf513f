from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
EXAMPLE = ROOT / "examples" / "rmsnorm.py"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def ports() -> tuple[int, int]:
    """Two free loopback ports (a viewer's UI and API), both found before either is released."""
    found: list[int] = []
    sockets = []
    for _ in range(2):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        sockets.append(s)
        found.append(s.getsockname()[1])
    for s in sockets:
        s.close()
    return found[0], found[1]


def stop_group(pid: int) -> None:
    """End a detached process group (a viewer the test or OpLens started) and wait for its leader."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
