"""The language server over stdio, driven by a real LSP client (pytest-lsp) through whole sessions."""

from __future__ import annotations

import asyncio
import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from support.lsp import edit, hints, lenses, line_of, open_doc, plain, run_command, start_client
from support.paths import EXAMPLE

SMALL = "make_inputs(2, 64, 256)"


@pytest_asyncio.fixture
async def workspace(tmp_path: Path) -> Path:
    shutil.copy(EXAMPLE, tmp_path / "rmsnorm.py")
    (tmp_path / "bad.py").write_text("def boom(x):\n    y = x + 1\n    raise RuntimeError('no good')\n")
    return tmp_path


@pytest_asyncio.fixture
async def client(workspace: Path) -> AsyncIterator[LanguageClient]:
    c = await start_client(workspace)
    yield c
    await c.shutdown_session()


async def test_profile_session_end_to_end(client: LanguageClient, workspace: Path) -> None:
    path = workspace / "rmsnorm.py"
    uri = open_doc(client, path)
    titles = await lenses(client, uri)
    assert titles.count("▶ Profile") == 5  # make_inputs, naive, fused, _compiled_for, compiled

    result_note = client.protocol.wait_for_notification_async("oplens/result")  # before the trigger
    reply = await run_command(
        client, "oplens.profile", {"uri": uri, "qualname": "rmsnorm_naive", "args": SMALL, "warmup": 1, "iters": 3}
    )
    note = plain(await asyncio.wait_for(result_note, 60))
    reply = plain(reply)
    assert reply["qualname"] == "rmsnorm_naive" and note["run"]["run_id"] == reply["run_id"]
    assert note["uri"] == uri and note["run"]["totals"]["op_calls"] == 6

    reports = [v for vs in client.progress_reports.values() for v in vs]
    assert isinstance(reports[0], lsp.WorkDoneProgressBegin) and isinstance(reports[-1], lsp.WorkDoneProgressEnd)
    assert any(isinstance(r, lsp.WorkDoneProgressReport) and "iteration 3/3" in (r.message or "") for r in reports)

    titles = await lenses(client, uri)
    totals = [t for t in titles if t.startswith("CPU ")]
    assert len(totals) == 1 and "6 ops" in totals[0] and "3 iters" in totals[0]

    found = await hints(client, uri)
    x_sq = line_of(path, "x_sq = x * x")
    assert {h.position.line + 1 for h in found} == set(range(x_sq, x_sq + 6))  # the six operation lines
    assert all("µs" in str(h.label) or "ms" in str(h.label) for h in found)

    hov = await client.text_document_hover_async(
        lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=x_sq - 1, character=4))
    )
    assert hov is not None and "aten::mul" in hov.contents.value  # type: ignore[union-attr]
    text = hov.contents.value  # type: ignore[union-attr]
    # The line's work and memory in the call recorded with shapes, and its bound against the ceilings.
    assert "Work in one call: " in text and "FLOP/B (float32)" in text, text
    assert "Host memory in one call: allocated " in text and ", peak " in text, text
    if note["run"]["device"]:
        # a small elementwise line: memory-bound, or overhead-bound where its ops are too short
        # (a line whose data stays in cache beats the memory ceiling: it says so instead of a %)
        share = r"([0-9.]+ % of the roofline|above the memory roofline: its data stays in cache)"
        assert re.search(rf"\*\*(memory|overhead)-bound\*\* · {share} · floor .+, .+ to win", text), text
    else:  # the calibration failed: the run says so, and the hover has no bound
        assert any("no roofline" in w for w in note["run"]["backend"]["warnings"]) and "-bound" not in text

    await asyncio.sleep(0.2)
    diags = client.diagnostics.get(uri, [])
    assert any(d.code == "fusable_chain" and "torch.rms_norm" in d.message for d in diags)

    # Lines added above the function: the same text moved, so the figures move with it.
    edit(client, uri, 2, 0, "# a comment\n")
    moved = await hints(client, uri)
    assert {h.position.line + 1 for h in moved} == {h.position.line + 2 for h in found}

    # The function's own text changed: the lens says stale and the hints hide.
    edit(client, uri, 3, x_sq, "    x = x.clone()\n")
    titles = await lenses(client, uri)
    assert any(t.startswith("stale: CPU") for t in titles)
    assert await hints(client, uri) == []


async def test_restart_keeps_results(workspace: Path) -> None:
    first = await start_client(workspace)
    uri = open_doc(first, workspace / "rmsnorm.py")
    await run_command(first, "oplens.profile", {"uri": uri, "qualname": "rmsnorm_fused", "args": SMALL, "warmup": 1, "iters": 2})
    await first.shutdown_session()

    second = await start_client(workspace, "--no-warm")
    try:
        uri = open_doc(second, workspace / "rmsnorm.py")
        titles = await lenses(second, uri)
        assert any(t.startswith("CPU ") and "1 ops" in t for t in titles)
    finally:
        await second.shutdown_session()


async def test_user_exception_becomes_an_error_and_a_diagnostic(client: LanguageClient, workspace: Path) -> None:
    uri = open_doc(client, workspace / "bad.py")
    with pytest.raises(JsonRpcException) as e:
        await run_command(client, "oplens.profile", {"uri": uri, "qualname": "boom", "args": "torch.ones(2)", "warmup": 1})
    assert "RuntimeError: no good" in e.value.message
    await asyncio.sleep(0.2)
    (diag,) = [d for d in client.diagnostics.get(uri, []) if d.code == "user_exception"]
    assert diag.range.start.line == 2 and diag.severity == lsp.DiagnosticSeverity.Information
    # the server keeps serving
    assert "▶ Profile" in await lenses(client, uri)


async def started(client: LanguageClient, command: str, arg: dict[str, Any], token: str | None) -> tuple[Any, str]:
    """`command` under way: its task, and the token its progress reports go to once the worker reports
    (`token`: the request's own `workDoneToken`, as the VS Code extension gives one; None: the server's)."""
    if token is not None:
        client.progress_reports.setdefault(token, [])  # the client made it: pytest-lsp warns of tokens it did not
    params = lsp.ExecuteCommandParams(command=command, arguments=[arg], work_done_token=token)
    task = asyncio.ensure_future(client.workspace_execute_command_async(params))
    for _ in range(600):  # until the profile is under way (a report came)
        tokens = [t for t, vs in client.progress_reports.items() if any(isinstance(v, lsp.WorkDoneProgressReport) for v in vs)]
        if tokens:
            return task, str(tokens[0])
        await asyncio.sleep(0.1)
    pytest.fail(f"no progress report from {command}")


def messages(client: LanguageClient, token: str) -> list[str]:
    return [v.message or "" for v in client.progress_reports[token] if not isinstance(v, lsp.WorkDoneProgressBegin)]


@pytest.mark.parametrize(
    ("own_token", "how"),
    [(False, "progress"), (True, "progress"), (True, "oplens.cancel")],
    ids=["server-token-progress-cancel", "client-token-progress-cancel", "client-token-oplens-cancel"],
)
async def test_cancel_stops_the_worker_stores_nothing_and_the_next_profile_runs(
    client: LanguageClient, workspace: Path, own_token: bool, how: str
) -> None:
    """The status bar's Cancel (the server's token), the extension's notification's Cancel (its own
    token, `window/workDoneProgress/cancel`) and "Cancel OpLens Run" (`oplens.cancel`)."""
    uri = open_doc(client, workspace / "rmsnorm.py")
    slow = {"uri": uri, "qualname": "rmsnorm_naive", "args": "make_inputs()", "iters": 500}
    task, token = await started(client, "oplens.profile", slow, "the-editors-token" if own_token else None)
    assert (token == "the-editors-token") == own_token
    if own_token:  # reported to the client's token only: the server asked for no token of its own
        assert list(client.progress_reports) == [token]
    if how == "progress":
        client.window_work_done_progress_cancel(lsp.WorkDoneProgressCancelParams(token=token))
    else:
        await run_command(client, "oplens.cancel", {})
    with pytest.raises(JsonRpcException) as e:
        await asyncio.wait_for(task, 30)
    assert "cancelled" in e.value.message and e.value.data["kind"] == "cancelled"  # type: ignore[index]
    ending = client.progress_reports[token][-1]
    assert isinstance(ending, lsp.WorkDoneProgressEnd) and "cancelled" in (ending.message or "")
    assert not list((workspace / ".oplens" / "runs").glob("2*"))  # no half run

    # the pool gives the next profile a fresh worker
    after = "the-next-token" if own_token else None
    if after is not None:
        client.progress_reports.setdefault(after, [])
    params = lsp.ExecuteCommandParams(command="oplens.profile", arguments=[{**slow, "args": SMALL, "warmup": 1, "iters": 2}],
                                      work_done_token=after)  # fmt: skip
    reply = plain(await asyncio.wait_for(client.workspace_execute_command_async(params), 60))
    assert [p.name for p in (workspace / ".oplens" / "runs").glob("2*")] == [reply["run_id"]]
    if after is not None:
        said = messages(client, after)
        assert said[0] == "importing" and "warm-up: the first call (compiling, where the device compiles)" in said
        assert "iteration 2/2" in said and said[-1] == reply["title"]


async def test_compare_is_one_progress_and_its_cancel_stores_no_run(client: LanguageClient, workspace: Path) -> None:
    uri = open_doc(client, workspace / "rmsnorm.py")
    targets = [{"uri": uri, "qualname": q} for q in ("rmsnorm_naive", "rmsnorm_fused")]
    arg = {"targets": targets, "args": "make_inputs()", "iters": 500}
    task, token = await started(client, "oplens.compare", arg, "compare")
    begin = client.progress_reports[token][0]
    assert isinstance(begin, lsp.WorkDoneProgressBegin) and begin.title == "OpLens: comparing rmsnorm_naive, rmsnorm_fused"
    assert all(m.startswith("2 functions side by side: ") for m in messages(client, token))  # one worker, both
    client.window_work_done_progress_cancel(lsp.WorkDoneProgressCancelParams(token=token))
    with pytest.raises(JsonRpcException) as e:
        await asyncio.wait_for(task, 30)
    assert e.value.data["kind"] == "cancelled"  # type: ignore[index]
    assert not list((workspace / ".oplens" / "runs").glob("2*"))  # neither function's run is stored
    assert list(client.progress_reports) == [token]  # one progress for the whole compare


@pytest.mark.parametrize(
    ("arg", "needle"),
    [
        ({}, "takes one object"),
        ({"uri": "file:///etc/passwd.py", "qualname": "f"}, "outside the workspace"),
        ({"uri": "WS/rmsnorm.py"}, "qualname"),
        ({"uri": "WS/rmsnorm.py", "qualname": "rmsnorm_naive", "backend": "tpu"}, "unknown backend"),
        ({"uri": "WS/rmsnorm.py", "qualname": "rmsnorm_naive", "iters": "many"}, "iters must be an integer"),
        ({"uri": "WS/rmsnorm.py", "qualname": "nope"}, "has no function 'nope'"),
    ],
)
async def test_bad_requests_get_errors_and_the_server_keeps_serving(
    client: LanguageClient, workspace: Path, arg: dict[str, Any], needle: str
) -> None:
    if str(arg.get("uri", "")).startswith("WS/"):
        arg = {**arg, "uri": (workspace / arg["uri"][3:]).as_uri()}
    with pytest.raises(JsonRpcException) as e:
        await run_command(client, "oplens.profile", arg)
    assert needle in e.value.message
    with pytest.raises(JsonRpcException):
        await client.workspace_execute_command_async(lsp.ExecuteCommandParams(command="oplens.nope", arguments=[]))
    uri = open_doc(client, workspace / "rmsnorm.py")
    assert "▶ Profile" in await lenses(client, uri)


async def test_compare_returns_the_side_by_side_summary(client: LanguageClient, workspace: Path) -> None:
    uri = open_doc(client, workspace / "rmsnorm.py")
    targets = [{"uri": uri, "qualname": q} for q in ("rmsnorm_naive", "rmsnorm_fused")]
    reply = plain(await run_command(client, "oplens.compare", {"targets": targets, "args": SMALL, "warmup": 1, "iters": 2}))
    rows = reply["summary"]
    assert [r["variant"] for r in rows] == ["rmsnorm_naive", "rmsnorm_fused"]
    assert rows[0]["speedup"] == pytest.approx(1.0) and [r["op_calls"] for r in rows] == [6, 1]
    assert all(r["device_label"] == "CPU" for r in rows)
    # measured side by side, the speed-up with its interval and a verdict on the page the results panel draws
    assert rows[1]["method"] == "interleaved_plain" and len(rows[1]["speedup_interval"]) == 2
    page = reply["page"]
    assert page["rows"][1]["verdict"] in ("faster", "slower", "no measurable difference") and page["rows"][1]["interval"]
    assert page["method"].startswith("measured side by side in one worker") and reply["failed"] == []


async def test_an_a_a_compare_reads_no_measurable_difference(client: LanguageClient, workspace: Path) -> None:
    """Two identical functions under two names, over the real language server: the page the results panel draws
    says "no measurable difference", the interval holding 1×. Where one run is flagged (a 95 % interval misses
    1 in 20 of them by design), a second must not be: a difference the code made would show again."""
    (workspace / "same.py").write_text(
        "import torch\n\n\ndef a(x):\n    return (x @ x).relu()\n\n\ndef b(x):\n    return (x @ x).relu()\n")
    uri = open_doc(client, workspace / "same.py")
    targets = [{"uri": uri, "qualname": q} for q in ("a", "b")]
    for attempt in range(2):
        reply = plain(await run_command(client, "oplens.compare", {"targets": targets, "args": "torch.randn(192, 192)",
                                                                   "warmup": 2, "iters": 20}))  # fmt: skip
        row = reply["page"]["rows"][1]
        if row["verdict"] == "no measurable difference" or attempt == 1:
            break
    assert row["verdict"] == "no measurable difference", reply["summary"]
    low, high = reply["summary"][1]["speedup_interval"]
    assert low <= 1.02 and high >= 1 / 1.02 and row["interval"]  # holds 1x, or within the least difference named
    assert "no measurable difference for b" in reply["page"]["summary"]


async def test_open_explorer_explains_what_a_cpu_run_lacks(client: LanguageClient, workspace: Path) -> None:
    uri = open_doc(client, workspace / "rmsnorm.py")
    reply = plain(await run_command(client, "oplens.profile", {"uri": uri, "qualname": "rmsnorm_fused", "args": SMALL,
                                                               "warmup": 1, "iters": 2}))
    with pytest.raises(JsonRpcException) as e:
        await run_command(client, "oplens.openExplorer", {"run_id": reply["run_id"]})
    assert "Neuron" in e.value.message  # a CPU run has no device profile to open
    with pytest.raises(JsonRpcException) as e:
        await run_command(client, "oplens.openExplorer", {})
    assert "run_id" in e.value.message
