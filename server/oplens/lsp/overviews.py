"""The program overview in the editor: `oplens.overview` (run one) and `oplens.hotFunctions` (its
functions, hottest first); the overview's lenses on a document's functions are `documents.py`'s.

`oplens.overview {uri, qualname or line, program, skip?, calls?, stop?, backend?, timeoutSeconds?}`
is `oplens.profile` with `program`, but for the program's step function: each profiled step recorded
whole and attributed to the user's functions (`oplens run --step`, `ProgramRequest(overview=True)`).
Its run is the workspace's latest overview (`ResultStore.overview`): every client redraws its open
documents, and each function of the workspace that the overview saw gets its lenses, in whatever
file (`overview_views`). `▶ lines` is `oplens.profile` with the same program and that function as
the target: its lines captured in the same program.
"""

from __future__ import annotations

from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from oplens.lsp import arguments, overview_views, profiling
from oplens.lsp.arguments import ProfileArgs
from oplens.lsp.client import ClientState
from oplens.records.names import HOT_FUNCTIONS_COMMAND, OVERVIEW_COMMAND
from oplens.records.overview import OverviewRun
from oplens.views.overview import overview_title

OVERVIEW_SHAPE = ("{uri, qualname or line (0-based) of the step function, program {program or module, args?, cwd?, "
                  "env?}, skip?, calls?, stop?, backend?, timeoutSeconds?}")  # fmt: skip


async def overview(client: ClientState, arg: Any) -> dict[str, Any]:
    """`oplens.overview`: the program run with its step function's steps profiled whole; the reply of
    `oplens.profile`, with the overview's headline as `title` and its functions' count."""
    a = arguments.parse(OVERVIEW_COMMAND, arg, ProfileArgs, OVERVIEW_SHAPE)
    if a.args is not None:
        raise JsonRpcInvalidParams(f"{OVERVIEW_COMMAND} takes one object {OVERVIEW_SHAPE}: an overview runs a "
                                   "program (give program, not args)")  # fmt: skip
    if a.program is None:
        raise JsonRpcInvalidParams(f"{OVERVIEW_COMMAND} takes one object {OVERVIEW_SHAPE}: give the program to run")
    program = arguments.check_program(OVERVIEW_COMMAND, a)
    assert program is not None
    req = profiling.capture_request(client, OVERVIEW_COMMAND, a, program)
    req.overview = True
    run = await profiling.run_capture(client, req)
    client.shared.programs[run.run_id] = req.program  # its environment too, which the run does not keep
    if not isinstance(run, OverviewRun):  # the worker sends an overview for `req.overview`
        raise JsonRpcInvalidParams(f"{OVERVIEW_COMMAND}: the program's run {run.run_id} is not a program overview")
    return {**profiling.reply(client, run), "title": overview_title(run), "functions": len(run.overview.functions)}


def hot_functions(client: ClientState, arg: Any) -> dict[str, Any] | None:
    """`oplens.hotFunctions {sort?: "self"|"total", limit?, run_id?}`: the latest overview's functions (null
    without one), or those of overview `run_id`."""
    a = arguments.parse(HOT_FUNCTIONS_COMMAND, arg, arguments.HotFunctionsArgs, arguments.HOT_FUNCTIONS_SHAPE)
    if a.sort not in overview_views.SORTS:
        raise JsonRpcInvalidParams(f"{HOT_FUNCTIONS_COMMAND} takes {arguments.HOT_FUNCTIONS_SHAPE}: sort must be "
                                   f"'self' or 'total' (got {a.sort!r})")  # fmt: skip
    if a.run_id:
        run = client.shared.results.by_id(a.run_id)
        if not isinstance(run, OverviewRun):
            raise JsonRpcInvalidParams(f"{HOT_FUNCTIONS_COMMAND}: run {a.run_id} is not a program overview on this host")
    else:
        run = client.shared.results.shown_overview()
    if run is None:
        return None
    return overview_views.hot_functions(run, a.sort, client.uri, client.program_of(run), max(a.limit, 0))
