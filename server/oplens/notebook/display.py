"""A notebook run shown in the output cell: HTML in Jupyter and VS Code (the function's source with each line's
time, share and bar; the op table with its device column labelled NEURON, CUDA or CPU; the insights), text in
a terminal IPython. The figures are the page model's (`views/lines.py`'s totals and line cells, `views/run.py`'s op
rows), as the results page, the CLI and the editor write them.
"""

from __future__ import annotations

import html
import linecache
from dataclasses import dataclass

from oplens.records.format import outliers_sentence, outside_sentence
from oplens.records.run import Run
from oplens.views.lines import LineCells, iterations_phrase, line_cells, totals_cells
from oplens.views.run import op_row

BAR = 24  # the text bar's width in characters
TOP_OPS = 15


@dataclass
class RunDisplay:
    """What `IPython.display.display` shows: `_repr_html_` in a notebook, `__repr__` in a terminal."""

    run: Run
    run_dir: str

    def __repr__(self) -> str:
        return text(self.run, self.run_dir)

    def _repr_html_(self) -> str:
        return html_of(self.run, self.run_dir)


def headline(run: Run) -> str:
    """The function's totals per iteration: one run of the statement (with `-f`, every call of the function in it)."""
    t = totals_cells(run)
    cpu = f" · CPU {t.self_cpu}" if t.on_device else ""
    return f"{run.target.qualname}: {t.label} {t.self_device} per iteration{cpu} · {t.op_calls} ops · {iterations_phrase(run)}"


def _source(run: Run) -> list[str]:
    """The function's lines as profiled (an older run keeps none: its file's, where it is still there)."""
    t = run.target
    if t.source:
        return t.source.splitlines()
    lines = [line.rstrip("\n") for line in linecache.getlines(t.file)[t.first_line - 1 : t.last_line]]
    return lines or [""] * (t.last_line - t.first_line + 1)


def _rows(run: Run) -> list[tuple[int, str, float, LineCells | None, bool]]:
    """(line, its text, its share % (the bar's length), its cells (None: no op ran on it), whether it took time) for
    each line of the function."""
    by_line = {s.line: s for s in run.lines}
    out = []
    for i, code in enumerate(_source(run)):
        n = run.target.first_line + i
        s = by_line.get(n)
        timed = s is not None and bool(s.self_device_us or s.pct_device)
        out.append((n, code, s.pct_device if s is not None else 0.0, line_cells(s) if s is not None else None, timed))
    return out


def text(run: Run, run_dir: str) -> str:
    totals = totals_cells(run)
    label, cpu = totals.label, totals.on_device
    lines = [headline(run), *filter(None, [outliers_sentence(run), outside_sentence(run)]), ""]
    rows = _rows(run)
    width = max((len(code) for _, code, *_ in rows), default=0)
    walls = any(c is not None and c.wall for *_, c, _ in rows)  # each line's wall time (older runs: none)
    for n, code, pct, c, timed in rows:
        bar = "█" * round(BAR * pct / 100.0)
        figures = f"{c.self_device:>11} {c.share_device:>7} {bar:<{BAR}}" if c is not None and timed else " " * (20 + BAR)
        if walls and c is not None and c.wall:
            figures += f"  wall {c.wall:>10}" + (f", {c.outside_ops} outside ops" if c.outside_ops else "")
        lines.append(f"{n:>5}  {code:<{min(width, 80)}}  {figures}".rstrip())
    lines += ["", f"{'op':<40} {'calls':>7} {'Self ' + label:>13}" + (f" {'Self CPU':>11}" if cpu else "")]
    for op in run.ops[:TOP_OPS]:
        row = op_row(op)
        lines.append(f"{op.name[:40]:<40} {row.calls:>7} {row.self_device:>13}" + (f" {row.self_cpu:>11}" if cpu else ""))
    if run.insights:
        lines.append("")
        lines += [f"line {i.line}: {i.message}" for i in run.insights]
    lines += ["", f"run {run.run_id} · {run_dir}"]
    return "\n".join(lines)


def html_of(run: Run, run_dir: str) -> str:
    totals = totals_cells(run)
    label, cpu = html.escape(totals.label), totals.on_device
    rows = []
    all_rows = _rows(run)
    walls = any(c is not None and c.wall for *_, c, _ in all_rows)
    for n, code, pct, c, timed in all_rows:
        bar = f'<div style="background:#e8590c;height:0.8em;width:{pct:.1f}%"></div>' if pct else ""
        calls = c.op_calls if c is not None and c.op_calls != "0" else ""
        rows.append(
            f'<tr><td style="text-align:right;color:#888">{n}</td>'
            f'<td style="text-align:left"><pre style="margin:0">{html.escape(code)}</pre></td>'
            f'<td style="text-align:right">{c.self_device if c is not None and timed else ""}</td>'
            f'<td style="text-align:right">{c.share_device if c is not None and timed else ""}</td>'
            f'<td style="width:10em">{bar}</td><td style="text-align:right">{calls}</td>'
            + (f'<td style="text-align:right">{c.wall if c is not None else ""}</td>'
               f'<td style="text-align:right">{c.outside_ops if c is not None else ""}</td>' if walls else "")
            + "</tr>"
        )
    op_rows = [(o, op_row(o)) for o in run.ops[:TOP_OPS]]
    ops = "".join(
        f"<tr><td style='text-align:left'><code>{html.escape(o.name)}</code></td><td>{row.calls}</td>"
        f"<td>{row.self_device}</td>" + (f"<td>{row.self_cpu}</td>" if cpu else "")
        + f"<td>{row.share}</td></tr>"
        for o, row in op_rows
    )
    insights = "".join(f"<li>line {i.line}: {html.escape(i.message)}</li>" for i in run.insights)
    return (
        f'<div class="oplens-run" data-run-id="{html.escape(run.run_id)}">'
        f"<b>{html.escape(headline(run))}</b>"
        + (f'<div style="color:#b8860b">{html.escape(outliers_sentence(run))}</div>' if outliers_sentence(run) else "")
        + (f'<div style="color:#888">{html.escape(outside_sentence(run))}</div>' if outside_sentence(run) else "")
        +
        f'<table class="oplens-lines"><thead><tr><th>line</th><th style="text-align:left">source</th>'
        f"<th>Self {label}</th><th>share</th><th></th><th>ops</th>"
        + ("<th>wall</th><th>outside ops</th>" if walls else "") + f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f'<table class="oplens-ops"><thead><tr><th style="text-align:left">op</th><th>calls</th><th>Self {label}</th>'
        + ("<th>Self CPU</th>" if cpu else "") + f"<th>% {label}</th></tr></thead><tbody>{ops}</tbody></table>"
        + (f"<ul>{insights}</ul>" if insights else "")
        + f'<div style="color:#888">run {html.escape(run.run_id)} · {html.escape(run_dir)}</div></div>'
    )
