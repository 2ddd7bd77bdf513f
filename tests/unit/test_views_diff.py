"""The results page's "vs previous run" view, built by the server (`oplens.views.diff`): its assertions
moved here with the builder from extension/src/diff/diffView.test.ts (issue 32, part 1).

The diff is extension/test/fixtures/diff.expected.json, the server's own `oplens.diff` answer
(views.diff_answer over engine.diff): rmsnorm_naive against a later run whose x_sq line was edited to
take 5× and rsqrt a third."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from oplens.engine.diff import FunctionDiff, LineChange, TotalsChange
from oplens.records.format import fmt_p, when
from oplens.records.run import Run
from oplens.views.diff import DiffView, diff_page

ANSWER = Path(__file__).resolve().parents[2] / "extension" / "test" / "fixtures" / "diff.expected.json"
Json = dict[str, Any]


@pytest.fixture()
def answer() -> Json:
    data: Json = json.loads(ANSWER.read_text(encoding="utf-8"))
    return data


def view(data: Json) -> DiffView:
    before, after = Run.from_dict(data["before"]), Run.from_dict(data["after"])
    diff = FunctionDiff(before, after, [LineChange(**c) for c in data["lines"]], TotalsChange(**data["totals"]), data["method"])
    page = diff_page(after, diff, data["earlier"])
    assert page.view is not None, "a view, not a message"
    return page.view


def test_the_answer_carries_its_page(answer: Json) -> None:
    assert answer["page"]["view"]["after_run_id"] == "20261201-104500-rmsnorm_naive-bbbbbb"
    assert answer["page"] == {"view": json.loads(json.dumps(view(answer), default=vars)), "message": ""}


def test_a_first_run_has_a_message_not_a_view(answer: Json) -> None:
    page = diff_page(Run.from_dict(answer["after"]), None, [])
    assert page.view is None and re.search("no earlier run", page.message)


def test_one_row_per_line_before_after_the_change_marked_like_the_server_hints(answer: Json) -> None:
    v = view(answer)
    x_sq, mean, _, rsqrt, _, ret = v.rows
    assert v.label == "CPU"
    assert v.against == "previous run"
    assert (x_sq.before_line, x_sq.after_line, x_sq.change, x_sq.verdict) == (25, 25, "▲ 5.0×", "slower")
    assert re.match(r"^x_sq = \(x \* x\)\.repeat", x_sq.text)
    assert re.search(r"ms$", x_sq.before)
    # p Holm-corrected over the lines tested (issue 37): 6 lines' smallest raw p (< 0.0001) times 6 at most
    assert re.match(r"^line 25 → 25: .* → .*, ×5\.00, p = (< 0\.0001|0\.000\d+) \(slower\)$", x_sq.title)
    assert ret.change == "▼ 67 %"
    assert ret.verdict == "faster"
    assert rsqrt.verdict == "same", "under 1 % of the time in both runs: too small to judge"
    assert mean.change == "+0 %", "a same line shows its (small) change"
    assert mean.verdict == "same"


def test_the_totals_in_the_words_of_the_lens_and_the_runs_for_the_header(answer: Json) -> None:
    v = view(answer)
    assert v.totals.verdict == "slower"
    assert v.totals.phrase == f"{v.totals.change} slower than previous run"
    assert re.match(r"^▲ 2\.8×$", v.totals.change)
    assert re.match(r"^2026-12-01 10:30:00 · args make_inputs\(2,128,256\) · 12 iterations · "
                    r"20261201-103000-rmsnorm_naive-aaaaaa$", v.runs_before)
    assert re.search(r"Mann-Whitney .* p < 0\.01 .*10 %.*here ×1\.00, "
                     r"from the largest move of an unchanged line \(×1\.00\)", v.method)
    assert v.notes == []


def test_the_picker_lists_the_earlier_runs_newest_first_the_previous_one_named(answer: Json) -> None:
    older = {"run_id": "20261130-090000-rmsnorm_naive-cccccc", "created": "2026-11-30T09:00:00+0000", "self_device_us": 21000,
             "device_label": "CPU", "args": ""}
    answer["earlier"] = [*answer["earlier"], older]
    v = view(answer)
    assert [(e.run_id, e.label) for e in v.earlier] == [
        ("20261201-103000-rmsnorm_naive-aaaaaa", "2026-12-01 10:30:00 · CPU 19.50 ms · make_inputs(2,128,256) (previous run)"),
        ("20261130-090000-rmsnorm_naive-cccccc", "2026-11-30 09:00:00 · CPU 21.00 ms"),
    ]
    assert v.before_run_id == "20261201-103000-rmsnorm_naive-aaaaaa"


def test_against_another_pick_than_the_previous_run_the_sentence_names_its_time(answer: Json) -> None:
    answer["earlier"] = [{"run_id": "20261201-110000-rmsnorm_naive-dddddd", "created": "2026-12-01T11:00:00+0000",
                          "self_device_us": 1, "device_label": "CPU", "args": ""}, *answer["earlier"]]
    v = view(answer)
    assert v.against == "the run of 2026-12-01 10:30:00"
    assert re.search(r"slower than the run of 2026-12-01 10:30:00$", v.totals.phrase)


def test_says_what_besides_the_edit_may_explain_a_change(answer: Json) -> None:
    data = copy.deepcopy(answer)
    after = data["after"]
    data["after"] = {**after, "config": {**after["config"], "args": "make_inputs()"}}
    assert re.search(r"different arguments \(make_inputs\(2,128,256\), then make_inputs\(\)\)", view(data).notes[0])
    data["after"] = {**after, "target": data["before"]["target"]}
    assert re.search("same in both runs", view(data).notes[0])


def test_small_helpers() -> None:
    assert when("2026-12-01T10:30:00+0000") == "2026-12-01 10:30:00"
    assert when("2026-12-01T10:30:00-0500") == "2026-12-01 10:30:00"
    assert fmt_p(0.0123) == "0.012"
    assert fmt_p(0.00001) == "< 0.0001"
