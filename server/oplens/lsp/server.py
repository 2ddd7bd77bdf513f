"""The OpLens language server: LSP handlers wired to their modules.

Each connection gets its own `LanguageServer` and `ClientState` over one `SharedState`. Every
handler here is one line: params → the module of its concern → LSP (through `views`):

    documents         lenses, inlay hints, hovers, diagnostics, `oplens/document`, `oplens.functions`
    diffs             `oplens.diff`, and each shown run's diff against the previous run (for the above)
    profiling         `oplens.profile`, `oplens.compare`, `oplens.cancel`, `$/progress` and its cancel
    results           `oplens.showRun`, `oplens.clear`, redrawing every client after a run or a clear
    backend_commands  each backend's commands from the registry (Neuron: `oplens.openExplorer`)
    doctor            `oplens.doctor`: `oplens doctor` on the server's host, for "Check Setup"
    host_backends     `oplens.backends`: what `auto` picks on the server's host, each backend's presence
    merging           `oplens.merge`: `oplens merge` on the server's host, the merged run as a profile's;
                      `oplens.rankPart`: one rank's own run within a distributed run
    overviews         `oplens.overview` (a program overview), `oplens.hotFunctions`, the overview's lenses
    exporting         `oplens.export`: a run written for Perfetto, speedscope or TensorBoard/HTA (exports/);
                      `oplens.openPerfetto`: the page that hands its trace to Perfetto UI
    profiling         also `oplens.slurm`: whether the host submits Slurm jobs (the capture "as a Slurm job")

The server announces its protocol in `serverInfo.version`: `<package version>+protocol.<N>`.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from oplens import __version__
from oplens.backends import registry
from oplens.backends.spec import BackendCommand
from oplens.lsp import (
    backend_commands,
    diffs,
    doctor,
    documents,
    exporting,
    host_backends,
    merging,
    overviews,
    pages,
    profiling,
    protocol,
    results,
)
from oplens.lsp.arguments import only
from oplens.lsp.client import ClientState, SharedFor
from oplens.lsp.protocol import OpLensProtocol
from oplens.records import names

SERVER_VERSION = f"{__version__}+protocol.{names.PROTOCOL_VERSION}"


def make_server(
    shared_for: SharedFor, protocol_cls: type[OpLensProtocol] = OpLensProtocol
) -> tuple[LanguageServer, ClientState]:
    """A fresh LanguageServer for one connection; `shared_for(root)` gives the shared state."""
    ls = LanguageServer("oplens", SERVER_VERSION, protocol_cls=protocol_cls)
    client = ClientState(ls, shared_for)
    redraw = results.Redraw(client)

    @ls.feature(lsp.INITIALIZE)
    def initialize(params: lsp.InitializeParams) -> None:
        for warning in client.initialize(params, redraw):
            client.show(lsp.MessageType.Warning, warning)

    @ls.feature(lsp.SHUTDOWN)
    def shutdown(*_: Any) -> None:
        client.close()

    @ls.feature(lsp.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
        return documents.code_lenses(client, params)

    @ls.feature(lsp.TEXT_DOCUMENT_INLAY_HINT)
    def inlay_hint(params: lsp.InlayHintParams) -> list[lsp.InlayHint]:
        return documents.inlay_hints(client, params)

    @ls.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover(params: lsp.HoverParams) -> lsp.Hover | None:
        return documents.hover(client, params)

    @ls.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: lsp.DidOpenTextDocumentParams) -> None:
        documents.publish(client, params.text_document.uri)

    @ls.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: lsp.DidChangeTextDocumentParams) -> None:
        documents.publish(client, params.text_document.uri)

    @ls.feature(lsp.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def progress_cancel(params: lsp.WorkDoneProgressCancelParams) -> None:
        profiling.cancel_progress(client, str(params.token))

    @ls.feature(protocol.UNDECODABLE)
    def undecodable(params: Any) -> None:
        protocol.undecodable(params)

    @ls.command(names.PROFILE_COMMAND)
    async def profile(*args: Any) -> dict[str, Any]:
        return await profiling.profile(client, only(names.PROFILE_COMMAND, args))

    @ls.command(names.COMPARE_COMMAND)
    async def compare(*args: Any) -> dict[str, Any]:
        return await profiling.compare(client, only(names.COMPARE_COMMAND, args))

    @ls.command(names.CANCEL_COMMAND)
    def cancel(*args: Any) -> None:  # any argument: there is nothing to choose
        profiling.cancel_all(client)

    @ls.command(names.SHOW_RUN_COMMAND)
    def show_run(*args: Any) -> dict[str, Any]:
        return results.show_run(client, only(names.SHOW_RUN_COMMAND, args))

    @ls.command(names.CLEAR_COMMAND)
    def clear(*args: Any) -> None:
        results.clear(client, only(names.CLEAR_COMMAND, args))

    @ls.command(names.FUNCTIONS_COMMAND)
    def functions(*args: Any) -> dict[str, Any]:
        return documents.functions(client, only(names.FUNCTIONS_COMMAND, args))

    @ls.command(names.DIFF_COMMAND)
    def diff(*args: Any) -> dict[str, Any]:
        return diffs.diff(client, only(names.DIFF_COMMAND, args))

    @ls.command(names.DOCTOR_COMMAND)
    async def check_setup(*args: Any) -> dict[str, Any]:
        return await doctor.run(client, only(names.DOCTOR_COMMAND, args))

    @ls.command(names.BACKENDS_COMMAND)
    async def backends_here(*args: Any) -> dict[str, Any]:
        return await host_backends.backends(client, only(names.BACKENDS_COMMAND, args))

    @ls.command(names.EXPORT_COMMAND)
    async def export_run(*args: Any) -> dict[str, Any]:
        return await exporting.export(client, only(names.EXPORT_COMMAND, args))

    @ls.command(names.FLAME_GRAPH_COMMAND)
    async def flame_graph(*args: Any) -> dict[str, Any]:
        return await exporting.flame_graph(client, only(names.FLAME_GRAPH_COMMAND, args))

    @ls.command(names.OPEN_PERFETTO_COMMAND)
    async def open_perfetto(*args: Any) -> dict[str, Any]:
        return await exporting.open_perfetto(client, only(names.OPEN_PERFETTO_COMMAND, args))

    @ls.command(names.SLURM_COMMAND)
    def slurm_here(*args: Any) -> dict[str, Any]:
        return profiling.slurm_here()

    @ls.command(names.MERGE_COMMAND)
    async def merge(*args: Any) -> dict[str, Any]:
        return await merging.merge(client, only(names.MERGE_COMMAND, args))

    @ls.command(names.OVERVIEW_COMMAND)
    async def program_overview(*args: Any) -> dict[str, Any]:
        return await overviews.overview(client, only(names.OVERVIEW_COMMAND, args))

    @ls.command(names.HOT_FUNCTIONS_COMMAND)
    def hot_functions(*args: Any) -> dict[str, Any] | None:
        return overviews.hot_functions(client, only(names.HOT_FUNCTIONS_COMMAND, args))

    @ls.command(names.RUN_PAGE_COMMAND)
    def results_page(*args: Any) -> dict[str, Any]:
        return pages.page(client, only(names.RUN_PAGE_COMMAND, args))

    @ls.command(names.RANK_PART_COMMAND)
    def rank_part(*args: Any) -> dict[str, Any]:
        return merging.rank_part(client, only(names.RANK_PART_COMMAND, args))

    for _, backend_cmd in registry.commands():

        def register(cmd: BackendCommand) -> None:
            @ls.command(cmd.lsp_command)
            async def run_command(*args: Any) -> dict[str, Any]:
                return await backend_commands.run(client, cmd, only(cmd.lsp_command, args))

        register(backend_cmd)

    return ls, client
