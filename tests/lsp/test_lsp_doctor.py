"""`oplens.doctor`, the editor's "Check Setup": `oplens doctor` on the server's host, from the real
server over stdio (pytest-lsp), with a real worker and torch. On this (CPU) machine the cpu report
is usable and lists every check, each made reported as `$/progress`; the runs directory checked is
the server's."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from oplens.records.names import DOCTOR_COMMAND
from support.cli import EVERY_CHECK
from support.lsp import plain, run_command, start_client


@pytest_asyncio.fixture
async def client(tmp_path: Path) -> AsyncIterator[LanguageClient]:
    c = await start_client(tmp_path, "--no-warm", "--out", str(tmp_path / "runs"))
    yield c
    await c.shutdown_session()


async def test_doctor_answers_a_usable_cpu_report_with_every_check(client: LanguageClient, tmp_path: Path) -> None:
    report = plain(await run_command(client, DOCTOR_COMMAND, {}))  # the backend: the client's setting, auto
    assert set(report) == {"backend", "checks", "usable"}  # as `oplens doctor --json -` prints it
    assert report["backend"] == "auto" and report["usable"] is True  # auto ends on the CPU here
    assert [c["name"] for c in report["checks"]] == EVERY_CHECK
    for c in report["checks"]:
        assert set(c) == {"name", "status", "detail", "fix", "remedy", "command"} and c["status"] == "ok", c
    runs = tmp_path / "runs"  # the server's runs directory (serve --out) is the one checked
    assert str(runs) in next(c for c in report["checks"] if c["name"] == "runs directory")["detail"]
    assert [p.name for p in runs.iterdir() if not p.name.startswith(".")] == []  # the tiny profile's run is not kept there
    assert not (tmp_path / ".oplens").exists()

    (values,) = client.progress_reports.values()
    assert isinstance(values[0], lsp.WorkDoneProgressBegin) and values[0].title == "OpLens: Check Setup"
    messages = [v.message for v in values if isinstance(v, lsp.WorkDoneProgressReport)]
    assert all(f"{name}: ok" in messages for name in EVERY_CHECK), messages
    assert isinstance(values[-1], lsp.WorkDoneProgressEnd) and values[-1].message == "usable"


async def test_doctor_refuses_an_unknown_backend(client: LanguageClient) -> None:
    with pytest.raises(JsonRpcException, match="unknown backend 'tpu'"):
        await run_command(client, DOCTOR_COMMAND, {"backend": "tpu"})
    with pytest.raises(JsonRpcException, match=r"\{backend\?\}"):
        await run_command(client, DOCTOR_COMMAND, {"backend": 3})
