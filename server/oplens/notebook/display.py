"""A notebook run shown in the output cell: HTML in Jupyter and VS Code (the function's source with each line's
time, share and bar; the op table with its device column labelled NEURON, CUDA or CPU; the insights), text in
a terminal IPython. The numbers are written as everywhere else in OpLens (`records/format.py`).
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from oplens.records.format import fmt_share, fmt_us
from oplens.records.run import Run

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


def _label(run: Run) -> str:
    return run.backend.device_label


def headline(run: Run) -> str:
    t = run.totals
    return (f"{run.target.qualname}: {_label(run)} {fmt_us(t.self_device_us)} per call · CPU {fmt_us(t.self_cpu_us)} · "
            f"{t.op_calls:g} ops · {run.config.iters} iterations after {run.config.warmup} warm-up")  # fmt: skip


def _rows(run: Run) -> list[tuple[int, str, float, float, int]]:
    """(line, its text, self device µs, share %, op calls) for each line of the function."""
    by_line = {s.line: s for s in run.lines}
    out = []
    for i, code in enumerate(run.target.source.splitlines()):
        n = run.target.first_line + i
        s = by_line.get(n)
        out.append((n, code, s.self_device_us if s else 0.0, s.pct_device if s else 0.0, round(s.op_calls) if s else 0))
    return out


def text(run: Run, run_dir: str) -> str:
    label = _label(run)
    lines = [headline(run), ""]
    width = max((len(c) for _, c, *_ in _rows(run)), default=0)
    for n, code, us, pct, _ in _rows(run):
        bar = "█" * round(BAR * pct / 100.0)
        figures = f"{fmt_us(us):>11} {pct:5.1f} % {bar}" if us or pct else ""
        lines.append(f"{n:>5}  {code:<{min(width, 80)}}  {figures}".rstrip())
    lines += ["", f"{'op':<40} {'calls':>7} {'Self ' + label:>13} {'Self CPU':>11}"]
    for op in run.ops[:TOP_OPS]:
        lines.append(f"{op.name[:40]:<40} {op.calls:>7g} {fmt_us(op.self_device_us):>13} {fmt_us(op.self_cpu_us):>11}")
    if run.insights:
        lines.append("")
        lines += [f"line {i.line}: {i.message}" for i in run.insights]
    lines += ["", f"run {run.run_id} · {run_dir}"]
    return "\n".join(lines)


def html_of(run: Run, run_dir: str) -> str:
    label = html.escape(_label(run))
    rows = []
    for n, code, us, pct, calls in _rows(run):
        bar = f'<div style="background:#e8590c;height:0.8em;width:{pct:.1f}%"></div>' if pct else ""
        rows.append(
            f'<tr><td style="text-align:right;color:#888">{n}</td>'
            f'<td style="text-align:left"><pre style="margin:0">{html.escape(code)}</pre></td>'
            f'<td style="text-align:right">{fmt_us(us) if us or pct else ""}</td>'
            f'<td style="text-align:right">{fmt_share(pct) if us or pct else ""}</td>'
            f'<td style="width:10em">{bar}</td><td style="text-align:right">{calls or ""}</td></tr>'
        )
    ops = "".join(
        f"<tr><td style='text-align:left'><code>{html.escape(o.name)}</code></td><td>{o.calls:g}</td>"
        f"<td>{fmt_us(o.self_device_us)}</td><td>{fmt_us(o.self_cpu_us)}</td><td>{fmt_share(o.pct)}</td></tr>"
        for o in run.ops[:TOP_OPS]
    )
    insights = "".join(f"<li>line {i.line}: {html.escape(i.message)}</li>" for i in run.insights)
    return (
        f'<div class="oplens-run" data-run-id="{html.escape(run.run_id)}">'
        f"<b>{html.escape(headline(run))}</b>"
        f'<table class="oplens-lines"><thead><tr><th>line</th><th style="text-align:left">source</th>'
        f"<th>Self {label}</th><th>share</th><th></th><th>ops</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f'<table class="oplens-ops"><thead><tr><th style="text-align:left">op</th><th>calls</th><th>Self {label}</th>'
        f"<th>Self CPU</th><th>% {label}</th></tr></thead><tbody>{ops}</tbody></table>"
        + (f"<ul>{insights}</ul>" if insights else "")
        + f'<div style="color:#888">run {html.escape(run.run_id)} · {html.escape(run_dir)}</div></div>'
    )
