"""`oplens.merge`: `oplens merge DIR...` through the real server over stdio (pytest-lsp), on run
directories written here (no torchrun): two hosts' runs, each one rank stored by itself, made from
the extension's real CPU run. The merged run has both ranks, is stored under the runs root, comes to
the asking client as `oplens/result` before the reply and to an open document's `oplens/document`;
one directory given as the client names it under its path mappings. A rank twice, a directory that
is not a run and bad arguments are errors that say so, and nothing is stored. Its progress goes to
the request's own `workDoneToken` (the extension's notification); a cancelled merge stores nothing."""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pytest_lsp import LanguageClient

from oplens.engine.merge import merge_dirs
from oplens.records import names
from oplens.records.errors import OpLensError
from support.lsp import plain, served_client
from support.paths import ROOT

RESULT = ROOT / "extension" / "test" / "fixtures" / "rmsnorm_naive.cpu.result.json"
EXAMPLE = ROOT / "examples" / "rmsnorm.py"
CLIENT_HOSTS = "/client/hosts"  # where the client sees the hosts' folders (pathMappings)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    shutil.copy(EXAMPLE, ws / "rmsnorm.py")
    return ws


def host_run(where: Path, rank: int, file: Path) -> Path:
    """A host's run of rank `rank` of two, stored by itself (as `oplens run` on that host keeps it)."""
    data = json.loads(RESULT.read_text())
    data["target"]["file"] = str(file)
    data["ranks"] = [{"rank": rank, "world_size": 2, "part": f"ranks/{rank}"}]
    data["run_dir"] = str(where)
    where.mkdir(parents=True)
    (where / "result.json").write_text(json.dumps(data))
    return where


@pytest_asyncio.fixture
async def client(workspace: Path) -> AsyncIterator[LanguageClient]:
    async with served_client(workspace, pathMappings=[{"local": CLIENT_HOSTS, "host": str(workspace.parent / "hosts")}]) as c:
        yield c


async def merge(client: LanguageClient, *args: Any, token: str | None = None) -> Any:
    params = lsp.ExecuteCommandParams(command=names.MERGE_COMMAND, arguments=list(args), work_done_token=token)
    return plain(await asyncio.wait_for(client.workspace_execute_command_async(params), 30))


def stored(workspace: Path) -> list[str]:
    return sorted(p.name for p in (workspace / ".oplens" / "runs").glob("2*"))


async def test_two_hosts_runs_become_one_run_with_both_ranks(client: LanguageClient, workspace: Path) -> None:
    source = workspace / "rmsnorm.py"
    uri = source.as_uri()
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=source.read_text())))  # fmt: skip
    host_run(workspace / "host0" / "run", 0, source)  # in the workspace: given relative to it
    host_run(workspace.parent / "hosts" / "host1" / "run", 1, source)  # elsewhere: as the client names it

    client.progress_reports["merge"] = []  # the client's own token (the extension's notification with Cancel)
    reply = await merge(client, {"dirs": ["host0/run", f"{CLIENT_HOSTS}/host1/run"]}, token="merge")
    begin, *reports, end = client.progress_reports["merge"]
    assert isinstance(begin, lsp.WorkDoneProgressBegin) and begin.title == "OpLens: merging 2 runs" and begin.cancellable
    assert [r.message for r in reports] == ["copying rank 0's part (1 of 2)", "copying rank 1's part (2 of 2)"]
    assert isinstance(end, lsp.WorkDoneProgressEnd) and end.message == "rmsnorm_naive: 2 ranks merged"
    assert list(client.progress_reports) == ["merge"]  # the server asked for no token of its own

    (note,) = client.results  # type: ignore[attr-defined]  # before the reply
    run = note["run"]
    assert reply["run_id"] == run["run_id"] and stored(workspace) == [reply["run_id"]]
    assert (reply["uri"], reply["qualname"], note["uri"]) == (uri, "rmsnorm_naive", uri)
    assert reply["title"]
    assert [(r["rank"], r["part"]) for r in run["ranks"]] == [(0, "ranks/0"), (1, "ranks/1")]
    assert run["totals"]["ranks"]["per_rank"] == [pytest.approx(run["totals"]["self_device_us"])] * 2
    merged = workspace / ".oplens" / "runs" / reply["run_id"]
    assert run["run_dir"] == str(merged)
    assert (merged / "ranks" / "0" / "result.json").is_file() and (merged / "ranks" / "1" / "result.json").is_file()
    assert (workspace / "host0" / "run" / "result.json").is_file()  # the given directories are left as they were

    for _ in range(100):  # every client redrawn: the open file lists the merged run
        placed = [r["runId"] for d in client.documents for r in d["runs"]]  # type: ignore[attr-defined]
        if reply["run_id"] in placed:
            break
        await asyncio.sleep(0.05)
    else:
        pytest.fail(f"no oplens/document with the merged run; got {client.documents}")  # type: ignore[attr-defined]

    again = plain(await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command=names.SHOW_RUN_COMMAND, arguments=[{"run_id": reply["run_id"]}])))  # fmt: skip
    assert len(again["run"]["ranks"]) == 2  # kept among the server's runs


async def test_a_rank_twice_or_a_directory_that_is_no_run_is_an_error(client: LanguageClient, workspace: Path) -> None:
    source = workspace / "rmsnorm.py"
    first = host_run(workspace / "a" / "run", 0, source)
    second = host_run(workspace / "b" / "run", 0, source)
    with pytest.raises(JsonRpcException) as e:
        await merge(client, {"dirs": [str(first), str(second)]})
    assert e.value.message == "rank 0 appears in more than one directory"
    assert e.value.data["kind"] == "bad_input" and "each host" in e.value.data["detail"]  # type: ignore[index]

    with pytest.raises(JsonRpcException) as e:
        await merge(client, {"dirs": [str(first), "nowhere"]})
    assert e.value.message.startswith(f"{workspace / 'nowhere'} is not a run directory")
    assert client.results == [] and stored(workspace) == []  # type: ignore[attr-defined]


BAD_ARGUMENTS = [
    ([], "dirs is missing"),
    ([{"dirs": "a b"}], "dirs must be a list (got 'a b')"),
    ([{"dirs": []}], "give the run directory of each host"),
    ([{"dirs": ["a", ""]}], "a directory is empty"),
]


async def test_bad_arguments_are_invalid_params(client: LanguageClient) -> None:
    for args, needle in BAD_ARGUMENTS:  # one server for all: each start costs a second or two
        with pytest.raises(JsonRpcException) as e:
            await merge(client, *args)
        assert e.value.code == JsonRpcInvalidParams.CODE, args
        assert e.value.message.startswith(f"{names.MERGE_COMMAND} takes one object {{dirs: [run directory, ...]}}")
        assert needle in e.value.message, (args, e.value.message)


def test_a_cancelled_merge_stores_nothing(tmp_path: Path) -> None:
    """Cancelled between two parts (as `oplens.cancel` or the notification's Cancel sets it): the staged
    run is discarded, the runs root holds no run."""
    source = tmp_path / "rmsnorm.py"
    shutil.copy(EXAMPLE, source)
    dirs = [host_run(tmp_path / f"host{r}" / "run", r, source) for r in (0, 1)]
    cancel = threading.Event()
    said: list[tuple[int, int, int]] = []

    def progress(rank: int, done: int, total: int) -> None:
        said.append((rank, done, total))
        if done == 1:
            cancel.set()  # the first part is copied: cancel before the second

    root = tmp_path / "runs"
    with pytest.raises(OpLensError) as e:
        merge_dirs(dirs, root, cancel, progress)
    assert e.value.kind == "cancelled" and said == [(0, 0, 2), (1, 1, 2)]
    assert [p.name for p in root.iterdir()] == [".staging"] and list((root / ".staging").iterdir()) == []
    assert merge_dirs(dirs, root).ranks[1].rank == 1  # and the next merge works
