"""One function's run against an earlier one: the `oplens.diff` command, and the diff a client is
shown after a re-profile (`attach`: each shown run with its diff against the function's previous
run, which `views` turns into the lens's verdict, the changed lines' hint marks and hovers).

The runs and the diffs come from the shared `RunDiffs` (`shared.py`), which keeps what it read.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from oplens.lsp import arguments, views
from oplens.lsp.client import ClientState
from oplens.records.errors import OpLensError
from oplens.records.names import DIFF_COMMAND
from oplens.records.run import Run


def attach(client: ClientState, placed: list[views.Placed]) -> list[views.Placed]:
    """Each run that is shown (fresh or moved, not stale) with its diff against the previous run."""
    diffs = client.shared.diffs
    return [dataclasses.replace(p, diff=diffs.against_previous(p.run)) if p.fresh else p for p in placed]


def diff(client: ClientState, arg: Any) -> dict[str, Any]:
    """`oplens.diff {after?, before?, uri?, qualname?}`: the diff object of `engine.diff`
    (`{before, after, lines, totals, method}`) with `earlier` (every run of the function before
    `after`, newest first) and `uri` (the function's file in the client's paths). With no run
    before `after`, `before` and `totals` are null and `lines` empty."""
    a = arguments.parse(DIFF_COMMAND, arg, arguments.DiffArgs, arguments.DIFF_SHAPE)
    shared = client.shared
    after = _after(client, a)
    earlier = shared.diffs.earlier(after)
    before: Run | None = None
    if a.before is not None:
        before = _run(client, a.before, "before")
    elif earlier:
        before = _run(client, earlier[0].run_id, "before")
    try:
        found = shared.diffs.diff(before, after, a.by) if before is not None else None
    except OpLensError as e:
        raise client.request_error(e) from None
    return views.diff_answer(client.uri(after.target.home()), after, found, [s.entry() for s in earlier])


def _after(client: ClientState, a: arguments.DiffArgs) -> Run:
    if a.after is not None:
        return _run(client, a.after, "after")
    if a.uri is None or a.qualname is None:
        raise JsonRpcInvalidParams(f"{DIFF_COMMAND} takes one object {arguments.DIFF_SHAPE}: give after, or uri and qualname")
    file = client.host_path(a.uri)
    found = client.shared.diffs.history(file, a.qualname)
    latest = _run(client, found[-1].run_id, "after") if found else None
    if latest is None:
        raise JsonRpcInvalidParams(f"{DIFF_COMMAND}: no stored run of {a.qualname} in {file}; profile it first")
    return latest


def _run(client: ClientState, run_id: str, what: str) -> Run:
    run = client.shared.results.by_id(run_id)
    if run is None:
        raise JsonRpcInvalidParams(f"{DIFF_COMMAND}: no run {run_id!r} ({what}); give the id of a run in the runs directory")
    if not isinstance(run, Run):
        raise JsonRpcInvalidParams(f"{DIFF_COMMAND}: run {run_id!r} ({what}) is a program overview, not a function's lines")
    return run
