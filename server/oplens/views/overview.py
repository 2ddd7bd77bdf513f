"""The results page of a program overview: its headline and figures, the user's functions (self and
total time per step, hottest first), the icicle chart's nodes (each frame's name and tooltip; the chart's
geometry, widths from the frames' times, is the webview's) and the modules. The figures are the
overview's (`analysis/functions.py`); the editor's lenses and Hot Functions list use the same words
(`lsp/overview_views.py`)."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from oplens.backends import registry
from oplens.records.format import device_label, fmt_count, fmt_share, fmt_us
from oplens.records.overview import FunctionStat, Overview, OverviewRun
from oplens.views.cells import PageStat

MODULE_ROWS = 200  # the modules the page lists; result.json has them all


@dataclass(frozen=True)
class OverviewFunctionRow:
    """One of the user's functions, its figures per step written."""

    index: int  # the function in `Overview.functions` (its bar's figures; Hot Functions' entry of the same index)
    qualname: str
    where: str  # `model.py:20`: its file's name and `def` line
    self_device: str
    self_share: str
    total_device: str
    total_share: str
    calls: str
    tooltip: str  # the row's tooltip, the words of its lens's; '' for a function Hot Functions does not list


@dataclass(frozen=True)
class IcicleNode:
    """A node of the call tree (one of `Overview.frames`, in the same order) as its frame says it."""

    label: str  # the function's name
    title: str  # its file, its total per step with its share of the chart, its self time


@dataclass(frozen=True)
class OverviewModuleRow:
    """One module (`nn.Module`) of the model, its figures per step written."""

    path: str
    type: str
    self_device: str
    total_device: str
    total_share: str
    calls: str


@dataclass(frozen=True)
class OverviewView:
    """The page of a program overview (`oplens.hotFunctions`' `page`), every word and figure written."""

    title: str  # `overview of train_step: CPU 220.21 ms/step over 4 steps`
    label: str  # `CPU`, `NEURON`, ...: the time columns' label
    per: str  # what the figures are per: `step` or `window`
    sub: str  # the program as it ran, and when
    stats: list[PageStat]
    functions: list[OverviewFunctionRow]  # by self time, then total time, highest first
    nodes: list[IcicleNode]  # one per frame of the call tree; none where its frames have no time
    icicle_note: str  # how to read the chart, with the time its whole width stands for
    modules: list[OverviewModuleRow]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def per_word(o: Overview) -> str:
    """What the figures are per: `step`, or `window` (a time window's whole length)."""
    return o.per or "step"


def seen(f: FunctionStat) -> bool:
    """A function of the user's with a `def` (not a module's top level)."""
    return not f.qualname.startswith("<") and f.def_line > 0


def overview_title(run: OverviewRun) -> str:
    """`overview of train_step: CPU 220.21 ms/step over 4 steps`: the overview's headline."""
    o = run.overview
    what = f"overview of {o.step.rsplit('::', 1)[-1]}" if o.step else "overview of a time window"
    over = f" over {o.steps} step{'s' if o.steps != 1 else ''}" if per_word(o) == "step" else ""
    partial = " (partial)" if run.capture is not None and run.capture.partial else ""
    return f"{what}: {o.device_label} {fmt_us(o.total_device_us)}/{per_word(o)}{over}{partial}"


def function_tooltip(o: Overview, f: FunctionStat) -> str:
    """A function's figures in a sentence (its lens's tooltip, its row's on the page)."""
    steps = f"{o.steps} profiled step{'s' if o.steps != 1 else ''}" if per_word(o) == "step" else "the time window"
    calls = f"{fmt_count(f.calls)} call{'' if f.calls == 1 else 's'}"
    return (f"Program overview: self {o.device_label} {fmt_us(f.self_device_us)} ({fmt_share(f.pct_self)}), total "
            f"{fmt_us(f.total_device_us)} ({fmt_share(f.pct_total)}), {calls} per {per_word(o)}; "
            f"the mean over {steps}")  # fmt: skip


def overview_page(run: OverviewRun) -> OverviewView:
    """The page of `run`'s overview."""
    o = run.overview
    label, per = device_label(o.device_label), per_word(o)
    listed = [i for i, f in enumerate(o.functions) if seen(f)] or list(range(len(o.functions)))
    order = sorted(listed, key=lambda i: (-o.functions[i].self_device_us, -o.functions[i].total_device_us))
    return OverviewView(
        title=overview_title(run),
        label=label,
        per=per,
        sub=_sub(run),
        stats=_stats(run, o, label, per, len(listed)),
        functions=[_function_row(o, i) for i in order],
        nodes=_nodes(o, per),
        icicle_note=f"Each frame is one of your functions along one path from the top; its width its total time "
                    f"({fmt_us(_icicle_total(o))} the whole width), its colour how much of it is its own. Click a frame "
                    "to go there.",  # fmt: skip
        modules=[OverviewModuleRow(path=m.path, type=m.type, self_device=fmt_us(m.self_device_us),
                                   total_device=fmt_us(m.total_device_us), total_share=fmt_share(m.pct_total),
                                   calls=fmt_count(m.calls)) for m in o.modules[:MODULE_ROWS]],  # fmt: skip
    )


def _sub(run: OverviewRun) -> str:
    c = run.capture
    program = f"{c.program} {' '.join(c.argv)}" if c is not None else ""
    created = run.created.replace("T", " ", 1)
    created = f"{created[:-5]} UTC" if created.endswith("+0000") else created
    return program + (f" · {created}" if created else "")


def _stats(run: OverviewRun, o: Overview, label: str, per: str, functions: int) -> list[PageStat]:
    found = [PageStat(f"{label} time", fmt_us(o.total_device_us), f"per {per}")]
    if o.total_cpu_us > 0 and registry.facts_of(run.backend.name).on_device:
        found.append(PageStat("CPU time", fmt_us(o.total_cpu_us), f"per {per}"))
    if per == "step":
        found.append(PageStat("Steps", str(o.steps), "profiled, each recorded whole"))
    else:
        found.append(PageStat("Window", f"{_number(o.window_s)} s", f"from {_number(o.delay_s)} s after the start"))
    found.append(PageStat("Functions", str(functions), "of yours, seen in the window"))
    if o.outside_user_device_us > 0:
        found.append(PageStat("Outside your code", fmt_us(o.outside_user_device_us), f"per {per}: under none of your frames"))
    return found


def _function_row(o: Overview, i: int) -> OverviewFunctionRow:
    f = o.functions[i]
    return OverviewFunctionRow(
        index=i, qualname=f.qualname, where=f"{_file_name(f.file)}:{f.def_line}", self_device=fmt_us(f.self_device_us),
        self_share=fmt_share(f.pct_self), total_device=fmt_us(f.total_device_us), total_share=fmt_share(f.pct_total),
        calls=fmt_count(f.calls), tooltip=function_tooltip(o, f) if seen(f) else "",
    )  # fmt: skip


def _icicle_total(o: Overview) -> float:
    """The time the icicle's whole width stands for: the roots' totals."""
    return sum(f.total_device_us for f in o.frames if f.parent == -1)


def _nodes(o: Overview, per: str) -> list[IcicleNode]:
    whole = _icicle_total(o)
    if whole <= 0:
        return []
    nodes = []
    for frame in o.frames:
        fn = o.functions[frame.function] if 0 <= frame.function < len(o.functions) else None
        label = fn.qualname if fn is not None else "?"
        where = f" ({fn.file}:{fn.def_line})" if fn is not None else ""
        share = fmt_share(100 * frame.total_device_us / whole)
        nodes.append(IcicleNode(label=label, title=f"{label}{where}\ntotal {fmt_us(frame.total_device_us)}/{per} "
                                                   f"({share}), self {fmt_us(frame.self_device_us)}"))  # fmt: skip
    return nodes


def _file_name(path: str) -> str:
    """A file's name, the last part of its path (either separator: a host path may be a Windows one)."""
    return re.split(r"[\\/]", path)[-1]


def _number(x: float) -> str:
    """A number as JavaScript writes it: `5.0` → `5`, `2.5` → `2.5`."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))
