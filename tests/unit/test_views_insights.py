"""Each kind of insight's tag on the results page, written once in Python (`oplens.views.insights`): the run
page's insight rows carry it (`oplens.views.run`; issue 32, part 1)."""

from __future__ import annotations

import re
from pathlib import Path

from oplens.views.insights import INSIGHT_LABELS, insight_label

ANALYSIS = Path(__file__).resolve().parents[2] / "server" / "oplens" / "analysis"


def test_every_kind_the_analysis_writes_has_a_tag() -> None:
    kinds = {k for p in ANALYSIS.glob("*.py") for k in re.findall(r'\bkind="([a-z_]+)",\n', p.read_text(encoding="utf-8"))}
    assert {"hot_line", "fusable_chain", "host_to_device_copy", "straggler", "headroom"} <= kinds
    assert all(insight_label(k) for k in kinds)
    assert insight_label("host_to_device_copy") == "host→device copy"
    assert insight_label("temporary") == "temporary", "a kind not named: its name with spaces"
    assert insight_label("some_new_kind") == "some new kind"
    assert set(INSIGHT_LABELS) <= kinds, "a label for a kind no rule writes"
