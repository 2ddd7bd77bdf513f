"""Work-done progress (`$/progress`) for long commands (a profile, the doctor): ask the client for a
token (or take the one its request gave: client-initiated progress), begin, report from any thread,
end. One place for the edge cases: a client without progress support, and a client that leaves while
it is asked for a token (pygls would wait forever)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from lsprotocol import types as lsp

from oplens.lsp.client import ClientState

Sender = Callable[[lsp.WorkDoneProgressReport], None]


async def begin(client: ClientState, token: str, start: lsp.WorkDoneProgressBegin, given: bool = False) -> Sender | None:
    """Begin progress `token`; a thread-safe sender of reports, or None where there is no progress to show
    (the client does not support it, or it left while asked for the token: the work goes ahead anyway).
    `given`: the token is the client's own (its request's `workDoneToken`), so it is not asked for one."""
    ls = client.ls
    window = ls.client_capabilities.window
    if not given and not (window and window.work_done_progress):
        return None
    if not given:
        asking = asyncio.ensure_future(ls.work_done_progress.create_async(token))
        client.asking.add(asking)
        try:
            await asking
        except asyncio.CancelledError:
            if not client.closed:
                raise
            return None
        finally:
            client.asking.discard(asking)
    ls.work_done_progress.begin(token, start)
    loop = asyncio.get_running_loop()

    def send(report: lsp.WorkDoneProgressReport) -> None:
        loop.call_soon_threadsafe(ls.work_done_progress.report, token, report)

    return send


def end(client: ClientState, token: str, message: str) -> None:
    progress = client.ls.work_done_progress
    if token in progress.tokens:
        progress.end(token, lsp.WorkDoneProgressEnd(message=message))
        progress.tokens.pop(token, None)  # pygls keeps ended tokens forever otherwise
