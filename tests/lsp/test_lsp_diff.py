"""A function's run against its previous one, in the editor: `oplens.diff`, and after a re-profile
the hints' change marks, the lens's verdict and the hover, from the real server over stdio (pytest-lsp).

Stored runs made up from a real profile (rmsnorm_naive.cpu.result.json with per-iteration samples
set) give exact verdicts; one test profiles a real edit through the server's own worker."""

from __future__ import annotations

import copy
import dataclasses
import json
import statistics
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from oplens.engine import runs
from oplens.engine.diff import diff_runs
from oplens.engine.targets import source_sha256
from oplens.lsp import views
from oplens.records.names import DIFF_COMMAND, PROFILE_COMMAND
from oplens.records.run import Run
from support.lsp import edit, hints, lenses, line_of, open_doc, plain, run_command, start_client
from support.paths import EXAMPLE, ROOT

FIXTURE = ROOT / "extension" / "test" / "fixtures" / "rmsnorm_naive.cpu.result.json"
A, B, C = (f"20261201-{t}-rmsnorm_naive-{h}" for t, h in (("103000", "aaaaaa"), ("104500", "bbbbbb"), ("110000", "cccccc")))


def stored(workspace: Path, run_id: str, created: str, source: str, factors: dict[str, float]) -> Run:
    """The fixture's run of rmsnorm_naive as if profiled in `workspace` at `created` with the file
    reading `source`, over 12 iterations whose line samples are its times × `factors` (by a piece of
    the line's text) ± 4 %."""
    file = workspace / "rmsnorm.py"
    d = copy.deepcopy(json.loads(FIXTURE.read_text(encoding="utf-8")))
    text = source.splitlines(keepends=True)
    t = d["target"]
    t.update(file=str(file), source="".join(text[t["first_line"] - 1 : t["last_line"]]),
             source_sha256=source_sha256(source, t["first_line"], t["last_line"]))
    d.update(run_id=run_id, created=created, run_dir=str(workspace / ".oplens" / "runs" / run_id))
    d["config"]["iters"] = 12
    totals = [0.0] * 12
    for line in d["lines"]:
        factor = next((f for piece, f in factors.items() if piece in text[line["line"] - 1]), 1.0)
        samples = [line["self_device_us"] * factor * (1 + 0.02 * ((k * 7) % 5 - 2)) for k in range(12)]
        line["device_samples_us"] = line["cpu_samples_us"] = samples
        line["self_device_us"] = line["self_cpu_us"] = statistics.fmean(samples)
        totals = [a + b for a, b in zip(totals, samples, strict=True)]
    d["totals"]["device_samples_us"] = d["totals"]["cpu_samples_us"] = totals
    d["totals"]["self_device_us"] = d["totals"]["self_cpu_us"] = statistics.fmean(totals)
    run_dir = workspace / ".oplens" / "runs" / run_id
    run_dir.mkdir(parents=True)
    (run_dir / runs.RESULT).write_text(json.dumps(d), encoding="utf-8")
    return Run.from_dict(d)


ORIGINAL = EXAMPLE.read_text(encoding="utf-8")
EDITED = ORIGINAL.replace("x_sq = x * x", "x_sq = (x * x).repeat(5, 1, 1)[: x.shape[0]]")  # five times the work


@pytest_asyncio.fixture
async def workspace(tmp_path: Path) -> Path:
    (tmp_path / "rmsnorm.py").write_text(EDITED, encoding="utf-8")  # as last profiled, in run C
    stored(tmp_path, A, "2026-12-01T10:30:00+0000", ORIGINAL, {})
    stored(tmp_path, B, "2026-12-01T10:45:00+0000", ORIGINAL, {})
    stored(tmp_path, C, "2026-12-01T11:00:00+0000", EDITED, {"x_sq = (x * x)": 5.0, "torch.rsqrt": 1 / 3})
    return tmp_path


@pytest_asyncio.fixture
async def client(workspace: Path) -> AsyncIterator[LanguageClient]:
    c = await start_client(workspace, "--no-warm")
    yield c
    await c.shutdown_session()


def hint_at(found: list[lsp.InlayHint], line: int) -> str:
    (label,) = [str(h.label) for h in found if h.position.line + 1 == line]
    return label


async def hover_at(client: LanguageClient, uri: str, line: int) -> str:
    hov = await client.text_document_hover_async(
        lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=line - 1, character=4))
    )
    assert hov is not None
    return hov.contents.value  # type: ignore[union-attr]


@pytest.mark.timing
async def test_the_latest_run_shows_its_change_against_the_previous_one(client: LanguageClient, workspace: Path) -> None:
    path = workspace / "rmsnorm.py"
    uri = open_doc(client, path)
    x_sq, rsqrt, mean = (line_of(path, s) for s in ("x_sq = (x * x)", "torch.rsqrt", "mean_sq = x_sq.mean"))

    (totals,) = [t for t in await lenses(client, uri) if t.startswith("CPU ")]
    assert totals.endswith("slower than previous run") and "· ▲ " in totals and "12 iters" in totals

    found = await hints(client, uri)
    assert hint_at(found, x_sq).endswith(" · ▲ 5.0×")
    # 3x faster, but at 0.1 % of the function's time in both runs: too small to judge (diff.MIN_SHARE)
    assert hint_at(found, rsqrt).endswith(" · 0.1 %")
    assert "▲" not in hint_at(found, mean) and "▼" not in hint_at(found, mean)
    (tip,) = [h.tooltip for h in found if h.position.line + 1 == x_sq]
    assert "vs previous run" in str(tip)

    text = await hover_at(client, uri, x_sq)
    assert "**vs previous run**" in text and "▲ 5.0× slower (p = " in text and "→" in text
    assert "vs previous run" not in await hover_at(client, uri, mean)  # the same: nothing to say

    # the same text two lines down: the marks move with it
    edit(client, uri, 2, 0, "# one\n# two\n")
    assert hint_at(await hints(client, uri), x_sq + 2).endswith("▲ 5.0×")
    # edited since: stale, and no verdict on what no longer is
    edit(client, uri, 3, x_sq + 2, "    x = x.clone()\n")
    (stale,) = [t for t in await lenses(client, uri) if "CPU " in t]
    assert stale.startswith("stale: ") and "previous run" not in stale
    assert await hints(client, uri) == []


async def test_diff_command_defaults_picks_and_lists_earlier_runs(client: LanguageClient, workspace: Path) -> None:
    uri = (workspace / "rmsnorm.py").as_uri()
    x_sq = line_of(workspace / "rmsnorm.py", "x_sq = (x * x)")

    latest = plain(await run_command(client, DIFF_COMMAND, {"uri": uri, "qualname": "rmsnorm_naive"}))
    assert latest["after"]["run_id"] == C and latest["before"]["run_id"] == B and latest["uri"] == uri
    assert [e["run_id"] for e in latest["earlier"]] == [B, A]  # newest first
    assert set(latest["earlier"][0]) >= {"run_id", "created", "self_device_us", "device_label"}
    (changed,) = [c for c in latest["lines"] if c["after_line"] == x_sq]
    assert changed["verdict"] == "slower" and changed["before_line"] == x_sq and changed["p_value"] < 0.01
    assert latest["totals"]["verdict"] == "slower" and latest["method"]["alpha"] == 0.01

    picked = plain(await run_command(client, DIFF_COMMAND, {"after": C, "before": A}))
    assert picked["before"]["run_id"] == A and [e["run_id"] for e in picked["earlier"]] == [B, A]

    same = plain(await run_command(client, DIFF_COMMAND, {"after": B}))
    assert same["before"]["run_id"] == A and {c["verdict"] for c in same["lines"]} == {"same"}
    assert same["totals"]["verdict"] == "same"

    first = plain(await run_command(client, DIFF_COMMAND, {"after": A}))
    assert first["before"] is None and first["totals"] is None and first["lines"] == [] and first["earlier"] == []
    assert first["after"]["run_id"] == A


@pytest.mark.parametrize(("arg", "needle"), [
    ({}, "give after, or uri and qualname"),
    ({"after": 7}, "after must be a string"),
    ({"after": "nope"}, "no run 'nope' (after)"),
    ({"after": C, "before": "../x"}, "no run '../x' (before)"),
    ({"uri": "WS/rmsnorm.py", "qualname": "rmsnorm_fused"}, "no stored run of rmsnorm_fused"),
])
async def test_diff_command_refuses_bad_arguments(client: LanguageClient, workspace: Path, arg: dict[str, Any],
                                                  needle: str) -> None:
    if str(arg.get("uri", "")).startswith("WS/"):
        arg = {**arg, "uri": (workspace / arg["uri"][3:]).as_uri()}
    with pytest.raises(JsonRpcException) as e:
        await run_command(client, DIFF_COMMAND, arg)
    assert e.value.code == -32602 and needle in e.value.message and e.value.message.startswith(DIFF_COMMAND)


# Two lines of about the same time: on a busy machine an unchanged line of a few µs moves between two
# runs by several times, and that drift is what a change must beat (engine/diff.py); lines of a
# 192×192 matmul each move far less.
SLOW = """import torch

X = torch.randn(192, 192) / 14


def step():
    a = X @ X
    b = a @ X
    return b
"""
SLOWER = SLOW.replace("    b = a @ X\n", "    b = " + "(" * 16 + "a" + " @ X)" * 16 + "\n")  # the same line, 16x the work


async def test_a_real_re_profile_of_a_line_made_slower(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # inherited by the server and its workers
    path = tmp_path / "model.py"
    path.write_text(SLOW)
    client = await start_client(tmp_path, "--no-warm")
    try:
        uri = open_doc(client, path)
        first = plain(await run_command(client, PROFILE_COMMAND, {"uri": uri, "qualname": "step", "warmup": 2, "iters": 12}))
        assert not any("previous run" in t for t in await lenses(client, uri))

        path.write_text(SLOWER)  # as an editor saves it
        edit_all(client, uri, 2, SLOW, SLOWER)
        second = plain(await run_command(client, PROFILE_COMMAND, {"uri": uri, "qualname": "step", "warmup": 2, "iters": 12}))

        (totals,) = [t for t in await lenses(client, uri) if t.startswith("CPU ")]
        assert "slower than previous run" in totals, totals
        label = hint_at(await hints(client, uri), line_of(path, "b = (((("))
        assert "▲" in label and label.endswith("×"), label
        answer = plain(await run_command(client, DIFF_COMMAND, {"uri": uri, "qualname": "step"}))
        # the edit was profiled with its earlier version beside it (issue 37): the diff is against that measurement
        measured = answer["before"]["run_id"]
        assert answer["after"]["config"]["earlier"] == {"run_id": first["run_id"], "measured_run": measured, "why_not": ""}
        assert answer["before"]["config"]["side_by_side"]["earlier_of"] == first["run_id"]
        assert answer["after"]["run_id"] == second["run_id"]
        assert answer["method"]["measured"] == "interleaved_plain"
        assert [e["run_id"] for e in answer["earlier"]] == [measured, first["run_id"]]
    finally:
        await client.shutdown_session()


def edit_all(client: LanguageClient, uri: str, version: int, old: str, new: str) -> None:
    """Replace the whole of the open document's text `old` by `new`."""
    end = lsp.Position(line=len(old.splitlines()), character=0)
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[lsp.TextDocumentContentChangePartial(
                range=lsp.Range(start=lsp.Position(line=0, character=0), end=end), text=new)],
        )
    )


def test_an_inserted_line_says_new_and_the_lines_below_keep_their_change(tmp_path: Path) -> None:
    """The converters alone (views.py is pure): a run with a line inserted, against the one before."""
    inserted = ORIGINAL.replace("    x_sq = x * x\n", "    x_sq = x * x\n    x_sq = x_sq + 0.0\n")
    before = stored(tmp_path, A, "2026-12-01T10:30:00+0000", ORIGINAL, {})
    d = json.loads((tmp_path / ".oplens" / "runs" / A / runs.RESULT).read_text(encoding="utf-8"))
    x_sq = line_of(EXAMPLE, "x_sq = x * x")
    for line in d["lines"]:
        line["line"] += line["line"] > x_sq
    d["lines"].insert(1, {**copy.deepcopy(d["lines"][0]), "line": x_sq + 1})
    text = inserted.splitlines(keepends=True)
    d["target"].update(last_line=d["target"]["last_line"] + 1,
                       source="".join(text[d["target"]["first_line"] - 1 : d["target"]["last_line"] + 1]))
    d["target"]["source_sha256"] = source_sha256(inserted, d["target"]["first_line"], d["target"]["last_line"])
    after = Run.from_dict({**d, "run_id": B})
    diff = diff_runs(before, after)
    fn = next(f for f in views.functions_in(inserted, "rmsnorm.py") if f.qualname == "rmsnorm_naive")
    (placed,) = views.place([after], inserted, [fn])
    placed = dataclasses.replace(placed, diff=diff)
    labels = {h.position.line + 1: str(h.label) for h in views.inlay_hints(inserted, [placed], 0, 1, 1000)}
    assert labels[x_sq + 1].endswith(" · new")
    assert not labels[x_sq + 2].endswith("new") and "▲" not in labels[x_sq + 2]  # mean_sq, one line down, the same
    hover = views.hover([placed], x_sq + 1)
    assert hover is not None and "new since the previous run" in hover.contents.value  # type: ignore[union-attr]
    lenses = views.code_lenses("u", inserted, [fn], [placed])
    (lens,) = [c.command.title for c in lenses if c.command and "CPU" in c.command.title]
    assert lens.endswith(" · same as previous run")  # the totals kept their samples: the same
