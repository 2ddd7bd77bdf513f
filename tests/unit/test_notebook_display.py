"""The notebook's output cell (`notebook/display.py`) for a stored run: the function's source with each line's
time, share and bar, the op table labelled by the device, the insights; HTML in a notebook, text in a terminal."""

from __future__ import annotations

from oplens.notebook.display import RunDisplay
from oplens.records.format import fmt_us
from oplens.records.run import Run
from support.paths import EXAMPLE
from support.stored import stored_run


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


def test_stalled_calls_are_said_in_the_cell_and_the_hover_as_the_cli_says_them() -> None:
    from oplens.lsp import views
    from oplens.records.run import OutlierCall, Outliers

    run = Run.from_dict(stored_run())
    run.target.file = str(EXAMPLE)
    note = "1 of 20 calls left out of the figures as an outlier (the same work as the others, far slower: a stall)"
    run.totals.outliers = Outliers(calls=[OutlierCall(3, 900.0, 900.0, 40.0)], kept=19, profiled=20, works=1, note=note)
    shown = RunDisplay(run, "/runs/x")
    assert repr(shown).splitlines()[1] == note and note in shown._repr_html_()
    assert f"⚠ {note}" in views.line_markdown(run, run.lines[0])
    run.totals.outliers = Outliers(kept=20, profiled=20, works=1)  # none left out: nothing said
    assert "left out" not in repr(shown) and "⚠" not in views.line_markdown(run, run.lines[0])
