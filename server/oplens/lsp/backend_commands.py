"""The backends' own commands on a stored run (Neuron: `oplens.openExplorer`), as the backend
registry lists them: `{run_id, ...}`, the command's settings from the client's settings under its
`settings_key`. The language server never names a backend."""

from __future__ import annotations

import asyncio
from typing import Any

from oplens.backends.spec import BackendCommand, CommandContext
from oplens.engine import runs
from oplens.lsp import arguments
from oplens.lsp.client import ClientState
from oplens.records.errors import OpLensError

SHAPE = "{run_id, ...}"


async def run(client: ClientState, cmd: BackendCommand, arg: Any) -> dict[str, Any]:
    run_id = arguments.parse(cmd.lsp_command, arg, arguments.RunArgs, SHAPE).run_id
    shared = client.shared
    root = shared.runs_root
    ctx = CommandContext(
        shared.workspace, root, lambda spec: runs.find_run(root, spec), client.settings.command_settings.get(cmd.settings_key, {})
    )
    try:
        runs.find(root, run_id)  # over LSP the target is a stored run: say so before any work
        answer = await asyncio.to_thread(cmd.run_lsp, run_id, arg, ctx)  # a tool may run for minutes: off the loop
    except OpLensError as e:
        raise client.request_error(e) from None
    return answer.data
