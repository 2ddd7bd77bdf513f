"""The notebook's output cell (`notebook/display.py`) for a stored run: the function's source with each line's
time, share and bar, the op table labelled by the device, the insights; HTML in a notebook, text in a terminal."""

from __future__ import annotations

from conftest import EXAMPLE, stored_run
from oplens.notebook.display import RunDisplay
from oplens.records.format import fmt_us
from oplens.records.run import Run


def test_text_and_html_show_each_line_with_its_time_share_and_the_op_table() -> None:
    run = Run.from_dict(stored_run())
    run.target.file = str(EXAMPLE)  # recorded on another machine, before runs kept their source: read from the file
    shown = RunDisplay(run, "/runs/x")
    text = repr(shown)
    assert text.startswith(f"{run.target.qualname}: CPU {fmt_us(run.totals.self_device_us)} per iteration")
    hot = max(run.lines, key=lambda s: s.self_device_us)
    row = next(line for line in text.splitlines() if line.lstrip().startswith(f"{hot.line}  "))
    assert fmt_us(hot.self_device_us) in row and f"{hot.pct_device:5.1f} %" in row and "█" in row
    assert "Self CPU" in text and run.ops[0].name in text and f"run {run.run_id}" in text
    html = shown._repr_html_()
    assert f'data-run-id="{run.run_id}"' in html and "<th>Self CPU</th>" in html
    assert "x_sq = x * x" in html and "mean_sq = x_sq.mean(dim=-1, keepdim=True)" in text
    for i in run.insights:
        assert f"line {i.line}:" in text
