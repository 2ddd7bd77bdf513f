"""The suite's tiers and its two plain fixtures. What the tests share lives in `support/`.

Each test's tier is its folder's: `unit/` (no process started: analysis, views, records, codegen, stored runs and
traces), `worker/` (real workers and the CLI on this machine), `lsp/` (the language server over a real client),
`system/` (torchrun, Slurm, sshd, packaging, a kernel, code-server's bundled server). `pytest -m unit` runs one
tier; a unit test that starts a process fails and says which tier it belongs in."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

TIERS = ("unit", "worker", "lsp", "system")
# the fixtures of support/ that tests ask for by name
pytest_plugins = ["support.explorer"]
HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        folder = Path(str(item.path)).resolve().relative_to(HERE).parts[0]
        if folder not in TIERS:
            raise pytest.UsageError(f"{item.nodeid}: a test lives in one of tests/{{{','.join(TIERS)}}}/ (its tier)")
        item.add_marker(folder)


class StartedAProcess(AssertionError):
    pass


@pytest.fixture(autouse=True)
def _unit_starts_no_process(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The unit tier's promise, kept: no subprocess, fork or spawn while a unit test runs."""
    if request.node.get_closest_marker("unit") is None:
        yield
        return

    def refuse(what: str) -> Any:
        def refused(*args: Any, **kwargs: Any) -> Any:
            raise StartedAProcess(f"a unit test started a process ({what}): move it to tests/worker/ or tests/system/")

        return refused

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse("subprocess"))
    monkeypatch.setattr(os, "fork", refuse("os.fork"))
    monkeypatch.setattr(os, "posix_spawn", refuse("os.posix_spawn"))
    monkeypatch.setattr(os, "posix_spawnp", refuse("os.posix_spawnp"))
    yield


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
