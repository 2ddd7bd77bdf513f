"""A distributed run's words come from the server: a plain LSP client (pytest-lsp, no VS Code) opens
the file of a run merged from three ranks and gets, through `textDocument/inlayHint` and
`textDocument/hover`, each line's median across ranks, its spread, the straggler and a row per rank;
`oplens.rankPart` answers one rank's own run (its part, read on the server's host) and announces
nothing; `oplens.runPage` the results page of the merged run or of one rank's. The run is the
extension's fixture `rmsnorm_naive.ranks.result.json` (three ranks merged by `analysis.ranks.merge`:
rank 1 three times slower on line 25, every rank ending in an all_reduce on line 30 where ranks 0 and 2
wait for rank 1), stored here with its parts and a fourth rank that failed."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pytest_lsp import LanguageClient

from oplens.records import names
from oplens.records.format import fmt_roofline_pct, fmt_us_range, fmt_us_span, text_bar
from support.lsp import open_doc, plain, served_client
from support.paths import ROOT

FIXTURES = ROOT / "extension" / "test" / "fixtures"
MERGED = FIXTURES / "rmsnorm_naive.ranks.result.json"
SINGLE = FIXTURES / "rmsnorm_naive.cpu.result.json"
EXAMPLE = ROOT / "examples" / "rmsnorm.py"
RUN_ID = "20261201-110000-rmsnorm_naive-cccccc"
FAILED = {"rank": 3, "local_rank": 3, "world_size": 4, "host": "node-a", "device": "cpu", "part": "", "pid": 4203,
          "failed": "killed by SIGKILL"}  # fmt: skip


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """rmsnorm.py and, in its runs directory, the merged run with each rank's part under ranks/<R>/."""
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    source = ws / "rmsnorm.py"
    shutil.copy(EXAMPLE, source)
    run_dir = ws / ".oplens" / "runs" / RUN_ID
    merged = json.loads(MERGED.read_text())
    merged["target"]["file"] = str(source)
    merged["run_dir"] = "/elsewhere/runs/" + RUN_ID  # where it was written: the server finds it where it is now
    merged["ranks"].append(FAILED)
    for info in merged["ranks"][:3]:
        part = json.loads(SINGLE.read_text())
        part["target"]["file"] = str(source)
        part.update(run_id=f"{RUN_ID}/{info['part']}", run_dir="", ranks=[info])  # as `oplens run` stores a part
        (run_dir / info["part"]).mkdir(parents=True)
        (run_dir / info["part"] / "result.json").write_text(json.dumps(part))
    (run_dir / "result.json").write_text(json.dumps(merged))
    return ws


@pytest_asyncio.fixture
async def client(workspace: Path) -> AsyncIterator[LanguageClient]:
    async with served_client(workspace, editor="neovim") as c:  # any editor: nothing here is VS Code's
        yield c


async def hints(client: LanguageClient, uri: str) -> dict[int, lsp.InlayHint]:
    """The hints of the file by 1-based line."""
    whole = lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=10_000, character=0))
    found = await client.text_document_inlay_hint_async(
        lsp.InlayHintParams(text_document=lsp.TextDocumentIdentifier(uri=uri), range=whole))  # fmt: skip
    return {h.position.line + 1: h for h in found or []}


async def hover(client: LanguageClient, uri: str, line: int) -> str:
    found = await client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=line - 1, character=4)))  # fmt: skip
    assert found is not None and isinstance(found.contents, lsp.MarkupContent), f"no hover on line {line}"
    return found.contents.value


async def rank_part(client: LanguageClient, *args: Any) -> Any:
    params = lsp.ExecuteCommandParams(command=names.RANK_PART_COMMAND, arguments=list(args))
    return plain(await asyncio.wait_for(client.workspace_execute_command_async(params), 30))


async def test_the_hints_say_the_median_across_ranks_the_spread_and_the_straggler(
    client: LanguageClient, workspace: Path
) -> None:
    uri = open_doc(client, workspace / "rmsnorm.py")
    found = await hints(client, uri)
    labels = {n: h.label for n, h in found.items()}
    # the run's own figure for line 25 is the mean over ranks, 15.02 ms: the hint says the median
    assert labels[25] == "9.01 ms · 57.9 % · 9.0–27.0 ms · ⚠ rank 1"
    assert labels[26] == "4.89 ms · 18.8 % · ranks 4.89 ms"
    assert labels[30] == "2.20 ms · 7.9 % · ranks 1.75–2.22 ms"
    assert all(len(str(label)) <= 43 for label in labels.values())  # what VS Code shows of a line's hints
    assert found[25].tooltip == ("Self CPU per iteration over 12 iterations; the median across 3 ranks (mean 15.02 ms); "
                                 "rank 1 is the straggler")  # fmt: skip
    assert found[30].tooltip == ("Self CPU per iteration over 12 iterations; the median across 3 ranks (mean 2.06 ms); "
                                 "rank 2 the slowest")  # fmt: skip
    assert found[26].tooltip == "Self CPU per iteration over 12 iterations; the median across 3 ranks (mean 4.89 ms)"


async def test_the_hover_has_a_row_per_rank_after_its_headline(client: LanguageClient, workspace: Path) -> None:
    uri = open_doc(client, workspace / "rmsnorm.py")
    text = await hover(client, uri, 30)
    headline, ranks, *_ = text.split("\n\n")
    assert headline.startswith("**OpLens** · line 30: Self CPU 2.06 ms")  # the mean over ranks, said as such below
    assert ranks == "**Ranks** · median 2.20 ms across 3 ranks, 1.75–2.22 ms"
    assert "\n".join([
        "```text",
        "rank 0  ███████████▉  2.20 ms  (600.0 µs in collectives)",
        "rank 1  █████████▌    1.75 ms  (150.0 µs in collectives)",
        "rank 2  ████████████  2.22 ms  (620.0 µs in collectives)  ◀ slowest",
        "```",
        "",
        "In collectives: 456.7 µs per call (mean over ranks), of 2.06 ms",
    ]) in text  # fmt: skip
    assert text.index("In collectives") < text.index("| op |")  # before the op table: seen without scrolling

    straggler = await hover(client, uri, 25)
    assert "\n\n**Ranks** · median 9.01 ms across 3 ranks, 9.01–27.04 ms · ⚠ rank 1 is the straggler\n\n" in straggler
    assert "rank 1  ████████████  27.04 ms  ◀ slowest ⚠ straggler" in straggler
    assert "rank 0  ████           9.01 ms" in straggler and "in collectives" not in straggler
    assert "rank 1 is the straggler on this line" in straggler  # the insight, as for any line


async def test_rank_part_answers_one_ranks_own_run_and_announces_nothing(client: LanguageClient, workspace: Path) -> None:
    run_dir = workspace / ".oplens" / "runs" / RUN_ID
    reply = await rank_part(client, {"run_id": RUN_ID, "rank": 1})
    part = reply["run"]
    assert reply["uri"] == (workspace / "rmsnorm.py").as_uri()
    assert part["run_id"] == f"{RUN_ID}/ranks/1" and part["run_dir"] == str(run_dir / "ranks" / "1")
    assert [r["rank"] for r in part["ranks"]] == [1]
    assert all(line["ranks"] is None for line in part["lines"])  # a run of its own: no spreads
    assert client.results == []  # type: ignore[attr-defined]  # the function's run is still the merged one

    with pytest.raises(JsonRpcException) as e:
        await rank_part(client, {"run_id": RUN_ID, "rank": 7})
    assert e.value.message == f"run {RUN_ID} has no rank 7"
    assert e.value.data["kind"] == "bad_input" and e.value.data["detail"] == "its ranks: 0, 1, 2, 3"  # type: ignore[index]
    with pytest.raises(JsonRpcException) as e:
        await rank_part(client, {"run_id": RUN_ID, "rank": 3})
    assert e.value.message == "rank 3 has no part: killed by SIGKILL"


async def test_run_page_answers_the_merged_runs_page_or_one_ranks(client: LanguageClient) -> None:
    """`oplens.runPage`: the results page as `oplens.views.run` writes it (tests/unit/test_views_run.py says what
    it says), of the merged run or of one rank's own run; it announces nothing."""
    params = lsp.ExecuteCommandParams(command=names.RUN_PAGE_COMMAND, arguments=[{"run_id": RUN_ID}])
    merged = plain(await asyncio.wait_for(client.workspace_execute_command_async(params), 30))["page"]
    assert merged["run_id"] == RUN_ID and merged["merged"] and merged["ranks_badge"] == "4 ranks"
    assert merged["stats"][0]["note"] == "per iteration, mean over ranks"
    assert merged["ranks"]["all_ranks"] == "All ranks (4, merged)" and len(merged["ranks"]["rows"]) == 3
    assert merged["ranks"]["failed"] == ["Rank 3 has no part: killed by SIGKILL"] and merged["ranks"]["options"][3]["disabled"]
    params = lsp.ExecuteCommandParams(command=names.RUN_PAGE_COMMAND, arguments=[{"run_id": RUN_ID, "rank": 1}])
    one = plain(await asyncio.wait_for(client.workspace_execute_command_async(params), 30))["page"]
    assert one["run_id"] == f"{RUN_ID}/ranks/1" and not one["merged"] and one["ranks_badge"] == "rank 1"
    assert one["ranks"]["note"] == "rank 1’s own run (ranks/1)"
    assert client.results == []  # type: ignore[attr-defined]
    params = lsp.ExecuteCommandParams(command=names.RUN_PAGE_COMMAND, arguments=[{"run_id": RUN_ID, "rank": 3}])
    with pytest.raises(JsonRpcException) as e:
        await asyncio.wait_for(client.workspace_execute_command_async(params), 30)
    assert e.value.message == "rank 3 has no part: killed by SIGKILL"


BAD_ARGUMENTS = [
    ([], "run_id is missing"),
    ([{"run_id": RUN_ID}], "rank is missing"),
    ([{"run_id": RUN_ID, "rank": "1"}], "rank must be an integer"),
    ([{"run_id": "20990101-000000-nothing-000000", "rank": 0}], "no run '20990101-000000-nothing-000000'"),
]


async def test_bad_arguments_are_invalid_params(client: LanguageClient) -> None:
    for args, needle in BAD_ARGUMENTS:  # one server for all: each start costs a second or two
        with pytest.raises(JsonRpcException) as e:
            await rank_part(client, *args)
        assert e.value.code == JsonRpcInvalidParams.CODE, args
        assert needle in e.value.message, (args, e.value.message)


def test_the_words_numbers_short_ranges_and_bars() -> None:
    """What the hints and hovers above are made of (`records/format.py`)."""
    spans = [((7100, 49100), "7.1–49.1 ms"), ((788, 22960), "0.8–23.0 ms"), ((1140, 3850), "1.14–3.85 ms"),
             ((75, 112.7), "75–113 µs"), ((9.5, 9.8), "9.5–9.8 µs"), ((4894.78, 4894.78), "4.89 ms"),
             ((150_000, 2_355_000), "150–2,355 ms"), ((float("nan"), 1), "–")]  # fmt: skip
    assert [fmt_us_span(*args) for args, _ in spans] == [text for _, text in spans]
    assert fmt_us_range(923.469, 21020.7475) == "923.5 µs–21.02 ms" and fmt_us_range(2000, 2000) == "2.00 ms"
    bars = [((1, 4), "████"), ((0, 4), "    "), ((0.5, 4), "██  "), ((0.32, 12), "███▉        "), ((0.0001, 4), "▏   "),
            ((float("nan"), 2), "  "), ((3, 2), "██")]  # fmt: skip
    assert [text_bar(*args) for args, _ in bars] == [text for _, text in bars]
    assert [fmt_roofline_pct(p) for p in (12.32, 4.54, 0.42)] == ["12 %", "4.5 %", "0.4 %"]
