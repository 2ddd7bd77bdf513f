"""The program overview's results page, built by the server (`oplens.views.overview`, issue 32 part 1):
its headline and figures, the functions table, the icicle's nodes and the modules, every word written
(the webview draws them, the bars and frames sized from the overview's times).

The overview is extension/test/fixtures/overview.expected.json's `run` (make_fixtures.py,
overview_fixture): a step calling a model's forward twice and a loss, the forward calling a helper."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from oplens.records.overview import ModuleStat, OverviewRun
from oplens.views.overview import OverviewView, overview_page

FIXTURE = Path(__file__).resolve().parents[2] / "extension" / "test" / "fixtures" / "overview.expected.json"
Json = dict[str, Any]


@pytest.fixture()
def fixture() -> Json:
    data: Json = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return data


def run_of(data: Json, **overview: Any) -> OverviewRun:
    d = copy.deepcopy(data["run"])
    d["overview"] = {**d["overview"], **overview}
    return OverviewRun.from_dict(d)


def test_the_answers_carry_the_page(fixture: Json) -> None:
    page = overview_page(run_of(fixture))
    assert fixture["by_self"]["page"] == page.to_dict()
    assert fixture["by_total"]["page"] == page.to_dict(), "the page lists every function, whatever the sort or limit"


def test_the_headline_and_the_figures(fixture: Json) -> None:
    page = overview_page(run_of(fixture))
    assert page.title == "overview of step: CPU 0.5 µs/step over 1 step" == fixture["by_self"]["title"]
    assert (page.label, page.per) == ("CPU", "step")
    assert page.sub == "train.py 12 · 2026-12-03 12:00:00 UTC"
    assert [(s.label, s.value, s.note) for s in page.stats] == [
        ("CPU time", "0.5 µs", "per step"),
        ("Steps", "1", "profiled, each recorded whole"),
        ("Functions", "4", "of yours, seen in the window"),
    ]


def test_the_functions_hottest_first_each_with_its_lens_words(fixture: Json) -> None:
    page = overview_page(run_of(fixture))
    assert [(f.qualname, f.where, f.self_share, f.total_share, f.calls) for f in page.functions] == [
        ("forward", "model.py:20", "49.0 %", "74.5 %", "2"),
        ("helper", "model.py:30", "25.5 %", "25.5 %", "1"),
        ("loss_of", "train.py:5", "17.6 %", "17.6 %", "1"),
        ("step", "train.py:10", "7.8 %", "100.0 %", "1"),
    ]
    assert [f.index for f in page.functions] == [0, 1, 2, 3]
    hot = {f["qualname"]: f["tooltip"] for f in fixture["by_self"]["functions"]}
    assert all(f.tooltip == hot[f.qualname] for f in page.functions), "a row's tooltip is its Hot Functions entry's"
    assert page.functions[0].tooltip == ("Program overview: self CPU 0.2 µs (49.0 %), total 0.4 µs (74.5 %), 2 calls "
                                         "per step; the mean over 1 profiled step")  # fmt: skip


def test_one_icicle_node_per_frame_its_share_of_the_whole_width(fixture: Json) -> None:
    page = overview_page(run_of(fixture))
    assert [n.label for n in page.nodes] == ["step", "forward", "helper", "loss_of"]
    assert page.nodes[1].title == "forward (/ws/pkg/model.py:20)\ntotal 0.4 µs/step (74.5 %), self 0.2 µs"
    assert page.nodes[0].title.startswith("step (/ws/train.py:10)\ntotal 0.5 µs/step (100.0 %)")
    assert "(0.5 µs the whole width)" in page.icicle_note
    assert overview_page(run_of(fixture, frames=[])).nodes == []


def test_a_time_window_on_a_device_its_modules_and_a_windows_path(fixture: Json) -> None:
    run = run_of(fixture, per="window", step="", window_s=5.0, delay_s=2.5, device_label="neuron", total_cpu_us=1500.0,
                  outside_user_device_us=250.0)  # fmt: skip
    run = dataclasses.replace(run, backend=dataclasses.replace(run.backend, name="neuron", device_label="NEURON"))
    assert run.overview is not None
    run.overview.modules.append(ModuleStat(path="model.up", type="Linear", self_device_us=1200.0, total_device_us=2400.0,
                                           calls=1.5, pct_total=42.04))  # fmt: skip
    run.overview.functions[0].file = "C:\\ws\\pkg\\model.py"
    page: OverviewView = overview_page(run)
    assert (page.label, page.per) == ("NEURON", "window")
    assert page.title.startswith("overview of a time window: neuron ")
    assert [(s.label, s.value, s.note) for s in page.stats] == [
        ("NEURON time", "0.5 µs", "per window"),
        ("CPU time", "1.50 ms", "per window"),
        ("Window", "5 s", "from 2.5 s after the start"),
        ("Functions", "4", "of yours, seen in the window"),
        ("Outside your code", "250.0 µs", "per window: under none of your frames"),
    ]
    assert page.functions[0].where == "model.py:20"
    assert "the mean over the time window" in page.functions[0].tooltip
    (m,) = page.modules
    assert (m.path, m.type, m.self_device, m.total_device, m.total_share, m.calls) == (
        "model.up", "Linear", "1.20 ms", "2.40 ms", "42.0 %", "1.5")  # fmt: skip


def test_without_a_function_of_the_users_every_function_is_listed_untitled(fixture: Json) -> None:
    data = copy.deepcopy(fixture)
    for f in data["run"]["overview"]["functions"]:
        f["def_line"] = 0  # a module's top level, not a function Hot Functions lists
    page = overview_page(run_of(data))
    assert len(page.functions) == 4 and all(f.tooltip == "" for f in page.functions)
