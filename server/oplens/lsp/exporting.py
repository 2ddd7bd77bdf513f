"""`oplens.export {run_id, format}`: a stored run written for Perfetto, speedscope or TensorBoard/HTA on the server's
host (`oplens export`, exports/), into the run's `exports/` folder: the path in the client's terms and how to open
it, in the server's words. Off the event loop: a large run takes seconds.

`oplens.flameGraph {run_id}`: the run as a speedscope profile (exports/speedscope.py) for the editor's flame graph,
its frames' files in the client's terms (a click on a frame opens its line), with the page's title and hint.

`oplens.openPerfetto {run_id}`: the run's Perfetto trace and the one-shot page that hands it to Perfetto UI
(exports/perfetto_open.py), served on the host's 127.0.0.1 until it has or PAGE_WAIT_S have passed; its URL, which
the extension opens through `vscode.env.asExternalUri` (in Remote-SSH, a port forwarded to the laptop's localhost:
the UI opens a page from localhost without its "Open trace?" prompt)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from oplens.exports import speedscope
from oplens.exports.formats import FORMATS, Exported
from oplens.exports.formats import export as export_run
from oplens.exports.perfetto_open import PAGE_WAIT_S, OpenPage
from oplens.lsp import arguments
from oplens.lsp.client import ClientState
from oplens.lsp.convert import wire
from oplens.records.errors import OpLensError
from oplens.records.names import EXPORT_COMMAND, FLAME_GRAPH_COMMAND, OPEN_PERFETTO_COMMAND
from oplens.records.run import Run


@dataclass
class ExportArgs:
    run_id: str = wire("run_id")
    format: str = "perfetto"


EXPORT_SHAPE = f"{{run_id, format: {' | '.join(FORMATS)}}}"


async def export(client: ClientState, arg: Any) -> dict[str, Any]:
    a = arguments.parse(EXPORT_COMMAND, arg, ExportArgs, EXPORT_SHAPE)
    if a.format not in FORMATS:
        raise JsonRpcInvalidParams(f"{EXPORT_COMMAND}: no format {a.format!r}; one of {', '.join(FORMATS)}")
    _, done = await _exported(client, EXPORT_COMMAND, a.run_id, a.format)
    path = done.path
    return {"path": client.paths.to_local(str(path)), "uri": client.uri(str(path)), "format": a.format,
            "opens_in": FORMATS[a.format].opens_in, "folder": path.is_dir(), "notes": done.notes}  # fmt: skip


FLAME_HINT = "Ctrl+click (⌘-click) a frame, or click a frame's file:line under the chart, to open its line."


async def flame_graph(client: ClientState, arg: Any) -> dict[str, Any]:
    a = arguments.parse(FLAME_GRAPH_COMMAND, arg, ExportArgs, "{run_id}")
    run = _function_run(client, FLAME_GRAPH_COMMAND, a.run_id)
    try:
        profile = await asyncio.to_thread(speedscope.build, run)
    except OpLensError as e:
        raise client.request_error(e) from None
    profile["activeProfileIndex"] = 1  # self device time by line first: the figures the editor shows
    for frame in profile["shared"]["frames"]:
        if "file" in frame:
            frame["file"] = client.paths.to_local(frame["file"])
    return {"profile": profile, "title": f"Flame graph: {run.target.qualname} ({run.backend.device_label})",
            "file_name": f"{run.run_id}.speedscope.json", "hint": FLAME_HINT}  # fmt: skip


async def open_perfetto(client: ClientState, arg: Any) -> dict[str, Any]:
    a = arguments.parse(OPEN_PERFETTO_COMMAND, arg, ExportArgs, "{run_id}")
    run, done = await _exported(client, OPEN_PERFETTO_COMMAND, a.run_id, "perfetto")
    page = OpenPage(done.path, f"{run.target.qualname} · {run.run_id}")
    page.close_when_done(PAGE_WAIT_S)  # a daemon thread: the server's exit never waits for a page's click
    return {"url": page.url, "path": client.paths.to_local(str(done.path)), "ui": page.ui, "notes": done.notes}


async def _exported(client: ClientState, command: str, run_id: str, fmt: str) -> tuple[Run, Exported]:
    """Stored run `run_id` (a function's) and the path of its export as `fmt`, written off the event loop."""
    run = _function_run(client, command, run_id)
    try:
        return run, await asyncio.to_thread(export_run, run, fmt)
    except OpLensError as e:
        raise client.request_error(e) from None


def _function_run(client: ClientState, command: str, run_id: str) -> Run:
    run = client.shared.results.by_id(run_id)
    if run is None or not isinstance(run, Run):
        what = "is a program overview" if run is not None else "is no stored run"
        raise JsonRpcInvalidParams(f"{command}: {run_id!r} {what}; export a function's run")
    return run
