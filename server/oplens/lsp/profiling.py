"""`oplens.profile`, `oplens.compare` and cancelling them, with `$/progress` while they run.

A command's arguments become a `ProfileRequest` (its target a `TargetSpec`; what the arguments
leave out comes from the client's settings) and run on the shared device queue. The client that
asked gets `oplens/result` with the whole run; every client hears of it through its listener
(`results.Redraw`).
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams

from oplens.backends import registry
from oplens.engine import ProfileRequest
from oplens.engine.compare import compare_rows
from oplens.lsp import arguments, documents, progress, views
from oplens.lsp.arguments import ProfileArgs
from oplens.lsp.client import ClientState
from oplens.records.errors import OpLensError
from oplens.records.job import TargetSpec
from oplens.records.names import COMPARE_COMMAND, PROFILE_COMMAND, RESULT_NOTIFICATION
from oplens.records.run import Run

ProgressFn = Callable[[str, int, int], None]
STAGE_WORDS = {"queued": "queued", "importing": "importing", "warmup": "warm-up", "profile": "iteration",
               "processing": "attributing"}


async def profile(client: ClientState, arg: Any) -> dict[str, Any]:
    req = request(client, PROFILE_COMMAND, arguments.parse(PROFILE_COMMAND, arg, ProfileArgs, arguments.PROFILE_SHAPE))
    run = await run_profile(client, req)
    return {"run_id": run.run_id, "uri": client.uri(run.target.file), "qualname": run.target.qualname,
            "title": views.totals_title(run)}


async def compare(client: ClientState, arg: Any) -> dict[str, Any]:
    """Profile each target in turn (every one checked before the first runs); the side-by-side rows."""
    reqs = [request(client, COMPARE_COMMAND, t) for t in arguments.compare_targets(COMPARE_COMMAND, arg)]
    finished = [await run_profile(client, req) for req in reqs]
    return {"summary": compare_rows(finished)}


def request(client: ClientState, command: str, a: ProfileArgs) -> ProfileRequest:
    """The engine's request for `a`: checked, and completed from the client's settings."""
    shared = client.shared
    path = Path(client.host_path(a.uri)).resolve()
    if not path.is_relative_to(shared.workspace):
        raise JsonRpcInvalidParams(f"{path} is outside the workspace {shared.workspace}; OpLens profiles only workspace files")
    if a.qualname:
        target = TargetSpec(str(path), qualname=a.qualname)
    elif a.line is not None and a.line >= 0:
        target = TargetSpec(str(path), line=a.line + 1)  # LSP lines are 0-based
    else:
        raise JsonRpcInvalidParams(f"{command}: give the function as qualname (e.g. 'Block.forward') or line (0-based)")
    s = client.settings
    backend = s.backend if a.backend is None else a.backend
    if backend not in registry.NAMES:
        raise JsonRpcInvalidParams(f"{command}: unknown backend {backend!r}; choose one of {', '.join(registry.NAMES)}")
    warmup = s.warmup if a.warmup is None else a.warmup
    iters = s.iterations if a.iters is None else a.iters
    timeout_s = s.timeout_seconds if a.timeout_seconds is None else a.timeout_seconds
    for bad, message in ((warmup < 0, "warmup must be 0 or more"), (iters < 1, "iters must be 1 or more"),
                         (timeout_s <= 0, "timeoutSeconds must be above 0")):
        if bad:
            raise JsonRpcInvalidParams(f"{command}: {message}")
    try:
        options = registry.parse_options(backend, s.backend_options, shared.workspace)
    except OpLensError as e:
        raise client.request_error(e) from None
    return ProfileRequest(target=target, args=a.args or "", backend=backend, warmup=warmup, iters=iters,
                          timeout_s=timeout_s, workspace=shared.workspace, out=str(shared.runs_root),
                          backend_options=options)


async def run_profile(client: ClientState, req: ProfileRequest) -> Run:
    """Run `req` on the shared queue with progress; `oplens/result` to this client when it is done."""
    token = str(uuid.uuid4())
    cancel = threading.Event()
    client.cancels[token] = cancel
    report = await _begin_progress(client, token, str(req.target).rsplit("/", 1)[-1])

    def announce(run: Run) -> None:  # before every client redraws: this one knows the run first
        client.notify(RESULT_NOTIFICATION, {"uri": client.uri(run.target.file), "run": run.to_dict()})

    try:
        run = await client.shared.profile(req, report, cancel, announce)
    except OpLensError as e:
        progress.end(client, token, e.message)
        if e.kind == "user_exception":
            file = e.location.get("file", req.target.file)
            client.errors[file] = e
            documents.redraw(client, file)
        raise client.request_error(e) from None
    except asyncio.CancelledError:
        cancel.set()
        progress.end(client, token, "cancelled")
        raise
    finally:
        client.cancels.pop(token, None)
    progress.end(client, token, views.totals_title(run))
    return run


def cancel_progress(client: ClientState, token: str) -> None:
    """The client cancelled the progress of `token` (`window/workDoneProgress/cancel`)."""
    event = client.cancels.get(token)
    if event is not None:
        event.set()


def cancel_all(client: ClientState) -> None:
    """`oplens.cancel`: every profile this client is running."""
    for event in client.cancels.values():
        event.set()


async def _begin_progress(client: ClientState, token: str, title: str) -> ProgressFn:
    """A thread-safe progress callback: `$/progress` where the client supports it."""
    start = lsp.WorkDoneProgressBegin(title=f"OpLens: {title}", cancellable=True, message="starting", percentage=0)
    send = await progress.begin(client, token, start)
    if send is None:
        return lambda stage, done, total: None

    def report(stage: str, done: int, total: int) -> None:
        if stage == "queued":
            message = f"waiting for the device: {done} job(s) ahead"
        else:
            word = STAGE_WORDS.get(stage, stage)
            message = f"{word} {done}/{total}" if total > 1 else word
        pct = {"importing": 2, "warmup": 5 + int(25 * done / max(total, 1)),
               "profile": 30 + int(65 * done / max(total, 1)), "processing": 97}.get(stage, 0)
        send(lsp.WorkDoneProgressReport(message=message, percentage=pct, cancellable=True))

    return report
