"""Runs → LSP: code lenses, inlay hints, hovers, diagnostics and the `oplens/document`
notification for one document.

Pure functions of the document's current text and the runs of its functions. A run is shown
only while the function's text is what was profiled (same source hash); if the function only
moved (lines added above it), its lines shift with it. Otherwise its lens says `stale` and its
hints, hovers and diagnostics are hidden rather than pointing at the wrong lines.

A shown run that has a diff against the function's previous run (`Placed.diff`, attached by
`documents` from `diffs`) also says what changed: its lens the function's verdict, each changed
line's hint its mark (`▲ 2.1×`, `▼ 40 %`, `new`), the hover of a changed line before → after.

The words (the lens's totals and verdict, each line's hint, its tooltip and its hover, a merged run's ranks) are
`views/editor.py`'s, its figures `views/lines.py`'s, as the results page, the CLI and the notebook write them;
here they become LSP types. Every LSP client gets these words as they are.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from oplens.analysis.attribution import own_outside_us
from oplens.engine.diff import FunctionDiff, LineChange
from oplens.engine.targets import FunctionDef, list_functions, source_sha256
from oplens.records.errors import OpLensError
from oplens.records.names import CELL_QUALNAME, PROFILE_COMMAND, SHOW_RUN_COMMAND
from oplens.records.run import Run
from oplens.views.diff import diff_page
from oplens.views.editor import (
    bound_sentence,
    hint_label,
    hint_tooltip,
    lens_title,
    line_markdown,
    stale_title,
    totals_title,
    work_markdown,
)
from oplens.views.lines import outside_story
from oplens.views.ranks import stragglers

# the words are views/editor.py's; these are read here by the LSP handlers and the tests
__all__ = ["bound_sentence", "hint_label", "line_markdown", "totals_title", "work_markdown"]


@dataclass(frozen=True)
class Placed:
    """A run laid over the document: `shift` maps profiled line numbers to current ones."""

    run: Run
    fresh: bool
    shift: int = 0
    diff: FunctionDiff | None = None  # the run against the function's previous run, where there is one

    def line(self, profiled_line: int) -> int:
        return profiled_line + self.shift

    def change(self, profiled_line: int) -> LineChange | None:
        """What the diff says of the run's (after) line `profiled_line`."""
        if self.diff is None:
            return None
        return next((c for c in self.diff.lines if c.after_line == profiled_line), None)

    @property
    def state(self) -> str:
        """`fresh` (as profiled), `moved` (the same text on other lines) or `stale` (edited since)."""
        if not self.fresh:
            return "stale"
        return "moved" if self.shift else "fresh"


def parse_functions(source: str, file: str) -> tuple[list[FunctionDef], str | None]:
    """The functions of `source`, and why there are none while it does not parse ("line 3: invalid syntax")."""
    try:
        return list_functions(source, Path(file)), None
    except (OpLensError, ValueError, RecursionError):  # a syntax error while the user types: no lenses until it parses
        return [], parse_error(source)


def functions_in(source: str, file: str) -> list[FunctionDef]:
    """The functions of `source`; none while it does not parse."""
    return parse_functions(source, file)[0]


def parse_error(source: str) -> str:
    """Where and why `source` does not parse (on the error path only: the engine's message names the file)."""
    try:
        ast.parse(source)
    except SyntaxError as e:
        return f"line {e.lineno}: {e.msg}" if e.lineno else e.msg
    except (ValueError, RecursionError) as e:  # null bytes; nesting too deep
        return str(e) or type(e).__name__
    return "the file does not parse"


def place(runs: list[Run], source: str, functions: list[FunctionDef]) -> list[Placed]:
    """Each run over its function's current text, in source order."""
    by_name = {f.qualname: f for f in functions}  # a name defined twice: the last (what Python keeps)
    placed = []
    for run in runs:
        fn = by_name.get(run.target.qualname)
        if fn is None:
            continue  # the function is gone or renamed: nothing to draw on
        fresh = source_sha256(source, fn.first_line, fn.last_line) == run.target.source_sha256
        placed.append(Placed(run, fresh, fn.first_line - run.target.first_line if fresh else 0))
    return sorted(placed, key=lambda p: by_name[p.run.target.qualname].first_line)


def _range(line: int, col: int = 0) -> lsp.Range:
    pos = lsp.Position(line=max(line - 1, 0), character=col)
    return lsp.Range(start=pos, end=pos)


def lensed(functions: list[FunctionDef], placed: list[Placed], mode: str) -> list[FunctionDef]:
    """The functions that get a lens row under the `lenses` setting: `all` every one, `profiled` those with a
    run shown here (fresh or stale), `off` none. The extension's own lens (`▶ Profile in Program…`) follows
    the same rule through `oplens/document`'s `lens` flag."""
    if mode == "off":
        return []
    if mode == "profiled":
        runs = {p.run.target.qualname for p in placed}
        return [fn for fn in functions if fn.qualname in runs]
    return list(functions)


def code_lenses(uri: str, source: str, functions: list[FunctionDef], placed: list[Placed],
                mode: str = "all") -> list[lsp.CodeLens]:  # fmt: skip
    lenses = []
    by_name = {p.run.target.qualname: p for p in placed}
    for fn in lensed(functions, placed, mode):
        where = _range(fn.first_line)
        if fn.qualname != CELL_QUALNAME:  # a `%%oplens` cell profiles itself when it runs
            profile = lsp.Command(title="▶ Profile", command=PROFILE_COMMAND, arguments=[{"uri": uri, "qualname": fn.qualname}])
            lenses.append(lsp.CodeLens(range=where, command=profile))
        p = by_name.get(fn.qualname)
        if p is not None:
            title = lens_title(p.run, p.diff) if p.fresh else stale_title(p.run)
            show = lsp.Command(title=title, command=SHOW_RUN_COMMAND, arguments=[{"run_id": p.run.run_id}])
            lenses.append(lsp.CodeLens(range=where, command=show))
    return lenses


def inlay_hints(source: str, placed: list[Placed], threshold_pct: float, first: int, last: int) -> list[lsp.InlayHint]:
    """Hints at the end of each line (1-based `first`..`last`) that spent ≥ threshold of the device time, or whose
    time outside operators is its story and ≥ threshold of the call's wall time (a line that sleeps, waits, reads)."""
    lines = source.splitlines()
    hints = []
    for p in placed:
        if not p.fresh:
            continue
        slow = stragglers(p.run.insights)
        wall = p.run.totals.call_wall_us
        for stat in p.run.lines:
            n = p.line(stat.line)
            if not first <= n <= last or n > len(lines):
                continue
            outside = outside_story(stat, wall) and 100.0 * own_outside_us(stat) / wall >= threshold_pct
            if stat.pct_device < threshold_pct and not outside:
                continue
            change = p.change(stat.line)
            hints.append(
                lsp.InlayHint(
                    position=lsp.Position(line=n - 1, character=len(lines[n - 1])),
                    label=hint_label(stat, change, slow.get(stat.line), wall),
                    padding_left=True,
                    tooltip=hint_tooltip(p.run, stat, change, slow.get(stat.line)),
                )
            )
    return hints


def hover(placed: list[Placed], line: int) -> lsp.Hover | None:
    """The op breakdown of the 1-based `line`, its drill-down and its insights."""
    for p in placed:
        if not p.fresh:
            continue
        for stat in p.run.lines:
            if p.line(stat.line) == line:
                value = line_markdown(p.run, stat, p.change(stat.line))
                return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=value))
    return None


def diagnostics(placed: list[Placed], error: OpLensError | None, file: str) -> list[lsp.Diagnostic]:
    found = []
    for p in placed:
        if not p.fresh:
            continue
        for ins in p.run.insights:
            found.append(
                lsp.Diagnostic(
                    range=_range(p.line(ins.line)),
                    message=f"{ins.message}" + (f" ({ins.evidence})" if ins.evidence else ""),
                    severity=lsp.DiagnosticSeverity.Hint if ins.kind == "noisy" else lsp.DiagnosticSeverity.Information,
                    source="OpLens",
                    code=ins.kind,
                )
            )
    if error is not None and error.location.get("file") == file:
        found.append(
            lsp.Diagnostic(
                range=_range(int(error.location.get("line", 1))),
                message=f"{error.message}\n{error.detail}".strip(),
                severity=lsp.DiagnosticSeverity.Information,
                source="OpLens",
                code=error.kind,
            )
        )
    return found


# ---- the oplens/document notification (and the oplens.functions answer) --------------------


def document(uri: str, version: int | None, parse_error: str | None, functions: list[FunctionDef],
             placed: list[Placed], lens_mode: str = "all") -> dict[str, Any]:
    """`{uri, version, parseError, functions, runs}`: a file's functions in source order (lines
    1-based), each with `lens`: whether it has a lens row (the `lenses` setting), and where the latest
    shown run of each sits in the current text."""
    with_lens = {id(fn) for fn in lensed(functions, placed, lens_mode)}
    return {
        "uri": uri,
        "version": version,
        "parseError": parse_error,
        "functions": [function_entry(fn, id(fn) in with_lens) for fn in functions],
        "runs": [run_entry(p) for p in placed],
    }


def function_entry(fn: FunctionDef, lens: bool = True) -> dict[str, Any]:
    return {
        "qualname": fn.qualname,
        "name": fn.qualname.rsplit(".", 1)[-1],
        "firstLine": fn.first_line,
        "defLine": fn.def_line,
        "lastLine": fn.last_line,
        "signature": fn.signature,
        "params": fn.params,
        "requiredParams": fn.required_params,
        "inClass": fn.in_class,
        "lens": lens,
    }


def result_params(uri: str, run: Run, reveal: bool = False) -> dict[str, Any]:
    """`oplens/result`: `{uri, run}`, the run shown on `uri`; `reveal`: a run the client did not ask for (a
    notebook kernel's) that it should show as if it had (its results panel)."""
    params: dict[str, Any] = {"uri": uri, "run": run.to_dict()}
    if reveal:
        params["reveal"] = True
    return params


def run_entry(p: Placed) -> dict[str, Any]:
    """`shift`: add it to the run's line numbers to get the current ones (0 unless moved)."""
    return {"runId": p.run.run_id, "qualname": p.run.target.qualname, "state": p.state, "shift": p.shift}


# ---- the oplens.diff answer -------------------------------------------------------------------


def diff_answer(uri: str, after: Run, diff: FunctionDiff | None, earlier: list[dict[str, Any]]) -> dict[str, Any]:
    """`{before, after, lines, totals, method}` of `diff` (with no diff: `before` and `totals` null,
    `lines` empty), `earlier` (the function's runs before `after`, newest first), `uri`, and `page`, the
    results page's "vs previous run" view of it (`views.diff.DiffPage`: every word written)."""
    found = diff.to_dict() if diff is not None else {"before": None, "after": after.to_dict(), "lines": [],
                                                     "totals": None, "method": {}}
    return {**found, "earlier": earlier, "uri": uri, "page": diff_page(after, diff, earlier).to_dict()}
