"""`oplens.doctor {backend?}`: `oplens doctor` on the server's host, for the editor's "Check Setup".

The engine's doctor (`engine/doctor.py`) in the server's workspace, for the backend asked (default:
the client's `backend` setting), its tiny profile with the client's `timeoutSeconds`. It starts a
worker and profiles, so it runs off the event loop and waits its turn on the device like a profile;
each check as it is made is a `$/progress` report where the client supports work-done progress.
The answer is the report as `oplens doctor --json -` prints it: `{backend, checks [{name, status,
detail, fix}], usable}`. The runs directory checked is the server's (`serve --out`); the tiny
profile's run goes to a temporary directory, never among the runs.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams

from oplens.backends import registry
from oplens.engine.doctor import DoctorRequest, doctor
from oplens.lsp import arguments, progress
from oplens.lsp.client import ClientState
from oplens.records.doctor import Check
from oplens.records.errors import OpLensError
from oplens.records.names import DOCTOR_COMMAND

TITLE = "OpLens: Check Setup"
Report = Callable[[str], None]


def requested_backend(client: ClientState, command: str, arg: Any) -> str:
    """The backend a host check asks about ({backend?}): the one named, else the client's setting; a name no
    backend has is invalid params."""
    a = arguments.parse(command, arg, arguments.DoctorArgs, arguments.DOCTOR_SHAPE)
    backend = client.settings.backend if a.backend is None else a.backend
    if backend not in registry.NAMES:
        raise JsonRpcInvalidParams(f"{command}: unknown backend {backend!r}; choose one of {', '.join(registry.NAMES)}")
    return backend


async def run(client: ClientState, arg: Any) -> dict[str, Any]:
    backend = requested_backend(client, DOCTOR_COMMAND, arg)
    shared = client.shared
    req = DoctorRequest(backend=backend, workspace=shared.workspace, runs_dir=str(shared.runs_root),
                        timeout_s=client.settings.timeout_seconds)
    token = str(uuid.uuid4())
    report = await _begin(client, token, backend)

    def on_check(check: Check) -> None:
        report(f"{check.name}: {check.status}")

    def on_stage(stage: str, done: int, total: int) -> None:
        report(f"tiny profile: {stage} {done}/{total}" if total > 1 else f"tiny profile: {stage}")

    try:
        if shared.device_lock.locked():
            report("waiting for the device")
        async with shared.device_lock:  # its tiny profile is a job on the device, as a profile is
            found = await asyncio.to_thread(doctor, req, on_check, on_stage)
    except OpLensError as e:
        progress.end(client, token, e.message)
        raise client.request_error(e) from None
    except BaseException:
        progress.end(client, token, "failed")
        raise
    progress.end(client, token, "usable" if found.usable else "not usable")
    return found.to_dict()


async def _begin(client: ClientState, token: str, backend: str) -> Report:
    """A thread-safe report of a message: `$/progress` where the client supports it."""
    send = await progress.begin(client, token, lsp.WorkDoneProgressBegin(title=TITLE, message=f"backend {backend}"))
    if send is None:
        return lambda message: None
    return lambda message: send(lsp.WorkDoneProgressReport(message=message))
