"""`oplens.backends {backend?}`: the backends of the server's host, for an editor's status bar (what `auto`
picks here, before any run) and its backend pick (each backend, present or what it lacks), and the host's
interpreters that could run a backend the server's cannot (Neuron's DLAMI venvs), with the offer in words.

`engine/host_backends.py` makes the answer (a worker-side process imports torch); the backend asked about
defaults to the client's `backend` setting. It waits its turn on the device like a profile: a profile
holding the NeuronCores would otherwise make them look absent.
"""

from __future__ import annotations

import asyncio
from typing import Any

from oplens.engine.host_backends import backends_here
from oplens.lsp.client import ClientState
from oplens.lsp.doctor import requested_backend
from oplens.records.names import BACKENDS_COMMAND


async def backends(client: ClientState, arg: Any) -> dict[str, Any]:
    backend = requested_backend(client, BACKENDS_COMMAND, arg)
    shared = client.shared
    async with shared.device_lock:
        return await asyncio.to_thread(backends_here, backend, shared.workspace)
