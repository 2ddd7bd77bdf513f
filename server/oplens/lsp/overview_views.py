"""The program overview → LSP: every word an editor shows of an overview run (`OverviewRun`).

Pure functions of the latest overview and a document's functions. Each function of the document
that the overview saw (matched by file and qualname, else by file and `def` line) gets two lenses
on its first line:

    CPU 9.5 % · 20.86 ms/step                      its self device time per step (and its total where
    CPU 3.1 % · 6.75 ms/step · total 20.3 %        that is more: the functions it calls)
    ▶ lines                                        `oplens.profile` with the overview's program: the
                                                   function captured line by line in the same program

`hot_functions` is what `oplens.hotFunctions` answers (a client's list, any editor's), sorted by
self or total device time, each entry with the same words and the `▶ lines` arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from oplens.engine.targets import FunctionDef
from oplens.records.format import fmt_share, fmt_us
from oplens.records.names import HOT_FUNCTIONS_COMMAND, PROFILE_COMMAND
from oplens.records.overview import FunctionStat, Overview, OverviewRun
from oplens.views.overview import function_tooltip, overview_page, overview_title, per_word, seen

SORTS = ("self", "total")
LINES_TITLE = "▶ lines"


@dataclass(frozen=True)
class ProgramArgs:
    """The overview's program as `oplens.profile`'s `program` takes it, in the client's paths."""

    program: dict[str, Any]


def share_title(o: Overview, f: FunctionStat) -> str:
    """`CPU 9.5 % · 20.86 ms/step`, and `· total 20.3 %` where the function's total is more than its self."""
    title = f"{o.device_label} {fmt_share(f.pct_self)} · {fmt_us(f.self_device_us)}/{per_word(o)}"
    if f.total_device_us > f.self_device_us * 1.005 + 0.05:
        title += f" · total {fmt_share(f.pct_total)}"
    return title


def hot_title(o: Overview, f: FunctionStat, sort: str) -> str:
    """A hot function's line in a list, by the figure it is sorted by: `20.86 ms/step · 9.5 % self`."""
    us, pct = (f.self_device_us, f.pct_self) if sort == "self" else (f.total_device_us, f.pct_total)
    return f"{fmt_us(us)}/{per_word(o)} · {fmt_share(pct)} {sort}"


def match(o: Overview, path: str, functions: list[FunctionDef]) -> list[tuple[FunctionDef, FunctionStat]]:
    """Each of the document's functions that the overview saw: by qualname in the same file, else by `def` line."""
    mine = [f for f in o.functions if seen(f) and _same(f.file, path)]
    by_name = {f.qualname: f for f in mine}
    by_line = {f.def_line: f for f in mine}
    found = []
    for fn in functions:
        stat = by_name.get(fn.qualname) or by_line.get(fn.def_line)
        if stat is not None:
            found.append((fn, stat))
    return found


def lines_arguments(uri: str, qualname: str, program: ProgramArgs | None) -> dict[str, Any]:
    """`oplens.profile`'s argument for `▶ lines`: the function in the overview's program (or, without
    a program to run it in, plain)."""
    arg: dict[str, Any] = {"uri": uri, "qualname": qualname}
    if program is not None:
        arg["program"] = program.program
    return arg


def result_params(uri: str, run: OverviewRun) -> dict[str, Any]:
    """`oplens/result` of an overview: `{uri, run}`, `run` the whole `OverviewRun` (its `overview` inside)."""
    return {"uri": uri, "run": run.to_dict()}


def code_lenses(run: OverviewRun, uri: str, path: str, functions: list[FunctionDef],
                program: ProgramArgs | None) -> list[lsp.CodeLens]:  # fmt: skip
    """The overview's lenses on the document's functions that it saw."""
    o = run.overview
    lenses = []
    for fn, stat in match(o, path, functions):
        pos = lsp.Position(line=max(fn.first_line - 1, 0), character=0)
        where = lsp.Range(start=pos, end=pos)
        show = lsp.Command(title=share_title(o, stat), command=HOT_FUNCTIONS_COMMAND, arguments=[{"sort": "self"}])
        lenses.append(lsp.CodeLens(range=where, command=show))
        if program is not None:
            lines = lsp.Command(title=LINES_TITLE, command=PROFILE_COMMAND,
                                arguments=[lines_arguments(uri, fn.qualname, program)])  # fmt: skip
            lenses.append(lsp.CodeLens(range=where, command=lines))
    return lenses


def hot_functions(run: OverviewRun, sort: str, uri_of: Any, program: ProgramArgs | None, limit: int = 0) -> dict[str, Any]:
    """`oplens.hotFunctions`' answer: the overview's functions by self or total device time (highest first),
    and `page`, the results page of the overview (`views.overview.OverviewView`: every word written)."""
    o = run.overview
    stats = [(i, f) for i, f in enumerate(o.functions) if seen(f)]
    stats.sort(key=lambda x: (x[1].self_device_us if sort == "self" else x[1].total_device_us), reverse=True)
    if limit > 0:
        stats = stats[:limit]
    entries = []
    for index, f in stats:
        uri = uri_of(f.file)
        entries.append({
            "index": index, "uri": uri, "file": f.file, "qualname": f.qualname, "line": f.def_line,
            "self_device_us": f.self_device_us, "total_device_us": f.total_device_us,
            "pct_self": f.pct_self, "pct_total": f.pct_total, "calls": f.calls,
            "title": hot_title(o, f, sort), "lens": share_title(o, f), "tooltip": function_tooltip(o, f),
            "lines": lines_arguments(uri, f.qualname, program) if program is not None else None,
        })  # fmt: skip
    return {
        "run_id": run.run_id, "created": run.created, "step": o.step, "per": per_word(o), "steps": o.steps,
        "device_label": o.device_label, "total_device_us": o.total_device_us, "sort": sort,
        "title": overview_title(run), "functions": entries, "page": overview_page(run).to_dict(),
    }  # fmt: skip


def _same(a: str, b: str) -> bool:
    return a == b or Path(a).resolve() == Path(b).resolve()
