"""A notebook run shown in the output cell: HTML in Jupyter and VS Code (the function's source with each line's
time, share and bar; the op table with its device column labelled NEURON, CUDA or CPU; the insights), text in
a terminal IPython. The numbers are written as everywhere else in OpLens (`records/format.py`).
"""

from __future__ import annotations

import html
import linecache
from dataclasses import dataclass

from oplens.backends import registry
from oplens.records.format import fmt_share, fmt_us, outliers_sentence, outside_sentence
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


def _on_device(run: Run) -> bool:
    """A device apart from the host: its time and the host's are two figures (on the CPU, one)."""
    return registry.facts_of(run.backend.name).on_device


def headline(run: Run) -> str:
    """The function's totals per iteration: one run of the statement (with `-f`, every call of the function in it)."""
    t = run.totals
    cpu = f" · CPU {fmt_us(t.self_cpu_us)}" if _on_device(run) else ""
    return (f"{run.target.qualname}: {_label(run)} {fmt_us(t.self_device_us)} per iteration{cpu} · "
            f"{t.op_calls:g} ops · {run.config.iters} iterations after {run.config.warmup} warm-up")  # fmt: skip


def _source(run: Run) -> list[str]:
    """The function's lines as profiled (an older run keeps none: its file's, where it is still there)."""
    t = run.target
    if t.source:
        return t.source.splitlines()
    lines = [line.rstrip("\n") for line in linecache.getlines(t.file)[t.first_line - 1 : t.last_line]]
    return lines or [""] * (t.last_line - t.first_line + 1)


def _rows(run: Run) -> list[tuple[int, str, float, float, int]]:
    """(line, its text, self device µs, share %, op calls) for each line of the function."""
    by_line = {s.line: s for s in run.lines}
    out = []
    for i, code in enumerate(_source(run)):
        n = run.target.first_line + i
        s = by_line.get(n)
        out.append((n, code, s.self_device_us if s else 0.0, s.pct_device if s else 0.0, round(s.op_calls) if s else 0))
    return out


def text(run: Run, run_dir: str) -> str:
    label = _label(run)
    lines = [headline(run), *filter(None, [outliers_sentence(run), outside_sentence(run)]), ""]
    width = max((len(c) for _, c, *_ in _rows(run)), default=0)
    for n, code, us, pct, _ in _rows(run):
        bar = "█" * round(BAR * pct / 100.0)
        figures = f"{fmt_us(us):>11} {pct:5.1f} % {bar}" if us or pct else ""
        lines.append(f"{n:>5}  {code:<{min(width, 80)}}  {figures}".rstrip())
    cpu = _on_device(run)
    lines += ["", f"{'op':<40} {'calls':>7} {'Self ' + label:>13}" + (f" {'Self CPU':>11}" if cpu else "")]
    for op in run.ops[:TOP_OPS]:
        lines.append(f"{op.name[:40]:<40} {op.calls:>7g} {fmt_us(op.self_device_us):>13}"
                     + (f" {fmt_us(op.self_cpu_us):>11}" if cpu else ""))  # fmt: skip
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
    cpu = _on_device(run)
    ops = "".join(
        f"<tr><td style='text-align:left'><code>{html.escape(o.name)}</code></td><td>{o.calls:g}</td>"
        f"<td>{fmt_us(o.self_device_us)}</td>" + (f"<td>{fmt_us(o.self_cpu_us)}</td>" if cpu else "")
        + f"<td>{fmt_share(o.pct)}</td></tr>"
        for o in run.ops[:TOP_OPS]
    )
    insights = "".join(f"<li>line {i.line}: {html.escape(i.message)}</li>" for i in run.insights)
    return (
        f'<div class="oplens-run" data-run-id="{html.escape(run.run_id)}">'
        f"<b>{html.escape(headline(run))}</b>"
        + (f'<div style="color:#b8860b">{html.escape(outliers_sentence(run))}</div>' if outliers_sentence(run) else "")
        + (f'<div style="color:#888">{html.escape(outside_sentence(run))}</div>' if outside_sentence(run) else "")
        +
        f'<table class="oplens-lines"><thead><tr><th>line</th><th style="text-align:left">source</th>'
        f"<th>Self {label}</th><th>share</th><th></th><th>ops</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f'<table class="oplens-ops"><thead><tr><th style="text-align:left">op</th><th>calls</th><th>Self {label}</th>'
        + ("<th>Self CPU</th>" if cpu else "") + f"<th>% {label}</th></tr></thead><tbody>{ops}</tbody></table>"
        + (f"<ul>{insights}</ul>" if insights else "")
        + f'<div style="color:#888">run {html.escape(run.run_id)} · {html.escape(run_dir)}</div></div>'
    )
