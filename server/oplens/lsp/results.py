"""The runs a client is shown: `oplens.showRun`, `oplens.clear`, and `Redraw`, the listener by
which every client redraws when any client's run finishes or results are cleared."""

from __future__ import annotations

from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from oplens.lsp import arguments, documents, overview_views, views
from oplens.lsp.client import ClientState
from oplens.records.names import CLEAR_COMMAND, RESULT_NOTIFICATION, SHOW_RUN_COMMAND
from oplens.records.overview import AnyRun, OverviewRun


class Redraw:
    """One client's `shared.Listener`: lenses, hints, diagnostics and `oplens/document` drawn again."""

    def __init__(self, client: ClientState) -> None:
        self.client = client

    def on_result(self, run: AnyRun) -> None:
        """The file ran cleanly, so an earlier exception there is no longer news."""
        self.client.errors.pop(run.target.file, None)
        self.client.refresh()
        # an overview: every file; a kernel's run (a notebook's): shown on its cell
        documents.redraw(self.client, None if isinstance(run, OverviewRun) else run.target.home(), run.run_id)

    def on_clear(self, file: str | None) -> None:
        self.client.refresh()
        documents.redraw(self.client, file)


def announce(client: ClientState, run: AnyRun) -> dict[str, Any]:
    """`oplens/result` `{uri, run}` to `client` (the whole run, or the whole overview; its file in the client's
    paths): what a client that asked for a run (profile, capture, merge, showRun) hears first. The params sent."""
    uri = documents.shown_on(client, run)
    payload = overview_views.result_params(uri, run) if isinstance(run, OverviewRun) else views.result_params(uri, run)
    client.notify(RESULT_NOTIFICATION, payload)
    return payload


def show_run(client: ClientState, arg: Any) -> dict[str, Any]:
    """`oplens.showRun {run_id}`: `{uri, run}`, also sent as `oplens/result`."""
    run_id = arguments.parse(SHOW_RUN_COMMAND, arg, arguments.RunArgs, arguments.RUN_SHAPE).run_id
    run = client.shared.results.by_id(run_id)
    if run is None:
        raise JsonRpcInvalidParams(f"no run {run_id!r}; give {{run_id}} of a run in the runs directory")
    return announce(client, run)


def clear(client: ClientState, arg: Any) -> None:
    """`oplens.clear {uri?}`: hide the runs of a file (or of all) from every client; they stay on disk."""
    uri = arguments.parse(CLEAR_COMMAND, arg, arguments.ClearArgs, arguments.CLEAR_SHAPE).uri
    file = client.host_path(uri) if uri is not None else None
    if file is None:
        client.errors.clear()
    else:
        client.errors.pop(file, None)
    client.shared.clear(file)
